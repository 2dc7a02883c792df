//! Arrow record batches into [`Chunk`]s (cargo feature `arrow`): the
//! columnar path into tocpile, used by the command line for Parquet files
//! and open to any Arrow source (IPC streams, DataFusion, Polars through
//! the C data interface).
//!
//! A [`Schema`] says which columns are numeric and which categorical, as
//! for CSV: a schema inferred from a CSV file reads a Parquet copy of it,
//! and the other way round. [`SchemaInference`] (or [`infer_schema`])
//! infers one from batches; [`ArrowEncoder`] encodes each batch into a
//! [`Chunk`], whose rows go to a [`DatasetWriter`](crate::dataset::DatasetWriter).
//!
//! # Columns
//!
//! - **Numbers** (`Int8` to `UInt64`, `Float16` to `Float64`, `Decimal32`
//!   to `Decimal256`) are values: one output column each (integers above
//!   2^53 and decimals round to the nearest `f64`). **Booleans** are 0
//!   or 1. `NaN` and infinities are an error, as in CSV.
//! - **Strings** (`Utf8`, `LargeUtf8`, `Utf8View`, and dictionaries of
//!   them) are categorical: one-hot over the schema's levels. A string that
//!   is not a level of the schema gives no entry (all zeros) and is counted
//!   in [`ArrowEncoder::unseen_levels`]; it is never an error.
//! - **Nulls**: a null number or boolean is missing (0, and a 1 in the
//!   column's indicator if the schema gives it one: see
//!   [`missing`](super::missing)); a null string reads as the empty string
//!   `""` (as an empty CSV field does), so it is a level of its own when
//!   the column has one. A null label is an error. The `Null` type (all
//!   null) reads as a column of nulls.
//! - The label, named by [`ArrowOptions::label`], is a number or boolean
//!   column. Every other column must be in the schema (matched by name, in
//!   any order); a column of another type (dates, lists, binary) is an
//!   [`Error::BadColumn`] naming it and its type: cast or drop it first.
//!
//! ```
//! use std::sync::Arc;
//! use tocpile::ingest::arrow::arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
//! use tocpile::ingest::arrow::{infer_schema, ArrowEncoder, ArrowOptions};
//!
//! let batch = RecordBatch::try_from_iter([
//!     ("delay", Arc::new(Float64Array::from(vec![Some(12.5), None])) as ArrayRef),
//!     ("origin", Arc::new(StringArray::from(vec!["JFK", "EWR"])) as ArrayRef),
//!     ("late", Arc::new(Float64Array::from(vec![1.0, 0.0])) as ArrayRef),
//! ])?;
//! let options = ArrowOptions { label: "late".into(), missing_indicators: true };
//! let schema = infer_schema("flights", &batch.schema(), [&batch], &options)?;
//! assert_eq!(schema.column_names(), ["delay", "delay:missing", "origin=EWR", "origin=JFK"]);
//!
//! let mut encoder = ArrowEncoder::new("flights", &batch.schema(), schema, &options)?;
//! let chunk = encoder.encode(&batch)?;
//! assert_eq!(chunk.labels, [1.0, 0.0]);
//! assert_eq!(chunk.batch.row(0), (&[0u32, 3][..], &[12.5, 1.0][..]));
//! assert_eq!(chunk.batch.row(1), (&[1u32, 2][..], &[1.0, 1.0][..]));
//!
//! // Into a dataset file, with the schema for test files to reuse.
//! use tocpile::dataset::{DatasetWriter, WriterOptions};
//! let path = std::env::temp_dir().join(format!("tocpile-arrow-doc-{}.toc", std::process::id()));
//! let layout = WriterOptions::default().with_schema(encoder.schema().to_text());
//! let mut writer = DatasetWriter::create(&path, encoder.n_cols(), layout)?;
//! writer.push(&chunk.batch, &chunk.labels)?;
//! assert_eq!(writer.finish()?.n_rows, 2);
//! std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Errors and memory
//!
//! Errors name the input (the `name` given), the 0-based row counted over
//! every batch encoded so far, the column and what was expected
//! ([`Error::BadValue`]); within a batch the first bad row is reported.
//! Memory is bounded by the batch: a few `f64` or `u32` per cell of the
//! batch, then the chunk's sparse rows. Columns are prepared and rows
//! assembled in parallel with rayon.

pub use arrow_array;
pub use arrow_schema;

use std::convert::Infallible;

use arrow_array::{Array, RecordBatch};
use arrow_schema::Schema as ArrowSchema;
use hashbrown::HashMap;
use rayon::prelude::*;

use super::csv::{Column, Schema};
use super::{join_parts, shorten, sub_chunk_rows, Chunk, Part};
use crate::error::{Error, Result};

mod columns;
mod infer;

use columns::{numbers, Kind, Numbers, Text, SUPPORTED};
pub use infer::{infer_schema, SchemaInference};

/// How to read Arrow record batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrowOptions {
    /// Name of the label column. Default `"label"`.
    pub label: String,
    /// Inference: give every numeric or boolean column that has a null a
    /// missing indicator column. Default `false`.
    pub missing_indicators: bool,
}

impl Default for ArrowOptions {
    fn default() -> Self {
        ArrowOptions {
            label: "label".to_string(),
            missing_indicators: false,
        }
    }
}

/// A level index that means "not a level of the schema".
const UNSEEN: u32 = u32::MAX;

/// How one schema column is read.
struct Plan {
    name: String,
    /// First output column.
    base: u32,
    /// The level lookup of a categorical column; `None` for a number.
    levels: Option<HashMap<String, u32>>,
    /// A numeric column's missing indicator.
    indicator: bool,
}

/// One column of a batch, ready for the row loop.
enum Prepared<'a> {
    Numbers(Numbers<'a>),
    /// A level per row, or [`UNSEEN`].
    Levels(Vec<u32>),
}

/// Encodes Arrow record batches into [`Chunk`]s; see the
/// [module docs](self).
#[derive(Debug)]
pub struct ArrowEncoder {
    name: String,
    label: String,
    schema: Schema,
    plans: Vec<Plan>,
    rows: u64,
    unseen: u64,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("name", &self.name)
            .field("base", &self.base)
            .finish()
    }
}

impl ArrowEncoder {
    /// An encoder for batches with the columns of `fields`, read as
    /// `schema` says; `name` stands for the input in error messages.
    ///
    /// # Errors
    /// [`Error::MissingColumn`] if the label or a schema column is not in
    /// `fields`; [`Error::BadColumn`] for a column whose type tocpile does
    /// not read or the schema does not allow (a string column that the
    /// schema says is numeric, a string label), or that is neither the
    /// label nor in the schema, or that repeats a name;
    /// [`Error::InvalidSchema`] if a schema column is the label.
    pub fn new(
        name: &str,
        fields: &ArrowSchema,
        schema: Schema,
        options: &ArrowOptions,
    ) -> Result<ArrowEncoder> {
        check_unique(name, fields)?;
        let kind = |column: &str| -> Result<Kind> {
            let field = fields
                .field_with_name(column)
                .map_err(|_| Error::MissingColumn {
                    path: name.to_string(),
                    name: column.to_string(),
                    header: field_names(fields),
                })?;
            Kind::of(field.data_type())
                .ok_or_else(|| bad_column(name, column, field.data_type(), SUPPORTED))
        };
        let label = &options.label;
        if !matches!(kind(label)?, Kind::Number | Kind::Boolean) {
            let field = fields.field_with_name(label).expect("looked up above");
            return Err(bad_column(
                name,
                label,
                field.data_type(),
                "a number or boolean column (the label)",
            ));
        }
        let mut plans = Vec::with_capacity(schema.columns().len());
        let mut base = 0usize;
        for column in schema.columns() {
            if column.name() == label {
                return Err(Error::InvalidSchema {
                    message: format!("column {:?} is the label", column.name()),
                });
            }
            let found = kind(column.name())?;
            check_kind(name, fields, column, found)?;
            let levels = match column {
                Column::Categorical { levels, .. } => Some(
                    levels
                        .iter()
                        .enumerate()
                        .map(|(i, l)| (l.clone(), i as u32))
                        .collect(),
                ),
                _ => None,
            };
            plans.push(Plan {
                name: column.name().to_string(),
                // Below MAX_COLS, checked by Schema::new.
                base: base as u32,
                levels,
                indicator: matches!(column, Column::NumericWithIndicator { .. }),
            });
            base += column.width();
        }
        for field in fields.fields() {
            let column = field.name();
            if column != label && !schema.columns().iter().any(|c| c.name() == column) {
                return Err(bad_column(
                    name,
                    column,
                    field.data_type(),
                    "a column named in the schema, or the label",
                ));
            }
        }
        Ok(ArrowEncoder {
            name: name.to_string(),
            label: label.clone(),
            schema,
            plans,
            rows: 0,
            unseen: 0,
        })
    }

    /// The schema rows are read with.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The column count of the chunks: [`Schema::n_cols`].
    pub fn n_cols(&self) -> usize {
        self.schema.n_cols()
    }

    /// Rows encoded so far (the 0-based row that the next batch starts
    /// at, in error messages).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// String values encoded so far that are not levels of the schema
    /// (each left its row without an entry for its column).
    pub fn unseen_levels(&self) -> u64 {
        self.unseen
    }

    /// Encodes one batch: a [`Chunk`] of its rows, in order, whose
    /// `first_line` is the 1-based number of its first row. Columns are
    /// found by name, so batches may order them differently.
    ///
    /// # Errors
    /// [`Error::BadValue`] for a null or non-finite label, a non-finite
    /// number; [`Error::MissingColumn`] or [`Error::BadColumn`] for a
    /// batch whose columns do not fit (as for [`ArrowEncoder::new`]). The
    /// encoder's counts are unchanged by a batch that fails.
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<Chunk> {
        let n = batch.num_rows();
        let prepared: Vec<Result<(Prepared, u64)>> = crate::parallel::install(|| {
            self.plans
                .par_iter()
                .map(|plan| self.prepare(batch, plan))
                .collect()
        });
        let mut columns = Vec::with_capacity(prepared.len());
        let mut unseen = 0;
        let (labels, mut first_error) = match self.labels(batch) {
            Ok(labels) => (labels, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        for result in prepared {
            match result {
                Ok((column, n)) => {
                    columns.push(column);
                    unseen += n;
                }
                Err(e) => {
                    if first_error.as_ref().is_none_or(|f| row_of(&e) < row_of(f)) {
                        first_error = Some(e);
                    }
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let step = sub_chunk_rows(n);
        let starts: Vec<usize> = (0..n).step_by(step).collect();
        let plans = &self.plans;
        let parts: Vec<Part> = crate::parallel::install(|| {
            starts
                .par_iter()
                .map(|&start| {
                    let end = (start + step).min(n);
                    let mut part = Part {
                        labels: labels[start..end].to_vec(),
                        ..Part::default()
                    };
                    for row in start..end {
                        encode_row(row, plans, &columns, &mut part);
                        part.ends.push(part.cols.len());
                    }
                    part
                })
                .collect()
        });
        let chunk = join_parts(self.n_cols(), parts, self.rows + 1)?;
        self.rows += n as u64;
        self.unseen += unseen;
        Ok(chunk)
    }

    /// The batch's labels: finite numbers, no nulls.
    fn labels(&self, batch: &RecordBatch) -> Result<Vec<f64>> {
        let array = self.column(batch, &self.label)?;
        let expected = "a number or boolean column (the label)";
        let numbers = numbers(array.as_ref())
            .filter(|_| array.data_type() != &arrow_schema::DataType::Null)
            .ok_or_else(|| bad_column(&self.name, &self.label, array.data_type(), expected))?;
        let bad =
            (0..batch.num_rows()).find(|&i| numbers.is_null(i) || !numbers.values[i].is_finite());
        if let Some(i) = bad {
            return Err(self.bad_value(i, &self.label, "a label (a finite number)", &numbers));
        }
        Ok(numbers.values.into_owned())
    }

    /// One column of `batch` as the row loop reads it, and its count of
    /// unseen levels.
    fn prepare<'a>(&self, batch: &'a RecordBatch, plan: &Plan) -> Result<(Prepared<'a>, u64)> {
        let array = self.column(batch, &plan.name)?;
        let Some(levels) = &plan.levels else {
            let expected = "a number, boolean or null column (numeric in the schema)";
            let numbers = numbers(array.as_ref())
                .ok_or_else(|| bad_column(&self.name, &plan.name, array.data_type(), expected))?;
            if let Some(i) = numbers.first_not_finite() {
                return Err(self.bad_value(i, &plan.name, "a finite number or null", &numbers));
            }
            return Ok((Prepared::Numbers(numbers), 0));
        };
        let expected = "a string or dictionary-of-strings column (categorical in the schema)";
        let text = Text::of(array.as_ref())
            .ok_or_else(|| bad_column(&self.name, &plan.name, array.data_type(), expected))?;
        let codes = text
            .codes(|_, s| Ok::<u32, Infallible>(levels.get(s).copied().unwrap_or(UNSEEN)))
            .unwrap_or_else(|never| match never {});
        // A dictionary's strings are looked up once each: count unseen
        // rows, not lookups.
        let unseen = codes.iter().filter(|&&c| c == UNSEEN).count() as u64;
        Ok((Prepared::Levels(codes), unseen))
    }

    fn column<'a>(
        &self,
        batch: &'a RecordBatch,
        column: &str,
    ) -> Result<&'a arrow_array::ArrayRef> {
        batch
            .column_by_name(column)
            .ok_or_else(|| Error::MissingColumn {
                path: self.name.clone(),
                name: column.to_string(),
                header: field_names(batch.schema_ref()),
            })
    }

    fn bad_value(
        &self,
        i: usize,
        column: &str,
        expected: &'static str,
        numbers: &Numbers,
    ) -> Error {
        let found = if numbers.is_null(i) {
            "null".to_string()
        } else {
            numbers.values[i].to_string()
        };
        Error::BadValue {
            path: self.name.clone(),
            row: self.rows + i as u64,
            column: column.to_string(),
            expected,
            found,
        }
    }
}

/// Appends row `row`'s entries, in output column order.
#[inline]
fn encode_row(row: usize, plans: &[Plan], columns: &[Prepared], part: &mut Part) {
    for (plan, column) in plans.iter().zip(columns) {
        match column {
            Prepared::Numbers(numbers) => {
                if numbers.is_null(row) {
                    if plan.indicator {
                        part.cols.push(plan.base + 1);
                        part.values.push(1.0);
                    }
                } else {
                    let value = numbers.values[row];
                    if value != 0.0 {
                        part.cols.push(plan.base);
                        part.values.push(value);
                    }
                }
            }
            Prepared::Levels(codes) => {
                let code = codes[row];
                if code != UNSEEN {
                    part.cols.push(plan.base + code);
                    part.values.push(1.0);
                }
            }
        }
    }
}

/// Whether the Arrow type of a column (of kind `found`) can be read as
/// the schema's `column`.
fn check_kind(name: &str, fields: &ArrowSchema, column: &Column, found: Kind) -> Result<()> {
    let (fits, expected) = match column {
        Column::Categorical { .. } => (
            found.is_text(),
            "a string or dictionary-of-strings column (categorical in the schema)",
        ),
        _ => (
            found.is_numeric(),
            "a number, boolean or null column (numeric in the schema)",
        ),
    };
    if fits {
        return Ok(());
    }
    let field = fields
        .field_with_name(column.name())
        .expect("looked up before");
    Err(bad_column(name, column.name(), field.data_type(), expected))
}

/// The row of a batch error, for picking the first: type errors first.
fn row_of(e: &Error) -> u64 {
    match e {
        Error::BadValue { row, .. } => *row,
        _ => 0,
    }
}

pub(crate) fn bad_column(
    name: &str,
    column: &str,
    data_type: &arrow_schema::DataType,
    expected: &'static str,
) -> Error {
    Error::BadColumn {
        path: name.to_string(),
        column: column.to_string(),
        found: data_type.to_string(),
        expected,
    }
}

/// Checks that no two columns of `fields` share a name (Arrow allows it;
/// columns are matched by name here, as in CSV).
pub(crate) fn check_unique(name: &str, fields: &ArrowSchema) -> Result<()> {
    let mut seen = hashbrown::HashSet::new();
    for field in fields.fields() {
        if !seen.insert(field.name()) {
            return Err(bad_column(
                name,
                field.name(),
                field.data_type(),
                "a column name not used before",
            ));
        }
    }
    Ok(())
}

/// The column names of `fields`, comma-separated, shortened if long.
pub(crate) fn field_names(fields: &ArrowSchema) -> String {
    let names: Vec<&str> = fields.fields().iter().map(|f| f.name().as_str()).collect();
    let joined = names.join(", ");
    if joined.chars().count() <= 200 {
        joined
    } else {
        let mut cut: String = joined.chars().take(200).collect();
        cut.push_str("...");
        cut
    }
}

/// A string value for [`Error::BadValue`]'s `found`: quoted, shortened.
pub(crate) fn found_string(value: &str) -> String {
    format!("{:?}", shorten(value.as_bytes()))
}

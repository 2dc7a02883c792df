//! CSV text with a header line, read with the `csv` crate (RFC 4180
//! quoting: fields in double quotes may hold the delimiter, line breaks
//! and doubled quotes `""`).
//!
//! - The first record is the header (after a UTF-8 byte order mark, which
//!   is skipped, as the LIBSVM reader skips it; byte columns then count
//!   from after it); its names must be unique. One column,
//!   named by [`CsvOptions::label`], is the label: a finite number in every
//!   row.
//! - Every other column is a feature, numeric or categorical, as the
//!   [`Schema`] says (given in [`CsvOptions::schema`], or inferred by
//!   [`Schema::infer`], which **reads the file twice**). Columns are
//!   matched by header name; a header column that is neither the label nor
//!   in the schema is an error, as is a schema column missing from the
//!   header.
//! - Numeric fields, spaces trimmed, are finite numbers or missing: empty
//!   or one of the schema's missing markers (`NA`, `?`, ...), read as 0,
//!   with a 1 in the column's missing indicator if it has one. `NaN` or
//!   `inf` is an error: it would poison training. The rule in full,
//!   inference included: [`missing`](super::missing).
//! - Categorical fields are compared byte for byte (no trimming) with the
//!   column's levels; the matching level's output column gets 1. A value
//!   that is not a level of the schema (a test file seeing a category its
//!   training set never had) gives the row no entry for that column (all
//!   zeros) and is counted in [`CsvReader::unseen_levels`]; it is never an
//!   error.
//! - Every record has as many fields as the header; blank lines are
//!   skipped. Error columns are byte columns within the line where the
//!   offending field starts (its opening quote if quoted).
//!
//! ```
//! use std::io::Cursor;
//! use tocpile::ingest::csv::{Column, CsvOptions, CsvReader, Schema};
//!
//! let schema = Schema::new(vec![
//!     Column::Numeric { name: "delay".into() },
//!     Column::Categorical { name: "origin".into(), levels: vec!["JFK".into(), "EWR".into()] },
//! ])?;
//! assert_eq!(schema.column_names(), ["delay", "origin=EWR", "origin=JFK"]);
//! let text = "origin,late,delay\nJFK,1,12.5\n\"LGA\",0,\n";
//! let options = CsvOptions::default().with_label("late".into()).with_schema(Some(schema));
//! let mut reader = CsvReader::from_reader(Cursor::new(text), "flights", options)?;
//! let chunk = reader.next_chunk(100)?.expect("two rows");
//! assert_eq!(chunk.labels, [1.0, 0.0]);
//! assert_eq!(chunk.batch.row(0), (&[0u32, 2][..], &[12.5, 1.0][..]));
//! assert_eq!(chunk.batch.row(1).0, &[] as &[u32]); // LGA: unseen level
//! assert_eq!(reader.unseen_levels(), 1);
//! # Ok::<(), tocpile::Error>(())
//! ```

use std::io::BufRead;
use std::path::Path;

use hashbrown::HashMap;
use rayon::prelude::*;

use super::missing::is_missing;
#[doc(hidden)]
pub use super::schema::MAX_LEVELS;
pub use super::schema::{Column, Schema};
use super::table::Table;
use super::{
    check_chunk_call, detect_gzip, join_parts, open_path, parse_finite, remember_failure,
    sub_chunk_rows, Chunk, Part,
};
use crate::error::{Error, Result};

/// How to read a CSV file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CsvOptions {
    /// Header name of the label column. Default `"label"`.
    pub label: String,
    /// Field delimiter. Default `b','`.
    pub delimiter: u8,
    /// The feature columns; `None`: inferred by [`Schema::infer`] (the
    /// file is read twice).
    pub schema: Option<Schema>,
    /// Inference: the fields of a numeric column that read as missing
    /// besides the empty field. Default
    /// [`DEFAULT_MISSING_MARKERS`](super::missing::DEFAULT_MISSING_MARKERS).
    /// A given schema brings its own markers.
    pub missing_markers: Vec<String>,
    /// Inference: give every numeric column that has a missing field a
    /// missing indicator column ([`Column::NumericWithIndicator`]).
    /// Default `false`.
    pub missing_indicators: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            label: "label".to_string(),
            delimiter: b',',
            schema: None,
            missing_markers: super::missing::default_markers(),
            missing_indicators: false,
        }
    }
}

impl Schema {
    /// Infers the schema of a CSV file (plain or gzip) in one streaming
    /// pass: a column is numeric if every field (spaces trimmed) is a
    /// number or missing (empty, or one of `options.missing_markers`),
    /// else categorical with its distinct values as levels (an empty field
    /// or a marker is then a level like any other). A numeric column gets
    /// a missing indicator if `options.missing_indicators` is set and one
    /// of its fields is missing. `NaN` and `inf` count as numbers here, so
    /// that reading reports them as errors at their line rather than
    /// silently turning the column into categories. The schema keeps
    /// `options.missing_markers`; `options.schema` is ignored. The rule in
    /// full: [`missing`](super::missing).
    ///
    /// Memory: the levels of categorical columns, and at most 256 values
    /// of each column while it looks numeric. A column with more distinct
    /// numbers than that before its first non-numeric value has its levels
    /// read in a second pass over the file.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] for bad `options.missing_markers` (see
    /// [`Schema::with_missing_markers`]), before reading;
    /// [`Error::Io`]; [`Error::MissingColumn`] if the label column is not
    /// in the header; [`Error::Parse`] for a record with the wrong number
    /// of fields, a header that repeats a name or a non-UTF-8 value in a
    /// categorical column; [`Error::TooManyLevels`] for a categorical
    /// column with more than [`MAX_LEVELS`] distinct values.
    pub fn infer(path: impl AsRef<Path>, options: &CsvOptions) -> Result<Schema> {
        // The inference lives with the schema; the options it needs are
        // passed by value so that `schema` does not depend on this module.
        Schema::infer_columns(
            path.as_ref(),
            &options.label,
            options.delimiter,
            &options.missing_markers,
            options.missing_indicators,
        )
    }
}

/// How one schema column is read: source field, first output column, the
/// level lookup of a categorical column, and whether a numeric column has
/// a missing indicator.
struct Plan {
    field: usize,
    base: u32,
    levels: Option<HashMap<Vec<u8>, u32>>,
    indicator: bool,
}

/// Reads a CSV file chunk by chunk; see the [module docs](self).
pub struct CsvReader {
    table: Table,
    schema: Schema,
    label: usize,
    plans: Vec<Plan>,
    unseen: u64,
    failed: Option<Error>,
}

impl std::fmt::Debug for CsvReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvReader")
            .field("name", &self.table.name)
            .field("schema", &self.schema)
            .field("unseen_levels", &self.unseen)
            .finish()
    }
}

impl CsvReader {
    /// Opens a CSV file, plain or gzip. Without [`CsvOptions::schema`],
    /// reads the file once to infer the schema first.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::MissingColumn`] if the label or a schema
    /// column is not in the header; [`Error::Parse`] for a header that
    /// repeats a name or has a column that is neither the label nor in the
    /// schema; those of [`Schema::infer`].
    pub fn open(path: impl AsRef<Path>, options: CsvOptions) -> Result<CsvReader> {
        let path = path.as_ref();
        let schema = match options.schema {
            Some(schema) => schema,
            None => Schema::infer(path, &options)?,
        };
        let (name, input) = open_path(path)?;
        Self::with_table(
            Table::new(input, name, options.delimiter)?,
            &options.label,
            schema,
        )
    }

    /// Reads CSV text from any reader (standard input, a test string),
    /// gzip-compressed or not; `name` stands for the file in error
    /// messages.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if `options.schema` is `None` (a stream
    /// cannot be read twice to infer it); otherwise as [`CsvReader::open`].
    pub fn from_reader(
        reader: impl BufRead + Send + 'static,
        name: &str,
        options: CsvOptions,
    ) -> Result<CsvReader> {
        let Some(schema) = options.schema else {
            return Err(Error::BadArgument {
                what: "the schema of CSV input (CsvOptions::schema)",
                expected: "given when reading a stream (it cannot be read twice to infer it)",
            });
        };
        let input = detect_gzip(reader, name)?;
        let table = Table::new(input, name.to_string(), options.delimiter)?;
        Self::with_table(table, &options.label, schema)
    }

    fn with_table(table: Table, label: &str, schema: Schema) -> Result<CsvReader> {
        let label = table.column(label)?;
        let mut plans = Vec::with_capacity(schema.columns().len());
        let mut base = 0usize;
        for column in schema.columns() {
            let field = table.column(column.name())?;
            if field == label {
                return Err(Error::InvalidSchema {
                    message: format!("column {:?} is the label", column.name()),
                });
            }
            let levels = match column {
                Column::Categorical { levels, .. } => Some(
                    levels
                        .iter()
                        .enumerate()
                        .map(|(i, l)| (l.as_bytes().to_vec(), i as u32))
                        .collect(),
                ),
                _ => None,
            };
            plans.push(Plan {
                field,
                // Below MAX_COLS, checked by Schema::new; the last level of
                // the last column is at most u32::MAX.
                base: base as u32,
                levels,
                indicator: matches!(column, Column::NumericWithIndicator { .. }),
            });
            base += column.width();
        }
        // Every header column is the label or a schema column: the plans
        // mark the fields they read (a lookup per schema column above, not
        // a scan of the schema per header column).
        let mut planned = vec![false; table.header.len()];
        planned[label] = true;
        for plan in &plans {
            planned[plan.field] = true;
        }
        if let Some(i) = planned.iter().position(|&p| !p) {
            return Err(table.header_error(i, "a column named in the schema, or the label"));
        }
        Ok(CsvReader {
            table,
            schema,
            label,
            plans,
            unseen: 0,
            failed: None,
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

    /// Categorical fields read so far whose value is not a level of the
    /// schema (each left the row without an entry for its column).
    pub fn unseen_levels(&self) -> u64 {
        self.unseen
    }

    /// The next (at most) `max_rows` rows; `None` at the end of the file.
    ///
    /// # Errors
    /// [`Error::Parse`] or [`Error::Io`], the first in file order among the
    /// chunk's records; [`Error::BadArgument`] if `max_rows` is 0. After an
    /// error every call returns it again.
    pub fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Chunk>> {
        check_chunk_call(&self.failed, max_rows)?;
        let result = self.read_chunk(max_rows);
        remember_failure(&mut self.failed, &result);
        result
    }

    fn read_chunk(&mut self, max_rows: usize) -> Result<Option<Chunk>> {
        let pending = self.table.fill(max_rows).err();
        let records = self.table.records();
        let step = sub_chunk_rows(records.len());
        let (plans, label) = (&self.plans, self.label);
        let markers = self.schema.missing_markers();
        let parts: Vec<std::result::Result<(Part, u64), BadField>> =
            crate::parallel::install(|| {
                records
                    .par_chunks(step)
                    .enumerate()
                    .map(|(k, records)| {
                        let mut part = Part::default();
                        let mut unseen = 0;
                        for (i, record) in records.iter().enumerate() {
                            parse_record(record, label, plans, markers, &mut part, &mut unseen)
                                .map_err(|(field, expected)| (k * step + i, field, expected))?;
                        }
                        Ok((part, unseen))
                    })
                    .collect()
            });
        let mut joined = Vec::with_capacity(parts.len());
        let mut unseen = 0;
        for part in parts {
            let (part, n) = part
                .map_err(|(row, field, expected)| self.table.field_error(row, field, expected))?;
            joined.push(part);
            unseen += n;
        }
        if let Some(e) = pending {
            return Err(e);
        }
        if records.is_empty() {
            return Ok(None);
        }
        self.unseen += unseen;
        join_parts(self.schema.n_cols(), joined, self.table.line_of(0)).map(Some)
    }
}

/// A bad field of a chunk: record, field, what was expected.
type BadField = (usize, usize, &'static str);

/// Parses one record into `part`; `Err` names the bad field and what was
/// expected there.
fn parse_record(
    record: &::csv::ByteRecord,
    label: usize,
    plans: &[Plan],
    markers: &[String],
    part: &mut Part,
    unseen: &mut u64,
) -> std::result::Result<(), (usize, &'static str)> {
    let label_value =
        parse_finite(record[label].trim_ascii()).ok_or((label, "a label (a finite number)"))?;
    for plan in plans {
        let field = &record[plan.field];
        match &plan.levels {
            None => {
                let text = field.trim_ascii();
                // A number first: missing markers are only looked up for
                // fields that are not numbers.
                match parse_finite(text) {
                    Some(value) if value != 0.0 => {
                        part.cols.push(plan.base);
                        part.values.push(value);
                    }
                    Some(_) => {}
                    None if is_missing(text, markers) => {
                        if plan.indicator {
                            part.cols.push(plan.base + 1);
                            part.values.push(1.0);
                        }
                    }
                    None => {
                        return Err((
                            plan.field,
                            "a finite number, an empty field or a missing marker (numeric column)",
                        ))
                    }
                }
            }
            Some(levels) => match levels.get(field) {
                Some(&level) => {
                    part.cols.push(plan.base + level);
                    part.values.push(1.0);
                }
                None => *unseen += 1,
            },
        }
    }
    part.labels.push(label_value);
    part.ends.push(part.cols.len());
    Ok(())
}

//! Schema inference from Arrow record batches: the column's Arrow type
//! decides numeric or categorical, the batches give the levels.

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;
use hashbrown::HashSet;

use super::columns::{numbers, Kind, Text, SUPPORTED};
use super::{bad_column, check_unique, field_names, found_string, ArrowOptions};
use crate::error::{Error, Result};
use crate::ingest::csv::{Column, Schema, MAX_LEVELS};

/// What inference has seen of one column.
#[derive(Debug)]
struct Seen {
    name: String,
    kind: Kind,
    /// Distinct strings of a text column.
    levels: HashSet<String>,
    /// A null was seen (numbers and booleans).
    has_null: bool,
}

/// Infers a [`Schema`] from record batches, one batch at a time, so that
/// a file is read in bounded memory.
///
/// Numbers, booleans and the null type give numeric columns (with a
/// missing indicator if [`ArrowOptions::missing_indicators`] is set and the
/// column has a null); strings and dictionaries of strings give categorical
/// columns whose levels are the distinct strings seen (a null string is
/// the level `""`). Columns keep the order of the Arrow schema, the label
/// left out. The schema has the default missing markers, for CSV files
/// read with it later.
///
/// Only the columns [`SchemaInference::columns_to_read`] names need be in
/// the batches: a Parquet reader can skip the others.
#[derive(Debug)]
pub struct SchemaInference {
    name: String,
    indicators: bool,
    columns: Vec<Seen>,
    rows: u64,
}

impl SchemaInference {
    /// Starts inference for batches with the columns of `fields`; `name`
    /// stands for the input in error messages.
    ///
    /// # Errors
    /// [`Error::MissingColumn`] if the label is not in `fields`;
    /// [`Error::BadColumn`] for a label that is not a number or boolean,
    /// a column of a type tocpile does not read, or two columns of one
    /// name.
    pub fn new(
        name: &str,
        fields: &ArrowSchema,
        options: &ArrowOptions,
    ) -> Result<SchemaInference> {
        check_unique(name, fields)?;
        let label = fields
            .field_with_name(&options.label)
            .map_err(|_| Error::MissingColumn {
                path: name.to_string(),
                name: options.label.clone(),
                header: field_names(fields),
            })?;
        if !matches!(
            Kind::of(label.data_type()),
            Some(Kind::Number | Kind::Boolean)
        ) {
            return Err(bad_column(
                name,
                label.name(),
                label.data_type(),
                "a number or boolean column (the label)",
            ));
        }
        let mut columns = Vec::new();
        for field in fields.fields() {
            if field.name() == &options.label {
                continue;
            }
            let kind = Kind::of(field.data_type())
                .ok_or_else(|| bad_column(name, field.name(), field.data_type(), SUPPORTED))?;
            columns.push(Seen {
                name: field.name().clone(),
                kind,
                levels: HashSet::new(),
                has_null: false,
            });
        }
        Ok(SchemaInference {
            name: name.to_string(),
            indicators: options.missing_indicators,
            columns,
            rows: 0,
        })
    }

    /// The columns whose values inference needs: the string columns, and
    /// with missing indicators the numeric and boolean ones too.
    pub fn columns_to_read(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|c| c.kind == Kind::Text || (self.indicators && c.kind != Kind::Null))
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Takes in a batch holding some or all of the columns (see
    /// [`SchemaInference::columns_to_read`]); the label is not needed.
    ///
    /// # Errors
    /// [`Error::BadValue`] for a string column with more than
    /// [`MAX_LEVELS`] distinct strings, naming the first string over;
    /// [`Error::BadColumn`] for a column whose type differs from the one
    /// `fields` gave it.
    pub fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        for (field, array) in batch.schema_ref().fields().iter().zip(batch.columns()) {
            let Some(seen) = self.columns.iter_mut().find(|c| &c.name == field.name()) else {
                continue; // The label, or a column inference has no use for.
            };
            if Kind::of(array.data_type()) != Some(seen.kind) {
                return Err(bad_column(
                    &self.name,
                    &seen.name,
                    array.data_type(),
                    "the type the column had in the schema inference started with",
                ));
            }
            if seen.kind != Kind::Text {
                if let Some(numbers) = numbers(array.as_ref()) {
                    seen.has_null |= numbers.has_nulls();
                }
                continue;
            }
            let Some(text) = Text::of(array.as_ref()) else {
                continue; // Kind::Text always has a Text view.
            };
            let levels = &mut seen.levels;
            let rows = self.rows;
            text.codes(|row, s| {
                if !levels.contains(s) {
                    if levels.len() == MAX_LEVELS {
                        return Err((rows + row as u64, found_string(s)));
                    }
                    levels.insert(s.to_string());
                }
                Ok(0)
            })
            .map_err(|(row, found)| Error::BadValue {
                path: self.name.clone(),
                row,
                column: seen.name.clone(),
                expected: "at most 65536 distinct strings in a column (categorical)",
                found,
            })?;
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// The schema of the batches seen.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] for more than
    /// [`MAX_COLS`](crate::MAX_COLS) output columns.
    pub fn finish(self) -> Result<Schema> {
        let indicators = self.indicators;
        let columns = self
            .columns
            .into_iter()
            .map(|c| match c.kind {
                Kind::Text => {
                    let levels = c.levels.into_iter().collect();
                    Column::Categorical {
                        name: c.name,
                        levels,
                    }
                }
                // A column of the null type is all missing.
                Kind::Null if indicators && self.rows > 0 => {
                    Column::NumericWithIndicator { name: c.name }
                }
                _ if indicators && c.has_null => Column::NumericWithIndicator { name: c.name },
                _ => Column::Numeric { name: c.name },
            })
            .collect();
        Schema::new(columns)
    }
}

/// Infers the schema of `batches`, whose columns are those of `fields`
/// (see [`SchemaInference`]).
///
/// # Errors
/// Those of [`SchemaInference::new`], [`SchemaInference::update`] and
/// [`SchemaInference::finish`].
pub fn infer_schema<'a>(
    name: &str,
    fields: &ArrowSchema,
    batches: impl IntoIterator<Item = &'a RecordBatch>,
    options: &ArrowOptions,
) -> Result<Schema> {
    let mut inference = SchemaInference::new(name, fields, options)?;
    for batch in batches {
        inference.update(batch)?;
    }
    inference.finish()
}

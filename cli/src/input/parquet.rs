//! Parquet files (cargo feature `parquet`): read in record batches of at
//! most `CHUNK_ROWS` rows with arrow-rs's `parquet` reader and encoded by
//! `tocpile::ingest::arrow`, so memory is bounded by a batch (plus the
//! pages being decoded), never the file.
//!
//! Without `--schema`, the file is read twice: once for the schema (only
//! the string columns, and the numeric ones with `--missing-indicators`),
//! then for the rows. Errors name the file, the row group and row, and the
//! column.

use std::fs::File;
use std::path::Path;

use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use tocpile::ingest::arrow::arrow_array::RecordBatch;
use tocpile::ingest::arrow::{ArrowEncoder, ArrowOptions, SchemaInference};
use tocpile::ingest::csv::Schema;
use tocpile::ingest::Chunk;

use crate::Failure;

/// Bytes of column values (8 per cell) a record batch may hold: 65,536
/// rows up to 64 columns (the batches measured on flights3m), fewer for
/// wider tables (5,349 rows of 784 columns).
const BATCH_BYTES: usize = 32 << 20;

/// A Parquet file being read.
pub struct ParquetInput {
    name: String,
    encoder: ArrowEncoder,
    reader: ParquetRecordBatchReader,
    /// Rows of each row group, in order.
    group_rows: Vec<u64>,
}

impl ParquetInput {
    /// Opens `path`; infers the schema first (a pass over the file's
    /// string columns) unless `schema` is given.
    pub fn open(
        path: &Path,
        schema: Option<Schema>,
        options: &ArrowOptions,
        batch_rows: usize,
    ) -> Result<ParquetInput, Failure> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| Failure::about(path, e))?;
        let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .map_err(|e| Failure::about(path, format!("not a readable Parquet file: {e}")))?;
        // Columns are checked against the file's own types (so errors name
        // them), and read with strings as dictionaries where the reader
        // accepts that.
        let fields = metadata.schema().clone();
        // Batches sized by bytes as well as rows: a wide table (hundreds
        // of columns) would otherwise hold `batch_rows` rows of each.
        let batch_rows = batch_rows
            .min(BATCH_BYTES / (8 * fields.fields().len().max(1)))
            .max(64);
        let metadata = dictionary_strings(&metadata).unwrap_or(metadata);
        let group_rows: Vec<u64> = metadata
            .metadata()
            .row_groups()
            .iter()
            .map(|g| u64::try_from(g.num_rows()).unwrap_or(0))
            .collect();
        let schema = match schema {
            Some(schema) => schema,
            None => {
                let mut inference = SchemaInference::new(&name, &fields, options)?;
                let wanted: Vec<usize> = inference
                    .columns_to_read()
                    .iter()
                    .filter_map(|c| fields.index_of(c).ok())
                    .collect();
                if !wanted.is_empty() {
                    let mask = ProjectionMask::roots(metadata.parquet_schema(), wanted);
                    let mut reader = reader(&file, path, &metadata, batch_rows, mask)?;
                    let mut rows = Rows {
                        name: &name,
                        reader: &mut reader,
                        group_rows: &group_rows,
                        done: 0,
                    };
                    while let Some(batch) = rows.next_batch()? {
                        inference.update(&batch).map_err(|e| rows.locate(e))?;
                    }
                }
                inference.finish()?
            }
        };
        let encoder = ArrowEncoder::new(&name, &fields, schema, options)?;
        let all = ProjectionMask::all();
        let reader = reader(&file, path, &metadata, batch_rows, all)?;
        Ok(ParquetInput {
            name,
            encoder,
            reader,
            group_rows,
        })
    }

    /// The schema rows are read with.
    pub fn schema(&self) -> &Schema {
        self.encoder.schema()
    }

    /// String values read so far that are not levels of the schema.
    pub fn unseen_levels(&self) -> u64 {
        self.encoder.unseen_levels()
    }

    /// The next batch of rows; `None` at the end of the file.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, Failure> {
        let mut rows = Rows {
            name: &self.name,
            reader: &mut self.reader,
            group_rows: &self.group_rows,
            done: self.encoder.rows(),
        };
        let Some(batch) = rows.next_batch()? else {
            return Ok(None);
        };
        let chunk = self.encoder.encode(&batch).map_err(|e| rows.locate(e))?;
        Ok(Some(chunk))
    }
}

/// The same metadata with string columns read as dictionaries: a column
/// chunk stored with a dictionary (the writers' default) then reaches the
/// encoder as one, and each distinct string is looked up once per batch
/// instead of once per row. Measured on flights3m as Parquet (five string
/// columns, one stored without a dictionary), 5 interleaved runs: 0.97 s
/// of CPU against 1.10 s for plain strings, for 8 MB more peak memory.
/// `None` if the reader refuses the hint (then strings are read plain).
fn dictionary_strings(metadata: &ArrowReaderMetadata) -> Option<ArrowReaderMetadata> {
    use tocpile::ingest::arrow::arrow_schema::{DataType, Field, Schema as ArrowSchema};
    let fields: Vec<Field> = metadata
        .schema()
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 => f.as_ref().clone().with_data_type(
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(f.data_type().clone())),
            ),
            _ => f.as_ref().clone(),
        })
        .collect();
    let hinted = std::sync::Arc::new(ArrowSchema::new_with_metadata(
        fields,
        metadata.schema().metadata().clone(),
    ));
    ArrowReaderMetadata::try_new(
        metadata.metadata().clone(),
        ArrowReaderOptions::new().with_schema(hinted),
    )
    .ok()
}

/// A reader of `mask`'s columns in batches of `batch_rows` rows.
fn reader(
    file: &File,
    path: &Path,
    metadata: &ArrowReaderMetadata,
    batch_rows: usize,
    mask: ProjectionMask,
) -> Result<ParquetRecordBatchReader, Failure> {
    let file = file.try_clone().map_err(|e| Failure::about(path, e))?;
    ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
        .with_batch_size(batch_rows)
        .with_projection(mask)
        .build()
        .map_err(|e| Failure::about(path, e))
}

/// A reader with what error messages need: the rows read so far and
/// the row groups' sizes.
struct Rows<'a> {
    name: &'a str,
    reader: &'a mut ParquetRecordBatchReader,
    group_rows: &'a [u64],
    /// Rows of the batches returned so far.
    done: u64,
}

impl Rows<'_> {
    /// The next batch; a read error (a corrupt page, say) names the row
    /// group where the batch would have started.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, Failure> {
        match self.reader.next() {
            None => Ok(None),
            Some(Ok(batch)) => {
                self.done += batch.num_rows() as u64;
                Ok(Some(batch))
            }
            Some(Err(e)) => {
                let (group, in_group) = locate_row(self.group_rows, self.done);
                Err(Failure(format!(
                    "{}: row group {group} (reading from its row {in_group}, row {} of the \
                     file): {e}",
                    self.name, self.done
                )))
            }
        }
    }

    /// A library error with the row group of its row added.
    fn locate(&self, e: tocpile::Error) -> Failure {
        match &e {
            tocpile::Error::BadValue { row, .. } => {
                let (group, in_group) = locate_row(self.group_rows, *row);
                Failure(format!("{e} (row group {group}, its row {in_group})"))
            }
            _ => Failure::from(e),
        }
    }
}

/// The row group holding `row` (0-based, of the file) and the row within
/// it; past the end, the number of groups and the excess.
fn locate_row(group_rows: &[u64], row: u64) -> (usize, u64) {
    let mut first = 0u64;
    for (g, &n) in group_rows.iter().enumerate() {
        if row < first + n {
            return (g, row - first);
        }
        first += n;
    }
    (group_rows.len(), row - first)
}

#[cfg(test)]
mod tests {
    use super::locate_row;

    #[test]
    fn rows_map_to_row_groups() {
        let groups = [3, 0, 2];
        assert_eq!(locate_row(&groups, 0), (0, 0));
        assert_eq!(locate_row(&groups, 2), (0, 2));
        assert_eq!(locate_row(&groups, 3), (2, 0));
        assert_eq!(locate_row(&groups, 4), (2, 1));
        assert_eq!(locate_row(&groups, 5), (3, 0));
    }
}

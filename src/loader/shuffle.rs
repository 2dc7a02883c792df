//! Shuffle Once: a copy of a dataset file with its rows in a uniformly
//! random order, written in bounded memory, as in-database systems keep a
//! shuffled replica (CorgiPile paper 3.2; it costs a second copy on disk).
//!
//! A two-pass external shuffle: each row goes to one of `B` bucket files
//! chosen uniformly at random, then each bucket (small enough for memory)
//! is permuted in memory and appended to the output. Independent uniform
//! buckets and uniform permutations within them give a uniform permutation
//! of the whole. `B` is 1 (no bucket files) when the decoded rows fit the
//! memory budget.

use std::path::{Path, PathBuf};

use crate::cleanup::ScratchFile;
use crate::dataset::{Dataset, DatasetInfo, DatasetWriter, Source, WriterOptions};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::rng::Rng;
use crate::sparse::SparseBatch;

/// Decoded bytes one bucket may take in memory.
const BUCKET_BYTES: u64 = 64 << 20;
/// Rows gathered per bucket before they are pushed to its file.
const CHUNK_ROWS: usize = 2048;
/// Non-zeros that also close a chunk: 2,048 rows of 131,072 non-zeros
/// each (a shared-dictionary bomb's) made one chunk 3 GiB (issue 34).
const CHUNK_NNZ: usize = 1 << 20;
/// Most bucket files: a file-descriptor limit (often 1024) must never be
/// what stops a shuffle; past 256 x 64 MiB buckets simply grow.
const MAX_BUCKETS: u64 = 256;
const STREAM_BUCKET: u64 = 10;
const STREAM_PERMUTE: u64 = 11;

/// Writes to `output` a copy of `input` with its rows shuffled uniformly
/// (fixed by `seed`), with the same page format, page and block sizes and
/// schema. Memory stays near 64 MiB of decoded rows up to 16 GiB of
/// them (256 buckets; beyond, buckets grow rather than multiply); bucket
/// files live beside `output` and are removed. The output is
/// written atomically.
///
/// # Errors
/// Read errors of `input`; I/O errors writing `output` or the buckets.
pub fn shuffle_file<S: Source>(
    input: &Dataset<S>,
    output: &Path,
    seed: u64,
) -> Result<DatasetInfo> {
    shuffle_file_mapped(input, output, seed).map(|(info, _)| info)
}

/// [`shuffle_file`], also returning for each row of the copy its row
/// number in `input` (8 bytes per row), so traces can name original rows.
pub(crate) fn shuffle_file_mapped<S: Source>(
    input: &Dataset<S>,
    output: &Path,
    seed: u64,
) -> Result<(DatasetInfo, Vec<u64>)> {
    // An error that names no file (memory refused) names the input.
    shuffle_in(input, output, seed).map_err(|error| match error {
        Error::OutOfMemory { .. } => Error::InFile {
            path: input.path().display().to_string(),
            section: String::new(),
            offset: 0,
            error: Box::new(error),
        },
        other => other,
    })
}

fn shuffle_in<S: Source>(
    input: &Dataset<S>,
    output: &Path,
    seed: u64,
) -> Result<(DatasetInfo, Vec<u64>)> {
    let info = input.info();
    let options = WriterOptions {
        page_rows: info.page_rows,
        block_bytes: info.block_bytes,
        format: info.format,
        schema: info.schema.clone(),
        ..WriterOptions::default()
    };
    // The footer's totals size the buckets: bounded at the open (see
    // `docs/FORMAT.md`, "Resource limits"), capped here, checked below.
    let decoded = info
        .nnz
        .saturating_mul(12)
        .saturating_add(info.n_rows.saturating_mul(16));
    let n_buckets = decoded.div_ceil(BUCKET_BYTES).clamp(1, MAX_BUCKETS) as usize;
    let mut out = DatasetWriter::create(output, info.n_cols, options)?;
    let mut origin = Vec::new();
    if n_buckets == 1 {
        let (rows, labels) = read_all(input)?;
        input.check_totals(labels.len() as u64, rows.nnz() as u64)?;
        let ids: Vec<u64> = (0..labels.len() as u64).collect();
        let rng = Rng::stream(seed, &[STREAM_PERMUTE, 0]);
        write_permuted(&mut out, (&rows, &labels, &ids), rng, &mut origin)?;
        return Ok((out.finish()?, origin));
    }
    let buckets = Buckets::new(output, n_buckets)?;
    let bucket_options = WriterOptions {
        page_rows: 1024,
        block_bytes: 1 << 20,
        format: FormatKind::TocFull,
        schema: String::new(),
        // Scratch read back once: no shared dictionaries.
        segment_rows: 0,
    };
    let mut writers = buckets
        .paths
        .iter()
        .map(|p| DatasetWriter::create(p, info.n_cols, bucket_options.clone()))
        .collect::<Result<Vec<_>>>()?;
    let mut chunks = (0..n_buckets)
        .map(|_| Ok((SparseBatch::with_cols(info.n_cols)?, Vec::new())))
        .collect::<Result<Vec<_>>>()?;
    let mut pick = Rng::stream(seed, &[STREAM_BUCKET]);
    let mut bucket_ids: Vec<Vec<u64>> = vec![Vec::new(); n_buckets];
    let (mut next_id, mut nnz) = (0u64, 0u64);
    for b in 0..input.n_blocks() {
        let block = input.read_block(b)?;
        for page in block.pages()? {
            for (row, &label) in page.batch().try_decode()?.rows().zip(page.labels()) {
                nnz += row.0.len() as u64;
                let k = pick.below(n_buckets as u64) as usize;
                bucket_ids[k].push(next_id);
                next_id += 1;
                let (batch, chunk_labels) = &mut chunks[k];
                batch.push_row(row.0, row.1)?;
                chunk_labels.push(label);
                if chunk_labels.len() == CHUNK_ROWS || batch.nnz() >= CHUNK_NNZ {
                    writers[k].push(batch, chunk_labels)?;
                    *batch = SparseBatch::with_cols(info.n_cols)?;
                    chunk_labels.clear();
                }
            }
        }
    }
    input.check_totals(next_id, nnz)?;
    for ((mut writer, (batch, labels)), k) in writers.into_iter().zip(chunks).zip(0u64..) {
        writer.push(&batch, &labels)?;
        writer.finish()?;
        let bucket = Dataset::open(&buckets.paths[k as usize])?;
        let (rows, labels) = read_all(&bucket)?;
        let rng = Rng::stream(seed, &[STREAM_PERMUTE, k]);
        let ids = &bucket_ids[k as usize];
        write_permuted(&mut out, (&rows, &labels, ids), rng, &mut origin)?;
    }
    Ok((out.finish()?, origin))
}

/// Bucket file paths, removed when dropped (success or error) or on an
/// interruption, and locked while they live ([`crate::cleanup`]).
struct Buckets {
    paths: Vec<PathBuf>,
    _guards: Vec<ScratchFile>,
}

impl Buckets {
    fn new(output: &Path, n: usize) -> Result<Buckets> {
        let name = output
            .file_name()
            .map_or_else(|| "shuffled".into(), |n| n.to_string_lossy().into_owned());
        let dir = output.parent().unwrap_or(Path::new("."));
        let paths: Vec<PathBuf> = (0..n)
            .map(|k| dir.join(format!(".{name}.bucket-{k}")))
            .collect();
        let guards = paths.iter().map(ScratchFile::new).collect::<Result<_>>()?;
        Ok(Buckets {
            paths,
            _guards: guards,
        })
    }
}

/// Every row and label of a dataset, in file order.
fn read_all<S: Source>(ds: &Dataset<S>) -> Result<(SparseBatch, Vec<f64>)> {
    let mut rows = SparseBatch::with_cols(ds.info().n_cols)?;
    let mut labels = Vec::new();
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b)?;
        for page in block.pages()? {
            for (cols, values) in page.batch().try_decode()?.rows() {
                rows.push_row(cols, values)?;
            }
            labels.extend_from_slice(page.labels());
        }
    }
    Ok((rows, labels))
}

/// Appends `rows` (with their labels and original ids) to `out` in a
/// random order, recording the original ids in `origin`.
fn write_permuted(
    out: &mut DatasetWriter,
    (rows, labels, ids): (&SparseBatch, &[f64], &[u64]),
    mut rng: Rng,
    origin: &mut Vec<u64>,
) -> Result<()> {
    let order = rng.permutation(labels.len());
    origin.extend(order.iter().map(|&i| ids[i]));
    let mut batch = SparseBatch::with_cols(rows.n_cols())?;
    let mut chunk_labels = Vec::with_capacity(CHUNK_ROWS);
    for &i in &order {
        let (cols, values) = rows.row(i);
        batch.push_row(cols, values)?;
        chunk_labels.push(labels[i]);
        if chunk_labels.len() == CHUNK_ROWS || batch.nnz() >= CHUNK_NNZ {
            out.push(&batch, &chunk_labels)?;
            batch.clear();
            chunk_labels.clear();
        }
    }
    if !chunk_labels.is_empty() {
        out.push(&batch, &chunk_labels)?;
    }
    Ok(())
}

//! Helpers shared by the loader and training experiments: the shared
//! datasets as dataset files, in file order or clustered by label (the
//! CorgiPile paper's "clustered" setting), and page-cache control.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tocpile::dataset::{DatasetInfo, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::SparseBatch;
use tocpile_bench_data::{load, sort_by_label};

/// Rows of a shared dataset (at most `max_rows`), sorted by label when
/// `clustered` (stable: ties keep file order).
pub fn rows(name: &str, max_rows: usize, clustered: bool) -> (SparseBatch, Vec<f64>) {
    let (rows, labels) = load(name, max_rows);
    if clustered {
        sort_by_label(&rows, &labels)
    } else {
        (rows, labels)
    }
}

/// Command-line options of the experiment examples: `--name value`
/// pairs after an optional subcommand.
pub struct Args(pub Vec<String>);

impl Args {
    /// The process's arguments.
    pub fn from_env() -> Args {
        Args(std::env::args().skip(1).collect())
    }

    /// The value after `name` parsed, or `default` when absent.
    ///
    /// # Panics
    /// If the value does not parse (a usage error in an example).
    pub fn get<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        self.0
            .iter()
            .position(|a| a == name)
            .and_then(|i| self.0.get(i + 1))
            .map_or(default, |s| s.parse().ok().expect(name))
    }

    /// Whether the flag `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name)
    }
}

/// Writes rows to a dataset file of `blocks` blocks or so (the block size
/// is chosen from a first TOC encoding of the same rows).
pub fn write(
    path: &Path,
    rows: &SparseBatch,
    labels: &[f64],
    format: FormatKind,
    page_rows: usize,
    block_bytes: usize,
) -> tocpile::Result<DatasetInfo> {
    let options = WriterOptions::default()
        .with_page_rows(page_rows)
        .with_block_bytes(block_bytes)
        .with_format(format);
    let mut w = DatasetWriter::create(path, rows.n_cols(), options)?;
    for start in (0..labels.len()).step_by(100_000) {
        let end = (start + 100_000).min(labels.len());
        w.push(&rows.slice_rows(start..end), &labels[start..end])?;
    }
    w.finish()
}

/// The block size that cuts `rows` into about `blocks` TOC blocks.
pub fn block_bytes_for(
    rows: &SparseBatch,
    labels: &[f64],
    page_rows: usize,
    blocks: usize,
    scratch: &Path,
) -> tocpile::Result<usize> {
    let info = write(
        scratch,
        rows,
        labels,
        FormatKind::TocFull,
        page_rows,
        1 << 30,
    )?;
    std::fs::remove_file(scratch).ok();
    Ok((info.file_bytes as usize / blocks).max(1))
}

/// A scratch path in the temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tocpile-{}-{name}", std::process::id()))
}

/// Flushes dirty pages and drops the page cache (root on Linux), so the
/// next reads come from disk. Returns whether it worked.
pub fn drop_page_cache() -> bool {
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", "1").is_ok()
}

/// Divides every column by its largest absolute value in `fit` (max-abs
/// scaling: sparsity is kept, values land in [-1, 1]), applied to each of
/// `batches`. Raw features of very different magnitudes (a distance in
/// miles beside one-hot columns) otherwise force a learning rate too small
/// for the one-hot weights to move.
pub fn maxabs_scale(fit: &SparseBatch, batches: &mut [&mut SparseBatch]) {
    let mut max = vec![0.0f64; fit.n_cols()];
    for (cols, values) in fit.rows() {
        for (&c, &v) in cols.iter().zip(values) {
            max[c as usize] = max[c as usize].max(v.abs());
        }
    }
    for batch in batches.iter_mut() {
        let mut scaled = SparseBatch::with_cols(batch.n_cols()).expect("columns");
        let mut buf = Vec::new();
        for (cols, values) in batch.rows() {
            buf.clear();
            buf.extend(cols.iter().zip(values).map(|(&c, &v)| {
                let m = max[c as usize];
                if m > 0.0 {
                    v / m
                } else {
                    v
                }
            }));
            scaled.push_row(cols, &buf).expect("row");
        }
        **batch = scaled;
    }
}

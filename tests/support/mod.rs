//! Test support: a minimal reader for the gzip'd LIBSVM files in
//! `data/` and `../shared/data`, independent of the library's `ingest` readers so that
//! they can be tested against it (it only has to read trusted test data),
//! and helpers shared by the tests. (Examples and benches load the shared
//! datasets through the library, with `bench-data/`.)

#![allow(dead_code)]

pub mod forge;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use flate2::read::GzDecoder;
use tocpile::SparseBatch;

// The shared datasets' names, paths and column counts, and the row
// operations the examples and benches use too: one copy, in bench-data/
// (whose shuffle is the library's seeded generator). Only the reader
// below is the tests' own.
#[allow(unused_imports)] // each test crate uses some of them
pub use tocpile_bench_data::{
    batches, cvi_bit_packed_len, dataset_cols, dataset_path, is_builtin, reorder, shuffle_order,
    shuffled, sort_by_label, to_decimals, BUILTIN_DATASETS, DATASETS, DECIMAL_DATASETS,
};

/// Which datasets a test runs on: those shipped in `data/` (always), or
/// those only `../shared/data` has (the `#[ignore]`d twin of the test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sets {
    /// The [`BUILTIN_DATASETS`] (and their `_cents` versions).
    Shipped,
    /// The rest of [`DATASETS`] (and their `_cents` versions).
    SharedOnly,
}

impl Sets {
    /// Whether dataset `name` belongs to this selection.
    pub fn has(self, name: &str) -> bool {
        is_builtin(name) == (self == Sets::Shipped)
    }

    /// [`DATASETS`] then [`DECIMAL_DATASETS`] with their index in that
    /// chain (tests seed by it), only those of this selection.
    pub fn with_decimals(self) -> impl Iterator<Item = (usize, &'static str)> {
        DATASETS
            .iter()
            .chain(DECIMAL_DATASETS)
            .copied()
            .enumerate()
            .filter(move |(_, name)| self.has(name))
    }

    /// [`DATASETS`] with their index, only those of this selection.
    pub fn plain(self) -> impl Iterator<Item = (usize, &'static str)> {
        DATASETS
            .iter()
            .copied()
            .enumerate()
            .filter(move |(_, name)| self.has(name))
    }
}

/// Reads at most `max_rows` rows of a dataset: the features as one batch
/// (1-based indices shifted to 0-based) and the labels.
///
/// A name ending in `_cents` is the dataset with its numeric columns
/// turned into two-decimal ones (see [`DECIMAL_DATASETS`], [`to_decimals`]).
pub fn load(name: &str, max_rows: usize) -> (SparseBatch, Vec<f64>) {
    if let Some(base) = name.strip_suffix("_cents") {
        let (rows, labels) = load(base, max_rows);
        return (to_decimals(&rows, 2), labels);
    }
    load_file(&dataset_path(name), dataset_cols(name), max_rows)
}

/// Reads at most `max_rows` rows of a gzip'd LIBSVM file with `n_cols`
/// columns.
pub fn load_file(
    path: &std::path::Path,
    n_cols: usize,
    max_rows: usize,
) -> (SparseBatch, Vec<f64>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = BufReader::new(GzDecoder::new(file));
    let mut batch = SparseBatch::with_cols(n_cols).unwrap();
    let mut labels = Vec::new();
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for line in reader.lines().take(max_rows) {
        let line = line.unwrap();
        let mut parts = line.split_ascii_whitespace();
        let Some(label) = parts.next() else { continue };
        labels.push(label.parse::<f64>().unwrap());
        cols.clear();
        vals.clear();
        for item in parts {
            let (i, v) = item.split_once(':').unwrap();
            cols.push(i.parse::<u32>().unwrap() - 1);
            vals.push(v.parse::<f64>().unwrap());
        }
        batch.push_row(&cols, &vals).unwrap();
    }
    (batch, labels)
}

/// A fresh `.toc` path in this process's temporary directory (unique per
/// call, so tests running in parallel never share a file).
pub fn temp_path(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("tocpile-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}-{name}.toc", N.fetch_add(1, Ordering::Relaxed)))
}

/// Deterministic pseudo-random numbers in [-1, 1).
pub fn numbers(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// `|got - want| <= 1e-12 * scale` element-wise (logical order), with
/// `scale` the sum of the absolute terms.
pub fn assert_close<'a>(
    got: impl IntoIterator<Item = &'a f64>,
    want: impl IntoIterator<Item = &'a f64>,
    scale: impl IntoIterator<Item = &'a f64>,
    what: &str,
) {
    let (got, want): (Vec<f64>, Vec<f64>) = (
        got.into_iter().copied().collect(),
        want.into_iter().copied().collect(),
    );
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((g, w), s)) in got.iter().zip(&want).zip(scale).enumerate() {
        let tol = 1e-12 * s + 1e-300;
        assert!(
            (g - w).abs() <= tol,
            "{what}[{i}]: got {g}, want {w}, tol {tol}"
        );
    }
}

/// Table A of the TOC paper's running example (Figure 3).
pub fn figure3() -> SparseBatch {
    SparseBatch::from_dense_rows(
        4,
        &[
            [1.1, 2.0, 3.0, 1.4],
            [1.1, 2.0, 3.0, 0.0],
            [0.0, 1.1, 3.0, 1.4],
            [1.1, 2.0, 0.0, 0.0],
        ],
    )
    .unwrap()
}

/// Rows drawn from `pool` distinct rows in runs of `run` identical rows
/// (labels with them: row `k` of the pool has label `k % 3`).
pub fn runs(pool: usize, run: usize, n_rows: usize, n_cols: u32) -> (SparseBatch, Vec<f64>) {
    let mut rows = SparseBatch::with_cols(n_cols as usize).unwrap();
    let mut labels = Vec::new();
    for i in 0..n_rows {
        let k = (i / run) % pool;
        let cols: Vec<u32> = (0..n_cols)
            .filter(|c| !(c + k as u32).is_multiple_of(3))
            .collect();
        let vals: Vec<f64> = cols
            .iter()
            .map(|&c| 1.0 + (c as usize + k) as f64)
            .collect();
        rows.push_row(&cols, &vals).unwrap();
        labels.push((k % 3) as f64);
    }
    (rows, labels)
}

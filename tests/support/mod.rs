//! Test and bench support: a minimal reader for the gzip'd LIBSVM files in
//! `../shared/data`, independent of the library's `ingest` readers so that
//! they can be tested against it (it only has to read trusted test data),
//! and helpers shared by tests, benches and examples.

#![allow(dead_code)]

pub mod forge;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use flate2::read::GzDecoder;
use tocpile::SparseBatch;

/// Names of the shared datasets, smallest first.
pub const DATASETS: &[&str] = &[
    "mushrooms",
    "coil2000",
    "mnist5k",
    "census_fertility",
    "nycflights13",
    "flights3m",
];

/// The mixed one-hot and decimal sets built from the shared datasets: the
/// dataset's numeric columns (any value other than 1) divided by 100, so
/// that integer columns (distances, times, ages, counts) become two-decimal
/// prices beside the one-hot columns. Load them by these names.
pub const DECIMAL_DATASETS: &[&str] = &[
    "coil2000_cents",
    "census_fertility_cents",
    "nycflights13_cents",
    "flights3m_cents",
];

/// Path of a dataset file: `../shared/data` beside the checkout, or the
/// copy of mushrooms that ships in `data/`.
pub fn dataset_path(name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root
        .join("../shared/data")
        .join(format!("{name}.libsvm.gz"));
    let builtin = root.join("data").join(format!("{name}.libsvm.gz"));
    if !shared.exists() && builtin.exists() {
        return builtin;
    }
    shared
}

/// The column count documented for a dataset (mnist5k's last pixels are
/// all zero, so it cannot be inferred from the data).
pub fn dataset_cols(name: &str) -> usize {
    match name {
        "mushrooms" => 98,
        "coil2000" => 565,
        "census_fertility" => 12,
        "mnist5k" => 784,
        "nycflights13" => 4195,
        "flights3m" => 496,
        other => panic!("unknown dataset {other}"),
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

/// Every value of the numeric columns of `batch` (those holding any value
/// other than 1) divided by `10^places`: the correctly rounded quotient,
/// i.e. the `f64` that parsing the decimal text gives. The same transform
/// as `tocpile ratio --decimals`.
pub fn to_decimals(batch: &SparseBatch, places: u32) -> SparseBatch {
    let divisor = 10f64.powi(places as i32);
    let mut numeric = vec![false; batch.n_cols()];
    for (&c, &v) in batch.cols().iter().zip(batch.values()) {
        numeric[c as usize] |= v != 1.0;
    }
    let mut out = SparseBatch::with_cols(batch.n_cols()).unwrap();
    for (cols, row) in batch.rows() {
        let vals: Vec<f64> = cols
            .iter()
            .zip(row)
            .map(|(&c, &v)| if numeric[c as usize] { v / divisor } else { v })
            .collect();
        out.push_row(cols, &vals).unwrap();
    }
    out
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

/// Rows of `batch` permuted by a fixed-seed shuffle (the paper shuffles
/// once before cutting mini-batches).
pub fn shuffled(batch: &SparseBatch, seed: u64) -> SparseBatch {
    reorder(batch, &shuffle_order(batch.n_rows(), seed))
}

/// The permutation `shuffled` applies to `n` rows.
pub fn shuffle_order(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    for i in (1..order.len()).rev() {
        // splitmix64 step
        state = state.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^= z >> 31;
        order.swap(i, (z % (i as u64 + 1)) as usize);
    }
    order
}

/// The rows of `batch` in the order `order` lists them.
pub fn reorder(batch: &SparseBatch, order: &[usize]) -> SparseBatch {
    let mut out = SparseBatch::with_cols(batch.n_cols()).unwrap();
    for &r in order {
        let (c, v) = batch.row(r);
        out.push_row(c, v).unwrap();
    }
    out
}

/// Rows and labels sorted by label, ties in their original order: the
/// CorgiPile paper's "clustered" dataset.
pub fn sort_by_label(rows: &SparseBatch, labels: &[f64]) -> (SparseBatch, Vec<f64>) {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|&a, &b| labels[a].total_cmp(&labels[b]));
    let sorted_labels = order.iter().map(|&i| labels[i]).collect();
    (reorder(rows, &order), sorted_labels)
}

/// Cuts `batch` into consecutive batches of `rows` rows (the last may be
/// shorter).
pub fn batches(batch: &SparseBatch, rows: usize) -> Vec<SparseBatch> {
    (0..batch.n_rows())
        .step_by(rows)
        .map(|s| batch.slice_rows(s..(s + rows).min(batch.n_rows())))
        .collect()
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

/// Writes the dense row-major little-endian `f64` bytes of `batch` (what
/// the general-purpose compressors of the paper's comparison compress).
pub fn dense_bytes(batch: &SparseBatch, out: &mut Vec<u8>) {
    let n = batch.n_cols();
    out.clear();
    out.resize(batch.n_rows() * n * 8, 0);
    for (i, (cols, vals)) in batch.rows().enumerate() {
        for (&c, &v) in cols.iter().zip(vals) {
            let at = (i * n + c as usize) * 8;
            out[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// gzip (level 6) of `input`, reusing `out`'s allocation.
pub fn gzip(input: &[u8], mut out: Vec<u8>) -> Vec<u8> {
    use std::io::Write;
    out.clear();
    let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::new(6));
    enc.write_all(input).unwrap();
    enc.finish().unwrap()
}

/// Inflates gzip `input`, reusing `out`'s allocation.
pub fn gunzip(input: &[u8], mut out: Vec<u8>) -> Vec<u8> {
    use std::io::Write;
    out.clear();
    let mut dec = flate2::write::GzDecoder::new(out);
    dec.write_all(input).unwrap();
    dec.finish().unwrap()
}

/// The first `rows`-row batches of `all` worth timing: at most
/// `max_batches`, at most about `dense_budget` dense bytes (at least two),
/// with the dense little-endian bytes of each. Shared by the codec bench
/// and the ratio example so both time the same input.
pub fn timed_batches(
    all: &SparseBatch,
    rows: usize,
    dense_budget: usize,
    max_batches: usize,
) -> (Vec<SparseBatch>, Vec<Vec<u8>>) {
    let batch_dense = (rows * all.n_cols() * 8).max(1);
    let take = (dense_budget / batch_dense).clamp(2, max_batches);
    let batches: Vec<SparseBatch> = batches(all, rows).into_iter().take(take).collect();
    let dense = batches
        .iter()
        .map(|b| {
            let mut d = Vec::new();
            dense_bytes(b, &mut d);
            d
        })
        .collect();
    (batches, dense)
}

/// Bytes of `batch` as CVI with bit packing, in the TOC blob format: a
/// flat batch of plain packed columns and value ids (each at the fewest
/// bits holding its largest value) and an `f64` dictionary; the bound
/// `Level::Full` never exceeds.
pub fn cvi_bit_packed_len(batch: &SparseBatch) -> u64 {
    let varint = |v: u64| ((64 - v.leading_zeros() as u64).max(1)).div_ceil(7);
    let bits = |max: u64| (64 - max.leading_zeros()) as u64;
    let packed = |count: u64, width: u64| varint(count) + 1 + (count * width).div_ceil(8);
    let mut distinct: Vec<u64> = batch.values().iter().map(|v| v.to_bits()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let n = batch.nnz() as u64;
    let max_len = batch
        .offsets()
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(0);
    let max_col = batch.cols().iter().copied().max().unwrap_or(0) as u64;
    let d = distinct.len() as u64;
    let nz = |w: u64| if n == 0 { 0 } else { w };
    6 + varint(batch.n_cols() as u64)
        + packed(batch.n_rows() as u64, bits(max_len as u64).max(1))
        + packed(n, nz(bits(max_col).max(1)))
        + packed(n, nz(bits(d.saturating_sub(1))))
        + 1
        + varint(d)
        + 8 * d
}

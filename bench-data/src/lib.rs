//! What tocpile's measurements share, outside the library (which needs
//! none of it): the datasets of `../shared/data` (the three smallest also
//! in `data/`) loaded by name
//! through the library's LIBSVM reader, shuffled with its seeded generator
//! ([`tocpile::rng::Rng`], as the command line's `--shuffle`) and cut into
//! batches; the dense bytes, gzip and CVI-with-bit-packing sizes the codec
//! is compared with; a thread CPU clock and a median. Used by the examples,
//! the criterion benches, the tests (`tests/support` re-exports it) and
//! `tocpile bench codec`, so that each piece exists once.
//!
//! The tests keep their own LIBSVM reader in `tests/support`, independent
//! of the library's, because they test the library's reader against it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::rng::Rng;
use tocpile::SparseBatch;

mod loan;
pub use loan::{loan_like, LOAN_COLS};

/// Rows of the generated loan-like set that [`load`] gives by the name
/// `loan_like` (the "10k x 119" set), with seed [`LOAN_SEED`].
pub const LOAN_ROWS: usize = 10_000;
/// The seed of the loan-like set that [`load`] gives.
pub const LOAN_SEED: u64 = 2018;

/// Names of the shared datasets, smallest first.
pub const DATASETS: &[&str] = &[
    "mushrooms",
    "coil2000",
    "mnist5k",
    "census_fertility",
    "nycflights13",
    "flights3m",
];

/// The datasets that ship in the repository's `data/` (about 1 MB,
/// provenance in `data/README.md`): tests on them run in any clone.
pub const BUILTIN_DATASETS: &[&str] = &["mushrooms", "coil2000", "census_fertility"];

/// The reason given by tests that need a dataset only `../shared/data`
/// has (they are `#[ignore]`d; CI runs them with `--include-ignored` when
/// `../shared` is present).
pub const NEEDS_SHARED: &str = "needs ../shared/data (mnist5k, nycflights13, flights3m)";

/// Whether `name` (a base name, or one ending in `_cents`) is one of the
/// [`BUILTIN_DATASETS`].
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_DATASETS.contains(&name.strip_suffix("_cents").unwrap_or(name))
}

/// The [`DATASETS`] whose file is present: every one with `../shared`
/// beside the checkout, the [`BUILTIN_DATASETS`] in a clone alone (the
/// others named on stderr). For the benches, which measure what there is.
pub fn available_datasets() -> Vec<&'static str> {
    let (present, missing): (Vec<&str>, Vec<&str>) = DATASETS
        .iter()
        .partition(|name| dataset_path(name).exists());
    if !missing.is_empty() {
        eprintln!(
            "not measured (no ../shared/data beside the checkout): {}",
            missing.join(", ")
        );
    }
    present
}

/// The mixed one-hot and decimal sets built from the shared datasets: the
/// dataset's numeric columns (any value other than 1) divided by 100, as
/// `tocpile ratio --decimals 2` does. Load them by these names.
pub const DECIMAL_DATASETS: &[&str] = &[
    "coil2000_cents",
    "census_fertility_cents",
    "nycflights13_cents",
    "flights3m_cents",
];

/// The environment variable that names another directory for
/// [`shared_data_dir`]: CI runs `cargo test --release` with it naming a
/// directory that does not exist, as a clone without `../shared` sees
/// it.
pub const SHARED_DATA_ENV: &str = "TOCPILE_SHARED_DATA";

/// The one place the tests, benches and examples find the shared
/// datasets: `../shared/data` beside the checkout, or the directory
/// [`SHARED_DATA_ENV`] names. (CI checks that no test names
/// `../shared` itself, so that a clone alone passes `cargo test`.)
pub fn shared_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(SHARED_DATA_ENV) {
        return PathBuf::from(dir);
    }
    // This crate lives in `bench-data/` of the repository.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data")
}

/// Path of a dataset file: in [`shared_data_dir`], or the copy in
/// `data/` of the [`BUILTIN_DATASETS`] (the same bytes).
pub fn dataset_path(name: &str) -> PathBuf {
    // This crate lives in `bench-data/` of the repository.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = shared_data_dir().join(format!("{name}.libsvm.gz"));
    let builtin = root.join("data").join(format!("{name}.libsvm.gz"));
    if !shared.exists() && builtin.exists() {
        return builtin;
    }
    shared
}

/// The column count documented for a dataset (mnist5k's last pixels are
/// all zero, so it cannot be inferred from the data).
///
/// # Panics
/// For a name not in [`DATASETS`].
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

/// Reads at most `max_rows` rows of a dataset with the library's reader:
/// the features as one batch and the labels. A name ending in `_cents` is
/// the dataset with its numeric columns divided by 100; `loan_like` is
/// the generated set of [`loan_like`] ([`LOAN_ROWS`] rows at most).
///
/// # Panics
/// If the file is missing or malformed (examples and benches run on the
/// shared data; the message names the file).
pub fn load(name: &str, max_rows: usize) -> (SparseBatch, Vec<f64>) {
    if name == "loan_like" {
        return loan_like(max_rows.min(LOAN_ROWS), LOAN_SEED);
    }
    if let Some(base) = name.strip_suffix("_cents") {
        let (rows, labels) = load(base, max_rows);
        return (to_decimals(&rows, 2), labels);
    }
    let path = dataset_path(name);
    read(&path, dataset_cols(name), max_rows).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(path: &Path, n_cols: usize, max_rows: usize) -> tocpile::Result<(SparseBatch, Vec<f64>)> {
    let options = LibsvmOptions::default()
        .with_n_cols(Some(n_cols))
        .with_zero_based(false);
    let mut reader = LibsvmReader::open(path, options)?;
    let mut rows = SparseBatch::with_cols(reader.n_cols())?;
    let mut labels = Vec::new();
    while labels.len() < max_rows {
        let want = (max_rows - labels.len()).min(1 << 16);
        let Some(chunk) = reader.next_chunk(want)? else {
            break;
        };
        for (cols, vals) in chunk.batch.rows() {
            rows.push_row(cols, vals)?;
        }
        labels.extend_from_slice(&chunk.labels);
    }
    Ok((rows, labels))
}

/// Every value of the numeric columns of `batch` (those holding any value
/// other than 1) divided by `10^places` (correctly rounded).
pub fn to_decimals(batch: &SparseBatch, places: u32) -> SparseBatch {
    let divisor = 10f64.powi(places as i32);
    let mut numeric = vec![false; batch.n_cols()];
    for (&c, &v) in batch.cols().iter().zip(batch.values()) {
        numeric[c as usize] |= v != 1.0;
    }
    let mut out = SparseBatch::with_cols(batch.n_cols()).expect("columns of a batch");
    for (cols, row) in batch.rows() {
        let vals: Vec<f64> = cols
            .iter()
            .zip(row)
            .map(|(&c, &v)| if numeric[c as usize] { v / divisor } else { v })
            .collect();
        out.push_row(cols, &vals).expect("row of a batch");
    }
    out
}

/// The permutation [`shuffled`] applies to `n` rows: the library's seeded
/// Fisher-Yates, the same as `tocpile ... --shuffle SEED`.
pub fn shuffle_order(n: usize, seed: u64) -> Vec<usize> {
    Rng::new(seed).permutation(n)
}

/// Rows of `batch` permuted by a fixed-seed shuffle (the paper shuffles
/// once before cutting mini-batches).
pub fn shuffled(batch: &SparseBatch, seed: u64) -> SparseBatch {
    reorder(batch, &shuffle_order(batch.n_rows(), seed))
}

/// The rows of `batch` in the order `order` lists them.
pub fn reorder(batch: &SparseBatch, order: &[usize]) -> SparseBatch {
    let mut out = SparseBatch::with_cols(batch.n_cols()).expect("columns of a batch");
    for &r in order {
        let (c, v) = batch.row(r);
        out.push_row(c, v).expect("row of a batch");
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
        .step_by(rows.max(1))
        .map(|s| batch.slice_rows(s..(s + rows).min(batch.n_rows())))
        .collect()
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
    out.clear();
    let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::new(6));
    enc.write_all(input).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// Inflates gzip `input`, reusing `out`'s allocation.
///
/// # Panics
/// If `input` is not gzip.
pub fn gunzip(input: &[u8], mut out: Vec<u8>) -> Vec<u8> {
    out.clear();
    let mut dec = flate2::write::GzDecoder::new(out);
    dec.write_all(input).expect("gzip input");
    dec.finish().expect("gzip input")
}

/// The first `rows`-row batches of `all` worth timing: at most
/// `max_batches`, at most about `dense_budget` dense bytes (at least two),
/// with the dense little-endian bytes of each (the codec bench's input,
/// the same as `tocpile bench codec` times).
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
/// `Level::Full` never exceeds. (`tocpile bench codec`'s "CVI bits",
/// and the reference of the tests' never-larger-than-CVI proptest.)
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

/// Nanoseconds this thread has run (Linux: `/proc/thread-self/schedstat`),
/// which other processes on a busy machine do not inflate.
///
/// # Panics
/// Where that file does not exist (not Linux).
pub fn thread_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    s.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .expect("schedstat")
}

/// Median of a non-empty list (the upper one of an even count).
///
/// # Panics
/// If `xs` is empty.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_builtin_mushrooms_and_shuffles_like_the_command_line() {
        let (rows, labels) = load("mushrooms", 300);
        assert_eq!((rows.n_rows(), rows.n_cols(), labels.len()), (300, 98, 300));
        let order = shuffle_order(300, 42);
        let again = shuffled(&rows, 42);
        assert_eq!(again.row(0), rows.row(order[0]));
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..300).collect::<Vec<_>>());
        let cut = batches(&rows, 128);
        assert_eq!(
            cut.iter().map(|b| b.n_rows()).collect::<Vec<_>>(),
            [128, 128, 44]
        );
        let mut dense = Vec::new();
        dense_bytes(&cut[2], &mut dense);
        assert_eq!(gunzip(&gzip(&dense, Vec::new()), Vec::new()), dense);
    }
}

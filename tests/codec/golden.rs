//! Golden blobs of format versions 1 and 2, committed once and never
//! regenerated: whatever the encoder writes today, these bytes must keep
//! decoding to the same batches.

use crate::support::figure3;
use tocpile::{Level, SparseBatch, TocBatch};

/// Edge values and a huge column id, one row repeated to grow the tree.
pub fn edges() -> SparseBatch {
    let row_a: (&[u32], &[f64]) = (
        &[0, 7, 4096, u32::MAX],
        &[f64::NAN, f64::INFINITY, f64::from_bits(1), -3.0],
    );
    let row_b: (&[u32], &[f64]) = (&[0, 7, 9], &[f64::NAN, f64::INFINITY, 1e300]);
    let mut b = SparseBatch::with_cols(tocpile::MAX_COLS).unwrap();
    for r in [row_a, row_b, row_a, row_a, (&[][..], &[][..]), row_b] {
        b.push_row(r.0, r.1).unwrap();
    }
    b
}

pub fn integers() -> SparseBatch {
    let mut b = SparseBatch::with_cols(10).unwrap();
    for i in 0..20u32 {
        b.push_row(&[i % 3, 5, 9], &[1.0, -(i as f64) - 1.0, 1000.0])
            .unwrap();
    }
    b
}

/// File name, the level it was written at, and the batch it holds.
type Golden = (&'static str, Level, fn() -> SparseBatch);

const GOLDEN: &[Golden] = &[
    ("figure3_full_bits.toc", Level::Full, figure3),
    ("figure3_full_bytes.toc", Level::Full, figure3),
    ("figure3_logical.toc", Level::Logical, figure3),
    ("figure3_sparse.toc", Level::Sparse, figure3),
    ("edges_full_bits.toc", Level::Full, edges),
    ("integers_full_bits.toc", Level::Full, integers),
];

fn golden_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1")
}

#[test]
fn golden_v1_blobs_still_decode() {
    for &(file, level, batch) in GOLDEN {
        let bytes = std::fs::read(golden_dir().join(file)).unwrap();
        let toc = TocBatch::from_bytes(&bytes[..]).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(toc.level(), level, "{file}");
        assert!(toc.decode() == batch(), "{file}");
    }
}

/// Two-decimal prices and quarter values beside a one-hot column.
pub fn prices() -> SparseBatch {
    let mut b = SparseBatch::with_cols(6).unwrap();
    for i in 0..30u32 {
        let cents = 199 + (i * 37) % 500;
        let vals = [1.0, cents as f64 / 100.0, 0.25 * (i % 4 + 1) as f64];
        b.push_row(&[i % 3, 3, 5], &vals).unwrap();
    }
    b
}

/// Rows that share no sequences, with many distinct integer values.
pub fn pixels() -> SparseBatch {
    let mut b = SparseBatch::with_cols(64).unwrap();
    for r in 0..12u32 {
        let cols: Vec<u32> = (0..64).filter(|c| (c * 7 + r * 3) % 5 < 2).collect();
        let vals: Vec<f64> = cols
            .iter()
            .map(|c| ((c * 31 + r * 17) % 255 + 1) as f64)
            .collect();
        b.push_row(&cols, &vals).unwrap();
    }
    b
}

/// One-hot columns that repeat, and a numeric one.
pub fn onehot() -> SparseBatch {
    let mut b = SparseBatch::with_cols(300).unwrap();
    for r in 0..40u32 {
        let vals = [1.0, 1.0, 1.0, (r % 6 + 1) as f64 * 10.0];
        b.push_row(&[r % 2, 10 + r % 3, 100 + (r * 7) % 5, 299], &vals)
            .unwrap();
    }
    b
}

/// File name, whether it holds a prefix tree, and the batch.
type GoldenV2 = (&'static str, bool, fn() -> SparseBatch);

const GOLDEN_V2: &[GoldenV2] = &[
    ("prices_full.toc", false, prices),
    ("pixels_full.toc", false, pixels),
    ("onehot_full.toc", true, onehot),
];

#[test]
fn golden_v2_blobs_still_decode() {
    let dir = golden_dir().with_file_name("v2");
    for &(file, has_tree, batch) in GOLDEN_V2 {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let toc = TocBatch::from_bytes(&bytes[..]).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(toc.version(), 2, "{file}");
        assert_eq!(toc.level(), Level::Full, "{file}");
        assert_eq!(toc.has_tree(), has_tree, "{file}");
        assert!(toc.decode() == batch(), "{file}");
    }
}

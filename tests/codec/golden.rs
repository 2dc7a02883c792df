//! Golden blobs of format version 1, committed once and never regenerated:
//! whatever the encoder writes today, these bytes must keep decoding to
//! the same batches.

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

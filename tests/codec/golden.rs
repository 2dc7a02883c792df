//! Golden blobs of format versions 1 and 2, committed once and never
//! regenerated: whatever the encoder writes today, these bytes must keep
//! decoding to the same batches.
//!
//! `edges_full_bits.toc` stores a NaN and an infinity in its value
//! dictionary, which builds since issue 23 reject (values must be
//! finite): the test checks the rejection, then decodes the blob with
//! those two dictionary entries replaced by finite values, every other
//! byte as committed.

use crate::support::figure3;
use tocpile::{Level, SparseBatch, TocBatch};

/// What the test puts in place of the committed NaN and infinity.
const NAN_STANDIN: f64 = 2.0;
const INFINITY_STANDIN: f64 = 4.0;

/// Edge values and a huge column id, one row repeated to grow the tree
/// (with the stand-ins for the committed NaN and infinity).
pub fn edges() -> SparseBatch {
    let row_a: (&[u32], &[f64]) = (
        &[0, 7, 4096, u32::MAX],
        &[NAN_STANDIN, INFINITY_STANDIN, f64::from_bits(1), -3.0],
    );
    let row_b: (&[u32], &[f64]) = (&[0, 7, 9], &[NAN_STANDIN, INFINITY_STANDIN, 1e300]);
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

/// `bytes` with the 8 bytes of `from` (once, exactly) replaced by `to`.
fn replace_value(bytes: &mut [u8], from: f64, to: f64) {
    let pattern = from.to_le_bytes();
    let at: Vec<usize> = (0..bytes.len().saturating_sub(7))
        .filter(|&i| bytes[i..i + 8] == pattern)
        .collect();
    assert_eq!(at.len(), 1, "{from} stored once");
    bytes[at[0]..at[0] + 8].copy_from_slice(&to.to_le_bytes());
}

#[test]
fn golden_v1_blobs_still_decode() {
    for &(file, level, batch) in GOLDEN {
        let mut bytes = std::fs::read(golden_dir().join(file)).unwrap();
        if file == "edges_full_bits.toc" {
            let e = TocBatch::from_bytes(&bytes[..]).unwrap_err();
            assert!(
                e.to_string().starts_with("dictionary value 0 (at byte ")
                    && e.to_string()
                        .ends_with(") is NaN, expected a finite number"),
                "{e}"
            );
            replace_value(&mut bytes, f64::NAN, NAN_STANDIN);
            let e = TocBatch::from_bytes(&bytes[..]).unwrap_err();
            assert!(
                e.to_string().contains("is inf, expected a finite number"),
                "{e}"
            );
            replace_value(&mut bytes, f64::INFINITY, INFINITY_STANDIN);
        }
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

//! What `TocBatch::from_bytes` promises about damaged bytes: structure,
//! not integrity. A standalone batch carries no checksum, so a flipped bit
//! is either refused (the structure broke) or decodes without error, to
//! the original rows or to different ones; it never panics. The dataset
//! file's blocks carry a CRC-32 that catches such flips
//! (`tests/dataset/prefetch.rs`). The documentation of `from_bytes`
//! quotes the figures this test prints.

use tocpile::{decode_bytes, encode, SparseBatch};

use crate::support::{load, numbers, to_decimals};

/// (refused, decoded to the same rows, decoded to different rows) over
/// every single-bit flip of `bytes`.
fn flip_every_bit(bytes: &[u8], original: &SparseBatch) -> (usize, usize, usize) {
    let (mut refused, mut same, mut different) = (0, 0, 0);
    let mut damaged = bytes.to_vec();
    for bit in 0..bytes.len() * 8 {
        damaged[bit / 8] ^= 1 << (bit % 8);
        match decode_bytes(&damaged) {
            Err(_) => refused += 1,
            Ok(rows) if &rows == original => same += 1,
            Ok(_) => different += 1,
        }
        damaged[bit / 8] ^= 1 << (bit % 8);
    }
    (refused, same, different)
}

#[test]
fn a_standalone_batch_has_no_checksum() {
    // 50-row batches of the shipped sets at the default encoder options:
    // one-hot rows (a prefix tree) and numeric ones (flat rows, decimals).
    let (mushrooms, _) = load("mushrooms", 50);
    let (census, _) = load("census_fertility", 50);
    let cents = to_decimals(&census, 2);
    // Dense rows of distinct random values: the bytes are mostly values.
    let mut random = SparseBatch::with_cols(8).unwrap();
    let cols: Vec<u32> = (0..8).collect();
    for row in numbers(3, 50 * 8).chunks(8) {
        random.push_row(&cols, row).unwrap();
    }
    for (name, rows) in [
        ("mushrooms", mushrooms),
        ("census_fertility", census),
        ("census_fertility_cents", cents),
        ("random values (50 x 8)", random),
    ] {
        let bytes = encode(&rows).unwrap().as_bytes().to_vec();
        let (refused, same, different) = flip_every_bit(&bytes, &rows);
        let flips = bytes.len() * 8;
        eprintln!(
            "{name}: {} bytes, {flips} single-bit flips: {refused} refused, {same} decoded to \
             the same rows, {different} decoded to different rows without an error",
            bytes.len()
        );
        assert_eq!(refused + same + different, flips);
        // Structure checks catch some flips (magic, version, section
        // lengths, padding, codes naming no node) ...
        assert!(refused > 0, "{name}: no flip was refused");
        // ... but not all: integrity is not checked, as the documentation
        // of `from_bytes` says.
        assert!(
            different > 0,
            "{name}: every flip was caught; update the documentation of \
             TocBatch::from_bytes if the format gained an integrity check"
        );
    }
}

//! Format version 2 (`GAPS` flag, scaled dictionary): hand-built blobs
//! that decode, and one table test per rule they can break.

use super::errors::{err, Blob};
use tocpile::{Error, Level, TocBatch};

const INDEXED: u8 = 2;
const TREE_INDEXED: u8 = 3;
const GAPS: u8 = 4;

/// A flat version-2 batch of 8 columns: row 0 = (1, 1.25), (4, 2.5); row 1
/// = (7, 1.25). Columns as escape-coded gaps at width 2 (escape 3): row 0
/// gaps 1, 3 -> symbols 1 | 3 0; row 1 gap 7 -> 3 3 1. Values through a
/// scaled dictionary: exponent 2, integers 125 and 250 (gaps 0, 125).
fn flat(col_symbols: &[u32], ids: &[u32], exponent: u8, base: i64, deltas: &[u32]) -> Blob {
    Blob::versioned(2, INDEXED | GAPS, 8)
        .packed(&[2, 1], 2)
        .packed(col_symbols, 2)
        .packed(ids, 1)
        .byte(2)
        .byte(exponent)
        .varint(((base << 1) ^ (base >> 63)) as u64)
        .packed(deltas, 8)
}

const COL_SYMBOLS: &[u32] = &[1, 3, 0, 3, 3, 1];
const IDS: &[u32] = &[0, 1, 0];
const DELTAS: &[u32] = &[0, 125];

/// A tree version-2 batch: rows (0, 1) (2, 1) twice. First layer columns
/// 0, 2 as gaps 0, 2; one dictionary value (integer 1); codes 1 2 | 3.
fn tree(col_symbols: &[u32], col_width: u8) -> Blob {
    Blob::versioned(2, TREE_INDEXED | GAPS, 3)
        .packed(&[2, 1], 2)
        .packed(col_symbols, col_width)
        .packed(&[0, 0], 0)
        .byte(1)
        .varint(2)
        .packed(&[0], 1)
        .packed(&[1, 2, 3], 2)
}

#[test]
fn hand_built_version_2_blobs_decode() {
    let b = TocBatch::from_bytes(flat(COL_SYMBOLS, IDS, 2, 125, DELTAS).0).unwrap();
    assert_eq!(
        (b.version(), b.level(), b.has_tree()),
        (2, Level::Full, false)
    );
    let d = b.decode();
    assert_eq!(d.offsets(), &[0, 2, 3]);
    assert_eq!(d.cols(), &[1, 4, 7]);
    assert_eq!(d.values(), &[1.25, 2.5, 1.25]);

    let t = TocBatch::from_bytes(tree(&[0, 2], 2).0).unwrap();
    assert!(t.has_tree());
    let d = t.decode();
    assert_eq!(d.cols(), &[0, 2, 0, 2]);
    assert_eq!(d.values(), &[1.0; 4]);
}

#[test]
fn version_1_defines_neither_gaps_nor_scaled_dictionaries() {
    assert_eq!(
        err(&Blob::header(TREE_INDEXED | GAPS, 4).0),
        Error::UnknownFlags {
            offset: 5,
            flags: TREE_INDEXED | GAPS
        }
    );
    let b = Blob::header(TREE_INDEXED, 4)
        .packed(&[1], 1)
        .packed(&[0], 1)
        .packed(&[0], 0);
    let at = b.len();
    assert_eq!(
        err(&b.byte(2).0),
        Error::FieldOutOfRange {
            what: "dictionary kind",
            offset: at,
            value: 2,
            max: 1
        }
    );
    let b = Blob::versioned(2, TREE_INDEXED, 4)
        .packed(&[1], 1)
        .packed(&[0], 1)
        .packed(&[0], 0);
    let at = b.len();
    assert_eq!(
        err(&b.byte(3).0),
        Error::FieldOutOfRange {
            what: "dictionary kind",
            offset: at,
            value: 3,
            max: 2
        }
    );
}

#[test]
fn gaps_need_value_ids() {
    // The pair count of escape-coded columns comes from the value ids.
    for flags in [GAPS, TREE_INDEXED & !INDEXED | GAPS] {
        assert_eq!(
            err(&Blob::versioned(2, flags, 4).0),
            Error::UnknownFlags { offset: 5, flags }
        );
    }
}

#[test]
fn scaled_exponent_out_of_range() {
    let b = flat(COL_SYMBOLS, IDS, 23, 125, DELTAS);
    // magic 4, version, flags, n_cols, row lengths 3, columns 4, ids 3,
    // kind: the exponent follows.
    assert_eq!(
        err(&b.0),
        Error::FieldOutOfRange {
            what: "dictionary exponent",
            offset: 18,
            value: 23,
            max: 22
        }
    );
}

#[test]
fn scaled_dictionary_overflow_zero_and_unterminated_entry() {
    let deltas_at = flat(COL_SYMBOLS, IDS, 2, i64::MAX, DELTAS).len() - 2;
    assert_eq!(
        err(&flat(COL_SYMBOLS, IDS, 2, i64::MAX, DELTAS).0),
        Error::FieldOutOfRange {
            what: "dictionary base + deltas",
            offset: deltas_at,
            value: 125,
            max: 0
        }
    );
    // -125 + 125 = 0: the second entry is zero.
    assert_eq!(
        err(&flat(COL_SYMBOLS, IDS, 2, -125, DELTAS).0),
        Error::ZeroValue {
            what: "dictionary value",
            index: 1
        }
    );
    // 255 is the escape at width 8: the last entry never ends.
    let b = flat(COL_SYMBOLS, IDS, 2, 125, &[0, 125, 255]);
    assert_eq!(
        err(&b.0),
        Error::UnterminatedEscape {
            what: "dictionary deltas (escape-coded)",
            offset: b.len() - 3
        }
    );
}

#[test]
fn gap_coded_columns_are_checked() {
    // Row 1's gap 7 + 1 = 8 is past the last column.
    assert_eq!(
        err(&flat(&[1, 3, 0, 3, 3, 2], IDS, 2, 125, DELTAS).0),
        Error::PairColumnOutOfRange {
            index: 2,
            col: 8,
            n_cols: 8
        }
    );
    // The last column never ends: escapes without a final symbol.
    assert_eq!(
        err(&flat(&[1, 3, 0, 3, 3, 3], IDS, 2, 125, DELTAS).0),
        Error::UnterminatedEscape {
            what: "pair columns (escape-coded gaps)",
            offset: 12
        }
    );
    // One column too few for the three value ids.
    assert_eq!(
        err(&flat(&[1, 3, 0, 2, 0], IDS, 2, 125, DELTAS).0),
        Error::LengthMismatch {
            what: "pair columns (escape-coded gaps)",
            expected: 3,
            found: 4
        }
    );
    // More value ids than column symbols.
    assert_eq!(
        err(&flat(&[1, 3], &[0, 1, 0], 2, 125, DELTAS).0),
        Error::LengthMismatch {
            what: "value ids (at most one per column symbol)",
            expected: 2,
            found: 3
        }
    );
    // A gap of 0 inside a row of a flat batch repeats a column.
    assert_eq!(
        err(&flat(&[1, 0, 3, 3, 1], IDS, 2, 125, DELTAS).0),
        Error::ColumnsNotAscending {
            row: 0,
            position: 1,
            prev: 1,
            col: 1
        }
    );
    // A tree's first layer: three columns for two value ids; then
    // 1 + 2 = 3, past the 3 columns.
    assert_eq!(
        err(&tree(&[0, 2, 1], 2).0),
        Error::LengthMismatch {
            what: "pair columns (escape-coded gaps)",
            expected: 2,
            found: 3
        }
    );
    assert_eq!(
        err(&tree(&[1, 2], 2).0),
        Error::PairColumnOutOfRange {
            index: 1,
            col: 3,
            n_cols: 3
        }
    );
}

#[test]
fn every_truncation_of_a_version_2_blob_is_an_error() {
    for blob in [flat(COL_SYMBOLS, IDS, 2, 125, DELTAS).0, tree(&[0, 2], 2).0] {
        for len in 0..blob.len() {
            assert!(TocBatch::from_bytes(&blob[..len]).is_err(), "prefix {len}");
        }
    }
}

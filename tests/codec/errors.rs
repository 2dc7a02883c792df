//! One table test per decode error: hand-built blobs, each breaking one
//! rule, and the exact error `TocBatch::from_bytes` must return.

use tocpile::{Error, TocBatch};

/// Writes blobs field by field, mirroring docs/FORMAT.md.
#[derive(Clone)]
pub struct Blob(pub Vec<u8>);

impl Blob {
    pub fn header(flags: u8, n_cols: u64) -> Blob {
        Blob::versioned(1, flags, n_cols)
    }
    pub fn versioned(version: u8, flags: u8, n_cols: u64) -> Blob {
        Blob(b"TOCB".to_vec())
            .byte(version)
            .byte(flags)
            .varint(n_cols)
    }
    pub fn byte(mut self, b: u8) -> Self {
        self.0.push(b);
        self
    }
    pub fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }
    pub fn varint(mut self, mut v: u64) -> Self {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }
    /// A compact page's first byte (dataset file version 4).
    pub fn compact() -> Blob {
        Blob(vec![1])
    }
    pub fn packed(self, vals: &[u32], width: u8) -> Self {
        self.varint(vals.len() as u64).payload(vals, width)
    }
    /// A packed array without its count (a compact page's).
    pub fn payload(self, vals: &[u32], width: u8) -> Self {
        let mut s = self.byte(width);
        let (mut acc, mut n) = (0u64, 0u32);
        for &v in vals {
            acc |= (v as u64) << n;
            n += width as u32;
            while n >= 8 {
                s.0.push(acc as u8);
                acc >>= 8;
                n -= 8;
            }
        }
        if n > 0 {
            s.0.push(acc as u8);
        }
        s
    }
    pub fn f64s(mut self, vals: &[f64]) -> Self {
        for v in vals {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
        self
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

pub fn err(blob: &[u8]) -> Error {
    TocBatch::from_bytes(blob).expect_err("blob must be rejected")
}

const TREE_INDEXED: u8 = 3;

/// The paper's Figure 3 with every section written out; `codes` and
/// `dict` replaceable to break one rule at a time.
fn figure3(lengths: &[u32], cols: &[u32], ids: &[u32], dict: &[f64], codes: &[u32]) -> Blob {
    Blob::header(TREE_INDEXED, 4)
        .packed(lengths, 3)
        .packed(cols, 3)
        .packed(ids, 3)
        .byte(0)
        .varint(dict.len() as u64)
        .f64s(dict)
        .packed(codes, 4)
}

const LENS: &[u32] = &[4, 2, 2, 1];
const COLS: &[u32] = &[0, 1, 2, 3, 1];
const IDS: &[u32] = &[0, 1, 2, 3, 0];
const DICT: &[f64] = &[1.1, 2.0, 3.0, 1.4];
const CODES: &[u32] = &[1, 2, 3, 4, 6, 3, 5, 8, 6];

#[test]
fn the_hand_built_blob_is_valid() {
    let b = figure3(LENS, COLS, IDS, DICT, CODES);
    let toc = TocBatch::from_bytes(&b.0[..]).unwrap();
    assert_eq!(toc.decoded_nnz(), 12);
    assert_eq!(toc.decode().n_rows(), 4);
}

#[test]
fn bad_magic() {
    let bad = |found: &[u8]| Error::BadMagic {
        expected: *b"TOCB",
        found: found.to_vec(),
    };
    assert_eq!(err(b""), bad(b""));
    assert_eq!(err(b"TO"), bad(b"TO"));
    assert_eq!(err(b"TOCX\x01\x00"), bad(b"TOCX"));
}

#[test]
fn unsupported_version() {
    assert_eq!(
        err(b"TOCB\x04\x00\x04"),
        Error::UnsupportedVersion {
            what: "TOC batch format",
            found: 4,
            supported: 3
        }
    );
}

#[test]
fn unknown_flags() {
    assert_eq!(
        err(&Blob::header(4, 1).0),
        Error::UnknownFlags {
            offset: 5,
            flags: 4
        }
    );
}

#[test]
fn truncated() {
    assert_eq!(
        err(b"TOCB\x01"),
        Error::Truncated {
            what: "flags",
            offset: 5,
            needed: 1,
            available: 0
        }
    );
    let full = figure3(LENS, COLS, IDS, DICT, CODES).0;
    // Cut inside the codes payload: 9 codes of 4 bits need 5 bytes.
    let cut = &full[..full.len() - 2];
    assert_eq!(
        err(cut),
        Error::Truncated {
            what: "codes",
            offset: full.len() - 5,
            needed: 5,
            available: 3
        }
    );
    // A count that promises far more than the input holds is refused before
    // any allocation.
    let huge = Blob::header(0, 4).varint(u32::MAX as u64).byte(32);
    assert_eq!(
        err(&huge.0),
        Error::Truncated {
            what: "row lengths",
            offset: huge.len(),
            needed: 4 * u32::MAX as u64,
            available: 0
        }
    );
}

#[test]
fn bad_varint() {
    assert_eq!(
        err(&Blob::header(0, 0).0[..6]
            .iter()
            .copied()
            .chain([0x80, 0x00])
            .collect::<Vec<_>>()),
        Error::BadVarint {
            what: "n_cols",
            offset: 6
        }
    );
}

#[test]
fn field_out_of_range() {
    assert_eq!(
        err(&Blob::header(0, (1 << 32) + 1).0),
        Error::FieldOutOfRange {
            what: "n_cols",
            offset: 6,
            value: (1 << 32) + 1,
            max: 1 << 32
        }
    );
    let b = Blob::header(0, 4);
    let at = b.len();
    assert_eq!(
        err(&b.varint(1 << 32).0),
        Error::FieldOutOfRange {
            what: "row lengths",
            offset: at,
            value: 1 << 32,
            max: u32::MAX as u64
        }
    );
    let b = Blob::header(TREE_INDEXED, 4)
        .packed(&[1], 1)
        .packed(&[0], 1)
        .packed(&[0], 0);
    let at = b.len();
    assert_eq!(
        err(&b.byte(7).0),
        Error::FieldOutOfRange {
            what: "dictionary kind",
            offset: at,
            value: 7,
            max: 1
        }
    );
}

#[test]
fn int_dictionary_overflow_and_zero() {
    let with_dict = |base: u64, offset: u32| {
        Blob::header(TREE_INDEXED, 4)
            .packed(&[1], 1)
            .packed(&[0], 1)
            .packed(&[0], 0)
            .byte(1)
            .varint(base)
            .packed(&[offset], 8)
            .packed(&[1], 1)
    };
    // zigzag(i64::MAX) = u64::MAX - 1; adding 1 overflows.
    let b = with_dict(u64::MAX - 1, 1);
    let offsets_at = b.len() - 3 - 1;
    assert_eq!(
        err(&b.0),
        Error::FieldOutOfRange {
            what: "dictionary base + offset",
            offset: offsets_at,
            value: 1,
            max: 0
        }
    );
    // zigzag(-1) = 1; -1 + 1 = 0.
    assert_eq!(
        err(&with_dict(1, 1).0),
        Error::ZeroValue {
            what: "dictionary value",
            index: 0
        }
    );
    // zigzag(-1) = 1; -1 + 3 = 2 is fine.
    let ok = TocBatch::from_bytes(with_dict(1, 3).0).unwrap();
    assert_eq!(ok.decode().values(), &[2.0]);
}

#[test]
fn bad_width() {
    let b = Blob::header(0, 4).varint(1);
    let at = b.len();
    assert_eq!(
        err(&b.clone().byte(33).0),
        Error::BadWidth {
            what: "row lengths",
            offset: at,
            width: 33
        }
    );
    // Width 0 with a non-zero count would let a few bytes claim any number
    // of rows.
    assert_eq!(
        err(&b.byte(0).0),
        Error::BadWidth {
            what: "row lengths",
            offset: at,
            width: 0
        }
    );
}

#[test]
fn non_zero_padding() {
    let mut b = figure3(LENS, COLS, IDS, DICT, CODES).0;
    // 9 codes of 4 bits: the high nibble of the last byte is padding.
    let last = b.len() - 1;
    b[last] |= 0x10;
    assert_eq!(
        err(&b),
        Error::NonZeroPadding {
            what: "codes",
            offset: last
        }
    );
}

#[test]
fn length_mismatch() {
    assert_eq!(
        err(&figure3(LENS, COLS, &IDS[..4], DICT, CODES).0),
        Error::LengthMismatch {
            what: "value ids (one per pair)",
            expected: 5,
            found: 4
        }
    );
    assert_eq!(
        err(&figure3(&[4, 2, 2, 2], COLS, IDS, DICT, CODES).0),
        Error::LengthMismatch {
            what: "sum of row lengths (number of codes)",
            expected: 9,
            found: 10
        }
    );
}

#[test]
fn trailing_bytes() {
    let b = figure3(LENS, COLS, IDS, DICT, CODES);
    let at = b.len();
    assert_eq!(
        err(&b.raw(&[0, 0]).0),
        Error::TrailingBytes {
            what: "the batch's last section (its codes, or pairs of a flat batch)",
            offset: at,
            len: 2
        }
    );
}

#[test]
fn code_out_of_range() {
    assert_eq!(
        err(&figure3(LENS, COLS, IDS, DICT, &[1, 2, 3, 4, 0, 3, 5, 8, 6]).0),
        Error::CodeOutOfRange {
            row: 1,
            position: 0,
            code: 0,
            limit: 9
        }
    );
    // Node 6 is created inside row 0, so row 0 cannot use it.
    assert_eq!(
        err(&figure3(LENS, COLS, IDS, DICT, &[1, 2, 3, 6, 6, 3, 5, 8, 6]).0),
        Error::CodeOutOfRange {
            row: 0,
            position: 3,
            code: 6,
            limit: 6
        }
    );
}

#[test]
fn pair_column_out_of_range() {
    assert_eq!(
        err(&figure3(LENS, &[0, 1, 2, 4, 1], IDS, DICT, CODES).0),
        Error::PairColumnOutOfRange {
            index: 3,
            col: 4,
            n_cols: 4
        }
    );
}

#[test]
fn value_id_out_of_range() {
    assert_eq!(
        err(&figure3(LENS, COLS, &[0, 1, 2, 3, 4], DICT, CODES).0),
        Error::ValueIdOutOfRange {
            position: 4,
            id: 4,
            dict_len: 4
        }
    );
}

#[test]
fn zero_value() {
    assert_eq!(
        err(&figure3(LENS, COLS, IDS, &[1.1, 2.0, -0.0, 1.4], CODES).0),
        Error::ZeroValue {
            what: "dictionary value",
            index: 2
        }
    );
    let flat = Blob::header(0, 4)
        .packed(&[2], 2)
        .packed(&[0, 1], 1)
        .f64s(&[1.0, 0.0]);
    assert_eq!(
        err(&flat.0),
        Error::ZeroValue {
            what: "inline value",
            index: 1
        }
    );
}

#[test]
fn columns_not_ascending() {
    // Row 0 = code 2 (column 1) then code 1 (column 0).
    assert_eq!(
        err(&figure3(LENS, COLS, IDS, DICT, &[2, 1, 3, 4, 6, 3, 5, 8, 6]).0),
        Error::ColumnsNotAscending {
            row: 0,
            position: 1,
            prev: 1,
            col: 0
        }
    );
    // Row 1 = node 6 ([0, 1]) then code 5 (column 1 again).
    assert_eq!(
        err(&figure3(LENS, COLS, IDS, DICT, &[1, 2, 3, 4, 6, 5, 5, 8, 6]).0),
        Error::ColumnsNotAscending {
            row: 1,
            position: 1,
            prev: 1,
            col: 1
        }
    );
    let flat = Blob::header(0, 4)
        .packed(&[1, 2], 2)
        .packed(&[3, 2, 2], 2)
        .f64s(&[1.0, 1.0, 1.0]);
    assert_eq!(
        err(&flat.0),
        Error::ColumnsNotAscending {
            row: 1,
            position: 1,
            prev: 2,
            col: 2
        }
    );
}

#[test]
fn every_truncation_of_a_valid_blob_is_an_error() {
    let full = figure3(LENS, COLS, IDS, DICT, CODES).0;
    for len in 0..full.len() {
        assert!(TocBatch::from_bytes(&full[..len]).is_err(), "prefix {len}");
    }
}

#[test]
fn errors_display_where() {
    let msg = err(&figure3(LENS, COLS, IDS, DICT, &[1, 2, 3, 4, 0, 3, 5, 8, 6]).0).to_string();
    assert_eq!(msg, "row 1, code 0: node 0 out of range (must be 1..9)");
}

#[test]
fn a_rejected_blob_leaves_no_stale_tree() {
    let good = tocpile::encode(&crate::support::figure3()).unwrap();
    let mut tree = tocpile::DecodeTree::default();
    TocBatch::from_bytes_with_tree(good.as_bytes(), &mut tree).unwrap();
    assert_eq!(tree.n_rows(), 4);
    // A structural error (bad magic) and a content error (code out of range)
    // both reset the tree.
    for bad in [
        &b"XXXX"[..],
        &figure3(LENS, COLS, IDS, DICT, &[1, 2, 3, 4, 0, 3, 5, 8, 6]).0,
    ] {
        TocBatch::from_bytes_with_tree(good.as_bytes(), &mut tree).unwrap();
        assert!(TocBatch::from_bytes_with_tree(bad, &mut tree).is_err());
        assert_eq!(
            (tree.n_rows(), tree.n_nodes(), tree.decoded_nnz()),
            (0, 0, 0)
        );
    }
}

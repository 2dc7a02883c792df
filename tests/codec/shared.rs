//! Version-3 pages, coded against a segment's shared dictionary: round
//! trips of real data, one forged page per rule it can break, forged
//! dictionaries, and every byte flip of a page read without a panic.

use std::sync::Arc;

use super::errors::Blob;
use crate::support::load;
use tocpile::{DecodeTree, EncodeOptions, Encoder, Error, SharedDict, SparseBatch, TocBatch};

const TREE_SHARED: u8 = 9;

/// A forged input, named, and what its error must match.
type Case = (&'static str, Vec<u8>, fn(&Error) -> bool);

/// Learns a segment of `rows` and encodes its pages of `page` rows
/// against it.
fn segment(rows: &SparseBatch, page: usize) -> (Arc<SharedDict>, Vec<TocBatch>) {
    let mut encoder = Encoder::new(EncodeOptions::default());
    let model = encoder.learn_segment(rows).unwrap().unwrap();
    let pages = (0..rows.n_rows())
        .step_by(page)
        .map(|s| {
            let batch = rows.slice_rows(s..(s + page).min(rows.n_rows()));
            encoder.encode_shared(&batch, &model).unwrap()
        })
        .collect();
    (Arc::clone(model.dict()), pages)
}

#[test]
fn real_pages_round_trip_through_their_dictionary() {
    pages_round_trip_through_their_dictionary(&[
        ("mushrooms", 3000),
        ("census_fertility", 3000),
        ("coil2000", 3000),
    ]);
}

#[test]
#[ignore = "needs ../shared/data (flights3m, mnist5k)"]
fn shared_only_pages_round_trip_through_their_dictionary() {
    pages_round_trip_through_their_dictionary(&[("flights3m", 3000), ("mnist5k", 300)]);
}

fn pages_round_trip_through_their_dictionary(sets: &[(&str, usize)]) {
    for &(name, rows) in sets {
        let (all, _) = load(name, rows);
        let (dict, pages) = segment(&all, 50);
        assert!(dict.n_nodes() > dict.n_pairs(), "{name}: shared nodes");
        let mut tree = DecodeTree::default();
        for (k, page) in pages.iter().enumerate() {
            let want = all.slice_rows(50 * k..(50 * k + 50).min(all.n_rows()));
            assert_eq!(page.version(), 3);
            let bytes = page.as_bytes();
            let read = TocBatch::from_bytes_shared(bytes, want.n_rows(), &dict, &mut tree).unwrap();
            assert!(read.decode() == want, "{name}: page {k}");
            assert_eq!(read.decoded_nnz(), want.nnz() as u64);
            // The compact tree holds no more nodes than the page's codes
            // and their ancestors: never the whole dictionary.
            assert!(tree.n_nodes() <= 1 + want.nnz() + read.n_codes());
            let mut out = SparseBatch::default();
            tree.decode_into(&mut out);
            assert!(out == want, "{name}: page {k}, tree");
            // Without its dictionary a version-3 page is refused.
            assert!(matches!(
                TocBatch::from_bytes(bytes),
                Err(Error::WrongFormat { .. })
            ));
        }
    }
}

/// Three columns; rows (0,1) (1,1) (2,1) repeated, so the dictionary
/// shares the nodes of the whole row.
fn small_dict() -> Arc<SharedDict> {
    small_dict_in(false)
}

/// [`small_dict`] for version-3 pages, or (`compact`) for compact pages.
pub(super) fn small_dict_in(compact: bool) -> Arc<SharedDict> {
    let mut rows = SparseBatch::with_cols(3).unwrap();
    for _ in 0..10 {
        rows.push_row(&[0, 1, 2], &[1.0, 1.0, 1.0]).unwrap();
    }
    rows.push_row(&[0, 2], &[2.0, 1.0]).unwrap();
    let mut encoder = Encoder::new(EncodeOptions::default());
    let model = encoder.learn_segment_in(&rows, compact).unwrap().unwrap();
    Arc::clone(model.dict())
}

fn page(n_cols: u64, lengths: &[u32], codes: &[u32]) -> Vec<u8> {
    Blob::versioned(3, TREE_SHARED, n_cols)
        .packed(lengths, 4)
        .packed(codes, 6)
        .0
}

fn read(dict: &Arc<SharedDict>, blob: &[u8]) -> Result<SparseBatch, Error> {
    // A version-3 page holds its row count: the header's (0) is not read.
    TocBatch::from_bytes_shared(blob, 0, dict, &mut DecodeTree::default()).map(|b| b.decode())
}

#[test]
fn forged_pages_break_one_rule_each() {
    let dict = small_dict();
    // Pairs: 1 = (0, 1), 2 = (0, 2), 3 = (1, 1), 4 = (2, 1) (sorted by
    // column), then shared nodes.
    assert_eq!(dict.n_pairs(), 4);
    let s = dict.n_nodes() as u32;
    assert!(s > 5, "shared nodes");
    // A valid page: (0,1) (1,1) | (0,2) (2,1); its own node s+0 is
    // (0,1)(1,1), used by a later row.
    let ok = page(3, &[2, 2, 2], &[1, 3, 2, 4, s, 4]);
    let rows = read(&dict, &ok).unwrap();
    assert_eq!(rows.offsets(), [0, 2, 4, 7]);
    assert_eq!(rows.cols(), [0, 1, 0, 2, 0, 1, 2]);
    assert_eq!(rows.values()[2], 2.0);

    let cases: Vec<Case> = vec![
        ("code 0", page(3, &[2], &[0, 3]), |e| {
            matches!(e, Error::CodeOutOfRange { code: 0, .. })
        }),
        ("a node of the same row", page(3, &[3], &[1, 3, s]), |e| {
            matches!(e, Error::CodeOutOfRange { .. })
        }),
        ("past every node", page(3, &[1], &[s + 5]), |e| {
            matches!(e, Error::CodeOutOfRange { .. })
        }),
        ("columns not ascending", page(3, &[2], &[3, 1]), |e| {
            matches!(e, Error::ColumnsNotAscending { .. })
        }),
        ("a pair's column twice", page(3, &[2], &[1, 2]), |e| {
            matches!(e, Error::ColumnsNotAscending { .. })
        }),
        ("columns not the dictionary's", page(4, &[1], &[1]), |e| {
            matches!(e, Error::LengthMismatch { .. })
        }),
        ("row lengths past the codes", page(3, &[3], &[1, 3]), |e| {
            matches!(e, Error::LengthMismatch { .. })
        }),
        (
            "another flag",
            Blob::versioned(3, TREE_SHARED | 2, 3)
                .packed(&[1], 4)
                .packed(&[1], 6)
                .0,
            |e| matches!(e, Error::UnknownFlags { .. }),
        ),
        (
            "shared flag in version 2",
            Blob::versioned(2, TREE_SHARED, 3)
                .packed(&[1], 4)
                .packed(&[1], 6)
                .0,
            |e| matches!(e, Error::UnknownFlags { .. }),
        ),
        ("version 4", Blob::versioned(4, TREE_SHARED, 3).0, |e| {
            matches!(e, Error::UnsupportedVersion { found: 4, .. })
        }),
        (
            "trailing byte",
            {
                let mut b = page(3, &[1], &[1]);
                b.push(0);
                b
            },
            |e| matches!(e, Error::TrailingBytes { .. }),
        ),
        (
            "cut short",
            {
                let b = page(3, &[1], &[1]);
                b[..b.len() - 1].to_vec()
            },
            |e| matches!(e, Error::Truncated { .. }),
        ),
    ];
    for (name, blob, expected) in cases {
        let e = read(&dict, &blob).expect_err(name);
        assert!(expected(&e), "{name}: {e:?}");
    }
}

/// The pairs of a forged dictionary: columns 0, 1, 2 (ids 1, 2, 3), all
/// of value 1, as a tree batch of no rows.
fn pairs() -> Vec<u8> {
    Blob::versioned(1, 3, 3)
        .packed(&[], 0)
        .packed(&[0, 1, 2], 2)
        .packed(&[0, 0, 0], 0)
        .byte(1)
        .varint(2)
        .packed(&[0], 1)
        .packed(&[], 0)
        .0
}

/// A dictionary: `pairs`, then parent gaps (escape-coded at width 8) and
/// keys.
fn dict(pairs: &[u8], parent_gaps: &[u32], keys: &[u32]) -> Vec<u8> {
    Blob(Vec::new())
        .varint(pairs.len() as u64)
        .raw(pairs)
        .packed(parent_gaps, 8)
        .packed(keys, 3)
        .0
}

#[test]
fn forged_dictionaries_break_one_rule_each() {
    // Node 4 = (parent 1, key 2): columns 0, 1; node 5 = (4, key 3).
    let ok = SharedDict::from_bytes(dict(&pairs(), &[1, 3], &[2, 3])).unwrap();
    assert_eq!((ok.n_pairs(), ok.n_nodes()), (3, 6));
    let ok = Arc::new(ok);
    // A page of codes 5 | 4 3 decodes through the shared nodes.
    let rows = read(&ok, &page(3, &[1, 2], &[5, 4, 3])).unwrap();
    assert_eq!(rows.cols(), [0, 1, 2, 0, 1, 2]);

    let with_row = Blob::versioned(1, 3, 3)
        .packed(&[1], 1)
        .packed(&[0], 2)
        .packed(&[0], 0)
        .byte(1)
        .varint(2)
        .packed(&[0], 1)
        .packed(&[1], 1)
        .0;
    let flat = Blob::versioned(1, 2, 3)
        .packed(&[1], 1)
        .packed(&[0], 2)
        .packed(&[0], 0)
        .byte(1)
        .varint(2)
        .packed(&[0], 1)
        .0;
    assert!(TocBatch::from_bytes(&with_row[..]).is_ok());
    assert!(TocBatch::from_bytes(&flat[..]).is_ok());
    let mut trailing = dict(&pairs(), &[1, 3], &[2, 3]);
    trailing.push(0);
    let cases: Vec<Case> = vec![
        ("pairs with a row", dict(&with_row, &[1, 3], &[2, 3]), |e| {
            matches!(e, Error::WrongFormat { .. })
        }),
        ("flat pairs", dict(&flat, &[], &[]), |e| {
            matches!(e, Error::WrongFormat { .. })
        }),
        (
            "a version-3 page",
            dict(&page(3, &[1], &[1]), &[], &[]),
            |e| matches!(e, Error::WrongFormat { .. }),
        ),
        (
            "parent 0 (the root)",
            dict(&pairs(), &[0, 4], &[2, 3]),
            |e| matches!(e, Error::CodeOutOfRange { code: 0, .. }),
        ),
        (
            "parent not earlier",
            dict(&pairs(), &[1, 4], &[2, 3]),
            |e| matches!(e, Error::CodeOutOfRange { code: 5, .. }),
        ),
        ("key 0", dict(&pairs(), &[1, 3], &[0, 3]), |e| {
            matches!(e, Error::CodeOutOfRange { code: 0, .. })
        }),
        (
            "key past the pairs",
            dict(&pairs(), &[1, 3], &[2, 4]),
            |e| matches!(e, Error::CodeOutOfRange { code: 4, .. }),
        ),
        (
            "key not past its parent",
            dict(&pairs(), &[2, 2], &[1, 3]),
            |e| matches!(e, Error::ColumnsNotAscending { .. }),
        ),
        (
            "fewer keys than parents",
            dict(&pairs(), &[1, 3], &[2]),
            |e| matches!(e, Error::LengthMismatch { .. }),
        ),
        (
            "unterminated parent gap",
            dict(&pairs(), &[1, 255], &[2, 3]),
            |e| matches!(e, Error::UnterminatedEscape { .. }),
        ),
        ("trailing byte", trailing, |e| {
            matches!(e, Error::TrailingBytes { .. })
        }),
        ("pairs cut short", pairs()[..10].to_vec(), |e| {
            matches!(e, Error::Truncated { .. })
        }),
    ];
    for (name, bytes, expected) in cases {
        let e = SharedDict::from_bytes(bytes).expect_err(name);
        assert!(expected(&e), "{name}: {e:?}");
    }
}

/// Every single-bit flip of every real page reads as an error or as some
/// page, never a panic; a page that still reads decodes to its counted
/// non-zeros.
#[test]
fn every_bit_flip_of_a_page_is_an_error_or_a_page() {
    let (all, _) = load("mushrooms", 400);
    let (dict, pages) = segment(&all, 50);
    let mut tree = DecodeTree::default();
    for page in pages.iter().take(3) {
        let bytes = page.as_bytes();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.to_vec();
                b[i] ^= 1 << bit;
                if let Ok(read) = TocBatch::from_bytes_shared(&b[..], 50, &dict, &mut tree) {
                    assert_eq!(read.decode().nnz() as u64, read.decoded_nnz());
                }
            }
        }
    }
}

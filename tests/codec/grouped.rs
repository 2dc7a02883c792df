//! Grouped value dictionaries (`docs/FORMAT.md`, "Grouped dictionary"):
//! the pairs of a shared dictionary of a dataset file of version 8 may
//! store their values as groups of scaled integers, one exponent each,
//! then raw `f64`s. Round trips through the writer's dictionaries, and
//! one forged dictionary per rule.

use std::sync::Arc;

use super::errors::Blob;
use tocpile::{DecodeTree, EncodeOptions, Encoder, Error, SharedDict, SparseBatch, TocBatch};

/// Rows whose values mix counts, decimals of 2 and 7 digits, a 16-digit
/// one and values that are no decimal: one exponent for all of them
/// cannot be written (the 16-digit value past 2^53 at the counts'
/// magnitude), so a dictionary without groups is raw.
fn mixed_rows() -> SparseBatch {
    let mut rows = SparseBatch::with_cols(4).unwrap();
    for i in 0..400u32 {
        let count = 30_000.0 + (i * 7) as f64;
        let price = 10.0 + (i * 13 % 1000) as f64 / 100.0;
        let rate = 0.6208096 + i as f64 * 1e-7;
        let odd = if i % 50 == 0 {
            1.0 / 3.0
        } else if i % 77 == 0 {
            f64::from_bits(1)
        } else {
            -(i as f64) - 0.5
        };
        rows.push_row(&[0, 1, 2, 3], &[count, price, rate, odd])
            .unwrap();
    }
    rows
}

#[test]
fn a_dictionary_of_mixed_decimals_is_grouped_and_smaller() {
    let rows = mixed_rows();
    let mut encoder = Encoder::new(EncodeOptions::default());
    // For a version-8 file (compact pages): grouped.
    let model = encoder.learn_segment_in(&rows, true).unwrap().unwrap();
    let grouped = Arc::clone(model.dict());
    assert!(grouped.grouped_values());
    // Its pairs' ids are gap-coded within columns (flag 16): the pairs
    // batch's flags byte follows its length, magic and version.
    let pairs_len_bytes = 2;
    assert_eq!(grouped.as_bytes()[pairs_len_bytes + 5] & 16, 16);
    // Read again from its bytes, it is the same dictionary.
    let again = SharedDict::from_bytes(grouped.as_bytes().to_vec()).unwrap();
    assert!(again.grouped_values());
    assert_eq!(again.n_pairs(), grouped.n_pairs());
    // Pages coded against it decode to the rows, bit for bit.
    let mut tree = DecodeTree::default();
    for start in (0..400).step_by(50) {
        let page = rows.slice_rows(start..start + 50);
        let encoded = encoder.encode_shared(&page, &model).unwrap();
        let read = TocBatch::from_bytes_shared(encoded.as_bytes(), 50, &grouped, &mut tree)
            .unwrap()
            .decode();
        let bits = |b: &SparseBatch| b.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(read.cols(), page.cols());
        assert_eq!(bits(&read), bits(&page));
    }
    // For older files: never grouped, and larger.
    let model = encoder.learn_segment_in(&rows, false).unwrap().unwrap();
    assert!(!model.dict().grouped_values());
    assert!(
        grouped.as_bytes().len() * 2 < model.dict().as_bytes().len(),
        "{} against {}",
        grouped.as_bytes().len(),
        model.dict().as_bytes().len()
    );
}

/// The pairs of a forged dictionary: columns 0, 1, 2, value ids `ids`
/// into the grouped dictionary `grouped` (its bytes after the kind
/// byte), as a version-2 tree batch of no rows.
fn pairs(ids: &[u32], grouped: Blob) -> Vec<u8> {
    Blob::versioned(2, 3, 3)
        .packed(&[], 0)
        .packed(&[0, 1, 2], 2)
        .packed(ids, 3)
        .byte(3)
        .raw(&grouped.0)
        .packed(&[], 0)
        .0
}

/// The pairs of a forged dictionary with ID_GAPS: columns 0, 0, 1 (as
/// column gaps at width 2), value ids as the escaped symbols `id_gaps` at
/// width 3 (escape 7), into the grouped dictionary [`good_groups`].
fn id_gap_pairs(id_gaps: &[u32]) -> Vec<u8> {
    Blob::versioned(2, 3 | 4 | 16, 3)
        .packed(&[], 0)
        .packed(&[0, 0, 1], 2)
        .packed(id_gaps, 3)
        .byte(3)
        .raw(&good_groups().0)
        .packed(&[], 0)
        .0
}

/// A dictionary of `pairs` and no shared nodes.
fn dict(pairs: &[u8]) -> Vec<u8> {
    Blob(Vec::new())
        .varint(pairs.len() as u64)
        .raw(pairs)
        .packed(&[], 8)
        .packed(&[], 3)
        .0
}

/// Groups (exponent 0: 3 and 7; exponent 2: 1.25) and one raw value:
/// entries 3, 7, 1.25, 1e300.
fn good_groups() -> Blob {
    Blob(Vec::new())
        .byte(2)
        .byte(0)
        .varint(6) // zigzag(3)
        .packed(&[0, 4], 3)
        .byte(2)
        .varint(250) // zigzag(125)
        .packed(&[0], 1)
        .varint(1)
        .f64s(&[1e300])
}

fn read(bytes: Vec<u8>) -> Result<Vec<f64>, Error> {
    let dict = Arc::new(SharedDict::from_bytes(bytes)?);
    // One row of codes 1, 2, 3: the three pairs.
    let page = Blob::versioned(3, 9, 3)
        .packed(&[3], 2)
        .packed(&[1, 2, 3], 2)
        .0;
    let batch = TocBatch::from_bytes_shared(&page[..], 0, &dict, &mut DecodeTree::default())?;
    Ok(batch.decode().values().to_vec())
}

#[test]
fn forged_grouped_dictionaries_break_one_rule_each() {
    // Pairs 3, 1.25 and 1e300 (entries 0, 2 and 3).
    assert_eq!(
        read(dict(&pairs(&[0, 2, 3], good_groups()))).unwrap(),
        [3.0, 1.25, 1e300]
    );
    // 7 is entry 1; no group and raw values only; groups only.
    assert_eq!(
        read(dict(&pairs(&[1, 1, 1], good_groups()))).unwrap(),
        [7.0; 3]
    );
    let raw_only = Blob(Vec::new()).byte(0).varint(1).f64s(&[-2.5]);
    assert_eq!(read(dict(&pairs(&[0, 0, 0], raw_only))).unwrap(), [-2.5; 3]);

    // Kind 3 is a shared dictionary's only: a batch of its own refuses it.
    let batch = pairs(&[0, 2, 3], good_groups());
    let e = TocBatch::from_bytes(&batch[..]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::FieldOutOfRange {
                what: "dictionary kind",
                value: 3,
                ..
            }
        ),
        "{e:?}"
    );

    // Ids as gaps within columns: 0, then 0 + 2 in column 0; 3 in column
    // 1: pairs (0, 3), (0, 1.25) and (1, 1e300); rows of codes 1 and 2 3.
    let ok = Arc::new(SharedDict::from_bytes(dict(&id_gap_pairs(&[0, 2, 3]))).unwrap());
    let page = Blob::versioned(3, 9, 3)
        .packed(&[1, 2], 2)
        .packed(&[1, 2, 3], 2)
        .0;
    let rows = TocBatch::from_bytes_shared(&page[..], 0, &ok, &mut DecodeTree::default())
        .unwrap()
        .decode();
    assert_eq!(
        (rows.cols(), rows.values()),
        (&[0, 0, 1][..], &[3.0, 1.25, 1e300][..])
    );
    type Check = fn(&Error) -> bool;
    let id_cases: Vec<(&str, Vec<u8>, Check)> = vec![
        (
            "flag 16 in a batch of its own",
            id_gap_pairs(&[0, 2, 3]),
            |e| matches!(e, Error::UnknownFlags { flags: 23, .. }),
        ),
        (
            "an id past the dictionary through its gaps (1, 1 + 3)",
            dict(&id_gap_pairs(&[1, 3, 2])),
            |e| {
                matches!(
                    e,
                    Error::ValueIdOutOfRange {
                        id: 4,
                        dict_len: 4,
                        ..
                    }
                )
            },
        ),
        (
            "an escape: 7 + 0",
            dict(&id_gap_pairs(&[0, 2, 7, 0])),
            |e| matches!(e, Error::ValueIdOutOfRange { id: 7, .. }),
        ),
        (
            "ids ending in an escape",
            dict(&id_gap_pairs(&[0, 2, 3, 7])),
            |e| matches!(e, Error::UnterminatedEscape { .. }),
        ),
        (
            "fewer id elements than pairs",
            dict(&id_gap_pairs(&[0, 2])),
            |e| matches!(e, Error::LengthMismatch { .. }),
        ),
        (
            "more id elements than column symbols",
            dict(&id_gap_pairs(&[0, 2, 1, 1])),
            |e| matches!(e, Error::LengthMismatch { .. }),
        ),
    ];
    for (name, bytes, expected) in id_cases {
        let e = if name.starts_with("flag 16") {
            TocBatch::from_bytes(&bytes[..]).map(|_| ()).unwrap_err()
        } else {
            SharedDict::from_bytes(bytes).map(|_| ()).expect_err(name)
        };
        assert!(expected(&e), "{name}: {e:?}");
    }

    let group = |exponent: u8, base: u64, deltas: &[u32], width: u8| {
        Blob(Vec::new())
            .byte(exponent)
            .varint(base)
            .packed(deltas, width)
    };
    let cases: Vec<(&str, Blob, Check)> = vec![
        (
            "exponents not ascending",
            Blob(vec![2])
                .raw(&group(2, 2, &[0], 1).0)
                .raw(&group(2, 4, &[0], 1).0)
                .varint(0),
            |e| matches!(e, Error::FieldOutOfRange { value: 2, .. }),
        ),
        (
            "exponent 23",
            Blob(vec![1]).raw(&group(23, 2, &[0], 1).0).varint(0),
            |e| {
                matches!(
                    e,
                    Error::FieldOutOfRange {
                        what: "dictionary exponent",
                        ..
                    }
                )
            },
        ),
        ("24 groups", Blob(vec![24]), |e| {
            matches!(
                e,
                Error::FieldOutOfRange {
                    what: "dictionary groups",
                    ..
                }
            )
        }),
        (
            "a zero entry",
            Blob(vec![1])
                .raw(&group(0, 0, &[0, 1, 1, 1], 2).0)
                .varint(0),
            |e| matches!(e, Error::ZeroValue { .. }),
        ),
        (
            "a raw zero",
            Blob(vec![0]).varint(4).f64s(&[1.0, 2.0, 0.0, 3.0]),
            |e| matches!(e, Error::ZeroValue { .. }),
        ),
        (
            "a raw NaN",
            Blob(vec![0]).varint(4).f64s(&[1.0, 2.0, f64::NAN, 3.0]),
            |e| matches!(e, Error::InvalidNumber { .. }),
        ),
        (
            "deltas ending in an escape",
            Blob(vec![1])
                .raw(&group(0, 2, &[0, 1, 1, 3], 2).0)
                .varint(0),
            |e| matches!(e, Error::UnterminatedEscape { .. }),
        ),
        (
            "a running sum past i64",
            Blob(vec![1])
                .raw(&group(0, u64::MAX - 1, &[0, 1, 2, 2], 2).0)
                .varint(0),
            |e| {
                matches!(
                    e,
                    Error::FieldOutOfRange {
                        what: "dictionary base + deltas",
                        ..
                    }
                )
            },
        ),
        (
            "raw values cut short",
            Blob(vec![0]).varint(4).f64s(&[1.0, 2.0]),
            |e| matches!(e, Error::Truncated { .. }),
        ),
        (
            "an id past the entries",
            Blob(vec![0]).varint(3).f64s(&[1.0, 2.0, 3.0]),
            |e| {
                matches!(
                    e,
                    Error::ValueIdOutOfRange {
                        id: 3,
                        dict_len: 3,
                        ..
                    }
                )
            },
        ),
    ];
    for (name, groups, expected) in cases {
        // Ids 0, 1, 3: the fourth entry is named.
        let e = read(dict(&pairs(&[0, 1, 3], groups))).expect_err(name);
        assert!(expected(&e), "{name}: {e:?}");
    }
}

/// Regression (proptest, `check_agrees_with_the_build_on_mutated_pages`
/// and `files_of_repeated_rows_round_trip`): a dictionary of plain
/// columns and an integer dictionary is a version-1 batch, where flag 16
/// is unknown; the writer wrote its gap-coded ids without raising the
/// version, and its own dictionary was refused. One column of 200
/// values `k * 1e-30` (no decimal of at most 22 digits: a float
/// dictionary, in order of first appearance): ids 0 to 199, gaps of 1.
#[test]
fn gap_coded_ids_raise_a_version_1_dictionary_to_version_2() {
    let mut rows = SparseBatch::with_cols(1).unwrap();
    for k in 1..=200 {
        rows.push_row(&[0], &[k as f64 * 1e-30]).unwrap();
    }
    let mut encoder = Encoder::new(EncodeOptions::default());
    let model = encoder.learn_segment_in(&rows, true).unwrap().unwrap();
    let bytes = model.dict().as_bytes();
    // Pairs length (2 bytes), magic, then version 2 and flags with 16.
    assert_eq!((bytes[6], bytes[7] & 16), (2, 16), "{:?}", &bytes[..8]);
    let mut tree = DecodeTree::default();
    for start in (0..200).step_by(50) {
        let page = rows.slice_rows(start..start + 50);
        let encoded = encoder.encode_shared(&page, &model).unwrap();
        let read = TocBatch::from_bytes_shared(encoded.as_bytes(), 50, model.dict(), &mut tree)
            .unwrap()
            .decode();
        assert!(read == page, "rows {start}..");
    }
}

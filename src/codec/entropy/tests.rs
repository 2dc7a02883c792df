//! Roundtrips on random and real-shaped streams, and one forged input per
//! validation rule of the model and the stream.

use proptest::prelude::*;

use super::{AnsModel, LearnOptions};
use crate::error::Error;

fn coded(values: &[u32], options: LearnOptions) -> (AnsModel, Vec<u8>) {
    let model = AnsModel::learn(values, options).expect("values");
    let mut out = Vec::new();
    model.encode(values, &mut out).expect("encodable");
    (model, out)
}

fn roundtrip(values: &[u32], options: LearnOptions) {
    let (model, stream) = coded(values, options);
    let mut bytes = Vec::new();
    model.write(&mut bytes);
    let (read, used) = AnsModel::read(&bytes).expect("valid model");
    assert_eq!(used, bytes.len());
    assert_eq!(read, model);
    let mut out = vec![7];
    read.decode(&stream, values.len(), &mut out)
        .expect("valid stream");
    assert_eq!(out, values);
}

/// Skewed values: mostly small, a tail of rare large ones (as codes are).
fn skewed() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(
        prop_oneof![
            8 => 1u32..6,
            3 => 1u32..300,
            1 => any::<u32>(),
        ],
        0..2000,
    )
}

proptest! {
    #[test]
    fn skewed_streams_roundtrip(values in skewed(), precision in 1u8..=12, min_count in 1u64..5) {
        if !values.is_empty() {
            roundtrip(&values, LearnOptions { precision, min_count });
        }
    }

    #[test]
    fn a_model_codes_other_pages_of_its_segment(
        learn in skewed(), page in skewed(), precision in 2u8..=12,
    ) {
        // Values unseen while learning are escaped, if the model has an escape.
        let mut all = learn.clone();
        all.push(u32::MAX);
        all.push(u32::MAX - 1);
        let model = AnsModel::learn(&all, LearnOptions { precision, min_count: 3 }).expect("values");
        let mut stream = Vec::new();
        model.encode(&page, &mut stream).expect("the escape covers it");
        let mut out = Vec::new();
        model.decode(&stream, page.len(), &mut out).expect("valid");
        prop_assert_eq!(out, page);
    }

    /// Hostile bytes: an error or a value list of the length asked for,
    /// never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(model_bytes in prop::collection::vec(any::<u8>(), 0..64),
                                  stream in prop::collection::vec(any::<u8>(), 0..64),
                                  n in 0usize..100) {
        if let Ok((model, _)) = AnsModel::read(&model_bytes) {
            let mut out = Vec::new();
            if model.decode(&stream, n, &mut out).is_ok() {
                prop_assert_eq!(out.len(), n);
            }
        }
    }
}

#[test]
fn one_symbol_streams_cost_only_their_states() {
    let values = vec![5u32; 10_000];
    let (model, stream) = coded(&values, LearnOptions::default());
    assert_eq!(model.n_symbols(), 1);
    assert_eq!(stream.len(), 1 + 8, "the escape count and two states");
    roundtrip(&values, LearnOptions::default());
}

#[test]
fn empty_and_odd_lengths_roundtrip() {
    for n in [1usize, 2, 3, 4, 5, 63] {
        let values: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
        roundtrip(&values, LearnOptions::default());
    }
    let model = AnsModel::learn(&[1, 2], LearnOptions::default()).expect("values");
    let mut stream = Vec::new();
    model.encode(&[], &mut stream).expect("nothing to code");
    assert_eq!(stream, [0]);
    let mut out = Vec::new();
    model.decode(&stream, 0, &mut out).expect("valid");
    assert!(out.is_empty());
}

#[test]
fn a_value_without_slot_or_escape_is_refused() {
    let model = AnsModel::learn(&[1, 1, 1, 2, 2, 2], LearnOptions::default()).expect("values");
    let err = model.encode(&[3], &mut Vec::new()).unwrap_err();
    assert!(matches!(err, Error::BadArgument { .. }), "{err}");
}

/// A small model: precision 4, values 1 (freq 10) and 9 (freq 4), escape 2.
fn small_model() -> Vec<u8> {
    vec![4, 2, 2, 1, 8, 10, 4]
}

#[test]
fn the_small_model_reads() {
    let (model, used) = AnsModel::read(&small_model()).expect("valid");
    assert_eq!(used, 7);
    assert_eq!(model.values, [1, 9]);
    assert_eq!(model.freqs, [10, 4]);
    assert_eq!(model.escape_freq, 2);
}

fn model_err(bytes: &[u8]) -> Error {
    AnsModel::read(bytes).unwrap_err()
}

#[test]
fn forged_models_are_refused_per_rule() {
    // Precision 0 and above 12.
    assert!(matches!(
        model_err(&[0, 1, 0, 0, 1]),
        Error::FieldBelowMinimum { offset: 0, .. }
    ));
    assert!(matches!(
        model_err(&[13, 1, 0, 0, 1]),
        Error::FieldOutOfRange {
            offset: 0,
            value: 13,
            ..
        }
    ));
    // More symbols than slots, an escape frequency above 2^L.
    assert!(matches!(
        model_err(&[2, 5]),
        Error::FieldOutOfRange {
            offset: 1,
            value: 5,
            ..
        }
    ));
    assert!(matches!(
        model_err(&[2, 1, 5]),
        Error::FieldOutOfRange {
            offset: 2,
            value: 5,
            ..
        }
    ));
    // A zero gap after the first, a value above u32::MAX.
    assert!(matches!(
        model_err(&[4, 2, 0, 1, 0, 8, 8]),
        Error::FieldBelowMinimum { offset: 4, .. }
    ));
    let mut big = vec![4, 1, 0];
    crate::wire::write_varint(&mut big, 1 << 32);
    big.push(16);
    assert!(matches!(
        model_err(&big),
        Error::FieldOutOfRange { offset: 3, .. }
    ));
    // A zero frequency; frequencies above 2^L; a sum below 2^L.
    assert!(matches!(
        model_err(&[4, 2, 0, 1, 1, 0, 16]),
        Error::FieldBelowMinimum { offset: 5, .. }
    ));
    assert!(matches!(
        model_err(&[4, 2, 0, 1, 1, 10, 7]),
        Error::FieldOutOfRange {
            offset: 6,
            value: 7,
            max: 6,
            ..
        }
    ));
    assert!(matches!(
        model_err(&[4, 2, 0, 1, 1, 10, 5]),
        Error::LengthMismatch {
            expected: 16,
            found: 15,
            ..
        }
    ));
    // Cut short.
    for cut in 0..small_model().len() {
        let err = model_err(&small_model()[..cut]);
        assert!(
            matches!(err, Error::Truncated { offset, .. } if offset == cut),
            "{cut}: {err}"
        );
    }
}

fn stream_err(stream: &[u8], n: usize) -> Error {
    let (model, _) = AnsModel::read(&small_model()).expect("valid");
    model.decode(stream, n, &mut Vec::new()).unwrap_err()
}

#[test]
fn forged_streams_are_refused_per_rule() {
    let (model, _) = AnsModel::read(&small_model()).expect("valid");
    let values = [1, 9, 1, 1, 77, 9, 1, 1, 1, 1, 3];
    let mut good = Vec::new();
    model.encode(&values, &mut good).expect("codable");
    let mut out = Vec::new();
    model.decode(&good, values.len(), &mut out).expect("valid");
    assert_eq!(out, values);
    // Two escapes (77, 3) at width 7: varint 2, width 7, 2 payload bytes.
    assert_eq!(&good[..2], [2, 7]);
    let rans_at = 4;

    // More escapes than values.
    assert!(matches!(
        stream_err(&[3], 2),
        Error::FieldOutOfRange {
            offset: 0,
            value: 3,
            max: 2,
            ..
        }
    ));
    // The escapes' width and padding.
    let mut forged = good.clone();
    forged[1] = 33;
    assert!(matches!(
        stream_err(&forged, values.len()),
        Error::BadWidth {
            offset: 1,
            width: 33,
            ..
        }
    ));
    forged[1] = 0;
    assert!(matches!(
        stream_err(&forged, values.len()),
        Error::BadWidth { width: 0, .. }
    ));
    let mut forged = good.clone();
    forged[3] |= 0x80;
    assert!(matches!(
        stream_err(&forged, values.len()),
        Error::NonZeroPadding { offset: 3, .. }
    ));
    // A state below 2^23 or from 2^31.
    let mut forged = good.clone();
    forged[rans_at + 3] = 0;
    forged[rans_at + 2] = 0;
    assert!(
        matches!(stream_err(&forged, values.len()), Error::FieldOutOfRange { offset, .. } if offset == rans_at)
    );
    let mut forged = good.clone();
    forged[rans_at + 7] = 0x80;
    assert!(
        matches!(stream_err(&forged, values.len()), Error::FieldOutOfRange { offset, .. } if offset == rans_at + 4)
    );
    // Cut anywhere: truncated, or a state left away from 2^23.
    for cut in 0..good.len() {
        let err = stream_err(&good[..cut], values.len());
        assert!(
            matches!(
                err,
                Error::Truncated { .. }
                    | Error::LengthMismatch { .. }
                    | Error::FieldOutOfRange { .. }
            ),
            "{cut}: {err}"
        );
    }
    // A byte more.
    let mut forged = good.clone();
    forged.push(0);
    assert!(matches!(
        stream_err(&forged, values.len()),
        Error::TrailingBytes { .. }
    ));
    // Values of a stream of none.
    assert!(matches!(
        stream_err(&[0, 1], 0),
        Error::TrailingBytes {
            offset: 1,
            len: 1,
            ..
        }
    ));
    // Fewer values asked for than coded: the states do not return.
    assert!(matches!(
        stream_err(&good, values.len() - 2),
        Error::LengthMismatch { .. } | Error::TrailingBytes { .. }
    ));
    // An escape left unused: the same stream with a third escape stored.
    let mut forged = vec![3, 7, 205, 1, 0]; // 77, 3, 0 at 7 bits
    forged.extend_from_slice(&good[rans_at..]);
    assert!(matches!(
        stream_err(&forged, values.len()),
        Error::LengthMismatch {
            expected: 3,
            found: 2,
            ..
        }
    ));
    // One escape used more than stored.
    let mut forged = vec![1, 7, 77];
    forged.extend_from_slice(&good[rans_at..]);
    assert!(matches!(
        stream_err(&forged, values.len()),
        Error::FieldOutOfRange {
            value: 2,
            max: 1,
            ..
        }
    ));
}

/// The wire form pinned: the small model's stream of these values, as
/// `docs/FORMAT.md` ("Entropy-coded streams") specifies it. A change of
/// these bytes is a change of the format an independent reader parses.
#[test]
fn golden_stream_bytes() {
    let (model, _) = AnsModel::read(&small_model()).expect("valid");
    let values = [1, 9, 1, 1, 77, 9, 1, 1, 1, 1, 3];
    let mut stream = Vec::new();
    model.encode(&values, &mut stream).expect("codable");
    assert_eq!(stream, GOLDEN);
}

const GOLDEN: [u8; 13] = [2, 7, 205, 1, 22, 183, 209, 0, 156, 154, 196, 32, 14];

//! Property tests: every batch round-trips through every encoder
//! configuration, bit for bit. Strategies are weighted to the edges:
//! empty batches and rows, one column, huge column ids, identical rows,
//! all-distinct values, subnormal and huge values, long rows.

use proptest::prelude::*;

use crate::strategy::batch;
use crate::support::cvi_bit_packed_len;
use tocpile::{Adaptive, EncodeOptions, Encoder, Level, Packing, SparseBatch, TocBatch, MAX_COLS};

pub fn all_options() -> Vec<EncodeOptions> {
    let mut out = vec![
        EncodeOptions::level(Level::Sparse),
        EncodeOptions::level(Level::Logical),
    ];
    for packing in [Packing::Bits, Packing::Bytes] {
        for int_dictionary in [true, false] {
            for adaptive in [Adaptive::ALL, Adaptive::NONE] {
                out.push(
                    EncodeOptions::default()
                        .with_level(Level::Full)
                        .with_packing(packing)
                        .with_int_dictionary(int_dictionary)
                        .with_adaptive(adaptive),
                );
            }
        }
    }
    out
}

/// Encodes, re-validates from bytes alone and decodes.
fn round_trip(encoder: &mut Encoder, batch: &SparseBatch) -> SparseBatch {
    let encoded = encoder.encode(batch).unwrap();
    assert_eq!(encoded.n_rows(), batch.n_rows());
    assert_eq!(encoded.decoded_nnz(), batch.nnz() as u64);
    let loaded = TocBatch::from_bytes(encoded.as_bytes()).unwrap();
    assert_eq!(loaded.tree().n_nodes(), encoded.tree().n_nodes());
    assert!(loaded.tree().n_nodes() <= loaded.full_tree().n_nodes());
    assert_eq!(loaded.level(), encoder.options().level);
    loaded.decode()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_option_round_trips(batch in batch()) {
        for options in all_options() {
            let mut encoder = Encoder::new(options);
            let back = round_trip(&mut encoder, &batch);
            prop_assert_eq!(&back, &batch, "options {:?}", options);
        }
    }

    /// A reused encoder writes exactly what a fresh one writes.
    #[test]
    fn reused_encoder_is_stateless(a in batch(), b in batch()) {
        for options in all_options() {
            let mut reused = Encoder::new(options);
            reused.encode(&a).unwrap();
            let again = reused.encode(&b).unwrap();
            let fresh = Encoder::new(options).encode(&b).unwrap();
            prop_assert_eq!(again.as_bytes(), fresh.as_bytes());
        }
    }

    /// A `Level::Full` batch is never larger than its CVI form with bit
    /// packing (columns and value ids at the fewest bits, an `f64`
    /// dictionary), nor than the version-1 layout.
    #[test]
    fn never_larger_than_cvi_with_bit_packing(batch in batch()) {
        let full = tocpile::encode(&batch).unwrap().encoded_len();
        prop_assert!(full as u64 <= cvi_bit_packed_len(&batch), "{} > CVI", full);
        let v1 = Encoder::new(EncodeOptions::default().with_adaptive(Adaptive::NONE))
            .encode(&batch)
            .unwrap()
            .encoded_len();
        prop_assert!(full <= v1, "{} > version 1 {}", full, v1);
    }

    /// The decoded batch equals the input as dense matrices too (small
    /// column counts only).
    #[test]
    fn dense_view_matches(batch in batch().prop_filter("small", |b| b.n_cols() <= 600)) {
        let back = tocpile::encode(&batch).unwrap().decode();
        let (x, y) = (batch.to_dense(), back.to_dense());
        prop_assert!(x.iter().zip(y.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn negative_zero_decodes_as_absent() {
    let b = SparseBatch::from_dense_rows(3, &[[-0.0, 2.0, 0.0]]).unwrap();
    assert_eq!(b.nnz(), 1);
    let back = tocpile::encode(&b).unwrap().decode();
    assert_eq!(back.row(0), (&[1u32][..], &[2.0][..]));
}

#[test]
fn empty_batches_round_trip() {
    for n_cols in [0, 1, MAX_COLS] {
        let empty = SparseBatch::with_cols(n_cols).unwrap();
        let mut rows = empty.clone();
        for _ in 0..5 {
            rows.push_row(&[], &[]).unwrap();
        }
        for options in all_options() {
            let mut e = Encoder::new(options);
            assert_eq!(round_trip(&mut e, &empty), empty);
            assert_eq!(round_trip(&mut e, &rows), rows);
        }
    }
}

#[test]
fn largest_column_id() {
    let b = SparseBatch::from_triplets(
        2,
        MAX_COLS,
        &[(0, u32::MAX, 1.0), (1, 0, 2.0), (1, u32::MAX, 1.0)],
    )
    .unwrap();
    for options in all_options() {
        assert_eq!(round_trip(&mut Encoder::new(options), &b), b);
    }
}

#[test]
fn more_rows_than_the_reference_cap() {
    // The authors' code caps a batch at 1024 rows; we do not.
    let mut b = SparseBatch::with_cols(50).unwrap();
    for i in 0..5000u32 {
        let c = i % 49;
        b.push_row(&[c, 49], &[1.0, (i % 7) as f64 + 1.0]).unwrap();
    }
    assert_eq!(b.n_rows(), 5000);
    assert_eq!(
        round_trip(&mut Encoder::new(EncodeOptions::default()), &b),
        b
    );
}

//! The kernels on the encoded batch itself (`TocBatch::kernels`,
//! `TocBatch::matvec`, ...) against plain dense math on the decoded
//! batch, at every encoder level; wrong lengths are errors.

use ndarray::Array2;
use proptest::prelude::*;

use crate::codec::roundtrip::all_options;
use crate::strategy::finite_batch;
use crate::support::numbers;
use tocpile::{Encoder, Error, SparseBatch};

/// `got` within 1e-9 (relative, plus 1e-9) of `want`, entry by entry.
pub(super) fn close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
            "{what}: {g} vs {w}"
        );
    }
}

fn check(batch: &SparseBatch, seed: u64) {
    let a = batch.to_dense();
    let (n, m) = a.dim();
    for options in all_options() {
        let encoded = Encoder::new(options).encode(batch).unwrap();
        let mut k = encoded.kernels();
        assert_eq!((k.n_rows(), k.n_cols()), (n, m));
        assert_eq!(k.to_dense(), a);
        let v = numbers(seed, m);
        let want = a.dot(&ndarray::ArrayView1::from(&v[..]));
        close(&k.matvec(&v).unwrap(), want.as_slice().unwrap(), "A.v");
        close(
            &encoded.matvec(&v).unwrap(),
            want.as_slice().unwrap(),
            "A.v once",
        );
        let u = numbers(seed ^ 1, n);
        let want = ndarray::ArrayView1::from(&u[..]).dot(&a);
        close(&k.vecmat(&u).unwrap(), want.as_slice().unwrap(), "v.A");
        close(
            &encoded.vecmat(&u).unwrap(),
            want.as_slice().unwrap(),
            "v.A once",
        );
        let mm = Array2::from_shape_vec((m, 3), numbers(seed ^ 2, m * 3)).unwrap();
        let want = a.dot(&mm);
        close(
            k.matmat(mm.view()).unwrap().as_slice().unwrap(),
            want.as_slice().unwrap(),
            "A.M",
        );
        let ml = Array2::from_shape_vec((2, n), numbers(seed ^ 3, 2 * n)).unwrap();
        let want = ml.dot(&a);
        let got = encoded.left_matmat(ml.view()).unwrap();
        close(got.as_slice().unwrap(), want.as_slice().unwrap(), "M.A");
        close(&[k.sum()], &[a.sum()], "sum");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn batch_kernels_match_dense_math(batch in finite_batch(40), seed in any::<u64>()) {
        check(&batch, seed);
    }
}

#[test]
fn batch_kernels_refuse_wrong_lengths() {
    let rows = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]).unwrap();
    let batch = tocpile::encode(&rows).unwrap();
    let mut k = batch.kernels();
    assert!(matches!(
        k.matvec(&[1.0; 2]),
        Err(Error::LengthMismatch {
            expected: 3,
            found: 2,
            ..
        })
    ));
    assert!(matches!(
        k.vecmat(&[1.0; 3]),
        Err(Error::LengthMismatch {
            expected: 2,
            found: 3,
            ..
        })
    ));
    assert!(k.matmat(Array2::zeros((2, 4)).view()).is_err());
    assert!(batch.left_matmat(Array2::zeros((4, 3)).view()).is_err());
}

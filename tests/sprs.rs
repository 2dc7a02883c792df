//! The `sprs` feature: batches from and to sprs matrices, checked against
//! dense math and sprs's own product. Its own test binary so that CI runs
//! it with `--features sprs` without building the others.

#![cfg(feature = "sprs")]

use sprs::CsMat;
use tocpile::rng::Rng;
use tocpile::{Error, SparseBatch};

/// A random sparse matrix with about `density` of its cells set.
fn random_rows(rng: &mut Rng, n_rows: usize, n_cols: usize, density: f64) -> Vec<Vec<f64>> {
    (0..n_rows)
        .map(|_| {
            (0..n_cols)
                .map(|_| {
                    if rng.unit() < density {
                        (rng.unit() * 8.0).round() - 4.0
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn sprs_matrices_convert_both_ways_and_agree_with_dense_math() {
    let mut rng = Rng::new(25);
    for (n_rows, n_cols, density) in [(0, 3, 0.5), (7, 1, 0.5), (40, 13, 0.3), (25, 30, 0.05)] {
        let dense = random_rows(&mut rng, n_rows, n_cols, density);
        let batch = SparseBatch::from_dense_rows(n_cols, &dense).unwrap();
        let csr = CsMat::<f64>::try_from(&batch).unwrap();
        assert_eq!(csr.to_dense(), batch.to_dense());
        assert_eq!(SparseBatch::try_from(&csr).unwrap(), batch);
        // Column-major input is read as rows.
        let csc = csr.to_csc();
        assert_eq!(SparseBatch::try_from(&csc).unwrap(), batch);
        // A.v through the encoded batch against sprs's product.
        let v: Vec<f64> = (0..n_cols).map(|j| j as f64 * 0.5 - 1.0).collect();
        let ours = tocpile::encode(&batch).unwrap().matvec(&v).unwrap();
        let theirs = &csr * &tocpile::ndarray::Array1::from(v.clone());
        for (a, b) in ours.iter().zip(theirs.iter()) {
            assert!((a - b).abs() < 1e-9, "{a} against {b}");
        }
    }
}

#[test]
fn explicit_zeros_of_a_sprs_matrix_are_dropped() {
    let m = CsMat::new((2, 3), vec![0, 2, 3], vec![0, 2, 1], vec![0.0, 1.5, -2.0]);
    let batch = SparseBatch::try_from(&m).unwrap();
    assert_eq!(batch.nnz(), 2);
    assert_eq!(batch.to_dense(), m.to_dense());
}

#[test]
fn a_non_finite_value_is_an_error_not_a_panic() {
    let m = CsMat::new((1, 2), vec![0, 1], vec![1], vec![f64::NAN]);
    assert!(matches!(
        SparseBatch::try_from(&m),
        Err(Error::InvalidNumber { .. })
    ));
}

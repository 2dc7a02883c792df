//! SparseBatch constructors: every way in gives the same batch, and bad
//! input is an error naming where it is.

use ndarray::array;
use tocpile::{Error, SparseBatch};

fn expected() -> SparseBatch {
    SparseBatch::from_csr(4, vec![0, 2, 2, 3], vec![0, 3, 1], vec![1.5, -2.0, 7.0]).unwrap()
}

#[test]
fn constructors_agree() {
    let dense = [[1.5, 0.0, 0.0, -2.0], [0.0; 4], [0.0, 7.0, -0.0, 0.0]];
    assert_eq!(SparseBatch::from_dense_rows(4, &dense).unwrap(), expected());
    let arr = array![
        [1.5, 0.0, 0.0, -2.0],
        [0.0, 0.0, 0.0, 0.0],
        [0.0, 7.0, -0.0, 0.0]
    ];
    assert_eq!(SparseBatch::from_array(arr.view()).unwrap(), expected());
    // Column-major views work too.
    let t = arr.t().to_owned();
    assert_eq!(SparseBatch::from_array(t.t()).unwrap(), expected());
    let trip = [(2, 1, 7.0), (0, 3, -2.0), (0, 0, 1.5), (1, 2, 0.0)];
    assert_eq!(SparseBatch::from_triplets(3, 4, &trip).unwrap(), expected());
    assert_eq!(expected().to_dense(), arr);
    let mut pushed = SparseBatch::with_cols(4).unwrap();
    pushed.push_row(&[0, 3], &[1.5, -2.0]).unwrap();
    pushed.push_row(&[], &[]).unwrap();
    pushed.push_row(&[1, 2], &[7.0, 0.0]).unwrap();
    assert_eq!(pushed, expected());
    assert_eq!(
        expected().slice_rows(1..3).row(1),
        (&[1u32][..], &[7.0][..])
    );
}

#[test]
fn csr_zeros_are_dropped() {
    let b = SparseBatch::from_csr(3, vec![0, 2, 3], vec![0, 2, 1], vec![0.0, 4.0, -0.0]).unwrap();
    assert_eq!(b.offsets(), &[0, 1, 1]);
    assert_eq!(b.cols(), &[2]);
}

#[test]
fn bad_input_is_reported() {
    assert_eq!(
        SparseBatch::from_csr(4, vec![0, 2], vec![3, 1], vec![1.0, 1.0]),
        Err(Error::ColumnsNotAscending {
            row: 0,
            position: 1,
            prev: 3,
            col: 1
        })
    );
    assert_eq!(
        SparseBatch::from_csr(4, vec![0, 1], vec![4], vec![1.0]),
        Err(Error::ColumnOutOfRange {
            row: 0,
            position: 0,
            col: 4,
            n_cols: 4
        })
    );
    assert!(matches!(
        SparseBatch::from_csr(4, vec![1, 1], vec![0], vec![1.0]),
        Err(Error::BadOffsets { index: 0, .. })
    ));
    assert!(matches!(
        SparseBatch::from_csr(4, vec![0, 2, 1], vec![0, 1], vec![1.0, 1.0]),
        Err(Error::BadOffsets { index: 2, .. })
    ));
    assert!(matches!(
        SparseBatch::from_csr(4, vec![0, 1], vec![0, 1], vec![1.0, 1.0]),
        Err(Error::BadOffsets { index: 1, .. })
    ));
    assert!(matches!(
        SparseBatch::from_csr(4, vec![0, 1], vec![0], vec![]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(
        SparseBatch::from_triplets(2, 4, &[(1, 2, 1.0), (1, 2, 3.0)]),
        Err(Error::DuplicateEntry { row: 1, col: 2 })
    );
    assert!(matches!(
        SparseBatch::from_triplets(2, 4, &[(2, 0, 1.0)]),
        Err(Error::FieldOutOfRange { .. })
    ));
    let mut b = SparseBatch::with_cols(4).unwrap();
    assert!(matches!(
        b.push_dense_row(&[1.0]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        b.push_row(&[0], &[]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(b.n_rows(), 0, "failed pushes leave the batch unchanged");
    assert!(matches!(
        SparseBatch::with_cols(tocpile::MAX_COLS + 1),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn equality_compares_bits() {
    let one = |bits| SparseBatch::from_csr(1, vec![0, 1], vec![0], vec![f64::from_bits(bits)]);
    let tiny = one(1).unwrap();
    assert_eq!(tiny, one(1).unwrap());
    assert_ne!(tiny, one(2).unwrap());
}

/// Issue 23, 2: a NaN value made every score it touched NaN, and
/// `predict` answered class 0. Every constructor rejects NaN and
/// infinities, naming the row and column, and leaves the batch unchanged.
#[test]
fn every_constructor_rejects_values_that_are_not_finite() {
    for bad in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::from_bits(0x7ff0_0000_0000_0001),
    ] {
        let named = |e: Error| match e {
            Error::InvalidNumber { what, value, .. } => {
                assert_eq!(value.to_bits(), bad.to_bits());
                what
            }
            other => panic!("{other:?}"),
        };
        let mut b = SparseBatch::with_cols(4).unwrap();
        b.push_row(&[0], &[1.0]).unwrap();
        let e = b.push_row(&[1, 3], &[2.0, bad]).unwrap_err();
        assert_eq!(named(e), "row 1, column 3: value");
        assert_eq!((b.n_rows(), b.nnz()), (1, 1), "unchanged");
        let e = b.push_dense_row(&[0.0, bad, 0.0, 0.0]).unwrap_err();
        assert_eq!(named(e), "row 1, column 1: value");
        assert_eq!(b.n_rows(), 1, "unchanged");
        let e = SparseBatch::from_dense_rows(2, &[[1.0, 1.0], [bad, 0.0]]).unwrap_err();
        assert_eq!(named(e), "row 1, column 0: value");
        let array = ndarray::arr2(&[[1.0, 0.0], [0.0, bad]]);
        let e = SparseBatch::from_array(array.view()).unwrap_err();
        assert_eq!(named(e), "row 1, column 1: value");
        let e = SparseBatch::from_csr(3, vec![0, 1, 2], vec![0, 2], vec![1.0, bad]).unwrap_err();
        assert_eq!(named(e), "row 1, column 2: value");
        let e = SparseBatch::from_triplets(2, 3, &[(1, 2, bad), (0, 0, 1.0)]).unwrap_err();
        assert_eq!(named(e), "row 1, column 2: value");
    }
    let e = SparseBatch::from_dense_rows(1, &[[f64::NAN]]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "row 0, column 0: value is NaN, expected a finite number"
    );
}

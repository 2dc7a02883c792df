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
    let nan =
        |bits| SparseBatch::from_csr(1, vec![0, 1], vec![0], vec![f64::from_bits(bits)]).unwrap();
    assert_eq!(nan(0x7ff8_0000_0000_0000), nan(0x7ff8_0000_0000_0000));
    assert_ne!(nan(0x7ff8_0000_0000_0000), nan(0x7ff8_0000_0000_0001));
}

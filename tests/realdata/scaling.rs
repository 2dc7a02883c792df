//! Scaling applied to the parameters equals training on scaled rows.

use tocpile::model::{Gradient, Model, ModelKind, Optimizer, OptimizerState};
use tocpile::scale::{ColumnStats, ScaleKind};

use super::{pages, wide_scales};

const COLS: usize = 7;
const ROWS: usize = 120;

fn kinds() -> Vec<ModelKind> {
    vec![
        ModelKind::Logistic,
        ModelKind::Svm,
        ModelKind::LinearRegression,
        ModelKind::Softmax { classes: 3 },
        ModelKind::Mlp {
            hidden: vec![5],
            outputs: 3,
        },
        ModelKind::Mlp {
            hidden: vec![4],
            outputs: 1,
        },
    ]
}

/// Labels for `kind`: classes from the sign pattern of two columns, or a
/// linear function for regression.
fn labels(kind: &ModelKind, batch: &tocpile::SparseBatch) -> Vec<f64> {
    let dense = batch.to_dense();
    dense
        .rows()
        .into_iter()
        .map(|r| match kind {
            ModelKind::LinearRegression => 3.0 * r[0] - 0.02 * r[2] + 0.5,
            ModelKind::Softmax { .. } | ModelKind::Mlp { outputs: 3, .. } => {
                f64::from(r[0] > 0.0) + f64::from(r[1] > 0.0)
            }
            _ => f64::from(r[0] + 0.1 * r[1] > 0.0),
        })
        .collect()
}

/// The largest difference between the raw model's parameters and the
/// scaled model's mapped back to raw coordinates (first layer's weight row
/// `j` times `s_j`), relative to the parameters' size.
fn difference(raw: &Model, scaled: &Model, factors: &[f64]) -> f64 {
    let first = raw.layers()[0].weights().len();
    let outputs = raw.layers()[0].weights().ncols();
    let (a, b) = (raw.params(), scaled.params());
    let size = a.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(&b)
        .enumerate()
        .map(|(k, (x, y))| {
            let y = if k < first {
                y * factors[k / outputs]
            } else {
                *y
            };
            (x - y).abs() / size
        })
        .fold(0.0, f64::max)
}

#[test]
fn parameter_scaling_equals_training_on_scaled_rows() {
    let batch = wide_scales(11, ROWS, COLS);
    for scale in [ScaleKind::MaxAbs, ScaleKind::Standard] {
        let mut stats = ColumnStats::new(COLS).unwrap();
        stats.add(&batch).unwrap();
        let scaling = stats.scaling(scale);
        assert_eq!(scaling.factors()[COLS - 1], 1.0, "an all-zero column");
        let scaled_rows = scaling.apply(&batch).unwrap();
        for kind in kinds() {
            let y = labels(&kind, &batch);
            let raw_pages = pages(&batch, &y, 25);
            let scaled_pages = pages(&scaled_rows, &y, 25);
            for rule in [Optimizer::Sgd, Optimizer::AdaGrad, Optimizer::Adam] {
                let lr = if rule == Optimizer::Sgd { 0.2 } else { 0.05 };
                let l2 = 1e-3;
                let mut scaled = Model::new(kind.clone(), COLS, 3).unwrap();
                // The same start in both coordinates: w = s * w'.
                let mut raw = scaled.clone();
                let mut start = scaled.params();
                let outputs = scaled.layers()[0].weights().ncols();
                let first = scaled.layers()[0].weights().len();
                for (k, p) in start.iter_mut().enumerate().take(first) {
                    *p *= scaling.factors()[k / outputs];
                }
                raw.set_params(&start).unwrap();
                raw.set_scaling(Some(scaling.clone())).unwrap();
                let (mut gs, mut gr) = (Gradient::new(&scaled), Gradient::new(&raw));
                let (mut ss, mut sr) = (OptimizerState::new(rule), OptimizerState::new(rule));
                for epoch in 0..4 {
                    for (ps, pr) in scaled_pages.chunks(2).zip(raw_pages.chunks(2)) {
                        let a = scaled.gradient(ps, l2, &mut gs).unwrap();
                        let b = raw.gradient(pr, l2, &mut gr).unwrap();
                        let what = format!("{kind} {scale} {rule} epoch {epoch}");
                        assert!(
                            (a.loss_sum - b.loss_sum).abs() <= 1e-9 * a.loss_sum.abs().max(1.0),
                            "{what}: loss {} vs {}",
                            a.loss_sum,
                            b.loss_sum
                        );
                        assert_eq!(a.correct, b.correct, "{what}");
                        scaled.step_with(&gs, lr, &mut ss);
                        raw.step_with(&gr, lr, &mut sr);
                    }
                }
                let d = difference(&raw, &scaled, scaling.factors());
                assert!(
                    d < 1e-9,
                    "{kind} {scale} {rule}: parameters differ by {d:e}"
                );
                // The penalties agree too.
                let (p1, p2) = (scaled.penalty(l2), raw.penalty(l2));
                assert!((p1 - p2).abs() <= 1e-9 * p1.max(1e-12), "{p1} vs {p2}");
                // And the raw model predicts raw rows as the scaled one
                // predicts scaled rows.
                let (e1, e2) = (
                    scaled.evaluate(&scaled_pages).unwrap(),
                    raw.evaluate(&raw_pages).unwrap(),
                );
                assert!((e1.loss_sum - e2.loss_sum).abs() <= 1e-9 * e1.loss_sum.max(1.0));
            }
        }
    }
}

#[test]
fn scalers_match_their_definitions() {
    let batch = wide_scales(5, 50, COLS);
    let dense = batch.to_dense();
    let mut stats = ColumnStats::new(COLS).unwrap();
    // Statistics add up chunk by chunk.
    stats.add(&batch.slice_rows(0..17)).unwrap();
    stats.add(&batch.slice_rows(17..50)).unwrap();
    assert_eq!(stats.rows(), 50);
    let maxabs = stats.scaling(ScaleKind::MaxAbs);
    let standard = stats.scaling(ScaleKind::Standard);
    for j in 0..COLS - 1 {
        let col = dense.column(j);
        let max = col.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!((maxabs.factors()[j] - 1.0 / max).abs() <= 1e-12 / max);
        let mean = col.sum() / 50.0;
        let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 50.0;
        let f = standard.factors()[j];
        assert!((f - 1.0 / var.sqrt()).abs() <= 1e-9 * f, "column {j}");
    }
    assert_eq!(maxabs.factors()[COLS - 1], 1.0);
    assert_eq!(standard.factors()[COLS - 1], 1.0);
    // Scaled by max-abs, every value is in [-1, 1] and zeros stay zeros.
    let scaled = maxabs.apply(&batch).unwrap();
    assert_eq!(scaled.nnz(), batch.nnz());
    assert!(scaled.values().iter().all(|v| v.abs() <= 1.0));
    assert!(stats.add(&wide_scales(1, 3, COLS + 1)).is_err());
}

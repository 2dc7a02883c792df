//! Predictions and evaluation figures against brute-force references.

use proptest::prelude::*;
use tocpile::model::{auc, Evaluation, Model, ModelKind};

use super::{pages, wide_scales};
use crate::support::numbers;

/// The share of (positive, negative) pairs ordered correctly, ties half:
/// every pair counted.
fn brute_auc(ranked: &[(f64, bool)]) -> Option<f64> {
    let (mut good, mut pairs) = (0.0, 0.0);
    for &(p, _) in ranked.iter().filter(|r| r.1) {
        for &(n, _) in ranked.iter().filter(|r| !r.1) {
            pairs += 1.0;
            good += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    (pairs > 0.0).then(|| good / pairs)
}

proptest! {
    #[test]
    fn auc_is_the_pair_count(scores in prop::collection::vec((0u8..12, any::<bool>()), 0..60)) {
        // Few distinct scores: many ties.
        let ranked: Vec<(f64, bool)> = scores.iter().map(|&(s, p)| (f64::from(s) / 4.0 - 1.0, p)).collect();
        let (a, b) = (auc(&ranked), brute_auc(&ranked));
        match (a, b) {
            (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-12, "{} vs {}", a, b),
            (a, b) => prop_assert_eq!(a, b),
        }
    }
}

#[test]
fn auc_extremes() {
    assert_eq!(auc(&[(1.0, true), (0.0, false)]), Some(1.0));
    assert_eq!(auc(&[(0.0, true), (1.0, false)]), Some(0.0));
    assert_eq!(auc(&[(0.5, true), (0.5, false)]), Some(0.5));
    assert_eq!(auc(&[(0.5, true)]), None);
}

/// Issue 23, 2: `evaluate` never ended on a NaN score (the tie loop did
/// not advance past it). AUC is undefined with a NaN score: `None`, at
/// once, wherever the NaNs sort; infinities rank at the ends.
#[test]
fn auc_with_nan_scores_ends_and_is_undefined() {
    let nan = f64::NAN;
    let negative_nan = f64::from_bits(0xfff8_0000_0000_0001);
    for ranked in [
        vec![(nan, true), (0.0, false)],
        vec![(nan, true), (nan, false), (1.0, true), (-1.0, false)],
        vec![
            (0.3, true),
            (negative_nan, false),
            (nan, true),
            (0.1, false),
        ],
    ] {
        assert_eq!(auc(&ranked), None, "{ranked:?}");
    }
    let infinite = [
        (f64::INFINITY, true),
        (f64::NEG_INFINITY, false),
        (0.0, true),
    ];
    assert_eq!(auc(&infinite), Some(1.0));
    assert_eq!(
        auc(&[(f64::INFINITY, true), (f64::INFINITY, false)]),
        Some(0.5)
    );
}

/// A model with random parameters.
fn random_model(kind: ModelKind, cols: usize, seed: u64) -> Model {
    let mut m = Model::new(kind, cols, seed).unwrap();
    let p = numbers(seed + 100, m.n_params());
    m.set_params(&p).unwrap();
    m
}

#[test]
fn predictions_are_dense_math_and_evaluation_matches_the_model() {
    let cols = 6;
    let batch = wide_scales(21, 90, cols);
    let dense = batch.to_dense();
    let kinds = [
        ModelKind::Logistic,
        ModelKind::Svm,
        ModelKind::LinearRegression,
        ModelKind::Softmax { classes: 4 },
        ModelKind::Mlp {
            hidden: vec![3, 2],
            outputs: 4,
        },
        ModelKind::Mlp {
            hidden: vec![3],
            outputs: 1,
        },
    ];
    for kind in kinds {
        let model = random_model(kind.clone(), cols, 7);
        let labels: Vec<f64> = match &kind {
            ModelKind::Softmax { .. } | ModelKind::Mlp { outputs: 4, .. } => {
                (0..90).map(|i| ((i * 7) % 4) as f64).collect()
            }
            ModelKind::LinearRegression => (0..90).map(|i| i as f64 * 0.1 - 2.0).collect(),
            _ => (0..90).map(|i| f64::from((i * 5) % 3 == 0)).collect(),
        };
        let ps = pages(&batch, &labels, 20);
        let predictions = model.predict(&ps).unwrap();
        assert_eq!(predictions.n_rows(), 90);
        // Dense forward pass.
        for (i, row) in dense.rows().into_iter().enumerate() {
            let mut z: Vec<f64> = row.to_vec();
            for (l, layer) in model.layers().iter().enumerate() {
                if l > 0 {
                    z.iter_mut().for_each(|v| *v = 1.0 / (1.0 + (-*v).exp()));
                }
                let w = layer.weights();
                z = (0..w.ncols())
                    .map(|o| {
                        (0..w.nrows()).map(|k| z[k] * w[[k, o]]).sum::<f64>() + layer.bias()[o]
                    })
                    .collect();
            }
            for (a, b) in predictions.scores(i).iter().zip(&z) {
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{kind} row {i}: {a} vs {b}"
                );
            }
        }
        // Evaluation agrees with the model's own loss and accuracy.
        let mut ev = Evaluation::new(&kind);
        ev.add(&predictions, &labels).unwrap();
        let report = ev.report();
        let reference = model.evaluate(&ps).unwrap();
        assert_eq!(report.rows, 90);
        assert!((report.loss - reference.mean_loss()).abs() < 1e-9, "{kind}");
        if kind.is_regression() {
            assert!((report.r2.unwrap() - reference.r2()).abs() < 1e-9);
            assert!(report.accuracy.is_none() && report.confusion.is_none());
        } else {
            assert!(
                (report.accuracy.unwrap() - reference.accuracy()).abs() < 1e-12,
                "{kind}"
            );
            let confusion = report.confusion.unwrap();
            let total: u64 = confusion.iter().flatten().sum();
            let diagonal: u64 = (0..confusion.len()).map(|c| confusion[c][c]).sum();
            assert_eq!(total, 90);
            assert_eq!(diagonal, reference.correct as u64);
            // Row sums are the label counts.
            for (c, row) in confusion.iter().enumerate() {
                let n = labels
                    .iter()
                    .filter(|&&y| {
                        (if confusion.len() == 2 {
                            f64::from(y > 0.0)
                        } else {
                            y
                        }) == c as f64
                    })
                    .count();
                assert_eq!(row.iter().sum::<u64>(), n as u64, "{kind} class {c}");
            }
            if confusion.len() == 2 && predictions.outputs() == 1 {
                let ranked: Vec<(f64, bool)> = (0..90)
                    .map(|i| (predictions.scores(i)[0], labels[i] > 0.0))
                    .collect();
                assert_eq!(report.auc, brute_auc(&ranked));
            }
        }
    }
}

#[test]
fn data_of_other_columns_or_schema_is_an_error() {
    let mut model = Model::new(ModelKind::Logistic, 6, 0).unwrap();
    model.set_schema("tocpile-schema 1\nnumeric a\n");
    assert!(model
        .check_schema(6, "tocpile-schema 1\nnumeric a\n")
        .is_ok());
    assert!(model.check_schema(6, "").is_ok());
    let other = model
        .check_schema(6, "tocpile-schema 1\nnumeric b\n")
        .unwrap_err();
    assert!(other.to_string().contains("schema"), "{other}");
    let cols = model.check_schema(7, "").unwrap_err();
    assert!(cols.to_string().contains("expected 6, found 7"), "{cols}");
    let page = pages(&wide_scales(1, 5, 7), &[0.0; 5], 5);
    assert!(model.predict(&page).is_err());
}

/// On real rows: the scores of a scaled model (TOC pages, kernels) equal
/// dense math on the decoded rows, and the evaluation's AUC the pair count.
#[test]
fn predictions_on_real_datasets_are_dense_math() {
    predictions_are_dense_math(&[("census_fertility", ModelKind::Logistic)]);
}

/// As above for a multi-class model.
#[test]
#[ignore = "needs ../shared/data (mnist5k)"]
fn softmax_predictions_on_mnist5k_are_dense_math() {
    predictions_are_dense_math(&[("mnist5k", ModelKind::Softmax { classes: 10 })]);
}

fn predictions_are_dense_math(cases: &[(&str, ModelKind)]) {
    use tocpile::scale::{ColumnStats, ScaleKind};
    for (name, kind) in cases.iter().cloned() {
        let (rows, labels) = crate::support::load(name, 1500);
        let mut stats = ColumnStats::new(rows.n_cols()).unwrap();
        stats.add(&rows).unwrap();
        let mut model = random_model(kind.clone(), rows.n_cols(), 5);
        model
            .set_scaling(Some(stats.scaling(ScaleKind::MaxAbs)))
            .unwrap();
        let labels: Vec<f64> = match kind {
            ModelKind::Logistic => labels.iter().map(|&y| f64::from(y > 0.0)).collect(),
            _ => labels,
        };
        let ps = pages(&rows, &labels, 250);
        let predictions = model.predict(&ps).unwrap();
        let dense = rows.to_dense();
        let layer = &model.layers()[0];
        let expected = dense.dot(layer.weights()) + layer.bias();
        for (i, row) in expected.rows().into_iter().enumerate() {
            for (a, b) in predictions.scores(i).iter().zip(row) {
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{name} row {i}");
            }
        }
        let mut ev = Evaluation::new(&kind);
        ev.add(&predictions, &labels).unwrap();
        let report = ev.report();
        if predictions.outputs() == 1 {
            let ranked: Vec<(f64, bool)> = (0..labels.len())
                .map(|i| (predictions.scores(i)[0], labels[i] > 0.0))
                .collect();
            let (a, b) = (report.auc.unwrap(), brute_auc(&ranked).unwrap());
            assert!((a - b).abs() < 1e-12, "{name}: {a} vs {b}");
        }
        let reference = model.evaluate(&ps).unwrap();
        assert!((report.loss - reference.mean_loss()).abs() < 1e-9, "{name}");
    }
}

//! The library's training defaults: the step rule the command line uses,
//! the file's stored scaling applied, and binary labels as the user has
//! them.

use std::path::PathBuf;
use std::sync::Arc;

use crate::support::{numbers, temp_path};
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Loader, LoaderOptions};
use tocpile::model::{Model, ModelKind, Optimizer};
use tocpile::scale::ScaleKind;
use tocpile::train::{evaluate, train, Scale, TrainOptions};
use tocpile::SparseBatch;

/// `n` rows of 20 dense numeric columns whose magnitudes span 1e-2 to
/// 1e3, labelled by the sign of a fixed direction in the scaled
/// coordinates, with labels `negative` / `positive`; the file stores a
/// max-abs scaling when `scaled`.
pub fn numeric_file(n: usize, negative: f64, positive: f64, scaled: bool) -> PathBuf {
    let cols = 20;
    let magnitude: Vec<f64> = (0..cols).map(|j| 10f64.powi(j as i32 % 6 - 2)).collect();
    let direction = numbers(7, cols);
    let values = numbers(11, n * cols);
    let mut rows = SparseBatch::with_cols(cols).unwrap();
    let mut labels = Vec::with_capacity(n);
    let ids: Vec<u32> = (0..cols as u32).collect();
    for r in 0..n {
        let unit = &values[r * cols..(r + 1) * cols];
        let raw: Vec<f64> = unit.iter().zip(&magnitude).map(|(u, m)| u * m).collect();
        let margin: f64 = unit.iter().zip(&direction).map(|(u, d)| u * d).sum();
        rows.push_row(&ids, &raw).unwrap();
        labels.push(if margin > 0.1 { positive } else { negative });
    }
    let path = temp_path("numeric");
    let mut w = DatasetWriter::create(&path, cols, WriterOptions::default()).unwrap();
    if scaled {
        w.set_scaling(Some(ScaleKind::MaxAbs)).unwrap();
    }
    w.push(&rows, &labels).unwrap();
    w.finish().unwrap();
    path
}

fn sgd() -> TrainOptions {
    TrainOptions::default().with_optimizer(Optimizer::Sgd)
}

#[test]
fn default_options_are_the_command_lines() {
    let o = TrainOptions::default();
    assert_eq!(o.optimizer, Optimizer::Adam);
    assert_eq!(o.learning_rate, 0.03);
    assert_eq!(o.decay, 0.95);
    assert_eq!(o.scale, Scale::Auto);
    assert_eq!(sgd().learning_rate, 0.1);
}

/// Regression: library training ignored the scaling the file stores
/// (only the command line applied it): on numeric columns of mixed
/// magnitudes plain SGD on the raw rows stays near the majority class.
#[test]
fn training_applies_the_files_stored_scaling_by_default() {
    let path = numeric_file(4000, 0.0, 1.0, true);
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    let stored = dataset.info().scaling.clone().expect("a stored scaling");
    let accuracy = |scale: Scale| {
        let loader = Loader::new(Arc::clone(&dataset), LoaderOptions::default()).unwrap();
        let mut model = Model::new(ModelKind::Logistic, 20, 0).unwrap();
        let options = sgd().with_scale(scale);
        let _ = train(&mut model, &loader, &options, None, |_| {});
        (
            model.scaling().cloned(),
            evaluate(&model, &dataset).map(|s| s.accuracy),
        )
    };
    let (scaling, scaled) = accuracy(Scale::default());
    assert_eq!(scaling.as_ref(), Some(&stored));
    let scaled = scaled.unwrap();
    let (none, raw) = accuracy(Scale::None);
    assert_eq!(none, None);
    let raw = raw.unwrap_or(0.0);
    assert!(scaled > 0.9, "scaled {scaled}");
    assert!(scaled > raw + 0.05, "scaled {scaled} raw {raw}");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_models_own_scaling_is_kept_under_auto_and_replaced_under_stored() {
    let path = numeric_file(500, 0.0, 1.0, true);
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    let stored = dataset.info().scaling.clone().unwrap();
    let own = tocpile::scale::Scaling::new(ScaleKind::MaxAbs, vec![2.0; 20]).unwrap();
    let mut model = Model::new(ModelKind::Logistic, 20, 0).unwrap();
    model.set_scaling(Some(own.clone())).unwrap();
    assert_eq!(Scale::Auto.resolve(&model, &dataset).unwrap(), Some(own));
    assert_eq!(
        Scale::Stored.resolve(&model, &dataset).unwrap(),
        Some(stored.clone())
    );
    assert_eq!(Scale::None.resolve(&model, &dataset).unwrap(), None);
    let fitted = Scale::Fit(ScaleKind::Standard)
        .resolve(&model, &dataset)
        .unwrap();
    assert_eq!(fitted.map(|s| s.kind()), Some(ScaleKind::Standard));
    std::fs::remove_file(path).unwrap();
}

/// Trains logistic regression (or `kind`) on a file labelled
/// `negative` / `positive`; returns the model, the share of rows whose
/// predicted label (in the file's labels) is the row's label, and the
/// trainer's own accuracy figure.
fn train_labelled(kind: ModelKind, negative: f64, positive: f64) -> (Model, f64, f64) {
    let path = numeric_file(2000, negative, positive, true);
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    let loader = Loader::new(Arc::clone(&dataset), LoaderOptions::default()).unwrap();
    let mut model = Model::new(kind, 20, 0).unwrap();
    train(&mut model, &loader, &TrainOptions::default(), None, |_| {}).unwrap();
    let reported = evaluate(&model, &dataset).unwrap().accuracy;
    let (mut hits, mut rows) = (0usize, 0usize);
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b).unwrap();
        let predicted = model.predict(&block.pages().unwrap()).unwrap().labels();
        for (p, y) in predicted.iter().zip(block.labels()) {
            assert!(*p == negative || *p == positive, "prediction {p}");
            hits += usize::from(p == y);
            rows += 1;
        }
    }
    std::fs::remove_file(path).unwrap();
    (model, hits as f64 / rows as f64, reported)
}

fn assert_learns_labels(negative: f64, positive: f64) {
    for kind in [ModelKind::Logistic, ModelKind::Svm] {
        let (model, agree, reported) = train_labelled(kind.clone(), negative, positive);
        assert_eq!(
            model.binary_labels(),
            Some([negative, positive]),
            "{kind:?}"
        );
        assert!(agree > 0.85, "{kind:?} {negative}/{positive}: {agree}");
        assert!((reported - agree).abs() < 1e-9, "{reported} vs {agree}");
        // The labels survive the model file.
        let back = Model::from_bytes(&model.to_bytes()).unwrap();
        assert_eq!(back.binary_labels(), Some([negative, positive]));
        assert_eq!(back, model);
    }
}

/// Regression: labels {1, 2} were all "label > 0", so every row was
/// positive and the model constant, with accuracy 1.0 reported.
#[test]
fn labels_one_and_two_are_two_classes() {
    assert_learns_labels(1.0, 2.0);
}

#[test]
fn labels_two_and_four_are_two_classes() {
    assert_learns_labels(2.0, 4.0);
}

/// Regression: {-1, +1} trained right but predicted {0, 1}.
#[test]
fn labels_minus_one_and_one_predict_back_in_kind() {
    assert_learns_labels(-1.0, 1.0);
}

#[test]
fn labels_zero_and_one_keep_the_version_1_model_file() {
    let (model, agree, _) = train_labelled(ModelKind::Logistic, 0.0, 1.0);
    assert_eq!(model.binary_labels(), None);
    assert!(agree > 0.85, "{agree}");
    let mut bare = model.clone();
    bare.set_scaling(None).unwrap();
    assert_eq!(
        bare.to_bytes()[4],
        1,
        "version 1 without scaling, schema or labels"
    );
}

#[test]
fn binary_labels_are_refused_for_other_models_and_out_of_order() {
    let mut softmax = Model::new(ModelKind::Softmax { classes: 3 }, 4, 0).unwrap();
    assert!(softmax.set_binary_labels(Some([1.0, 2.0])).is_err());
    let mut lr = Model::new(ModelKind::Logistic, 4, 0).unwrap();
    assert!(lr.set_binary_labels(Some([2.0, 1.0])).is_err());
    assert!(lr.set_binary_labels(Some([f64::NAN, 1.0])).is_err());
    lr.set_binary_labels(Some([1.0, 2.0])).unwrap();
    assert_eq!(lr.label_of_class(1), 2.0);
    // A damaged labels section is an error, never a panic.
    let mut bytes = lr.to_bytes();
    let at = bytes.len() - 4 - 16;
    bytes[at..at + 8].copy_from_slice(&3.0f64.to_le_bytes());
    let body = bytes.len() - 4;
    let crc = crc32fast_hash(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    let err = Model::from_bytes(&bytes).unwrap_err().to_string();
    assert!(err.contains("binary labels"), "{err}");
}

fn crc32fast_hash(bytes: &[u8]) -> u32 {
    crate::support::forge::crc32(bytes)
}

/// The trainer's file path is the library's `train` with the defaults,
/// and its predictions on rows in memory are those on the file's pages.
#[test]
fn trainer_fits_files_and_rows_and_predicts_rows_without_labels() {
    let path = numeric_file(1500, 1.0, 2.0, true);
    let fitted = tocpile::train::Trainer::new(ModelKind::Logistic)
        .epochs(4)
        .seed(5)
        .fit_file(&path)
        .unwrap();
    assert_eq!(fitted.reports.len(), 4);
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    let loader = Loader::new(Arc::clone(&dataset), LoaderOptions::default().with_seed(5)).unwrap();
    let mut by_hand = Model::new(ModelKind::Logistic, 20, 5).unwrap();
    by_hand.set_schema(&dataset.info().schema);
    let options = TrainOptions::default().with_epochs(4);
    train(&mut by_hand, &loader, &options, None, |_| {}).unwrap();
    assert_eq!(fitted.model, by_hand);

    // Rows in memory: decoded from the file, predicted with no labels.
    let mut all = Vec::new();
    let mut labels = Vec::new();
    let mut rows = SparseBatch::with_cols(20).unwrap();
    for p in fitted.model.predict_dataset(&dataset).unwrap() {
        all.extend(p.unwrap().labels());
    }
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b).unwrap();
        labels.extend_from_slice(block.labels());
        for page in block.pages().unwrap() {
            for (cols, vals) in page.batch().decode().rows() {
                rows.push_row(cols, vals).unwrap();
            }
        }
    }
    assert_eq!(fitted.model.predict_rows(&rows).unwrap().labels(), all);
    let right = all.iter().zip(&labels).filter(|(p, y)| p == y).count();
    assert!(right as f64 > 0.85 * labels.len() as f64, "{right}");

    // fit_rows: the same rows through a scratch file.
    let again = tocpile::train::Trainer::new(ModelKind::Logistic)
        .epochs(4)
        .fit_rows(&rows, &labels)
        .unwrap();
    assert_eq!(again.model.binary_labels(), Some([1.0, 2.0]));
    assert!(tocpile::train::Trainer::new(ModelKind::Logistic)
        .fit_rows(&rows, &labels[1..])
        .is_err());
    std::fs::remove_file(path).unwrap();
}

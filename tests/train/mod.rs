//! The trainer end to end: loader -> encoded mini-batches -> model, on
//! real data; the same model whatever the page format or buffering;
//! divergence named.

use std::path::PathBuf;
use std::sync::Arc;

use crate::loader::write_file;
use crate::support::{load, shuffled};
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind};
use tocpile::train::{evaluate, train, TrainOptions};
use tocpile::Error;

mod defaults;
mod regression;
mod setup;
mod step;

fn mushrooms_file(format: FormatKind, page_rows: usize) -> PathBuf {
    let (rows, labels) = load("mushrooms", usize::MAX);
    let path = crate::support::temp_path(format.name());
    let options = WriterOptions::default()
        .with_page_rows(page_rows)
        .with_block_bytes(8192)
        .with_format(format);
    let mut w = DatasetWriter::create(&path, rows.n_cols(), options).unwrap();
    w.push(&rows, &labels).unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn logistic_regression_learns_mushrooms_through_corgipile() {
    let path = mushrooms_file(FormatKind::TocFull, 50);
    for mode in [Mode::Exact, Mode::Page] {
        let loader =
            Loader::open(&path, LoaderOptions::default().with_mode(mode).with_seed(3)).unwrap();
        let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
        let options = TrainOptions::default()
            .with_optimizer(tocpile::model::Optimizer::Sgd)
            .with_epochs(10)
            .with_learning_rate(1.0)
            .with_l2(1e-5);
        let mut seen = 0;
        let eval = std::sync::Arc::clone(loader.dataset());
        let reports = train(&mut model, &loader, &options, Some(&eval), |r| {
            assert_eq!(r.epoch, seen);
            seen += 1;
        })
        .unwrap();
        assert_eq!(reports.len(), 10);
        let last = reports.last().unwrap();
        assert_eq!(last.train.rows, 5644);
        assert!(last.wait_seconds <= last.seconds);
        assert!((last.learning_rate - 0.95f64.powi(9)).abs() < 1e-12);
        let eval = last.eval.unwrap();
        assert!(eval.accuracy >= 0.99, "{mode:?}: {eval:?}");
        assert!(reports[0].train.loss > last.train.loss);
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_same_model_from_every_page_format_and_buffering() {
    // No Shuffle in page mode visits the same pages in the same order in
    // every file, so the models must agree to rounding.
    let mut models = Vec::new();
    for (format, double_buffer) in [
        (FormatKind::TocFull, true),
        (FormatKind::TocFull, false),
        (FormatKind::Den, true),
        (FormatKind::Csr, true),
        (FormatKind::Gzip, false),
    ] {
        let path = mushrooms_file(format, 50);
        let loader = Loader::open(
            &path,
            LoaderOptions::default()
                .with_strategy(Strategy::NoShuffle)
                .with_mode(Mode::Page)
                .with_double_buffer(double_buffer),
        )
        .unwrap();
        let mut model = Model::new(ModelKind::Svm, 98, 0).unwrap();
        let options = TrainOptions::default()
            .with_optimizer(tocpile::model::Optimizer::Sgd)
            .with_learning_rate(TrainOptions::default().learning_rate)
            .with_epochs(1)
            .with_l2(1e-3);
        train(&mut model, &loader, &options, None, |_| {}).unwrap();
        models.push((format, model.params()));
        std::fs::remove_file(&path).unwrap();
    }
    let (_, base) = &models[0];
    for (format, params) in &models[1..] {
        let diff = base
            .iter()
            .zip(params)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(diff < 1e-9, "{format}: max difference {diff}");
    }
}

#[test]
fn divergence_names_the_epoch_and_rate() {
    let (rows, labels) = load("mushrooms", 2000);
    let rows = shuffled(&rows, 1);
    let big: Vec<f64> = labels.iter().map(|l| l * 1e150).collect();
    let path = write_file(&rows, &big, 50, 4096);
    let loader = Loader::open(&path, LoaderOptions::default()).unwrap();
    let mut model = Model::new(ModelKind::LinearRegression, 98, 0).unwrap();
    let options = TrainOptions::default()
        .with_optimizer(tocpile::model::Optimizer::Sgd)
        .with_learning_rate(10.0);
    match train(&mut model, &loader, &options, None, |_| {}) {
        Err(e @ Error::Diverged { epoch: 0, .. }) => {
            assert!(e.to_string().contains("learning rate 10"), "{e}");
        }
        other => panic!("expected divergence in epoch 0, got {other:?}"),
    }
    let bad = TrainOptions::default()
        .with_optimizer(tocpile::model::Optimizer::Sgd)
        .with_learning_rate(-1.0);
    assert!(matches!(
        train(&mut model, &loader, &bad, None, |_| {}),
        Err(Error::BadArgument { .. })
    ));
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let softmax = Model::new(ModelKind::Softmax { classes: 2 }, 98, 0).unwrap();
    assert!(matches!(
        evaluate(&softmax, &ds),
        Err(Error::BadLabel { .. })
    ));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_split_gradient_trains_the_one_thread_model() {
    // Resident pages (the default budget holds mushrooms) and page mode:
    // the epochs run inline, so with two cores the gradient is shared
    // with a helper thread. The model must be the one-thread model up to
    // rounding, for each linear model.
    let path = mushrooms_file(FormatKind::TocFull, 50);
    let loader = Loader::open(
        &path,
        LoaderOptions::default().with_mode(Mode::Page).with_seed(5),
    )
    .unwrap();
    for kind in [
        ModelKind::Logistic,
        ModelKind::Svm,
        ModelKind::LinearRegression,
    ] {
        let run = |split_gradient| {
            let mut model = Model::new(kind.clone(), 98, 0).unwrap();
            let options = TrainOptions::default()
                .with_optimizer(tocpile::model::Optimizer::Sgd)
                .with_epochs(3)
                .with_learning_rate(0.05)
                .with_split_gradient(split_gradient);
            let reports = train(&mut model, &loader, &options, None, |_| {}).unwrap();
            (model.params(), reports.last().unwrap().train)
        };
        let ((one, one_score), (two, two_score)) = (run(false), run(true));
        assert_eq!(one_score.rows, two_score.rows);
        assert!((one_score.loss - two_score.loss).abs() < 1e-9, "{kind}");
        for (i, (a, b)) in one.iter().zip(&two).enumerate() {
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(1.0),
                "{kind}: parameter {i}: {a} {b}"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// The same seed and options give the same model bits whether the file's
/// blocks stay resident or stream every epoch: with a buffer size given,
/// the memory budget (which the command line sizes from the memory
/// available) changes where bytes come from, never the order of the rows
/// or of the sums. (The default buffer, `Buffer::Auto`, is the whole file
/// when it fits the budget: there the budget chooses the buffer.)
#[test]
fn the_model_bits_do_not_depend_on_the_memory_budget() {
    let path = mushrooms_file(FormatKind::TocFull, 50);
    for mode in [Mode::Exact, Mode::Page] {
        let bits: Vec<Vec<u8>> = [0, 1 << 30]
            .into_iter()
            .map(|memory| {
                let loader = Loader::open(
                    &path,
                    LoaderOptions::default()
                        .with_mode(mode)
                        .with_buffer(Buffer::Fraction(0.1))
                        .with_seed(5)
                        .with_memory(memory),
                )
                .unwrap();
                let mut model = Model::new(ModelKind::Logistic, 98, 0).unwrap();
                let options = TrainOptions::default()
                    .with_epochs(3)
                    .with_split_gradient(true);
                train(&mut model, &loader, &options, None, |_| {}).unwrap();
                model.to_bytes()
            })
            .collect();
        assert!(bits[0] == bits[1], "{mode:?}: streamed and resident differ");
    }
}

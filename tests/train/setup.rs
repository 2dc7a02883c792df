//! The set-up the command line, Python and the library share through
//! `Trainer`: class inference, the held-out split, the evaluation set,
//! the warm start and the label sample of the binary-model warning; each
//! gives the model the steps written out by hand give.

use std::sync::Arc;

use super::defaults::numeric_file;
use crate::support::temp_path;
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind};
use tocpile::scale::ScaleKind;
use tocpile::train::{
    infer_kind, label_sample, train, Holdout, Scale, TrainOptions, TrainWarning, Trainer,
};
use tocpile::{Error, SparseBatch};

/// `labels.len()` rows of one column (the row number) with these labels.
fn labelled(labels: &[f64]) -> Arc<Dataset> {
    let mut rows = SparseBatch::with_cols(1).unwrap();
    for r in 0..labels.len() {
        rows.push_row(&[0], &[1.0 + r as f64]).unwrap();
    }
    let path = temp_path("labels");
    let mut w = DatasetWriter::create(&path, 1, WriterOptions::default()).unwrap();
    w.push(&rows, labels).unwrap();
    w.finish().unwrap();
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    dataset
}

/// `model` trained by hand on `dataset` as the trainer trains: seed 3,
/// three epochs, the default options.
fn by_hand(mut model: Model, dataset: &Arc<Dataset>, eval: Option<&Arc<Dataset>>) -> Model {
    model.set_schema(&dataset.info().schema);
    let options = LoaderOptions::default().with_seed(3);
    let loader = Loader::new(Arc::clone(dataset), options).unwrap();
    let options = TrainOptions::default().with_epochs(3);
    train(&mut model, &loader, &options, eval, |_| {}).unwrap();
    model
}

#[test]
fn holdout_eval_and_warm_start_are_the_steps_written_out() {
    let path = numeric_file(1200, 0.0, 1.0, true);
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    let trainer = Trainer::new(ModelKind::Logistic).epochs(3).seed(3);

    // Holdout: the split by hand, each part max-abs scaled as the file.
    let mut epochs = 0;
    let fitted = trainer
        .clone()
        .holdout(0.25)
        .fit_with(&dataset, |_| epochs += 1)
        .unwrap();
    assert_eq!(epochs, 3);
    let split = Holdout::split(&dataset, 0.25, 3, Some(ScaleKind::MaxAbs)).unwrap();
    let (train_rows, test_rows) = (split.infos().0.n_rows, split.infos().1.n_rows);
    assert_eq!(train_rows + test_rows, 1200);
    assert!(test_rows > 200 && test_rows < 400, "{test_rows}");
    let start = Model::new(ModelKind::Logistic, 20, 3).unwrap();
    let expected = by_hand(start.clone(), split.train(), Some(split.test()));
    assert_eq!(fitted.model, expected);
    let eval = fitted.reports.last().unwrap().eval.unwrap();
    assert_eq!(eval.rows, test_rows);
    assert!(eval.accuracy > 0.8, "{eval:?}");

    // An evaluation set: every row scored after each epoch.
    let fitted = trainer
        .clone()
        .eval(Arc::clone(split.test()))
        .fit(split.train())
        .unwrap();
    assert_eq!(fitted.model, expected);
    assert_eq!(fitted.reports[2].eval.unwrap(), eval);

    // A warm start continues from the model given.
    let again = trainer
        .clone()
        .warm_start(expected.clone())
        .fit(split.train())
        .unwrap();
    assert_eq!(again.model, by_hand(expected, split.train(), None));

    // Refused: holdout with eval, a share that empties a side, a warm
    // start of other columns.
    let both = trainer.clone().holdout(0.2).eval(Arc::clone(split.test()));
    assert!(matches!(both.fit(&dataset), Err(Error::BadArgument { .. })));
    let tiny = labelled(&[0.0, 1.0]);
    let emptied = trainer.clone().holdout(0.01).fit(&tiny);
    assert!(
        matches!(
            emptied,
            Err(Error::EmptySplit {
                train_rows: 2,
                test_rows: 0,
                ..
            })
        ),
        "{emptied:?}"
    );
    let other = Model::new(ModelKind::Logistic, 5, 0).unwrap();
    let wrong = trainer.warm_start(other).fit(&dataset);
    assert!(
        matches!(wrong, Err(Error::LengthMismatch { .. })),
        "{wrong:?}"
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn classes_are_inferred_from_the_labels_once_for_every_front_end() {
    let three = labelled(&[0.0, 2.0, 1.0, 2.0]);
    assert_eq!(
        infer_kind("softmax", None, &three).unwrap(),
        ModelKind::Softmax { classes: 3 }
    );
    assert_eq!(
        infer_kind("softmax", Some(5), &three).unwrap(),
        ModelKind::Softmax { classes: 5 }
    );
    assert_eq!(infer_kind("LR", None, &three).unwrap(), ModelKind::Logistic);
    let trainer = Trainer::for_dataset("softmax", None, &three).unwrap();
    assert_eq!(trainer.kind(), &ModelKind::Softmax { classes: 3 });
    // A binary network takes -1/+1 labels.
    let signs = labelled(&[-1.0, 1.0, 1.0]);
    assert_eq!(infer_kind("mlp", None, &signs).unwrap(), ModelKind::mlp(2));
    // A label that is no class index names its row.
    let bad = labelled(&[0.0, 1.0, 1.5]);
    match infer_kind("softmax", None, &bad) {
        Err(Error::BadValue { row, found, .. }) => assert_eq!((row, found.as_str()), (2, "1.5")),
        other => panic!("{other:?}"),
    }
    // The warning's sample: distinct labels in the order met, at most 3.
    assert_eq!(label_sample(&three, 3).unwrap(), vec![0.0, 2.0, 1.0]);
    assert_eq!(label_sample(&three, 2).unwrap(), vec![0.0, 2.0]);
    assert_eq!(label_sample(&signs, 3).unwrap(), vec![-1.0, 1.0]);
}

#[test]
fn prepare_sets_up_what_fit_trains_one_model_per_strategy() {
    let path = numeric_file(1200, 0.0, 1.0, true);
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    let trainer = Trainer::new(ModelKind::Logistic).epochs(2).seed(5);
    let strategies = [
        Strategy::CorgiPile,
        Strategy::NoShuffle,
        Strategy::BlockOnly,
    ];
    let prepared = trainer
        .clone()
        .strategies(strategies)
        .prepare(&dataset)
        .unwrap();
    // The start model: the file's stored scaling, resolved once.
    assert_eq!(
        prepared.model().scaling().map(|s| s.kind()),
        Some(ScaleKind::MaxAbs)
    );
    assert_eq!(prepared.options().scale, Scale::Model);
    let loaders: Vec<Strategy> = prepared
        .loaders()
        .iter()
        .map(|l| l.options().strategy)
        .collect();
    assert_eq!(loaders, strategies);
    // Budgets chosen by default, and given to the loaders.
    assert!(prepared.memory_budgets().iter().all(Option::is_some));
    for (l, b) in prepared.loaders().iter().zip(prepared.memory_budgets()) {
        assert_eq!(l.options().memory, b.as_ref().map(|b| b.bytes));
    }
    assert_eq!(prepared.warnings().unwrap(), []);
    let mut seen = Vec::new();
    let fitted = prepared.fit(|s, r| seen.push((s, r.epoch))).unwrap();
    assert_eq!(seen.len(), 6);
    assert_eq!(seen[2], (Strategy::NoShuffle, 0));
    // Each strategy's model is the one a trainer of that strategy alone
    // fits: the same start, the same steps.
    for (f, s) in fitted.iter().zip(strategies) {
        assert_eq!(f.strategy, s);
        let alone = trainer
            .clone()
            .loader(LoaderOptions::default().with_strategy(s))
            .fit(&dataset)
            .unwrap();
        assert_eq!(f.model, alone.model, "{s}");
        assert_eq!(f.reports.len(), 2);
    }
    assert_ne!(fitted[0].model, fitted[1].model);
    // `fit` with several strategies: the first one's.
    let first = trainer
        .clone()
        .strategies(strategies)
        .fit(&dataset)
        .unwrap();
    assert_eq!(first.model, fitted[0].model);
    // A budget given is the loaders', none chosen.
    let given = trainer
        .clone()
        .loader(LoaderOptions::default().with_memory(1 << 20))
        .prepare(&dataset)
        .unwrap();
    assert_eq!(given.memory_budgets(), [None]);
    assert_eq!(given.loaders()[0].options().memory, Some(1 << 20));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn warnings_name_labels_a_classifier_cannot_use_and_risky_loaders() {
    let classes = labelled(&[0.0, 2.0, 1.0, 2.0]);
    let warnings = |kind: ModelKind, ds: &Arc<Dataset>, loader: LoaderOptions| {
        Trainer::new(kind)
            .loader(loader)
            .prepare(ds)
            .unwrap()
            .warnings()
            .unwrap()
    };
    let rows_shuffled = LoaderOptions::default().with_mode(Mode::Exact);
    match &warnings(ModelKind::Logistic, &classes, rows_shuffled.clone())[..] {
        [TrainWarning::MoreThanTwoLabels { model, first, .. }] => {
            assert_eq!((*model, *first), ("lr", [0.0, 2.0, 1.0]))
        }
        other => panic!("{other:?}"),
    }
    let classes_ok = ModelKind::Softmax { classes: 3 };
    assert_eq!(warnings(classes_ok, &classes, rows_shuffled.clone()), []);
    let prices = labelled(&[0.5, 1.25, 2.5, 0.5]);
    match &warnings(ModelKind::Svm, &prices, rows_shuffled.clone())[..] {
        [w @ TrainWarning::RegressionLabels {
            distinct: 3,
            more: false,
            ..
        }] => assert!(
            w.to_string().contains("look like a regression target"),
            "{w}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        warnings(ModelKind::LinearRegression, &prices, rows_shuffled),
        []
    );
    // Single-page mini-batches in page mode: the loader's warning.
    let pages = LoaderOptions::default()
        .with_mode(Mode::Page)
        .with_batch_rows(1);
    match &warnings(ModelKind::LinearRegression, &prices, pages)[..] {
        [TrainWarning::Loader { strategy, message }] => {
            assert_eq!(*strategy, Strategy::CorgiPile);
            assert!(
                message.contains("a mini-batch holds a single page"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

//! `Sgd`, the step-by-step trainer for mini-batches the caller makes,
//! against the trainer over a dataset file: the same rows in the same
//! mini-batches give the same model bytes (what the PostgreSQL extension
//! relies on to train as the command line does).

use std::sync::Arc;

use crate::support::temp_path;
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::loader::{LoaderOptions, Strategy};
use tocpile::model::{Model, ModelKind, Optimizer};
use tocpile::rng::Rng;
use tocpile::scale::{ColumnStats, ScaleKind};
use tocpile::train::{LabelSummary, Scale, Sgd, TrainOptions, Trainer};
use tocpile::{Error, Page, SparseBatch};

const COLS: usize = 5;

/// `n` sparse rows of five columns of different magnitudes (a third of
/// the values zero) and their labels, `label(x)`.
fn rows(
    n: usize,
    seed: u64,
    label: impl Fn(&[f64; COLS], &mut Rng) -> f64,
) -> Vec<([f64; COLS], f64)> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let mut x = [0.0; COLS];
            for (j, v) in x.iter_mut().enumerate() {
                if rng.unit() > 0.33 {
                    *v = (2.0 * rng.unit() - 1.0) * 10f64.powi(j as i32 - 1);
                }
            }
            let y = label(&x, &mut rng);
            (x, y)
        })
        .collect()
}

fn sparse(rows: &[([f64; COLS], f64)]) -> SparseBatch {
    let mut batch = SparseBatch::with_cols(COLS).unwrap();
    for (x, _) in rows {
        let cols: Vec<u32> = (0..COLS as u32).filter(|&j| x[j as usize] != 0.0).collect();
        let values: Vec<f64> = cols.iter().map(|&j| x[j as usize]).collect();
        batch.push_row(&cols, &values).unwrap();
    }
    batch
}

fn labels(rows: &[([f64; COLS], f64)]) -> Vec<f64> {
    rows.iter().map(|r| r.1).collect()
}

/// The rows as `tocpile encode` writes them: 50-row pages in 4 KiB
/// blocks (several blocks, so several loader buffers), a max-abs scaling
/// stored.
fn file(rows: &[([f64; COLS], f64)]) -> Arc<Dataset> {
    let path = temp_path("step");
    let options = WriterOptions::default()
        .with_page_rows(50)
        .with_block_bytes(4096);
    let mut w = DatasetWriter::create(&path, COLS, options).unwrap();
    w.set_scaling(Some(ScaleKind::MaxAbs)).unwrap();
    w.push(&sparse(rows), &labels(rows)).unwrap();
    w.finish().unwrap();
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    assert!(dataset.n_blocks() > 3, "{} blocks", dataset.n_blocks());
    dataset
}

/// `Sgd` over `rows` in order, `batch` rows a mini-batch (one CSR page
/// each, the last short), the scaling fitted block by block as the
/// extension fits it.
fn stepped(
    kind: ModelKind,
    options: &TrainOptions,
    rows: &[([f64; COLS], f64)],
    batch: usize,
) -> (Model, Vec<f64>) {
    let mut stats = ColumnStats::new(COLS).unwrap();
    let mut summary = LabelSummary::new();
    for chunk in rows.chunks(333) {
        stats.add(&sparse(chunk)).unwrap();
        summary.add(&labels(chunk));
    }
    let mut model = Model::new(kind, COLS, 7).unwrap();
    model
        .set_scaling(Some(stats.scaling(ScaleKind::MaxAbs)))
        .unwrap();
    let mut sgd = Sgd::new(model, options, &summary).unwrap();
    let mut losses = Vec::new();
    for epoch in 0..options.epochs {
        assert_eq!(sgd.epoch(), epoch);
        for chunk in rows.chunks(batch) {
            let page = Page::encode(FormatKind::Csr, &sparse(chunk), &labels(chunk)).unwrap();
            sgd.step(&[page]).unwrap();
        }
        let score = sgd.end_epoch().unwrap();
        assert_eq!(score.steps, rows.len().div_ceil(batch));
        assert_eq!(score.train.rows, rows.len() as u64);
        losses.push(score.train.loss);
    }
    (sgd.into_model(), losses)
}

#[test]
fn sgd_over_the_rows_in_order_is_the_trainer_over_the_file_bit_for_bit() {
    type Label = fn(&[f64; COLS], &mut Rng) -> f64;
    let margin: Label = |x, _| f64::from(x[0] * 10.0 + x[1] - x[3] / 10.0 > 0.0);
    let plus_minus: Label = |x, _| if x[2] - x[0] * 10.0 > 0.1 { 1.0 } else { -1.0 };
    let three: Label = |x, _| ((x[0] * 10.0 + 1.0).clamp(0.0, 2.0)).floor();
    let value: Label = |x, rng| 300.0 + 40.0 * x[1] - 2.0 * x[4] + rng.unit();
    let cases: [(ModelKind, Label, Optimizer); 6] = [
        (ModelKind::Logistic, margin, Optimizer::Adam),
        (ModelKind::Logistic, margin, Optimizer::Sgd),
        // Labels -1 and +1: the binary labels the trainer finds.
        (ModelKind::Svm, plus_minus, Optimizer::AdaGrad),
        // A target in the hundreds: the standardised target.
        (ModelKind::LinearRegression, value, Optimizer::Adam),
        (ModelKind::Softmax { classes: 3 }, three, Optimizer::Adam),
        (
            ModelKind::from_name("mlp", 3).unwrap(),
            three,
            Optimizer::Adam,
        ),
    ];
    for (case, (kind, label, rule)) in cases.into_iter().enumerate() {
        let data = rows(2_345, case as u64, label);
        let dataset = file(&data);
        let options = TrainOptions::default().with_optimizer(rule).with_epochs(3);
        let fitted = Trainer::new(kind.clone())
            .options(options.clone())
            .loader(LoaderOptions::default().with_strategy(Strategy::NoShuffle))
            .batch_rows(64)
            .seed(7)
            .fit(&dataset)
            .unwrap();
        let (model, losses) = stepped(kind.clone(), &options, &data, 64);
        assert!(
            model.to_bytes() == fitted.model.to_bytes(),
            "{kind} {rule:?}: the models differ"
        );
        let trainer_losses: Vec<f64> = fitted.reports.iter().map(|r| r.train.loss).collect();
        assert_eq!(losses, trainer_losses, "{kind} {rule:?}");
    }
}

#[test]
fn sgd_refuses_what_it_cannot_do_and_names_divergence() {
    let data = rows(500, 1, |x, _| f64::from(x[0] > 0.0));
    let mut summary = LabelSummary::new();
    summary.add(&labels(&data));
    let model = || Model::new(ModelKind::Logistic, COLS, 0).unwrap();
    let bad = |options: TrainOptions| {
        matches!(
            Sgd::new(model(), &options, &summary),
            Err(Error::BadArgument { .. })
        )
    };
    assert!(bad(TrainOptions::default().with_epochs(0)));
    assert!(bad(TrainOptions::default().with_learning_rate(0.0)));
    assert!(bad(TrainOptions::default().with_scale(Scale::Stored)));
    assert!(bad(
        TrainOptions::default().with_scale(Scale::Fit(ScaleKind::MaxAbs))
    ));
    // One epoch: after it, steps are refused.
    let mut sgd = Sgd::new(model(), &TrainOptions::default().with_epochs(1), &summary).unwrap();
    let page = Page::encode(FormatKind::Csr, &sparse(&data), &labels(&data)).unwrap();
    sgd.step(std::slice::from_ref(&page)).unwrap();
    sgd.end_epoch().unwrap();
    assert!(matches!(sgd.step(&[page]), Err(Error::BadArgument { .. })));
    assert!(matches!(sgd.end_epoch(), Err(Error::BadArgument { .. })));
    // A loss that is not finite: divergence, named.
    let huge: Vec<f64> = labels(&data).iter().map(|y| y * 1e150).collect();
    let mut summary = LabelSummary::new();
    summary.add(&huge);
    let linear = Model::new(ModelKind::LinearRegression, COLS, 0).unwrap();
    let options = TrainOptions::default()
        .with_optimizer(Optimizer::Sgd)
        .with_learning_rate(10.0);
    let mut sgd = Sgd::new(linear, &options, &summary).unwrap();
    for chunk in data.chunks(50) {
        let ys: Vec<f64> = labels(chunk).iter().map(|y| y * 1e150).collect();
        sgd.step(&[Page::encode(FormatKind::Csr, &sparse(chunk), &ys).unwrap()])
            .unwrap();
    }
    match sgd.end_epoch() {
        Err(e @ Error::Diverged { epoch: 0, .. }) => {
            assert!(e.to_string().contains("learning rate 10"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // Pages of other columns: the model's error, the model unchanged.
    let mut sgd = Sgd::new(model(), &TrainOptions::default(), &summary).unwrap();
    let before = sgd.model().to_bytes();
    let wide = SparseBatch::from_dense_rows(COLS + 1, &[[1.0; COLS + 1]]).unwrap();
    let wide = Page::encode(FormatKind::Csr, &wide, &[1.0]).unwrap();
    assert!(sgd.step(&[wide]).is_err());
    assert!(sgd.model().to_bytes() == before);
}

#[test]
fn a_label_summary_counts_distinct_labels_and_their_moments() {
    let mut s = LabelSummary::new();
    assert_eq!(s.moments(), None);
    s.add(&[2.0, 4.0, 2.0]);
    s.add(&[4.0, 0.0, -0.0, 7.0]);
    assert_eq!(s.rows(), 7);
    assert_eq!(s.distinct(), [2.0, 4.0, 0.0]);
    let (mean, spread) = s.moments().unwrap();
    let ys = [2.0, 4.0, 2.0, 4.0, 0.0, 0.0, 7.0];
    let m = ys.iter().sum::<f64>() / 7.0;
    let sd = (ys.iter().map(|y| (y - m) * (y - m)).sum::<f64>() / 7.0).sqrt();
    assert!((mean - m).abs() < 1e-12 && (spread - sd).abs() < 1e-12);
    s.add(&[f64::NAN, 1.0]);
    assert_eq!(s.moments(), None);
    assert_eq!(s.rows(), 9);
}

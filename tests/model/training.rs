//! Training on the shared datasets: simple seeded loops over 250-row (or
//! smaller) pages, one model step per mini-batch of pages.

use tocpile::formats::FormatKind;
use tocpile::model::{Gradient, Metrics, Model, ModelKind};
use tocpile::{Page, SparseBatch};

use super::{encode_all, pages_of, random_batch};
use crate::support::{batches, load};

/// Rows and labels permuted together by a seeded Fisher-Yates shuffle.
fn shuffle_rows(batch: &SparseBatch, labels: &[f64], seed: u64) -> (SparseBatch, Vec<f64>) {
    let mut order: Vec<usize> = (0..batch.n_rows()).collect();
    let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
    for i in (1..order.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        order.swap(i, (s % (i as u64 + 1)) as usize);
    }
    let mut out = SparseBatch::with_cols(batch.n_cols()).unwrap();
    for &r in &order {
        let (c, v) = batch.row(r);
        out.push_row(c, v).unwrap();
    }
    (out, order.iter().map(|&r| labels[r]).collect())
}

/// `rows` shuffled rows of a dataset as TOC pages of `page_rows` rows,
/// values multiplied by `scale`, with their labels.
fn dataset_pages(name: &str, rows: usize, page_rows: usize, scale: f64) -> Vec<Page> {
    let (batch, labels) = load(name, usize::MAX);
    let (batch, labels) = shuffle_rows(&batch, &labels, 42);
    let batch = batch.slice_rows(0..rows.min(batch.n_rows()));
    batches(&batch, page_rows)
        .iter()
        .zip(labels[..batch.n_rows()].chunks(page_rows))
        .map(|(b, labels)| {
            let mut encoded = FormatKind::TocFull.encode(b).unwrap();
            if scale != 1.0 {
                encoded.scale(scale);
            }
            Page::new(encoded, labels).unwrap()
        })
        .collect()
}

/// `epochs` epochs of mini-batches of `k` pages in a fixed order, the
/// learning rate decaying by `decay` per epoch; returns the metrics of
/// each epoch (figures taken at the parameters each step started from).
fn train(
    model: &mut Model,
    pages: &[Page],
    k: usize,
    epochs: usize,
    lr: f64,
    decay: f64,
    l2: f64,
) -> Vec<Metrics> {
    let mut grad = Gradient::new(model);
    let mut lr = lr;
    (0..epochs)
        .map(|_| {
            let mut metrics = Metrics::new(model.kind());
            for batch in pages.chunks(k) {
                metrics.add(&model.gradient(batch, l2, &mut grad).unwrap());
                model.step(&grad, lr);
            }
            lr *= decay;
            metrics
        })
        .collect()
}

#[test]
fn logistic_regression_learns_mushrooms() {
    let pages = dataset_pages("mushrooms", usize::MAX, 250, 1.0);
    let mut model = Model::new(ModelKind::Logistic, 98, 1).unwrap();
    let epochs = train(&mut model, &pages, 1, 10, 1.0, 0.95, 1e-5);
    assert!(epochs.last().unwrap().mean_loss() < epochs[0].mean_loss());
    let stats = model.evaluate(&pages).unwrap();
    assert_eq!(stats.rows, 5644);
    assert!(
        stats.accuracy() >= 0.99,
        "training accuracy {}",
        stats.accuracy()
    );
}

#[test]
fn svm_learns_mushrooms() {
    let pages = dataset_pages("mushrooms", usize::MAX, 250, 1.0);
    let mut model = Model::new(ModelKind::Svm, 98, 1).unwrap();
    train(&mut model, &pages, 1, 6, 0.1, 0.95, 1e-4);
    let stats = model.evaluate(&pages).unwrap();
    assert!(
        stats.accuracy() >= 0.97,
        "training accuracy {}",
        stats.accuracy()
    );
}

#[test]
#[ignore = "needs ../shared/data (mnist5k)"]
fn mlp_loss_decreases_on_mnist() {
    let pages = dataset_pages("mnist5k", 400, 50, 1.0 / 255.0);
    let mut model = Model::new(ModelKind::mlp(10), 784, 7).unwrap();
    let before = model.evaluate(&pages).unwrap();
    // Two pages per mini-batch: the pages run in parallel.
    train(&mut model, &pages, 2, 15, 2.0, 0.95, 1e-5);
    let after = model.evaluate(&pages).unwrap();
    assert!(
        after.mean_loss() < 0.8 * before.mean_loss(),
        "loss {} -> {}",
        before.mean_loss(),
        after.mean_loss()
    );
}

#[test]
#[ignore = "needs ../shared/data (mnist5k)"]
fn softmax_learns_mnist() {
    let pages = dataset_pages("mnist5k", 1000, 100, 1.0 / 255.0);
    let mut model = Model::new(ModelKind::Softmax { classes: 10 }, 784, 0).unwrap();
    train(&mut model, &pages, 1, 5, 0.2, 0.95, 1e-4);
    let stats = model.evaluate(&pages).unwrap();
    assert!(
        stats.accuracy() >= 0.7,
        "training accuracy {}",
        stats.accuracy()
    );
}

#[test]
fn linear_regression_metrics_report_r2() {
    // Labels an exact linear function of random features: R^2 -> 1.
    let batches: Vec<SparseBatch> = (0..4).map(|i| random_batch(90 + i, 250, 6)).collect();
    let truth = [0.5, -1.0, 2.0, 0.0, 0.25, -0.75];
    let labels: Vec<Vec<f64>> = batches
        .iter()
        .map(|b| {
            b.rows()
                .map(|(c, v)| {
                    3.0 + c
                        .iter()
                        .zip(v)
                        .map(|(&c, &v)| v * truth[c as usize])
                        .sum::<f64>()
                })
                .collect()
        })
        .collect();
    let pages = pages_of(&encode_all(&batches, FormatKind::TocFull), &labels);
    let mut model = Model::new(ModelKind::LinearRegression, 6, 0).unwrap();
    let epochs = train(&mut model, &pages, 1, 80, 0.05, 1.0, 0.0);
    let last = epochs.last().unwrap();
    assert_eq!(last.accuracy(), None);
    let r2 = last.r2().unwrap();
    assert!(r2 > 0.99, "R^2 {r2}");
    assert!(epochs[0].r2().unwrap() < r2);
    let w = model.layers()[0].weights();
    for (c, &t) in truth.iter().enumerate() {
        assert!(
            (w[[c, 0]] - t).abs() < 0.05,
            "weight {c}: {} vs {t}",
            w[[c, 0]]
        );
    }
}

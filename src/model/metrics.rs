//! What `evaluate` reports on labelled rows from a model's
//! [`Predictions`]: mean loss, accuracy, the area under the ROC curve of a
//! binary classifier, the confusion matrix of a classifier and R^2 of a
//! regression.
//!
//! The loss is the training loss of the model's kind (log-loss, hinge,
//! half the squared error, cross-entropy), computed from the scores with
//! the same stable formulas as the gradient code, so it matches
//! [`Model::evaluate`](super::Model::evaluate). AUC is the Mann-Whitney
//! statistic: the share of (positive, negative) pairs the scores order
//! correctly, ties counting half, computed by one sort (`O(n log n)`;
//! the scores of every row are kept, 16 bytes a row).

use super::{softplus, ModelKind, Predictions};
use crate::error::{Error, Result};

/// Accumulates predictions and labels, page by page.
#[derive(Debug, Clone)]
pub struct Evaluation {
    kind: ModelKind,
    classes: usize,
    rows: u64,
    loss_sum: f64,
    correct: u64,
    confusion: Vec<u64>,
    /// (score, positive) of every row, binary classifiers only.
    ranked: Vec<(f64, bool)>,
    labels: Vec<f64>,
    sse: f64,
}

/// The figures of an [`Evaluation`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EvaluationReport {
    /// Rows evaluated.
    pub rows: u64,
    /// Mean loss per row.
    pub loss: f64,
    /// Share of rows classified correctly (classifiers).
    pub accuracy: Option<f64>,
    /// Area under the ROC curve (binary classifiers, when both classes
    /// occur).
    pub auc: Option<f64>,
    /// `confusion[label][predicted]` counts (classifiers; binary labels
    /// as 0 and 1).
    pub confusion: Option<Vec<Vec<u64>>>,
    /// Coefficient of determination (regression; `NaN` when the labels do
    /// not vary).
    pub r2: Option<f64>,
}

impl Evaluation {
    /// An empty evaluation for a model of `kind`.
    pub fn new(kind: &ModelKind) -> Evaluation {
        let classes = match kind {
            ModelKind::LinearRegression => 0,
            ModelKind::Softmax { classes } => *classes,
            ModelKind::Mlp { outputs, .. } if *outputs > 1 => *outputs,
            _ => 2,
        };
        Evaluation {
            kind: kind.clone(),
            classes,
            rows: 0,
            loss_sum: 0.0,
            correct: 0,
            confusion: vec![0; classes * classes],
            ranked: Vec::new(),
            labels: Vec::new(),
            sse: 0.0,
        }
    }

    /// Adds rows: their predictions and labels (binary models take a label
    /// `> 0` as positive; multi-class models a class index).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless there is one label per row;
    /// [`Error::BadLabel`] for a label the model cannot use (row numbered
    /// within this call, page 0).
    pub fn add(&mut self, predictions: &Predictions, labels: &[f64]) -> Result<()> {
        if labels.len() != predictions.n_rows() {
            return Err(Error::LengthMismatch {
                what: "labels evaluated (one per row)",
                expected: predictions.n_rows() as u64,
                found: labels.len() as u64,
            });
        }
        for (i, &label) in labels.iter().enumerate() {
            let bad = |expected: String| Error::BadLabel {
                page: 0,
                row: i,
                label,
                expected,
            };
            if !label.is_finite() {
                return Err(bad("a finite number".into()));
            }
            let s = predictions.scores(i);
            let loss = match (&self.kind, s.len()) {
                (ModelKind::LinearRegression, _) => {
                    let r = s[0] - label;
                    self.sse += r * r;
                    self.labels.push(label);
                    0.5 * r * r
                }
                (_, 1) => {
                    let positive = label > 0.0;
                    let y = if positive { 1.0 } else { -1.0 };
                    let m = y * s[0];
                    self.ranked.push((s[0], positive));
                    let predicted = usize::from(s[0] > 0.0);
                    self.count(usize::from(positive), predicted);
                    if matches!(self.kind, ModelKind::Svm) {
                        (1.0 - m).max(0.0)
                    } else {
                        softplus(-m)
                    }
                }
                _ => {
                    let c = self.classes;
                    if label < 0.0 || label >= c as f64 || label.fract() != 0.0 {
                        return Err(bad(format!("a class index in 0..{c}")));
                    }
                    let class = label as usize;
                    let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let lse = max + s.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
                    let predicted = predictions.class(i).unwrap_or(0);
                    self.count(class, predicted);
                    lse - s[class]
                }
            };
            self.loss_sum += loss;
            self.rows += 1;
        }
        Ok(())
    }

    fn count(&mut self, label: usize, predicted: usize) {
        self.confusion[label * self.classes + predicted] += 1;
        if label == predicted {
            self.correct += 1;
        }
    }

    /// The figures so far.
    pub fn report(&self) -> EvaluationReport {
        let n = self.rows.max(1) as f64;
        let classifier = !self.kind.is_regression();
        let r2 = (!classifier).then(|| {
            let mean = self.labels.iter().sum::<f64>() / self.labels.len().max(1) as f64;
            let sst: f64 = self.labels.iter().map(|y| (y - mean) * (y - mean)).sum();
            if sst > 0.0 {
                1.0 - self.sse / sst
            } else {
                f64::NAN
            }
        });
        EvaluationReport {
            rows: self.rows,
            loss: self.loss_sum / n,
            accuracy: classifier.then(|| self.correct as f64 / n),
            auc: if self.ranked.is_empty() {
                None
            } else {
                auc(&self.ranked)
            },
            confusion: classifier.then(|| {
                self.confusion
                    .chunks(self.classes.max(1))
                    .map(<[u64]>::to_vec)
                    .collect()
            }),
            r2,
        }
    }
}

/// The area under the ROC curve of `(score, positive)` pairs: the share of
/// (positive, negative) pairs whose positive scores higher, a tie counting
/// half (the Mann-Whitney U statistic over their product). `None` unless
/// both classes occur and every score is a number: a NaN score is ordered
/// neither above nor below any other, so no area is defined. (Models
/// with finite parameters give NaN scores on finite data only by
/// overflow, and [`Model::predict`](super::Model::predict) reports those.)
/// Infinite scores rank as the largest and smallest.
pub fn auc(ranked: &[(f64, bool)]) -> Option<f64> {
    let positives = ranked.iter().filter(|r| r.1).count() as f64;
    let negatives = ranked.len() as f64 - positives;
    if positives == 0.0 || negatives == 0.0 || ranked.iter().any(|r| r.0.is_nan()) {
        return None;
    }
    let mut sorted = ranked.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Sum of the positives' ranks (1-based), tied scores sharing the mean
    // rank of their group.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        // Each group holds at least its first score: the loop advances
        // whatever the scores compare like.
        let mut j = i + 1;
        while j < sorted.len() && sorted[j].0 == sorted[i].0 {
            j += 1;
        }
        let mean_rank = (i + 1 + j) as f64 / 2.0;
        let pos = sorted[i..j].iter().filter(|r| r.1).count() as f64;
        rank_sum += pos * mean_rank;
        i = j;
    }
    Some((rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives))
}

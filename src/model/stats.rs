//! Loss, accuracy and R^2 figures of a batch ([`BatchStats`]) and of an
//! epoch ([`Metrics`]). CorgiPile section 7.4.2 reports R^2 (the
//! coefficient of determination) for linear regression and accuracy for
//! the classifiers; so does [`Metrics`].
//!
//! R^2 needs the spread of the labels around their mean over the whole
//! epoch. Rather than the sums of `y` and `y^2`, which cancel badly when
//! labels are large and close together, each batch keeps its label mean
//! and sum of squared deviations and batches are merged with the pairwise
//! update of Chan, Golub and LeVeque (1979).

use super::ModelKind;

/// Figures of the rows of one mini-batch under the parameters the
/// gradient was taken at.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchStats {
    /// Rows.
    pub rows: usize,
    /// Sum of the per-row losses (the L2 penalty excluded).
    pub loss_sum: f64,
    /// Rows whose predicted class is the label's (classifiers; 0 for
    /// regression).
    pub correct: usize,
    /// Mean of the labels.
    pub label_mean: f64,
    /// Sum of the squared deviations of the labels from their mean.
    pub label_m2: f64,
    /// Sum of the squared residuals `(prediction - label)^2` (regression;
    /// 0 for classifiers).
    pub sse: f64,
}

impl BatchStats {
    /// Statistics of the labels alone (rows, mean, squared deviations).
    pub(super) fn of_labels(labels: &[f64]) -> BatchStats {
        let rows = labels.len();
        if rows == 0 {
            return BatchStats::default();
        }
        let mean = labels.iter().sum::<f64>() / rows as f64;
        BatchStats {
            rows,
            label_mean: mean,
            label_m2: labels.iter().map(|y| (y - mean) * (y - mean)).sum(),
            ..BatchStats::default()
        }
    }

    /// Adds the rows of `other`.
    pub fn merge(&mut self, other: &BatchStats) {
        if other.rows == 0 {
            return;
        }
        let (na, nb) = (self.rows as f64, other.rows as f64);
        let n = na + nb;
        let delta = other.label_mean - self.label_mean;
        self.label_mean += delta * nb / n;
        self.label_m2 += other.label_m2 + delta * delta * na * nb / n;
        self.rows += other.rows;
        self.loss_sum += other.loss_sum;
        self.correct += other.correct;
        self.sse += other.sse;
    }

    /// Mean loss per row (0 with no rows).
    pub fn mean_loss(&self) -> f64 {
        if self.rows == 0 {
            0.0
        } else {
            self.loss_sum / self.rows as f64
        }
    }

    /// Fraction of rows classified correctly (0 with no rows).
    pub fn accuracy(&self) -> f64 {
        if self.rows == 0 {
            0.0
        } else {
            self.correct as f64 / self.rows as f64
        }
    }

    /// `1 - SSE / SST`, the coefficient of determination of a regression
    /// (`NaN` when the labels do not vary).
    pub fn r2(&self) -> f64 {
        if self.label_m2 > 0.0 {
            1.0 - self.sse / self.label_m2
        } else {
            f64::NAN
        }
    }
}

/// Accumulates the [`BatchStats`] of an epoch: mean loss, and accuracy for
/// classifiers or R^2 for regression.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    regression: bool,
    total: BatchStats,
}

impl Metrics {
    /// An empty accumulator for a model of `kind`.
    pub fn new(kind: &ModelKind) -> Metrics {
        Metrics {
            regression: kind.is_regression(),
            total: BatchStats::default(),
        }
    }

    /// Adds one batch.
    pub fn add(&mut self, batch: &BatchStats) {
        self.total.merge(batch);
    }

    /// Rows seen.
    pub fn rows(&self) -> usize {
        self.total.rows
    }

    /// Mean loss per row seen.
    pub fn mean_loss(&self) -> f64 {
        self.total.mean_loss()
    }

    /// Fraction of rows classified correctly; `None` for regression.
    pub fn accuracy(&self) -> Option<f64> {
        (!self.regression).then(|| self.total.accuracy())
    }

    /// R^2 over every row seen; `None` for classifiers.
    pub fn r2(&self) -> Option<f64> {
        self.regression.then(|| self.total.r2())
    }

    /// The sums over every row seen.
    pub fn total(&self) -> &BatchStats {
        &self.total
    }
}

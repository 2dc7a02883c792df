//! Binary labels as the data has them. A binary classifier (logistic
//! regression, SVM, a network with one output) learns class 1 against
//! class 0; data often names the two classes otherwise ({1, 2} and
//! {2, 4} in LIBSVM files, {-1, +1} for SVMs). Reading such labels as
//! "label > 0" would make every row of {1, 2} positive (a constant model
//! that reports accuracy 1.0). So the trainer finds the two values
//! ([`Model::fit_binary_labels`]), the model keeps them (as
//! scikit-learn's `classes_`; the model file stores them), learns the
//! smaller as class 0 and the larger as class 1, and
//! [`Predictions::label`](super::Predictions::label) answers in them.

use std::borrow::Cow;
use std::sync::Arc;

use super::{Model, ModelKind};
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};

/// The distinct labels of a dataset, up to three.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LabelValues {
    /// Distinct values in order of first appearance (at most 3).
    pub(crate) values: Vec<f64>,
}

impl LabelValues {
    /// Reads the labels of every block (stopping at a third distinct
    /// value).
    pub(crate) fn of<S: Source + 'static>(dataset: &Arc<Dataset<S>>) -> Result<LabelValues> {
        let mut values: Vec<f64> = Vec::with_capacity(3);
        for b in 0..dataset.n_blocks() {
            for &y in dataset.read_block(b)?.labels() {
                if !values.iter().any(|v| v.to_bits() == y.to_bits()) {
                    values.push(y);
                    if values.len() > 2 {
                        return Ok(LabelValues { values });
                    }
                }
            }
        }
        Ok(LabelValues { values })
    }
}

impl Model {
    /// True for a model of two classes: logistic regression, SVM, or a
    /// network with one (sigmoid) output.
    pub fn is_binary(&self) -> bool {
        match self.kind {
            ModelKind::Logistic | ModelKind::Svm => true,
            ModelKind::Mlp { .. } => self.layers.last().is_some_and(|l| l.weights.ncols() == 1),
            ModelKind::LinearRegression | ModelKind::Softmax { .. } => false,
        }
    }

    /// A binary classifier's labels for class 0 and class 1 when the data
    /// names its two classes otherwise than 0 and 1 (`None`: labels above
    /// 0 are class 1, the others class 0).
    pub fn binary_labels(&self) -> Option<[f64; 2]> {
        self.binary_labels
    }

    /// Sets the labels of class 0 and class 1 (`None`: 0 and 1, any label
    /// above 0 being class 1). Labels above their midpoint are class 1.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for a model that is not binary
    /// ([`is_binary`](Self::is_binary)), or labels that are not finite
    /// with class 0's below class 1's.
    pub fn set_binary_labels(&mut self, labels: Option<[f64; 2]>) -> Result<()> {
        if let Some([negative, positive]) = labels {
            if !self.is_binary() {
                return Err(Error::BadArgument {
                    what: "binary labels",
                    expected: "a binary model (lr, svm, or an mlp of two classes)",
                });
            }
            if !(negative.is_finite() && positive.is_finite() && negative < positive) {
                return Err(Error::BadArgument {
                    what: "binary labels",
                    expected: "two finite labels, class 0's below class 1's",
                });
            }
        }
        self.binary_labels = labels.filter(|l| *l != [0.0, 1.0]);
        Ok(())
    }

    /// Sets the bias (intercept) of a linear model: where a linear
    /// regression starts (the labels' mean, see the trainer's target
    /// standardisation). Other models are unchanged.
    pub(crate) fn set_linear_bias(&mut self, bias: f64) {
        if self.is_linear() {
            self.layers[0].bias.fill(bias);
        }
    }

    /// Labels above this are class 1: 0, or the midpoint of the
    /// [binary labels](Self::binary_labels).
    pub(crate) fn positive_above(&self) -> f64 {
        self.binary_labels.map_or(0.0, |[n, p]| 0.5 * (n + p))
    }

    /// The label a predicted class stands for: a binary model's class 0
    /// or 1 in its [binary labels](Self::binary_labels), else the class
    /// index itself.
    pub fn label_of_class(&self, class: usize) -> f64 {
        match self.binary_labels {
            Some(labels) if class < 2 => labels[class],
            _ => class as f64,
        }
    }

    /// `labels` as class indices 0 and 1 for a binary model with
    /// [binary labels](Self::binary_labels); unchanged otherwise.
    pub fn class_indices<'a>(&self, labels: &'a [f64]) -> Cow<'a, [f64]> {
        match self.binary_labels {
            None => Cow::Borrowed(labels),
            Some(_) => {
                let above = self.positive_above();
                Cow::Owned(
                    labels
                        .iter()
                        .map(|&y| if y > above { 1.0 } else { 0.0 })
                        .collect(),
                )
            }
        }
    }

    /// For a binary model without [binary labels](Self::binary_labels):
    /// reads the labels of `dataset` (one pass over its blocks, stopping
    /// at a third distinct value) and, when they are exactly two values
    /// other than 0 and 1 (1 and 2, -1 and +1, ...), takes the smaller
    /// as class 0 and the larger as class 1. Nothing changes for labels
    /// 0 and 1, a single label or more than two.
    ///
    /// # Errors
    /// Read errors.
    pub fn fit_binary_labels<S: Source + 'static>(
        &mut self,
        dataset: &Arc<Dataset<S>>,
    ) -> Result<()> {
        if !self.is_binary() || self.binary_labels.is_some() {
            return Ok(());
        }
        let found = LabelValues::of(dataset)?;
        self.take_binary_labels(&found.values);
        Ok(())
    }

    /// [`fit_binary_labels`](Self::fit_binary_labels) from the distinct
    /// labels found (in any order; three or more, or one, change
    /// nothing), however they were gathered.
    pub(crate) fn take_binary_labels(&mut self, distinct: &[f64]) {
        if !self.is_binary() || self.binary_labels.is_some() {
            return;
        }
        // A label that is not finite is the gradient's to report (with
        // its page and row).
        if let [a, b] = distinct[..] {
            if !(a.is_finite() && b.is_finite()) {
                return;
            }
            let pair = if a < b { [a, b] } else { [b, a] };
            if pair != [0.0, 1.0] {
                self.binary_labels = Some(pair);
            }
        }
    }
}

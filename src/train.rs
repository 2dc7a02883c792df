//! The MGD trainer: mini-batch SGD on encoded mini-batches from a
//! [`Loader`], with the gradient computed on the encoded form (see
//! [`model`](crate::model)).
//!
//! Each epoch: the loader yields mini-batches in its strategy's order, the
//! model takes one step per mini-batch (`w -= lr_e * (grad + l2 * w)`),
//! and the learning rate decays exponentially between epochs
//! (`lr_e = lr * decay^e`; the CorgiPile paper's default decay is 0.95,
//! section 7.1).
//! The epoch's training loss and accuracy (R^2 for regression) are the
//! running figures of the mini-batches as the model met them (before each
//! step), as the papers plot them; [`evaluate`] gives exact figures on any
//! dataset. MRS's replay batches train the model too (that is the strategy)
//! but are left out of the epoch's figures, which cover each row once.
//!
//! The trainer knows no file format: mini-batches arrive as
//! [`Page`](crate::Page)s, whatever the file holds, and the model's
//! kernels run on them.

#[doc(hidden)]
pub mod bench;
pub(crate) mod core;
mod prepared;
mod setup;
mod step;
mod trainer;

pub use setup::{infer_kind, Holdout, MAX_CLASSES};
// Not part of the API (hidden): the label sample the front ends warn
// from; may change in any release.
pub use prepared::{Prepared, TrainWarning};
#[doc(hidden)]
pub use setup::{
    label_sample, label_warning, looks_like_regression, LABEL_SAMPLE_BLOCKS, REGRESSION_SAMPLE,
};
pub use step::{EpochScore, LabelSummary, Sgd};
pub use trainer::{Fitted, Trainer};

use std::sync::Arc;
use std::time::Instant;

use crate::dataset::{Dataset, Source};
use crate::error::Result;
use crate::loader::Loader;
use crate::model::{GradientHelper, Metrics, Model, Optimizer};
use crate::scale::{ScaleKind, Scaling};

/// How to train.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct TrainOptions {
    /// Epochs to run (default 10).
    pub epochs: usize,
    /// Learning rate of the first epoch (default 0.03, the default step
    /// rule's [`Optimizer::default_learning_rate`]). A linear regression
    /// steps on its target standardised (`(y - mean) / std` of a sample
    /// of the labels, a new model's bias started at the mean; the model
    /// stays in the labels' units), so the rate does not depend on the
    /// labels' magnitude: prices in the thousands train at the default.
    pub learning_rate: f64,
    /// Factor applied to the learning rate after each epoch (default
    /// 0.95).
    pub decay: f64,
    /// L2 regularisation strength (default 0).
    pub l2: f64,
    /// The step rule (default [`Optimizer::Adam`], as the command line
    /// and Python): see [`crate::model::Optimizer`]. The learning rate and
    /// its decay apply to every rule; [`with_optimizer`](Self::with_optimizer)
    /// sets a rule with its own default rate.
    pub optimizer: Optimizer,
    /// Share a linear model's gradient with a second thread in epochs
    /// whose pages are all resident, when the machine has two cores or
    /// more (default true; see [`GradientHelper`]): such an epoch runs on
    /// the trainer's thread alone and the other core would stand idle.
    /// The same steps up to rounding; false gives the one-thread sums.
    pub split_gradient: bool,
    /// Which iterates make the final model (default
    /// [`Average::LastEpoch`]).
    pub average: Average,
    /// The input scaling the model trains with (default [`Scale::Auto`]:
    /// the model's own if it has one, else the one stored in the file).
    pub scale: Scale,
}

impl TrainOptions {
    /// These options with step rule `rule` at its default learning rate
    /// ([`Optimizer::default_learning_rate`]).
    pub fn with_optimizer(self, rule: Optimizer) -> TrainOptions {
        TrainOptions {
            optimizer: rule,
            learning_rate: rule.default_learning_rate(),
            ..self
        }
    }
}

/// The input scaling a training run sets on the model before its first
/// step ([`Model::set_scaling`]: the model learns in scaled coordinates,
/// its parameters stay those of the raw rows, the data is untouched).
///
/// A dataset file stores the scaling its writer fitted
/// ([`DatasetInfo::scaling`](crate::dataset::DatasetInfo::scaling));
/// numeric columns of different magnitudes train far worse without it
/// (on 10,000 rows of 50 columns: 0.58 training accuracy on the raw rows,
/// 0.89 scaled), so the default applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Scale {
    /// The model's scaling if it has one (set by
    /// [`Model::set_scaling`] or loaded with it), else the file's stored
    /// one (none if it stores none).
    #[default]
    Auto,
    /// The file's stored scaling (none if it stores none), replacing the
    /// model's.
    Stored,
    /// The model's scaling as it is, none included.
    Model,
    /// No scaling.
    None,
    /// A scaling of this kind: the file's when it stores one of the kind,
    /// else one fitted by a pass over the file
    /// ([`Dataset::fit_scaling`]).
    Fit(ScaleKind),
}

impl Scale {
    /// The scaling this choice gives `model` trained on `dataset`.
    ///
    /// # Errors
    /// Read errors of the pass that fits a scaling ([`Scale::Fit`] on a
    /// file that stores none of that kind).
    pub fn resolve<S: Source + 'static>(
        self,
        model: &Model,
        dataset: &Arc<Dataset<S>>,
    ) -> Result<Option<Scaling>> {
        let stored = || dataset.info().scaling.clone();
        Ok(match self {
            Scale::Auto => model.scaling().cloned().or_else(stored),
            Scale::Stored => stored(),
            Scale::Model => model.scaling().cloned(),
            Scale::None => None,
            Scale::Fit(kind) => match stored().filter(|s| s.kind() == kind) {
                Some(s) => Some(s),
                None => Some(dataset.fit_scaling(kind)?),
            },
        })
    }

    /// Sets the scaling this choice gives on `model` (see
    /// [`resolve`](Self::resolve)).
    ///
    /// # Errors
    /// As [`resolve`](Self::resolve); [`Error::LengthMismatch`](crate::Error::LengthMismatch) when the
    /// file's column count is not the model's.
    pub fn apply<S: Source + 'static>(
        self,
        model: &mut Model,
        dataset: &Arc<Dataset<S>>,
    ) -> Result<()> {
        if self == Scale::Model {
            return Ok(());
        }
        let scaling = self.resolve(model, dataset)?;
        model.set_scaling(scaling)
    }
}

/// Which iterates make the model a training run returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Average {
    /// The last step's parameters.
    None,
    /// The mean of the iterates over the last epoch's steps
    /// (Polyak-Ruppert tail averaging). On label-sorted data CorgiPile's
    /// last buffers have a label mix of their own (a buffer holds a
    /// random tenth of the blocks, each of one label), and the last
    /// step's model follows it: on census_fertility sorted by label, the
    /// last iterate ended at 0.54, 0.63 and 0.61 test accuracy for seeds
    /// 1 to 3 against Shuffle Once's 0.63; the mean of the last epoch
    /// ended at 0.634, 0.634 and 0.635 (`docs/archive/RESULTS-HISTORY.md`). The mean over
    /// the epoch weighs every buffer alike. Costs one pass over the
    /// parameters per step.
    LastEpoch,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 10,
            learning_rate: Optimizer::Adam.default_learning_rate(),
            decay: 0.95,
            l2: 0.0,
            optimizer: Optimizer::Adam,
            split_gradient: true,
            average: Average::LastEpoch,
            scale: Scale::Auto,
        }
    }
}

/// Loss and accuracy (or R^2) of a model on some rows.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Score {
    /// Mean loss per row (penalty excluded).
    pub loss: f64,
    /// Fraction classified correctly, or R^2 for regression.
    pub accuracy: f64,
    /// Rows scored.
    pub rows: u64,
}

impl Score {
    fn of(metrics: &Metrics) -> Score {
        Score {
            loss: metrics.mean_loss(),
            accuracy: metrics.accuracy().or(metrics.r2()).unwrap_or(f64::NAN),
            rows: metrics.rows() as u64,
        }
    }
}

/// What one epoch did.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct EpochReport {
    /// Epoch number, from 0.
    pub epoch: usize,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Running training figures (each row once, before its step).
    pub train: Score,
    /// Figures on the evaluation dataset, when one was given.
    pub eval: Option<Score>,
    /// Wall-clock seconds of the epoch (evaluation excluded).
    pub seconds: f64,
    /// Seconds of those spent waiting for the loader.
    pub wait_seconds: f64,
    /// Mini-batches (steps) taken, MRS's replays included.
    pub steps: usize,
    /// Most bytes the loader's buffers held.
    pub buffer_peak_bytes: usize,
    /// Threads that computed the gradients: 2 when they were shared with
    /// a helper thread ([`TrainOptions::split_gradient`]), else 1.
    pub gradient_threads: usize,
    /// Mini-batches the trainer computed on in their TOC form (on a
    /// decode tree) and as rows ([`EpochStats`](crate::loader::EpochStats)).
    pub tree_batches: usize,
    /// See `tree_batches`.
    pub row_batches: usize,
}

/// Trains `model` for `options.epochs` epochs over `loader` (after setting
/// the scaling [`TrainOptions::scale`] gives it), evaluating on
/// every row of `eval` ([`evaluate`]) after each epoch if given, and
/// calling `on_epoch` with each report as it is made (for progress
/// output).
///
/// # Errors
/// [`Error::BadArgument`](crate::Error::BadArgument) for a learning rate, decay or L2 out of range;
/// loader errors (a corrupt block, say) and model errors (a label the
/// model cannot use) as they occur; [`Error::Diverged`](crate::Error::Diverged) when the loss of
/// an epoch is not finite, naming the epoch and learning rate.
pub fn train<S: Source + 'static>(
    model: &mut Model,
    loader: &Loader<S>,
    options: &TrainOptions,
    eval: Option<&Arc<Dataset<S>>>,
    mut on_epoch: impl FnMut(&EpochReport),
) -> Result<Vec<EpochReport>> {
    core::check_options(options)?;
    let target = core::prepare(model, loader.dataset(), options)?;
    let mut stepper = core::Stepper::new(model, options, target)?;
    let mut reports = Vec::with_capacity(options.epochs);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut helper: Option<GradientHelper> = None;
    for epoch in 0..options.epochs {
        let lr = core::learning_rate(options, epoch);
        let start = Instant::now();
        let mut batches = loader.epoch(epoch as u64)?;
        let split = options.split_gradient && cores > 1 && batches.is_inline();
        if split && helper.is_none() {
            // No thread to spare: the one-thread gradient does the job.
            helper = GradientHelper::start().ok();
        }
        if let Some(h) = helper.as_mut() {
            h.new_epoch();
        }
        let tail = core::TailMean::start(model, options, epoch)?;
        let mut spent = batches.spent();
        let steps = batches.by_ref().map(|b| {
            b.map(|b| core::Step {
                pages: b.pages,
                replay: b.replay,
            })
        });
        let run = core::run_epoch(
            model,
            &mut stepper,
            steps,
            lr,
            tail,
            helper.as_mut().filter(|_| split),
            |pages| spent.give(pages),
        )?;
        drop(spent);
        let seconds = start.elapsed().as_secs_f64();
        let train = core::epoch_score(&run.metrics, epoch, lr)?;
        let steps = run.steps;
        let eval = match eval {
            Some(ds) => Some(evaluate(model, ds)?),
            None => None,
        };
        let stats = batches.stats();
        let report = EpochReport {
            epoch,
            learning_rate: lr,
            train,
            eval,
            seconds,
            wait_seconds: stats.wait_seconds,
            steps,
            buffer_peak_bytes: stats.buffer_peak_bytes,
            tree_batches: stats.tree_batches,
            row_batches: stats.row_batches,
            gradient_threads: if split
                && helper.as_ref().is_some_and(GradientHelper::sharing)
                && model.is_linear()
            {
                2
            } else {
                1
            },
        };
        on_epoch(&report);
        reports.push(report);
    }
    Ok(reports)
}

/// Loss and accuracy (R^2 for regression) of `model` on every row of a
/// dataset, read sequentially with read-ahead, a block's pages at a time.
///
/// # Errors
/// Read errors; model errors for labels or columns it cannot use.
pub fn evaluate<S: Source + 'static>(model: &Model, dataset: &Arc<Dataset<S>>) -> Result<Score> {
    let mut metrics = Metrics::new(model.kind());
    for block in dataset.prefetch((0..dataset.n_blocks()).collect(), 2)? {
        metrics.add(&model.evaluate(&block?.pages()?)?);
    }
    Ok(Score::of(&metrics))
}

/// Every figure of [`Evaluation`](crate::model::Evaluation) (loss,
/// accuracy, AUC, confusion matrix, R^2) of `model` on every row of a
/// dataset, after checking that the dataset has the model's columns
/// ([`Model::check_schema`]).
///
/// # Errors
/// [`Error::LengthMismatch`](crate::Error::LengthMismatch) or [`Error::BadArgument`](crate::Error::BadArgument) for data of other
/// columns or another schema; read errors; [`Error::BadLabel`](crate::Error::BadLabel) for a
/// label the model cannot use.
pub fn evaluate_all<S: Source + 'static>(
    model: &Model,
    dataset: &Arc<Dataset<S>>,
) -> Result<crate::model::EvaluationReport> {
    let info = dataset.info();
    model.check_schema(info.n_cols, &info.schema)?;
    let mut evaluation = crate::model::Evaluation::new(model.kind());
    for block in dataset.prefetch((0..dataset.n_blocks()).collect(), 2)? {
        let block = block?;
        let predictions = model.predict(&block.pages()?)?;
        evaluation.add(&predictions, &model.class_indices(block.labels()))?;
    }
    Ok(evaluation.report())
}

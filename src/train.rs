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

pub mod bench;

use std::sync::Arc;
use std::time::Instant;

use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};
use crate::loader::Loader;
use crate::model::{Gradient, GradientHelper, Metrics, Model, Optimizer, OptimizerState};

/// How to train.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainOptions {
    /// Epochs to run (default 10).
    pub epochs: usize,
    /// Learning rate of the first epoch (default 0.1).
    pub learning_rate: f64,
    /// Factor applied to the learning rate after each epoch (default
    /// 0.95).
    pub decay: f64,
    /// L2 regularisation strength (default 0).
    pub l2: f64,
    /// The step rule (default [`Optimizer::Sgd`]; the command line
    /// defaults to [`Optimizer::Adam`]): see [`crate::model::Optimizer`].
    /// The learning rate and its decay apply to every rule.
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
}

/// Which iterates make the model a training run returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// ended at 0.634, 0.634 and 0.635 (`docs/RESULTS.md`). The mean over
    /// the epoch weighs every buffer alike. Costs one pass over the
    /// parameters per step.
    LastEpoch,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 10,
            learning_rate: 0.1,
            decay: 0.95,
            l2: 0.0,
            optimizer: Optimizer::Sgd,
            split_gradient: true,
            average: Average::LastEpoch,
        }
    }
}

/// Loss and accuracy (or R^2) of a model on some rows.
#[derive(Debug, Clone, Copy, PartialEq)]
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
}

/// Trains `model` for `options.epochs` epochs over `loader`, evaluating on
/// every row of `eval` ([`evaluate`]) after each epoch if given, and
/// calling `on_epoch` with each report as it is made (for progress
/// output).
///
/// # Errors
/// [`Error::BadArgument`] for a learning rate, decay or L2 out of range;
/// loader errors (a corrupt block, say) and model errors (a label the
/// model cannot use) as they occur; [`Error::Diverged`] when the loss of
/// an epoch is not finite, naming the epoch and learning rate.
pub fn train<S: Source + 'static>(
    model: &mut Model,
    loader: &Loader<S>,
    options: &TrainOptions,
    eval: Option<&Arc<Dataset<S>>>,
    mut on_epoch: impl FnMut(&EpochReport),
) -> Result<Vec<EpochReport>> {
    if !(options.learning_rate > 0.0 && options.learning_rate.is_finite()) {
        return Err(Error::BadArgument {
            what: "learning rate",
            expected: "a positive finite number",
        });
    }
    let decay_ok = options.decay > 0.0 && options.decay <= 1.0;
    if !decay_ok || options.l2.is_nan() || options.l2 < 0.0 {
        return Err(Error::BadArgument {
            what: "decay and l2",
            expected: "a decay in (0, 1] and a non-negative l2",
        });
    }
    let mut grad = Gradient::try_new(model)?;
    let mut state = OptimizerState::try_new(options.optimizer, model)?;
    let mut reports = Vec::with_capacity(options.epochs);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut helper: Option<GradientHelper> = None;
    for epoch in 0..options.epochs {
        let lr = options.learning_rate * options.decay.powi(epoch as i32);
        let start = Instant::now();
        let mut metrics = Metrics::new(model.kind());
        let mut batches = loader.epoch(epoch as u64)?;
        let split = options.split_gradient && cores > 1 && batches.is_inline();
        if split && helper.is_none() {
            // No thread to spare: the one-thread gradient does the job.
            helper = GradientHelper::start().ok();
        }
        if let Some(h) = helper.as_mut() {
            h.new_epoch();
        }
        let mut steps = 0;
        // The mean of this epoch's iterates, when they make the final model.
        let mut mean = match options.average == Average::LastEpoch && epoch + 1 == options.epochs {
            true => Some(model.try_clone()?),
            false => None,
        };
        for batch in batches.by_ref() {
            let batch = batch?;
            let stats = match helper.as_mut().filter(|_| split) {
                Some(h) => model.gradient_split(&batch.pages, options.l2, &mut grad, h)?,
                None => model.gradient(&batch.pages, options.l2, &mut grad)?,
            };
            model.step_with(&grad, lr, &mut state);
            steps += 1;
            if let Some(mean) = mean.as_mut() {
                mean.average_towards(model, 1.0 / steps as f64);
            }
            if !batch.replay {
                metrics.add(&stats);
            }
        }
        if let Some(mean) = mean {
            *model = mean;
        }
        let seconds = start.elapsed().as_secs_f64();
        let train = Score::of(&metrics);
        if !train.loss.is_finite() {
            return Err(Error::Diverged {
                epoch,
                learning_rate: lr,
            });
        }
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
/// [`Error::LengthMismatch`] or [`Error::BadArgument`] for data of other
/// columns or another schema; read errors; [`Error::BadLabel`] for a
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
        evaluation.add(&predictions, block.labels())?;
    }
    Ok(evaluation.report())
}

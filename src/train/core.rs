//! The step and epoch loop every trainer of the crate runs: [`train`]
//! (one process, a [`Loader`]), the distributed trainer and its lockstep
//! reference ([`crate::dist`]), the coded-shuffle workers' SGD
//! ([`crate::dist::train_on_batches`], [`crate::dist::sgd_epoch`]), the
//! training benchmark's in-memory loops ([`super::bench`]), and
//! [`Sgd`](super::Sgd), the public step-by-step form for mini-batches the
//! caller makes (the PostgreSQL extension's). One place for the options' checks, the
//! learning rate of an epoch, the model's set-up before the first step
//! (input scaling, binary labels), the mini-batch step (gradient, L2,
//! step rule), the tail average ([`Average::LastEpoch`]) and the epoch's
//! figures, so that the trainers differ only in where their mini-batches
//! come from and how ranks combine their gradients.
//!
//! [`train`]: super::train
//! [`Loader`]: crate::loader::Loader

use std::sync::Arc;

use super::{Average, Score, TrainOptions};
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};
use crate::model::{
    BatchStats, Gradient, GradientHelper, Metrics, Model, ModelKind, Optimizer, OptimizerState,
};
use crate::page::Page;

/// [`Error::BadArgument`] for a learning rate, decay or L2 out of range.
pub(crate) fn check_options(options: &TrainOptions) -> Result<()> {
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
    Ok(())
}

/// The learning rate of epoch `epoch` (from 0): `lr * decay^epoch`.
pub(crate) fn learning_rate(options: &TrainOptions, epoch: usize) -> f64 {
    options.learning_rate * options.decay.powi(epoch as i32)
}

/// What every trainer does to the model before the first step: the
/// input scaling [`TrainOptions::scale`] gives it on `dataset`, a binary
/// model's two label values ([`Model::fit_binary_labels`]), and a linear
/// regression's target standardisation ([`TargetScale::of`], its bias
/// started at the labels' mean when the model is new). Returns the
/// target's scale for the [`Stepper`].
pub(crate) fn prepare<S: Source + 'static>(
    model: &mut Model,
    dataset: &Arc<Dataset<S>>,
    options: &TrainOptions,
) -> Result<TargetScale> {
    options.scale.apply(model, dataset)?;
    model.fit_binary_labels(dataset)?;
    TargetScale::of(model, dataset)
}

/// A linear regression trained on the standardised target `(y - mean) /
/// spread` without changing its units: the parameters stay those of the
/// labels as they are (predictions, saved models, `evaluate` and the
/// reported losses are in the user's units), as the input scaling keeps
/// them those of the raw rows ([`Model::set_scaling`]).
///
/// A new model (all parameters zero) starts with its bias at the mean;
/// each step is the step rule's on the standardised loss, which is the
/// raw gradient divided by `spread` taken by the rule at a learning rate
/// `spread` times the given one (the parameters' change then in the
/// user's units). Plain SGD's step is the same either way; Adam and
/// AdaGrad move each parameter by about the learning rate per step
/// whatever the gradient's size, so without it a target in the thousands
/// is out of reach of the default 0.03: on ggplot2's diamonds (price,
/// mean 3,933) ten epochs ended at eval R^2 -0.86, and at 0.92 with it
/// (scikit-learn's Ridge 0.919; `docs/archive/RESULTS-HISTORY.md` section 27). The L2
/// penalty's optimum is unchanged (the loss and the penalty both scale
/// by `1 / spread^2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TargetScale {
    spread: f64,
}

impl TargetScale {
    /// No standardisation (classifiers, and a target of spread 0).
    pub(crate) const UNIT: TargetScale = TargetScale { spread: 1.0 };

    /// The spread the target is divided by (1 for none).
    pub(crate) fn spread(self) -> f64 {
        self.spread
    }

    /// The standardisation by `spread` (another rank's, sent over);
    /// [`UNIT`](Self::UNIT) for a spread that is not positive and finite.
    pub(crate) fn with_spread(spread: f64) -> TargetScale {
        match spread > 0.0 && spread.is_finite() {
            true => TargetScale { spread },
            false => TargetScale::UNIT,
        }
    }

    /// For a linear regression: the mean and standard deviation of the
    /// labels of at most [`LABEL_SAMPLE_BLOCKS`](super::LABEL_SAMPLE_BLOCKS)
    /// blocks spread over `dataset` (every block of a smaller file), the
    /// bias of a new model set to the mean. [`UNIT`](Self::UNIT) for
    /// other models, a constant target or labels that are not finite
    /// (the gradient reports those with their page and row).
    pub(crate) fn of<S: Source>(model: &mut Model, dataset: &Dataset<S>) -> Result<TargetScale> {
        if !matches!(model.kind(), ModelKind::LinearRegression) {
            return Ok(TargetScale::UNIT);
        }
        Ok(TargetScale::from_moments(
            model,
            super::setup::label_moments(dataset)?,
        ))
    }

    /// [`of`](Self::of) from the labels' mean and standard deviation
    /// (`None`: no rows, or labels that are not all finite), however
    /// they were gathered ([`LabelSummary`](super::LabelSummary) for
    /// mini-batches the caller makes).
    pub(crate) fn from_moments(model: &mut Model, moments: Option<(f64, f64)>) -> TargetScale {
        if !matches!(model.kind(), ModelKind::LinearRegression) {
            return TargetScale::UNIT;
        }
        let Some((mean, spread)) = moments else {
            return TargetScale::UNIT;
        };
        if model.params().iter().all(|&p| p == 0.0) {
            model.set_linear_bias(mean);
        }
        match spread > 0.0 && spread.is_finite() {
            true => TargetScale { spread },
            false => TargetScale::UNIT,
        }
    }
}

/// The mini-batch step: the gradient buffer and the step rule's state of
/// one training run.
pub(crate) struct Stepper {
    grad: Gradient,
    state: OptimizerState,
    l2: f64,
    target: TargetScale,
}

impl Stepper {
    /// The buffers for `model` under `options` (allocated now, fallibly),
    /// stepping on the target standardised by `target` ([`prepare`]'s).
    pub(crate) fn new(
        model: &Model,
        options: &TrainOptions,
        target: TargetScale,
    ) -> Result<Stepper> {
        Ok(Stepper {
            grad: Gradient::try_new(model)?,
            state: OptimizerState::try_new(options.optimizer, model)?,
            l2: options.l2,
            target,
        })
    }

    /// The gradient of `pages` (the L2 term included), shared with
    /// `helper`'s thread when one is given; returns the rows' figures.
    pub(crate) fn gradient(
        &mut self,
        model: &Model,
        pages: &[Page],
        helper: Option<&mut GradientHelper>,
    ) -> Result<BatchStats> {
        match helper {
            Some(h) => model.gradient_split(pages, self.l2, &mut self.grad, h),
            None => model.gradient(pages, self.l2, &mut self.grad),
        }
    }

    /// The gradient last computed (or set), before a step (which may
    /// rescale it, see [`TargetScale`]).
    pub(crate) fn grad(&self) -> &Gradient {
        &self.grad
    }

    /// Replaces the gradient's values (parameter order), say by the mean
    /// over the ranks.
    pub(crate) fn set_gradient(&mut self, values: &[f64]) -> Result<()> {
        self.grad.set_values(values)
    }

    /// One step of the rule along the current gradient (on the
    /// standardised target, see [`TargetScale`]).
    pub(crate) fn step(&mut self, model: &mut Model, lr: f64) {
        let spread = self.target.spread;
        // Plain SGD's step is the same on either target: skipped.
        if spread == 1.0 || self.state.rule() == Optimizer::Sgd {
            model.step_with(&self.grad, lr, &mut self.state);
            return;
        }
        self.grad.scale_by(1.0 / spread);
        model.step_with(&self.grad, lr * spread, &mut self.state);
    }
}

/// The mean of an epoch's iterates (Polyak-Ruppert tail averaging,
/// [`Average::LastEpoch`]): kept in the last epoch only.
pub(crate) struct TailMean {
    mean: Option<Model>,
    steps: usize,
}

impl TailMean {
    /// The mean of epoch `epoch`'s iterates when they make the final
    /// model, else nothing to keep.
    pub(crate) fn start(model: &Model, options: &TrainOptions, epoch: usize) -> Result<TailMean> {
        let last = options.average == Average::LastEpoch && epoch + 1 == options.epochs;
        Ok(TailMean {
            mean: match last {
                true => Some(model.try_clone()?),
                false => None,
            },
            steps: 0,
        })
    }

    /// Takes the model after a step into the mean.
    pub(crate) fn add(&mut self, model: &Model) {
        self.steps += 1;
        if let Some(mean) = self.mean.as_mut() {
            mean.average_towards(model, 1.0 / self.steps as f64);
        }
    }

    /// Iterates taken so far (the epoch's steps).
    pub(crate) fn steps(&self) -> usize {
        self.steps
    }

    /// Whether the mean is kept (the last epoch's, averaging on).
    pub(crate) fn keeps(&self) -> bool {
        self.mean.is_some()
    }

    /// Replaces the model by the mean, when one was kept.
    pub(crate) fn finish(self, model: &mut Model) {
        if let Some(mean) = self.mean {
            *model = mean;
        }
    }
}

/// One process's mini-batch: its pages and whether it is a replay (MRS's
/// batches over rows the epoch's figures already count).
pub(crate) struct Step<P> {
    pub(crate) pages: P,
    pub(crate) replay: bool,
}

/// What one epoch of [`run_epoch`] did.
pub(crate) struct EpochRun {
    /// Running figures of the rows (replays excluded), before each step.
    pub(crate) metrics: Metrics,
    /// Steps taken, replays included.
    pub(crate) steps: usize,
}

/// One epoch on one process: for each mini-batch, the gradient (shared
/// with `helper` when given), a step of the rule at `lr`, the iterate
/// taken into the tail mean; the running figures of the rows. The model
/// is the tail mean at the end when [`TailMean::start`] kept one. Each
/// batch's pages go to `spent` after its step (the loader's
/// [`Epoch::spent`](crate::loader::Epoch) frees them on its thread).
pub(crate) fn run_epoch<P: AsRef<[Page]>>(
    model: &mut Model,
    stepper: &mut Stepper,
    batches: impl Iterator<Item = Result<Step<P>>>,
    lr: f64,
    mut tail: TailMean,
    mut helper: Option<&mut GradientHelper>,
    mut spent: impl FnMut(P),
) -> Result<EpochRun> {
    let mut metrics = Metrics::new(model.kind());
    for batch in batches {
        let batch = batch?;
        let stats = stepper.gradient(model, batch.pages.as_ref(), helper.as_deref_mut())?;
        stepper.step(model, lr);
        tail.add(model);
        if !batch.replay {
            metrics.add(&stats);
        }
        spent(batch.pages);
    }
    let steps = tail.steps;
    tail.finish(model);
    Ok(EpochRun { metrics, steps })
}

/// The epoch's training figures, or [`Error::Diverged`] when its loss is
/// not finite.
pub(crate) fn epoch_score(metrics: &Metrics, epoch: usize, lr: f64) -> Result<Score> {
    let score = Score::of(metrics);
    if !score.loss.is_finite() {
        return Err(Error::Diverged {
            epoch,
            learning_rate: lr,
        });
    }
    Ok(score)
}

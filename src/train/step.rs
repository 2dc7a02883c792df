//! [`Sgd`]: the trainer's step and epoch loop for mini-batches the caller
//! makes, one call per mini-batch. [`train`](super::train) and
//! [`Trainer`](super::Trainer) take their mini-batches from a
//! [`Loader`](crate::loader::Loader) over a dataset file; a program whose
//! rows live elsewhere (the PostgreSQL extension reads them from a
//! table's heap pages, in CorgiPile's block and tuple order) cuts them
//! into [`Page`]s itself and hands them to [`Sgd::step`]. The arithmetic
//! is the trainer's own (the same code in the same order: the options'
//! checks, the model's set-up before the first step, the gradient with
//! its L2 term, the step rule on a linear regression's standardised
//! target, the learning rate's decay, the last epoch's tail average,
//! the divergence check), so the same mini-batches in the same order
//! give the same model bytes as `train` over a dataset file.
//!
//! What `train` learns from the dataset file before the first step,
//! [`Sgd::new`] takes from a [`LabelSummary`] of the labels the caller
//! will train on (one pass; [`LabelSummary::add`] in the order the rows
//! come): the two label values of a binary model that names its classes
//! otherwise than 0 and 1, and a linear regression's target mean and
//! spread. `train` reads those from every block of a file of at most
//! [`LABEL_SAMPLE_BLOCKS`](super::LABEL_SAMPLE_BLOCKS) blocks (from that
//! many spread over a larger one). The input scaling is the model's own
//! ([`Model::set_scaling`], say from a [`ColumnStats`](crate::scale::ColumnStats)
//! pass over the rows): there is no file to take a stored one from.
//!
//! ```
//! use tocpile::formats::FormatKind;
//! use tocpile::model::{Model, ModelKind};
//! use tocpile::train::{LabelSummary, Sgd, TrainOptions};
//! use tocpile::{Page, SparseBatch};
//!
//! // 1,000 rows; the class is whether the first column exceeds the second.
//! let points: Vec<[f64; 2]> = (0..1000).map(|i| [(i % 37) as f64, (i % 23) as f64]).collect();
//! let labels: Vec<f64> = points.iter().map(|p| f64::from(p[0] > p[1])).collect();
//! let mut summary = LabelSummary::new();
//! summary.add(&labels);
//!
//! let mut model = Model::new(ModelKind::Logistic, 2, 0)?;
//! let options = TrainOptions::default().with_epochs(5);
//! let mut sgd = Sgd::new(model, &options, &summary)?;
//! for _ in 0..options.epochs {
//!     // The caller's mini-batches: here 100 rows at a time, in order.
//!     for (rows, ys) in points.chunks(100).zip(labels.chunks(100)) {
//!         let batch = SparseBatch::from_dense_rows(2, rows)?;
//!         sgd.step(&[Page::encode(FormatKind::Csr, &batch, ys)?])?;
//!     }
//!     let epoch = sgd.end_epoch()?; // the divergence check, the tail average
//!     assert_eq!(epoch.train.rows, 1000);
//! }
//! model = sgd.into_model();
//! let rows = SparseBatch::from_dense_rows(2, &points)?;
//! let predicted = model.predict_rows(&rows)?;
//! let right = (0..1000).filter(|&i| predicted.class(i) == Some(labels[i] as usize)).count();
//! assert!(right > 900, "{right} of 1000");
//! # Ok::<(), tocpile::Error>(())
//! ```

use super::core::{self, Stepper, TailMean, TargetScale};
use super::{Scale, Score, TrainOptions};
use crate::error::{Error, Result};
use crate::model::{Metrics, Model};
use crate::page::Page;

/// What a training run learns from the labels before its first step:
/// the first three distinct labels met (by bit pattern, in the order
/// met), and their count, mean and standard deviation (population; by
/// Welford's update, in the order added, as the trainer's pass over a
/// file computes them).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSummary {
    distinct: Vec<f64>,
    rows: u64,
    mean: f64,
    m2: f64,
    finite: bool,
}

impl Default for LabelSummary {
    fn default() -> Self {
        LabelSummary::new()
    }
}

impl LabelSummary {
    /// A summary of no labels.
    pub fn new() -> LabelSummary {
        LabelSummary {
            distinct: Vec::with_capacity(3),
            rows: 0,
            mean: 0.0,
            m2: 0.0,
            finite: true,
        }
    }

    /// Takes `labels` in (in row order).
    pub fn add(&mut self, labels: &[f64]) {
        for &y in labels {
            if self.distinct.len() < 3 && !self.distinct.iter().any(|v| v.to_bits() == y.to_bits())
            {
                self.distinct.push(y);
            }
            self.rows += 1;
            // Welford's update: no cancellation for labels far from 0.
            // The moments stop at the first label that is not finite (the
            // gradient reports it with its page and row).
            if self.finite && y.is_finite() {
                let d = y - self.mean;
                self.mean += d / self.rows as f64;
                self.m2 += d * (y - self.mean);
            } else {
                self.finite = false;
            }
        }
    }

    /// Labels taken in.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The first three distinct labels (by bit pattern) in the order met:
    /// three means "three or more". A binary model (lr, svm) meeting
    /// three takes label > 0 as the positive class, which the front ends
    /// warn about ([`label_warning`](super::label_warning)).
    pub fn distinct(&self) -> &[f64] {
        &self.distinct
    }

    /// The labels' mean and standard deviation (population), or `None`
    /// for no labels or a label that is not finite.
    pub fn moments(&self) -> Option<(f64, f64)> {
        (self.rows > 0 && self.finite).then(|| (self.mean, (self.m2 / self.rows as f64).sqrt()))
    }
}

/// What one epoch of [`Sgd`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochScore {
    /// Epoch number, from 0.
    pub epoch: usize,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Running training figures (each row once, before its step).
    pub train: Score,
    /// Mini-batches (steps) taken.
    pub steps: usize,
}

/// Mini-batch SGD over mini-batches the caller makes (see the module
/// docs): [`step`](Self::step) once per mini-batch, then
/// [`end_epoch`](Self::end_epoch), for each of
/// [`TrainOptions::epochs`] epochs; then [`into_model`](Self::into_model).
/// Gradients are computed on the caller's thread
/// ([`TrainOptions::split_gradient`] is not used).
pub struct Sgd {
    model: Model,
    options: TrainOptions,
    stepper: Stepper,
    epoch: usize,
    /// The tail average of the epoch under way (`None` after the last).
    tail: Option<TailMean>,
    metrics: Metrics,
}

impl std::fmt::Debug for Sgd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sgd")
            .field("kind", self.model.kind())
            .field("epoch", &self.epoch)
            .field("options", &self.options)
            .finish()
    }
}

impl Sgd {
    /// Training of `model` under `options`, set up as the trainer sets a
    /// model up before its first step, from `labels` (the labels it will
    /// train on, [`LabelSummary`]): a binary model's two label values
    /// when they are not 0 and 1 ([`Model::fit_binary_labels`]), a linear
    /// regression's target standardisation (its bias started at the
    /// labels' mean when the model is new). The input scaling is the
    /// model's ([`Scale::Auto`] and [`Scale::Model`] keep it,
    /// [`Scale::None`] removes it).
    ///
    /// # Errors
    /// [`Error::BadArgument`] for no epochs, a learning rate, decay or L2
    /// out of range, or [`Scale::Stored`] or [`Scale::Fit`] (there is no
    /// file to take a scaling from: fit one on the rows and set it on the
    /// model); [`Error::OutOfMemory`] if the gradient or the step rule's
    /// state cannot be allocated.
    pub fn new(mut model: Model, options: &TrainOptions, labels: &LabelSummary) -> Result<Sgd> {
        if options.epochs == 0 {
            return Err(Error::BadArgument {
                what: "epochs",
                expected: "at least 1",
            });
        }
        core::check_options(options)?;
        match options.scale {
            Scale::Auto | Scale::Model => {}
            Scale::None => model.set_scaling(None)?,
            Scale::Stored | Scale::Fit(_) => {
                return Err(Error::BadArgument {
                    what: "scale of a step-by-step run",
                    expected: "Auto, Model or None (no dataset file to take a scaling from: \
                               fit one on the rows and set it with Model::set_scaling)",
                })
            }
        }
        model.take_binary_labels(labels.distinct());
        let target = TargetScale::from_moments(&mut model, labels.moments());
        let stepper = Stepper::new(&model, options, target)?;
        let tail = TailMean::start(&model, options, 0)?;
        let metrics = Metrics::new(model.kind());
        Ok(Sgd {
            model,
            options: options.clone(),
            stepper,
            epoch: 0,
            tail: Some(tail),
            metrics,
        })
    }

    /// The epoch under way, from 0 ([`TrainOptions::epochs`] once every
    /// epoch has ended).
    pub fn epoch(&self) -> usize {
        self.epoch
    }

    /// The learning rate of the epoch under way: `lr * decay^epoch`.
    pub fn learning_rate(&self) -> f64 {
        core::learning_rate(&self.options, self.epoch)
    }

    /// One step on the mini-batch `pages` (its rows, page after page):
    /// the gradient (the L2 term included), the step rule at the epoch's
    /// learning rate, the iterate taken into the tail average; the rows'
    /// loss and accuracy before the step count toward the epoch's
    /// figures.
    ///
    /// # Errors
    /// [`Error::BadArgument`] after the last epoch has ended; the
    /// model's errors for pages of other columns or labels it cannot use
    /// (the model is then as it was before the call).
    pub fn step(&mut self, pages: &[Page]) -> Result<()> {
        let lr = self.learning_rate();
        let Some(tail) = self.tail.as_mut() else {
            return Err(Error::BadArgument {
                what: "a step",
                expected: "an epoch under way (every epoch has ended)",
            });
        };
        let stats = self.stepper.gradient(&self.model, pages, None)?;
        self.stepper.step(&mut self.model, lr);
        tail.add(&self.model);
        self.metrics.add(&stats);
        Ok(())
    }

    /// Ends the epoch under way: in the last epoch the model becomes the
    /// mean of the epoch's iterates (under the default
    /// [`Average::LastEpoch`](super::Average::LastEpoch)); returns the
    /// epoch's figures.
    ///
    /// # Errors
    /// [`Error::Diverged`] when the epoch's loss is not finite, naming
    /// the epoch and learning rate;
    /// [`Error::BadArgument`] after the last epoch has ended;
    /// [`Error::OutOfMemory`] if the next epoch's tail average cannot be
    /// allocated.
    pub fn end_epoch(&mut self) -> Result<EpochScore> {
        let lr = self.learning_rate();
        let Some(tail) = self.tail.take() else {
            return Err(Error::BadArgument {
                what: "the end of an epoch",
                expected: "an epoch under way (every epoch has ended)",
            });
        };
        let steps = tail.steps();
        tail.finish(&mut self.model);
        let metrics = std::mem::replace(&mut self.metrics, Metrics::new(self.model.kind()));
        let train = core::epoch_score(&metrics, self.epoch, lr)?;
        let epoch = self.epoch;
        self.epoch += 1;
        if self.epoch < self.options.epochs {
            self.tail = Some(TailMean::start(&self.model, &self.options, self.epoch)?);
        }
        Ok(EpochScore {
            epoch,
            learning_rate: lr,
            train,
            steps,
        })
    }

    /// The model as trained so far.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The model (after the last epoch: the trained model).
    pub fn into_model(self) -> Model {
        self.model
    }
}

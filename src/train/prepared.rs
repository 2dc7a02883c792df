//! [`Trainer::prepare`]: a training run set up on its data before the
//! first step ([`Prepared`]), so that a front end can say what will
//! happen (the rows trained on and held out, the start model's scaling,
//! each loader's mode and memory budget, the [warnings](TrainWarning))
//! and then [fit](Prepared::fit) it, one model per shuffling strategy
//! from one start model. The command line, Python and the distributed
//! trainer ([`crate::dist`]) all go this way: the set-up is defined once.

use std::any::Any;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::setup::{label_sample, label_warning, Holdout, REGRESSION_SAMPLE};
use super::trainer::{Fitted, Trainer};
use super::{core, train, EpochReport, Scale, TrainOptions};
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};
use crate::loader::{memory_budget_for, Loader, LoaderOptions, MemoryBudget, Strategy};
use crate::model::{Model, ModelKind};

/// What a front end should tell its user before training, found by
/// [`Prepared::warnings`]. Its `Display` is a sentence in the library's
/// words; a front end may phrase the advice in its own options' names.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TrainWarning {
    /// A classifier's labels look like a regression target
    /// ([`looks_like_regression`](super::looks_like_regression): a label
    /// that is not an integer, or more distinct labels than
    /// [`MAX_CLASSES`](crate::dataset::MAX_CLASSES)); its accuracy would
    /// mean nothing. A multi-class model is warned only of integer
    /// labels: it refuses the others with an error.
    RegressionLabels {
        /// The dataset file.
        path: PathBuf,
        /// The model's name ([`ModelKind::name`]).
        model: &'static str,
        /// The first three distinct labels met.
        first: [f64; 3],
        /// Distinct labels in the sample (at least this many when
        /// `more`).
        distinct: usize,
        /// Whether the sample stopped counting at `distinct`.
        more: bool,
    },
    /// A binary model (lr, svm) meets more than two distinct labels: it
    /// takes label > 0 as the positive class, which turns class indices
    /// 1, 2, ... into one class.
    MoreThanTwoLabels {
        /// The dataset file.
        path: PathBuf,
        /// The model's name ([`ModelKind::name`]).
        model: &'static str,
        /// The first three distinct labels met.
        first: [f64; 3],
    },
    /// A loader's setting likely to shuffle poorly
    /// ([`Loader::warnings`]).
    Loader {
        /// The strategy of the loader.
        strategy: Strategy,
        /// The loader's sentence.
        message: String,
    },
}

impl std::fmt::Display for TrainWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |first: &[f64; 3]| {
            let shown: Vec<String> = first.iter().map(f64::to_string).collect();
            shown.join(", ")
        };
        match self {
            TrainWarning::RegressionLabels {
                path,
                model,
                first,
                distinct,
                more,
            } => write!(
                f,
                "{}: {}{distinct} distinct labels ({}, ...) look like a regression target: \
                 for a linear regression, train linreg ({model} is a classifier, its accuracy \
                 would mean nothing here)",
                path.display(),
                if *more { "more than " } else { "" },
                shown(first)
            ),
            TrainWarning::MoreThanTwoLabels { path, model, first } => write!(
                f,
                "{}: more than two distinct labels ({}, ...): {model} is a binary model and \
                 takes label > 0 as the positive class; for classes, train softmax or mlp",
                path.display(),
                shown(first)
            ),
            TrainWarning::Loader { message, .. } => f.write_str(message),
        }
    }
}

/// A training run set up on its data, before the first step
/// ([`Trainer::prepare`]): the rows trained on (the training part of a
/// held-out split), those evaluated on, the start model (its input
/// scaling set, its schema recorded) and one loader per strategy, each
/// with its memory budget. [`fit`](Self::fit) trains a model per loader,
/// each from a copy of the start model.
#[derive(Debug)]
pub struct Prepared<S: Source + 'static = File> {
    /// The dataset given (its labels behind the warnings).
    source: Arc<Dataset<S>>,
    train: Arc<Dataset<S>>,
    eval: Option<Arc<Dataset<S>>>,
    /// The scratch files of a held-out split, removed when dropped.
    holdout: Option<Holdout>,
    model: Model,
    options: TrainOptions,
    loaders: Vec<Loader<S>>,
    budgets: Vec<Option<MemoryBudget>>,
}

impl Trainer {
    /// Sets up training on every row of `dataset` (or the training part
    /// of a [holdout](Self::holdout)) without taking a step: the
    /// held-out split, the start model (a new model of the trainer's kind
    /// over the dataset's columns, or the [warm start](Self::warm_start)),
    /// with its input scaling ([`TrainOptions::scale`], resolved now:
    /// training then keeps it) and the dataset's schema, and a loader per
    /// [strategy](Self::strategies), seeded by [`seed`](Self::seed). A
    /// loader without a [`memory`](LoaderOptions::memory) budget gets the
    /// default for its working set on this file
    /// ([`memory_budget_for`]), shared by the
    /// [`workers`](LoaderOptions::workers) (ranks on one machine).
    ///
    /// # Errors
    /// [`Error::BadArgument`] for training options out of range, a
    /// dataset without rows, a holdout given with an eval dataset, or
    /// either on a dataset that is not a file; [`Error::EmptySplit`] for
    /// a holdout that leaves a side without rows; [`Error::LengthMismatch`]
    /// for an evaluation dataset or a warm start of other columns; as
    /// [`Model::new`], [`Scale::apply`], [`Holdout::split`] and
    /// [`Loader::new`].
    pub fn prepare<S: Source + 'static>(&self, dataset: &Arc<Dataset<S>>) -> Result<Prepared<S>> {
        core::check_options(&self.options)?;
        if dataset.info().n_rows == 0 {
            return Err(Error::BadArgument {
                what: "training data",
                expected: "at least one row",
            });
        }
        let (train, eval, holdout) = self.split(dataset)?;
        let n_cols = train.info().n_cols;
        let mut model = match &self.start {
            Some(start) if start.n_cols() != n_cols => {
                return Err(Error::LengthMismatch {
                    what: "columns of the warm start's model",
                    expected: n_cols as u64,
                    found: start.n_cols() as u64,
                })
            }
            Some(start) => start.try_clone()?,
            None => Model::new(self.kind.clone(), n_cols, self.seed)?,
        };
        model.set_schema(&train.info().schema);
        // Resolved once: every strategy's copy trains with this scaling.
        self.options.scale.apply(&mut model, &train)?;
        let options = TrainOptions {
            scale: Scale::Model,
            ..self.options.clone()
        };
        let strategies = match self.strategies.is_empty() {
            true => vec![self.loader.strategy],
            false => self.strategies.clone(),
        };
        let (mut loaders, mut budgets) = (Vec::new(), Vec::new());
        for strategy in strategies {
            let mut o = LoaderOptions {
                strategy,
                seed: self.seed,
                ..self.loader.clone()
            };
            let budget = match o.memory {
                Some(_) => None,
                None => {
                    let budget = memory_budget_for(&train, &o);
                    o.memory = Some(budget.bytes / o.workers.max(1));
                    Some(budget)
                }
            };
            loaders.push(Loader::new(Arc::clone(&train), o)?);
            budgets.push(budget);
        }
        Ok(Prepared {
            source: Arc::clone(dataset),
            train,
            eval,
            holdout,
            model,
            options,
            loaders,
            budgets,
        })
    }

    /// The rows to train on, those to evaluate on, and the scratch files
    /// of a held-out split.
    #[allow(clippy::type_complexity)]
    fn split<S: Source + 'static>(
        &self,
        dataset: &Arc<Dataset<S>>,
    ) -> Result<(Arc<Dataset<S>>, Option<Arc<Dataset<S>>>, Option<Holdout>)> {
        if self.holdout.is_none() && self.eval.is_none() {
            return Ok((Arc::clone(dataset), None, None));
        }
        let bad = |what, expected| Err(Error::BadArgument { what, expected });
        // Held-out parts and evaluation sets are dataset files.
        let Some(file) = (dataset as &dyn Any).downcast_ref::<Arc<Dataset>>() else {
            return bad("holdout or eval", "a dataset file to train on");
        };
        let as_source = |d: &Arc<Dataset>| -> Arc<Dataset<S>> {
            let d: &dyn Any = d;
            Arc::clone(d.downcast_ref().expect("S is File"))
        };
        let Some(fraction) = self.holdout else {
            let eval = self.eval.as_ref().expect("an eval dataset");
            Error::check_equal("evaluation dataset", file.info().n_cols, eval.info().n_cols)?;
            return Ok((Arc::clone(dataset), Some(as_source(eval)), None));
        };
        if self.eval.is_some() {
            return bad(
                "holdout and eval",
                "one of them (holdout evaluates on its rows)",
            );
        }
        // Each part scaled on its own rows, with the kind training uses.
        let kind = match self.options.scale {
            Scale::None => None,
            Scale::Fit(kind) => Some(kind),
            Scale::Auto | Scale::Stored | Scale::Model => {
                file.info().scaling.as_ref().map(|s| s.kind())
            }
        };
        let split = Holdout::split(file, fraction, self.seed, kind)?;
        if !split.both_have_rows() {
            let (train, test) = split.infos();
            return Err(Error::EmptySplit {
                fraction,
                train_rows: train.n_rows,
                test_rows: test.n_rows,
            });
        }
        let parts = (as_source(split.train()), Some(as_source(split.test())));
        Ok((parts.0, parts.1, Some(split)))
    }
}

impl<S: Source + 'static> Prepared<S> {
    /// The rows trained on: the dataset given, or the training part of
    /// a held-out split.
    pub fn dataset(&self) -> &Arc<Dataset<S>> {
        &self.train
    }

    /// The rows evaluated on after each epoch: the eval dataset, or the
    /// held-out part.
    pub fn eval(&self) -> Option<&Arc<Dataset<S>>> {
        self.eval.as_ref()
    }

    /// The held-out split, when the trainer holds rows out.
    pub fn holdout(&self) -> Option<&Holdout> {
        self.holdout.as_ref()
    }

    /// The start model: each strategy trains a copy of it.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The training options (the scaling resolved on the start model:
    /// [`Scale::Model`]).
    pub fn options(&self) -> &TrainOptions {
        &self.options
    }

    /// One loader per strategy, in the order given.
    pub fn loaders(&self) -> &[Loader<S>] {
        &self.loaders
    }

    /// The memory budget each loader was given by default (in the
    /// loaders' order), `None` where its options set one. A budget is
    /// for the machine: the loader of a worker of `w` holds `1/w` of it.
    pub fn memory_budgets(&self) -> &[Option<MemoryBudget>] {
        &self.budgets
    }

    /// What the user should know before training: labels a classifier
    /// cannot use as they are (from a sample of at most
    /// [`LABEL_SAMPLE_BLOCKS`](super::LABEL_SAMPLE_BLOCKS) blocks of the
    /// dataset given, held-out rows included), then each loader's
    /// settings likely to shuffle poorly.
    ///
    /// # Errors
    /// Read errors of the label sample.
    pub fn warnings(&self) -> Result<Vec<TrainWarning>> {
        let mut warnings = Vec::new();
        if let Some(w) = labels_warning(self.model.kind(), &self.source)? {
            warnings.push(w);
        }
        for loader in &self.loaders {
            let strategy = loader.options().strategy;
            warnings.extend(loader.warnings().iter().map(|m| TrainWarning::Loader {
                strategy,
                message: m.clone(),
            }));
        }
        Ok(warnings)
    }

    /// Trains a model per loader, each from a copy of the start model
    /// (the last from the start model itself), evaluating on
    /// [`eval`](Self::eval) after each epoch, and calling `on_epoch` with
    /// the strategy and each report as it is made. Returns the fitted
    /// models in the loaders' order.
    ///
    /// # Errors
    /// As [`train`]: loader and model errors as they occur,
    /// [`Error::Diverged`].
    pub fn fit(self, mut on_epoch: impl FnMut(Strategy, &EpochReport)) -> Result<Vec<Fitted>> {
        let last = self.loaders.len().saturating_sub(1);
        let mut start = Some(self.model);
        let mut fitted = Vec::with_capacity(self.loaders.len());
        for (i, loader) in self.loaders.iter().enumerate() {
            let mut model = match i == last {
                true => start.take().expect("kept until the last strategy"),
                false => start.as_ref().expect("kept").try_clone()?,
            };
            let strategy = loader.options().strategy;
            let reports = train(
                &mut model,
                loader,
                &self.options,
                self.eval.as_ref(),
                |report| on_epoch(strategy, report),
            )?;
            fitted.push(Fitted {
                model,
                reports,
                strategy,
            });
        }
        Ok(fitted)
    }

    /// The start model, options, loaders and evaluation set, for the
    /// distributed trainer ([`crate::dist`]); the split's scratch files
    /// with them.
    #[allow(clippy::type_complexity)]
    pub(crate) fn into_parts(
        self,
    ) -> (
        Model,
        TrainOptions,
        Vec<Loader<S>>,
        Option<Arc<Dataset<S>>>,
        Option<Holdout>,
    ) {
        (
            self.model,
            self.options,
            self.loaders,
            self.eval,
            self.holdout,
        )
    }
}

/// The warning a classifier's labels call for ([`label_warning`] on a
/// [`label_sample`] of `dataset`), `None` for a regression or labels
/// that are fine.
fn labels_warning<S: Source>(
    kind: &ModelKind,
    dataset: &Dataset<S>,
) -> Result<Option<TrainWarning>> {
    let binary = match kind {
        ModelKind::Logistic | ModelKind::Svm => true,
        ModelKind::Softmax { .. } | ModelKind::Mlp { .. } => false,
        ModelKind::LinearRegression => return Ok(None),
    };
    let seen = label_sample(dataset, REGRESSION_SAMPLE)?;
    let Some(regression) = label_warning(&seen, binary) else {
        return Ok(None);
    };
    let path: PathBuf = Path::to_path_buf(dataset.path());
    // label_warning warns with three labels at least.
    let first = [seen[0], seen[1], seen[2]];
    let model = kind.name();
    Ok(Some(match regression {
        true => {
            let more = seen.len() == REGRESSION_SAMPLE;
            TrainWarning::RegressionLabels {
                path,
                model,
                first,
                distinct: if more { seen.len() - 1 } else { seen.len() },
                more,
            }
        }
        false => TrainWarning::MoreThanTwoLabels { path, model, first },
    }))
}

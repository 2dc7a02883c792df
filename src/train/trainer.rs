//! [`Trainer`]: the short path from rows to a trained model. A builder
//! over [`TrainOptions`] and [`LoaderOptions`] with the command line's
//! defaults (Adam at 0.03, the file's stored scaling, CorgiPile
//! shuffling, the last epoch's iterates averaged) that fits a model on a
//! dataset file, an open [`Dataset`] or rows in memory, and the model's
//! predictions on rows in memory ([`Model::predict_rows`]) without labels.
//! Every front end trains through it: the command line and Python set up
//! a run with [`Trainer::prepare`] (`prepared.rs`), say what it will do,
//! then fit it; so does the distributed trainer ([`crate::dist`]).

use std::path::Path;
use std::sync::Arc;

use super::setup::infer_kind;
use super::{EpochReport, Scale, TrainOptions};
use crate::cleanup::ScratchFile;
use crate::dataset::{Dataset, DatasetWriter, Prefetch, Source, WriterOptions};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::loader::{LoaderOptions, Strategy};
use crate::model::{Model, ModelKind, Optimizer, Predictions};
use crate::page::Page;
use crate::scale::ScaleKind;
use crate::sparse::SparseBatch;

/// Fits models: the model kind, the training options and the loader's.
///
/// ```
/// use tocpile::model::ModelKind;
/// use tocpile::train::Trainer;
/// use tocpile::SparseBatch;
///
/// // Two columns; the class is whether the first exceeds the second.
/// let points: Vec<[f64; 2]> = (0..400)
///     .map(|i| [(i % 20) as f64, (i / 20) as f64])
///     .collect();
/// let labels: Vec<f64> = points.iter().map(|p| if p[0] > p[1] { 2.0 } else { 1.0 }).collect();
/// let rows = SparseBatch::from_dense_rows(2, &points)?;
///
/// let fitted = Trainer::new(ModelKind::Logistic).epochs(20).fit_rows(&rows, &labels)?;
/// let predicted = fitted.model.predict_rows(&rows)?.labels(); // in the labels given: 1 or 2
/// let right = predicted.iter().zip(&labels).filter(|(p, y)| p == y).count();
/// assert!(right as f64 / labels.len() as f64 > 0.9);
/// # Ok::<(), tocpile::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Trainer {
    pub(super) kind: ModelKind,
    pub(super) options: TrainOptions,
    pub(super) loader: LoaderOptions,
    /// Strategies to train a model each with; empty: the loader's.
    pub(super) strategies: Vec<Strategy>,
    pub(super) seed: u64,
    pub(super) holdout: Option<f64>,
    pub(super) eval: Option<Arc<Dataset>>,
    pub(super) start: Option<Model>,
}

/// A trained model and what each epoch did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Fitted {
    /// The model.
    pub model: Model,
    /// One report per epoch.
    pub reports: Vec<EpochReport>,
    /// The shuffling strategy it was trained with.
    pub strategy: Strategy,
}

impl Trainer {
    /// A trainer of `kind` with the default options
    /// ([`TrainOptions::default`], [`LoaderOptions::default`]) and seed 0.
    pub fn new(kind: ModelKind) -> Trainer {
        Trainer {
            kind,
            options: TrainOptions::default(),
            loader: LoaderOptions::default(),
            strategies: Vec::new(),
            seed: 0,
            holdout: None,
            eval: None,
            start: None,
        }
    }

    /// A trainer of the model named `name` ([`ModelKind::from_name`]) for
    /// `dataset`, softmax and mlp with their classes inferred from its
    /// labels unless `classes` is given ([`infer_kind`]).
    ///
    /// # Errors
    /// As [`infer_kind`].
    pub fn for_dataset<S: Source>(
        name: &str,
        classes: Option<usize>,
        dataset: &Dataset<S>,
    ) -> Result<Trainer> {
        Ok(Trainer::new(infer_kind(name, classes, dataset)?))
    }

    /// The model kind.
    pub fn kind(&self) -> &ModelKind {
        &self.kind
    }

    /// The input scaling the model trains with (default [`Scale::Auto`]).
    pub fn scale(mut self, scale: Scale) -> Trainer {
        self.options.scale = scale;
        self
    }

    /// Holds out a share `fraction` of the rows of a dataset file (a
    /// hash of the row number under the [`seed`](Self::seed) picks them,
    /// [`Holdout`](super::Holdout)), trains on the others and evaluates
    /// on those after each epoch (each part scaled on its own rows, with
    /// the kind the file stores, or the one [`scale`](Self::scale) fits).
    pub fn holdout(mut self, fraction: f64) -> Trainer {
        self.holdout = Some(fraction);
        self
    }

    /// Evaluates the model on every row of `dataset` after each epoch
    /// (the reports' `eval`).
    pub fn eval(mut self, dataset: Arc<Dataset>) -> Trainer {
        self.eval = Some(dataset);
        self
    }

    /// Training starts from `model`'s parameters (and its input scaling,
    /// kept under [`Scale::Auto`]) rather than a new model: a warm
    /// start. The trainer's kind is then the model's.
    pub fn warm_start(mut self, model: Model) -> Trainer {
        self.kind = model.kind().clone();
        self.start = Some(model);
        self
    }

    /// Every training option at once.
    pub fn options(mut self, options: TrainOptions) -> Trainer {
        self.options = options;
        self
    }

    /// Every loader option at once (shuffling, batch size, buffer; its
    /// seed is replaced by [`seed`](Self::seed)'s, its strategy by
    /// [`strategies`](Self::strategies) when given).
    pub fn loader(mut self, options: LoaderOptions) -> Trainer {
        self.loader = options;
        self
    }

    /// Trains one model per strategy, each from the same start model
    /// (the same parameters, scaling and seed), for comparison
    /// ([`prepare`](Self::prepare), [`Prepared::fit`](super::Prepared::fit));
    /// empty: the loader options' strategy alone. [`fit`](Self::fit)
    /// returns the first strategy's model.
    pub fn strategies(mut self, strategies: impl IntoIterator<Item = Strategy>) -> Trainer {
        self.strategies = strategies.into_iter().collect();
        self
    }

    /// Epochs to run.
    pub fn epochs(mut self, epochs: usize) -> Trainer {
        self.options.epochs = epochs;
        self
    }

    /// The step rule, at its default learning rate
    /// ([`Optimizer::default_learning_rate`]).
    pub fn optimizer(mut self, rule: Optimizer) -> Trainer {
        self.options = self.options.with_optimizer(rule);
        self
    }

    /// The learning rate of the first epoch.
    pub fn learning_rate(mut self, learning_rate: f64) -> Trainer {
        self.options.learning_rate = learning_rate;
        self
    }

    /// The L2 regularisation strength.
    pub fn l2(mut self, l2: f64) -> Trainer {
        self.options.l2 = l2;
        self
    }

    /// Rows per mini-batch.
    pub fn batch_rows(mut self, rows: usize) -> Trainer {
        self.loader.batch_rows = rows;
        self
    }

    /// The seed of the model's start and of every shuffle.
    pub fn seed(mut self, seed: u64) -> Trainer {
        self.seed = seed;
        self
    }

    /// The training options as set.
    pub fn train_options(&self) -> &TrainOptions {
        &self.options
    }

    /// The loader options as set.
    pub fn loader_options(&self) -> &LoaderOptions {
        &self.loader
    }

    /// Fits a model on the dataset file at `path`.
    ///
    /// # Errors
    /// As [`Dataset::open`] and [`fit`](Self::fit).
    pub fn fit_file(&self, path: impl AsRef<Path>) -> Result<Fitted> {
        self.fit(&Arc::new(Dataset::open(path)?))
    }

    /// Fits a model on every row of `dataset`: a new model of the
    /// trainer's kind over its columns (its schema recorded), or the
    /// [warm start](Self::warm_start), trained by [`train`](super::train)
    /// through a [`Loader`](crate::loader::Loader): [`prepare`](Self::prepare)
    /// then [`Prepared::fit`](super::Prepared::fit).
    ///
    /// # Errors
    /// As [`fit_with`](Self::fit_with).
    pub fn fit<S: Source + 'static>(&self, dataset: &Arc<Dataset<S>>) -> Result<Fitted> {
        self.fit_with(dataset, |_| {})
    }

    /// [`fit`](Self::fit), calling `on_epoch` with each epoch's report as
    /// it is made (for progress output). With several
    /// [strategies](Self::strategies), the first one's model (each
    /// strategy's reports are passed on).
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare) and [`Prepared::fit`](super::Prepared::fit).
    pub fn fit_with<S: Source + 'static>(
        &self,
        dataset: &Arc<Dataset<S>>,
        mut on_epoch: impl FnMut(&EpochReport),
    ) -> Result<Fitted> {
        let fitted = self.prepare(dataset)?.fit(|_, report| on_epoch(report))?;
        Ok(fitted.into_iter().next().expect("a model per strategy"))
    }

    /// Fits a model on rows in memory and their labels: the rows are
    /// written to a scratch dataset file in the temporary directory
    /// (TOC pages, a max-abs scaling stored, as `tocpile encode` writes
    /// them), trained on as [`fit`](Self::fit) trains, and the file
    /// removed.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless there is one label per row; as
    /// [`DatasetWriter`] and [`fit`](Self::fit).
    pub fn fit_rows(&self, rows: &SparseBatch, labels: &[f64]) -> Result<Fitted> {
        if labels.len() != rows.n_rows() {
            return Err(Error::LengthMismatch {
                what: "labels (one per row)",
                expected: rows.n_rows() as u64,
                found: labels.len() as u64,
            });
        }
        let pid = std::process::id();
        let scratch = ScratchFile::claim(&std::env::temp_dir(), |n| {
            format!(".tocpile-fit-{pid}-{n}.toc")
        })?;
        let mut writer =
            DatasetWriter::create(scratch.path(), rows.n_cols(), WriterOptions::default())?;
        writer.set_scaling(Some(ScaleKind::MaxAbs))?;
        writer.push(rows, labels)?;
        writer.finish()?;
        let fitted = self.fit_file(scratch.path());
        drop(scratch);
        fitted
    }
}

impl Model {
    /// The model's predictions for rows in memory (no labels needed):
    /// classes and labels ([`Predictions::label`]), probabilities and raw
    /// scores (the decision function).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] for rows of another column count; as
    /// [`Model::predict`].
    pub fn predict_rows(&self, rows: &SparseBatch) -> Result<Predictions> {
        // The labels of a page are not read by prediction.
        let page = Page::encode(FormatKind::Csr, rows, &vec![0.0; rows.n_rows()])?;
        self.predict(&[page])
    }

    /// The model's predictions for every row of `dataset`, a block at a
    /// time in file order (read ahead on another thread), after checking
    /// that the dataset has the model's columns ([`Model::check_schema`]).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] or [`Error::BadArgument`] for data of
    /// other columns or another schema; then, per block, read errors and
    /// those of [`Model::predict`].
    pub fn predict_dataset<'a, S: Source + 'static>(
        &'a self,
        dataset: &Arc<Dataset<S>>,
    ) -> Result<impl Iterator<Item = Result<Predictions>> + 'a> {
        let info = dataset.info();
        self.check_schema(info.n_cols, &info.schema)?;
        let blocks: Prefetch = dataset.prefetch((0..dataset.n_blocks()).collect(), 2)?;
        Ok(blocks.map(move |block| self.predict(&block?.pages()?)))
    }
}

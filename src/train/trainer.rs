//! [`Trainer`]: the short path from rows to a trained model. A builder
//! over [`TrainOptions`] and [`LoaderOptions`] with the command line's
//! defaults (Adam at 0.03, the file's stored scaling, CorgiPile
//! shuffling, the last epoch's iterates averaged) that fits a model on a
//! dataset file, an open [`Dataset`] or rows in memory, and the model's
//! predictions on rows in memory ([`Model::predict_rows`]) without labels.

use std::path::Path;
use std::sync::Arc;

use std::any::Any;

use super::setup::{infer_kind, Holdout};
use super::{train, EpochReport, Scale, TrainOptions};
use crate::cleanup::ScratchFile;
use crate::dataset::{Dataset, DatasetWriter, Source, WriterOptions};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::loader::{Loader, LoaderOptions};
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
    kind: ModelKind,
    options: TrainOptions,
    loader: LoaderOptions,
    seed: u64,
    holdout: Option<f64>,
    eval: Option<Arc<Dataset>>,
    start: Option<Model>,
}

/// A trained model and what each epoch did.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The model.
    pub model: Model,
    /// One report per epoch.
    pub reports: Vec<EpochReport>,
}

impl Trainer {
    /// A trainer of `kind` with the default options
    /// ([`TrainOptions::default`], [`LoaderOptions::default`]) and seed 0.
    pub fn new(kind: ModelKind) -> Trainer {
        Trainer {
            kind,
            options: TrainOptions::default(),
            loader: LoaderOptions::default(),
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
    /// [`Holdout`]), trains on the others and evaluates on those after
    /// each epoch (each part scaled on its own rows, with the kind the
    /// file stores, or the one [`scale`](Self::scale) fits).
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
    /// seed is replaced by [`seed`](Self::seed)'s).
    pub fn loader(mut self, options: LoaderOptions) -> Trainer {
        self.loader = options;
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

    /// Fits a model on the dataset file at `path`.
    ///
    /// # Errors
    /// As [`Dataset::open`] and [`fit`](Self::fit).
    pub fn fit_file(&self, path: impl AsRef<Path>) -> Result<Fitted> {
        self.fit(&Arc::new(Dataset::open(path)?))
    }

    /// Fits a model on every row of `dataset`: a new model of the
    /// trainer's kind over its columns (its schema recorded), or the
    /// [warm start](Self::warm_start), trained by [`train`] through a
    /// [`Loader`].
    ///
    /// # Errors
    /// As [`fit_with`](Self::fit_with).
    pub fn fit<S: Source + 'static>(&self, dataset: &Arc<Dataset<S>>) -> Result<Fitted> {
        self.fit_with(dataset, |_| {})
    }

    /// [`fit`](Self::fit), calling `on_epoch` with each epoch's report as
    /// it is made (for progress output).
    ///
    /// # Errors
    /// [`Error::BadArgument`] for a dataset without rows, a
    /// [holdout](Self::holdout) that leaves a part without rows or is
    /// given with an [eval](Self::eval) dataset, or either on a dataset
    /// that is not a file; [`Error::LengthMismatch`] for an evaluation
    /// dataset or a warm start of other columns; as [`Model::new`],
    /// [`Holdout::split`], [`Loader::new`] and [`train`].
    pub fn fit_with<S: Source + 'static>(
        &self,
        dataset: &Arc<Dataset<S>>,
        on_epoch: impl FnMut(&EpochReport),
    ) -> Result<Fitted> {
        if dataset.info().n_rows == 0 {
            return Err(Error::BadArgument {
                what: "training data",
                expected: "at least one row",
            });
        }
        if self.holdout.is_none() && self.eval.is_none() {
            return self.train_on(dataset, None, on_epoch);
        }
        let bad = |what, expected| Err(Error::BadArgument { what, expected });
        // Held-out parts and evaluation sets are dataset files.
        let Some(file) = (dataset as &dyn Any).downcast_ref::<Arc<Dataset>>() else {
            return bad("holdout or eval", "a dataset file to train on");
        };
        let Some(fraction) = self.holdout else {
            let eval = self.eval.as_ref().expect("an eval dataset");
            check_columns("evaluation dataset", file, eval)?;
            return self.train_on(file, Some(eval), on_epoch);
        };
        if self.eval.is_some() {
            return bad(
                "holdout and eval",
                "one of them (holdout evaluates on its rows)",
            );
        }
        let kind = match self.options.scale {
            Scale::None => None,
            Scale::Fit(kind) => Some(kind),
            Scale::Auto | Scale::Stored | Scale::Model => {
                file.info().scaling.as_ref().map(|s| s.kind())
            }
        };
        let split = Holdout::split(file, fraction, self.seed, kind)?;
        if !split.both_have_rows() {
            return bad("held-out share", "a share that leaves rows on both sides");
        }
        self.train_on(split.train(), Some(split.test()), on_epoch)
    }

    fn train_on<S: Source + 'static>(
        &self,
        dataset: &Arc<Dataset<S>>,
        eval: Option<&Arc<Dataset<S>>>,
        on_epoch: impl FnMut(&EpochReport),
    ) -> Result<Fitted> {
        let n_cols = dataset.info().n_cols;
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
        model.set_schema(&dataset.info().schema);
        let loader = Loader::new(
            Arc::clone(dataset),
            LoaderOptions {
                seed: self.seed,
                ..self.loader.clone()
            },
        )?;
        let reports = train(&mut model, &loader, &self.options, eval, on_epoch)?;
        Ok(Fitted { model, reports })
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

    /// The model's predictions for every row of `dataset` in file order,
    /// consecutive blocks together (each item holds 32,768 rows or more,
    /// the last the rest; their blocks read, validated and scored in
    /// parallel), after checking that the dataset has the model's columns
    /// ([`Model::check_schema`]).
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
        Ok(self.predict_file(dataset))
    }
}

/// [`Error::LengthMismatch`] unless `other` has `dataset`'s columns.
fn check_columns(what: &'static str, dataset: &Dataset, other: &Dataset) -> Result<()> {
    Error::check_equal(what, dataset.info().n_cols, other.info().n_cols)
}

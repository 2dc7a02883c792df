//! Models trained by mini-batch SGD with the gradient computed by the
//! kernels **on the encoded batch**, never on a decoded copy (TOC paper
//! section 2.1.4, Table 1, and the models of section 5.3).
//!
//! | [`ModelKind`] | loss | kernels per page | paper |
//! |---|---|---|---|
//! | `Logistic` | log-loss | `A.v` (margins), `v.A` (gradient) | TOC 5.3 "LR", CorgiPile 7.4.1 |
//! | `Svm` | hinge | `A.v`, `v.A` | TOC 5.3 "SVM", CorgiPile 7.4.1 |
//! | `LinearRegression` | `(x.w + b - y)^2 / 2` | `A.v`, `v.A` | TOC Table 1 and equation 3, CorgiPile 7.4.2 |
//! | `Softmax { classes }` | cross-entropy | `A.M` (logits), `M.A` (gradient) | CorgiPile 7.4.2 |
//! | `Mlp { hidden, outputs }` | cross-entropy | `A.M` (first layer), `M.A` (its gradient); the rest dense | TOC 5.3 "NN" |
//!
//! A mini-batch is a slice of [`Page`]s, each rows in some format and
//! their labels; gradients add up page by page, so a batch is never
//! concatenated. [`Model::gradient`] gives the **mean** loss gradient over
//! every row of the pages plus `l2 * w` (the gradient of `l2 / 2 * |w|^2`,
//! biases and intercepts excluded), [`Model::step`] applies it.
//!
//! ```
//! use tocpile::formats::FormatKind;
//! use tocpile::model::{Gradient, Model, ModelKind};
//! use tocpile::{Page, SparseBatch};
//!
//! // A mini-batch of two TOC pages; the label is 1 when the first column is set.
//! let page = |rows: &[[f64; 3]], labels: &[f64]| {
//!     Page::encode(FormatKind::TocFull, &SparseBatch::from_dense_rows(3, rows)?, labels)
//! };
//! let batch = [
//!     page(&[[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], &[1.0, 0.0])?,
//!     page(&[[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]], &[1.0, 0.0])?,
//! ];
//! let mut model = Model::new(ModelKind::Logistic, 3, 0)?;
//! let mut grad = Gradient::new(&model);
//! let before = model.evaluate(&batch)?.mean_loss();
//! for _ in 0..50 {
//!     model.gradient(&batch, 0.0, &mut grad)?; // A.v and v.A on the encoded pages
//!     model.step(&grad, 0.5);
//! }
//! let after = model.evaluate(&batch)?;
//! assert!(after.mean_loss() < before);
//! assert_eq!(after.accuracy(), 1.0);
//! # Ok::<(), tocpile::Error>(())
//! ```
//!
//! Labels:
//! - binary models (`Logistic`, `Svm`, and `Mlp` with one output) take a
//!   label `> 0` as the positive class, so 0/1 and -1/+1 labels both work;
//! - `Softmax` and `Mlp` with several outputs take the label as a class
//!   index: a label that is not an integer in `0..classes` is an
//!   [`Error::BadLabel`] naming the page and row;
//! - `LinearRegression` uses the label as it is.
//!
//! Every model rejects a label that is not finite (`Error::BadLabel`).
//!
//! Departures from the papers:
//! - TOC section 5.3 trains multi-class LR and SVM one-versus-the-rest;
//!   here LR and SVM are binary, and multi-class data uses `Softmax`
//!   (multinomial logistic regression, as CorgiPile 7.4.2).
//! - TOC Table 1 lists a squared loss for its one-hidden-layer network; the
//!   network of section 5.3 (two sigmoid hidden layers of 200 and 50,
//!   sigmoid or softmax output, cross-entropy) is the one built here, with
//!   any number of hidden layers.
//! - The paper trains the network "in parallel the classical way"; here
//!   the pages of a mini-batch are processed in parallel (rayon) and their
//!   gradients summed in page order, so results do not depend on the
//!   thread count.
//!
//! Model files (save and load) are specified in `docs/FORMAT.md`, "Model
//! files".

mod file;
mod kind;
mod labels;
mod linear;
mod logistic;
mod metrics;
mod network;
mod optim;
mod params;
mod predict;
mod split;
mod stats;

use crate::error::{Error, Result};
use crate::page::Page;
use crate::rng::Rng;
use crate::scale::Scaling;
use crate::sparse::MAX_COLS;

pub use kind::{ModelKind, DEFAULT_HIDDEN};
pub(crate) use logistic::{sigmoid, softplus};
pub use metrics::{auc, Evaluation, EvaluationReport};
pub use optim::Optimizer;
use params::param_count;
pub use params::Gradient;
pub use predict::Predictions;
pub use stats::Metrics;

// Not part of the API (hidden): the optimizer's state, the network's
// layers, the gradient's split and the per-batch figures, used by the
// trainers of the command line, the PostgreSQL extension and the tests;
// may change in any release.
#[doc(hidden)]
pub use optim::OptimizerState;
#[doc(hidden)]
pub use params::Layer;
#[doc(hidden)]
pub use split::GradientHelper;
#[doc(hidden)]
pub use stats::BatchStats;

/// A model: its kind, input width and parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    kind: ModelKind,
    n_cols: usize,
    layers: Vec<Layer>,
    /// Input column factors: the model learns in the coordinates of the
    /// scaled data (see [`set_scaling`](Model::set_scaling)).
    scaling: Option<Scaling>,
    /// CRC-32 of the schema text of the data trained on (0: none known).
    schema: u32,
    /// A binary classifier's two labels as the data has them (class 0,
    /// class 1), when they are not 0 and 1 (see [`Model::binary_labels`]).
    binary_labels: Option<[f64; 2]>,
}

/// Stream label of model initialisation in [`Rng::stream`].
const INIT_STREAM: u64 = 0x4d4f_4445_4c49_4e49; // "MODELINI"

impl Model {
    /// Moves every parameter a share `weight` of the way towards
    /// `current`'s (`self += weight * (current - self)`): with `weight =
    /// 1 / (k + 1)` after the `k`-th of a run of steps, `self` is the mean
    /// of the run's iterates (Polyak-Ruppert averaging).
    ///
    /// # Panics
    /// If `current` is not of the same kind and shape.
    pub(crate) fn average_towards(&mut self, current: &Model, weight: f64) {
        assert_eq!(self.layers.len(), current.layers.len(), "the same layers");
        for (a, c) in self.layers.iter_mut().zip(&current.layers) {
            for (x, &y) in a.values_mut().zip(c.values()) {
                *x += weight * (y - *x);
            }
        }
    }

    /// A new model over rows of `n_cols` columns. Linear and softmax
    /// models start at zero (weights and intercepts); an MLP's weights are
    /// drawn uniformly from `+-sqrt(6 / (fan_in + fan_out))` (Glorot and
    /// Bengio, 2010) by the crate's generator under `seed`, its biases
    /// zero. The same seed gives the same model.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for `n_cols == 0`, a softmax with fewer than
    /// two classes, or an MLP layer of width 0; [`Error::TooLarge`] for
    /// more than [`MAX_COLS`] columns or parameters that
    /// cannot be addressed; [`Error::LimitExceeded`] for more columns or
    /// parameters than [`limits`](crate::limits::limits) allow
    /// (`max_cols`, `max_params`); [`Error::OutOfMemory`] if the
    /// parameters cannot be allocated.
    pub fn new(kind: ModelKind, n_cols: usize, seed: u64) -> Result<Model> {
        let widths = kind.widths();
        check_dims(&kind, n_cols, &widths)?;
        // The resource policy: a one-line file with column id 2^32 must not
        // make a model allocate 34 GB, nor column 500,000 a network 100
        // million parameters (3.9 GB to train). (A model file's parameters
        // are backed by its bytes, so loading one needs no such limit.)
        crate::limits::check_cols(n_cols, "model columns")?;
        crate::limits::check_params(param_count(n_cols, &widths).unwrap_or(usize::MAX))?;
        let mut model = Model::zeros(kind, n_cols)?;
        if matches!(model.kind, ModelKind::Mlp { .. }) {
            let mut inputs = n_cols;
            for (i, layer) in model.layers.iter_mut().enumerate() {
                let w = layer.weights.ncols();
                let r = (6.0 / (inputs + w) as f64).sqrt();
                let mut rng = Rng::stream(seed, &[INIT_STREAM, i as u64]);
                layer.weights.mapv_inplace(|_| (2.0 * rng.unit() - 1.0) * r);
                inputs = w;
            }
        }
        Ok(model)
    }

    /// A model of zeros, its dimensions checked (not against the resource
    /// limits) and its parameters allocated fallibly.
    fn zeros(kind: ModelKind, n_cols: usize) -> Result<Model> {
        let widths = kind.widths();
        check_dims(&kind, n_cols, &widths)?;
        let mut layers = Vec::with_capacity(widths.len());
        let mut inputs = n_cols;
        for &w in &widths {
            layers.push(Layer::try_zeros(inputs, w)?);
            inputs = w;
        }
        Ok(Model {
            kind,
            n_cols,
            layers,
            scaling: None,
            schema: 0,
            binary_labels: None,
        })
    }

    /// Sets the input scaling (`None` for none): training then runs as on
    /// data whose column `j` is multiplied by `factors[j]`, without
    /// touching the data. The parameters stay those of the raw data (so
    /// [`evaluate`](Self::evaluate) and prediction take raw rows), while
    /// [`step`](Self::step), the optimizers and the L2 penalty work in the
    /// scaled coordinates `w'_j = w_j / s_j` of the first layer's weights:
    /// the step of `w_j` is `s_j^2` times the raw gradient's, and the
    /// penalty is `l2 / 2 * sum (w_j / s_j)^2`. A model trained so equals,
    /// up to rounding, a model trained on explicitly scaled rows with its
    /// first layer's weight rows multiplied by `s_j`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when the scaling has another column
    /// count than the model.
    pub fn set_scaling(&mut self, scaling: Option<Scaling>) -> Result<()> {
        if let Some(s) = &scaling {
            if s.n_cols() != self.n_cols {
                return Err(Error::LengthMismatch {
                    what: "columns of the scaling (the model's n_cols)",
                    expected: self.n_cols as u64,
                    found: s.n_cols() as u64,
                });
            }
        }
        self.scaling = scaling;
        Ok(())
    }

    /// The input scaling the model trains with, if any.
    pub fn scaling(&self) -> Option<&Scaling> {
        self.scaling.as_ref()
    }

    /// Records the schema text of the data the model is trained on (a
    /// dataset file's [`schema`](crate::dataset::DatasetInfo::schema));
    /// model files keep its CRC-32, and
    /// [`check_schema`](Self::check_schema) compares other data with it.
    pub fn set_schema(&mut self, schema: &str) {
        self.schema = schema_fingerprint(schema);
    }

    /// Checks that rows with schema text `schema` (empty for none) are
    /// the columns this model was trained on: same column count and, when
    /// both sides know a schema, the same schema.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] for another column count;
    /// [`Error::BadArgument`] for another schema.
    pub fn check_schema(&self, n_cols: usize, schema: &str) -> Result<()> {
        if n_cols != self.n_cols {
            return Err(Error::LengthMismatch {
                what: "columns of the data (the model's n_cols)",
                expected: self.n_cols as u64,
                found: n_cols as u64,
            });
        }
        let other = schema_fingerprint(schema);
        if self.schema != 0 && other != 0 && other != self.schema {
            return Err(Error::BadArgument {
                what: "schema of the data",
                expected: "the schema the model was trained on (encode the data with \
                           --schema TRAIN.toc)",
            });
        }
        Ok(())
    }

    /// The model's kind.
    pub fn kind(&self) -> &ModelKind {
        &self.kind
    }

    /// Columns of the rows the model takes.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// The layers, input side first (one for linear and softmax models).
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Number of parameters (weights and biases).
    pub fn n_params(&self) -> usize {
        self.layers.iter().map(Layer::len).sum()
    }

    /// Every parameter, layer by layer: weights row by row (`inputs x
    /// outputs`), then the bias. Model files store them in this order.
    pub fn params(&self) -> Vec<f64> {
        self.layers
            .iter()
            .flat_map(Layer::values)
            .copied()
            .collect()
    }

    /// Replaces every parameter (in [`params`](Self::params) order).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `params` has
    /// [`n_params`](Self::n_params) values; the model is then unchanged.
    pub fn set_params(&mut self, params: &[f64]) -> Result<()> {
        if params.len() != self.n_params() {
            return Err(Error::LengthMismatch {
                what: "model parameters",
                expected: self.n_params() as u64,
                found: params.len() as u64,
            });
        }
        let dst = self.layers.iter_mut().flat_map(Layer::values_mut);
        dst.zip(params).for_each(|(d, &s)| *d = s);
        Ok(())
    }

    /// `l2 / 2` times the squared norm of the weights (biases excluded):
    /// the regulariser whose gradient [`gradient`](Self::gradient) adds.
    pub fn penalty(&self, l2: f64) -> f64 {
        let outputs = self.layers[0].weights.ncols().max(1);
        let sq: f64 = self
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| match (&self.scaling, i) {
                (Some(s), 0) => l
                    .weights
                    .iter()
                    .enumerate()
                    .map(|(k, w)| (w / s.factors()[k / outputs]).powi(2))
                    .sum::<f64>(),
                _ => l.weights.iter().map(|w| w * w).sum::<f64>(),
            })
            .sum();
        0.5 * l2 * sq
    }

    /// Writes into `grad` the mean gradient of the loss over every row of
    /// `pages` (a mini-batch), plus `l2 * w` for the weights (not the
    /// biases), and returns the loss and accuracy figures of the rows under
    /// the current parameters (the loss excludes the penalty: see
    /// [`penalty`](Self::penalty)). With no rows the data term is zero.
    /// `grad` is reshaped to the model if needed.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] for a page whose column count differs
    /// from the model's; [`Error::BadLabel`] for a label the model cannot
    /// use (see the module docs). `grad` is unspecified after an error.
    pub fn gradient(&self, pages: &[Page], l2: f64, grad: &mut Gradient) -> Result<BatchStats> {
        let rows = self.check_pages(pages)?;
        grad.reset(self, pages.len())?;
        let stats = if self.is_linear() {
            linear::run(self, pages, Some(grad))?
        } else {
            network::run(self, pages, Some(grad))?
        };
        grad.finish(self, rows, l2);
        Ok(stats)
    }

    /// [`gradient`](Self::gradient) with a linear model's pages shared
    /// with `helper`'s thread (see [`GradientHelper`]): the trainer's
    /// thread takes the first half of the pages (the larger), the helper
    /// the rest.
    /// The same gradient up to rounding (sums are grouped by thread);
    /// other models, and a single page, run as `gradient`.
    ///
    /// # Errors
    /// As [`gradient`](Self::gradient).
    pub fn gradient_split(
        &self,
        pages: &[Page],
        l2: f64,
        grad: &mut Gradient,
        helper: &mut GradientHelper,
    ) -> Result<BatchStats> {
        if !self.is_linear() || pages.len() < 2 {
            return self.gradient(pages, l2, grad);
        }
        let rows = self.check_pages(pages)?;
        grad.reset(self, pages.len())?;
        let layer = &self.layers[0];
        let w = linear::weights(layer);
        let w = &w[..];
        let b = layer.bias[0];
        // The trainer's thread takes the larger half: the helper then
        // usually finishes first, and the trainer does not wait.
        let (mine, theirs) = pages.split_at(pages.len() - pages.len() / 2);
        let gl = &mut grad.layers[0];
        let gw = gl
            .weights
            .as_slice_mut()
            .expect("a linear gradient is one column");
        let ws = &mut grad.work[0];
        let mut own = (0.0, BatchStats::default());
        let (kind, above) = (&self.kind, self.positive_above());
        let (their_bias, their_stats) = helper.run((kind, above), w, b, theirs, gw, |gw| {
            own = linear::gradient_add(kind, above, w, b, mine, gw, ws);
        });
        let (mut bias, mut stats) = own;
        bias += their_bias;
        stats.merge(&their_stats);
        gl.bias[0] += bias;
        grad.finish(self, rows, l2);
        Ok(stats)
    }

    /// `w -= lr * grad` for every parameter (with a
    /// [scaling](Self::set_scaling), `w_j -= lr * s_j^2 * grad_j` for the
    /// first layer's weight rows: plain SGD in the scaled coordinates).
    ///
    /// # Panics
    /// If `grad` was not shaped by this model (see [`Gradient::new`]).
    pub fn step(&mut self, grad: &Gradient, lr: f64) {
        assert_eq!(
            grad.layers.len(),
            self.layers.len(),
            "gradient of another model"
        );
        for (i, (l, g)) in self.layers.iter_mut().zip(&grad.layers).enumerate() {
            assert_eq!(
                l.weights.dim(),
                g.weights.dim(),
                "gradient of another model"
            );
            match (&self.scaling, i) {
                (Some(s), 0) => match (l.weights.as_slice_mut(), g.weights.as_slice()) {
                    // Row-major, as the model makes them: plain slices
                    // rather than a 1-element view per row (linear models).
                    (Some(w), Some(gw)) => {
                        let outputs = g.weights.ncols().max(1);
                        let rows = w.chunks_mut(outputs).zip(gw.chunks(outputs));
                        for ((w, g), &f) in rows.zip(s.factors()) {
                            let a = -lr * f * f;
                            w.iter_mut().zip(g).for_each(|(w, &g)| *w += a * g);
                        }
                    }
                    _ => {
                        let rows = l.weights.rows_mut().into_iter().zip(g.weights.rows());
                        for ((mut w, g), &f) in rows.zip(s.factors()) {
                            w.scaled_add(-lr * f * f, &g);
                        }
                    }
                },
                _ => l.weights.scaled_add(-lr, &g.weights),
            }
            l.bias.scaled_add(-lr, &g.bias);
        }
    }

    /// Loss and accuracy figures of the rows of `pages` under the current
    /// parameters, without a gradient.
    ///
    /// # Errors
    /// As [`gradient`](Self::gradient).
    pub fn evaluate(&self, pages: &[Page]) -> Result<BatchStats> {
        self.check_pages(pages)?;
        if self.is_linear() {
            linear::run(self, pages, None)
        } else {
            network::run(self, pages, None)
        }
    }

    pub(crate) fn is_linear(&self) -> bool {
        matches!(
            self.kind,
            ModelKind::Logistic | ModelKind::Svm | ModelKind::LinearRegression
        )
    }

    /// Checks the pages' shapes and labels (a [`Page`] has one label per
    /// row by construction); returns the total row count.
    fn check_pages(&self, pages: &[Page]) -> Result<usize> {
        let classes = self.kind.classes();
        let mut rows = 0usize;
        for (p, page) in pages.iter().enumerate() {
            if page.n_cols() != self.n_cols {
                return Err(Error::LengthMismatch {
                    what: "columns of a page (the model's n_cols)",
                    expected: self.n_cols as u64,
                    found: page.n_cols() as u64,
                });
            }
            if page.labels_fit(classes) {
                rows += page.n_rows();
                continue;
            }
            for (row, &label) in page.labels().iter().enumerate() {
                let bad = |expected: String| Error::BadLabel {
                    page: p,
                    row,
                    label,
                    expected,
                };
                if !label.is_finite() {
                    return Err(bad("a finite number".into()));
                }
                if let Some(c) = classes {
                    if label < 0.0 || label >= c as f64 || label.fract() != 0.0 {
                        return Err(bad(format!("a class index in 0..{c}")));
                    }
                }
            }
            rows += page.n_rows();
        }
        Ok(rows)
    }
}

/// CRC-32 of a schema text, 0 for none (an empty text).
fn schema_fingerprint(schema: &str) -> u32 {
    if schema.is_empty() {
        0
    } else {
        crc32fast::hash(schema.as_bytes()).max(1)
    }
}

/// The checks of [`Model::new`] (also applied to loaded files).
fn check_dims(kind: &ModelKind, n_cols: usize, widths: &[usize]) -> Result<()> {
    if n_cols == 0 {
        return Err(Error::BadArgument {
            what: "n_cols of a model",
            expected: "at least 1",
        });
    }
    if n_cols > MAX_COLS {
        return Err(Error::TooLarge {
            what: "model columns",
            value: n_cols as u64,
            max: MAX_COLS as u64,
        });
    }
    match kind {
        ModelKind::Softmax { classes } if *classes < 2 => Err(Error::BadArgument {
            what: "classes of a softmax model",
            expected: "at least 2",
        }),
        ModelKind::Mlp { .. } if widths.contains(&0) => Err(Error::BadArgument {
            what: "MLP layer widths",
            expected: "at least 1",
        }),
        _ => match param_count(n_cols, widths) {
            Some(_) => Ok(()),
            None => Err(Error::TooLarge {
                what: "model parameters",
                value: u64::MAX,
                max: (isize::MAX as usize / 8) as u64,
            }),
        },
    }
}

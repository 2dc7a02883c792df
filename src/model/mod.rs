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
mod linear;
mod network;
mod stats;

use ndarray::{Array1, Array2};

use crate::error::{Error, Result};
use crate::kernels::Workspace;
use crate::page::Page;
use crate::rng::Rng;
use crate::sparse::MAX_COLS;

pub use stats::{BatchStats, Metrics};

/// The hidden layer widths of the TOC paper's network (section 5.3).
pub const DEFAULT_HIDDEN: [usize; 2] = [200, 50];

/// The model families.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// Binary logistic regression (log-loss).
    Logistic,
    /// Linear support vector machine (hinge loss).
    Svm,
    /// Linear regression (half the squared error).
    LinearRegression,
    /// Multinomial logistic regression over `classes` classes (`>= 2`).
    Softmax {
        /// Number of classes; labels are class indices `0..classes`.
        classes: usize,
    },
    /// A feed-forward network with sigmoid hidden layers; a softmax output
    /// when `outputs > 1`, one sigmoid output (binary) when `outputs == 1`.
    Mlp {
        /// Widths of the hidden layers (each `>= 1`; may be empty).
        hidden: Vec<usize>,
        /// Output width: 1 for binary labels, else the number of classes.
        outputs: usize,
    },
}

impl ModelKind {
    /// The short names [`from_name`](Self::from_name) accepts, in order.
    pub const NAMES: [&'static str; 5] = ["lr", "svm", "linreg", "softmax", "mlp"];

    /// The paper's network (hidden layers [`DEFAULT_HIDDEN`]) for labels of
    /// `classes` classes: one sigmoid output when `classes <= 2`.
    pub fn mlp(classes: usize) -> ModelKind {
        ModelKind::Mlp {
            hidden: DEFAULT_HIDDEN.to_vec(),
            outputs: if classes <= 2 { 1 } else { classes },
        }
    }

    /// Looks a model up by short name (`lr`, `svm`, `linreg`, `softmax`,
    /// `mlp`, ignoring case) for labels of `classes` classes (2 for binary
    /// data; unused by `lr`, `svm` and `linreg`). `mlp` is
    /// [`ModelKind::mlp`].
    ///
    /// # Errors
    /// [`Error::BadArgument`] for an unknown name, or `softmax` with fewer
    /// than two classes.
    pub fn from_name(name: &str, classes: usize) -> Result<ModelKind> {
        let kind = match name.to_ascii_lowercase().as_str() {
            "lr" | "logistic" => ModelKind::Logistic,
            "svm" => ModelKind::Svm,
            "linreg" => ModelKind::LinearRegression,
            "softmax" if classes >= 2 => ModelKind::Softmax { classes },
            "softmax" => {
                return Err(Error::BadArgument {
                    what: "classes of a softmax model",
                    expected: "at least 2",
                })
            }
            "mlp" => ModelKind::mlp(classes),
            _ => {
                return Err(Error::BadArgument {
                    what: "model name",
                    expected: "one of lr, svm, linreg, softmax, mlp",
                })
            }
        };
        Ok(kind)
    }

    /// The short name (`lr`, `svm`, `linreg`, `softmax`, `mlp`).
    pub fn name(&self) -> &'static str {
        Self::NAMES[self.code() as usize]
    }

    /// True for `LinearRegression` (metrics report R^2, not accuracy).
    pub fn is_regression(&self) -> bool {
        matches!(self, ModelKind::LinearRegression)
    }

    /// The kind's code in model files (`docs/FORMAT.md`, "Model files"):
    /// 0 logistic regression, 1 SVM, 2 linear regression, 3 softmax,
    /// 4 MLP. Fixed forever: codes are never reused or renumbered.
    pub const fn code(&self) -> u8 {
        match self {
            ModelKind::Logistic => 0,
            ModelKind::Svm => 1,
            ModelKind::LinearRegression => 2,
            ModelKind::Softmax { .. } => 3,
            ModelKind::Mlp { .. } => 4,
        }
    }

    /// The kind of code `code` whose layers have the output widths
    /// `widths` (input layer excluded, as a model file stores them):
    /// `[1]` for the linear kinds, `[classes]` for a softmax, the hidden
    /// widths then the output width for an MLP. `None` for an unknown code
    /// or widths that do not fit it (their values are checked by
    /// [`Model::new`]).
    pub fn from_code(code: u8, widths: &[usize]) -> Option<ModelKind> {
        match (code, widths) {
            (0, [1]) => Some(ModelKind::Logistic),
            (1, [1]) => Some(ModelKind::Svm),
            (2, [1]) => Some(ModelKind::LinearRegression),
            (3, &[classes]) => Some(ModelKind::Softmax { classes }),
            (4, [hidden @ .., outputs]) => Some(ModelKind::Mlp {
                hidden: hidden.to_vec(),
                outputs: *outputs,
            }),
            _ => None,
        }
    }

    /// Output width of each layer, the input layer excluded.
    fn widths(&self) -> Vec<usize> {
        match self {
            ModelKind::Logistic | ModelKind::Svm | ModelKind::LinearRegression => vec![1],
            ModelKind::Softmax { classes } => vec![*classes],
            ModelKind::Mlp { hidden, outputs } => {
                hidden.iter().copied().chain([*outputs]).collect()
            }
        }
    }

    /// Number of classes of a class-index model (softmax output), `None`
    /// for the binary and regression models.
    fn classes(&self) -> Option<usize> {
        match self {
            ModelKind::Softmax { classes } => Some(*classes),
            ModelKind::Mlp { outputs, .. } if *outputs > 1 => Some(*outputs),
            _ => None,
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelKind::Softmax { classes } => write!(f, "softmax ({classes} classes)"),
            ModelKind::Mlp { hidden, outputs } => write!(f, "mlp {hidden:?} -> {outputs}"),
            other => f.write_str(other.name()),
        }
    }
}

/// One layer's parameters: `weights` (`inputs x outputs`, so a layer maps
/// rows `x` to `x . weights + bias`) and `bias` (`outputs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    weights: Array2<f64>,
    bias: Array1<f64>,
}

impl Layer {
    fn zeros(inputs: usize, outputs: usize) -> Layer {
        Layer {
            weights: Array2::zeros((inputs, outputs)),
            bias: Array1::zeros(outputs),
        }
    }

    /// The weights, `inputs x outputs`.
    pub fn weights(&self) -> &Array2<f64> {
        &self.weights
    }

    /// The bias (intercept), one per output.
    pub fn bias(&self) -> &Array1<f64> {
        &self.bias
    }

    fn fill(&mut self, v: f64) {
        self.weights.fill(v);
        self.bias.fill(v);
    }

    /// `self += other`.
    fn add(&mut self, other: &Layer) {
        self.weights += &other.weights;
        self.bias += &other.bias;
    }

    /// Parameters in file order: weights row by row, then the bias.
    fn values(&self) -> impl Iterator<Item = &f64> {
        self.weights.iter().chain(self.bias.iter())
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut f64> {
        self.weights.iter_mut().chain(self.bias.iter_mut())
    }

    fn len(&self) -> usize {
        self.weights.len() + self.bias.len()
    }
}

/// Parameter count of layers of `widths` over `n_cols` inputs, if it can
/// be addressed as `f64`s.
fn param_count(n_cols: usize, widths: &[usize]) -> Option<usize> {
    let mut inputs = n_cols;
    let mut total = 0usize;
    for &w in widths {
        total = total.checked_add(inputs.checked_mul(w)?.checked_add(w)?)?;
        inputs = w;
    }
    (total <= isize::MAX as usize / 8).then_some(total)
}

/// A gradient (the shape of a model's parameters), with the kernels'
/// scratch memory, reused from one mini-batch to the next.
#[derive(Debug, Clone)]
pub struct Gradient {
    layers: Vec<Layer>,
    work: Vec<Workspace>,
}

impl Gradient {
    /// A zero gradient shaped like `model`.
    pub fn new(model: &Model) -> Gradient {
        Gradient {
            layers: model
                .layers
                .iter()
                .map(|l| Layer::zeros(l.weights.nrows(), l.weights.ncols()))
                .collect(),
            work: Vec::new(),
        }
    }

    /// The gradient of each layer's weights and bias.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The gradient flattened in [`Model::params`] order.
    pub fn to_vec(&self) -> Vec<f64> {
        self.layers
            .iter()
            .flat_map(Layer::values)
            .copied()
            .collect()
    }

    /// Euclidean norm.
    pub fn norm(&self) -> f64 {
        self.layers
            .iter()
            .flat_map(Layer::values)
            .map(|g| g * g)
            .sum::<f64>()
            .sqrt()
    }

    /// Makes sure the gradient has `model`'s shape and `pages` workspaces,
    /// then zeroes it.
    fn reset(&mut self, model: &Model, pages: usize) {
        let same = self.layers.len() == model.layers.len()
            && self
                .layers
                .iter()
                .zip(&model.layers)
                .all(|(g, l)| g.weights.dim() == l.weights.dim());
        if !same {
            *self = Gradient {
                work: std::mem::take(&mut self.work),
                ..Gradient::new(model)
            };
        }
        self.layers.iter_mut().for_each(|l| l.fill(0.0));
        if self.work.len() < pages.max(1) {
            self.work.resize_with(pages.max(1), Workspace::new);
        }
    }

    /// Divides the summed data gradient by `rows` and adds `l2 * w`.
    fn finish(&mut self, model: &Model, rows: usize, l2: f64) {
        let scale = if rows == 0 { 0.0 } else { 1.0 / rows as f64 };
        for (g, l) in self.layers.iter_mut().zip(&model.layers) {
            g.weights.mapv_inplace(|v| v * scale);
            g.bias.mapv_inplace(|v| v * scale);
            if l2 != 0.0 {
                g.weights.scaled_add(l2, &l.weights);
            }
        }
    }
}

/// A model: its kind, input width and parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    kind: ModelKind,
    n_cols: usize,
    layers: Vec<Layer>,
}

/// Stream label of model initialisation in [`Rng::stream`].
const INIT_STREAM: u64 = 0x4d4f_4445_4c49_4e49; // "MODELINI"

impl Model {
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
    /// cannot be addressed.
    pub fn new(kind: ModelKind, n_cols: usize, seed: u64) -> Result<Model> {
        let widths = kind.widths();
        check_dims(&kind, n_cols, &widths)?;
        let mut layers = Vec::with_capacity(widths.len());
        let mut inputs = n_cols;
        for (i, &w) in widths.iter().enumerate() {
            let mut layer = Layer::zeros(inputs, w);
            if matches!(kind, ModelKind::Mlp { .. }) {
                let r = (6.0 / (inputs + w) as f64).sqrt();
                let mut rng = Rng::stream(seed, &[INIT_STREAM, i as u64]);
                layer.weights.mapv_inplace(|_| (2.0 * rng.unit() - 1.0) * r);
            }
            layers.push(layer);
            inputs = w;
        }
        Ok(Model {
            kind,
            n_cols,
            layers,
        })
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
        let sq: f64 = self
            .layers
            .iter()
            .map(|l| l.weights.iter().map(|w| w * w).sum::<f64>())
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
        grad.reset(self, pages.len());
        let stats = if self.is_linear() {
            linear::run(self, pages, Some(grad))?
        } else {
            network::run(self, pages, Some(grad))?
        };
        grad.finish(self, rows, l2);
        Ok(stats)
    }

    /// `w -= lr * grad` for every parameter.
    ///
    /// # Panics
    /// If `grad` was not shaped by this model (see [`Gradient::new`]).
    pub fn step(&mut self, grad: &Gradient, lr: f64) {
        assert_eq!(
            grad.layers.len(),
            self.layers.len(),
            "gradient of another model"
        );
        for (l, g) in self.layers.iter_mut().zip(&grad.layers) {
            assert_eq!(
                l.weights.dim(),
                g.weights.dim(),
                "gradient of another model"
            );
            l.weights.scaled_add(-lr, &g.weights);
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

    fn is_linear(&self) -> bool {
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

/// `ln(1 + e^x)` without overflow or loss of precision.
pub(crate) fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `1 / (1 + e^-x)` without overflow.
pub(crate) fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

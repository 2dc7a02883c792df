//! [`ModelKind`]: the model families, their names on the command line,
//! their fixed codes in model files and the shape of their layers.

use crate::error::{Error, Result};

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
    /// [`Model::new`](super::Model::new)).
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
    pub(super) fn widths(&self) -> Vec<usize> {
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
    pub(super) fn classes(&self) -> Option<usize> {
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

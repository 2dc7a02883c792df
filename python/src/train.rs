//! `tocpile.train`: the library's [`Trainer`] (mini-batch steps on the encoded
//! pages a loader yields) set up as `tocpile train` sets it up: the step
//! rule and its default learning rate (`optimizer`, `lr`), the input
//! scaling applied to the model's parameters (`scale`), and the held-out
//! split (`holdout`), through `Trainer::prepare` as the command line
//! does (the same split, start model, loader and warnings). The same
//! options give the same model file, bit for bit, as the command line
//! (the tests compare them).

use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use tocpile::loader::{Buffer, LoaderOptions};
use tocpile::model::Optimizer;
use tocpile::scale::ScaleKind;
use tocpile::train::{infer_kind, Scale, TrainOptions, TrainWarning, Trainer, MAX_CLASSES};

use crate::dataset::scale_kind_of;
use crate::loader::{buffer_of, dataset_of, int_at_least, mode_of, strategy_of, usize_at_least};
use crate::model::PyModel;
use crate::IntoPy;

/// The run's warnings as `UserWarning`s, as the command line prints
/// them (the library decides them, `Prepared::warnings`): labels a
/// classifier cannot use as they are (a binary model takes label > 0 as
/// the positive class; labels that look like a regression target want
/// linreg), then loader settings likely to shuffle poorly.
fn warn(py: Python<'_>, warnings: &[TrainWarning]) -> PyResult<()> {
    let shown = |first: &[f64; 3]| {
        let shown: Vec<String> = first.iter().map(f64::to_string).collect();
        shown.join(", ")
    };
    for warning in warnings {
        let text = match warning {
            TrainWarning::RegressionLabels {
                path,
                model,
                first,
                distinct,
                more,
            } => format!(
                "{}: {}{distinct} distinct labels ({}, ...) look like a regression target: for \
                 a linear regression, train with model=\"linreg\" ({model} is a classifier, its \
                 accuracy would mean nothing here)",
                path.display(),
                if *more { "more than " } else { "" },
                shown(first)
            ),
            TrainWarning::MoreThanTwoLabels { path, model, first } => format!(
                "{}: more than two distinct labels ({}, ...): {model} is a binary model and \
                 takes label > 0 as the positive class; for classes use model=\"softmax\" or \
                 \"mlp\"",
                path.display(),
                shown(first)
            ),
            other => other.to_string(),
        };
        let message = std::ffi::CString::new(text).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)?;
    }
    Ok(())
}

/// `optimizer=` and its learning rate when `lr` is None (the command
/// line's defaults: Adam at 0.03, AdaGrad and SGD at 0.1).
fn optimizer_of(name: &str, lr: Option<f64>) -> PyResult<(Optimizer, f64)> {
    let rule = Optimizer::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "optimizer: unknown step rule {name:?} (expected one of {})",
            Optimizer::NAMES.join(", ")
        ))
    })?;
    Ok((rule, lr.unwrap_or(rule.default_learning_rate())))
}

/// `scale=` of `train`: "auto" (the file's scaling), "none", or a kind.
#[derive(Clone, Copy)]
enum ScaleChoice {
    Auto,
    Kind(Option<ScaleKind>),
}

fn scale_choice_of(name: &str) -> PyResult<ScaleChoice> {
    match name.to_ascii_lowercase().as_str() {
        "auto" => Ok(ScaleChoice::Auto),
        other => scale_kind_of(other)
            .map(ScaleChoice::Kind)
            .map_err(|_| {
                PyValueError::new_err(format!(
                    "scale: unknown scaling {:?} (expected \"auto\", \"none\", \"maxabs\" or \"standard\")",
                    name
                ))
            }),
    }
}

/// Trains a model on the dataset file at `path`, the gradients computed
/// on the encoded pages, and returns it.
///
/// `model`: "lr" (logistic regression), "svm", "linreg", "softmax" or
/// "mlp" (sigmoid hidden layers of 200 and 50); softmax and mlp take the
/// number of classes from the labels unless `classes` is given. Each epoch
/// reads the file through a `Loader` (`shuffle`, `batch_size`, `buffer`,
/// `seed`, `mode` as there) and steps by `optimizer` ("adam", "adagrad"
/// or "sgd") with learning rate `lr * decay**epoch` (`lr` None: 0.03 for
/// Adam, 0.1 otherwise) and L2 strength `l2`. `scale`: "auto" trains in
/// the coordinates of the scaling stored in the file (none if it has
/// none), "none" on the raw rows, "maxabs" or "standard" with that
/// scaling (the file's, or fitted by a pass over it); the parameters
/// stay those of the raw rows. With `eval` (a path or a `Dataset`), exact
/// figures on it are computed after each epoch; `holdout` (a share in
/// (0, 1)) instead trains on the other rows and evaluates on that share,
/// picked by a hash of the row number under `seed`. The defaults are
/// those of `tocpile train`, and the same options give the same model.
/// `init` (a `Model`) warm-starts: training continues from a copy of its
/// parameters and input scaling (its kind and columns; `model`,
/// `classes` and `scale` are then ignored). The GIL is released while
/// training.
#[pyfunction]
#[pyo3(signature = (path, model = "lr", *, epochs = None, optimizer = "adam", lr = None,
    decay = 0.95, l2 = 0.0, batch_size = None, shuffle = "corgipile", buffer = None, seed = None,
    mode = "auto", classes = None, scale = "auto", eval = None, holdout = None, init = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    model: &str,
    epochs: Option<&Bound<'_, PyAny>>,
    optimizer: &str,
    lr: Option<f64>,
    decay: f64,
    l2: f64,
    batch_size: Option<&Bound<'_, PyAny>>,
    shuffle: &str,
    buffer: Option<&Bound<'_, PyAny>>,
    seed: Option<&Bound<'_, PyAny>>,
    mode: &str,
    classes: Option<&Bound<'_, PyAny>>,
    scale: &str,
    eval: Option<&Bound<'_, PyAny>>,
    holdout: Option<f64>,
    init: Option<PyRef<'_, PyModel>>,
) -> PyResult<PyModel> {
    let epochs = match epochs {
        Some(e) => usize_at_least(e, "epochs", 0)?,
        None => 10,
    };
    let batch_size = match batch_size {
        Some(b) => usize_at_least(b, "batch_size", 1)?,
        None => 250,
    };
    let seed = match seed {
        Some(s) => int_at_least(s, "seed", 0)?,
        None => 0,
    };
    let classes = match classes {
        Some(c) if !c.is_none() => Some(usize_at_least(c, "classes", 1)?),
        _ => None,
    };
    // Warm start: the parameters (and input scaling) of `init`, copied.
    let init = match init {
        Some(m) => Some(m.model().try_clone().py_err()?),
        None => None,
    };
    let dataset = dataset_of(py, path)?;
    if dataset.info().n_rows == 0 {
        return Err(PyValueError::new_err(format!(
            "{}: no rows to train on",
            dataset.path().display()
        )));
    }
    if let Some(f) = holdout {
        if eval.is_some() {
            return Err(PyValueError::new_err(
                "holdout and eval: give one (holdout evaluates on its held-out rows)",
            ));
        }
        if !(f > 0.0 && f < 1.0) {
            return Err(PyValueError::new_err(format!(
                "holdout: {f} is not a fraction in (0, 1)"
            )));
        }
    }
    let eval = match eval {
        Some(e) => Some(dataset_of(py, e)?),
        None => None,
    };
    if let Some(e) = &eval {
        let (want, got) = (dataset.info().n_cols, e.info().n_cols);
        if want != got {
            return Err(PyValueError::new_err(format!(
                "eval: {} has {got} columns, the training file {} has {want}: encode it with \
                 the training file's columns (n_cols={want}, or schema=Dataset(...).schema)",
                e.path().display(),
                dataset.path().display()
            )));
        }
    }
    let (rule, learning_rate) = optimizer_of(optimizer, lr)?;
    let choice = scale_choice_of(scale)?;
    let name = model.to_ascii_lowercase();
    // Classes from every row, held-out ones included (as the command line).
    let kind = match &init {
        Some(m) => m.kind().clone(),
        None => match py.detach(|| infer_kind(&name, classes, &dataset)) {
            Err(tocpile::Error::BadValue { row, found, .. }) => {
                return Err(PyValueError::new_err(format!(
                    "{}: row {row}: label {found} is not a class index (an integer in \
                     0..{MAX_CLASSES}): {name} needs labels 0, 1, 2, ...; pass classes=N if \
                     some classes are absent",
                    dataset.path().display()
                )))
            }
            other => other.py_err()?,
        },
    };
    if let Some(m) = &init {
        if m.n_cols() != dataset.info().n_cols {
            return Err(PyValueError::new_err(format!(
                "init: the model takes {} columns, {} has {}",
                m.n_cols(),
                dataset.path().display(),
                dataset.info().n_cols
            )));
        }
    }
    let options = LoaderOptions::default()
        .with_strategy(strategy_of(shuffle)?)
        .with_mode(mode_of(mode)?)
        .with_batch_rows(batch_size)
        .with_buffer(match buffer {
            Some(b) => buffer_of(b)?,
            // The command line's default: the whole file when it fits the
            // loader's budget, else a tenth.
            None => Buffer::Auto,
        });
    let train_options = TrainOptions::default()
        .with_optimizer(rule)
        .with_epochs(epochs)
        .with_learning_rate(learning_rate)
        .with_decay(decay)
        .with_l2(l2)
        // A warm start keeps its own scaling.
        .with_scale(match (&init, choice) {
            (Some(_), _) => Scale::Model,
            (None, ScaleChoice::Auto) => Scale::Stored,
            (None, ScaleChoice::Kind(None)) => Scale::None,
            (None, ScaleChoice::Kind(Some(kind))) => Scale::Fit(kind),
        });
    // The library's trainer, as `tocpile train` sets it up.
    let mut trainer = Trainer::new(kind)
        .options(train_options)
        .loader(options)
        .seed(seed);
    if let Some(m) = init {
        trainer = trainer.warm_start(m);
    }
    if let Some(e) = eval {
        trainer = trainer.eval(e);
    }
    if let Some(fraction) = holdout {
        trainer = trainer.holdout(fraction);
    }
    // Guarded: a panic (a bug) is a catchable error, not
    // pyo3_runtime.PanicException.
    let (prepared, warnings) = crate::limits::guarded(py, || {
        let prepared_and_warnings = trainer.prepare(&dataset).and_then(|prepared| {
            let warnings = prepared.warnings()?;
            Ok((prepared, warnings))
        });
        prepared_and_warnings.map_err(|e| match e {
            tocpile::Error::EmptySplit {
                fraction,
                train_rows,
                test_rows,
            } => PyValueError::new_err(format!(
                "{}: holdout={fraction} leaves {train_rows} training and {test_rows} held-out \
                 rows: both need rows",
                dataset.path().display()
            )),
            other => crate::to_py(other),
        })
    })?;
    warn(py, &warnings)?;
    let fitted = crate::detached(py, || prepared.fit(|_, _| {}))?;
    let fitted = fitted.into_iter().next().expect("a model per strategy");
    Ok(PyModel::new(fitted.model, fitted.reports))
}

//! `tocpile.train` and `tocpile.Model`: the library's trainer (mini-batch
//! SGD on the encoded pages a loader yields) and its models, with
//! predictions on numpy or scipy rows.
//!
//! Predictions run the first layer on the rows encoded as CSR through the
//! library's `A.M` kernel and the rest densely, as the library's models do
//! (`Model::evaluate` reports only aggregate figures); the tests check that
//! the accuracy they give equals `evaluate`'s on the same file.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::ndarray::{Array1, Array2, Axis};
use numpy::{PyArray1, ToPyArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tocpile::dataset::Dataset;
use tocpile::formats::FormatKind;
use tocpile::loader::{Buffer, Loader, LoaderOptions};
use tocpile::model::{Model, ModelKind};
use tocpile::train::{evaluate, EpochReport, Score, TrainOptions};
use tocpile::Workspace;

use crate::arrays;
use crate::loader::{buffer_of, dataset_of, mode_of, strategy_of};
use crate::IntoPy;

/// A model trained by `tocpile.train` (or loaded by `Model.load`):
/// `predict`, `predict_proba`, `decision_function` on numpy or scipy rows,
/// `evaluate` on a dataset file, `save`, its `params`, `layers` and
/// training `history`.
#[pyclass(name = "Model", module = "tocpile")]
pub(crate) struct PyModel {
    model: Model,
    history: Vec<EpochReport>,
}

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// Largest label + 1, the labels being class indices (as the command
/// line infers it); 2 for an MLP on binary (0/1 or -1/+1) labels.
fn infer_classes(name: &str, ds: &Dataset) -> PyResult<usize> {
    const MAX_CLASSES: f64 = 65_536.0;
    let labels = tocpile::loader::labels_in_file_order(ds).py_err()?;
    if name == "mlp" && labels.iter().all(|&y| y == -1.0 || y == 0.0 || y == 1.0) {
        return Ok(2);
    }
    let mut max = 0.0f64;
    for (row, &y) in labels.iter().enumerate() {
        if !(y >= 0.0 && y.fract() == 0.0 && y < MAX_CLASSES) {
            return Err(PyValueError::new_err(format!(
                "{}: row {row}: label {y} is not a class index (an integer in 0..{MAX_CLASSES}): \
                 {name} needs labels 0, 1, 2, ...; pass classes=N if some classes are absent",
                ds.path().display()
            )));
        }
        max = max.max(y);
    }
    Ok(max as usize + 1)
}

fn score_dict(d: &Bound<'_, PyDict>, prefix: &str, s: &Score) -> PyResult<()> {
    d.set_item(format!("{prefix}loss"), s.loss)?;
    d.set_item(format!("{prefix}accuracy"), s.accuracy)?;
    d.set_item(format!("{prefix}rows"), s.rows)?;
    Ok(())
}

/// Trains a model by mini-batch SGD on the dataset file at `path`, the
/// gradients computed on the encoded pages, and returns it.
///
/// `model`: "lr" (logistic regression), "svm", "linreg", "softmax" or
/// "mlp" (sigmoid hidden layers of 200 and 50); softmax and mlp take the
/// number of classes from the labels unless `classes` is given. Each epoch
/// reads the file through a `Loader` (`shuffle`, `batch_size`, `buffer`,
/// `seed`, `mode` as there) and steps with learning rate
/// `lr * decay**epoch` and L2 strength `l2`. With `eval` (a path or a
/// `Dataset`), exact figures on it are computed after each epoch. The same
/// options give the same model as `tocpile train` on the command line.
/// The GIL is released while training.
#[pyfunction]
#[pyo3(signature = (path, model = "lr", *, epochs = 10, lr = 0.1, decay = 0.95, l2 = 0.0,
    batch_size = 250, shuffle = "corgipile", buffer = None, seed = 0, mode = "auto",
    classes = None, eval = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn train(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    model: &str,
    epochs: usize,
    lr: f64,
    decay: f64,
    l2: f64,
    batch_size: usize,
    shuffle: &str,
    buffer: Option<&Bound<'_, PyAny>>,
    seed: u64,
    mode: &str,
    classes: Option<usize>,
    eval: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyModel> {
    let dataset = dataset_of(py, path)?;
    if dataset.info().n_rows == 0 {
        return Err(PyValueError::new_err(format!(
            "{}: no rows to train on",
            dataset.path().display()
        )));
    }
    let eval = match eval {
        Some(e) => Some(dataset_of(py, e)?),
        None => None,
    };
    let name = model.to_ascii_lowercase();
    let classes = match (name.as_str(), classes) {
        (_, Some(c)) => c,
        ("softmax" | "mlp", None) => py.detach(|| infer_classes(&name, &dataset))?,
        _ => 2,
    };
    let kind = ModelKind::from_name(&name, classes).py_err()?;
    let options = LoaderOptions {
        strategy: strategy_of(shuffle)?,
        mode: mode_of(mode)?,
        batch_rows: batch_size,
        buffer: match buffer {
            Some(b) => buffer_of(b)?,
            None => Buffer::Fraction(0.1),
        },
        seed,
        ..LoaderOptions::default()
    };
    let train_options = TrainOptions {
        epochs,
        learning_rate: lr,
        decay,
        l2,
    };
    let n_cols = dataset.info().n_cols;
    py.detach(|| {
        let loader = Loader::new(Arc::clone(&dataset), options)?;
        let mut model = Model::new(kind, n_cols, seed)?;
        let history =
            tocpile::train::train(&mut model, &loader, &train_options, eval.as_ref(), |_| {})?;
        Ok(PyModel { model, history })
    })
    .py_err()
}

impl PyModel {
    /// The output layer's values before the output function: `n x 1` for
    /// the linear kinds, `n x outputs` otherwise.
    fn logits(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Array2<f64>> {
        let rows = arrays::rows_from_object(x, "X")?;
        if rows.n_cols() != self.model.n_cols() {
            return Err(PyValueError::new_err(format!(
                "X: {} columns, but the model takes {}",
                rows.n_cols(),
                self.model.n_cols()
            )));
        }
        let layers = self.model.layers();
        py.detach(|| -> PyResult<Array2<f64>> {
            let batch = FormatKind::Csr.encode(&rows).py_err()?;
            let first = &layers[0];
            let mut z = Array2::zeros((rows.n_rows(), first.bias().len()));
            batch.matmat_into(first.weights().view(), z.view_mut(), &mut Workspace::new());
            z += first.bias();
            for layer in &layers[1..] {
                z.mapv_inplace(sigmoid);
                z = z.dot(layer.weights()) + layer.bias();
            }
            Ok(z)
        })
    }

    fn binary(&self) -> bool {
        match self.model.kind() {
            ModelKind::Logistic | ModelKind::Svm => true,
            ModelKind::Mlp { outputs, .. } => *outputs == 1,
            _ => false,
        }
    }
}

#[pymethods]
impl PyModel {
    /// Loads a model file written by `save` or `tocpile train --save`.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<PyModel> {
        Ok(PyModel {
            model: Model::load(&path).py_err()?,
            history: Vec::new(),
        })
    }

    /// Writes the model file (atomically).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        self.model.save(&path).py_err()
    }

    /// The kind's short name: "lr", "svm", "linreg", "softmax" or "mlp".
    #[getter]
    fn kind(&self) -> &'static str {
        self.model.kind().name()
    }

    /// Columns of the rows the model takes.
    #[getter]
    fn n_cols(&self) -> usize {
        self.model.n_cols()
    }

    /// Every parameter, layer by layer (weights row by row, then biases),
    /// as model files store them.
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.model.params())
    }

    /// `[(weights, bias), ...]`, input side first; weights are `inputs x
    /// outputs`.
    #[getter]
    fn layers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for l in self.model.layers() {
            list.append((l.weights().to_pyarray(py), l.bias().to_pyarray(py)))?;
        }
        Ok(list)
    }

    /// One dict per training epoch: epoch, learning_rate, loss, accuracy
    /// (R^2 for linreg), rows, seconds, wait_seconds, steps, and
    /// eval_loss / eval_accuracy / eval_rows when an eval file was given.
    #[getter]
    fn history<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for r in &self.history {
            let d = PyDict::new(py);
            d.set_item("epoch", r.epoch)?;
            d.set_item("learning_rate", r.learning_rate)?;
            score_dict(&d, "", &r.train)?;
            if let Some(e) = &r.eval {
                score_dict(&d, "eval_", e)?;
            }
            d.set_item("seconds", r.seconds)?;
            d.set_item("wait_seconds", r.wait_seconds)?;
            d.set_item("steps", r.steps)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Raw scores: margins (1-D) for lr, svm and linreg and a binary mlp,
    /// logits (`n x classes`) for softmax and a multi-class mlp.
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let z = self.logits(py, x)?;
        if z.ncols() == 1 {
            return Ok(z.index_axis(Axis(1), 0).to_pyarray(py).into_any());
        }
        Ok(z.to_pyarray(py).into_any())
    }

    /// Probabilities: of the positive class (1-D) for lr and a binary mlp,
    /// of each class (`n x classes`) for softmax and a multi-class mlp.
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if matches!(
            self.model.kind(),
            ModelKind::Svm | ModelKind::LinearRegression
        ) {
            return Err(PyValueError::new_err(format!(
                "a {} model gives no probabilities; use predict or decision_function",
                self.model.kind().name()
            )));
        }
        let mut z = self.logits(py, x)?;
        if z.ncols() == 1 {
            let p: Array1<f64> = z.index_axis(Axis(1), 0).mapv(sigmoid);
            return Ok(p.to_pyarray(py).into_any());
        }
        for mut row in z.rows_mut() {
            let max = row.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            row.mapv_inplace(|v| (v - max).exp());
            let sum = row.sum();
            row.mapv_inplace(|v| v / sum);
        }
        Ok(z.to_pyarray(py).into_any())
    }

    /// Predictions, one per row: 1.0 for the positive class and 0.0 for
    /// the other (lr, svm, binary mlp: a positive margin), the class index
    /// (softmax, multi-class mlp), or the value (linreg).
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let z = self.logits(py, x)?;
        let out: Vec<f64> = if matches!(self.model.kind(), ModelKind::LinearRegression) {
            z.column(0).to_vec()
        } else if self.binary() {
            z.column(0)
                .iter()
                .map(|&m| f64::from(u8::from(m > 0.0)))
                .collect()
        } else {
            z.rows()
                .into_iter()
                .map(|row| {
                    let mut best = 0;
                    for (i, &v) in row.iter().enumerate() {
                        if v > row[best] {
                            best = i;
                        }
                    }
                    best as f64
                })
                .collect()
        };
        Ok(PyArray1::from_vec(py, out))
    }

    /// Loss and accuracy (R^2 for linreg) on every row of a dataset file,
    /// computed by the library on the encoded pages: a dict of loss,
    /// accuracy and rows.
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        path: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ds = dataset_of(py, path)?;
        let model = &self.model;
        let score = py.detach(|| evaluate(model, &ds)).py_err()?;
        let d = PyDict::new(py);
        score_dict(&d, "", &score)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Model(kind={:?}, n_cols={}, n_params={})",
            self.model.kind().name(),
            self.model.n_cols(),
            self.model.n_params()
        )
    }
}

//! `tocpile.Model`: a model of the library trained by `tocpile.train` or
//! loaded from a model file, with predictions on numpy or scipy rows.
//!
//! Predictions are the library's `Model::predict` on the rows encoded as
//! one CSR page (the forward pass `tocpile predict` runs; a model's
//! parameters are those of raw rows, its input scaling having been
//! applied to them in training), and `evaluate` is the library's
//! `train::evaluate_all`, the figures of `tocpile evaluate`.

use std::path::PathBuf;

use numpy::ndarray::Array2;
use numpy::{PyArray1, PyArray2, ToPyArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use tocpile::formats::FormatKind;
use tocpile::model::{Model, ModelKind, Predictions};
use tocpile::train::{evaluate_all, EpochReport, Score};
use tocpile::Page;

use crate::arrays;
use crate::loader::dataset_of;
use crate::predict;
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

fn score_dict(d: &Bound<'_, PyDict>, prefix: &str, s: &Score) -> PyResult<()> {
    d.set_item(format!("{prefix}loss"), s.loss)?;
    d.set_item(format!("{prefix}accuracy"), s.accuracy)?;
    d.set_item(format!("{prefix}rows"), s.rows)?;
    Ok(())
}

impl PyModel {
    pub(crate) fn new(model: Model, history: Vec<EpochReport>) -> PyModel {
        PyModel { model, history }
    }

    pub(crate) fn model(&self) -> &Model {
        &self.model
    }

    /// The library's predictions for the rows of `x` (numpy or scipy),
    /// encoded as one CSR page, computed with the GIL released.
    fn predictions(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Predictions> {
        let rows = arrays::rows_from_object(x, "X")?;
        if rows.n_cols() != self.model.n_cols() {
            return Err(PyValueError::new_err(format!(
                "X: {} columns, but the model takes {}",
                rows.n_cols(),
                self.model.n_cols()
            )));
        }
        let model = &self.model;
        py.detach(|| {
            // Labels are not read by predict; the page needs one per row.
            let page = Page::encode(FormatKind::Csr, &rows, &vec![0.0; rows.n_rows()])?;
            model.predict(&[page])
        })
        .py_err()
    }
}

/// One value per row as a 1-D array when `k` is 1, else an `n x k`
/// array (the values row-major).
fn rows_array<'py>(
    py: Python<'py>,
    values: Vec<f64>,
    n: usize,
    k: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if k == 1 {
        return Ok(PyArray1::from_vec(py, values).into_any());
    }
    let a =
        Array2::from_shape_vec((n, k), values).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyArray2::from_owned_array(py, a).into_any())
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

    /// The bytes of the model file (what `save` writes and `from_bytes`
    /// reads back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.model.to_bytes())
    }

    /// A model from the bytes of a model file (checked as `load` checks a
    /// file).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<PyModel> {
        let model = py.detach(|| Model::from_bytes(data)).py_err()?;
        Ok(PyModel {
            model,
            history: Vec::new(),
        })
    }

    /// Pickles (and deep-copies) as the model file's bytes; the training
    /// history is not kept.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        let bytes = slf.borrow().to_bytes(py).into_any();
        PyTuple::new(py, [from_bytes, PyTuple::new(py, [bytes])?.into_any()])
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

    /// The input scaling applied in training: `(kind, factors)` with kind
    /// "maxabs" or "standard", or None. The parameters are those of raw
    /// rows either way (predictions take raw rows).
    #[getter]
    fn scaling<'py>(&self, py: Python<'py>) -> Option<(&'static str, Bound<'py, PyArray1<f64>>)> {
        self.model
            .scaling()
            .map(|s| (s.kind().name(), PyArray1::from_slice(py, s.factors())))
    }

    /// Raw scores: margins (1-D) for lr, svm and linreg and a binary mlp,
    /// logits (`n x classes`) for softmax and a multi-class mlp (the
    /// library's `Model::predict`, as `tocpile predict --scores`).
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let s = predict::scores(py, &self.model, x)?;
        let (n, k) = (s.n_rows(), s.outputs);
        rows_array(py, s.values, n, k)
    }

    /// `decision_function` computed as it was before the parallel path:
    /// the rows encoded as one CSR page and the library's `Model::predict`
    /// (the reference the tests compare the fast path with).
    fn _reference_scores<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = self.predictions(py, x)?;
        let values = (0..p.n_rows()).flat_map(|i| p.scores(i).to_vec()).collect();
        rows_array(py, values, p.n_rows(), p.outputs())
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
        let s = predict::scores(py, &self.model, x)?;
        let (n, k) = (s.n_rows(), s.outputs);
        let mut values = Vec::new();
        crate::arrays::reserve(&mut values, s.values.len(), "probabilities").py_err()?;
        for i in 0..n {
            s.probabilities(i, &mut values);
        }
        rows_array(py, values, n, k)
    }

    /// Predictions, one per row: 1.0 for the positive class and 0.0 for
    /// the other (lr, svm, binary mlp: a positive margin), the class index
    /// (softmax, multi-class mlp), or the value (linreg); what `tocpile
    /// predict` prints.
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let s = predict::scores(py, &self.model, x)?;
        let out: Vec<f64> = (0..s.n_rows())
            .map(|i| s.class(i).map_or(s.row(i)[0], |c| c as f64))
            .collect();
        Ok(PyArray1::from_vec(py, out))
    }

    /// The figures of `tocpile evaluate` on every row of a dataset file
    /// (the library's `evaluate_all`, after checking the file has the
    /// model's columns and schema): a dict of rows, loss and, for a
    /// classifier, accuracy and the confusion matrix (a list of rows:
    /// `confusion[label][predicted]`), for a binary classifier auc (when
    /// both classes occur), for linreg r2.
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        path: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let ds = dataset_of(py, path)?;
        let model = &self.model;
        let report = crate::detached(py, || evaluate_all(model, &ds))?;
        let d = PyDict::new(py);
        d.set_item("rows", report.rows)?;
        d.set_item("loss", report.loss)?;
        if let Some(a) = report.accuracy {
            d.set_item("accuracy", a)?;
        }
        if let Some(a) = report.auc {
            d.set_item("auc", a)?;
        }
        if let Some(c) = report.confusion {
            d.set_item("confusion", c)?;
        }
        if let Some(r2) = report.r2 {
            d.set_item("r2", r2)?;
        }
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

//! `tocpile.Loader`: the library's loader (CorgiPile by default, paper
//! sections 4 to 6) as a Python iterator of mini-batches, with
//! `set_epoch` and a `state_dict` for exact mid-epoch resumption.
//!
//! Resumption needs no saved buffer: the library fixes every permutation
//! of an epoch by (seed, epoch, worker), so an epoch's stream of
//! mini-batches is the same each time it is started. A state is the epoch
//! and the number of mini-batches already yielded; resuming starts that
//! epoch again and skips as many (read and shuffled, not decoded into
//! Python objects).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyFloat, PyInt, PyTuple};
use tocpile::dataset::Dataset;
use tocpile::loader::{Buffer, Epoch, Loader, LoaderOptions, Mode, Strategy};
use tocpile::SparseBatch;

use crate::arrays::CsrParts;
use crate::dataset::{push_pages, rows_and_labels, want_dense, PyDataset};
use crate::IntoPy;

/// Format of the dicts `state_dict` returns.
const STATE_VERSION: u64 = 1;

#[derive(Default)]
struct State {
    epoch: u64,
    /// Mini-batches yielded so far in `epoch`.
    position: u64,
    /// Mini-batches the next `__iter__` skips (set by `load_state_dict`).
    resume: u64,
    current: Option<Epoch>,
}

/// Mini-batches of a dataset file in a shuffling strategy's order.
///
/// `Loader(path, shuffle="corgipile", batch_size=250, seed=0, rank=0,
/// world_size=1, buffer=0.1, mode="auto", as_="csr", double_buffer=True)`.
/// Iterating yields `(X, y)`: X a `scipy.sparse.csr_matrix` (or a dense
/// float64 array with `as_="dense"`), y the labels. One pass is one epoch:
/// every row of this rank's share exactly once (MRS's replay batches
/// aside), the last mini-batch possibly short. A full pass advances the
/// epoch; `set_epoch(e)` picks one (as with torch's DistributedSampler).
///
/// `shuffle`: "corgipile" (blocks in a random order, a buffer of blocks,
/// rows shuffled in it), "block", "none", "once", "epoch", "window" or
/// "mrs". `buffer`: a float is a share of the dataset, an int a number of
/// blocks. `mode`: "page" shuffles whole encoded pages, "exact" rows,
/// "auto" picks page mode when a mini-batch spans four pages or more.
/// `rank` of `world_size` reads the rank-th of world_size contiguous
/// slices of each epoch's block order: the ranks' batches are disjoint and
/// together cover the file. Orders depend only on (seed, epoch, rank), so
/// `state_dict()` (epoch and batches yielded) and `load_state_dict()`
/// resume exactly mid-epoch. Reading runs on background threads; waiting
/// for a batch releases the GIL.
#[pyclass(name = "Loader", module = "tocpile")]
pub(crate) struct PyLoader {
    loader: Loader,
    dense: bool,
    buffer: String,
    state: Mutex<State>,
}

pub(crate) fn strategy_of(name: &str) -> PyResult<Strategy> {
    Strategy::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        PyValueError::new_err(format!(
            "shuffle: unknown strategy {name:?} (expected one of {})",
            names.join(", ")
        ))
    })
}

pub(crate) fn mode_of(name: &str) -> PyResult<Mode> {
    match name {
        "auto" => Ok(Mode::Auto),
        "page" => Ok(Mode::Page),
        "exact" => Ok(Mode::Exact),
        _ => Err(PyValueError::new_err(format!(
            "mode: expected \"auto\", \"page\" or \"exact\", got {name:?}"
        ))),
    }
}

/// A float is a share of the dataset, an int a number of blocks.
pub(crate) fn buffer_of(obj: &Bound<'_, PyAny>) -> PyResult<Buffer> {
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Buffer::Fraction(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Buffer::Blocks(obj.extract()?));
    }
    Err(PyValueError::new_err(format!(
        "buffer: expected a float (a share of the dataset, e.g. 0.1) or an int (a number \
         of blocks), got {}",
        obj.get_type().name()?
    )))
}

/// An open dataset from a path or a `tocpile.Dataset`.
pub(crate) fn dataset_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Arc<Dataset>> {
    if let Ok(ds) = obj.cast::<PyDataset>() {
        return Ok(Arc::clone(&ds.borrow().inner));
    }
    let path: PathBuf = obj.extract()?;
    Ok(Arc::new(py.detach(|| Dataset::open(&path)).py_err()?))
}

impl PyLoader {
    /// The state, waiting for it with the GIL released: a thread inside
    /// `__next__` holds it while it waits (GIL released) for the next
    /// batch, and must be able to take the GIL back to finish.
    fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }

    fn options_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let o = self.loader.options();
        let d = PyDict::new(py);
        d.set_item("shuffle", o.strategy.name())?;
        d.set_item("batch_size", o.batch_rows)?;
        d.set_item("seed", o.seed)?;
        d.set_item("rank", o.worker)?;
        d.set_item("world_size", o.workers)?;
        d.set_item("buffer", &self.buffer)?;
        d.set_item("mode", self.loader.mode().name())?;
        d.set_item("n_rows", self.loader.dataset().info().n_rows)?;
        Ok(d)
    }
}

#[pymethods]
impl PyLoader {
    #[new]
    #[pyo3(signature = (path, shuffle = "corgipile", batch_size = 250, seed = 0, rank = 0,
        world_size = 1, buffer = None, mode = "auto", as_ = "csr", double_buffer = true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        shuffle: &str,
        batch_size: usize,
        seed: u64,
        rank: usize,
        world_size: usize,
        buffer: Option<&Bound<'_, PyAny>>,
        mode: &str,
        as_: &str,
        double_buffer: bool,
    ) -> PyResult<PyLoader> {
        let buffer_value = match buffer {
            Some(b) => buffer_of(b)?,
            None => Buffer::Fraction(0.1),
        };
        let options = LoaderOptions {
            strategy: strategy_of(shuffle)?,
            mode: mode_of(mode)?,
            batch_rows: batch_size,
            buffer: buffer_value,
            seed,
            worker: rank,
            workers: world_size,
            double_buffer,
            ..LoaderOptions::default()
        };
        let dense = want_dense(as_)?;
        let dataset = dataset_of(py, path)?;
        let loader = py.detach(|| Loader::new(dataset, options)).py_err()?;
        Ok(PyLoader {
            loader,
            dense,
            buffer: format!("{buffer_value:?}"),
            state: Mutex::new(State::default()),
        })
    }

    /// Sets the epoch the next iteration yields (and forgets any position
    /// within the current one). Each full pass also advances it by one.
    fn set_epoch(&self, py: Python<'_>, epoch: u64) {
        let mut s = self.lock(py);
        *s = State {
            epoch,
            ..State::default()
        };
    }

    /// The epoch being (or next to be) iterated.
    #[getter]
    fn epoch(&self, py: Python<'_>) -> u64 {
        self.lock(py).epoch
    }

    /// The mode in use: "page" or "exact" ("auto" resolved).
    #[getter]
    fn mode(&self) -> &'static str {
        self.loader.mode().name()
    }

    /// Settings likely to shuffle poorly, as sentences (a buffer of only a
    /// handful of blocks, page-mode batches of a single page).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.loader.warnings().to_vec()
    }

    /// The blocks this rank reads in `epoch`, in order.
    fn block_order(&self, epoch: u64) -> Vec<usize> {
        self.loader.block_order(epoch)
    }

    /// Where the iteration stands: the epoch, the mini-batches yielded in
    /// it, and the options (checked on load: a state only resumes the run
    /// it came from).
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = self.options_dict(py)?;
        let s = self.lock(py);
        d.set_item("version", STATE_VERSION)?;
        d.set_item("epoch", s.epoch)?;
        d.set_item("position", s.position)?;
        Ok(d)
    }

    /// Resumes from a `state_dict()`: the next iteration starts its epoch
    /// and skips the mini-batches already yielded, so it yields exactly
    /// the remaining ones.
    fn load_state_dict(&self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            state
                .get_item(key)?
                .ok_or_else(|| PyKeyError::new_err(format!("state_dict has no {key:?}")))
        };
        let version: u64 = get("version")?.extract()?;
        if version != STATE_VERSION {
            return Err(PyValueError::new_err(format!(
                "state_dict version {version} (this loader reads version {STATE_VERSION})"
            )));
        }
        let ours = self.options_dict(py)?;
        for (key, value) in ours.iter() {
            let theirs = get(&key.extract::<String>()?)?;
            if !theirs.eq(&value)? {
                return Err(PyValueError::new_err(format!(
                    "state_dict is of another run: {} is {} there, {} here; resume with the \
                     same file and options",
                    key,
                    theirs.repr()?,
                    value.repr()?
                )));
            }
        }
        let epoch: u64 = get("epoch")?.extract()?;
        let position: u64 = get("position")?.extract()?;
        *self.lock(py) = State {
            epoch,
            position,
            resume: position,
            current: None,
        };
        Ok(())
    }

    fn __iter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let py = slf.py();
        {
            let this = slf.borrow();
            let mut s = this.lock(py);
            s.current = None; // stops the previous pass's producer first
            let (epoch, skip) = (s.epoch, std::mem::take(&mut s.resume));
            let loader = &this.loader;
            let started = py
                .detach(|| -> tocpile::Result<Epoch> {
                    let mut stream = loader.epoch(epoch)?;
                    for _ in 0..skip {
                        match stream.next() {
                            Some(batch) => drop(batch?),
                            None => break,
                        }
                    }
                    Ok(stream)
                })
                .py_err()?;
            s.position = skip;
            s.current = Some(started);
        }
        Ok(slf)
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let mut s = self.lock(py);
        let Some(stream) = s.current.as_mut() else {
            return Ok(None);
        };
        let n_cols = self.loader.dataset().info().n_cols;
        let item = py.detach(|| {
            stream.next().map(|batch| {
                batch.map(|b| {
                    let mut parts = CsrParts::new(n_cols);
                    let mut labels = Vec::with_capacity(b.n_rows());
                    push_pages(&b.pages, &mut parts, &mut SparseBatch::default());
                    for page in &b.pages {
                        labels.extend_from_slice(page.labels());
                    }
                    (parts, labels)
                })
            })
        });
        match item {
            None => {
                s.current = None;
                s.epoch += 1;
                s.position = 0;
                Ok(None)
            }
            Some(Err(e)) => {
                s.current = None;
                Err(crate::to_py(e))
            }
            Some(Ok((parts, labels))) => {
                s.position += 1;
                drop(s);
                Ok(Some(rows_and_labels(py, parts, labels, self.dense)?))
            }
        }
    }

    fn __repr__(&self) -> String {
        let o = self.loader.options();
        format!(
            "Loader({:?}, shuffle={:?}, batch_size={}, seed={}, rank={}, world_size={}, mode={:?})",
            self.loader.dataset().path().display().to_string(),
            o.strategy.name(),
            o.batch_rows,
            o.seed,
            o.worker,
            o.workers,
            self.loader.mode().name()
        )
    }
}

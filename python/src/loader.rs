//! `tocpile.Loader`: the library's loader (CorgiPile by default, paper
//! sections 4 to 6) as a Python iterable of mini-batches, with `len`,
//! `set_epoch` and a `state_dict` for exact mid-epoch resumption.
//!
//! `iter(loader)` returns an [`EpochIter`] over one epoch, as iterating a
//! `torch.utils.data.DataLoader` does: it continues where it stands
//! (`it = iter(loader); next(it); list(it)` gives the rest of the epoch),
//! and the loader itself is not an iterator (`next(loader)` is a
//! `TypeError`, as for a DataLoader). The library's mini-batches are cut
//! again into batches of exactly `batch_size` rows but the last (page
//! mode gathers whole pages, so its batches can hold a few rows more);
//! so `len(loader)` is the number of rows of the epoch over `batch_size`,
//! rounded up.
//!
//! Resumption needs no saved buffer: the library fixes every permutation
//! of an epoch by (seed, epoch, worker), so an epoch's stream of rows is
//! the same each time it is started. A state is the epoch and the number
//! of batches already yielded; resuming starts that epoch again and skips
//! as many batches' rows (read and shuffled, not decoded into Python
//! objects).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyKeyError, PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyFloat, PyInt, PyTuple};
use tocpile::dataset::Dataset;
use tocpile::loader::{Buffer, Epoch, Loader, LoaderOptions, Mode, Strategy};

use crate::dataset::{want_dense, PyDataset};
use crate::epoch_iter::{EpochIter, Pending};
use crate::IntoPy;

/// Format of the dicts `state_dict` returns.
const STATE_VERSION: u64 = 1;

/// Where the loader's iteration stands.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) epoch: u64,
    /// Batches yielded so far in `epoch` by the newest iterator.
    pub(crate) position: u64,
    /// Batches the next `iter()` skips (set by `load_state_dict`).
    resume: u64,
    /// Counts `iter()`, `set_epoch` and `load_state_dict`: only the newest
    /// iterator moves the state (an older one still yields its epoch).
    pub(crate) generation: u64,
    /// Rows of an epoch (MRS's replays included), counted once per epoch
    /// when they cannot be known from the footer.
    counted: Option<(u64, u64)>,
}

/// What the loader and its iterators share.
pub(crate) struct Shared {
    pub(crate) loader: Loader,
    pub(crate) dense: bool,
    pub(crate) dtype: Option<Py<PyAny>>,
    state: Mutex<State>,
}

impl Shared {
    /// The state, waiting for it with the GIL released (never held while
    /// waiting for a batch).
    pub(crate) fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn batch_size(&self) -> usize {
        self.loader.options().batch_rows
    }

    /// Rows an epoch yields: the rows of this rank's blocks, from the
    /// footer (the library's `Loader::epoch_rows`); for MRS, whose replay
    /// batches repeat rows, counted by a pass over the epoch's stream
    /// (read, not decoded).
    pub(crate) fn epoch_rows(&self, py: Python<'_>, epoch: u64) -> PyResult<u64> {
        if self.loader.options().strategy != Strategy::Mrs {
            return Ok(self.loader.epoch_rows(epoch));
        }
        if let Some((e, rows)) = self.lock(py).counted {
            if e == epoch {
                return Ok(rows);
            }
        }
        let loader = &self.loader;
        let rows = py
            .detach(|| -> tocpile::Result<u64> {
                let mut rows = 0;
                for batch in loader.epoch(epoch)? {
                    rows += batch?.n_rows() as u64;
                }
                Ok(rows)
            })
            .py_err()?;
        self.lock(py).counted = Some((epoch, rows));
        Ok(rows)
    }

    /// Batches of `epoch`: the library's length of the epoch
    /// (`Loader::epoch_batches`, row mode but MRS), else the epoch's rows
    /// over `batch_size`, rounded up (batches are cut again to
    /// `batch_size` rows, [`EpochIter`]): the same count where both exist.
    pub(crate) fn epoch_batches(&self, py: Python<'_>, epoch: u64) -> PyResult<u64> {
        if let Some(n) = self.loader.epoch_batches(epoch) {
            return Ok(n as u64);
        }
        let rows = self.epoch_rows(py, epoch)?;
        Ok(rows.div_ceil(self.batch_size() as u64))
    }
}

/// Mini-batches of a dataset file in a shuffling strategy's order.
///
/// `Loader(path, shuffle="corgipile", batch_size=250, seed=0, rank=0,
/// world_size=1, buffer=None, mode="auto", as_="csr", double_buffer=True,
/// dtype=None)`. Iterating yields `(X, y)`: X a `scipy.sparse.csr_matrix`
/// (or a dense numpy array with `as_="dense"`), y the labels, both
/// float64 unless `dtype` says otherwise (`np.float32` for torch). Every
/// batch has exactly `batch_size` rows but the last of an epoch, and
/// `len(loader)` is the number of batches of an epoch. One pass is one
/// epoch: every row of this rank's share exactly once (MRS's replay
/// batches aside). A completed pass advances the epoch; `set_epoch(e)`
/// picks one (as with torch's DistributedSampler). `iter(loader)` starts
/// an iterator over the current epoch (resumed mid-epoch after
/// `load_state_dict`); the loader itself is iterable, not an iterator.
///
/// `shuffle`: "corgipile" (blocks in a random order, a buffer of blocks,
/// rows shuffled in it), "block", "none", "once", "epoch", "window" or
/// "mrs". `buffer`: None or "auto" (the default, the library's and the
/// command line's) is the whole file when its buffer form fits the
/// loader's memory budget (worked out from the memory available to the
/// process, as the library's `LoaderOptions::memory` says),
/// decoded once and shuffled whole every epoch, else a tenth of it; a
/// float is a share of the dataset, an int a number of blocks. `mode`:
/// "page" shuffles whole encoded pages, "exact" rows, "auto" picks page
/// mode when a mini-batch spans four pages or more.
/// `rank` of `world_size` reads the rank-th of world_size contiguous
/// slices of each epoch's block order: the ranks' batches are disjoint and
/// together cover the file. Orders depend only on (seed, epoch, rank), so
/// `state_dict()` (epoch and batches yielded) and `load_state_dict()`
/// resume exactly mid-epoch. Settings likely to shuffle poorly are
/// reported as `UserWarning`s (and in `warnings`). Reading runs on
/// background threads; waiting for a batch releases the GIL. A loader
/// pickles (and deep-copies) as its options and state.
#[pyclass(name = "Loader", module = "tocpile")]
pub(crate) struct PyLoader {
    shared: Arc<Shared>,
    buffer: String,
    /// The constructor's arguments, for pickling.
    args: Py<PyDict>,
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

/// A float is a share of the dataset, an int a number of blocks, None or
/// "auto" the library's default (`Buffer::Auto`: the whole file when it
/// fits the loader's memory budget, else a tenth of it).
pub(crate) fn buffer_of(obj: &Bound<'_, PyAny>) -> PyResult<Buffer> {
    if obj.is_none() || obj.extract::<String>().is_ok_and(|s| s == "auto") {
        return Ok(Buffer::Auto);
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Buffer::Fraction(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(Buffer::Blocks(obj.extract()?));
    }
    Err(PyValueError::new_err(format!(
        "buffer: expected \"auto\" or None (the whole file when it fits the loader's \
         memory, else 0.1), a float (a share of the dataset, e.g. 0.1) or an int (a number \
         of blocks), got {}",
        obj.repr()?
    )))
}

/// An integer argument of at least `min`, or a `ValueError` (a
/// `TypeError` for a non-integer) naming the argument: `seed=-1` says
/// "seed", not "can't convert negative int to unsigned".
pub(crate) fn int_at_least(obj: &Bound<'_, PyAny>, name: &str, min: u64) -> PyResult<u64> {
    if !obj.is_instance_of::<PyInt>() && !obj.hasattr("__index__")? {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name}: expected an int, got {}",
            obj.get_type().name()?
        )));
    }
    let value: i128 = obj.call_method0("__index__")?.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{name}: {} is out of range",
            obj.repr().map_or_else(|_| "?".into(), |r| r.to_string())
        ))
    })?;
    match u64::try_from(value) {
        Ok(v) if v >= min => Ok(v),
        _ if value < min as i128 => Err(PyValueError::new_err(format!(
            "{name}: expected an int >= {min}, got {value}"
        ))),
        _ => Err(PyValueError::new_err(format!(
            "{name}: {value} is out of range (at most {})",
            u64::MAX
        ))),
    }
}

/// [`int_at_least`] as a `usize`.
pub(crate) fn usize_at_least(obj: &Bound<'_, PyAny>, name: &str, min: u64) -> PyResult<usize> {
    let v = int_at_least(obj, name, min)?;
    usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{name}: {v} is out of range")))
}

/// An open dataset from a path or a `tocpile.Dataset`.
pub(crate) fn dataset_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Arc<Dataset>> {
    if let Ok(ds) = obj.cast::<PyDataset>() {
        return Ok(Arc::clone(&ds.borrow().inner));
    }
    let path: PathBuf = obj.extract()?;
    Ok(Arc::new(py.detach(|| Dataset::open(&path)).py_err()?))
}

/// The buffer as `state_dict` records it: the option, and for the
/// automatic one what it became (the whole file or a tenth depends on the
/// memory of the process, and so does the order: a state only resumes
/// where the choice was the same).
fn buffer_name(buffer: Buffer, choice: &tocpile::loader::BufferChoice) -> String {
    match buffer {
        Buffer::Auto if choice.whole_file => "auto: the whole file".to_string(),
        Buffer::Auto => format!("auto: {} blocks", choice.blocks),
        other => format!("{other:?}"),
    }
}

impl PyLoader {
    fn options_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let loader = &self.shared.loader;
        let o = loader.options();
        let d = PyDict::new(py);
        d.set_item("shuffle", o.strategy.name())?;
        d.set_item("batch_size", o.batch_rows)?;
        d.set_item("seed", o.seed)?;
        d.set_item("rank", o.worker)?;
        d.set_item("world_size", o.workers)?;
        d.set_item("buffer", &self.buffer)?;
        d.set_item("mode", loader.mode().name())?;
        d.set_item("n_rows", loader.dataset().info().n_rows)?;
        Ok(d)
    }
}

#[pymethods]
impl PyLoader {
    #[new]
    #[pyo3(signature = (path, shuffle = "corgipile", batch_size = None, seed = None, rank = None,
        world_size = None, buffer = None, mode = "auto", as_ = "csr", double_buffer = true,
        dtype = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        shuffle: &str,
        batch_size: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        rank: Option<&Bound<'_, PyAny>>,
        world_size: Option<&Bound<'_, PyAny>>,
        buffer: Option<&Bound<'_, PyAny>>,
        mode: &str,
        as_: &str,
        double_buffer: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyLoader> {
        let opt = |v: Option<&Bound<'_, PyAny>>, name, min, default| match v {
            Some(v) => usize_at_least(v, name, min),
            None => Ok(default),
        };
        let batch_size = opt(batch_size, "batch_size", 1, 250)?;
        let world_size = opt(world_size, "world_size", 1, 1)?;
        let rank = opt(rank, "rank", 0, 0)?;
        if rank >= world_size {
            return Err(PyValueError::new_err(format!(
                "rank: expected 0 <= rank < world_size ({world_size}), got {rank}"
            )));
        }
        let seed = match seed {
            Some(v) => int_at_least(v, "seed", 0)?,
            None => 0,
        };
        let buffer_value = match buffer {
            Some(b) => buffer_of(b)?,
            // The library's and the command line's default.
            None => Buffer::Auto,
        };
        let dtype = match dtype {
            Some(d) if !d.is_none() => Some(py.import("numpy")?.call_method1("dtype", (d,))?),
            _ => None,
        };
        let options = LoaderOptions::default()
            .with_strategy(strategy_of(shuffle)?)
            .with_mode(mode_of(mode)?)
            .with_batch_rows(batch_size)
            .with_buffer(buffer_value)
            .with_seed(seed)
            .with_worker(rank)
            .with_workers(world_size)
            .with_double_buffer(double_buffer);
        let dense = want_dense(as_)?;
        let dataset = dataset_of(py, path)?;
        let loader = py.detach(|| Loader::new(dataset, options)).py_err()?;
        let buffer_text = buffer_name(buffer_value, loader.buffer_choice());
        for warning in loader.warnings() {
            let message = std::ffi::CString::new(warning.as_str()).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 1)?;
        }
        let args = PyDict::new(py);
        args.set_item("path", path)?;
        args.set_item("shuffle", shuffle)?;
        args.set_item("batch_size", batch_size)?;
        args.set_item("seed", seed)?;
        args.set_item("rank", rank)?;
        args.set_item("world_size", world_size)?;
        args.set_item("buffer", buffer)?;
        args.set_item("mode", mode)?;
        args.set_item("as_", as_)?;
        args.set_item("double_buffer", double_buffer)?;
        args.set_item("dtype", dtype.as_ref())?;
        Ok(PyLoader {
            shared: Arc::new(Shared {
                loader,
                dense,
                dtype: dtype.map(Bound::unbind),
                state: Mutex::new(State::default()),
            }),
            buffer: buffer_text,
            args: args.unbind(),
        })
    }

    /// Sets the epoch the next iteration yields (and forgets any position
    /// within the current one; iterators already made keep yielding
    /// their epoch but no longer move the state). Each full pass also
    /// advances it by one.
    fn set_epoch(&self, py: Python<'_>, epoch: &Bound<'_, PyAny>) -> PyResult<()> {
        let epoch = int_at_least(epoch, "epoch", 0)?;
        let mut s = self.shared.lock(py);
        s.epoch = epoch;
        s.position = 0;
        s.resume = 0;
        s.generation += 1;
        Ok(())
    }

    /// The epoch being (or next to be) iterated.
    #[getter]
    fn epoch(&self, py: Python<'_>) -> u64 {
        self.shared.lock(py).epoch
    }

    /// Rows of every batch but the last of an epoch.
    #[getter]
    pub(crate) fn batch_size(&self) -> usize {
        self.shared.batch_size()
    }

    /// The mode in use: "page" or "exact" ("auto" resolved).
    #[getter]
    fn mode(&self) -> &'static str {
        self.shared.loader.mode().name()
    }

    /// Settings likely to shuffle poorly, as sentences (a buffer of only a
    /// handful of blocks, page-mode batches of a single page); each was
    /// also issued as a `UserWarning` when the loader was made.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.shared.loader.warnings().to_vec()
    }

    /// The blocks this rank reads in `epoch`, in order.
    fn block_order(&self, epoch: u64) -> Vec<usize> {
        self.shared.loader.block_order(epoch)
    }

    /// Batches of the current epoch: its rows over `batch_size`, rounded
    /// up (what `tqdm` shows as the total); the library's epoch length
    /// where the strategy fixes it.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let epoch = self.shared.lock(py).epoch;
        Ok(self.shared.epoch_batches(py, epoch)? as usize)
    }

    /// Where the iteration stands: the epoch, the batches yielded in it,
    /// and the options (checked on load: a state only resumes the run it
    /// came from).
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = self.options_dict(py)?;
        let s = self.shared.lock(py);
        d.set_item("version", STATE_VERSION)?;
        d.set_item("epoch", s.epoch)?;
        d.set_item("position", s.position)?;
        Ok(d)
    }

    /// Resumes from a `state_dict()`: the next iteration starts its epoch
    /// and skips the batches already yielded, so it yields exactly the
    /// remaining ones.
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
        let mut s = self.shared.lock(py);
        s.epoch = epoch;
        s.position = position;
        s.resume = position;
        s.generation += 1;
        Ok(())
    }

    /// An iterator over the current epoch (from the position a
    /// `load_state_dict` set, else from its start).
    fn __iter__(&self, py: Python<'_>) -> PyResult<EpochIter> {
        let shared = &self.shared;
        let (epoch, skip, generation) = {
            let mut s = shared.lock(py);
            s.generation += 1;
            let skip = std::mem::take(&mut s.resume);
            s.position = skip;
            (s.epoch, skip, s.generation)
        };
        let skip_rows = skip.saturating_mul(shared.batch_size() as u64);
        let loader = &shared.loader;
        let n_cols = loader.dataset().info().n_cols;
        let (stream, pending) = py
            .detach(|| -> tocpile::Result<(Epoch, Pending)> {
                let mut stream = loader.epoch(epoch)?;
                let mut pending = Pending::new(n_cols);
                let mut left = skip_rows;
                while left > 0 {
                    let Some(batch) = stream.next() else { break };
                    let batch = batch?;
                    let rows = batch.n_rows() as u64;
                    if rows <= left {
                        left -= rows;
                        continue;
                    }
                    pending.push(&batch)?;
                    pending.take(left as usize)?;
                    left = 0;
                }
                Ok((stream, pending))
            })
            .py_err()?;
        Ok(EpochIter::new(
            Arc::clone(shared),
            epoch,
            generation,
            stream,
            pending,
            skip,
        ))
    }

    /// Pickles as the constructor's arguments and the `state_dict()`: the
    /// copy resumes where this loader stands.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let restore = py.import("tocpile")?.getattr("_restore_loader")?;
        let args = PyTuple::new(
            py,
            [
                self.args.bind(py).clone().into_any(),
                self.state_dict(py)?.into_any(),
            ],
        )?;
        PyTuple::new(py, [restore, args.into_any()])
    }

    fn __repr__(&self) -> String {
        let loader = &self.shared.loader;
        let o = loader.options();
        format!(
            "Loader({:?}, shuffle={:?}, batch_size={}, seed={}, rank={}, world_size={}, mode={:?})",
            loader.dataset().path().display().to_string(),
            o.strategy.name(),
            o.batch_rows,
            o.seed,
            o.worker,
            o.workers,
            loader.mode().name()
        )
    }
}

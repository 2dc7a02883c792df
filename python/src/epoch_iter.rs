//! `tocpile.EpochIter`: one epoch of a `tocpile.Loader` (what
//! `iter(loader)` returns), the library's mini-batches cut again into
//! batches of exactly `batch_size` rows but the last.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyTuple;
use tocpile::loader::Epoch;
use tocpile::SparseBatch;

use crate::arrays::{self, CsrParts};
use crate::dataset::{push_pages, rows_and_labels};
use crate::loader::Shared;

/// Decoded rows and labels waiting to be cut into batches.
pub(crate) struct Pending {
    parts: CsrParts,
    labels: Vec<f64>,
    scratch: SparseBatch,
}

impl Pending {
    pub(crate) fn new(n_cols: usize) -> Pending {
        Pending {
            parts: CsrParts::new(n_cols),
            labels: Vec::new(),
            scratch: SparseBatch::default(),
        }
    }

    fn rows(&self) -> usize {
        self.labels.len()
    }

    pub(crate) fn push(&mut self, batch: &tocpile::loader::MiniBatch) -> tocpile::Result<()> {
        push_pages(&batch.pages, &mut self.parts, &mut self.scratch)?;
        for page in &batch.pages {
            arrays::reserve(&mut self.labels, page.labels().len(), "labels")?;
            self.labels.extend_from_slice(page.labels());
        }
        Ok(())
    }

    /// The first `k` rows and their labels (all when fewer), removed.
    pub(crate) fn take(&mut self, k: usize) -> tocpile::Result<(CsrParts, Vec<f64>)> {
        let parts = self.parts.take_front(k)?;
        let rest = if k < self.labels.len() {
            self.labels.split_off(k)
        } else {
            Vec::new()
        };
        Ok((parts, std::mem::replace(&mut self.labels, rest)))
    }
}

struct IterState {
    /// None once the epoch's stream has ended (or failed).
    stream: Option<Epoch>,
    pending: Pending,
    position: u64,
}

/// One epoch of a `Loader`: `iter(loader)`. Yields `(X, y)` batches of
/// exactly `batch_size` rows but the last; `len()` is the number of
/// batches left.
#[pyclass(name = "EpochIter", module = "tocpile")]
pub(crate) struct EpochIter {
    shared: Arc<Shared>,
    epoch: u64,
    generation: u64,
    inner: Mutex<IterState>,
}

impl EpochIter {
    pub(crate) fn new(
        shared: Arc<Shared>,
        epoch: u64,
        generation: u64,
        stream: Epoch,
        pending: Pending,
        position: u64,
    ) -> EpochIter {
        EpochIter {
            shared,
            epoch,
            generation,
            inner: Mutex::new(IterState {
                stream: Some(stream),
                pending,
                position,
            }),
        }
    }
}

#[pymethods]
impl EpochIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The epoch this iterator yields.
    #[getter]
    fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Batches not yet yielded.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let total = self.shared.epoch_batches(py, self.epoch)?;
        let position = self
            .inner
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
            .position;
        Ok(total.saturating_sub(position) as usize)
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let shared = &self.shared;
        let batch_size = shared.batch_size();
        let mut guard = self
            .inner
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner());
        let it = &mut *guard;
        let cut = py.detach(|| -> tocpile::Result<Option<(CsrParts, Vec<f64>)>> {
            while it.pending.rows() < batch_size {
                let Some(stream) = it.stream.as_mut() else {
                    break;
                };
                match stream.next() {
                    Some(batch) => {
                        let batch = batch.inspect_err(|_| it.stream = None)?;
                        it.pending.push(&batch)?;
                    }
                    None => it.stream = None,
                }
            }
            if it.pending.rows() == 0 {
                return Ok(None);
            }
            it.pending.take(batch_size).map(Some)
        });
        match cut {
            Err(e) => Err(crate::to_py(e)),
            Ok(None) => {
                let mut s = shared.lock(py);
                if s.generation == self.generation {
                    s.epoch = self.epoch + 1;
                    s.position = 0;
                    s.generation += 1;
                }
                Ok(None)
            }
            Ok(Some((parts, labels))) => {
                it.position += 1;
                {
                    let mut s = shared.lock(py);
                    if s.generation == self.generation {
                        s.position = it.position;
                    }
                }
                drop(guard);
                let dtype = shared.dtype.as_ref().map(|d| d.bind(py));
                Ok(Some(rows_and_labels(
                    py,
                    parts,
                    labels,
                    shared.dense,
                    dtype,
                )?))
            }
        }
    }
}

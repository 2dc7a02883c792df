//! `tocpile.TocBatch`: one TOC-encoded batch (the library's `TocBatch`)
//! with its decode tree, built once, and the products MGD needs run on the
//! tree (TOC paper section 4: `A.v`, `v.A`, `A.M`, `M.A`) with numpy
//! arrays in and out and the GIL released.

use std::sync::{Mutex, MutexGuard};

use numpy::ndarray::{Ix1, Ix2};
use numpy::PyArrayMethods;
use numpy::{PyArray1, PyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use tocpile::{DecodeTree, EncodeOptions, Encoder, Level, SparseBatch, TocBatch, Workspace};

use crate::arrays::{self, CsrParts};
use crate::IntoPy;

/// A batch of rows compressed with tuple-oriented compression (TOC), with
/// the matrix products of mini-batch SGD run on the compressed form.
///
/// Build one from a 2-D numpy array or a scipy.sparse matrix
/// (`TocBatch(X)`), or from bytes (`TocBatch.from_bytes(b)`, which
/// validates them: bad bytes raise `TocError` naming the byte offset).
/// The kernels take float64, C-contiguous numpy arrays, write into `out`
/// when given (else a new array) and release the GIL while they run
/// (except on operands so small, under 20,000 multiply-adds, that the
/// release would cost more than other threads could gain).
#[pyclass(name = "TocBatch", module = "tocpile")]
pub(crate) struct PyTocBatch {
    pub(crate) batch: TocBatch,
    pub(crate) tree: DecodeTree,
    /// Kernel scratch, reused across calls (a second thread calling at the
    /// same time gets a scratch of its own rather than waiting).
    ws: Mutex<Workspace>,
}

fn level_of(name: &str) -> PyResult<Level> {
    match name.to_ascii_lowercase().as_str() {
        "full" => Ok(Level::Full),
        "logical" => Ok(Level::Logical),
        "sparse" => Ok(Level::Sparse),
        _ => Err(PyValueError::new_err(format!(
            "level: expected \"full\", \"logical\" or \"sparse\", got {name:?}"
        ))),
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Full => "full",
        Level::Logical => "logical",
        Level::Sparse => "sparse",
    }
}

impl PyTocBatch {
    pub(crate) fn from_rows(rows: &SparseBatch, level: Level) -> PyResult<PyTocBatch> {
        let options = match level {
            Level::Full => EncodeOptions::default(),
            other => EncodeOptions::level(other),
        };
        let batch = Encoder::new(options).encode(rows).py_err()?;
        let tree = batch.tree();
        Ok(PyTocBatch {
            batch,
            tree,
            ws: Mutex::new(Workspace::new()),
        })
    }

    // `views`: the kernels read the operand and write `out` through
    // ndarray views made with numpy's unchecked `as_array` /
    // `as_array_mut` rather than its borrow tracker (a process-wide table
    // whose bookkeeping cost a microsecond or more per call, as much as
    // A.v itself on a 250-row page). What the tracker would guarantee is
    // checked instead: both arrays are float64 and C-contiguous
    // (`arrays::operand`), `out` is writeable and shares no memory with
    // the operand (`arrays::out_array`), and no other Rust view of them
    // exists during the call. Both arrays are kept alive by the `Bound`s
    // the call holds. As with any numpy extension that releases the GIL,
    // another Python thread writing to them meanwhile gets an unspecified
    // result, never a freed buffer (numpy refuses to resize an array that
    // is referenced).

    /// Runs a kernel of about `work` multiply-adds, with the GIL released
    /// (other Python threads run meanwhile) unless the work is below
    /// [`RELEASE_GIL_WORK`].
    fn run<T: Send>(&self, py: Python<'_>, work: u64, f: impl FnOnce() -> T + Send) -> T {
        if work < RELEASE_GIL_WORK {
            return f();
        }
        py.detach(f)
    }

    /// The decoded rows as CSR parts.
    fn parts(&self, py: Python<'_>) -> PyResult<CsrParts> {
        let batch = &self.batch;
        py.detach(|| {
            let mut parts = CsrParts::new(batch.n_cols());
            parts.push(&batch.decode())?;
            Ok(parts)
        })
        .py_err()
    }

    fn check_len(&self, what: &str, found: usize, expected: usize, of: &str) -> PyResult<()> {
        if found == expected {
            return Ok(());
        }
        Err(PyValueError::new_err(format!(
            "{what}: expected {expected} entries ({of} of the batch), got {found}"
        )))
    }
}

/// Kernels of fewer multiply-adds (stored entries times the operand's
/// width) run without releasing the GIL. Releasing and re-taking it costs
/// about 0.2 microseconds, a third of `A.v` on a 250-row page of the
/// flight data (0.6 us for 1,500 entries, `experiments/python_bench.py`);
/// at this size a kernel takes several microseconds, the release costs a
/// few percent, and a kernel holding the GIL for less is shorter than
/// Python's own switch interval (5 ms) by three orders of magnitude.
const RELEASE_GIL_WORK: u64 = 20_000;

/// Runs `f` with the batch's scratch, or a new one if another thread holds
/// it.
fn with_ws<T>(ws: &Mutex<Workspace>, f: impl FnOnce(&mut Workspace) -> T) -> T {
    match ws.try_lock() {
        Ok(mut guard) => f(&mut guard),
        Err(std::sync::TryLockError::Poisoned(p)) => {
            let mut guard: MutexGuard<'_, Workspace> = p.into_inner();
            f(&mut guard)
        }
        Err(std::sync::TryLockError::WouldBlock) => f(&mut Workspace::new()),
    }
}

#[pymethods]
impl PyTocBatch {
    /// Encodes `X` (a 2-D numpy array of real numbers, or any
    /// scipy.sparse matrix) at `level` "full" (the default), "logical" or
    /// "sparse" (the TOC paper's ablation levels).
    #[new]
    #[pyo3(signature = (x, level = "full"))]
    fn new(x: &Bound<'_, PyAny>, level: &str) -> PyResult<PyTocBatch> {
        let level = level_of(level)?;
        let rows = arrays::rows_from_object(x, "X")?;
        let py = x.py();
        py.detach(|| PyTocBatch::from_rows(&rows, level))
    }

    /// Validates `data` (bytes, bytearray or memoryview) as an encoded
    /// batch and builds its decode tree. Raises `TocError` for bytes that
    /// are not a valid batch, naming what is wrong and where.
    #[staticmethod]
    fn from_bytes(data: &Bound<'_, PyAny>) -> PyResult<PyTocBatch> {
        let bytes: Vec<u8> = match data.cast::<PyBytes>() {
            Ok(b) => b.as_bytes().to_vec(),
            Err(_) => {
                let b = data
                    .py()
                    .import("builtins")?
                    .call_method1("bytes", (data,))?;
                b.cast::<PyBytes>()?.as_bytes().to_vec()
            }
        };
        let mut tree = DecodeTree::default();
        let batch = data
            .py()
            .detach(|| TocBatch::from_bytes_with_tree(bytes, &mut tree))
            .py_err()?;
        Ok(PyTocBatch {
            batch,
            tree,
            ws: Mutex::new(Workspace::new()),
        })
    }

    /// The encoded bytes (what `from_bytes` reads back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.batch.as_bytes())
    }

    /// Pickling goes through the encoded bytes.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        let bytes = slf.borrow().to_bytes(py);
        PyTuple::new(py, [from_bytes, PyTuple::new(py, [bytes])?.into_any()])
    }

    /// Number of rows.
    #[getter]
    fn n_rows(&self) -> usize {
        self.batch.n_rows()
    }

    /// Number of columns.
    #[getter]
    fn n_cols(&self) -> usize {
        self.batch.n_cols()
    }

    /// `(n_rows, n_cols)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.batch.n_rows(), self.batch.n_cols())
    }

    /// Non-zero entries of the decoded rows.
    #[getter]
    fn nnz(&self) -> u64 {
        self.batch.decoded_nnz()
    }

    /// Bytes of the encoded batch.
    #[getter]
    fn nbytes(&self) -> usize {
        self.batch.encoded_len()
    }

    /// The TOC stages applied: "full", "logical" or "sparse".
    #[getter]
    fn level(&self) -> &'static str {
        level_name(self.batch.level())
    }

    /// The byte format version (1 or 2, see docs/FORMAT.md).
    #[getter]
    fn version(&self) -> u8 {
        self.batch.version()
    }

    /// Whether the batch is stored with the prefix tree (else as flat,
    /// value-indexed rows: format version 2 picks per batch).
    #[getter]
    fn has_tree(&self) -> bool {
        self.batch.has_tree()
    }

    fn __len__(&self) -> usize {
        self.batch.n_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "TocBatch(n_rows={}, n_cols={}, nnz={}, nbytes={}, level={:?})",
            self.batch.n_rows(),
            self.batch.n_cols(),
            self.batch.decoded_nnz(),
            self.batch.encoded_len(),
            level_name(self.batch.level())
        )
    }

    /// The rows as a `scipy.sparse.csr_matrix` (values of `dtype`,
    /// default float64).
    #[pyo3(signature = (dtype = None))]
    fn to_scipy<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let parts = self.parts(py)?;
        arrays::cast_to(arrays::csr_matrix(py, parts)?, dtype)
    }

    /// The rows as a dense numpy array of `dtype` (default float64;
    /// `np.float32` for torch). A matrix larger than memory raises
    /// `MemoryError`.
    #[pyo3(signature = (dtype = None))]
    fn to_dense<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let parts = self.parts(py)?;
        arrays::dense_matrix(py, &parts, dtype)
    }

    /// `A . v`: one entry per row (`v` has `n_cols` entries).
    #[pyo3(signature = (v, out = None))]
    fn matvec<'py>(
        &self,
        py: Python<'py>,
        v: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let v = arrays::operand::<Ix1>(v, "v")?;
        self.check_len("v", v.len(), self.batch.n_cols(), "n_cols")?;
        let out = arrays::out_array(py, out, Ix1(self.batch.n_rows()), v)?;
        // SAFETY: see `views`.
        let (v, o) = unsafe { (v.as_array(), out.as_array_mut()) };
        let tree = &self.tree;
        self.run(py, self.batch.decoded_nnz(), || {
            with_ws(&self.ws, |ws| tree.matvec_into(v, o, ws))
        });
        Ok(out)
    }

    /// `v . A`: one entry per column (`v` has `n_rows` entries).
    #[pyo3(signature = (v, out = None))]
    fn vecmat<'py>(
        &self,
        py: Python<'py>,
        v: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let v = arrays::operand::<Ix1>(v, "v")?;
        self.check_len("v", v.len(), self.batch.n_rows(), "n_rows")?;
        let out = arrays::out_array(py, out, Ix1(self.batch.n_cols()), v)?;
        // SAFETY: see `views`.
        let (v, o) = unsafe { (v.as_array(), out.as_array_mut()) };
        let tree = &self.tree;
        self.run(py, self.batch.decoded_nnz(), || {
            with_ws(&self.ws, |ws| tree.vecmat_into(v, o, ws))
        });
        Ok(out)
    }

    /// `A . M`: `M` is `n_cols x p`, the result `n_rows x p`.
    #[pyo3(signature = (m, out = None))]
    fn matmat<'py>(
        &self,
        py: Python<'py>,
        m: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let m = arrays::operand::<Ix2>(m, "M")?;
        let (rows, p) = (m.shape()[0], m.shape()[1]);
        self.check_len("M (rows)", rows, self.batch.n_cols(), "n_cols")?;
        let out = arrays::out_array(py, out, Ix2(self.batch.n_rows(), p), m)?;
        // SAFETY: see `views`.
        let (m, o) = unsafe { (m.as_array(), out.as_array_mut()) };
        let tree = &self.tree;
        let work = self.batch.decoded_nnz() * p as u64;
        self.run(py, work, || {
            with_ws(&self.ws, |ws| tree.matmat_into(m, o, ws))
        });
        Ok(out)
    }

    /// `M . A`: `M` is `q x n_rows`, the result `q x n_cols`.
    #[pyo3(signature = (m, out = None))]
    fn matmat_left<'py>(
        &self,
        py: Python<'py>,
        m: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let m = arrays::operand::<Ix2>(m, "M")?;
        let (q, cols) = (m.shape()[0], m.shape()[1]);
        self.check_len("M (columns)", cols, self.batch.n_rows(), "n_rows")?;
        let out = arrays::out_array(py, out, Ix2(q, self.batch.n_cols()), m)?;
        // SAFETY: see `views`.
        let (m, o) = unsafe { (m.as_array(), out.as_array_mut()) };
        let tree = &self.tree;
        let work = self.batch.decoded_nnz() * q as u64;
        self.run(py, work, || {
            with_ws(&self.ws, |ws| tree.left_matmat_into(m, o, ws))
        });
        Ok(out)
    }
}

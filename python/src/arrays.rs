//! Python inputs into the library's types, checked: numpy arrays and
//! scipy.sparse matrices into a `SparseBatch`, labels into a `Vec<f64>`,
//! kernel operands into borrowed views, and decoded rows back into numpy
//! arrays (CSR parts or dense).
//!
//! Two rules. Data handed over for encoding (rows, labels) may be of any
//! real dtype (bool, integers, floats: converted to float64, as scipy
//! does) and any memory layout, since encoding copies anyway; complex,
//! object and string dtypes, and values that are not finite, are a
//! `ValueError` naming the argument and the row. Kernel operands are used
//! in place, without a copy, so they must already be float64 and
//! C-contiguous (`np.ascontiguousarray(v, dtype=np.float64)`); anything
//! else is a `ValueError` saying so.

use numpy::ndarray::Dimension;
use numpy::{
    PyArray, PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tocpile::SparseBatch;

use crate::IntoPy;

fn value_error<T>(message: String) -> PyResult<T> {
    Err(PyValueError::new_err(message))
}

/// `obj` as a numpy array of float64 (converted from any real dtype), of
/// `ndim` dimensions.
pub(crate) fn real_array<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    ndim: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let np = obj.py().import("numpy")?;
    let array = np.call_method1("asarray", (obj,))?;
    let dtype = array.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "b" | "i" | "u" | "f") {
        return value_error(format!(
            "{what}: expected real numbers (a bool, integer or float dtype), got dtype {}",
            dtype.str()?
        ));
    }
    let dims: usize = array.getattr("ndim")?.extract()?;
    if dims != ndim {
        return value_error(format!(
            "{what}: expected a {ndim}-D array, got {dims}-D (shape {})",
            array.getattr("shape")?.str()?
        ));
    }
    let itemsize: usize = dtype.getattr("itemsize")?.extract()?;
    if kind == "f" && itemsize == 8 {
        return Ok(array);
    }
    np.call_method1("asarray", (array, np.getattr("float64")?))
}

/// The first value that is not finite, as `(index, value)`.
fn first_non_finite(values: impl IntoIterator<Item = f64>) -> Option<(usize, f64)> {
    values.into_iter().enumerate().find(|(_, v)| !v.is_finite())
}

/// Rows from a numpy array (2-D) or any scipy.sparse matrix or array.
pub(crate) fn rows_from_object(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<SparseBatch> {
    if obj.hasattr("tocsr")? && obj.hasattr("nnz")? {
        return rows_from_sparse(obj, what);
    }
    let array = real_array(obj, what, 2)?;
    let array = array.cast::<PyArray2<f64>>()?.readonly();
    let view = array.as_array();
    let n_cols = view.ncols().max(1);
    if let Some((i, v)) = first_non_finite(view.iter().copied()) {
        return value_error(format!(
            "{what}: the value at row {}, column {} is {v}: values must be finite",
            i / n_cols,
            i % n_cols
        ));
    }
    SparseBatch::from_array(view).py_err()
}

fn rows_from_sparse(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<SparseBatch> {
    let np = obj.py().import("numpy")?;
    let mut csr = obj.call_method0("tocsr")?;
    // The library wants each row's columns ascending and unique.
    if !csr.getattr("has_canonical_format")?.extract::<bool>()? {
        csr = csr.call_method0("copy")?;
        csr.call_method0("sum_duplicates")?;
    }
    let (n_rows, n_cols): (usize, usize) = csr.getattr("shape")?.extract()?;
    let data = real_array(&csr.getattr("data")?, &format!("{what}.data"), 1)?;
    let data = data.cast::<PyArray1<f64>>()?.readonly();
    let int64 = np.getattr("int64")?;
    let index = |name: &str| -> PyResult<Vec<i64>> {
        let a = np.call_method1("asarray", (csr.getattr(name)?, &int64))?;
        copied(a.cast::<PyArray1<i64>>()?.readonly().as_array().iter())
    };
    let indptr = index("indptr")?;
    let indices = index("indices")?;
    if indptr.len() != n_rows + 1 {
        return value_error(format!(
            "{what}: indptr has {} entries for {n_rows} rows (expected rows + 1)",
            indptr.len()
        ));
    }
    let mut offsets = Vec::new();
    reserve(&mut offsets, indptr.len(), "row offsets of X").py_err()?;
    offsets.extend(indptr.iter().map(|&o| o.max(0) as usize));
    let values = copied(data.as_array().iter())?;
    if let Some((i, v)) = first_non_finite(values.iter().copied()) {
        let row = offsets.partition_point(|&o| o <= i).saturating_sub(1);
        return value_error(format!(
            "{what}: the value at row {row}, column {} is {v}: values must be finite",
            indices.get(i).copied().unwrap_or(-1)
        ));
    }
    let mut cols = Vec::new();
    reserve(&mut cols, indices.len(), "column indices of X").py_err()?;
    for &c in &indices {
        match u32::try_from(c) {
            Ok(c) => cols.push(c),
            Err(_) => return value_error(format!("{what}: column index {c} out of range")),
        }
    }
    SparseBatch::from_csr(n_cols, offsets, cols, values).py_err()
}

/// The items copied into a vector allocated fallibly (`MemoryError`
/// rather than an abort for a matrix as large as memory).
fn copied<'a, T: Copy + 'a>(items: impl ExactSizeIterator<Item = &'a T>) -> PyResult<Vec<T>> {
    let mut out = Vec::new();
    reserve(&mut out, items.len(), "a copy of the input arrays").py_err()?;
    out.extend(items.copied());
    Ok(out)
}

/// One finite label per row, from any 1-D array-like of real numbers.
pub(crate) fn labels_from_object(obj: &Bound<'_, PyAny>, n_rows: usize) -> PyResult<Vec<f64>> {
    let array = real_array(obj, "y", 1)?;
    let labels = array
        .cast::<PyArray1<f64>>()?
        .readonly()
        .as_array()
        .to_vec();
    if labels.len() != n_rows {
        return value_error(format!(
            "y: {} labels for {n_rows} rows (one label per row expected)",
            labels.len()
        ));
    }
    if let Some((row, v)) = first_non_finite(labels.iter().copied()) {
        return value_error(format!(
            "y: the label of row {row} is {v}: labels must be finite"
        ));
    }
    Ok(labels)
}

/// `obj` as a float64, C-contiguous numpy array of `ndim` dimensions, or
/// a `ValueError` saying what is wrong and how to fix it.
fn strict<'py>(obj: &Bound<'py, PyAny>, what: &str, ndim: usize) -> PyResult<()> {
    let py = obj.py();
    let Ok(array) = obj.cast::<PyUntypedArray>() else {
        return value_error(format!(
            "{what}: expected a numpy array of float64, got {}",
            obj.get_type().name()?
        ));
    };
    if !array.dtype().is_equiv_to(&numpy::dtype::<f64>(py)) {
        return value_error(format!(
            "{what}: expected dtype float64, got {}; convert with np.asarray({what}, dtype=np.float64)",
            array.dtype().str()?
        ));
    }
    if array.ndim() != ndim {
        return value_error(format!(
            "{what}: expected a {ndim}-D array, got {}-D",
            array.ndim()
        ));
    }
    if !array.is_c_contiguous() {
        return value_error(format!(
            "{what}: the array is not C-contiguous (a strided view or Fortran order); \
             pass np.ascontiguousarray({what})"
        ));
    }
    Ok(())
}

/// A kernel operand: a float64, C-contiguous array of `D`'s dimensions.
/// The typed cast is the fast path (it checks the type, the dtype and the
/// dimensions in a few C calls: kernels on 250-row batches take a few
/// microseconds, so the checks must not); the slow checks run only to word
/// the error.
pub(crate) fn operand<'a, 'py, D: Dimension>(
    obj: &'a Bound<'py, PyAny>,
    what: &str,
) -> PyResult<&'a Bound<'py, PyArray<f64, D>>> {
    if let Ok(array) = obj.cast::<PyUntypedArray>() {
        let dtype = array.dtype();
        let fits = dtype.num() == numpy::npyffi::NPY_TYPES::NPY_DOUBLE as std::os::raw::c_int
            && dtype.is_native_byteorder() != Some(false)
            && Some(array.ndim()) == D::NDIM
            && array.is_c_contiguous();
        if fits {
            // SAFETY: an ndarray of native float64 with D's dimensions is
            // what `PyArray<f64, D>` stands for (the checks numpy's own
            // typed cast makes, without building a descriptor to compare
            // with on every call).
            return Ok(unsafe { obj.cast_unchecked::<PyArray<f64, D>>() });
        }
    }
    strict(obj, what, D::NDIM.unwrap_or(0))?;
    value_error(format!(
        "{what}: expected a float64, C-contiguous numpy array"
    ))
}

/// A caller's `out` array of `shape` (float64, C-contiguous, writeable,
/// sharing no memory with `operand`), or a new one.
pub(crate) fn out_array<'py, D: Dimension>(
    py: Python<'py>,
    out: Option<&Bound<'py, PyAny>>,
    shape: D,
    operand: &Bound<'py, PyArray<f64, D>>,
) -> PyResult<Bound<'py, PyArray<f64, D>>> {
    let Some(out) = out else {
        return Ok(PyArray::zeros(py, shape, false));
    };
    let array = operand_checked_out(out, shape)?;
    // SAFETY: reading the flags of a live array object.
    let flags = unsafe { (*array.as_array_ptr()).flags };
    if flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return value_error("out: cannot write to the array (it is read-only)".into());
    }
    let span = |a: &Bound<'py, PyArray<f64, D>>| {
        let start = a.data() as usize;
        start..start + 8 * a.len()
    };
    let (a, b) = (span(&array), span(operand));
    if a.start < b.end && b.start < a.end {
        return value_error("out: shares memory with the operand; pass another array".into());
    }
    Ok(array)
}

fn operand_checked_out<'py, D: Dimension>(
    out: &Bound<'py, PyAny>,
    shape: D,
) -> PyResult<Bound<'py, PyArray<f64, D>>> {
    let array = operand::<D>(out, "out")?;
    if array.shape() != shape.slice() {
        return value_error(format!(
            "out: expected shape {:?}, got {:?}",
            shape.slice(),
            array.shape()
        ));
    }
    Ok(array.clone())
}

/// Rows gathered as CSR parts, with int32 indices when they fit (scipy's
/// own choice, so it keeps the arrays without a copy).
#[derive(Debug, Default)]
pub(crate) struct CsrParts {
    pub(crate) indptr: Vec<i64>,
    pub(crate) indices: Vec<u32>,
    pub(crate) data: Vec<f64>,
    pub(crate) n_cols: usize,
}

impl CsrParts {
    pub(crate) fn new(n_cols: usize) -> CsrParts {
        CsrParts {
            indptr: vec![0],
            n_cols,
            ..CsrParts::default()
        }
    }

    /// Appends the rows of `batch`; `Error::OutOfMemory` (a Python
    /// `MemoryError`) when the system refuses the room, instead of an
    /// abort: the rows of a whole file can be more than memory holds.
    pub(crate) fn push(&mut self, batch: &SparseBatch) -> tocpile::Result<()> {
        reserve(
            &mut self.indptr,
            batch.n_rows(),
            "row offsets of the decoded rows",
        )?;
        reserve(
            &mut self.indices,
            batch.cols().len(),
            "column indices of the decoded rows",
        )?;
        reserve(
            &mut self.data,
            batch.values().len(),
            "values of the decoded rows",
        )?;
        let base = self.data.len() as i64;
        self.indptr
            .extend(batch.offsets()[1..].iter().map(|&o| base + o as i64));
        self.indices.extend_from_slice(batch.cols());
        self.data.extend_from_slice(batch.values());
        Ok(())
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Entries held.
    pub(crate) fn nnz(&self) -> usize {
        self.data.len()
    }

    /// Removes the first `k` rows (all when there are fewer) and returns
    /// them; the rest stay, renumbered.
    pub(crate) fn take_front(&mut self, k: usize) -> tocpile::Result<CsrParts> {
        if k >= self.n_rows() {
            return Ok(std::mem::replace(self, CsrParts::new(self.n_cols)));
        }
        let cut = self.indptr[k] as usize;
        let mut front = CsrParts::new(self.n_cols);
        reserve(&mut front.indptr, k, "row offsets of a mini-batch")?;
        reserve(&mut front.indices, cut, "column indices of a mini-batch")?;
        reserve(&mut front.data, cut, "values of a mini-batch")?;
        front.indptr.extend_from_slice(&self.indptr[1..=k]);
        front.indices.extend_from_slice(&self.indices[..cut]);
        front.data.extend_from_slice(&self.data[..cut]);
        self.indices.drain(..cut);
        self.data.drain(..cut);
        self.indptr.drain(1..=k);
        for o in &mut self.indptr[1..] {
            *o -= cut as i64;
        }
        Ok(front)
    }

    /// `(data, indices, indptr)` as numpy arrays.
    pub(crate) fn into_numpy<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let small = self.data.len() <= i32::MAX as usize && self.n_cols <= i32::MAX as usize;
        let data = PyArray1::from_vec(py, self.data).into_any();
        let (indices, indptr) = if small {
            (
                PyArray1::from_vec(py, converted(&self.indices, |&c| c as i32)?).into_any(),
                PyArray1::from_vec(py, converted(&self.indptr, |&o| o as i32)?).into_any(),
            )
        } else {
            (
                PyArray1::from_vec(py, converted(&self.indices, |&c| i64::from(c))?).into_any(),
                PyArray1::from_vec(py, self.indptr).into_any(),
            )
        };
        PyTuple::new(py, [data, indices, indptr])
    }

    /// Writes the rows into `dense` (row-major, `n_rows x n_cols`, zeros).
    fn fill_dense<T>(&self, dense: &mut [T], convert: impl Fn(f64) -> T) {
        for (r, row) in dense.chunks_exact_mut(self.n_cols.max(1)).enumerate() {
            for k in self.indptr[r] as usize..self.indptr[r + 1] as usize {
                row[self.indices[k] as usize] = convert(self.data[k]);
            }
        }
    }
}

/// A `scipy.sparse.csr_matrix` of `parts` (built through scipy's own
/// constructor, which checks the parts once more).
pub(crate) fn csr_matrix<'py>(py: Python<'py>, parts: CsrParts) -> PyResult<Bound<'py, PyAny>> {
    let shape = (parts.n_rows(), parts.n_cols);
    let arrays = parts.into_numpy(py)?;
    let sparse = py.import("scipy.sparse")?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("shape", shape)?;
    sparse.getattr("csr_matrix")?.call((arrays,), Some(&kwargs))
}

/// The rows as a dense numpy matrix of `dtype` (None: float64). The array
/// is allocated by `numpy.zeros`, so a matrix larger than memory raises
/// numpy's own `MemoryError` (a Rust allocation of that size would abort
/// the interpreter); float32 is filled directly, without a float64 copy.
pub(crate) fn dense_matrix<'py>(
    py: Python<'py>,
    parts: &CsrParts,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let shape = (parts.n_rows(), parts.n_cols);
    let np = py.import("numpy")?;
    let single = match dtype {
        Some(d) => np.call_method1("dtype", (d,))?.eq(np.getattr("float32")?)?,
        None => false,
    };
    let float = np.getattr(if single { "float32" } else { "float64" })?;
    let array = np.call_method1("zeros", (shape, float))?;
    if single {
        fill(&array, parts, |v| v as f32)?;
        return Ok(array);
    }
    fill(&array, parts, |v| v)?;
    cast_to(array, dtype)
}

fn fill<T: numpy::Element + Copy>(
    array: &Bound<'_, PyAny>,
    parts: &CsrParts,
    convert: impl Fn(f64) -> T,
) -> PyResult<()> {
    let typed = array.cast::<PyArray2<T>>()?;
    let mut view = typed.readwrite();
    let dense = view
        .as_slice_mut()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    parts.fill_dense(dense, convert);
    Ok(())
}

/// `array` (numpy or scipy) as `dtype` (None: unchanged; a copy only
/// when the dtype differs).
pub(crate) fn cast_to<'py>(
    array: Bound<'py, PyAny>,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    match dtype {
        None => Ok(array),
        Some(dtype) => {
            let kwargs = pyo3::types::PyDict::new(array.py());
            kwargs.set_item("copy", false)?;
            array.call_method("astype", (dtype,), Some(&kwargs))
        }
    }
}

/// `Vec::try_reserve` as `Error::OutOfMemory` naming `what`.
pub(crate) fn reserve<T>(
    v: &mut Vec<T>,
    additional: usize,
    what: &'static str,
) -> tocpile::Result<()> {
    v.try_reserve(additional)
        .map_err(|_| tocpile::Error::OutOfMemory {
            what,
            bytes: (v.len().saturating_add(additional) as u64)
                .saturating_mul(std::mem::size_of::<T>() as u64),
        })
}

/// `items` mapped by `f` into a new vector allocated fallibly.
fn converted<T, U>(items: &[T], f: impl Fn(&T) -> U) -> PyResult<Vec<U>> {
    let mut out = Vec::new();
    reserve(&mut out, items.len(), "index arrays of the decoded rows").py_err()?;
    out.extend(items.iter().map(f));
    Ok(out)
}

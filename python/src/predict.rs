//! Predictions over a whole matrix or dataset file in one call, on every
//! core, for `Model.decision_function`, `predict` and `predict_proba`.
//!
//! A single-layer model (lr, svm, linreg, softmax) reads scipy's CSR
//! arrays (or a C-contiguous float64 numpy array) in place, with no copy
//! and no encoding: rows are cut into chunks of [`CHUNK_ROWS`], scored on
//! the calling thread and the library's pool at once with the GIL
//! released, each row `x . W + b`. A CSR row's products are summed in
//! order, as scipy's and the library's forward pass sum them, except for a
//! one-output model on a processor with AVX-512 and rows of 6 entries or
//! more on average, summed in sixteen lanes ([`csr_lanes`], 1.1 times
//! scipy's speed on one thread where the ordered loop was 0.84 to 1.0 on
//! rows of 10); a model of 2 to 16 outputs on AVX-512 adds each entry's
//! products to all its row's outputs in registers ([`csr_outputs`]);
//! dense rows in four running sums (or, for several outputs, as above or
//! one matrix product a chunk). Each agrees with the library's
//! `Model::predict` and with numpy to rounding (`tests/test_predict.py`,
//! relative 1e-12). An MLP's rows are
//! encoded as CSR pages of [`CHUNK_ROWS`] rows, in parallel, and scored by
//! the library's `Model::predict` (parallel across pages). A dataset file
//! is scored page by page by the library.

use std::mem::MaybeUninit;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use tocpile::formats::FormatKind;
use tocpile::model::{Model, ModelKind};
use tocpile::{Page, SparseBatch};

use crate::arrays;
use crate::csr_lanes::{self, Lanes};
use crate::csr_outputs;
use crate::dataset::PyDataset;
use crate::IntoPy;

/// Rows scored per task: large enough that a task's overhead (a few
/// microseconds) is small against its work, small enough that two cores
/// share even a few thousand rows.
const CHUNK_ROWS: usize = 4096;

/// Scores of rows, row-major (`outputs` per row), with the library's
/// readings of them (`tocpile::model::Predictions`: a class from a positive
/// margin or the largest logit, probabilities by the logistic or softmax
/// function).
pub(crate) struct Scores {
    pub(crate) outputs: usize,
    pub(crate) values: Vec<f64>,
    kind: ModelKind,
}

impl Scores {
    pub(crate) fn n_rows(&self) -> usize {
        self.values.len() / self.outputs.max(1)
    }

    pub(crate) fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.outputs..(i + 1) * self.outputs]
    }

    /// The class index of row `i` (None for linreg).
    pub(crate) fn class(&self, i: usize) -> Option<usize> {
        self.kind.class_of(self.row(i))
    }

    /// Probabilities of row `i` (None for svm and linreg): of the positive
    /// class for one output, of each class for more.
    pub(crate) fn probabilities(&self, i: usize, out: &mut Vec<f64>) -> bool {
        self.kind.probabilities_of(self.row(i), out)
    }
}

/// The first layer's weights (`n_cols x outputs`, row-major) and biases
/// when the model is a single layer.
fn single_layer(model: &Model) -> Option<(Vec<f64>, Vec<f64>)> {
    let [layer] = model.layers() else {
        return None;
    };
    let w = layer.weights().iter().copied().collect();
    Some((w, layer.bias().to_vec()))
}

/// Scores of the rows of `x`: a numpy array, a scipy.sparse matrix or a
/// `tocpile.Dataset` (or anything `numpy.asarray` takes).
pub(crate) fn scores(py: Python<'_>, model: &Model, x: &Bound<'_, PyAny>) -> PyResult<Scores> {
    let outputs = model.layers().last().map_or(1, |l| l.weights().ncols());
    let kind = model.kind().clone();
    let values = if let Ok(ds) = x.cast::<PyDataset>() {
        dataset_scores(py, model, &ds.borrow())?
    } else {
        match single_layer(model) {
            Some((w, b)) => linear_scores(py, model.n_cols(), &w, &b, x)?,
            None => paged_scores(py, model, x)?,
        }
    };
    Ok(Scores {
        outputs,
        values,
        kind,
    })
}

fn check_cols(found: usize, model_cols: usize) -> PyResult<()> {
    if found == model_cols {
        return Ok(());
    }
    Err(PyValueError::new_err(format!(
        "X: {found} columns, but the model takes {model_cols}"
    )))
}

/// Room for `len` scores, allocated fallibly (`MemoryError`) and not
/// written: the kernels write every score once, straight into it (zeroing
/// 400,000 scores first was a pass of its own, 3% of scipy's time).
fn room(len: usize) -> PyResult<Vec<f64>> {
    let mut out = Vec::new();
    arrays::reserve(&mut out, len, "scores").py_err()?;
    Ok(out)
}

/// `len` scores written by `kernel` into [`room`] for them: the vector
/// when it returns Ok (which it does only once it wrote every score).
fn written(
    len: usize,
    kernel: impl FnOnce(&mut [MaybeUninit<f64>]) -> Result<(), String>,
) -> PyResult<Vec<f64>> {
    let mut out = room(len)?;
    kernel(&mut out.spare_capacity_mut()[..len]).map_err(PyValueError::new_err)?;
    // SAFETY: the kernels return Ok only after writing each of the `len`
    // scores (`fast_csr_chunk`, `csr_lanes::scores` and
    // `csr_outputs::scores` every row of their chunk before they return
    // true; the other paths through `initialized` first).
    unsafe { out.set_len(len) };
    Ok(out)
}

/// The chunk zeroed, as initialized scores.
fn initialized(chunk: &mut [MaybeUninit<f64>]) -> &mut [f64] {
    for c in chunk.iter_mut() {
        c.write(0.0);
    }
    // SAFETY: every element was just written; MaybeUninit<f64> has f64's
    // layout.
    unsafe { &mut *(chunk as *mut [MaybeUninit<f64>] as *mut [f64]) }
}

fn linear_scores<'py>(
    py: Python<'py>,
    n_cols: usize,
    w: &[f64],
    b: &[f64],
    x: &Bound<'py, PyAny>,
) -> PyResult<Vec<f64>> {
    let np = py.import("numpy")?;
    let k = b.len();
    if x.hasattr("tocsr")? && x.hasattr("nnz")? {
        let csr = x.call_method0("tocsr")?;
        let (n_rows, cols): (usize, usize) = csr.getattr("shape")?.extract()?;
        check_cols(cols, n_cols)?;
        let data = np.call_method1(
            "ascontiguousarray",
            (csr.getattr("data")?, np.getattr("float64")?),
        )?;
        let data = data.cast::<PyArray1<f64>>()?.readonly();
        let data = data.as_slice()?;
        let (indices, indptr) = (csr.getattr("indices")?, csr.getattr("indptr")?);
        // scipy keeps both index arrays of one dtype; int32 unless large.
        let int64 = |a: &Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
            np.call_method1("ascontiguousarray", (a, np.getattr("int64")?))
        };
        let both32 = indices
            .cast::<PyArray1<i32>>()
            .ok()
            .zip(indptr.cast::<PyArray1<i32>>().ok());
        return match both32 {
            Some((ind, ptr)) => {
                let (ind, ptr) = (ind.readonly(), ptr.readonly());
                let (ind, ptr) = (ind.as_slice()?, ptr.as_slice()?);
                written(n_rows * k, |out| {
                    py.detach(|| csr_kernel(ptr, ind, data, w, b, out))
                })
            }
            None => {
                let (ind, ptr) = (int64(&indices)?, int64(&indptr)?);
                let (ind, ptr) = (
                    ind.cast::<PyArray1<i64>>()?.readonly(),
                    ptr.cast::<PyArray1<i64>>()?.readonly(),
                );
                let (ind, ptr) = (ind.as_slice()?, ptr.as_slice()?);
                written(n_rows * k, |out| {
                    py.detach(|| csr_kernel(ptr, ind, data, w, b, out))
                })
            }
        };
    }
    let array = arrays::real_array(x, "X", 2)?;
    let array = np.call_method1("ascontiguousarray", (array,))?;
    let array = array.cast::<PyArray2<f64>>()?.readonly();
    let (n_rows, cols) = (array.shape()[0], array.shape()[1]);
    check_cols(cols, n_cols)?;
    let rows = array.as_slice()?;
    written(n_rows * k, |out| {
        py.detach(|| dense_kernel(rows, n_cols, w, b, out))
    })
}

/// `x . W + b` for one row given as (column, value) pairs; a column
/// index outside the weights is returned as the error.
#[inline]
fn score_row(
    pairs: impl Iterator<Item = (i64, f64)>,
    w: &[f64],
    b: &[f64],
    out: &mut [f64],
) -> Result<(), i64> {
    let k = b.len();
    if k == 1 {
        let mut acc = 0.0;
        for (j, v) in pairs {
            // A negative index wraps to a huge one: `get` refuses both.
            match w.get(j as usize) {
                Some(&wj) => acc += v * wj,
                None => return Err(j),
            }
        }
        out[0] = acc + b[0];
        return Ok(());
    }
    out.copy_from_slice(b);
    for (j, v) in pairs {
        let Some(row) = w
            .get(j as usize * k..(j as usize + 1) * k)
            .filter(|_| j >= 0)
        else {
            return Err(j);
        };
        for (o, &wj) in out.iter_mut().zip(row) {
            *o += v * wj;
        }
    }
    Ok(())
}

/// Why a row's score is not finite: the first value of the row that is
/// not, or an overflow.
fn not_finite(row: usize, values: impl Iterator<Item = (i64, f64)>) -> String {
    for (j, v) in values {
        if !v.is_finite() {
            return format!("X: the value at row {row}, column {j} is {v}: values must be finite");
        }
    }
    format!("X: the score of row {row} is not finite (an overflow of large values)")
}

/// A one-output model's weights padded with NaN to a power of two, for
/// [`fast_csr_chunk`]: an index masked to the padded length reads either
/// its weight or a NaN, which makes the row's score NaN.
fn padded_weights(w: &[f64]) -> Vec<f64> {
    let mut padded = w.to_vec();
    padded.resize(w.len().max(1).next_power_of_two(), f64::NAN);
    padded
}

/// Scores of CSR rows (`indptr`, `indices`, `data` as scipy holds them),
/// checked: offsets within the values, column indices within the model's
/// columns, finite values. Chunks of [`CHUNK_ROWS`] rows on the calling
/// thread and the library's pool at once; a one-output model's chunk is
/// first scored by [`csr_lanes::scores`] where that pays
/// ([`csr_lanes::pays`]: AVX-512, rows of 6 entries or more on average)
/// and by [`fast_csr_chunk`] elsewhere, a chunk for 2 to 16 outputs by
/// [`csr_outputs::scores`] where AVX-512 is available; any chunk again by
/// [`checked_csr_chunk`] (which names the problem) only if that fails.
fn csr_kernel<I: Lanes + Sync>(
    indptr: &[I],
    indices: &[I],
    data: &[f64],
    w: &[f64],
    b: &[f64],
    out: &mut [MaybeUninit<f64>],
) -> Result<(), String> {
    let k = b.len();
    let n_rows = out.len() / k.max(1);
    if indptr.len() != n_rows + 1 || indices.len() != data.len() {
        return Err(format!(
            "X: malformed CSR arrays ({} offsets for {n_rows} rows, {} indices, {} values)",
            indptr.len(),
            indices.len(),
            data.len()
        ));
    }
    let padded = (k == 1).then(|| padded_weights(w));
    let padded_rows = (k > 1)
        .then(|| csr_outputs::PaddedRows::new(w, w.len() / k, k))
        .flatten();
    tocpile::parallel::try_for_each_chunk(out, CHUNK_ROWS * k, |c, chunk| {
        let first = c * CHUNK_ROWS;
        let offsets = &indptr[first..=first + chunk.len() / k];
        if let Some(rows) = &padded_rows {
            if csr_outputs::scores(offsets, indices, data, rows, b, chunk) {
                return Ok(());
            }
        }
        if let Some(padded) = &padded {
            let fast = if csr_lanes::pays(
                offsets[0].value(),
                offsets[chunk.len()].value(),
                chunk.len(),
            ) {
                csr_lanes::scores(offsets, indices, data, padded, b[0], chunk)
            } else {
                fast_csr_chunk(offsets, indices, data, padded, b[0], chunk)
            };
            if fast {
                return Ok(());
            }
        }
        checked_csr_chunk(first, offsets, indices, data, w, b, initialized(chunk))
    })
}

/// `out[r] = x_r . w + b` for the rows whose offsets are `offsets` (one
/// more than `out.len()`), scipy's loop (the same sums in the same order)
/// with the checks moved out of the way of the sums: the offsets in one
/// pass before, the column indices by an OR of them all and weights
/// padded with NaN (`padded`, a power of two long), a finite score per
/// row after. False if a check failed: the chunk is then scored again by
/// [`checked_csr_chunk`]. The checks inside the loop cost 2% of it where
/// bounds checks cost 12% and a comparison per index 30% (400,000 x 100
/// rows of density 0.1, single thread).
fn fast_csr_chunk<I: Lanes>(
    offsets: &[I],
    indices: &[I],
    data: &[f64],
    padded: &[f64],
    b: f64,
    out: &mut [MaybeUninit<f64>],
) -> bool {
    assert!(
        padded.len().is_power_of_two()
            && offsets.len() == out.len() + 1
            && indices.len() == data.len()
    );
    let len = data.len() as i64;
    let mut in_order = offsets[0].value() >= 0;
    for pair in offsets.windows(2) {
        in_order &= pair[0].value() <= pair[1].value();
    }
    if !in_order || offsets[offsets.len() - 1].value() > len {
        return false;
    }
    let mask = padded.len() as u64 - 1;
    let mut seen = 0u64;
    for (o, pair) in out.iter_mut().zip(offsets.windows(2)) {
        let (start, end) = (pair[0].value() as usize, pair[1].value() as usize);
        let mut acc = 0.0;
        for e in start..end {
            keep_rolled();
            // SAFETY: 0 <= start <= end <= len, the length of `indices`
            // and `data` (the offsets were checked non-decreasing from 0
            // or more to len or less above); `bits & mask` is below
            // `padded.len()`, `mask + 1`.
            unsafe {
                let j = indices.get_unchecked(e).bits();
                seen |= j;
                acc += *data.get_unchecked(e) * *padded.get_unchecked((j & mask) as usize);
            }
        }
        o.write(acc + b);
    }
    // SAFETY: the loop above wrote every score of the chunk.
    let out = unsafe { &*(out as *const [MaybeUninit<f64>] as *const [f64]) };
    // An index at or past `padded.len()` (a negative one among them) was
    // read masked: `seen` has a bit above the mask. One in the padding
    // read a NaN: its row's score is NaN.
    seen & !mask == 0 && out.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// An empty assembly statement, which LLVM does not unroll a loop around.
/// Unrolled by two, a row's loop takes a second branch on its length's
/// parity, mispredicted half the time on rows of 10 entries or so: the
/// int64 loop (which LLVM unrolls, the int32 one it does not) ran 15%
/// slower than rolled, and 0.45 to 0.6 times scipy's in Python.
#[inline(always)]
fn keep_rolled() {
    #[cfg(any(
        target_arch = "x86",
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "arm"
    ))]
    // SAFETY: no instructions; it reads, writes and changes nothing.
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags));
    }
}

/// [`fast_csr_chunk`]'s rows scored with every check in the loop, the
/// first problem named: offsets outside the values, a column index
/// outside the model's, a value or score that is not finite.
fn checked_csr_chunk<I: Lanes>(
    first: usize,
    offsets: &[I],
    indices: &[I],
    data: &[f64],
    w: &[f64],
    b: &[f64],
    out: &mut [f64],
) -> Result<(), String> {
    let k = b.len();
    let n_cols = w.len() / k.max(1);
    for (i, (o, pair)) in out.chunks_exact_mut(k).zip(offsets.windows(2)).enumerate() {
        let r = first + i;
        let (start, end) = (pair[0].value(), pair[1].value());
        if !(0 <= start && start <= end && end <= data.len() as i64) {
            return Err(format!(
                "X: row {r} has offsets {start}..{end} outside its {} values",
                data.len()
            ));
        }
        let span = start as usize..end as usize;
        let (cols, values) = (&indices[span.clone()], &data[span]);
        let pairs = || cols.iter().map(|&j| j.value()).zip(values.iter().copied());
        if let Err(j) = score_row(pairs(), w, b, o) {
            return Err(format!(
                "X: row {r} has column index {j} (the model takes {n_cols} columns)"
            ));
        }
        if !o.iter().all(|v| v.is_finite()) {
            return Err(not_finite(r, pairs()));
        }
    }
    Ok(())
}

fn dense_kernel(
    rows: &[f64],
    n_cols: usize,
    w: &[f64],
    b: &[f64],
    out: &mut [MaybeUninit<f64>],
) -> Result<(), String> {
    let k = b.len();
    let padded_rows = (k > 1)
        .then(|| csr_outputs::PaddedRows::new(w, n_cols, k))
        .flatten();
    tocpile::parallel::try_for_each_chunk(out, CHUNK_ROWS * k, |c, chunk| {
        let first = c * CHUNK_ROWS;
        let chunk = initialized(chunk);
        let rest = &rows[first * n_cols..];
        let fast = match &padded_rows {
            Some(padded) => csr_outputs::dense_scores(rest, padded, b, chunk),
            None => k > 1 && dense_product(rest, n_cols, w, b, chunk),
        };
        if fast {
            return Ok(());
        }
        for (i, o) in chunk.chunks_exact_mut(k).enumerate() {
            let r = first + i;
            let row = &rows[r * n_cols..(r + 1) * n_cols];
            if k == 1 {
                // Every column is in range: a plain dot product, in
                // four running sums (the loop vectorizes).
                let mut acc = [0.0f64; 4];
                let (body, tail) = row.split_at(row.len() - row.len() % 4);
                for (x4, w4) in body.chunks_exact(4).zip(w.chunks_exact(4)) {
                    for l in 0..4 {
                        acc[l] += x4[l] * w4[l];
                    }
                }
                let rest: f64 = tail.iter().zip(&w[body.len()..]).map(|(x, w)| x * w).sum();
                o[0] = (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest + b[0];
                if o[0].is_finite() {
                    continue;
                }
            }
            let pairs = (0i64..).zip(row.iter().copied());
            if let Err(j) = score_row(pairs.clone(), w, b, o) {
                return Err(format!("X: column {j} is outside the model's {n_cols}"));
            }
            if !o.iter().all(|v| v.is_finite()) {
                return Err(not_finite(r, pairs));
            }
        }
        Ok(())
    })
}

/// `out = X W + b` for the dense rows of a chunk (`out.len() / k` of them
/// from the start of `rows`) and a model of `k = b.len()` outputs, as one
/// matrix product (ndarray's `general_mat_mul`). A softmax of 10 classes
/// over 100,000 x 100 rows ran 0.34-0.37 times numpy's `X @ W + b` on one
/// thread with each row's outputs summed entry by entry, 0.57-0.75 times
/// so. False if a score is not finite: the caller scores the rows one by
/// one to name the value.
fn dense_product(rows: &[f64], n_cols: usize, w: &[f64], b: &[f64], out: &mut [f64]) -> bool {
    use tocpile::ndarray::linalg::general_mat_mul;
    use tocpile::ndarray::{ArrayView1, ArrayView2, ArrayViewMut2};
    let k = b.len();
    let n = out.len() / k;
    let (Ok(x), Ok(w), Ok(mut o)) = (
        ArrayView2::from_shape((n, n_cols), &rows[..n * n_cols]),
        ArrayView2::from_shape((n_cols, k), w),
        ArrayViewMut2::from_shape((n, k), out),
    ) else {
        return false;
    };
    general_mat_mul(1.0, &x, &w, 0.0, &mut o);
    o += &ArrayView1::from(b);
    o.iter().all(|v| v.is_finite())
}

/// Scores by the library: the rows encoded as CSR pages of
/// [`CHUNK_ROWS`] rows (in parallel), `Model::predict` over them.
fn paged_scores(py: Python<'_>, model: &Model, x: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let rows = arrays::rows_from_object(x, "X")?;
    check_cols(rows.n_cols(), model.n_cols())?;
    py.detach(|| -> tocpile::Result<Vec<f64>> {
        let n = rows.n_rows();
        let pages: Vec<Page> = tocpile::parallel::install(|| {
            (0..n.div_ceil(CHUNK_ROWS))
                .into_par_iter()
                .map(|c| {
                    let chunk: SparseBatch =
                        rows.slice_rows(c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(n));
                    // Labels are not read by predict; the page needs one per row.
                    Page::encode(FormatKind::Csr, &chunk, &vec![0.0; chunk.n_rows()])
                })
                .collect::<tocpile::Result<_>>()
        })?;
        let p = model.predict(&pages)?;
        Ok((0..p.n_rows()).flat_map(|i| p.scores(i).to_vec()).collect())
    })
    .py_err()
}

/// Scores of every row of a dataset file, in file order (the library's
/// `Model::predict_dataset`: groups of blocks, their pages scored in
/// parallel).
fn dataset_scores(py: Python<'_>, model: &Model, ds: &PyDataset) -> PyResult<Vec<f64>> {
    let ds = &ds.inner;
    model
        .check_schema(ds.info().n_cols, &ds.info().schema)
        .py_err()?;
    crate::detached(py, || -> tocpile::Result<Vec<f64>> {
        let mut out = Vec::new();
        for p in model.predict_dataset(ds)? {
            let p = p?;
            arrays::reserve(&mut out, p.n_rows() * p.outputs(), "scores")?;
            for i in 0..p.n_rows() {
                out.extend_from_slice(p.scores(i));
            }
        }
        Ok(out)
    })
}

//! Dataset files from Python: the library's `DatasetWriter` (rows from
//! numpy or scipy in, published atomically by `finish`) and `Dataset`
//! (open by the footer, read blocks with their checksums verified, rows
//! back as scipy CSR or dense numpy).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use numpy::PyArray1;
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyTuple};
use tocpile::dataset::{Dataset, DatasetInfo, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::ingest::csv::{CsvOptions, CsvReader};
use tocpile::scale::ScaleKind;
use tocpile::{Page, SparseBatch};

use crate::arrays::{self, CsrParts};
use crate::IntoPy;

/// `scale=`: "maxabs", "standard" or "none", as `tocpile encode --scale`.
pub(crate) fn scale_kind_of(name: &str) -> PyResult<Option<ScaleKind>> {
    match name.to_ascii_lowercase().as_str() {
        "none" => Ok(None),
        n => ScaleKind::from_name(n).map(Some).ok_or_else(|| {
            PyValueError::new_err(format!(
                "scale: unknown scaling {n:?} (expected \"maxabs\", \"standard\" or None)"
            ))
        }),
    }
}

/// The footer's figures as a dict.
pub(crate) fn info_dict<'py>(py: Python<'py>, info: &DatasetInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("n_rows", info.n_rows)?;
    d.set_item("n_cols", info.n_cols)?;
    d.set_item("nnz", info.nnz)?;
    d.set_item("format", info.format.name())?;
    d.set_item("page_rows", info.page_rows)?;
    d.set_item("block_bytes", info.block_bytes)?;
    d.set_item("n_blocks", info.n_blocks)?;
    d.set_item("n_pages", info.n_pages)?;
    d.set_item("file_bytes", info.file_bytes)?;
    d.set_item("payload_bytes", info.payload_bytes)?;
    d.set_item("schema", &info.schema)?;
    d.set_item(
        "scaling",
        info.scaling.as_ref().map_or("none", |s| s.kind().name()),
    )?;
    Ok(d)
}

/// Appends the rows of `pages` to `parts`, decoding TOC pages through
/// their decode trees into one reused scratch batch.
pub(crate) fn push_pages(
    pages: &[Page],
    parts: &mut CsrParts,
    scratch: &mut SparseBatch,
) -> tocpile::Result<()> {
    for page in pages {
        match page.batch().as_toc() {
            Some(toc) => {
                toc.tree().try_decode_into(scratch)?;
                parts.push(scratch)?;
            }
            None => parts.push(&page.batch().try_decode()?)?,
        }
    }
    Ok(())
}

/// `error` about the file `path` when it names none (memory refused, a
/// limit on what is held at once).
fn in_file(path: &std::path::Path, error: tocpile::Error) -> tocpile::Error {
    match error {
        tocpile::Error::OutOfMemory { .. } | tocpile::Error::LimitExceeded { .. } => {
            tocpile::Error::InFile {
                path: path.display().to_string(),
                section: String::new(),
                offset: 0,
                error: Box::new(error),
            }
        }
        other => other,
    }
}

/// `(X, y)` of decoded rows and labels: X a scipy CSR matrix, or a dense
/// numpy array when `dense`; both of `dtype` when given (else float64).
pub(crate) fn rows_and_labels<'py>(
    py: Python<'py>,
    parts: CsrParts,
    labels: Vec<f64>,
    dense: bool,
    dtype: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let x = if dense {
        arrays::dense_matrix(py, &parts, dtype)?
    } else {
        arrays::cast_to(arrays::csr_matrix(py, parts)?, dtype)?
    };
    let y = arrays::cast_to(PyArray1::from_vec(py, labels).into_any(), dtype)?;
    PyTuple::new(py, [x, y])
}

pub(crate) fn want_dense(as_: &str) -> PyResult<bool> {
    match as_ {
        "csr" => Ok(false),
        "dense" => Ok(true),
        _ => Err(PyValueError::new_err(format!(
            "as_: expected \"csr\" or \"dense\", got {as_:?}"
        ))),
    }
}

fn format_of(page_format: &str) -> PyResult<FormatKind> {
    FormatKind::from_name(page_format).ok_or_else(|| {
        let names: Vec<&str> = FormatKind::ALL.iter().map(|k| k.name()).collect();
        PyValueError::new_err(format!(
            "page_format: unknown format {page_format:?} (expected \"toc\" or one of {})",
            names.join(", ")
        ))
    })
}

/// Encodes a CSV file (a header, a `label` column, numeric and
/// categorical feature columns) as `tocpile encode file.csv` does: the
/// library's CSV reader infers the schema (numbers, or categories one-hot
/// encoded), the rows are written with it and the schema is stored in the
/// file. Behind `tocpile.encode` of a pandas DataFrame with non-numeric
/// columns.
#[pyfunction]
#[pyo3(signature = (csv_path, path, label, page_rows = 50, block_bytes = 2048,
    page_format = "toc", scale = "maxabs"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _encode_csv<'py>(
    py: Python<'py>,
    csv_path: PathBuf,
    path: PathBuf,
    label: String,
    page_rows: usize,
    block_bytes: usize,
    page_format: &str,
    scale: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let scale = scale_kind_of(scale)?;
    let format = format_of(page_format)?;
    let info = py
        .detach(|| -> tocpile::Result<DatasetInfo> {
            let options = CsvOptions::default().with_label(label);
            let mut reader = CsvReader::open(&csv_path, options)?;
            let layout = WriterOptions::default()
                .with_page_rows(page_rows)
                .with_block_bytes(block_bytes)
                .with_format(format)
                .with_schema(reader.schema().to_text());
            let mut writer = DatasetWriter::create(&path, reader.n_cols(), layout)?;
            writer.set_scaling(scale)?;
            while let Some(chunk) = reader.next_chunk(8192)? {
                writer.push(&chunk.batch, &chunk.labels)?;
            }
            writer.finish()
        })
        .py_err()?;
    info_dict(py, &info)
}

/// Streams rows into a new dataset file: the writer behind
/// `tocpile.encode`. Nothing appears at the path until `finish()`.
#[pyclass(name = "_Writer", module = "tocpile")]
pub(crate) struct PyWriter {
    writer: Mutex<Option<DatasetWriter>>,
    n_cols: usize,
}

#[pymethods]
impl PyWriter {
    #[new]
    #[pyo3(signature = (path, n_cols, page_rows = 50, block_bytes = 2048, page_format = "toc", schema = "", scale = "maxabs"))]
    fn new(
        path: PathBuf,
        n_cols: usize,
        page_rows: usize,
        block_bytes: usize,
        page_format: &str,
        schema: &str,
        scale: &str,
    ) -> PyResult<PyWriter> {
        let scale = scale_kind_of(scale)?;
        let format = format_of(page_format)?;
        let options = WriterOptions::default()
            .with_page_rows(page_rows)
            .with_block_bytes(block_bytes)
            .with_format(format)
            .with_schema(schema.to_string());
        let mut writer = DatasetWriter::create(&path, n_cols, options).py_err()?;
        // Fitted in the same pass as the rows are written, stored in the
        // footer (the data is not changed), as `tocpile encode --scale`.
        writer.set_scaling(scale).py_err()?;
        Ok(PyWriter {
            writer: Mutex::new(Some(writer)),
            n_cols,
        })
    }

    /// Appends rows `x` (numpy 2-D or scipy.sparse) and labels `y`.
    fn push(&self, py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
        let rows = arrays::rows_from_object(x, "X")?;
        if rows.n_cols() != self.n_cols {
            return Err(PyValueError::new_err(format!(
                "X: {} columns, but the file was started with {} (every chunk needs the same columns)",
                rows.n_cols(),
                self.n_cols
            )));
        }
        let labels = arrays::labels_from_object(y, rows.n_rows())?;
        let mut guard = self
            .writer
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner());
        let writer = guard
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the writer is finished"))?;
        py.detach(|| writer.push(&rows, &labels)).py_err()
    }

    /// Writes the last pages and the footer and publishes the file;
    /// returns its figures.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let writer = self
            .writer
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the writer is finished"))?;
        let info = py.detach(|| writer.finish()).py_err()?;
        info_dict(py, &info)
    }

    /// Abandons the file: nothing appears at the path.
    fn abort(&self, py: Python<'_>) {
        self.writer
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

/// An open dataset file: `Dataset(path)` reads its footer only.
///
/// `info()` and the properties give its figures; `read()` gives every row
/// and label in file order as `(X, y)` (X a scipy CSR matrix, or dense with
/// `as_="dense"`), `read_block(i)` one block (its checksum verified),
/// `labels()` the labels alone, and `verify()` checks every block and page.
/// A damaged file raises `TocError` naming the block and what is wrong.
#[pyclass(name = "Dataset", module = "tocpile")]
pub(crate) struct PyDataset {
    pub(crate) inner: Arc<Dataset>,
}

impl PyDataset {
    fn check_block(&self, i: usize) -> PyResult<()> {
        if i < self.inner.n_blocks() {
            return Ok(());
        }
        Err(PyIndexError::new_err(format!(
            "block {i} out of range: {} has {} blocks",
            self.inner.path().display(),
            self.inner.n_blocks()
        )))
    }

    /// Rows and labels of `blocks`, in that order. Every row is held at
    /// once: what the pages decode to is within the limit on decoding
    /// many pages at once (`max_decode_nnz`), each block's and all of
    /// them, as the command line's readers of rows are.
    fn gather(&self, py: Python<'_>, blocks: Vec<usize>) -> PyResult<(CsrParts, Vec<f64>)> {
        let ds = &self.inner;
        crate::detached(py, || {
            let in_file = |error: tocpile::Error| in_file(ds.path(), error);
            let mut parts = CsrParts::new(ds.info().n_cols);
            let mut labels = Vec::new();
            let mut scratch = SparseBatch::default();
            for block in ds.prefetch(blocks, 2)? {
                let block = block?;
                let pages = block.pages()?;
                let nnz: u64 = pages
                    .iter()
                    .filter_map(|p| p.batch().as_toc())
                    .map(|t| t.tree().decoded_nnz())
                    .sum();
                tocpile::limits::check_decode_nnz(
                    parts.nnz() as u64 + nnz,
                    "non-zeros of the rows read into memory",
                )
                .map_err(in_file)?;
                push_pages(&pages, &mut parts, &mut scratch).map_err(in_file)?;
                arrays::reserve(&mut labels, block.labels().len(), "labels").map_err(in_file)?;
                labels.extend_from_slice(block.labels());
            }
            Ok((parts, labels))
        })
    }
}

#[pymethods]
impl PyDataset {
    /// Opens a dataset file (reads its footer only).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<PyDataset> {
        let inner = py.detach(|| Dataset::open(&path)).py_err()?;
        Ok(PyDataset {
            inner: Arc::new(inner),
        })
    }

    /// The file's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// The footer's figures: n_rows, n_cols, nnz, format, page_rows,
    /// block_bytes, n_blocks, n_pages, file_bytes, payload_bytes, schema, scaling.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        info_dict(py, self.inner.info())
    }

    /// Rows in the file.
    #[getter]
    fn n_rows(&self) -> u64 {
        self.inner.info().n_rows
    }

    /// Columns of every row.
    #[getter]
    fn n_cols(&self) -> usize {
        self.inner.info().n_cols
    }

    /// `(n_rows, n_cols)`.
    #[getter]
    fn shape(&self) -> (u64, usize) {
        (self.inner.info().n_rows, self.inner.info().n_cols)
    }

    /// Non-zero entries.
    #[getter]
    fn nnz(&self) -> u64 {
        self.inner.info().nnz
    }

    /// Number of blocks (the unit of the CorgiPile loader's random reads).
    #[getter]
    fn n_blocks(&self) -> usize {
        self.inner.n_blocks()
    }

    /// Rows per page.
    #[getter]
    fn page_rows(&self) -> usize {
        self.inner.info().page_rows
    }

    /// The page format ("TOC_FULL", "CSR", ...).
    #[getter]
    fn format(&self) -> &'static str {
        self.inner.info().format.name()
    }

    /// The column scaling stored by `encode(scale=...)`: `(kind, factors)`
    /// with kind "maxabs" or "standard" and one factor per column
    /// (training runs as on rows whose column `j` is multiplied by
    /// `factors[j]`), or None.
    #[getter]
    fn scaling<'py>(&self, py: Python<'py>) -> Option<(&'static str, Bound<'py, PyArray1<f64>>)> {
        self.inner
            .info()
            .scaling
            .as_ref()
            .map(|s| (s.kind().name(), PyArray1::from_slice(py, s.factors())))
    }

    /// The column schema stored with the data ("" when none).
    #[getter]
    fn schema(&self) -> String {
        self.inner.info().schema.clone()
    }

    /// Rows of block `i`.
    fn block_rows(&self, i: usize) -> PyResult<u64> {
        self.check_block(i)?;
        Ok(self.inner.block_rows(i))
    }

    /// A readable summary: rows, columns, pages, blocks, bytes, ratios.
    fn summary(&self) -> String {
        self.inner.info().summary()
    }

    /// Block `i`'s rows and labels, its checksum verified: `(X, y)`, X a
    /// scipy CSR matrix (or dense numpy with `as_="dense"`).
    #[pyo3(signature = (i, as_ = "csr", dtype = None))]
    fn read_block<'py>(
        &self,
        py: Python<'py>,
        i: usize,
        as_: &str,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let dense = want_dense(as_)?;
        self.check_block(i)?;
        let (parts, labels) = self.gather(py, vec![i])?;
        rows_and_labels(py, parts, labels, dense, dtype)
    }

    /// Every row and label in file order: `(X, y)` (of `dtype` when
    /// given). Rows that do not fit in memory raise `MemoryError`.
    #[pyo3(signature = (as_ = "csr", dtype = None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        as_: &str,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let dense = want_dense(as_)?;
        let (parts, labels) = self.gather(py, (0..self.inner.n_blocks()).collect())?;
        rows_and_labels(py, parts, labels, dense, dtype)
    }

    /// Every label in file order (reads each block, no page is decoded).
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let ds = &self.inner;
        let labels = py
            .detach(|| tocpile::loader::labels_in_file_order(ds))
            .py_err()?;
        Ok(PyArray1::from_vec(py, labels))
    }

    /// Reads every block and validates every page (checksums, then the
    /// full decoder checks, each block's pages within the limit on
    /// decoding many pages at once) and the footer's totals, as `tocpile
    /// inspect` does; raises `TocError` naming the first bad one.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let ds = &self.inner;
        crate::detached(py, || ds.verify(|_| {}))
    }

    fn __len__(&self) -> usize {
        self.inner.info().n_rows as usize
    }

    /// Pickles (and deep-copies) as its path: the copy opens the file
    /// again.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let path = slf.borrow().path().into_pyobject(py)?.into_any();
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                PyTuple::new(py, [path])?.into_any(),
            ],
        )
    }

    fn __repr__(&self) -> String {
        let info = self.inner.info();
        format!(
            "Dataset({:?}, n_rows={}, n_cols={}, n_blocks={}, format={})",
            self.inner.path().display().to_string(),
            info.n_rows,
            info.n_cols,
            info.n_blocks,
            info.format.name()
        )
    }
}

//! `tocpile._tocpile`: the Rust half of the Python package `tocpile`.
//!
//! Every class and function here calls the `tocpile` library's public API
//! (the dataset writer and reader, `TocBatch` and its decode tree, the
//! loader, the trainer); none re-implements it. The pure-Python package
//! (`python/tocpile/`) wraps these into the documented API: scipy matrices
//! in and out, `encode` over chunks, the PyTorch adapter.
//!
//! Errors of the library become `tocpile.TocError` (a `ValueError`)
//! carrying the library's message; I/O errors become `OSError` (or its
//! `FileNotFoundError` / `PermissionError` subclasses) with the same
//! message; an allocation the system refuses becomes `MemoryError` (every
//! allocation sized by user input is fallible, never an abort). A limit
//! of the resource policy names `tocpile.set_limits(...)`, which raises
//! it ([`limits`]). A panic (a bug) in a call that reads a file becomes
//! `TocError` saying so, never `pyo3_runtime.PanicException` (which
//! `except Exception` does not catch: [`detached`]). Long-running calls
//! (kernels, encoding, reading, training, waiting for the loader)
//! release the GIL.

use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileNotFoundError, PyMemoryError, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::prelude::*;

mod arrays;
mod batch;
mod bench;
mod csr_lanes;
mod csr_outputs;
mod dataset;
mod epoch_iter;
mod limits;
mod loader;
mod model;
mod predict;
mod train;

pub(crate) use limits::detached;

create_exception!(
    _tocpile,
    TocError,
    PyValueError,
    "An error reported by the tocpile library: bad bytes, a malformed file, \
     options that cannot work. The message names the file, block, page, row \
     or byte offset and what was expected."
);

/// Converts a library error into the Python exception that fits it.
pub(crate) fn to_py(e: tocpile::Error) -> PyErr {
    let mut message = e.to_string();
    let mut inner = &e;
    while let tocpile::Error::InFile { error, .. } = inner {
        inner = error;
    }
    if let tocpile::Error::LimitExceeded { raise, .. } = inner {
        // Say how to raise it from Python, not from the command line.
        message = message.replace(raise, &limits::raise_in_python(raise));
    }
    match inner {
        tocpile::Error::Io { kind, .. } => match kind {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
            _ => PyOSError::new_err(message),
        },
        tocpile::Error::OutOfMemory { .. } => PyMemoryError::new_err(message),
        _ => TocError::new_err(message),
    }
}

/// `Result` of the library, into a `PyResult`.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for tocpile::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// The extension module.
#[pymodule]
fn _tocpile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TocError", m.py().get_type::<TocError>())?;
    m.add_class::<batch::PyTocBatch>()?;
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<dataset::PyWriter>()?;
    m.add_class::<loader::PyLoader>()?;
    m.add_class::<epoch_iter::EpochIter>()?;
    m.add_class::<model::PyModel>()?;
    m.add_function(wrap_pyfunction!(train::train, m)?)?;
    m.add_function(wrap_pyfunction!(dataset::_encode_csv, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(limits::set_limits, m)?)?;
    m.add_function(wrap_pyfunction!(limits::limits, m)?)?;
    Ok(())
}

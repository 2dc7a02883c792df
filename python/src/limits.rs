//! The resource policy from Python (`tocpile.set_limits`,
//! `tocpile.limits`): the library's process-wide limits
//! (`tocpile::limits`, docs/FORMAT.md "Resource limits"), which the
//! command line raises with `--max-page-nnz` and the like; and
//! [`detached`], the guard every call that reads a file runs in.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{IntoPy, TocError};

/// Sets the limits a hostile or mistaken file may make tocpile allocate
/// for, for the whole process: each given one replaces the limit in force
/// (the others stay). An error that a file exceeds one names it and this
/// call. Raise them only for trusted files.
///
/// - `max_page_nnz`: most non-zeros one page may decode to (2^27);
/// - `max_decode_nnz`: most non-zeros decoded at once from many pages: a
///   block's, a loader's buffer, what `Dataset.read` returns (2^27);
/// - `max_cols`: most columns a model or a dense page is allocated for
///   (2^26);
/// - `max_params`: most parameters of a model built for training (2^26).
#[pyfunction]
#[pyo3(signature = (*, max_page_nnz = None, max_decode_nnz = None, max_cols = None, max_params = None))]
pub(crate) fn set_limits(
    max_page_nnz: Option<u64>,
    max_decode_nnz: Option<u64>,
    max_cols: Option<u64>,
    max_params: Option<u64>,
) {
    let now = tocpile::limits::limits();
    tocpile::limits::set_limits(tocpile::limits::Limits {
        max_page_nnz: max_page_nnz.unwrap_or(now.max_page_nnz),
        max_decode_nnz: max_decode_nnz.unwrap_or(now.max_decode_nnz),
        max_cols: max_cols.unwrap_or(now.max_cols),
        max_params: max_params.unwrap_or(now.max_params),
    });
}

/// The limits in force, as a dict of `max_page_nnz`, `max_decode_nnz`,
/// `max_cols` and `max_params` (what `set_limits` takes).
#[pyfunction]
pub(crate) fn limits(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let l = tocpile::limits::limits();
    let d = PyDict::new(py);
    d.set_item("max_page_nnz", l.max_page_nnz)?;
    d.set_item("max_decode_nnz", l.max_decode_nnz)?;
    d.set_item("max_cols", l.max_cols)?;
    d.set_item("max_params", l.max_params)?;
    Ok(d)
}

/// How a Python user raises the limit whose command-line form is `raise`
/// (`"--max-decode-nnz N, or a smaller --buffer (library: ...)"`).
pub(crate) fn raise_in_python(raise: &str) -> String {
    let option = raise
        .split_whitespace()
        .find_map(|w| w.strip_prefix("--max-"))
        .map(|o| format!("max_{}", o.trim_end_matches(',').replace('-', "_")));
    match option {
        Some(name) if raise.contains("--buffer") => {
            format!("tocpile.set_limits({name}=N), or a smaller buffer")
        }
        Some(name) => format!("tocpile.set_limits({name}=N)"),
        None => raise.to_string(),
    }
}

/// Runs `f` without the GIL; a panic in it (a bug: bad input is an
/// error, never a panic) becomes `TocError` saying so rather than
/// `pyo3_runtime.PanicException`, which derives from `BaseException`
/// and escapes `except Exception`.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> tocpile::Result<T> + Send,
) -> PyResult<T> {
    guarded(py, || f().py_err())
}

/// [`detached`] for a call that returns a `PyResult`.
pub(crate) fn guarded<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> PyResult<T> + Send,
) -> PyResult<T> {
    match py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(TocError::new_err(format!(
                "internal error (a bug in tocpile, please report it): {what}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn limits_are_raised_by_their_python_names() {
        assert_eq!(
            super::raise_in_python("--max-page-nnz N (library: tocpile::limits::set_limits)"),
            "tocpile.set_limits(max_page_nnz=N)"
        );
        assert_eq!(
            super::raise_in_python(
                "--max-decode-nnz N, or a smaller --buffer (library: tocpile::limits::set_limits)"
            ),
            "tocpile.set_limits(max_decode_nnz=N), or a smaller buffer"
        );
    }
}

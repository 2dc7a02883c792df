//! Shapes, dimension checks and operand staging shared by the kernels of
//! every format: the contracts of the `_into` kernels (a dimension mismatch
//! panics with one message format) and the copying of operands and outputs
//! through contiguous scratch when a caller's view is not laid out so.

use ndarray::{ArrayView, ArrayView2, ArrayViewMut, ArrayViewMut2, Dimension};

use super::zeroed;
use crate::error::{Error, Result};
use crate::sparse::SparseBatch;

/// Panics with a uniform message when `got != want` (a caller's contract
/// violation, documented under `# Panics`).
#[track_caller]
pub(crate) fn check_dim(op: &str, what: &str, got: usize, want: usize) {
    assert_eq!(got, want, "{op}: {what} is {got}, expected {want}");
}

/// Rows and columns of a batch, with the kernels' dimension checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Number of rows.
    pub(crate) n_rows: usize,
    /// Number of columns.
    pub(crate) n_cols: usize,
}

impl Shape {
    /// The shape of `batch`.
    pub(crate) fn of(batch: &SparseBatch) -> Self {
        Shape {
            n_rows: batch.n_rows(),
            n_cols: batch.n_cols(),
        }
    }

    /// `n_rows * n_cols`, if cells of `cell_bytes` bytes each fit in memory.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the dense matrix cannot be addressed.
    pub(crate) fn cells(self, cell_bytes: usize) -> Result<usize> {
        let cells = self.n_rows as u128 * self.n_cols as u128;
        let max = isize::MAX as usize / cell_bytes;
        if cells > max as u128 {
            return Err(Error::TooLarge {
                what: "dense cells (rows x columns)",
                value: u64::try_from(cells).unwrap_or(u64::MAX),
                max: max as u64,
            });
        }
        Ok(cells as usize)
    }

    /// Panics unless `A.v` fits: `v` has `n_cols` entries, `out` `n_rows`.
    #[track_caller]
    pub(crate) fn check_matvec(self, v: usize, out: usize) {
        check_dim("A.v", "v length", v, self.n_cols);
        check_dim("A.v", "out length", out, self.n_rows);
    }

    /// Panics unless `v.A` fits: `v` has `n_rows` entries, `out` `n_cols`.
    #[track_caller]
    pub(crate) fn check_vecmat(self, v: usize, out: usize) {
        check_dim("v.A", "v length", v, self.n_rows);
        check_dim("v.A", "out length", out, self.n_cols);
    }

    /// Panics unless `A.M` fits (`M`: `n_cols x p`, `out`: `n_rows x p`);
    /// returns `p`.
    #[track_caller]
    pub(crate) fn check_matmat(self, m: (usize, usize), out: (usize, usize)) -> usize {
        check_dim("A.M", "M rows", m.0, self.n_cols);
        check_dim("A.M", "out rows", out.0, self.n_rows);
        check_dim("A.M", "out columns", out.1, m.1);
        m.1
    }

    /// Panics unless `M.A` fits (`M`: `q x n_rows`, `out`: `q x n_cols`);
    /// returns `q`.
    #[track_caller]
    pub(crate) fn check_left_matmat(self, m: (usize, usize), out: (usize, usize)) -> usize {
        check_dim("M.A", "M columns", m.1, self.n_rows);
        check_dim("M.A", "out rows", out.0, m.0);
        check_dim("M.A", "out columns", out.1, self.n_cols);
        m.0
    }
}

/// `a` in standard (row-major) order: `a` itself when it is laid out so,
/// else a copy in `buf`.
pub(crate) fn standard<'a, D: Dimension>(
    a: ArrayView<'a, f64, D>,
    buf: &'a mut Vec<f64>,
) -> &'a [f64] {
    match a.to_slice() {
        Some(s) => s,
        None => {
            buf.clear();
            buf.extend(a.iter());
            buf
        }
    }
}

/// The columns of `m`, each contiguous (`m` transposed, row-major).
pub(crate) fn columns<'a>(m: ArrayView2<'a, f64>, buf: &'a mut Vec<f64>) -> &'a [f64] {
    standard(m.reversed_axes(), buf)
}

/// Runs `f` on a zeroed stand-in for `out` in standard order: `out` itself
/// when it is laid out so, else `buf`, copied to `out` afterwards.
pub(crate) fn fill<D: Dimension>(
    mut out: ArrayViewMut<'_, f64, D>,
    buf: &mut Vec<f64>,
    f: impl FnOnce(&mut [f64]),
) {
    if let Some(s) = out.as_slice_mut() {
        s.fill(0.0);
        return f(s);
    }
    let b = zeroed(buf, out.len());
    f(b);
    out.iter_mut().zip(b.iter()).for_each(|(d, &s)| *d = s);
}

/// Runs `f` on a zeroed stand-in for `out` transposed (`out`'s columns,
/// each contiguous), as [`fill`].
pub(crate) fn fill_columns(
    out: ArrayViewMut2<'_, f64>,
    buf: &mut Vec<f64>,
    f: impl FnOnce(&mut [f64]),
) {
    fill(out.reversed_axes(), buf, f);
}

//! Conversions between [`SparseBatch`] and sprs's `CsMat<f64>` (cargo
//! feature `sprs`): a batch of rows from a sprs matrix, and back. Tested
//! in `tests/sprs.rs`.

use sprs::CsMat;

use crate::error::{Error, Result};
use crate::sparse::SparseBatch;

/// The rows of a sprs matrix (CSR, or CSC converted to rows) as a batch.
/// Explicit zeros are dropped.
///
/// # Errors
/// [`Error::LimitExceeded`](crate::Error) or [`Error::ColumnOutOfRange`]
/// for more columns than a batch holds ([`MAX_COLS`](crate::MAX_COLS)),
/// [`Error::InvalidNumber`] for a value that is not finite.
impl TryFrom<&CsMat<f64>> for SparseBatch {
    type Error = Error;

    fn try_from(matrix: &CsMat<f64>) -> Result<SparseBatch> {
        let csr;
        let rows = if matrix.is_csr() {
            matrix
        } else {
            csr = matrix.to_csr();
            &csr
        };
        let mut batch = SparseBatch::with_cols(rows.cols())?;
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        for (r, row) in rows.outer_iterator().enumerate() {
            cols.clear();
            values.clear();
            for (position, (c, &v)) in row.iter().enumerate() {
                cols.push(u32::try_from(c).map_err(|_| Error::ColumnOutOfRange {
                    row: r,
                    position,
                    col: c as u64,
                    n_cols: rows.cols() as u64,
                })?);
                values.push(v);
            }
            batch.push_row(&cols, &values)?;
        }
        Ok(batch)
    }
}

/// A batch as a CSR sprs matrix of the same shape.
///
/// # Errors
/// None for a batch (its rows are valid CSR); the sprs constructor's
/// check is kept rather than trusted, as [`Error::BadArgument`].
impl TryFrom<&SparseBatch> for CsMat<f64> {
    type Error = Error;

    fn try_from(batch: &SparseBatch) -> Result<CsMat<f64>> {
        CsMat::try_new(
            (batch.n_rows(), batch.n_cols()),
            batch.offsets().to_vec(),
            batch.cols().iter().map(|&c| c as usize).collect(),
            batch.values().to_vec(),
        )
        .map_err(|_| Error::BadArgument {
            what: "batch as a sprs matrix",
            expected: "valid CSR structure",
        })
    }
}

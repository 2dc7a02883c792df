//! Passes over a whole dataset file: fitting a column scaling on a file
//! written without one, and splitting a file into a training part and a
//! held-out part by a seeded hash of the row number.
//!
//! The split is per row, not per block or page: row `i` is held out when
//! a hash of `(seed, i)` falls below the held-out share, so the held-out
//! rows are a uniform sample whatever the file's order (a label-sorted or
//! time-ordered file included), the same seed always picks the same rows,
//! and a change of page or block size does not move a row to the other
//! side.

use std::path::Path;
use std::sync::Arc;

use super::{Dataset, DatasetInfo, DatasetWriter, Source, WriterOptions};
use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::scale::{ColumnStats, ScaleKind, Scaling};
use crate::sparse::SparseBatch;

/// Stream label of the held-out split in [`Rng::stream`].
const HOLDOUT_STREAM: u64 = 0x484f_4c44_4f55_5453; // "HOLDOUTS"

/// True when row `row` (0-based, in file order) is held out under `seed`
/// for a held-out share `fraction`.
pub fn is_held_out(seed: u64, row: u64, fraction: f64) -> bool {
    Rng::stream(seed, &[HOLDOUT_STREAM, row]).unit() < fraction
}

impl<S: Source + 'static> Dataset<S> {
    /// Fits a column scaling of `kind` on every row of the file (one
    /// sequential pass, pages decoded), for a file written without one.
    ///
    /// # Errors
    /// Read and decode errors.
    pub fn fit_scaling(self: &Arc<Self>, kind: ScaleKind) -> Result<Scaling> {
        let mut stats = ColumnStats::new(self.info().n_cols)?;
        for block in self.prefetch((0..self.n_blocks()).collect(), 2)? {
            for page in block?.pages()? {
                stats.add(&page.batch().try_decode()?)?;
            }
        }
        Ok(stats.scaling(kind))
    }
}

/// Splits `source` into `train` (the rows not held out) and `test` (the
/// rows [`is_held_out`] picks), both written atomically with the source's
/// page format, page rows, block size and schema. When `scale` is given,
/// each part stores a scaling of that kind fitted on its own rows (so
/// the training part's scaling has not seen the held-out rows).
///
/// # Errors
/// [`Error::BadArgument`] unless `0 < fraction < 1`; read, decode and
/// write errors (a part not finished when the error came is not
/// created).
pub fn split_holdout<S: Source + 'static>(
    source: &Arc<Dataset<S>>,
    fraction: f64,
    seed: u64,
    scale: Option<ScaleKind>,
    train: &Path,
    test: &Path,
) -> Result<(DatasetInfo, DatasetInfo)> {
    if !(fraction > 0.0 && fraction < 1.0) {
        return Err(Error::BadArgument {
            what: "held-out share",
            expected: "a number in (0, 1)",
        });
    }
    let info = source.info();
    let options = WriterOptions {
        page_rows: info.page_rows.max(1),
        block_bytes: info.block_bytes.max(1),
        format: info.format,
        schema: info.schema.clone(),
        ..WriterOptions::default()
    };
    let n_cols = info.n_cols;
    let mut writers = [
        DatasetWriter::create(train, n_cols, options.clone())?,
        DatasetWriter::create(test, n_cols, options)?,
    ];
    for w in &mut writers {
        w.set_scaling(scale)?;
    }
    let mut parts = [
        SparseBatch::with_cols(n_cols)?,
        SparseBatch::with_cols(n_cols)?,
    ];
    let mut labels: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut row = 0u64;
    for block in source.prefetch((0..source.n_blocks()).collect(), 2)? {
        for page in block?.pages()? {
            let rows = page.batch().try_decode()?;
            for (i, (cols, vals)) in rows.rows().enumerate() {
                let side = usize::from(is_held_out(seed, row, fraction));
                parts[side].push_row(cols, vals)?;
                labels[side].push(page.labels()[i]);
                row += 1;
            }
        }
        for side in 0..2 {
            writers[side].push(&parts[side], &labels[side])?;
            parts[side].clear();
            labels[side].clear();
        }
    }
    let [w_train, w_test] = writers;
    let train_info = w_train.finish()?;
    let test_info = w_test.finish()?;
    Ok((train_info, test_info))
}

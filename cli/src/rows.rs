//! The rows a measurement runs on: an input read into memory, optionally
//! turned into decimal columns and shuffled once. Shared by `ratio`,
//! `bench kernels` and `bench codec`, so that one `--shuffle 42` gives
//! the same rows to each.

use std::path::Path;

use clap::Args;
use tocpile::SparseBatch;

use crate::input::{load_rows, shuffled, to_decimals, InputArgs};
use crate::Failure;

/// Which rows of an input are measured.
#[derive(Debug, Args)]
pub struct RowArgs {
    /// Shuffle the rows read once with this seed before cutting batches
    /// (default: file order).
    #[arg(long, value_name = "SEED")]
    pub shuffle: Option<u64>,
    /// Read at most this many rows of each input (`bench kernels`:
    /// default --batches times --batch-rows, so that with --shuffle the
    /// batches mix rows from the whole range only when this is larger).
    #[arg(long, value_name = "N")]
    pub max_rows: Option<usize>,
    /// Divide the values of every numeric column (any value other than 1)
    /// by 10^N before measuring: integer columns become N-decimal ones
    /// (prices from cents) beside the one-hot columns.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=22))]
    pub decimals: Option<u32>,
}

impl RowArgs {
    /// The rows of `path` to measure: at most `--max-rows` (else
    /// `default_max`), divided by `10^--decimals`, then shuffled with
    /// `--shuffle`. An input without rows is an error.
    pub fn load(
        &self,
        path: &Path,
        input: &InputArgs,
        default_max: usize,
    ) -> Result<SparseBatch, Failure> {
        let max_rows = self.max_rows.unwrap_or(default_max);
        let (mut rows, labels) = load_rows(path, input, max_rows)?;
        if rows.n_rows() == 0 {
            return Err(Failure::about(path, "no rows to measure"));
        }
        // The dense formats and the kernels' vectors are as wide as the rows.
        tocpile::limits::check_cols(rows.n_cols(), "columns of the input")
            .map_err(|e| Failure::about(path, e))?;
        if let Some(places) = self.decimals {
            rows = to_decimals(&rows, places)?;
        }
        if let Some(seed) = self.shuffle {
            rows = shuffled(&rows, &labels, seed)?.0;
        }
        Ok(rows)
    }
}

//! Real data, real workflows: scaling applied to the parameters (against
//! training on explicitly scaled rows), the step rules, predictions and
//! evaluation metrics (against brute-force references), the held-out split,
//! and the scaling sections of dataset and model files (golden files).

mod golden;
mod metrics;
mod scaling;
mod split;

use tocpile::formats::FormatKind;
use tocpile::{Page, SparseBatch};

use crate::support::numbers;

/// `rows x cols` rows whose columns have very different scales (column
/// `j` is about `10^(j % 4 - 1)`, some negative), about a quarter zeros,
/// and a column of zeros only (its factor stays 1).
pub fn wide_scales(seed: u64, rows: usize, cols: usize) -> SparseBatch {
    let r = numbers(seed, rows * cols);
    let dense: Vec<Vec<f64>> = r
        .chunks(cols)
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(j, &x)| {
                    if j == cols - 1 || x.abs() < 0.25 {
                        0.0
                    } else {
                        x * 10f64.powi(j as i32 % 4 - 1)
                    }
                })
                .collect()
        })
        .collect();
    SparseBatch::from_dense_rows(cols, &dense).unwrap()
}

/// Pages of `rows` rows each in TOC_FULL.
pub fn pages(batch: &SparseBatch, labels: &[f64], rows: usize) -> Vec<Page> {
    (0..batch.n_rows())
        .step_by(rows)
        .map(|s| {
            let e = (s + rows).min(batch.n_rows());
            Page::encode(FormatKind::TocFull, &batch.slice_rows(s..e), &labels[s..e]).unwrap()
        })
        .collect()
}

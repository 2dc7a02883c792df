//! Model tests: gradients against finite differences and across formats,
//! training on the shared datasets, model files, labels.

mod files;
mod golden;
mod gradients;
mod labels;
mod optimizers;
mod training;

use tocpile::formats::{Batch, FormatKind};
use tocpile::{Page, SparseBatch};

use crate::support::numbers;

/// A random `rows x cols` batch whose values repeat (so that TOC pages
/// build a real prefix tree): about a third zeros, the rest from a small
/// set.
pub fn random_batch(seed: u64, rows: usize, cols: usize) -> SparseBatch {
    const VALUES: [f64; 6] = [1.0, 2.0, 0.5, -1.5, 0.25, 3.0];
    let r = numbers(seed, rows * cols);
    let dense: Vec<Vec<f64>> = r
        .chunks(cols)
        .map(|row| {
            row.iter()
                .map(|&x| {
                    let k = ((x + 1.0) * 4.5) as usize; // 0..=8
                    if k < 3 {
                        0.0
                    } else {
                        VALUES[(k - 3).min(5)]
                    }
                })
                .collect()
        })
        .collect();
    SparseBatch::from_dense_rows(cols, &dense).unwrap()
}

/// Every batch encoded in `format`.
pub fn encode_all(batches: &[SparseBatch], format: FormatKind) -> Vec<Batch> {
    batches.iter().map(|b| format.encode(b).unwrap()).collect()
}

/// One page per encoded batch, with its labels.
pub fn pages_of(batches: &[Batch], labels: &[Vec<f64>]) -> Vec<Page> {
    batches
        .iter()
        .zip(labels)
        .map(|(b, l)| Page::new(b.clone(), &l[..]).unwrap())
        .collect()
}

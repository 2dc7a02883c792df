//! How random an epoch's order is: the rows a loader visited, in order,
//! and three measures of that order against the file order, so that the
//! CorgiPile paper's Figures 3 and 4 (tuple positions and labels after
//! shuffling) can be read off as numbers.

use crate::dataset::{Dataset, Source};
use crate::error::Result;

/// The rows an epoch visited, in order (global row numbers in file order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    rows: Vec<u64>,
    replay_rows: u64,
}

/// Measures of an order against the file order.
///
/// For a file read in order: rank correlation 1, displacement 0, label
/// skew as large as the file's clustering makes it. For a uniform random
/// order: correlation near 0, displacement near 1/3, skew near
/// [`ShuffleQuality::uniform_label_skew`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShuffleQuality {
    /// Rows measured.
    pub rows: usize,
    /// Spearman rank correlation between visit position and file
    /// position.
    pub rank_correlation: f64,
    /// Mean distance between a row's visit position and its file
    /// position, as a share of the rows.
    pub mean_displacement: f64,
    /// Mean over consecutive windows of `window` visits of |share of
    /// positive labels in the window - share overall| (the paper's
    /// Figure 3 bottom row, as one number). Positive means `label > 0`.
    pub label_skew: f64,
    /// The expected `label_skew` of a uniformly random order of the same
    /// rows (computed exactly from the binomial distribution).
    pub uniform_label_skew: f64,
    /// The window length used.
    pub window: usize,
}

impl Trace {
    pub(crate) fn record(&mut self, rows: &[u64], replay: bool) {
        if replay {
            self.replay_rows += rows.len() as u64;
        } else {
            self.rows.extend_from_slice(rows);
        }
    }

    /// The rows visited by the epoch's stream, in order (MRS's replays
    /// excluded).
    pub fn rows(&self) -> &[u64] {
        &self.rows
    }

    /// Rows visited by MRS's replay batches.
    pub fn replay_rows(&self) -> u64 {
        self.replay_rows
    }

    /// The measures of this order; `labels[r]` is the label of global row
    /// `r` (see [`labels_in_file_order`]), `window` the window length of
    /// the label skew (a mini-batch, say).
    ///
    /// # Panics
    /// If a visited row has no label, or `window` is 0.
    pub fn quality(&self, labels: &[f64], window: usize) -> ShuffleQuality {
        assert!(window > 0, "window must be positive");
        let n = self.rows.len();
        // File rank of each visited row (the visited rows may be a subset,
        // for one worker of several).
        let mut by_row: Vec<(u64, usize)> = self.rows.iter().copied().zip(0..).collect();
        by_row.sort_unstable();
        let mut d2 = 0.0;
        let mut displacement = 0.0;
        for (file_rank, &(_, visit)) in by_row.iter().enumerate() {
            let d = file_rank as f64 - visit as f64;
            d2 += d * d;
            displacement += d.abs();
        }
        let nf = n as f64;
        let rank_correlation = if n > 1 {
            1.0 - 6.0 * d2 / (nf * (nf * nf - 1.0))
        } else {
            1.0
        };
        let positive: Vec<bool> = self
            .rows
            .iter()
            .map(|&r| labels[r as usize] > 0.0)
            .collect();
        let p = positive.iter().filter(|&&b| b).count() as f64 / nf.max(1.0);
        let mut skew = 0.0;
        let mut windows = 0;
        for w in positive.chunks_exact(window) {
            let share = w.iter().filter(|&&b| b).count() as f64 / window as f64;
            skew += (share - p).abs();
            windows += 1;
        }
        ShuffleQuality {
            rows: n,
            rank_correlation,
            mean_displacement: displacement / (nf * nf).max(1.0),
            label_skew: skew / (windows as f64).max(1.0),
            uniform_label_skew: binomial_mean_abs_dev(window, p),
            window,
        }
    }
}

/// `E |X / w - p|` for `X ~ Binomial(w, p)`, summed in log space.
fn binomial_mean_abs_dev(w: usize, p: f64) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_choose = 0.0; // ln C(w, k), updated as k grows
    let mut sum = 0.0;
    for k in 0..=w {
        if k > 0 {
            log_choose += ((w - k + 1) as f64).ln() - (k as f64).ln();
        }
        let pmf = (log_choose + k as f64 * lp + (w - k) as f64 * lq).exp();
        sum += pmf * (k as f64 / w as f64 - p).abs();
    }
    sum
}

/// Every label of a dataset file in file order (index = global row), for
/// [`Trace::quality`].
///
/// # Errors
/// As [`Dataset::read_block`].
pub fn labels_in_file_order<S: Source>(dataset: &Dataset<S>) -> Result<Vec<f64>> {
    let mut labels = Vec::with_capacity(dataset.info().n_rows.min(1 << 24) as usize);
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b)?;
        labels.extend_from_slice(block.labels());
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_order_and_reversal_are_extreme() {
        let labels: Vec<f64> = (0..1000).map(|i| (i >= 500) as u8 as f64).collect();
        let mut t = Trace::default();
        t.record(&(0..1000).collect::<Vec<u64>>(), false);
        let q = t.quality(&labels, 20);
        assert!((q.rank_correlation - 1.0).abs() < 1e-12);
        assert_eq!(q.mean_displacement, 0.0);
        assert!((q.label_skew - 0.5).abs() < 1e-12);
        let mut r = Trace::default();
        r.record(&(0..1000).rev().collect::<Vec<u64>>(), false);
        assert!((r.quality(&labels, 20).rank_correlation + 1.0).abs() < 1e-12);
    }

    #[test]
    fn binomial_deviation_matches_a_direct_sum() {
        // w = 2, p = 0.5: X/2 in {0, .5, 1} with probs 1/4, 1/2, 1/4.
        assert!((binomial_mean_abs_dev(2, 0.5) - 0.25).abs() < 1e-12);
        assert_eq!(binomial_mean_abs_dev(20, 0.0), 0.0);
    }
}

//! Shuffle quality on label-sorted real data (mushrooms sorted by label,
//! the CorgiPile paper's "clustered" setting): the strategies rank as the
//! paper's Figure 3 shows, and Shuffle Once's copy holds the same rows.

use std::sync::Arc;

use super::write_file;
use crate::support::{load, sort_by_label, temp_path};
use tocpile::dataset::Dataset;
use tocpile::loader::{
    labels_in_file_order, shuffle_file, Buffer, Loader, LoaderOptions, Mode, ShuffleQuality,
    Strategy,
};
use tocpile::SparseBatch;

/// Mushrooms with its rows sorted by label (negatives first).
fn clustered() -> (SparseBatch, Vec<f64>) {
    let (rows, labels) = load("mushrooms", usize::MAX);
    sort_by_label(&rows, &labels)
}

fn quality(path: &std::path::Path, strategy: Strategy, mode: Mode) -> ShuffleQuality {
    let ds = Arc::new(Dataset::open(path).unwrap());
    let labels = labels_in_file_order(&ds).unwrap();
    let options = LoaderOptions::default()
        .with_strategy(strategy)
        .with_mode(mode)
        .with_trace(true)
        .with_buffer(Buffer::Fraction(0.1))
        .with_scratch_dir(Some(std::env::temp_dir()));
    let loader = Loader::new(ds, options).unwrap();
    let mut epoch = loader.epoch(0).unwrap();
    for batch in epoch.by_ref() {
        batch.unwrap();
    }
    // The label skew of each mini-batch: the order of the rows within a
    // batch does not matter to SGD (its gradient sums them), and the row
    // pipeline leaves a batch's rows in page order.
    epoch.trace().unwrap().quality(&labels, BATCH_ROWS)
}

/// The loader's default mini-batch.
const BATCH_ROWS: usize = 250;

/// Mean absolute deviation of the share of successes in `n` draws of a
/// coin of bias `p`.
fn binomial_mean_abs_dev(n: u32, p: f64) -> f64 {
    let mut choose = 1.0;
    let mut sum = 0.0;
    for k in 0..=n {
        if k > 0 {
            choose *= (n - k + 1) as f64 / k as f64;
        }
        let pmf = choose * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32);
        sum += pmf * (k as f64 / n as f64 - p).abs();
    }
    sum
}

#[test]
fn strategies_rank_as_in_the_paper_on_clustered_data() {
    let (rows, labels) = clustered();
    // 25-row pages, blocks of about 512 bytes: about 130 blocks, so the
    // 10% buffer holds 13. A buffer's label share varies like a binomial
    // over its blocks (sorted data: each block is one label), so CorgiPile's
    // label skew sits between a full shuffle's and the others'.
    let path = write_file(&rows, &labels, 25, 512);
    let q = |s| quality(&path, s, Mode::Exact);
    let none = q(Strategy::NoShuffle);
    let corgi = q(Strategy::CorgiPile);
    let once = q(Strategy::ShuffleOnce);
    let epoch = q(Strategy::EpochShuffle);
    let window = q(Strategy::SlidingWindow);
    let block = q(Strategy::BlockOnly);
    assert!(
        none.rank_correlation > 0.999 && none.label_skew > 0.4,
        "{none:?}"
    );
    // Full shuffles: no correlation left, label mix as random as can be.
    for full in [&once, &epoch] {
        assert!(full.rank_correlation.abs() < 0.05, "{full:?}");
        assert!(full.label_skew < 1.3 * full.uniform_label_skew, "{full:?}");
    }
    // CorgiPile's mini-batches are uniform samples of their buffer, and a
    // buffer holds 13 one-label blocks: a batch's label share varies as
    // the buffer's does, like a binomial over 13 blocks (CorgiPile paper,
    // section 5's block-level variance). The sliding window and
    // block-only shuffles do far worse.
    let positive = labels.iter().filter(|&&y| y > 0.0).count() as f64 / labels.len() as f64;
    assert!(
        corgi.label_skew < 1.5 * binomial_mean_abs_dev(13, positive),
        "{corgi:?}"
    );
    assert!(corgi.rank_correlation.abs() < 0.2, "{corgi:?}");
    assert!(
        window.label_skew > 1.5 * corgi.label_skew,
        "{window:?} {corgi:?}"
    );
    assert!(
        block.label_skew > 1.5 * corgi.label_skew,
        "{block:?} {corgi:?}"
    );
    assert!(window.rank_correlation > 0.9, "{window:?}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn page_mode_mixes_blocks_when_pages_are_small() {
    let (rows, labels) = clustered();
    let path = write_file(&rows, &labels, 10, 2048);
    let page = quality(&path, Strategy::CorgiPile, Mode::Page);
    let none = quality(&path, Strategy::NoShuffle, Mode::Page);
    assert!(page.label_skew < 0.5 * none.label_skew, "{page:?} {none:?}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn shuffle_once_keeps_every_row_and_label() {
    let (rows, labels) = load("mushrooms", 3000);
    let path = write_file(&rows, &labels, 64, 4096);
    let out = temp_path("shuffled");
    let ds = Dataset::open(&path).unwrap();
    let info = shuffle_file(&ds, &out, 9).unwrap();
    assert_eq!((info.n_rows, info.nnz), (ds.info().n_rows, ds.info().nnz));
    let copy = Dataset::open(&out).unwrap();
    let read = |d: &Dataset| {
        let mut all = Vec::new();
        for b in 0..d.n_blocks() {
            let block = d.read_block(b).unwrap();
            for page in block.pages().unwrap() {
                let decoded = page.batch().decode();
                for (i, (c, v)) in decoded.rows().enumerate() {
                    let bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
                    all.push((c.to_vec(), bits, page.labels()[i].to_bits()));
                }
            }
        }
        all
    };
    let (mut a, mut b) = (read(&ds), read(&copy));
    assert_ne!(a, b, "the order changed");
    a.sort();
    b.sort();
    assert_eq!(a, b, "the same rows");
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&out).unwrap();
}

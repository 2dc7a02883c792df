//! The loader: every strategy visits every row exactly once per epoch for
//! any sizes and worker counts, batches hold the rows they claim,
//! determinism, double buffering equals single buffering, corrupt blocks
//! surface as errors, and the shuffle quality of each strategy on
//! label-sorted data ranks as the CorgiPile paper reports.

mod code_kernels;
mod codes;
mod exact;
mod golden_order;
mod length;
mod quality;

use std::path::PathBuf;
use std::sync::Arc;

use crate::support::temp_path;
use proptest::prelude::*;
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::{Error, SparseBatch};

/// Rows whose label is their row number, and whose first entry encodes it
/// too, so every row can be checked where it lands.
fn numbered_rows(n: usize, n_cols: usize) -> (SparseBatch, Vec<f64>) {
    let mut batch = SparseBatch::with_cols(n_cols).unwrap();
    for i in 0..n {
        let extra = 1 + (i * 7 % (n_cols - 1));
        batch
            .push_row(&[0, extra as u32], &[i as f64 + 1.0, (i % 3) as f64 + 0.5])
            .unwrap();
    }
    (batch, (0..n).map(|i| i as f64).collect())
}

pub(crate) fn write_file(
    rows: &SparseBatch,
    labels: &[f64],
    page_rows: usize,
    block_bytes: usize,
) -> PathBuf {
    let path = temp_path("data");
    let options = WriterOptions::default()
        .with_page_rows(page_rows)
        .with_block_bytes(block_bytes)
        // Self-contained pages: the block counts these tests size by
        // bytes are those of version 2 (shared dictionaries make blocks
        // hold more rows).
        .with_segment_rows(0);
    let mut w = DatasetWriter::create(&path, rows.n_cols(), options).unwrap();
    w.push(rows, labels).unwrap();
    w.finish().unwrap();
    path
}

fn options(strategy: Strategy, mode: Mode) -> LoaderOptions {
    LoaderOptions::default()
        .with_strategy(strategy)
        .with_mode(mode)
        .with_trace(true)
        .with_scratch_dir(Some(std::env::temp_dir()))
}

/// Runs one epoch, checking every batch's rows against the labels (label
/// = row number) and the first column (row number + 1); returns the
/// stream's rows in order and the replayed rows.
fn run_epoch(loader: &Loader, epoch: u64) -> (Vec<u64>, Vec<u64>) {
    let mut stream = Vec::new();
    let mut replayed = Vec::new();
    let mut it = loader.epoch(epoch).unwrap();
    for batch in it.by_ref() {
        let batch = batch.unwrap_or_else(|e| panic!("epoch {epoch}: {e}"));
        let rows = batch.rows.clone().expect("traced");
        let mut at = 0;
        for page in &batch.pages {
            let decoded = page.batch().decode();
            assert_eq!(decoded.n_rows(), page.n_rows());
            for (i, (cols, values)) in decoded.rows().enumerate() {
                let r = rows[at + i];
                assert_eq!(page.labels()[i], r as f64, "label of row {r}");
                assert_eq!((cols[0], values[0]), (0, r as f64 + 1.0), "row {r}");
            }
            at += decoded.n_rows();
        }
        assert_eq!(at, rows.len());
        if batch.replay {
            replayed.extend(rows);
        } else {
            stream.extend(rows);
        }
    }
    let trace = it.trace().unwrap();
    assert_eq!(trace.rows(), &stream[..]);
    assert_eq!(it.stats().rows, stream.len() as u64);
    (stream, replayed)
}

fn any_strategy() -> impl proptest::strategy::Strategy<Value = Strategy> {
    proptest::sample::select(Strategy::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_row_exactly_once_per_epoch(
        n in 1usize..300,
        page_rows in 1usize..20,
        block_bytes in 50usize..1500,
        batch_rows in 1usize..70,
        workers in 1usize..4,
        strategy in any_strategy(),
        page_mode in any::<bool>(),
        double_buffer in any::<bool>(),
        fraction in 0.01f64..1.0,
        seed in any::<u64>(),
    ) {
        let (rows, labels) = numbered_rows(n, 9);
        let path = write_file(&rows, &labels, page_rows, block_bytes);
        let ds = Arc::new(Dataset::open(&path).unwrap());
        let mode = if page_mode { Mode::Page } else { Mode::Exact };
        let mut seen = Vec::new();
        for worker in 0..workers {
            let loader = Loader::new(Arc::clone(&ds), (options(strategy, mode)).with_batch_rows(batch_rows).with_workers(workers).with_worker(worker).with_double_buffer(double_buffer).with_seed(seed).with_buffer(Buffer::Fraction(fraction))).unwrap_or_else(|e| panic!("{strategy}: {e}"));
            for epoch in 0..2 {
                let (stream, replayed) = run_epoch(&loader, epoch);
                if epoch == 0 {
                    seen.extend(stream.iter().copied());
                }
                let mut sorted = stream.clone();
                sorted.sort_unstable();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), stream.len(), "a row twice in one epoch");
                prop_assert!(replayed.iter().all(|r| (*r as usize) < n));
                if strategy != Strategy::Mrs {
                    prop_assert!(replayed.is_empty());
                }
            }
        }
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..n as u64).collect::<Vec<_>>());
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn batches_have_the_requested_rows_but_the_last() {
    let (rows, labels) = numbered_rows(1003, 9);
    let path = write_file(&rows, &labels, 10, 400);
    for strategy in Strategy::ALL {
        let loader = Loader::open(&path, options(strategy, Mode::Exact))
            .unwrap_or_else(|e| panic!("{strategy}: {e}"));
        let sizes: Vec<usize> = loader
            .epoch(0)
            .unwrap_or_else(|e| panic!("{strategy}: {e}"))
            .filter_map(|b| {
                let b = b.unwrap_or_else(|e| panic!("{strategy}: {e}"));
                (!b.replay).then(|| b.n_rows())
            })
            .collect();
        let (last, full) = sizes.split_last().unwrap();
        assert!(full.iter().all(|&s| s == 250), "{strategy}: {sizes:?}");
        assert_eq!(*last, 1003 - 250 * full.len(), "{strategy}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn same_seed_same_order_whatever_the_buffering() {
    let (rows, labels) = numbered_rows(2000, 9);
    let path = write_file(&rows, &labels, 25, 600);
    for strategy in Strategy::ALL {
        for mode in [Mode::Exact, Mode::Page] {
            let order = |double_buffer, seed, epoch| {
                let o = (options(strategy, mode))
                    .with_double_buffer(double_buffer)
                    .with_seed(seed);
                run_epoch(&Loader::open(&path, o).unwrap(), epoch)
            };
            let base = order(true, 5, 1);
            assert_eq!(base, order(false, 5, 1), "{strategy} {mode:?}: buffering");
            assert_eq!(base, order(true, 5, 1), "{strategy} {mode:?}: rerun");
            if strategy != Strategy::NoShuffle {
                assert_ne!(base.0, order(true, 6, 1).0, "{strategy}: seed ignored");
            }
            let reshuffles = !matches!(strategy, Strategy::NoShuffle | Strategy::ShuffleOnce);
            if reshuffles {
                assert_ne!(base.0, order(true, 5, 2).0, "{strategy}: same every epoch");
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn workers_share_the_block_permutation() {
    let (rows, labels) = numbered_rows(3000, 9);
    let path = write_file(&rows, &labels, 25, 500);
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let single = Loader::new(Arc::clone(&ds), options(Strategy::CorgiPile, Mode::Exact)).unwrap();
    let mut joined = Vec::new();
    for worker in 0..3 {
        let o = (options(Strategy::CorgiPile, Mode::Exact))
            .with_worker(worker)
            .with_workers(3);
        joined.extend(Loader::new(Arc::clone(&ds), o).unwrap().block_order(4));
    }
    assert_eq!(joined, single.block_order(4));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_corrupt_block_is_an_error_from_the_iterator() {
    let (rows, labels) = numbered_rows(600, 9);
    let path = write_file(&rows, &labels, 20, 400);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[30] ^= 0x10; // block 0
    std::fs::write(&path, &bytes).unwrap();
    for strategy in Strategy::ALL {
        for double_buffer in [false, true] {
            let o = (options(strategy, Mode::Exact)).with_double_buffer(double_buffer);
            let result: Result<Vec<_>, Error> = match Loader::open(&path, o) {
                Ok(loader) => loader.epoch(0).unwrap().collect(),
                // Shuffle Once reads the whole file while copying it.
                Err(e) => Err(e),
            };
            match result {
                Err(Error::ChecksumMismatch { section, .. }) => assert_eq!(section, "block 0"),
                other => panic!("{strategy}: expected block 0's checksum error, got {other:?}"),
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn mrs_replays_reservoir_rows() {
    let (rows, labels) = numbered_rows(2000, 9);
    let path = write_file(&rows, &labels, 25, 500);
    let loader = Loader::open(&path, options(Strategy::Mrs, Mode::Exact)).unwrap();
    let (stream, replayed) = run_epoch(&loader, 0);
    assert_eq!(stream.len(), 2000);
    assert!(!replayed.is_empty());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_options_are_errors_and_risky_ones_warn() {
    let (rows, labels) = numbered_rows(500, 9);
    let path = write_file(&rows, &labels, 250, 100_000);
    let bad = |o: LoaderOptions| matches!(Loader::open(&path, o), Err(Error::BadArgument { .. }));
    let base = options(Strategy::CorgiPile, Mode::Exact);
    assert!(bad(base.clone().with_batch_rows(0)));
    assert!(bad(base.clone().with_worker(2).with_workers(2)));
    assert!(bad(base.clone().with_buffer(Buffer::Fraction(0.0))));
    assert!(bad(base.clone().with_buffer(Buffer::Fraction(f64::NAN))));
    // One block: the buffer holds all of it, a full shuffle, so no buffer
    // warning; 250-row pages for 250-row batches: the page mode warning.
    let loader = Loader::open(&path, options(Strategy::CorgiPile, Mode::Page)).unwrap();
    assert_eq!(loader.dataset().n_blocks(), 1);
    assert_eq!(loader.warnings().len(), 1, "{:?}", loader.warnings());
    assert!(loader.warnings()[0].contains("page mode"));
    std::fs::remove_file(&path).unwrap();
    // A few blocks: a 10% buffer would be one of them, so it holds four
    // (no warning); a buffer asked for as one block gets the warning.
    let path = write_file(&rows, &labels, 50, 300);
    let loader = Loader::open(&path, options(Strategy::CorgiPile, Mode::Page)).unwrap();
    let n = loader.dataset().n_blocks();
    assert!((5..40).contains(&n), "{n} blocks");
    assert_eq!(loader.buffer_blocks(), 4);
    assert!(loader.warnings().is_empty(), "{:?}", loader.warnings());
    let one = options(Strategy::CorgiPile, Mode::Page).with_buffer(Buffer::Blocks(1));
    let loader = Loader::open(&path, one).unwrap();
    assert_eq!(loader.warnings().len(), 1, "{:?}", loader.warnings());
    assert!(loader.warnings()[0].contains(&format!("holds 1 of this worker's {n} blocks")));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn auto_mode_shuffles_rows_and_says_what_the_label_mix_shows() {
    let (rows, _) = numbered_rows(5000, 9);
    // Labels in random order: pages as mixed as random rows.
    let mut rng = tocpile::rng::Rng::new(5);
    let mixed: Vec<f64> = (0..5000).map(|_| rng.below(2) as f64).collect();
    for (page_rows, batch_rows, says) in [
        (50, 250, "pages as mixed as random rows"),
        (62, 250, "pages as mixed as random rows"),
        (63, 250, "a mini-batch spans 3 of the file's pages"),
        (250, 250, "a mini-batch spans 1 of the file's pages"),
    ] {
        let path = write_file(&rows, &mixed, page_rows, 100_000);
        let o = LoaderOptions::default().with_batch_rows(batch_rows);
        let loader = Loader::open(&path, o).unwrap();
        assert_eq!(loader.mode(), Mode::Exact, "{page_rows}-row pages");
        let reason = &loader.mode_choice().reason;
        assert!(reason.contains(says), "{page_rows}-row pages: {reason}");
        assert!(loader.warnings().iter().all(|w| !w.contains("page mode")));
        std::fs::remove_file(&path).unwrap();
    }
    // The same labels sorted: every page holds one label, rows are shuffled.
    let mut sorted = mixed.clone();
    sorted.sort_by(f64::total_cmp);
    let path = write_file(&rows, &sorted, 50, 100_000);
    let loader = Loader::open(&path, LoaderOptions::default()).unwrap();
    assert_eq!(loader.mode(), Mode::Exact);
    let reason = &loader.mode_choice().reason;
    assert!(reason.contains("clustered labels"), "{reason}");
    std::fs::remove_file(&path).unwrap();
}

/// Streamed blocks reach the producer in groups of at least 64 KiB from
/// the read-ahead thread: a corrupt block in a later group yields, with or
/// without double buffering, the same batches before it and then its
/// error, and never a batch of a block after it.
#[test]
fn a_corrupt_block_in_a_later_read_ahead_group_errors_in_order() {
    let (rows, labels) = numbered_rows(40_000, 9);
    let path = write_file(&rows, &labels, 20, 400);
    let ds = Dataset::open(&path).unwrap();
    let total: u64 = (0..ds.n_blocks()).map(|b| ds.block_bytes(b)).sum();
    assert!(total > 3 * 64 * 1024, "the file spans several groups");
    let bad = ds.n_blocks() * 3 / 4;
    let block = ds.read_block(bad).unwrap().into_bytes();
    drop(ds);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(block.len())
        .position(|w| w == block.as_slice())
        .unwrap();
    bytes[at + block.len() / 2] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let run = |double_buffer| {
        let o = (options(Strategy::NoShuffle, Mode::Page))
            .with_double_buffer(double_buffer)
            .with_memory(0);
        let loader = Loader::open(&path, o).unwrap();
        let mut seen = Vec::new();
        for batch in loader.epoch(0).unwrap() {
            match batch {
                Ok(batch) => seen.extend(batch.rows.expect("traced")),
                Err(e) => return (seen, e),
            }
        }
        panic!("no error from a corrupt block");
    };
    let (single, e1) = run(false);
    let (double, e2) = run(true);
    assert_eq!(single, double);
    for e in [e1, e2] {
        match e {
            Error::ChecksumMismatch { section, .. } => assert_eq!(section, format!("block {bad}")),
            other => panic!("expected block {bad}'s checksum error, got {other:?}"),
        }
    }
    // No Shuffle in page mode: only rows of blocks before the bad one.
    let first_bad_row = single.len() as u64;
    assert!(first_bad_row > 0);
    assert_eq!(single, (0..first_bad_row).collect::<Vec<_>>());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn several_read_ahead_threads_deliver_blocks_in_the_epoch_order() {
    // A file of many 64 KiB read-ahead groups, so every read-ahead thread
    // gets several: the streamed epochs (validated on background threads,
    // a whole CorgiPile buffer ahead) must yield what the single-threaded
    // epochs yield, batch for batch, and each row once.
    let (rows, labels) = numbered_rows(40_000, 9);
    let path = write_file(&rows, &labels, 20, 400);
    for (strategy, mode) in [
        (Strategy::CorgiPile, Mode::Page),
        (Strategy::CorgiPile, Mode::Exact),
        (Strategy::NoShuffle, Mode::Page),
    ] {
        let run = |double_buffer, epoch| {
            let o = (options(strategy, mode))
                .with_double_buffer(double_buffer)
                .with_memory(0)
                .with_buffer(Buffer::Fraction(0.2));
            let loader = Loader::open(&path, o).unwrap();
            let mut seen = Vec::new();
            for batch in loader.epoch(epoch).unwrap() {
                seen.push(batch.unwrap().rows.expect("traced"));
            }
            seen
        };
        for epoch in 0..2 {
            let (single, double) = (run(false, epoch), run(true, epoch));
            assert_eq!(single, double, "{strategy:?} {mode:?} epoch {epoch}");
            let mut all: Vec<u64> = double.concat();
            all.sort_unstable();
            assert_eq!(all, (0..40_000).collect::<Vec<_>>());
        }
    }
    std::fs::remove_file(&path).unwrap();
}

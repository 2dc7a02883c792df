//! Iteration as a Rust user expects it: an epoch whose strategy fixes
//! its number of mini-batches knows it from the start (exact
//! `size_hint`, `ExactEpoch` an `ExactSizeIterator`), and the count is
//! what iteration yields, on every strategy, mode, worker slice and
//! buffering; `for batch in &loader` visits epochs 0, 1, 2, ... in turn.

use std::sync::Arc;

use proptest::prelude::*;
use tocpile::dataset::Dataset;
use tocpile::loader::{Buffer, Epoch, Loader, Mode, Strategy};
use tocpile::Error;

use super::{any_strategy, numbered_rows, options, write_file};

/// Runs `epoch` to its end, checking the size hint before every item:
/// exact and counting down when the length is known, `(0, None)` when it
/// is not. Returns the items yielded and the stream's rows (replays
/// excluded).
fn count(mut epoch: Epoch) -> Result<(usize, u64), TestCaseError> {
    let known = epoch.len_known();
    let (mut items, mut rows) = (0, 0u64);
    loop {
        let left = known.map(|n| n - items);
        prop_assert_eq!(epoch.size_hint(), (left.unwrap_or(0), left));
        prop_assert_eq!(epoch.len_known(), left);
        let Some(batch) = epoch.next() else { break };
        let batch = batch.map_err(|e| TestCaseError::fail(e.to_string()))?;
        items += 1;
        if !batch.replay {
            rows += batch.n_rows() as u64;
        }
        prop_assert!(
            known.is_none_or(|n| items <= n),
            "more batches than the length"
        );
    }
    // Ended for good.
    prop_assert!(epoch.next().is_none());
    if let Some(n) = known {
        prop_assert_eq!(items, n);
        prop_assert_eq!(epoch.size_hint(), (0, Some(0)));
    }
    Ok((items, rows))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_known_length_is_the_batches_yielded(
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
        let mut rows_of_workers = 0;
        for worker in 0..workers {
            let o = options(strategy, mode)
                .with_batch_rows(batch_rows)
                .with_workers(workers)
                .with_worker(worker)
                .with_double_buffer(double_buffer)
                .with_seed(seed)
                .with_buffer(Buffer::Fraction(fraction));
            let loader = Loader::new(Arc::clone(&ds), o).unwrap();
            for epoch in 0..2 {
                let fixed = !page_mode && strategy != Strategy::Mrs;
                let batches = loader.epoch_batches(epoch);
                prop_assert_eq!(batches.is_some(), fixed, "{} {:?}", strategy, mode);
                let (items, rows) = count(loader.epoch(epoch).unwrap())?;
                prop_assert_eq!(rows, loader.epoch_rows(epoch), "{}: epoch_rows", strategy);
                if epoch == 0 {
                    rows_of_workers += rows;
                }
                if let Some(b) = batches {
                    prop_assert_eq!(b, items);
                    prop_assert_eq!(b as u64, rows.div_ceil(batch_rows as u64));
                }
                // The ExactSizeIterator view agrees.
                match loader.epoch(epoch).unwrap().exact() {
                    Ok(exact) => {
                        prop_assert_eq!(Some(exact.len()), batches);
                        prop_assert_eq!(exact.count(), items);
                    }
                    Err(epoch) => prop_assert!(batches.is_none() && epoch.len_known().is_none()),
                }
            }
        }
        prop_assert_eq!(rows_of_workers, n as u64);
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn every_strategy_but_mrs_knows_its_length_in_row_mode() {
    let (rows, labels) = numbered_rows(1003, 9);
    let path = write_file(&rows, &labels, 10, 400);
    for strategy in Strategy::ALL {
        for mode in [Mode::Exact, Mode::Page] {
            let loader = Loader::open(&path, options(strategy, mode)).unwrap();
            let epoch = loader.epoch(0).unwrap();
            let known = mode == Mode::Exact && strategy != Strategy::Mrs;
            // 1,003 rows in 250-row mini-batches.
            let want = known.then_some(5);
            assert_eq!(epoch.len_known(), want, "{strategy} {mode:?}");
            assert_eq!(loader.epoch_batches(0), want, "{strategy} {mode:?}");
            assert_eq!(loader.epoch_rows(0), 1003, "{strategy} {mode:?}");
            if let Ok(exact) = epoch.exact() {
                assert_eq!(exact.len(), 5);
                assert_eq!(exact.map(Result::unwrap).count(), 5, "{strategy}");
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn an_error_ends_a_known_length_early() {
    let (rows, labels) = numbered_rows(600, 9);
    let path = write_file(&rows, &labels, 20, 400);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[30] ^= 0x10; // block 0
    std::fs::write(&path, &bytes).unwrap();
    let loader = Loader::open(&path, options(Strategy::NoShuffle, Mode::Exact)).unwrap();
    let mut epoch = loader.epoch(0).unwrap();
    assert_eq!(epoch.len_known(), Some(3));
    assert!(matches!(
        epoch.next(),
        Some(Err(Error::ChecksumMismatch { .. }))
    ));
    assert_eq!(epoch.size_hint(), (0, Some(0)));
    assert!(epoch.next().is_none());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn for_over_a_loader_visits_the_next_epoch_each_time() {
    let (rows, labels) = numbered_rows(2000, 9);
    let path = write_file(&rows, &labels, 25, 600);
    let loader = Loader::open(&path, options(Strategy::CorgiPile, Mode::Exact)).unwrap();
    let order = |epoch: Epoch| -> Vec<u64> {
        epoch
            .flat_map(|b| b.unwrap().rows.expect("traced"))
            .collect()
    };
    let wanted: Vec<Vec<u64>> = (0..3).map(|e| order(loader.epoch(e).unwrap())).collect();
    assert_ne!(wanted[0], wanted[1], "epochs reshuffle");
    assert_eq!(loader.next_epoch(), 0, "epoch() leaves the count alone");
    for want in &wanted {
        let mut got = Vec::new();
        for batch in &loader {
            got.extend(batch.unwrap().rows.expect("traced"));
        }
        assert_eq!(&got, want);
    }
    assert_eq!(loader.next_epoch(), 3);
    loader.set_next_epoch(1);
    assert_eq!(order((&loader).into_iter()), wanted[1]);
    assert_eq!(
        (&loader).into_iter().len_known(),
        Some(8),
        "2000 rows, 250 a batch"
    );
    std::fs::remove_file(&path).unwrap();
}

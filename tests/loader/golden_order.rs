//! The shuffle's order for a given seed is pinned: the rows of two epochs
//! of every strategy on a fixed file. Keeping rows as codes or pair
//! codes, or the whole file as the buffer, changes where rows are kept,
//! never which row comes next; the whole-file buffer is CorgiPile with a
//! buffer of 1.0, whose order is Epoch Shuffle's.
//!
//! The figures were printed by the loader before code-row buffers
//! (commit d40ae61's parent) and unchanged since, except CorgiPile's and
//! Epoch Shuffle's, changed once on purpose: their tuple shuffle now runs
//! front to back a mini-batch at a time (`src/loader/step_shuffle.rs`),
//! so that a buffer's first mini-batch leaves before the whole buffer is
//! permuted. The law is the same (a uniform permutation of each buffer);
//! the permutation a seed gives is not. The other strategies' figures
//! did not change.

use std::sync::Arc;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, RowForm, Strategy};
use tocpile::SparseBatch;

use crate::support::temp_path;

/// 3,000 rows of three entries from a few patterns, 25-row pages in
/// 22 blocks.
fn file() -> Arc<Dataset> {
    file_with(|i| (i % 17) as f64 + 0.5)
}

/// [`file`]'s rows with `last(i)` as row `i`'s last value.
fn file_with(last: impl Fn(usize) -> f64) -> Arc<Dataset> {
    let mut batch = SparseBatch::with_cols(20).unwrap();
    let mut labels = Vec::new();
    for i in 0..3000 {
        let a = (i % 7) as u32;
        let b = 7 + (i * 13 % 11) as u32;
        batch.push_row(&[a, b, 19], &[1.0, 1.0, last(i)]).unwrap();
        labels.push((i * 3 % 2) as f64);
    }
    let path = temp_path("golden-order");
    let options = WriterOptions::default()
        .with_page_rows(25)
        .with_block_bytes(300);
    let mut w = DatasetWriter::create(&path, 20, options).unwrap();
    w.push(&batch, &labels).unwrap();
    w.finish().unwrap();
    let ds = Dataset::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    Arc::new(ds)
}

/// The first 12 rows of an epoch and an FNV-1a hash of all of them.
fn epoch_rows(loader: &Loader, epoch: u64) -> (Vec<u64>, u64) {
    let mut rows = Vec::new();
    for b in loader.epoch(epoch).unwrap() {
        rows.extend(b.unwrap().rows.unwrap());
    }
    let hash = rows.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &r| {
        (h ^ r).wrapping_mul(0x0100_0000_01b3)
    });
    rows.truncate(12);
    (rows, hash)
}

type Golden = (Strategy, Buffer, [([u64; 12], u64); 2]);

const GOLDEN: [Golden; 7] = [
    (
        Strategy::CorgiPile,
        Buffer::Fraction(0.1),
        [
            (
                [
                    1351, 1805, 1858, 1477, 2957, 344, 1915, 335, 1901, 1364, 1849, 1359,
                ],
                0xbf4e_9c82_00f8_4edd,
            ),
            (
                [
                    2595, 1328, 1089, 1014, 1388, 1020, 1383, 992, 1002, 1063, 1337, 1029,
                ],
                0x9300_3cde_31cb_5ac1,
            ),
        ],
    ),
    (
        Strategy::CorgiPile,
        Buffer::Fraction(1.0),
        [
            (
                [
                    630, 1822, 333, 930, 1260, 513, 2957, 2663, 2881, 670, 1435, 638,
                ],
                0x756f_248b_3bbd_99cf,
            ),
            (
                [2743, 261, 1558, 22, 1026, 52, 987, 609, 663, 489, 301, 83],
                0x1605_449c_4ef5_fa31,
            ),
        ],
    ),
    (
        Strategy::BlockOnly,
        Buffer::Fraction(0.1),
        [
            (
                [
                    1800, 1801, 1802, 1803, 1804, 1805, 1806, 1807, 1808, 1809, 1810, 1811,
                ],
                0x55e4_0a27_4157_776f,
            ),
            (
                [
                    1350, 1351, 1352, 1353, 1354, 1355, 1356, 1357, 1358, 1359, 1360, 1361,
                ],
                0xc49e_3c7b_8646_e3e9,
            ),
        ],
    ),
    (
        Strategy::EpochShuffle,
        Buffer::Fraction(0.1),
        [
            (
                [
                    630, 1822, 333, 930, 1260, 513, 2957, 2663, 2881, 670, 1435, 638,
                ],
                0x756f_248b_3bbd_99cf,
            ),
            (
                [2743, 261, 1558, 22, 1026, 52, 987, 609, 663, 489, 301, 83],
                0x1605_449c_4ef5_fa31,
            ),
        ],
    ),
    (
        Strategy::ShuffleOnce,
        Buffer::Fraction(0.1),
        [
            (
                [
                    419, 1408, 1545, 2462, 1829, 1544, 1045, 2741, 1387, 1258, 2386, 611,
                ],
                0x03a8_6b24_14ec_d5ed,
            ),
            (
                [
                    419, 1408, 1545, 2462, 1829, 1544, 1045, 2741, 1387, 1258, 2386, 611,
                ],
                0x03a8_6b24_14ec_d5ed,
            ),
        ],
    ),
    (
        Strategy::SlidingWindow,
        Buffer::Fraction(0.1),
        [
            (
                [223, 206, 129, 131, 17, 172, 64, 277, 127, 215, 278, 42],
                0xd2e9_e29c_c825_b3b5,
            ),
            (
                [116, 215, 270, 58, 195, 247, 100, 179, 93, 104, 200, 278],
                0xafaf_3edd_355e_9f51,
            ),
        ],
    ),
    (
        Strategy::Mrs,
        Buffer::Fraction(0.1),
        [
            (
                [223, 208, 131, 133, 17, 175, 65, 285, 130, 222, 289, 44],
                0x8670_e37b_30fb_abc8,
            ),
            (
                [117, 216, 273, 58, 198, 252, 103, 183, 96, 107, 207, 290],
                0x9119_8936_778f_ec0e,
            ),
        ],
    ),
];

fn options(strategy: Strategy, buffer: Buffer) -> LoaderOptions {
    LoaderOptions::default()
        .with_strategy(strategy)
        .with_buffer(buffer)
        .with_mode(Mode::Exact)
        .with_batch_rows(50)
        .with_seed(42)
        .with_memory(1 << 30)
        .with_scratch_dir(Some(std::env::temp_dir()))
        .with_trace(true)
}

#[test]
fn the_shuffle_order_for_a_seed_is_pinned_in_every_row_form() {
    let ds = file();
    assert_eq!(ds.n_blocks(), 22);
    for (strategy, buffer, want) in GOLDEN {
        for form in [
            RowForm::Auto,
            RowForm::Values,
            RowForm::Codes,
            RowForm::PairCodes,
        ] {
            let loader = Loader::new(Arc::clone(&ds), options(strategy, buffer).with_rows(form));
            let loader = loader.unwrap();
            for (epoch, (rows, hash)) in want.iter().enumerate() {
                let got = epoch_rows(&loader, epoch as u64);
                assert_eq!(
                    got,
                    (rows.to_vec(), *hash),
                    "{strategy} {buffer:?} {form:?} {epoch}"
                );
            }
        }
    }
}

/// The default buffer on a file that fits the budget is the whole file:
/// CorgiPile's order with a buffer of 1.0.
#[test]
fn the_whole_file_default_shuffles_as_a_buffer_of_one() {
    let ds = file();
    let loader = Loader::new(Arc::clone(&ds), options(Strategy::CorgiPile, Buffer::Auto)).unwrap();
    assert!(loader.buffer_choice().whole_file);
    for (epoch, (rows, hash)) in GOLDEN[1].2.iter().enumerate() {
        assert_eq!(epoch_rows(&loader, epoch as u64), (rows.to_vec(), *hash));
    }
}

/// The rows of an epoch by their contents: each row's last value (its
/// number plus 0.5 in [`numbered_file`]) and its label.
fn epoch_contents(loader: &Loader, epoch: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for b in loader.epoch(epoch).unwrap() {
        for page in b.unwrap().pages {
            let rows = page.batch().decode();
            for ((_, vals), &label) in rows.rows().zip(page.labels()) {
                out.push((vals[vals.len() - 1].to_bits(), label.to_bits()));
            }
        }
    }
    out
}

/// [`file`] with each row's last value unique (the row's number plus
/// 0.5), so that an epoch's rows name themselves without a trace.
fn numbered_file() -> Arc<Dataset> {
    file_with(|i| i as f64 + 0.5)
}

/// Without a trace the buffer keeps its records in the plain layout,
/// which has a gather of its own: the rows must come in the traced
/// order, in every strategy and row form.
#[test]
fn untraced_loaders_yield_the_traced_order() {
    let ds = numbered_file();
    assert!(ds.n_blocks() > 8, "{} blocks", ds.n_blocks());
    for strategy in [
        Strategy::CorgiPile,
        Strategy::NoShuffle,
        Strategy::BlockOnly,
        Strategy::EpochShuffle,
        Strategy::ShuffleOnce,
    ] {
        for buffer in [Buffer::Auto, Buffer::Fraction(0.1)] {
            for form in [RowForm::Auto, RowForm::PairCodes, RowForm::Codes] {
                let traced = options(strategy, buffer).with_rows(form);
                let plain = traced.clone().with_trace(false);
                let traced = Loader::new(Arc::clone(&ds), traced).unwrap();
                let plain = Loader::new(Arc::clone(&ds), plain).unwrap();
                for epoch in 0..2 {
                    let want = epoch_contents(&traced, epoch);
                    assert_eq!(want.len(), 3000);
                    assert_eq!(
                        epoch_contents(&plain, epoch),
                        want,
                        "{strategy} {buffer:?} {form:?} {epoch}"
                    );
                }
            }
        }
    }
}

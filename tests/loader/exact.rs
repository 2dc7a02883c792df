//! Exact mode against the data written: every mini-batch holds, row for
//! row, the columns, values and labels of the rows its trace names, in
//! the format asked for (by default the pipeline's own: CSR gathered from
//! decoded values without an encode, or TOC batches of code rows where
//! the file has shared dictionaries; an explicit `LoaderOptions::format`
//! encoded), for every strategy, resident and streamed, with and without
//! double buffering.

use std::sync::Arc;

use tocpile::dataset::Dataset;
use tocpile::formats::FormatKind;
use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
use tocpile::SparseBatch;

use super::write_file;

/// Rows of varying length (0 to 11 entries) and values with repeats, so
/// TOC pages build real trees; labels unrelated to the row number.
fn rows(n: usize, n_cols: usize) -> (SparseBatch, Vec<f64>) {
    let mut batch = SparseBatch::with_cols(n_cols).unwrap();
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let len = (i * 7 + i / 5) % 12;
        let mut cols: Vec<u32> = (0..len)
            .map(|k| ((i * 13 + k * 29) % n_cols) as u32)
            .collect();
        cols.sort_unstable();
        cols.dedup();
        let values: Vec<f64> = cols
            .iter()
            .map(|&c| ((c as usize + i) % 5) as f64 * 0.5 - 1.0)
            .map(|v| if v == 0.0 { 2.5 } else { v })
            .collect();
        batch.push_row(&cols, &values).unwrap();
        labels.push(((i * 31) % 7) as f64);
    }
    (batch, labels)
}

/// Row `r` of `data` as owned columns and values.
fn row_of(data: &SparseBatch, r: u64) -> Row {
    let (c, v) = data.row(r as usize);
    (c.to_vec(), v.to_vec())
}

/// A row's columns and values.
type Row = (Vec<u32>, Vec<f64>);

/// Every row and label of a batch's pages, in order.
fn flatten(pages: &[tocpile::Page]) -> (Vec<Row>, Vec<f64>) {
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    for page in pages {
        let decoded = page.batch().decode();
        rows.extend(decoded.rows().map(|(c, v)| (c.to_vec(), v.to_vec())));
        labels.extend_from_slice(page.labels());
    }
    (rows, labels)
}

#[test]
fn exact_batches_hold_the_traced_rows_of_the_file() {
    let (data, labels) = rows(1500, 40);
    // Blocks of 1000 bytes: more than 8 (1200 made 9 in version 1, whose
    // labels took more bytes).
    let path = write_file(&data, &labels, 30, 1000);
    let ds = Arc::new(Dataset::open(&path).unwrap());
    assert!(ds.n_blocks() > 8, "{} blocks", ds.n_blocks());
    for strategy in Strategy::ALL {
        for (format, kind) in [
            (None, FormatKind::Csr),
            (Some(FormatKind::TocFull), FormatKind::TocFull),
        ] {
            for (memory, double_buffer) in [(usize::MAX, true), (0, true), (0, false)] {
                let options = LoaderOptions::default()
                    .with_strategy(strategy)
                    .with_mode(Mode::Exact)
                    .with_batch_rows(70)
                    .with_trace(true)
                    .with_format(format)
                    .with_memory(memory)
                    .with_double_buffer(double_buffer)
                    .with_scratch_dir(Some(std::env::temp_dir()));
                let loader = Loader::new(Arc::clone(&ds), options).unwrap();
                for epoch in 0..2 {
                    let mut stream = Vec::new();
                    let mut it = loader.epoch(epoch).unwrap();
                    for batch in it.by_ref() {
                        let batch = batch.unwrap();
                        let traced = batch.rows.clone().expect("traced");
                        // One page, or two when the batch takes the last
                        // rows of a buffer and the first of the next.
                        assert!(matches!(batch.pages.len(), 1 | 2), "{strategy}");
                        for page in &batch.pages {
                            // Without a format asked for, the pipeline's
                            // own: CSR rows of decoded values, or (Shuffle
                            // Once's copy has shared dictionaries) TOC
                            // batches of code rows.
                            let own = format.is_none() && page.kind() == FormatKind::TocFull;
                            assert!(page.kind() == kind || own, "{strategy} {format:?}");
                        }
                        let (got, got_labels) = flatten(&batch.pages);
                        assert_eq!(got.len(), traced.len());
                        for (i, &r) in traced.iter().enumerate() {
                            let what = format!("{strategy} {format:?} epoch {epoch} row {r}");
                            assert_eq!(got[i], row_of(&data, r), "{what}");
                            assert_eq!(got_labels[i], labels[r as usize], "{what}");
                        }
                        if !batch.replay {
                            stream.extend(traced);
                        }
                    }
                    assert_eq!(it.trace().unwrap().rows(), &stream[..]);
                    stream.sort_unstable();
                    assert_eq!(stream, (0..1500).collect::<Vec<u64>>(), "{strategy}");
                }
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
}

/// Rows left in a buffer after its full mini-batches are taken make a
/// batch with the next buffer's first rows; they must be the same rows.
/// Batch sizes that leave a remainder every buffer, and blocks smaller
/// than a batch.
#[test]
fn rows_left_over_between_buffers_stay_the_same_rows() {
    let (data, labels) = rows(997, 25);
    let path = write_file(&data, &labels, 7, 300);
    for strategy in [
        Strategy::CorgiPile,
        Strategy::NoShuffle,
        Strategy::BlockOnly,
    ] {
        for batch_rows in [33, 250] {
            let options = LoaderOptions::default()
                .with_strategy(strategy)
                .with_mode(Mode::Exact)
                .with_batch_rows(batch_rows)
                .with_trace(true);
            let loader = Loader::open(&path, options).unwrap();
            let mut seen = Vec::new();
            for batch in loader.epoch(3).unwrap() {
                let batch = batch.unwrap();
                let (got, got_labels) = flatten(&batch.pages);
                for (i, &r) in batch.rows.as_ref().unwrap().iter().enumerate() {
                    assert_eq!(got[i], row_of(&data, r), "{strategy} row {r}");
                    assert_eq!(got_labels[i], labels[r as usize]);
                }
                seen.extend(batch.rows.unwrap());
            }
            seen.sort_unstable();
            assert_eq!(
                seen,
                (0..997).collect::<Vec<u64>>(),
                "{strategy} {batch_rows}"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
}

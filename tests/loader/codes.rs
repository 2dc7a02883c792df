//! The row pipeline on files whose pages share their segments'
//! dictionaries: buffers keep code rows (as the pages have them, or
//! written out as pair codes) or decoded values, one buffer of blocks at
//! a time or the whole file at once; every mini-batch holds, row for row,
//! the rows its trace names, whatever form its batch takes (a TOC batch
//! on its compact tree, or CSR rows), for every strategy of the pipeline.

use std::sync::Arc;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::Batch;
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, RowForm, Strategy};
use tocpile::SparseBatch;

use crate::support::temp_path;

/// Rows of twelve one-hot entries drawn from a few patterns (trees pay
/// on them), every third row with a numeric entry after them; labels
/// unrelated to the row number.
fn rows(n: usize) -> (SparseBatch, Vec<f64>) {
    let n_cols = 60;
    let mut batch = SparseBatch::with_cols(n_cols).unwrap();
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let pattern = (i * 7 + i / 11) % 4;
        let mut cols: Vec<u32> = (0..12)
            .map(|k| (4 * k + (pattern + k) % 4) as u32)
            .collect();
        let mut vals = vec![1.0; 12];
        if i % 3 == 0 {
            cols.push(50 + (i % 9) as u32);
            vals.push(((i * 17) % 23) as f64 * 0.25 - 2.0);
        }
        let vals: Vec<f64> = vals
            .into_iter()
            .map(|v| if v == 0.0 { 0.5 } else { v })
            .collect();
        batch.push_row(&cols, &vals).unwrap();
        labels.push(((i * 31) % 3) as f64);
    }
    (batch, labels)
}

/// A version-4 file of `data` (segments of `segment_rows` rows sharing a
/// dictionary), 20-row pages, blocks of about `block_bytes` bytes.
fn write(
    data: &SparseBatch,
    labels: &[f64],
    segment_rows: usize,
    block_bytes: usize,
) -> std::path::PathBuf {
    let path = temp_path("codes");
    let options = WriterOptions::default()
        .with_page_rows(20)
        .with_block_bytes(block_bytes)
        .with_segment_rows(segment_rows);
    let mut w = DatasetWriter::create(&path, data.n_cols(), options).unwrap();
    w.push(data, labels).unwrap();
    w.finish().unwrap();
    path
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

/// What a loader over `path` with `options` yields: each epoch's rows
/// checked against `data` and `labels`, every row once; returns how many
/// batches ran on their tree (TOC batches) and how many on their rows
/// (CSR, or pair codes).
fn check(
    ds: &Arc<Dataset>,
    options: LoaderOptions,
    (data, labels): (&SparseBatch, &[f64]),
    what: &str,
) -> (usize, usize) {
    let loader = Loader::new(Arc::clone(ds), options).unwrap();
    let (mut toc, mut csr) = (0, 0);
    for epoch in 0..2 {
        let mut stream = Vec::new();
        let mut it = loader.epoch(epoch).unwrap();
        for batch in it.by_ref() {
            let batch = batch.unwrap();
            let traced = batch.rows.clone().expect("traced");
            let (got, got_labels) = flatten(&batch.pages);
            assert_eq!(got.len(), traced.len(), "{what}");
            for (i, &r) in traced.iter().enumerate() {
                let (c, v) = data.row(r as usize);
                let want = (c.to_vec(), v.to_vec());
                assert_eq!(got[i], want, "{what} epoch {epoch} row {r}");
                assert_eq!(got_labels[i], labels[r as usize], "{what} row {r}");
            }
            for page in &batch.pages {
                match page.batch() {
                    Batch::Toc(_) => toc += 1,
                    Batch::Csr(_) | Batch::Coded(_) => csr += 1,
                    other => panic!("{what}: a {:?} page", other.kind()),
                }
            }
            stream.extend(traced);
        }
        assert_eq!(it.trace().unwrap().rows(), &stream[..], "{what}");
        stream.sort_unstable();
        let all: Vec<u64> = (0..data.n_rows() as u64).collect();
        assert_eq!(stream, all, "{what}: every row once");
    }
    (toc, csr)
}

#[test]
fn code_rows_yield_the_files_rows_in_every_form_buffer_and_strategy() {
    let (data, labels) = rows(1300);
    // Segments of 400 rows: four dictionaries, rows of a batch from
    // several of them.
    let path = write(&data, &labels, 400, 600);
    let ds = Arc::new(Dataset::open(&path).unwrap());
    assert_eq!(ds.n_segments(), (4, 4));
    let strategies = [
        Strategy::CorgiPile,
        Strategy::NoShuffle,
        Strategy::BlockOnly,
        Strategy::EpochShuffle,
        Strategy::ShuffleOnce,
    ];
    let (mut toc, mut csr) = (0, 0);
    for strategy in strategies {
        for form in [RowForm::Codes, RowForm::PairCodes, RowForm::Values] {
            // The whole file (kept), buffers of resident blocks, buffers
            // of streamed blocks, single-buffered.
            for (buffer, memory, double) in [
                (Buffer::Auto, usize::MAX, true),
                (Buffer::Fraction(0.2), usize::MAX, true),
                (Buffer::Fraction(0.2), 0, true),
                (Buffer::Auto, usize::MAX, false),
            ] {
                let options = LoaderOptions::default()
                    .with_strategy(strategy)
                    .with_mode(Mode::Exact)
                    .with_batch_rows(70)
                    .with_buffer(buffer)
                    .with_memory(memory)
                    .with_double_buffer(double)
                    .with_trace(true)
                    .with_rows(form)
                    .with_scratch_dir(Some(std::env::temp_dir()));
                let what = format!("{strategy} {form:?} {buffer:?} memory {memory} {double}");
                let (t, c) = check(&ds, options, (&data, &labels), &what);
                toc += t;
                csr += c;
                if form == RowForm::PairCodes {
                    assert_eq!(t, 0, "{what}: pair codes make rows");
                }
            }
        }
    }
    // Both forms of code batches were met and checked.
    assert!(toc > 0 && csr > 0, "{toc} TOC batches, {csr} CSR");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_whole_file_is_the_buffer_when_it_fits_the_budget() {
    let (data, labels) = rows(2000);
    let path = write(&data, &labels, 65_536, 100);
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let options = |memory| {
        LoaderOptions::default()
            .with_mode(Mode::Exact)
            .with_memory(memory)
    };
    let whole = Loader::new(Arc::clone(&ds), options(usize::MAX)).unwrap();
    let choice = whole.buffer_choice();
    assert!(choice.whole_file, "{choice:?}");
    assert_eq!(choice.blocks, ds.n_blocks());
    assert!(whole.warnings().is_empty(), "{:?}", whole.warnings());
    // Below the whole file's estimated bytes: a tenth of the file (at
    // least 4 blocks).
    let small = Loader::new(Arc::clone(&ds), options(choice.whole_bytes as usize - 1)).unwrap();
    let c = small.buffer_choice();
    assert!(!c.whole_file, "{c:?}");
    assert_eq!(
        c.blocks,
        4.max(ds.n_blocks().div_ceil(10)).min(ds.n_blocks())
    );
    // An explicit fraction keeps CorgiPile's buffer as asked.
    assert!(ds.n_blocks() > 8, "{} blocks", ds.n_blocks());
    let asked = Loader::new(
        Arc::clone(&ds),
        options(usize::MAX).with_buffer(Buffer::Fraction(0.5)),
    )
    .unwrap();
    assert!(!asked.buffer_choice().whole_file);
    // A whole-file epoch shuffles across every block: the first batch
    // holds rows from all over the file.
    let loader = Loader::new(
        Arc::clone(&ds),
        options(usize::MAX).with_trace(true).with_batch_rows(60),
    )
    .unwrap();
    let first = loader.epoch(0).unwrap().next().unwrap().unwrap();
    let rows = first.rows.unwrap();
    let (lo, hi) = (rows.iter().min().unwrap(), rows.iter().max().unwrap());
    assert!(*lo < 300 && *hi > 1700, "{lo}..{hi}");
    // After the first epoch the loader holds the whole file's rows.
    assert!(loader.resident_bytes() > 0);
    std::fs::remove_file(&path).unwrap();
}

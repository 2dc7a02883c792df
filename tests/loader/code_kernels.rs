//! The kernels on the loader's code batches against plain dense math:
//! every mini-batch a loader cuts from code rows (a TOC batch on the
//! compact tree of its rows' codes, pair codes, or CSR rows written out
//! of codes) runs A.v, v.A, A.M and M.A as dense math on the file's own
//! rows says, the rows named by the batch's trace. Random data (proptest)
//! and the shipped datasets, files of every encoder level, segments small
//! enough that a batch's rows come from several dictionaries.

use std::sync::Arc;

use proptest::prelude::*;
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::{Batch, FormatKind};
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, RowForm};
use tocpile::{SparseBatch, Workspace};

use crate::formats::check_kernels;
use crate::strategy::finite_batch;
use crate::support::{load, temp_path, Sets};

/// How the file is laid out and how the loader keeps and cuts its rows.
#[derive(Debug, Clone, Copy)]
struct Setting {
    format: FormatKind,
    page_rows: usize,
    segment_rows: usize,
    block_bytes: usize,
    form: RowForm,
    buffer: Buffer,
    batch_rows: usize,
}

/// Writes `data` as `setting` says and checks every kernel of every page
/// of every batch of two epochs against dense math on the rows its trace
/// names; returns the batches met on trees and as rows.
fn check_file(data: &SparseBatch, setting: Setting, seed: u64) -> (usize, usize) {
    let path = temp_path("code-kernels");
    let options = WriterOptions::default()
        .with_format(setting.format)
        .with_page_rows(setting.page_rows)
        .with_block_bytes(setting.block_bytes)
        .with_segment_rows(setting.segment_rows);
    let labels: Vec<f64> = (0..data.n_rows()).map(|i| (i % 3) as f64).collect();
    let mut writer = DatasetWriter::create(&path, data.n_cols(), options).unwrap();
    writer.push(data, &labels).unwrap();
    writer.finish().unwrap();
    let ds = Arc::new(Dataset::open(&path).unwrap());
    let loader = Loader::new(
        Arc::clone(&ds),
        LoaderOptions::default()
            .with_mode(Mode::Exact)
            .with_rows(setting.form)
            .with_buffer(setting.buffer)
            .with_batch_rows(setting.batch_rows)
            .with_memory(usize::MAX)
            .with_seed(seed)
            .with_trace(true),
    )
    .unwrap();
    let mut ws = Workspace::new();
    let (mut trees, mut rows) = (0, 0);
    for epoch in 0..2 {
        for batch in loader.epoch(epoch).unwrap() {
            let batch = batch.unwrap();
            let traced = batch.rows.clone().expect("traced");
            let mut at = 0;
            for page in &batch.pages {
                let n = page.n_rows();
                let mut want = SparseBatch::with_cols(data.n_cols()).unwrap();
                for &r in &traced[at..at + n] {
                    let (c, v) = data.row(r as usize);
                    want.push_row(c, v).unwrap();
                }
                at += n;
                let what = format!("{setting:?} epoch {epoch}");
                assert_eq!(page.batch().decode(), want, "{what}");
                check_kernels(page.kind(), page.batch(), &want, &mut ws, seed ^ at as u64);
                match page.batch() {
                    b @ Batch::Toc(_) if b.on_tree() => trees += 1,
                    _ => rows += 1,
                }
            }
            assert_eq!(at, traced.len());
        }
    }
    std::fs::remove_file(&path).unwrap();
    (trees, rows)
}

fn setting() -> impl Strategy<Value = Setting> {
    (
        prop::sample::select(vec![
            FormatKind::TocFull,
            FormatKind::TocLogical,
            FormatKind::TocSparse,
        ]),
        1usize..6,
        1usize..20,
        prop::sample::select(vec![64usize, 400, 1 << 20]),
        prop::sample::select(vec![RowForm::Codes, RowForm::PairCodes, RowForm::Auto]),
        prop::sample::select(vec![Buffer::Auto, Buffer::Fraction(0.3)]),
        1usize..40,
    )
        .prop_map(
            |(format, page_rows, segment_pages, block_bytes, form, buffer, batch_rows)| Setting {
                format,
                page_rows,
                segment_rows: page_rows * segment_pages,
                block_bytes,
                form,
                buffer,
                batch_rows,
            },
        )
}

/// `n` copies of `batch`'s rows, one after another (more rows than one
/// generated batch holds, so files have several segments and blocks).
fn repeated(batch: &SparseBatch, n: usize) -> SparseBatch {
    let mut out = SparseBatch::with_cols(batch.n_cols()).unwrap();
    for _ in 0..n {
        for (c, v) in batch.rows() {
            out.push_row(c, v).unwrap();
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn code_batch_kernels_match_dense_math(
        batch in finite_batch(40),
        copies in 1usize..4,
        setting in setting(),
        seed in any::<u64>(),
    ) {
        prop_assume!(batch.n_rows() > 0);
        check_file(&repeated(&batch, copies), setting, seed);
    }
}

/// Every shipped dataset's first rows as files of every level, segments
/// of 500 rows (a batch's rows from several dictionaries), each buffer
/// form: both TOC batches on trees and row batches are met.
#[test]
fn code_batch_kernels_match_dense_math_on_every_dataset() {
    code_batch_kernels_on(Sets::Shipped, 2000);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn code_batch_kernels_match_dense_math_on_the_shared_datasets() {
    code_batch_kernels_on(Sets::SharedOnly, 2000);
}

fn code_batch_kernels_on(sets: Sets, max_rows: usize) {
    let (mut trees, mut rows) = (0, 0);
    for (d, name) in sets.plain() {
        let (data, _) = load(name, max_rows);
        for (format, form) in [
            (FormatKind::TocFull, RowForm::Codes),
            (FormatKind::TocFull, RowForm::PairCodes),
            (FormatKind::TocFull, RowForm::Auto),
            (FormatKind::TocLogical, RowForm::Auto),
            (FormatKind::TocSparse, RowForm::Auto),
        ] {
            let setting = Setting {
                format,
                page_rows: 50,
                segment_rows: 500,
                block_bytes: 16 << 10,
                form,
                buffer: Buffer::Auto,
                batch_rows: 250,
            };
            let (t, r) = check_file(&data, setting, d as u64);
            trees += t;
            rows += r;
        }
    }
    // The shipped sets have batches whose trees pay (the shared sets'
    // first rows, at these sizes, all go to rows).
    assert!(rows > 0, "{trees} tree batches, {rows} row batches");
    if sets == Sets::Shipped {
        assert!(trees > 0, "{trees} tree batches, {rows} row batches");
    }
}

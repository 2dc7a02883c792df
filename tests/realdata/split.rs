//! The held-out split: a partition of the rows, by a seeded hash of the
//! row number, whatever the page and block sizes.

use std::sync::Arc;

use tocpile::dataset::{is_held_out, split_holdout, Dataset, DatasetWriter, WriterOptions};
use tocpile::scale::{ColumnStats, ScaleKind};
use tocpile::SparseBatch;

use super::wide_scales;
use crate::support::temp_path;

fn rows_of(path: &std::path::Path) -> (SparseBatch, Vec<f64>) {
    let ds = Dataset::open(path).unwrap();
    let mut rows = SparseBatch::with_cols(ds.info().n_cols).unwrap();
    let mut labels = Vec::new();
    for b in 0..ds.n_blocks() {
        let block = ds.read_block(b).unwrap();
        for page in block.pages().unwrap() {
            for (c, v) in page.batch().decode().rows() {
                rows.push_row(c, v).unwrap();
            }
        }
        labels.extend_from_slice(block.labels());
    }
    (rows, labels)
}

#[test]
fn holdout_splits_rows_by_hash_and_refits_the_scaling() {
    let n = 1000;
    let batch = wide_scales(3, n, 5);
    let labels: Vec<f64> = (0..n).map(|i| i as f64).collect(); // the row number
    for (page_rows, block_bytes) in [(10, 200), (64, 1 << 20)] {
        let src = temp_path(&format!("split-src-{page_rows}"));
        let options = WriterOptions::default()
            .with_page_rows(page_rows)
            .with_block_bytes(block_bytes);
        let mut w = DatasetWriter::create(&src, 5, options).unwrap();
        w.set_scaling(Some(ScaleKind::MaxAbs)).unwrap();
        w.push(&batch, &labels).unwrap();
        w.finish().unwrap();
        let ds = Arc::new(Dataset::open(&src).unwrap());
        let (train, test) = (temp_path("split-train"), temp_path("split-test"));
        let (ti, hi) =
            split_holdout(&ds, 0.1, 42, Some(ScaleKind::Standard), &train, &test).unwrap();
        assert_eq!(ti.n_rows + hi.n_rows, n as u64);
        // Roughly a tenth, and exactly the rows the hash picks.
        assert!((60..=140).contains(&hi.n_rows), "{} held out", hi.n_rows);
        let (test_rows, test_labels) = rows_of(&test);
        let (train_rows, train_labels) = rows_of(&train);
        let expected: Vec<f64> = (0..n as u64)
            .filter(|&r| is_held_out(42, r, 0.1))
            .map(|r| r as f64)
            .collect();
        assert_eq!(test_labels, expected);
        for (part, part_labels) in [(&test_rows, &test_labels), (&train_rows, &train_labels)] {
            for (i, &y) in part_labels.iter().enumerate() {
                assert_eq!(part.row(i), batch.row(y as usize));
            }
        }
        // Each part's scaling is fitted on its own rows.
        let mut stats = ColumnStats::new(5).unwrap();
        stats.add(&train_rows).unwrap();
        assert_eq!(ti.scaling, Some(stats.scaling(ScaleKind::Standard)));
        assert_eq!(Dataset::open(&train).unwrap().info().scaling, ti.scaling);
        for p in [&src, &train, &test] {
            std::fs::remove_file(p).unwrap();
        }
    }
    // Other seeds pick other rows; a share out of (0, 1) is an error.
    let a: Vec<bool> = (0..200).map(|r| is_held_out(1, r, 0.5)).collect();
    let b: Vec<bool> = (0..200).map(|r| is_held_out(2, r, 0.5)).collect();
    assert_ne!(a, b);
    let src = temp_path("split-bad");
    let mut w = DatasetWriter::create(&src, 5, WriterOptions::default()).unwrap();
    w.push(&wide_scales(1, 10, 5), &[0.0; 10]).unwrap();
    w.finish().unwrap();
    let ds = Arc::new(Dataset::open(&src).unwrap());
    let (x, y) = (temp_path("split-x"), temp_path("split-y"));
    assert!(split_holdout(&ds, 1.0, 0, None, &x, &y).is_err());
    assert!(!x.exists() && !y.exists());
    std::fs::remove_file(&src).unwrap();
}

//! Kernels on one tree for a mini-batch of several version-3 pages of a
//! segment (`DecodeTree::build_pages`: the shared nodes the pages use
//! placed once, each page's own nodes after, rows in page order), against
//! plain dense math on the rows the pages hold: proptest on random
//! segments split into random pages, and the real datasets. Pages that do
//! not share one dictionary are refused.

use std::sync::Arc;

use ndarray::Array1;
use proptest::prelude::*;

use super::check_all;
use crate::strategy::finite_batch;
use crate::support::{assert_close, load, numbers, Sets};
use tocpile::{
    kernels::BatchKernels, DecodeTree, EncodeOptions, Encoder, Error, SharedDict, SparseBatch,
    TocBatch, Workspace,
};

/// Learns one segment of `rows` and encodes it as version-3 pages of
/// `sizes[i % sizes.len()]` rows each.
fn segment_pages(rows: &SparseBatch, sizes: &[usize]) -> (Arc<SharedDict>, Vec<TocBatch>) {
    let mut encoder = Encoder::new(EncodeOptions::default());
    let model = encoder.learn_segment(rows).unwrap().unwrap();
    let (mut pages, mut start) = (Vec::new(), 0);
    while start < rows.n_rows() {
        let end = (start + sizes[pages.len() % sizes.len()]).min(rows.n_rows());
        pages.push(
            encoder
                .encode_shared(&rows.slice_rows(start..end), &model)
                .unwrap(),
        );
        start = end;
    }
    (Arc::clone(model.dict()), pages)
}

/// The fused linear gradient (squared loss) of `tree` against dense math.
pub(super) fn check_gradient(
    a: &ndarray::Array2<f64>,
    tree: &DecodeTree,
    ws: &mut Workspace,
    seed: u64,
) {
    let (n, m) = a.dim();
    let w = Array1::from(numbers(seed, m));
    let y = numbers(seed + 1, n);
    let abs = a.mapv(f64::abs);
    let z = a.dot(&w);
    let d = Array1::from_shape_fn(n, |r| z[r] - y[r]);
    let want = d.dot(a);
    let per_row = abs.dot(&w.mapv(f64::abs)) + d.mapv(f64::abs) + 1.0;
    let scale = per_row.dot(&abs) + 1.0;
    let mut got = vec![0.0; m];
    let mut seen = 0;
    tree.linear_gradient_add(
        w.as_slice().unwrap(),
        |r, zr| {
            assert_eq!(r, seen, "rows in order");
            seen += 1;
            zr - y[r]
        },
        &mut got,
        ws,
    );
    assert_eq!(seen, n);
    assert_close(
        &got,
        want.as_slice().unwrap(),
        scale.as_slice().unwrap(),
        "grad",
    );
}

/// Every kernel on the tree of each run of `per_batch` consecutive pages
/// (and of all pages at once) against the rows they hold.
fn check_merged(rows: &SparseBatch, pages: &[TocBatch], per_batch: usize, seed: u64) {
    let mut ws = Workspace::new();
    let mut tree = DecodeTree::default();
    let mut first_row = 0;
    let runs: Vec<&[TocBatch]> = pages.chunks(per_batch).chain([pages]).collect();
    for (i, run) in runs.iter().enumerate() {
        if i + 1 == runs.len() {
            first_row = 0;
        }
        let n: usize = run.iter().map(TocBatch::n_rows).sum();
        let want = rows.slice_rows(first_row..first_row + n);
        first_row += n;
        tree.build_pages(run).unwrap();
        assert_eq!(tree.n_rows(), n);
        assert_eq!(tree.decoded_nnz(), want.nnz() as u64);
        let mut out = SparseBatch::default();
        tree.decode_into(&mut out);
        assert!(out == want, "run {i}: decodes to its pages' rows");
        // The pages' shared pairs are placed once: never more pairs than
        // the pages' trees built one by one.
        let apart: usize = run.iter().map(|p| p.tree().n_first_layer()).sum();
        assert!(tree.n_first_layer() <= apart);
        check_gradient(&want.to_dense(), &tree, &mut ws, seed + i as u64);
        check_all(&want, &mut tree, &mut ws, seed + i as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn merged_pages_match_dense_math(
        batch in finite_batch(30),
        sizes in prop::collection::vec(1usize..8, 1..4),
        per_batch in 1usize..5,
        seed in any::<u64>(),
    ) {
        prop_assume!(batch.nnz() > 0);
        let (_, pages) = segment_pages(&batch, &sizes);
        check_merged(&batch, &pages, per_batch, seed);
    }
}

#[test]
fn merged_pages_match_dense_math_on_every_dataset() {
    merged_pages_match_dense_math_on(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn merged_pages_match_dense_math_on_the_shared_datasets() {
    merged_pages_match_dense_math_on(Sets::SharedOnly);
}

/// Five 50-row pages a mini-batch, as a default file's pages make a
/// 250-row batch.
fn merged_pages_match_dense_math_on(sets: Sets) {
    for (d, name) in sets.plain() {
        let (all, _) = load(name, 750);
        let (_, pages) = segment_pages(&all, &[50]);
        check_merged(&all, &pages, 5, 1000 + d as u64);
    }
}

#[test]
fn merged_kernels_are_the_concatenated_pages_kernels() {
    let (all, _) = load("mushrooms", 300);
    let (_, pages) = segment_pages(&all, &[50, 70, 30]);
    let mut merged = BatchKernels::of_pages(&pages).unwrap();
    assert_eq!(merged.n_rows(), 300);
    let v = numbers(3, all.n_cols());
    let mut apart = Vec::new();
    for page in &pages {
        apart.extend(page.kernels().matvec(&v).unwrap());
    }
    let got = merged.matvec(&v).unwrap();
    let scale = vec![1e3; got.len()];
    assert_close(&got, &apart, &scale, "A.v merged against page by page");
}

#[test]
fn pages_of_other_dictionaries_or_self_contained_are_refused() {
    let (all, _) = load("mushrooms", 200);
    let (_, a) = segment_pages(&all.slice_rows(0..100), &[50]);
    let (_, b) = segment_pages(&all.slice_rows(100..200), &[50]);
    let mut tree = DecodeTree::default();
    let bad = |r: tocpile::Result<()>| matches!(r, Err(Error::BadArgument { .. }));
    assert!(bad(tree.build_pages::<Vec<u8>>(&[])));
    assert!(bad(tree.build_pages(&[a[0].clone(), b[0].clone()])));
    assert_eq!(tree.n_rows(), 0, "a refused build leaves no tree");
    let plain = tocpile::encode(&all.slice_rows(0..50)).unwrap();
    assert!(bad(tree.build_pages(&[a[0].clone(), plain.clone()])));
    assert!(bad(tree.build_pages(&[plain.clone(), plain.clone()])));
    // One page of any kind is its own tree.
    tree.build_pages(std::slice::from_ref(&plain)).unwrap();
    assert_eq!(tree.n_rows(), 50);
    tree.build_pages(&a[..1]).unwrap();
    assert_eq!(tree.n_rows(), 50);
    // Bytes are checked where pages are read, and again when merged:
    // every byte flip of a page is refused when read, or the merged tree
    // decodes to that page's rows followed by the next page's.
    let dict = a[0].shared_dict().unwrap();
    let next = a[1].decode();
    for at in 0..a[0].encoded_len() {
        let mut forged = a[0].as_bytes().to_vec();
        forged[at] ^= 0x5a;
        let rows = a[0].n_rows();
        let Ok(page) = TocBatch::from_bytes_shared(forged, rows, dict, &mut DecodeTree::default())
        else {
            continue;
        };
        let mut want = page.decode();
        for r in 0..next.n_rows() {
            let (cols, vals) = next.row(r);
            want.push_row(cols, vals).unwrap();
        }
        tree.build_pages(&[page, a[1].clone()]).unwrap();
        let mut out = SparseBatch::default();
        tree.decode_into(&mut out);
        assert!(out == want, "byte {at} flipped");
    }
}

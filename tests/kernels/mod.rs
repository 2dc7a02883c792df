//! Every kernel on the encoded form against plain dense math on the
//! decoded batch: proptest on random batches and a pass over every real
//! dataset, at every encoder level (the Sparse level exercises the flat,
//! tree-less path).

use ndarray::{Array1, Array2, ShapeBuilder};
use proptest::prelude::*;

use crate::codec::roundtrip::all_options;
use crate::strategy::finite_batch;
use crate::support::{assert_close, batches, load, numbers, Sets};
use tocpile::{DecodeTree, Encoder, SparseBatch, Workspace};

/// Runs every kernel of `tree` against dense math on `batch`.
fn check_all(batch: &SparseBatch, tree: &mut DecodeTree, ws: &mut Workspace, seed: u64) {
    check_products(batch, tree, ws, seed);
    let a = batch.to_dense();
    // Element-wise ops change the tree: keep them last.
    let mut scaled = tree.clone();
    scaled.scale(-2.5);
    assert_eq!(scaled.to_dense(), a.mapv(|x| x * -2.5), "A*c is exact");
    tree.square();
    assert_eq!(tree.to_dense(), a.mapv(|x| x * x), "A^2 is exact");
}

/// Every product of `tree` (and its sum, `A+c` and `A+M`) against dense
/// math on `batch`; the tree is left as it was.
fn check_products(batch: &SparseBatch, tree: &DecodeTree, ws: &mut Workspace, seed: u64) {
    let a = batch.to_dense();
    let abs = a.mapv(f64::abs);
    let (n, m) = a.dim();
    assert_eq!(tree.to_dense(), a);

    let v = Array1::from(numbers(seed, m));
    let want = a.dot(&v);
    let scale = abs.dot(&v.mapv(f64::abs));
    let got = tree.matvec(v.view(), ws);
    assert_close(
        got.as_slice().unwrap(),
        want.as_slice().unwrap(),
        scale.as_slice().unwrap(),
        "A.v",
    );

    let u = Array1::from(numbers(seed + 1, n));
    let want = u.dot(&a);
    let scale = u.mapv(f64::abs).dot(&abs);
    let got = tree.vecmat(u.view(), ws);
    assert_close(
        got.as_slice().unwrap(),
        want.as_slice().unwrap(),
        scale.as_slice().unwrap(),
        "v.A",
    );

    for p in [1, 3, 20] {
        let mm = Array2::from_shape_vec((m, p), numbers(seed + 2, m * p)).unwrap();
        let mm_f = {
            let mut f = Array2::zeros((m, p).f());
            f.assign(&mm);
            f
        };
        let want = a.dot(&mm);
        let scale = abs.dot(&mm.mapv(f64::abs));
        for layout in [mm.view(), mm_f.view()] {
            let got = tree.matmat(layout, ws);
            assert_close(
                got.as_slice().unwrap(),
                want.as_slice().unwrap(),
                scale.as_slice().unwrap(),
                "A.M",
            );
        }
        // Output into a column-major view too.
        let mut out = Array2::zeros((n, p).f());
        tree.matmat_into(mm.view(), out.view_mut(), ws);
        assert_close(
            &out.iter().copied().collect::<Vec<_>>(),
            &want.iter().copied().collect::<Vec<_>>(),
            &scale.iter().copied().collect::<Vec<_>>(),
            "A.M into F",
        );

        let ml = Array2::from_shape_vec((p, n), numbers(seed + 3, n * p)).unwrap();
        let ml_f = {
            let mut f = Array2::zeros((p, n).f());
            f.assign(&ml);
            f
        };
        let want = ml.dot(&a);
        let scale = ml.mapv(f64::abs).dot(&abs);
        for layout in [ml.view(), ml_f.view()] {
            let got = tree.left_matmat(layout, ws);
            assert_close(
                got.as_slice().unwrap(),
                want.as_slice().unwrap(),
                scale.as_slice().unwrap(),
                "M.A",
            );
        }
    }

    let total = tree.sum(ws);
    assert_close(&[total], &[a.sum()], &[abs.sum()], "sum");

    let plus = tree.add_scalar(0.5);
    assert_eq!(plus, a.mapv(|x| x + 0.5));
    let mm = Array2::from_shape_vec((n, m), numbers(seed + 4, n * m)).unwrap();
    assert_eq!(tree.add_matrix(mm.view()), &a + &mm);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn kernels_match_dense_math(batch in finite_batch(60), seed in any::<u64>()) {
        let mut ws = Workspace::new();
        for options in all_options() {
            let mut tree = Encoder::new(options).encode(&batch).unwrap().tree();
            check_all(&batch, &mut tree, &mut ws, seed);
        }
    }
}

#[test]
fn kernels_match_dense_math_on_every_dataset() {
    kernels_match_dense_math_on(Sets::Shipped);
}

#[test]
#[ignore = "needs ../shared/data (mnist5k, nycflights13, flights3m)"]
fn kernels_match_dense_math_on_the_shared_datasets() {
    kernels_match_dense_math_on(Sets::SharedOnly);
}

fn kernels_match_dense_math_on(sets: Sets) {
    // One workspace across datasets of different shapes: reuse must not
    // leak state between batches.
    let mut ws = Workspace::new();
    for (d, name) in sets.with_decimals() {
        let (all, _) = load(name, 1500);
        for options in all_options() {
            let mut encoder = Encoder::new(options);
            for (i, b) in batches(&all, 250).iter().enumerate().take(3) {
                let mut tree = encoder.encode(b).unwrap().tree();
                check_all(b, &mut tree, &mut ws, (d * 100 + i) as u64);
            }
        }
    }
}

#[test]
fn scaling_by_zero_decodes_to_an_empty_batch() {
    let b = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]).unwrap();
    let mut tree = tocpile::encode(&b).unwrap().tree();
    tree.scale(0.0);
    let mut out = SparseBatch::default();
    tree.decode_into(&mut out);
    assert_eq!(out.nnz(), 0);
    assert_eq!(out.n_rows(), 2);
}

#[test]
#[should_panic(expected = "A.v: v length is 2, expected 3")]
fn matvec_checks_dimensions() {
    let b = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0]]).unwrap();
    let tree = tocpile::encode(&b).unwrap().tree();
    tree.matvec(Array1::zeros(2).view(), &mut Workspace::new());
}

#[test]
#[should_panic(expected = "M.A: M columns is 2, expected 1")]
fn left_matmat_checks_dimensions() {
    let b = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0]]).unwrap();
    let tree = tocpile::encode(&b).unwrap().tree();
    tree.left_matmat(Array2::zeros((4, 2)).view(), &mut Workspace::new());
}

#[test]
fn pages_in_parallel_match_one_batch() {
    use tocpile::kernels::pages::{par_matvec, par_vecmat, total_rows};
    let (all, _) = load("coil2000", 600);
    let whole = all.slice_rows(0..500);
    let pages: Vec<DecodeTree> = batches(&whole, 50)
        .iter()
        .map(|b| tocpile::encode(b).unwrap().tree())
        .collect();
    assert_eq!(total_rows(&pages), 500);
    let a = whole.to_dense();
    let v = Array1::from(numbers(5, a.ncols()));
    let mut out = Array1::zeros(500);
    par_matvec(&pages, v.view(), out.view_mut());
    let want = a.dot(&v);
    let scale = a.mapv(f64::abs).dot(&v.mapv(f64::abs));
    assert_close(
        out.as_slice().unwrap(),
        want.as_slice().unwrap(),
        scale.as_slice().unwrap(),
        "pages A.v",
    );
    let u = Array1::from(numbers(6, 500));
    let mut out = Array1::from_elem(a.ncols(), f64::NAN);
    par_vecmat(&pages, u.view(), out.view_mut());
    let want = u.dot(&a);
    let scale = u.mapv(f64::abs).dot(&a.mapv(f64::abs));
    assert_close(
        out.as_slice().unwrap(),
        want.as_slice().unwrap(),
        scale.as_slice().unwrap(),
        "pages v.A",
    );
    // No pages: an empty mini-batch.
    let mut empty = Array1::from_elem(3, 1.0);
    par_vecmat(&[], Array1::zeros(0).view(), empty.view_mut());
    assert_eq!(empty.to_vec(), vec![0.0; 3]);
}

#[test]
fn every_page_form_reaches_its_kernels() {
    // The tree, flat rows and the lazy first layer are chosen per page:
    // check that the datasets exercise each (the dense checks above then
    // cover every path). Flat pages and the lazy first layer: rows of
    // distinct values with no common prefix (mnist5k's pixels are the
    // real case, below).
    let (mush, _) = load("mushrooms", 250);
    let values = numbers(11, 250 * 40);
    let mut distinct = SparseBatch::with_cols(40).unwrap();
    let cols: Vec<u32> = (0..40).collect();
    for row in values.chunks(40) {
        distinct.push_row(&cols, row).unwrap();
    }
    flat_pages_and_a_lazy_first_layer(&distinct, "distinct values");
    let tree = tocpile::encode(&mush).unwrap();
    assert!(tree.has_tree(), "mushrooms pages keep the tree");
    // `v.A` and the fused gradient add the rows' weights into two tables
    // where a node is named by more than 2.5 codes on average, one table
    // elsewhere: census_fertility's pages take the first path, mushrooms'
    // the second.
    let (census, _) = load("census_fertility", 250);
    let reused = tocpile::encode(&census).unwrap().tree();
    let once = tree.tree();
    assert!(
        2 * reused.n_codes() > 5 * reused.n_nodes(),
        "census: two tables"
    );
    assert!(
        2 * once.n_codes() <= 5 * once.n_nodes(),
        "mushrooms: one table"
    );
}

/// `rows` are stored flat by the default encoder, and the first layer of
/// their paper-layout page is most of its codes (the wide kernels evaluate
/// it lazily there).
fn flat_pages_and_a_lazy_first_layer(rows: &SparseBatch, what: &str) {
    let flat = tocpile::encode(rows).unwrap();
    assert!(!flat.has_tree(), "{what}: pages are flat");
    let paper = Encoder::new(tocpile::EncodeOptions::paper())
        .encode(rows)
        .unwrap();
    assert!(
        2 * paper.n_first_layer() > paper.n_codes(),
        "{what}: first layer {} of {} codes",
        paper.n_first_layer(),
        paper.n_codes()
    );
}

#[test]
#[ignore = "needs ../shared/data (mnist5k)"]
fn mnist5k_pages_are_flat_with_a_lazy_first_layer() {
    let (mnist, _) = load("mnist5k", 250);
    flat_pages_and_a_lazy_first_layer(&mnist, "mnist5k");
}

mod coded;
mod form;
mod gradient;
mod merged;
mod on_batch;

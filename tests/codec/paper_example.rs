//! The running example of the TOC paper: Figure 3 (tables A, B, D, I) and
//! Table 4 (the decode tree C'). Column ids are 0-based here, 1-based in
//! the paper.

use crate::support::figure3;
use tocpile::{Adaptive, EncodeOptions, Encoder, Level, TocBatch};

#[test]
fn sparse_encoding_is_table_b() {
    let b = figure3();
    assert_eq!(b.offsets(), &[0, 4, 7, 10, 12]);
    assert_eq!(b.cols(), &[0, 1, 2, 3, 0, 1, 2, 1, 2, 3, 0, 1]);
    assert_eq!(
        b.values(),
        &[1.1, 2.0, 3.0, 1.4, 1.1, 2.0, 3.0, 1.1, 3.0, 1.4, 1.1, 2.0]
    );
}

#[test]
fn logical_encoding_gives_d_i_and_table4() {
    // The paper's layout: a tree whatever its size, the first layer in
    // order of first appearance (`Adaptive::NONE`).
    for level in [Level::Logical, Level::Full] {
        let options = EncodeOptions::level(level).with_adaptive(Adaptive::NONE);
        let toc = Encoder::new(options).encode(&figure3()).unwrap();
        let tree = toc.full_tree();
        // D: R1 [1 2 3 4], R2 [6 3], R3 [5 8], R4 [6].
        let d: Vec<Vec<u32>> = (0..4).map(|r| tree.row_codes(r).to_vec()).collect();
        assert_eq!(d, vec![vec![1, 2, 3, 4], vec![6, 3], vec![5, 8], vec![6]]);
        // I, in order of first appearance: 1:1.1 2:2 3:3 4:1.4 2:1.1.
        assert_eq!(tree.n_first_layer(), 5);
        let keys: Vec<(u32, f64)> = tree.keys().collect();
        assert_eq!(
            &keys[1..6],
            &[(0, 1.1), (1, 2.0), (2, 3.0), (3, 1.4), (1, 1.1)]
        );
        // Table 4: keys and parents of nodes 6..=10.
        assert_eq!(tree.n_nodes(), 11);
        assert_eq!(
            &keys[6..],
            &[(1, 2.0), (2, 3.0), (3, 1.4), (2, 3.0), (2, 3.0)]
        );
        assert_eq!(tree.parents(), &[0, 0, 0, 0, 0, 0, 1, 2, 3, 6, 5]);
        assert_eq!(toc.n_codes(), 9);
        assert_eq!(toc.decoded_nnz(), 12);
        assert_eq!(toc.decode(), figure3());

        // The compact tree keeps the nodes codes refer to: 6 ([1:1.1, 2:2])
        // and 8 ([3:3, 4:1.4]), renumbered 6 and 7.
        let compact = toc.tree();
        assert_eq!(compact.n_nodes(), 8);
        assert_eq!(compact.parents(), &[0, 0, 0, 0, 0, 0, 1, 3]);
        let keys: Vec<(u32, f64)> = compact.keys().collect();
        assert_eq!(&keys[6..], &[(1, 2.0), (3, 1.4)]);
        let d: Vec<Vec<u32>> = (0..4).map(|r| compact.row_codes(r).to_vec()).collect();
        assert_eq!(d, vec![vec![1, 2, 3, 4], vec![6, 3], vec![5, 7], vec![6]]);
    }
}

#[test]
fn sparse_level_has_no_tree() {
    let toc = Encoder::new(EncodeOptions::level(Level::Sparse))
        .encode(&figure3())
        .unwrap();
    assert_eq!(toc.level(), Level::Sparse);
    assert_eq!(toc.n_first_layer(), 12);
    assert_eq!(toc.tree().n_nodes(), 13);
    let again = TocBatch::from_bytes(toc.as_bytes()).unwrap();
    assert_eq!(again.decode(), figure3());
}

#[test]
fn levels_shrink_the_example() {
    let size = |level| {
        Encoder::new(EncodeOptions::level(level))
            .encode(&figure3())
            .unwrap()
            .encoded_len()
    };
    let (s, l, f) = (size(Level::Sparse), size(Level::Logical), size(Level::Full));
    assert!(l < s, "logical {l} >= sparse {s}");
    assert!(f < l, "full {f} >= logical {l}");
}

#[test]
fn the_example_is_too_small_for_a_tree_to_pay() {
    // Five distinct pairs in twelve entries: flat rows of packed columns
    // and value ids are smaller than the tree's codes plus first layer.
    let tree = Encoder::new(EncodeOptions::default().with_adaptive(Adaptive::NONE))
        .encode(&figure3())
        .unwrap();
    let adaptive = Encoder::new(EncodeOptions::default())
        .encode(&figure3())
        .unwrap();
    assert!(tree.has_tree());
    assert!(!adaptive.has_tree());
    assert_eq!(adaptive.level(), Level::Full);
    assert!(adaptive.encoded_len() < tree.encoded_len());
    let tree = adaptive.tree();
    assert_eq!(tree.n_first_layer(), 12);
    assert_eq!(tree.n_codes(), 12);
    assert_eq!(adaptive.decode(), figure3());
}

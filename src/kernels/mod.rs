//! Matrix kernels on the encoded form (TOC paper section 4, appendix B).
//!
//! Every kernel runs on a [`DecodeTree`](crate::DecodeTree): the prefix
//! tree `C'` rebuilt once per batch. The tree does not depend on the model,
//! so one tree serves `A.v` and then `v.A` in the same SGD step (every GLM
//! gradient needs both) without a rebuild, and
//! [`TocBatch::from_bytes_with_tree`](crate::TocBatch::from_bytes_with_tree)
//! builds it while validating.
//!
//! | op | method | paper |
//! |---|---|---|
//! | `A*c`, `A^2` | [`DecodeTree::scale`](crate::DecodeTree::scale), [`square`](crate::DecodeTree::square) | Algorithm 3: first layer only |
//! | sum of all elements | [`DecodeTree::sum`](crate::DecodeTree::sum) | |
//! | `A.v` | [`DecodeTree::matvec_into`](crate::DecodeTree::matvec_into) | Algorithm 4 |
//! | `v.A` | [`DecodeTree::vecmat_into`](crate::DecodeTree::vecmat_into) | Algorithm 5 |
//! | `(f(A.w)).A` | [`DecodeTree::linear_gradient_add`](crate::DecodeTree::linear_gradient_add) | Algorithms 4 and 5 fused (equation 3) |
//! | `A.M` | [`DecodeTree::matmat_into`](crate::DecodeTree::matmat_into) | Algorithm 7 |
//! | `M.A` | [`DecodeTree::left_matmat_into`](crate::DecodeTree::left_matmat_into) | Algorithm 8 |
//! | `A+c`, `A+M` | [`DecodeTree::add_scalar`](crate::DecodeTree::add_scalar), [`add_matrix`](crate::DecodeTree::add_matrix) | Algorithm 6: full decode |
//!
//! Departures from the paper, each measured with
//! `tocpile bench kernels` (time as a ratio to CSR):
//! - The tree keeps only the nodes some code refers to (see
//!   [`DecodeTree`](crate::DecodeTree)): 5% to 60% of the nodes Algorithm 2
//!   creates. Kernels then run one pass over these nodes and one over `D`.
//!   A single fused pass over `D` on the full tree (a new node's value
//!   computed the moment the scan creates it) was tried first and was
//!   slower everywhere (mnist5k `A.v`: 2.7x CSR fused, 1.4x compact).
//! - `A.v` and `v.A` precompute `value * v[column]` once per first-layer
//!   pair; a node then costs one add, not a multiply and a column gather.
//! - `A.M` and `M.A` choose per batch: store a `p`-vector for every pair
//!   and node, or, when pairs barely repeat (the first layer is more than
//!   half as large as `D`, as on mnist5k), store vectors for created nodes
//!   only and evaluate pairs where they are used, as CSR does (mnist5k
//!   `A.M`: 2.4x CSR stored, 1.3x chosen). Inner loops run over the
//!   contiguous `p` values of a node.
//! - Row sums (`A.v`) use four accumulators (`sum4`), as do the dot
//!   products of every other format: one chain of additions made long rows
//!   latency-bound (mnist5k `A.v`: 1.9x CSR before, 1.0 to 1.4x after,
//!   CSR itself gaining too).
//! - `M.A` with stored node weights adds each first-layer column's
//!   `q` values straight into a row-major `out` (`q x n_cols`, the usual
//!   layout), touching only the page's columns; otherwise (lazy first
//!   layer, flat pages, other layouts) it accumulates into a column-major
//!   scratch and writes it once in `out`'s layout, as CSR does
//!   (nycflights13, 4,195 columns: 1.1x CSR with the scratch, 0.4x
//!   direct).
//! - Flat pages (`Level::Full` stores a page as value-indexed rows when the
//!   tree does not pay, `docs/FORMAT.md`) run CSR loops over their pairs
//!   (`flat.rs`; mnist5k `A.v` 1.7x CSR through the identity codes, 1.0x).
//! - `v.A` sums the runs of one column's first-layer pairs in a register
//!   (the encoder sorts the first layer by column), and, where a
//!   node is named by more than 2.5 codes on average, adds even and odd
//!   rows' weights into two tables, so that the same address is not
//!   updated back to back (nycflights13 `v.A`: 2.1x to 1.8x CSR;
//!   `docs/archive/RESULTS-HISTORY.md` section 20).
//! - A linear model's gradient (`A.w`, a slope per row, `v.A` added into
//!   the gradient) is one kernel on one tree: each row's slope is
//!   scattered into the node weights right after its margin, with no
//!   vector between the products (0 to 25% faster than the two kernels,
//!   `docs/archive/RESULTS-HISTORY.md` section 16).
//! - A batch whose tree costs more work than its rows (what `v.A` visits
//!   on the tree: every node's weight, the codes, a parent and a key per
//!   created node, the first layer; above the entries) runs on the rows, written out once when the batch is
//!   encoded or its kernels are asked for (`form.rs`): numeric
//!   columns repeat few sequences, and there the tree's passes cost more
//!   than CSR's one (nycflights13 `v.A`: 1.9x CSR on the tree, 0.9x on
//!   the rows; `docs/archive/RESULTS-HISTORY.md` section 30). A flat batch's `A*c`
//!   records the factor for its kernels to apply, so scaling stays
//!   `O(1)` on every batch.
//! - Measured and dropped: evaluating first-layer pairs at their use in
//!   `A.v` and `v.A` (a branch per code that the predictor cannot learn:
//!   `A.v` 1.3x to 3.2x CSR on nycflights13); unchecked indexing in the
//!   tree's `A.v` (15 to 20% faster on nycflights13 and flights3m, still
//!   above 1.2x CSR on nycflights13: not worth `unsafe`). The loader's
//!   pair-coded rows (`formats/coded.rs`) do index unchecked: there the
//!   checks were most of the gap to CSR (coil2000 `A.v` 1.30-1.64x CSR
//!   with them, 0.89-1.10x without; `docs/archive/RESULTS-HISTORY.md`
//!   section 43), and the bounds are checked once per table and batch.
//!
//! All scratch memory lives in a [`Workspace`]; after the first call on a
//! batch of a given size the kernels allocate nothing.
//!
//! The products, each against plain dense math on the same rows:
//!
//! ```
//! use tocpile::ndarray::{array, Array2};
//! use tocpile::{encode, DecodeTree, SparseBatch, TocBatch, Workspace};
//!
//! fn close<'a>(x: impl IntoIterator<Item = &'a f64>, y: impl IntoIterator<Item = &'a f64>) -> bool {
//!     x.into_iter().zip(y).all(|(p, q)| (p - q).abs() < 1e-12)
//! }
//!
//! // The TOC paper's running example (Figure 3).
//! let rows = SparseBatch::from_dense_rows(4, &[
//!     [1.1, 2.0, 3.0, 1.4],
//!     [1.1, 2.0, 3.0, 0.0],
//!     [0.0, 1.1, 3.0, 1.4],
//!     [1.1, 2.0, 0.0, 0.0],
//! ])?;
//! let bytes = encode(&rows)?.into_bytes();
//! // Validating the bytes builds the decode tree once; every product runs on it.
//! let mut tree = DecodeTree::default();
//! TocBatch::from_bytes_with_tree(&bytes[..], &mut tree)?;
//! let a = tree.to_dense(); // for the check only
//! let mut ws = Workspace::new();
//!
//! let v = array![1.0, -2.0, 0.5, 3.0];
//! assert!(close(&tree.matvec(v.view(), &mut ws), &a.dot(&v))); // A.v (Algorithm 4)
//! let u = array![1.0, 0.0, -1.0, 2.0];
//! assert!(close(&tree.vecmat(u.view(), &mut ws), &u.dot(&a))); // v.A (Algorithm 5)
//! let m = Array2::from_shape_fn((4, 3), |(i, j)| (3 * i + j) as f64 - 5.0);
//! assert!(close(&tree.matmat(m.view(), &mut ws), &a.dot(&m))); // A.M (Algorithm 7)
//! let l = Array2::from_shape_fn((2, 4), |(i, j)| (i + 2 * j) as f64);
//! assert!(close(&tree.left_matmat(l.view(), &mut ws), &l.dot(&a))); // M.A (Algorithm 8)
//! assert!((tree.sum(&mut ws) - a.sum()).abs() < 1e-12);
//! tree.scale(2.0); // A*c: the first layer only (Algorithm 3)
//! assert!(close(&tree.to_dense(), &(&a * 2.0)));
//! # Ok::<(), tocpile::Error>(())
//! ```

mod flat;
mod form;
mod fused;
pub(crate) mod layout;
mod on_batch;
#[doc(hidden)]
pub mod pages;

pub use on_batch::BatchKernels;
mod scalar;
mod toc;
mod wide;

/// Reusable scratch memory for the kernels. One per thread.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    /// Per-node partial results (`nodes x p`).
    pub(crate) node: Vec<f64>,
    /// Per-first-layer-pair results (`|I| x p`).
    pub(crate) pair: Vec<f64>,
    /// A copy of the small operand in the layout the kernel wants.
    pub(crate) operand: Vec<f64>,
    /// Per-row values between two kernels (the margins, then the slopes,
    /// of a linear gradient computed by separate kernels).
    pub(crate) rows: Vec<f64>,
}

impl Workspace {
    /// An empty workspace; it grows to the largest batch it serves.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Clears `buf` and resizes it to `len` zeros, reusing its allocation.
pub(crate) fn zeroed(buf: &mut Vec<f64>, len: usize) -> &mut [f64] {
    buf.clear();
    buf.resize(len, 0.0);
    buf
}

/// `buf` grown to at least `len` (new elements zero) and its first `len`
/// elements, left as the previous call wrote them: for tables whose every
/// element is written before it is read, so that a call does not pay a
/// zero fill (`A.M` on nycflights13 spent a third of its time clearing a
/// 176 KB table it then overwrote).
pub(crate) fn scratch(buf: &mut Vec<f64>, len: usize) -> &mut [f64] {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    &mut buf[..len]
}

/// `sum(term(i) for i in 0..n)` with four independent accumulators, so a
/// long row is bound by loads rather than by the latency of one chain of
/// additions (mnist5k rows hold 150 entries). Every format's row dot
/// products use it, so ratios between formats compare like with like.
#[inline]
pub(crate) fn sum4(n: usize, mut term: impl FnMut(usize) -> f64) -> f64 {
    let mut acc = [0.0f64; 4];
    let whole = n - n % 4;
    let mut i = 0;
    while i < whole {
        acc[0] += term(i);
        acc[1] += term(i + 1);
        acc[2] += term(i + 2);
        acc[3] += term(i + 3);
        i += 4;
    }
    let mut total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for j in whole..n {
        total += term(j);
    }
    total
}

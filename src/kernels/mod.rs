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
//! | `A.M` | [`DecodeTree::matmat_into`](crate::DecodeTree::matmat_into) | Algorithm 7 |
//! | `M.A` | [`DecodeTree::left_matmat_into`](crate::DecodeTree::left_matmat_into) | Algorithm 8 |
//! | `A+c`, `A+M` | [`DecodeTree::add_scalar`](crate::DecodeTree::add_scalar), [`add_matrix`](crate::DecodeTree::add_matrix) | Algorithm 6: full decode |
//!
//! Departures from the paper:
//! - Right multiplications make one pass over `D`: nodes are created in
//!   the order the codes are scanned, so a new node's partial product
//!   (its parent's plus its key's) is computed at the moment it is created,
//!   instead of a separate scan of `C'` first (Algorithm 4 lines 5-7).
//! - Per-pair products `value * v[column]` are computed once per
//!   first-layer pair; a node then costs one add, not a multiply-add with a
//!   column gather.
//! - For `A.M` and `M.A` the inner loop runs over the small dimension `p`
//!   with the node's `p` partial results contiguous.
//!
//! All scratch memory lives in a [`Workspace`]; after the first call on a
//! batch of a given size the kernels allocate nothing.

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

//! The form a batch's kernels run on, chosen per batch by the work each
//! form costs: the decode tree (TOC paper section 4) when its codes and
//! nodes are fewer than the batch's entries, else the rows themselves,
//! written out once from the tree as flat pairs (the CSR loops of
//! `flat.rs`).
//!
//! Departure from the paper, which runs every product on the tree: a tree
//! saves work only where rows share sequences. On pages of numeric
//! columns (the flight sets, loan-like data) most codes name single pairs
//! and the tree's three passes (codes, nodes, first layer) cost more than
//! one pass over the entries: `v.A` was 1.9x CSR on nycflights13 at
//! 250-row batches, and 2.5 to 3x on the 50-row version-3 pages the
//! loader trains on, whose trees also hold the ancestors of every shared
//! node they use (`docs/archive/RESULTS-HISTORY.md` sections 25 and 30).
//!
//! Where: a batch encoded from rows (`TocPage::encode`: a copy of them),
//! `TocBatch::kernels` and `BatchKernels::of_pages` (a walk of the tree).
//! Not a page the loader loads: page-mode training waits on its loader,
//! and a walk there cost more than the kernels saved (section 30). The
//! page bytes stay the encoded form. A flat batch holds 20 bytes an entry
//! (column, value, and a parent and a code kept for `parents` and
//! `row_codes`).

use crate::codec::DecodeTree;

impl DecodeTree {
    /// Element visits of `v.A` on the tree (the kernel every gradient
    /// ends with): a weight set for every node (pairs and created nodes),
    /// one per code, a parent and a key per created node, and one per
    /// pair into the result. `A.v` visits fewer (no fill, one per pair);
    /// counting `v.A`'s sends the batches near the line to their rows,
    /// where `M.A`, whose per-node vectors make the fill and the
    /// backward pass dearer still, was 1.5x CSR on coil2000's version-3
    /// trees.
    fn tree_work(&self) -> u64 {
        let pairs = self.n_first_layer() as u64;
        let created = self.n_nodes().saturating_sub(self.pair_cols.len()) as u64;
        self.n_codes() as u64 + 3 * created + 2 * pairs
    }

    /// Whether the rows are the cheaper form for the kernels: a flat batch
    /// already is; a tree whose work exceeds its entries is rewritten.
    fn rows_are_cheaper(&self) -> bool {
        !self.flat && self.tree_work() > self.decoded_nnz
    }

    /// Not part of the API (hidden): used by the benches; may change in
    /// any release.
    ///
    /// Puts the batch in the form its kernels run fastest on (see the
    /// module docs): a tree that costs more work than its entries becomes
    /// the flat rows. Products are unchanged; the tree's node arrays are
    /// gone afterwards (the first layer is the entries, in row order).
    #[doc(hidden)]
    pub fn settle_for_kernels(&mut self) {
        if self.rows_are_cheaper() {
            self.flatten();
        }
    }

    /// Rewrites the tree as a flat batch: first-layer pair `j + 1` is the
    /// `j`-th entry in row order, codes `1..=nnz`.
    fn flatten(&mut self) {
        let nnz = self.decoded_nnz as usize;
        // The entry count passed the page's resource check when the tree
        // was built (`limits::check_page_nnz`): these are the arrays a
        // decoded batch of the page takes.
        let mut cols = vec![0u32; nnz + 1];
        let mut vals = vec![0.0f64; nnz + 1];
        let mut pos = 1;
        for code in self.codes.iter_mut() {
            let d = self.depth[*code as usize] as usize;
            // Walk up from the node, writing its sequence right to left.
            let mut node = *code as usize;
            for k in (pos..pos + d).rev() {
                let pair = self.key[node] as usize;
                cols[k] = self.pair_cols[pair];
                vals[k] = self.pair_vals[pair];
                node = self.parent[node] as usize;
            }
            pos += d;
            // Reused as each code's end, so that the row offsets follow.
            *code = (pos - 1) as u32;
        }
        debug_assert_eq!(pos, nnz + 1);
        for start in self.row_starts.iter_mut().skip(1) {
            // A row's codes end where its last code's entries end.
            let end = *start as usize;
            *start = if end == 0 { 0 } else { self.codes[end - 1] };
        }
        self.install_rows(cols, vals);
    }

    /// Rewrites the tree as the flat batch `rows` (the same rows: for a
    /// batch just encoded from them, a copy instead of a walk of the
    /// tree).
    pub(crate) fn settle_with_rows(&mut self, rows: &crate::sparse::SparseBatch) {
        if !self.rows_are_cheaper() {
            return;
        }
        if rows.nnz() as u64 != self.decoded_nnz || rows.n_rows() != self.n_rows() {
            // Not the rows the tree holds (the encoder drops explicit
            // zeros): the tree's own.
            return self.flatten();
        }
        let (offsets, cols, vals) = (rows.offsets(), rows.cols(), rows.values());
        let mut c = Vec::with_capacity(cols.len() + 1);
        c.push(0u32);
        c.extend_from_slice(cols);
        let mut v = Vec::with_capacity(vals.len() + 1);
        v.push(0.0f64);
        v.extend_from_slice(vals);
        self.row_starts.clear();
        self.row_starts.extend(offsets.iter().map(|&o| o as u32));
        self.install_rows(c, v);
    }

    /// The flat batch of entries `cols`, `vals` (index 0 the root's) with
    /// `row_starts` already the rows' entry offsets.
    fn install_rows(&mut self, cols: Vec<u32>, vals: Vec<f64>) {
        let nnz = cols.len() - 1;
        self.pair_cols = cols;
        self.pair_vals = vals;
        self.codes.clear();
        self.codes.extend(1..=nnz as u32);
        // Nodes are the pairs, each the root's child; the flat kernels,
        // the decode and `keys` need no key, first pair or depth per node
        // (12 bytes an entry freed: flights3m's pages held in memory, 795
        // MB with them, about 580 without).
        self.parent.clear();
        self.parent.resize(nnz + 1, 0);
        self.key = Vec::new();
        self.first = Vec::new();
        self.depth = Vec::new();
        self.flat = true;
        self.pending_scale = None;
    }
}

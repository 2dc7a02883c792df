//! The decode tree `C'` (TOC paper 4.1.2, Algorithm 2, Table 4), rebuilt
//! from the first layer `I` and the encoded table `D`.
//!
//! Node 0 is the root; nodes `1..=|I|` are the first layer, in the order of
//! `I`; every further node is created while scanning `D`: between two
//! consecutive codes `a, b` of a row, a node with parent `a` whose key is the
//! first pair of `b`'s sequence. Per node we keep the parent, the key (as a
//! first-layer id), the first pair of its sequence (`F` in Algorithm 2) and
//! its depth (sequence length), which lets [`DecodeTree::decode_into`] write
//! each sequence backwards into place without a reversal buffer.
//!
//! Departures from the paper:
//! - Building the tree is also the content check of an untrusted batch:
//!   every code must name a node that existed when its row started (the
//!   encoder never refers to a node created in the same row, since its
//!   sequence starts left of the current column), and consecutive codes must
//!   continue the row's strictly ascending columns. One O(|I| + |D|) pass
//!   serves validation and decoding, so a batch validated with
//!   [`TocBatch::from_bytes_with_tree`](super::TocBatch::from_bytes_with_tree)
//!   needs no second build before the kernels run.
//! - After validation, nodes that no code refers to are dropped (most of
//!   them, on real data): see `DecodeTree::grow`. The complete `C'`
//!   of Algorithm 2 remains available from
//!   [`TocBatch::full_tree`](super::TocBatch::full_tree).
//! - Flat batches (level `Sparse`) have no tree: the pairs are the rows, and
//!   the tree holds the first layer only, with the codes `1..=nnz`.

use super::layout::Layout;
use crate::error::{Error, Result};
use crate::limits::try_reserve;
use crate::sparse::SparseBatch;
use crate::wire::unpack_into;

/// The rebuilt prefix tree of one batch, plus its unpacked codes: the
/// structure every kernel on the encoded form runs on.
///
/// Reusable: [`DecodeTree::default`] allocates nothing, and each rebuild
/// reuses the previous allocations.
#[derive(Debug, Clone, Default)]
pub struct DecodeTree {
    pub(crate) n_cols: usize,
    /// Column of each first-layer pair; index 0 is a placeholder for the root.
    pub(crate) pair_cols: Vec<u32>,
    /// Value of each first-layer pair; index 0 is `0.0` for the root.
    pub(crate) pair_vals: Vec<f64>,
    /// Parent node of each node (root: 0).
    pub(crate) parent: Vec<u32>,
    /// First-layer id of each node's key (root: 0).
    pub(crate) key: Vec<u32>,
    /// First-layer id of the first pair of each node's sequence.
    pub(crate) first: Vec<u32>,
    /// Sequence length of each node (root: 0).
    pub(crate) depth: Vec<u32>,
    /// The encoded table `D`, rows concatenated.
    pub(crate) codes: Vec<u32>,
    /// Row `i` is `codes[row_starts[i]..row_starts[i + 1]]`.
    pub(crate) row_starts: Vec<u32>,
    pub(crate) decoded_nnz: u64,
    /// Set by element-wise kernels that may turn values into zeros, which
    /// decoding must then drop.
    pub(crate) zeros_possible: bool,
    /// A flat batch: no nodes beyond the first layer, whose pairs are the
    /// entries in row order (codes `1..=nnz`), so kernels run CSR loops.
    pub(crate) flat: bool,
    /// `A*c` of a flat batch not yet applied to its values (`None`: 1):
    /// scaling a flat batch records the factor in O(1), as scaling a
    /// tree's first layer is, and every kernel applies it (see
    /// [`factor`](Self::factor)).
    pub(crate) pending_scale: Option<f64>,
    pub(crate) scratch: Vec<u32>,
    /// Decoded escape-coded elements (column gaps), scratch.
    pub(super) gaps: Vec<u64>,
}

impl DecodeTree {
    /// Whether the batch is flat: its first layer is its entries in row
    /// order and the kernels run CSR loops over them (`kernels/form.rs`).
    pub fn is_flat(&self) -> bool {
        self.flat
    }

    /// Number of rows of the batch.
    pub fn n_rows(&self) -> usize {
        self.row_starts.len().saturating_sub(1)
    }

    /// Number of columns of the batch.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Number of tree nodes, the root included.
    pub fn n_nodes(&self) -> usize {
        self.parent.len()
    }

    /// Size of the first layer `I`.
    pub fn n_first_layer(&self) -> usize {
        self.pair_cols.len().saturating_sub(1)
    }

    /// Number of codes in the encoded table `D`.
    pub fn n_codes(&self) -> usize {
        self.codes.len()
    }

    /// Number of non-zero entries of the decoded batch.
    pub fn decoded_nnz(&self) -> u64 {
        self.decoded_nnz
    }

    /// Heap bytes the tree holds: every array's allocation, scratch
    /// included. After validation it is typically several times the
    /// encoded bytes (it holds the codes and pairs unpacked, and per-node
    /// arrays).
    pub fn heap_bytes(&self) -> usize {
        let u32s = [
            &self.pair_cols,
            &self.parent,
            &self.key,
            &self.first,
            &self.depth,
            &self.codes,
            &self.row_starts,
            &self.scratch,
        ];
        4 * u32s.iter().map(|v| v.capacity()).sum::<usize>()
            + 8 * (self.pair_vals.capacity() + self.gaps.capacity())
    }

    /// Trims each array whose capacity is over twice its length (plus a
    /// few entries): a tree reused from a pool keeps the capacity of its
    /// predecessors, and trimming every array of every page cost a
    /// reallocation each there and another when the next, larger page
    /// grew it again (the streamed path's malloc share). The slack kept
    /// is counted by [`heap_bytes`](Self::heap_bytes); a fresh tree
    /// (resident pages) is built at about its final sizes.
    pub(crate) fn trim(&mut self) {
        fn fit<T>(v: &mut Vec<T>) {
            if v.capacity() > 2 * v.len() + 64 {
                v.shrink_to_fit();
            }
        }
        fit(&mut self.pair_cols);
        fit(&mut self.pair_vals);
        fit(&mut self.parent);
        fit(&mut self.key);
        fit(&mut self.first);
        fit(&mut self.depth);
        fit(&mut self.codes);
        fit(&mut self.row_starts);
    }

    /// Swaps the build's scratch arrays with `scratch`: a loader thread
    /// lends one pair to every tree it builds rather than each tree
    /// allocating (and then freeing) its own.
    pub(crate) fn swap_scratch(&mut self, scratch: &mut (Vec<u32>, Vec<u64>)) {
        std::mem::swap(&mut self.scratch, &mut scratch.0);
        std::mem::swap(&mut self.gaps, &mut scratch.1);
    }

    /// Parent of every node (Table 4's "ParentIndex"; the root's is 0).
    pub fn parents(&self) -> &[u32] {
        &self.parent
    }

    /// Key of every node as `(column, value)`; the root's is `(0, 0.0)`.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = (u32, f64)> + '_ {
        // A flat batch's nodes are its pairs (its key array may be gone:
        // see `settle_for_kernels`).
        (0..self.n_nodes()).map(|n| {
            let k = if self.flat { n } else { self.key[n] as usize };
            (self.pair_cols[k], self.pair_vals[k] * self.factor())
        })
    }

    /// The codes of row `i`.
    ///
    /// # Panics
    /// If `i >= n_rows()`.
    pub fn row_codes(&self, i: usize) -> &[u32] {
        &self.codes[self.row_starts[i] as usize..self.row_starts[i + 1] as usize]
    }

    /// Rebuilds the tree from a structurally valid blob, checking every
    /// content rule on the way (see the module docs for the order).
    ///
    /// With `compact`, nodes that no code refers to are dropped afterwards
    /// (see `DecodeTree::grow`).
    pub(crate) fn build(&mut self, blob: &[u8], layout: &Layout, compact: bool) -> Result<()> {
        self.n_cols = layout.n_cols;
        self.zeros_possible = false;
        self.flat = !layout.has_tree();
        self.load_rows(blob, layout)?;
        self.load_pairs(blob, layout)?;
        if layout.has_tree() {
            self.grow(compact)
        } else {
            self.check_flat()
        }
    }

    /// Algorithm 2, phase II, keeping only the nodes some code refers to,
    /// with the same content checks as [`grow`](Self::grow).
    ///
    /// Algorithm 2 creates a node between every two codes of a row, but
    /// most are never used by a later row: on 250-row batches of the shared
    /// datasets only 5% (flights3m) to 60% (mushrooms) of the created nodes
    /// are. An unused node contributes to no row, and every ancestor of a
    /// used node is itself a code (the parent of a created node is the code
    /// before it), so the used nodes form a tree of their own. Kernels then
    /// touch only nodes that matter. Node order (parents before children)
    /// is kept; first-layer ids do not change.
    ///
    /// One pass marks the created ids that appear among the codes; the
    /// build then stores a created node only when it is marked and rewrites
    /// each code to its compact id as it goes. Limits and error positions
    /// are those of the full tree, so both builds accept the same blobs.
    ///
    /// Without `compact` every created id is marked, so every node is kept
    /// with its Algorithm 2 id: the complete `C'` of Table 4.
    fn grow(&mut self, compact: bool) -> Result<()> {
        let n_first = self.pair_cols.len();
        let n_nodes = self.count_nodes()?;
        let n_created = n_nodes - n_first;
        // new_id[id - n_first] for created ids: 0 = unused, UNASSIGNED =
        // used but not yet built, else the compact id (>= n_first >= 1).
        let mut new_id = std::mem::take(&mut self.scratch);
        new_id.clear();
        let used = if compact {
            new_id.resize(n_created, 0);
            let mut used = 0usize;
            for &c in &self.codes {
                // Out-of-range codes are reported by the loop below, in order.
                if let Some(slot) = (c as usize).checked_sub(n_first) {
                    if let Some(m) = new_id.get_mut(slot) {
                        used += (*m == 0) as usize;
                        *m = UNASSIGNED;
                    }
                }
            }
            used
        } else {
            new_id.resize(n_created, UNASSIGNED);
            n_created
        };
        self.reset_first_layer(n_first + used);
        for v in [
            &mut self.parent,
            &mut self.key,
            &mut self.first,
            &mut self.depth,
        ] {
            v.resize(n_first + used, 0);
        }
        let nodes = Nodes {
            parent: &mut self.parent,
            key: &mut self.key,
            first: &mut self.first,
            depth: &mut self.depth,
        };
        let grown = nodes.grow(
            &self.pair_cols,
            &self.row_starts,
            &mut self.codes,
            &mut new_id,
        );
        new_id.clear();
        self.scratch = new_id;
        self.decoded_nnz = grown?;
        Ok(())
    }

    /// Node count of the full tree: root, first layer, and one per code
    /// that is not first in its row. Errors if ids would not fit a `u32`.
    fn count_nodes(&self) -> Result<usize> {
        let n_first = self.pair_cols.len();
        let non_empty = self.row_starts.windows(2).filter(|w| w[1] > w[0]).count();
        let n_nodes = n_first as u64 + self.codes.len() as u64 - non_empty as u64;
        if n_nodes > u32::MAX as u64 {
            return Err(Error::TooLarge {
                what: "prefix tree nodes",
                value: n_nodes,
                max: u32::MAX as u64,
            });
        }
        Ok(n_nodes as usize)
    }

    /// Unpacks the row lengths into `row_starts` and the codes (or, for a
    /// flat batch, the identity codes `1..=nnz`).
    pub(super) fn load_rows(&mut self, blob: &[u8], layout: &Layout) -> Result<()> {
        self.pending_scale = None;
        if let Some(row_ids) = layout.row_ids {
            return self.load_row_ids(blob, layout, row_ids);
        }
        let lens = &layout.row_lengths;
        unpack_into(
            lens.payload(blob),
            lens.width,
            lens.count,
            &mut self.scratch,
        );
        let total: u64 = self.scratch.iter().map(|&l| l as u64).sum();
        let (what, expected) = match layout.codes {
            Some(codes) => ("sum of row lengths (number of codes)", codes.count),
            None => ("sum of row lengths (number of pairs)", layout.n_pairs()),
        };
        if total != expected as u64 {
            return Err(Error::LengthMismatch {
                what,
                expected: expected as u64,
                found: total,
            });
        }
        self.row_starts.clear();
        self.row_starts.reserve(self.scratch.len() + 1);
        self.row_starts.push(0);
        let mut acc = 0u32;
        for &l in &self.scratch {
            acc += l; // cannot overflow: the total fits in a packed count
            self.row_starts.push(acc);
        }
        match layout.codes {
            Some(codes) => unpack_into(
                codes.payload(blob),
                codes.width,
                codes.count,
                &mut self.codes,
            ),
            None => {
                self.codes.clear();
                self.codes.extend(1..=layout.n_pairs() as u32);
            }
        }
        Ok(())
    }

    pub(crate) fn reset_first_layer(&mut self, capacity: usize) {
        for v in [
            &mut self.parent,
            &mut self.key,
            &mut self.first,
            &mut self.depth,
        ] {
            v.clear();
            v.reserve(capacity);
        }
        self.fill_first_layer();
    }

    /// [`reset_first_layer`](Self::reset_first_layer) for a tree whose
    /// size the input's bytes do not bound (a page's part of a shared
    /// dictionary): [`Error::OutOfMemory`] rather than an abort.
    pub(crate) fn try_reset_first_layer(&mut self, capacity: usize) -> Result<()> {
        for v in [
            &mut self.parent,
            &mut self.key,
            &mut self.first,
            &mut self.depth,
        ] {
            v.clear();
            try_reserve(v, capacity, "a page's tree")?;
        }
        self.fill_first_layer();
        Ok(())
    }

    /// The root and the first layer, in arrays cleared and reserved.
    fn fill_first_layer(&mut self) {
        let n_first = self.pair_cols.len();
        self.parent.resize(n_first, 0);
        self.key.extend(0..n_first as u32);
        self.first.extend(0..n_first as u32);
        self.depth.push(0);
        self.depth.resize(n_first, 1);
    }

    /// A flat batch: no nodes beyond the first layer; rows must still have
    /// strictly ascending columns.
    fn check_flat(&mut self) -> Result<()> {
        self.reset_first_layer(self.pair_cols.len());
        for row in 0..self.n_rows() {
            let (s, e) = (
                self.row_starts[row] as usize,
                self.row_starts[row + 1] as usize,
            );
            // Codes are 1..=nnz, so pair j of the batch is first-layer id j + 1.
            let cols = &self.pair_cols[s + 1..e + 1];
            for j in 1..cols.len() {
                if cols[j - 1] >= cols[j] {
                    return Err(Error::ColumnsNotAscending {
                        row,
                        position: j,
                        prev: cols[j - 1] as u64,
                        col: cols[j] as u64,
                    });
                }
            }
        }
        self.decoded_nnz = self.codes.len() as u64;
        Ok(())
    }

    /// Decodes the batch into `out` (Algorithm 6's decoding step), reusing
    /// its allocations.
    ///
    /// # Panics
    /// If the system refuses the memory (an abort, as for any `Vec`): use
    /// [`try_decode_into`](Self::try_decode_into) where the batch's size
    /// comes from untrusted input.
    pub fn decode_into(&self, out: &mut SparseBatch) {
        if let Err(e) = self.try_decode_into(out) {
            panic!("{e}");
        }
    }

    /// [`decode_into`](Self::decode_into), with every allocation fallible.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the system
    /// refuses the decoded batch's memory (`out` is then empty).
    pub fn try_decode_into(&self, out: &mut SparseBatch) -> Result<()> {
        const DECODED: &str = "a decoded batch";
        let nnz = self.decoded_nnz as usize;
        let (_, mut offsets, mut cols, mut vals) = std::mem::take(out).into_parts();
        offsets.clear();
        cols.clear();
        vals.clear();
        try_reserve(&mut offsets, self.n_rows() + 1, DECODED)?;
        try_reserve(&mut cols, nnz, DECODED)?;
        try_reserve(&mut vals, nnz, DECODED)?;
        offsets.push(0usize);
        cols.resize(nnz, 0);
        vals.resize(nnz, 0.0);
        let mut pos = 0usize;
        let factor = self.factor();
        if self.flat {
            // Entry j is pair j + 1, rows in order.
            for (k, (c, v)) in cols.iter_mut().zip(vals.iter_mut()).enumerate() {
                *c = self.pair_cols[k + 1];
                *v = self.pair_vals[k + 1] * factor;
            }
            offsets.extend(self.row_starts[1..].iter().map(|&s| s as usize));
        }
        for row in (0..self.n_rows()).filter(|_| !self.flat) {
            for &code in self.row_codes(row) {
                let d = self.depth[code as usize] as usize;
                let mut node = code as usize;
                // Walk up from the node, writing its sequence right to left.
                for k in (pos..pos + d).rev() {
                    let pair = self.key[node] as usize;
                    cols[k] = self.pair_cols[pair];
                    vals[k] = self.pair_vals[pair] * factor;
                    node = self.parent[node] as usize;
                }
                pos += d;
            }
            offsets.push(pos);
        }
        *out = if self.zeros_possible {
            SparseBatch::from_csr(self.n_cols, offsets, cols, vals)
                .expect("tree rows are valid; from_csr only drops the zeros")
        } else {
            SparseBatch::from_parts_unchecked(self.n_cols, offsets, cols, vals)
        };
        Ok(())
    }
}

/// Marks a created id that a code uses but that has not been built yet.
const UNASSIGNED: u32 = u32::MAX;

/// The node arrays of a compact tree being built, pre-sized to the nodes
/// that will be kept, as plain slices so the hot loop indexes registers
/// rather than reloading `Vec` fields after every push.
struct Nodes<'a> {
    parent: &'a mut [u32],
    key: &'a mut [u32],
    first: &'a mut [u32],
    depth: &'a mut [u32],
}

impl Nodes<'_> {
    /// The loop of [`DecodeTree::grow`]: checks every code, stores
    /// the created nodes marked in `new_id`, rewrites codes to compact ids
    /// and returns the decoded non-zero count.
    fn grow(
        self,
        pair_cols: &[u32],
        row_starts: &[u32],
        codes: &mut [u32],
        new_id: &mut [u32],
    ) -> Result<u64> {
        let n_first = pair_cols.len();
        let mut next = n_first as u32;
        let mut created = n_first as u32;
        let mut nnz = 0u64;
        for (row, w) in row_starts.windows(2).enumerate() {
            let row_codes = &mut codes[w[0] as usize..w[1] as usize];
            let limit = created;
            let mut prev = 0u32;
            let mut last_col = 0u32;
            for (j, code) in row_codes.iter_mut().enumerate() {
                let raw = *code;
                check_code(raw, limit, row, j)?;
                // A code below the row's limit was created in an earlier
                // row, and being a code it was marked, so it has its id.
                let c = if (raw as usize) < n_first {
                    raw
                } else {
                    new_id[raw as usize - n_first]
                } as usize;
                let key = self.first[c];
                if j > 0 {
                    let next_col = pair_cols[key as usize];
                    if last_col >= next_col {
                        return Err(Error::ColumnsNotAscending {
                            row,
                            position: j,
                            prev: last_col as u64,
                            col: next_col as u64,
                        });
                    }
                    let slot = &mut new_id[created as usize - n_first];
                    if *slot == UNASSIGNED {
                        *slot = next;
                        let n = next as usize;
                        let p = prev as usize;
                        self.parent[n] = prev;
                        self.key[n] = key;
                        self.first[n] = self.first[p];
                        self.depth[n] = self.depth[p] + 1;
                        next += 1;
                    }
                    created += 1;
                }
                last_col = pair_cols[self.key[c] as usize];
                nnz += self.depth[c] as u64;
                *code = c as u32;
                prev = c as u32;
            }
        }
        debug_assert_eq!(next as usize, self.parent.len());
        Ok(nnz)
    }
}

/// The code rule of every tree check: code `raw` at `position` of `row`
/// names a node created before the row (`1 <= raw < limit`; 0 is the
/// root, which no code names).
#[inline]
pub(super) fn check_code(raw: u32, limit: u32, row: usize, position: usize) -> Result<()> {
    if raw == 0 || raw >= limit {
        return Err(Error::CodeOutOfRange {
            row,
            position,
            code: raw as u64,
            limit: limit as u64,
        });
    }
    Ok(())
}

//! A mini-batch of code rows (`code_rows.rs`) made ready for the kernels:
//! a compact decode tree of the nodes its codes name, or its rows.
//!
//! The rows of a shuffled mini-batch come from anywhere in the buffer,
//! each with its codes into its segment's dictionary. The kernels of TOC
//! section 4 need a tree whose nodes are numbered after their parents,
//! with the first layer's products computed once: the batch's tree is the
//! nodes its codes name and their ancestors, with the pairs they use,
//! renumbered compactly across every dictionary the rows name (the same
//! compaction a version-3 page's tree gets, `shared_tree.rs`). So a step's
//! work is bounded by the batch's codes and the nodes they use, never by a
//! dictionary's size, and nothing is re-encoded.
//!
//! Where that tree would cost the kernels more work than the batch's
//! entries (the form rule of `kernels/form.rs`, counted on the nodes just
//! placed), the rows are written out from the dictionaries instead, as CSR
//! arrays. The choice is made per batch, before the tree's arrays are
//! written.
//!
//! Per-dictionary state is one map of a `u32` per node (its compact id,
//! zero between builds), kept by the builder for the dictionaries of the
//! buffer and reset through the list of the nodes a build touched: a
//! build costs the nodes it uses.

use super::{DecodeTree, RowDict};
use crate::error::Result;
use crate::limits::try_reserve;

/// Marks a node that a code uses but that has no compact id yet.
const UNASSIGNED: u32 = u32::MAX;
/// Tags a placed created node's index among the created ones, until the
/// pair count is known.
const CREATED: u32 = 1 << 31;

const BATCH_TREE: &str = "the tree of a mini-batch of code rows";

/// Code rows gathered for one mini-batch: its rows' codes and the
/// dictionaries they name. Row `r` names dictionary `dicts[slots[r]]`
/// with codes `codes[starts[r]..starts[r + 1]]`.
#[derive(Debug, Default)]
pub(crate) struct CodeBatch {
    pub(crate) dicts: Vec<RowDict>,
    pub(crate) slots: Vec<u32>,
    pub(crate) starts: Vec<u32>,
    pub(crate) codes: Vec<u32>,
}

impl CodeBatch {
    /// Empties the batch, keeping its capacity.
    pub(crate) fn clear(&mut self) {
        self.dicts.clear();
        self.slots.clear();
        self.starts.clear();
        self.starts.push(0);
        self.codes.clear();
    }

    /// Rows gathered.
    pub(crate) fn n_rows(&self) -> usize {
        self.slots.len()
    }

    /// Heap bytes of the arrays.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.slots.capacity() + self.starts.capacity() + self.codes.capacity())
    }
}

/// What a mini-batch of code rows became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchForm {
    /// A compact decode tree (the kernels of TOC section 4).
    Tree,
    /// Its rows, as CSR arrays.
    Rows,
}

/// Most dictionaries whose maps a builder keeps (a buffer's segments, and
/// the first layers of its self-contained pages); past it they are all
/// dropped and made again as needed.
const MAX_MAPS: usize = 1024;

/// The builder's reusable state (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct CodeBatchBuilder {
    /// Per dictionary, each node's compact id (0: unused).
    maps: Vec<Vec<u32>>,
    /// The map of each dictionary by its identity ([`RowDict::key`]).
    map_of: hashbrown::HashMap<usize, usize>,
    /// The map of each of the batch's dictionaries (scratch).
    batch_maps: Vec<usize>,
    /// `(slot, node)` of the nodes the codes name, in first-use order.
    used: Vec<(u32, u32)>,
    /// `(slot, pair)` of the first layer, in compact order.
    pairs: Vec<(u32, u32)>,
    /// `(slot, node)` of the created nodes, in compact order.
    created: Vec<(u32, u32)>,
    stack: Vec<u32>,
    /// The last build's tree work and entries (see [`work`](Self::work)).
    last: (u64, u64),
}

impl CodeBatchBuilder {
    /// What the kernels' form rule weighed for the last batch built: the
    /// element visits of its tree (`kernels/form.rs`) and its entries.
    pub(crate) fn work(&self) -> (u64, u64) {
        self.last
    }

    /// Heap bytes of the maps and lists.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * self.maps.iter().map(Vec::capacity).sum::<usize>()
            + 8 * (self.used.capacity() + self.pairs.capacity() + self.created.capacity())
            + 4 * self.stack.capacity()
    }

    /// Builds `batch`'s form (`n_cols` columns): its compact
    /// tree into `tree` (whose codes and row starts become the batch's,
    /// remapped), or, where the rule of `kernels/form.rs` finds the rows
    /// cheaper, its rows into `rows` (CSR offsets, columns, values). The
    /// batch's codes are consumed either way. `force` picks a form
    /// whatever the rule says.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) for a map or an
    /// array the system refuses;
    /// [`Error::LimitExceeded`](crate::Error::LimitExceeded) for rows
    /// written out past the decode budget
    /// ([`check_batch_nnz`](crate::limits::check_batch_nnz)).
    pub(crate) fn build(
        &mut self,
        batch: &mut CodeBatch,
        n_cols: usize,
        force: Option<BatchForm>,
        (tree, rows): (&mut DecodeTree, &mut RowsOut),
    ) -> Result<BatchForm> {
        let dicts = std::mem::take(&mut batch.dicts);
        let built = self.find_maps(&dicts).and_then(|()| {
            let entries = self.mark(&dicts, batch)?;
            self.place_and_write(&dicts, batch, n_cols, entries, force, tree, rows)
        });
        self.reset();
        batch.dicts = dicts;
        built
    }

    /// The map of each of the batch's dictionaries, made where new.
    fn find_maps(&mut self, dicts: &[RowDict]) -> Result<()> {
        if self.map_of.len() + dicts.len() > MAX_MAPS {
            self.maps.clear();
            self.map_of.clear();
        }
        self.batch_maps.clear();
        for d in dicts {
            let next = self.maps.len();
            let m = *self.map_of.entry(d.key()).or_insert(next);
            if m == next {
                self.maps.push(Vec::new());
            }
            let map = &mut self.maps[m];
            let n = d.tree().parent.len();
            if map.len() < n {
                try_reserve(map, n - map.len(), BATCH_TREE)?;
                map.resize(n, 0);
            }
            self.batch_maps.push(m);
        }
        Ok(())
    }

    /// Marks every node a code names; returns the entries the rows hold.
    fn mark(&mut self, dicts: &[RowDict], batch: &CodeBatch) -> Result<u64> {
        let mut entries = 0u64;
        for (r, &slot) in batch.slots.iter().enumerate() {
            let t = dicts[slot as usize].tree();
            let map = &mut self.maps[self.batch_maps[slot as usize]];
            let (s, e) = (batch.starts[r] as usize, batch.starts[r + 1] as usize);
            for &c in &batch.codes[s..e] {
                let Some(&d) = t.depth.get(c as usize) else {
                    continue;
                };
                entries += d as u64;
                let m = &mut map[c as usize];
                if *m == 0 {
                    *m = UNASSIGNED;
                    self.used.push((slot, c));
                }
            }
        }
        Ok(entries)
    }

    /// Places the marked nodes and their ancestors (pairs first, then
    /// created nodes, each after its parent), chooses the form and
    /// writes it.
    #[allow(clippy::too_many_arguments)]
    fn place_and_write(
        &mut self,
        dicts: &[RowDict],
        batch: &mut CodeBatch,
        n_cols: usize,
        entries: u64,
        force: Option<BatchForm>,
        tree: &mut DecodeTree,
        rows: &mut RowsOut,
    ) -> Result<BatchForm> {
        let placed = |v: u32| v != 0 && v != UNASSIGNED;
        for &(slot, n) in &self.used {
            let t = dicts[slot as usize].tree();
            let map = &mut self.maps[self.batch_maps[slot as usize]];
            let n_first = t.pair_cols.len();
            self.stack.clear();
            let mut m = n as usize;
            while m != 0 && !placed(map[m]) {
                self.stack.push(m as u32);
                m = t.parent[m] as usize;
            }
            for &m in self.stack.iter().rev() {
                let m = m as usize;
                if m < n_first {
                    self.pairs.push((slot, m as u32));
                    map[m] = self.pairs.len() as u32;
                    continue;
                }
                let k = t.key[m] as usize;
                if !placed(map[k]) {
                    self.pairs.push((slot, k as u32));
                    map[k] = self.pairs.len() as u32;
                }
                self.created.push((slot, m as u32));
                map[m] = CREATED | self.created.len() as u32;
            }
        }
        let n_pairs = self.pairs.len() as u32;
        for (i, &(slot, m)) in self.created.iter().enumerate() {
            self.maps[self.batch_maps[slot as usize]][m as usize] = n_pairs + 1 + i as u32;
        }
        let work = batch.codes.len() as u64 + 3 * self.created.len() as u64 + 2 * n_pairs as u64;
        self.last = (work, entries);
        let form = force.unwrap_or(if work > entries {
            BatchForm::Rows
        } else {
            BatchForm::Tree
        });
        match form {
            BatchForm::Rows => self.write_rows(dicts, batch, entries, rows)?,
            BatchForm::Tree => self.write_tree(dicts, batch, n_cols, entries, tree)?,
        }
        Ok(form)
    }

    /// The compact tree of the placed nodes; the batch's codes remapped.
    fn write_tree(
        &mut self,
        dicts: &[RowDict],
        batch: &mut CodeBatch,
        n_cols: usize,
        entries: u64,
        tree: &mut DecodeTree,
    ) -> Result<()> {
        tree.n_cols = n_cols;
        tree.zeros_possible = false;
        tree.flat = false;
        tree.pending_scale = None;
        tree.decoded_nnz = entries;
        tree.pair_cols.clear();
        tree.pair_vals.clear();
        let n_pairs = self.pairs.len();
        try_reserve(&mut tree.pair_cols, n_pairs + 1, BATCH_TREE)?;
        try_reserve(&mut tree.pair_vals, n_pairs + 1, BATCH_TREE)?;
        tree.pair_cols.push(0);
        tree.pair_vals.push(0.0);
        for &(slot, p) in &self.pairs {
            let t = dicts[slot as usize].tree();
            tree.pair_cols.push(t.pair_cols[p as usize]);
            tree.pair_vals.push(t.pair_vals[p as usize]);
        }
        let n_nodes = 1 + n_pairs + self.created.len();
        for v in [
            &mut tree.parent,
            &mut tree.key,
            &mut tree.first,
            &mut tree.depth,
        ] {
            v.clear();
            try_reserve(v, n_nodes, BATCH_TREE)?;
        }
        tree.reset_first_layer(n_nodes);
        let compact = |map: &[u32], n: u32| if n == 0 { 0 } else { map[n as usize] };
        for &(slot, m) in &self.created {
            let t = dicts[slot as usize].tree();
            let map = &self.maps[self.batch_maps[slot as usize]];
            let m = m as usize;
            tree.parent.push(compact(map, t.parent[m]));
            tree.key.push(compact(map, t.key[m]));
            tree.first.push(compact(map, t.first[m]));
            tree.depth.push(t.depth[m]);
        }
        for (r, &slot) in batch.slots.iter().enumerate() {
            let map = &self.maps[self.batch_maps[slot as usize]];
            let (s, e) = (batch.starts[r] as usize, batch.starts[r + 1] as usize);
            for c in &mut batch.codes[s..e] {
                // A code past its dictionary (never validated) was not
                // marked: it names the root, an empty sequence.
                *c = map.get(*c as usize).copied().unwrap_or(0);
            }
        }
        std::mem::swap(&mut tree.codes, &mut batch.codes);
        std::mem::swap(&mut tree.row_starts, &mut batch.starts);
        Ok(())
    }

    /// The rows, written out from the dictionaries.
    fn write_rows(
        &mut self,
        dicts: &[RowDict],
        batch: &CodeBatch,
        entries: u64,
        rows: &mut RowsOut,
    ) -> Result<()> {
        // The batch's rows decoded: the decode budget's, as a buffer's
        // (code rows can name far more entries than they take).
        crate::limits::check_batch_nnz(entries)?;
        let nnz = entries as usize;
        rows.offsets.clear();
        rows.cols.clear();
        rows.vals.clear();
        try_reserve(&mut rows.offsets, batch.n_rows() + 1, BATCH_TREE)?;
        try_reserve(&mut rows.cols, nnz, BATCH_TREE)?;
        try_reserve(&mut rows.vals, nnz, BATCH_TREE)?;
        rows.cols.resize(nnz, 0);
        rows.vals.resize(nnz, 0.0);
        rows.offsets.push(0);
        let mut pos = 0usize;
        for (r, &slot) in batch.slots.iter().enumerate() {
            let t = dicts[slot as usize].tree();
            let (s, e) = (batch.starts[r] as usize, batch.starts[r + 1] as usize);
            for &c in &batch.codes[s..e] {
                let Some(&d) = t.depth.get(c as usize) else {
                    continue;
                };
                // Walk up from the node, writing its sequence right to
                // left.
                let mut node = c as usize;
                for k in (pos..pos + d as usize).rev() {
                    let pair = t.key[node] as usize;
                    rows.cols[k] = t.pair_cols[pair];
                    rows.vals[k] = t.pair_vals[pair];
                    node = t.parent[node] as usize;
                }
                pos += d as usize;
            }
            rows.offsets.push(pos as u32);
        }
        Ok(())
    }

    /// Zeroes every map entry the build set.
    fn reset(&mut self) {
        for list in [&self.used, &self.pairs, &self.created] {
            for &(slot, n) in list {
                let map = &mut self.maps[self.batch_maps[slot as usize]];
                map[n as usize] = 0;
            }
        }
        self.used.clear();
        self.pairs.clear();
        self.created.clear();
    }
}

/// A mini-batch's rows written out: CSR arrays.
#[derive(Debug, Default)]
pub(crate) struct RowsOut {
    pub(crate) offsets: Vec<u32>,
    pub(crate) cols: Vec<u32>,
    pub(crate) vals: Vec<f64>,
}

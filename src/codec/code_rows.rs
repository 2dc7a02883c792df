//! A validated page's rows as codes into a dictionary that stays
//! resident: what the loader's buffer holds and shuffles (CorgiPile's
//! Algorithm 1 over code rows rather than decoded values).
//!
//! A page coded against its segment's shared dictionary is already a list
//! of rows, each a few codes. Only the page's own nodes stand in the way
//! of moving a row on its own: Algorithm 2 (TOC paper 4.1.2) creates them
//! between consecutive codes of the page, so they mean nothing outside it.
//! Each is resolved here into shared codes: the node created between
//! codes `a` and `b` is `seq(a) ++ first(b)`, so its codes are `a`'s
//! (resolved) followed by the first-layer node of `b`'s first pair. As in
//! the trusted decode (`trusted.rs`), a page node is then a back-reference
//! into the codes just written plus one key, and nothing walks a tree.
//!
//! Every resolved row is self-standing against its segment's dictionary,
//! and decodes to the same entries: a shared node's sequence is written
//! by the dictionary, and a page node's is its parent's followed by its
//! key. A row takes as many codes as the page's, plus one per page node
//! it names times the nodes above it in the page (on flights3m, about
//! 3.4 codes for 6 entries).
//!
//! A self-contained page (a version-4 segment keeps one where coding it
//! against the dictionary did not pay, and a file without dictionaries
//! has only those) gives its rows as ids into its own first layer, which
//! then serves as their dictionary ([`DecodeTree::pairs_only`]).

use super::layout::Layout;
use super::shared::SharedDict;
use super::DecodeTree;
use crate::error::Result;
use crate::limits::try_reserve;

const CODE_ROWS: &str = "the code rows of a buffer";

impl DecodeTree {
    /// Appends the rows of the shared page `blob` (validated before, in
    /// this process, against `dict`; `layout` its structure) to `codes`
    /// as codes of `dict`'s nodes, each row's end in `codes` to `ends`.
    ///
    /// # Errors
    /// A row-length sum that disagrees with the code count (bytes never
    /// validated), [`Error::OutOfMemory`](crate::Error::OutOfMemory). A
    /// page node out of range (bytes never validated) makes a wrong row,
    /// never a panic.
    pub(crate) fn decode_shared_codes(
        &mut self,
        blob: &[u8],
        layout: &Layout,
        dict: &SharedDict,
        codes: &mut Vec<u32>,
        ends: &mut Vec<u32>,
    ) -> Result<()> {
        self.load_rows(blob, layout)?;
        let t = &dict.tree;
        let n_shared = t.parent.len();
        // A resolved row has at most as many codes as entries: the page's
        // counts were validated, and the sequence lengths sum to them.
        try_reserve(codes, self.codes.len(), CODE_ROWS)?;
        try_reserve(ends, self.n_rows(), CODE_ROWS)?;
        // Per page node: where its parent's codes start and how many,
        // and its key.
        let nodes = &mut self.scratch;
        nodes.clear();
        try_reserve(nodes, 3 * self.codes.len(), CODE_ROWS)?;
        for w in self.row_starts.windows(2) {
            let row = &self.codes[w[0] as usize..w[1] as usize];
            let mut prev_start = codes.len();
            for (j, &code) in row.iter().enumerate() {
                let start = codes.len();
                let code = code as usize;
                if code < n_shared {
                    codes.push(code as u32);
                } else {
                    let k = 3 * (code - n_shared);
                    if let (Some(&o), Some(&l), Some(&key)) =
                        (nodes.get(k), nodes.get(k + 1), nodes.get(k + 2))
                    {
                        let (o, l) = (o as usize, l as usize);
                        if o + l <= start {
                            try_reserve(codes, l + 1, CODE_ROWS)?;
                            codes.extend_from_within(o..o + l);
                            codes.push(key);
                        }
                    }
                }
                if j > 0 {
                    // The node created between the previous code and this
                    // one: the previous code's sequence, then this one's
                    // first pair (the first pair of its first code).
                    let first = codes
                        .get(start)
                        .and_then(|&c| t.first.get(c as usize))
                        .copied()
                        .unwrap_or(0);
                    nodes.extend_from_slice(&[
                        prev_start as u32,
                        (start - prev_start) as u32,
                        first,
                    ]);
                }
                prev_start = start;
            }
            ends.push(codes.len() as u32);
        }
        nodes.clear();
        Ok(())
    }

    /// The first layer: each pair's column and value (index 0, the
    /// root's, a placeholder).
    pub(crate) fn pairs(&self) -> (&[u32], &[f64]) {
        (&self.pair_cols, &self.pair_vals)
    }

    /// The number of entries node `node`'s sequence holds (0 for a node
    /// out of range).
    #[inline]
    pub(crate) fn depth_of(&self, node: u32) -> usize {
        self.depth.get(node as usize).map_or(0, |&d| d as usize)
    }

    /// Node `node`'s key (a first-layer id) and parent (the root for a
    /// node out of range).
    #[inline]
    pub(crate) fn key_and_parent(&self, node: u32) -> (u32, u32) {
        let n = node as usize;
        match (self.key.get(n), self.parent.get(n)) {
            (Some(&k), Some(&p)) => (k, p),
            _ => (0, 0),
        }
    }

    /// A dictionary of only a first layer: node `i` (from 1) is pair `i`
    /// of `cols` and `vals` (index 0, the root's, ignored), a child of
    /// the root. What the rows of a self-contained page name, as ids
    /// into its first layer.
    pub(crate) fn pairs_only(n_cols: usize, cols: &[u32], vals: &[f64]) -> DecodeTree {
        let n = cols.len();
        let mut tree = DecodeTree {
            n_cols,
            ..DecodeTree::default()
        };
        tree.pair_cols = cols.to_vec();
        tree.pair_vals = vals.to_vec();
        tree.reset_first_layer(n);
        tree.flat = false;
        tree
    }
}

/// The dictionary a code row names: its segment's, or the first layer of
/// its own page.
#[derive(Debug, Clone)]
pub(crate) enum RowDict {
    /// A segment's shared dictionary.
    Shared(std::sync::Arc<SharedDict>),
    /// A self-contained page's first layer ([`DecodeTree::pairs_only`]).
    Own(std::sync::Arc<DecodeTree>),
}

impl RowDict {
    /// The dictionary's tree: every node's parent, key, first pair and
    /// depth, and the pairs.
    #[inline]
    pub(crate) fn tree(&self) -> &DecodeTree {
        match self {
            RowDict::Shared(d) => &d.tree,
            RowDict::Own(t) => t,
        }
    }

    /// The dictionary's identity (its address): equal for clones of one
    /// dictionary, never for two dictionaries alive at once.
    pub(crate) fn key(&self) -> usize {
        match self {
            RowDict::Shared(d) => std::sync::Arc::as_ptr(d) as usize,
            RowDict::Own(t) => std::sync::Arc::as_ptr(t) as usize,
        }
    }

    /// Heap bytes it holds when counted on its own (a page's first
    /// layer; a segment's dictionary is the dataset's, counted there).
    pub(crate) fn own_bytes(&self) -> usize {
        match self {
            RowDict::Shared(_) => 0,
            RowDict::Own(t) => t.heap_bytes(),
        }
    }
}

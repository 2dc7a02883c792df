//! Validation without a decode tree, for a dataset file's loader.
//!
//! The loader validates each page once and keeps the block's bytes; it
//! decodes them again every epoch with the trusted decoders
//! (`trusted.rs`, `DecodeTree::decode_trusted_shared`), never with the
//! tree that validation built. Building that tree is most of the cost of
//! a version-3 page's validation: `DecodeTree::build_shared` places the
//! shared nodes the page uses and their ancestors in a compact tree and
//! rewrites every code, on top of the content check. [`check_page`] runs
//! the same rules, in the same order and with the same errors, and
//! returns what the loader needs (rows, columns, level, decoded
//! non-zeros) without building anything: each page node is recorded as
//! the columns of its first and last pair and its depth, which is all
//! that the rules (TOC paper Algorithm 2's node creation, codes existing
//! when their row starts, columns ascending) and the non-zero count
//! read. A self-contained page is checked the same way, its first layer
//! standing for the shared tree (`DecodeTree::build` minus the compact
//! tree).

use super::layout::Layout;
use super::shared::SharedDict;
use super::{needs_dictionary, DecodeTree, Level};
use crate::error::{Error, Result};
use crate::limits::try_reserve;

/// What `check_page` (`tocpile::internals::check_page`) found in a page
/// that passed every rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckedPage {
    /// Rows of the page.
    pub n_rows: usize,
    /// Columns of the page.
    pub n_cols: usize,
    /// Its TOC level, as [`TocBatch::level`](super::TocBatch::level).
    pub level: Level,
    /// Non-zeros it decodes to, as
    /// [`TocBatch::decoded_nnz`](super::TocBatch::decoded_nnz).
    pub decoded_nnz: u64,
}

/// Validates a page as [`TocBatch::from_bytes_shared`](super::TocBatch::from_bytes_shared)
/// (with `dict`) or [`TocBatch::from_bytes_with_tree`](super::TocBatch::from_bytes_with_tree)
/// (without) does, page limit included, and returns what it holds;
/// `rows` is the page header's row count (read only for a compact page);
/// `tree` is scratch and holds no batch afterwards. Both accept and
/// refuse the same bytes with the same errors (`tests/codec/check.rs`).
///
/// # Errors
/// As `TocBatch::from_bytes_shared`.
pub(crate) fn check_page(
    blob: &[u8],
    rows: usize,
    dict: Option<&SharedDict>,
    tree: &mut DecodeTree,
) -> Result<CheckedPage> {
    let checked = super::page_layout(blob, rows, dict).and_then(|layout| {
        let nnz = match (layout.is_shared(), dict) {
            (false, _) => tree.check(blob, &layout)?,
            (true, Some(dict)) => tree.check_shared(blob, &layout, dict)?,
            (true, None) => return Err(needs_dictionary()),
        };
        crate::limits::check_page_nnz(nnz, layout.n_rows(), layout.n_cols)?;
        Ok(CheckedPage {
            n_rows: layout.n_rows(),
            n_cols: layout.n_cols,
            level: super::level_of(&layout),
            decoded_nnz: nnz,
        })
    });
    tree.forget();
    checked
}

/// Fields of a page node's record in the check: the column of its first
/// pair, the column of its last pair (its key), its depth.
const RECORD: usize = 3;

impl DecodeTree {
    /// The content rules of a self-contained page, as
    /// [`build`](DecodeTree::build) checks them: pairs, then the codes
    /// against the first layer (or the rows of a flat page). Returns the
    /// decoded non-zeros.
    fn check(&mut self, blob: &[u8], layout: &Layout) -> Result<u64> {
        if !layout.has_tree() {
            // A flat page's build is its check: it creates no nodes.
            self.build(blob, layout, true)?;
            return Ok(self.decoded_nnz);
        }
        self.n_cols = layout.n_cols;
        self.zeros_possible = false;
        self.flat = false;
        self.load_rows(blob, layout)?;
        self.load_pairs(blob, layout)?;
        let n_first = self.pair_cols.len();
        let n_local = self.count_local(n_first)?;
        let mut loc = std::mem::take(&mut self.scratch);
        let checked = try_reserve(&mut loc, RECORD * n_local, "a page's tree").and_then(|()| {
            let pairs = FirstLayer(&self.pair_cols);
            check_rows(&pairs, &self.row_starts, &self.codes, &mut loc)
        });
        self.scratch = loc;
        checked
    }

    /// The content rules of a version-3 page, as
    /// [`build_shared`](DecodeTree::build_shared) checks them: the
    /// dictionary's columns, then the codes against the shared tree.
    /// Returns the decoded non-zeros.
    fn check_shared(&mut self, blob: &[u8], layout: &Layout, dict: &SharedDict) -> Result<u64> {
        let t = &dict.tree;
        super::shared_tree::check_dict_cols(layout, dict)?;
        self.n_cols = layout.n_cols;
        self.zeros_possible = false;
        self.flat = false;
        self.load_rows(blob, layout)?;
        let n_local = self.count_local(t.parent.len())?;
        let mut loc = std::mem::take(&mut self.scratch);
        let checked = try_reserve(&mut loc, RECORD * n_local, "a page's tree")
            .and_then(|()| check_rows(&SharedTree(t), &self.row_starts, &self.codes, &mut loc));
        self.scratch = loc;
        checked
    }

    /// Nodes the page's codes create (one per code but the first of each
    /// row), after `below` existing ones; an error if the ids would not
    /// fit a `u32`, as both builds report it.
    fn count_local(&self, below: usize) -> Result<usize> {
        let non_empty = self.row_starts.windows(2).filter(|w| w[1] > w[0]).count();
        let n_local = self.codes.len() - non_empty;
        let total = below as u64 + n_local as u64;
        if total > u32::MAX as u64 {
            return Err(Error::TooLarge {
                what: "prefix tree nodes",
                value: total,
                max: u32::MAX as u64,
            });
        }
        Ok(n_local)
    }

    /// Leaves the tree holding no batch (after a check, which builds
    /// none), keeping its allocations for the next page.
    fn forget(&mut self) {
        for v in [
            &mut self.pair_cols,
            &mut self.parent,
            &mut self.key,
            &mut self.first,
            &mut self.depth,
            &mut self.codes,
            &mut self.row_starts,
        ] {
            v.clear();
        }
        self.pair_vals.clear();
        self.decoded_nnz = 0;
        self.n_cols = 0;
    }
}

/// The nodes a page's codes may name below its own: for each, the
/// columns of its first and last pairs and its depth.
trait BaseNodes {
    /// How many (codes `1..len` name them; 0 is the root).
    fn len(&self) -> u32;
    /// `(first column, last column, depth)` of node `id < len`.
    fn node(&self, id: usize) -> [u32; RECORD];
}

/// A self-contained page's first layer: node `p` is pair `p - 1`.
struct FirstLayer<'a>(&'a [u32]);

impl BaseNodes for FirstLayer<'_> {
    fn len(&self) -> u32 {
        self.0.len() as u32
    }
    #[inline]
    fn node(&self, id: usize) -> [u32; RECORD] {
        let col = self.0[id];
        [col, col, 1]
    }
}

/// A segment's complete shared tree.
struct SharedTree<'a>(&'a DecodeTree);

impl BaseNodes for SharedTree<'_> {
    fn len(&self) -> u32 {
        self.0.parent.len() as u32
    }
    #[inline]
    fn node(&self, id: usize) -> [u32; RECORD] {
        let t = self.0;
        let cols = &t.pair_cols;
        [
            cols[t.first[id] as usize],
            cols[t.key[id] as usize],
            t.depth[id],
        ]
    }
}

/// The rules of Algorithm 2's rebuild (`docs/FORMAT.md`, batch rule 6),
/// in the order both builds check them: every code of row `r` in
/// `1..N_r` (`N_r` the nodes existing when the row starts: `base`'s,
/// then the page's own), and the columns of each row strictly
/// ascending. Records each page node in `loc` (the columns of its first
/// and last pairs, its depth) and returns the decoded non-zeros.
fn check_rows(
    base: &impl BaseNodes,
    row_starts: &[u32],
    codes: &[u32],
    loc: &mut Vec<u32>,
) -> Result<u64> {
    let n_base = base.len();
    let mut created = n_base;
    let mut nnz = 0u64;
    loc.clear();
    for (row, w) in row_starts.windows(2).enumerate() {
        let limit = created;
        let (mut prev_first, mut prev_depth, mut last_col) = (0u32, 0u32, 0u32);
        for (j, &raw) in codes[w[0] as usize..w[1] as usize].iter().enumerate() {
            super::tree::check_code(raw, limit, row, j)?;
            let [first, last, depth] = if raw < n_base {
                base.node(raw as usize)
            } else {
                let b = RECORD * (raw - n_base) as usize;
                [loc[b], loc[b + 1], loc[b + 2]]
            };
            if j > 0 {
                if last_col >= first {
                    return Err(Error::ColumnsNotAscending {
                        row,
                        position: j,
                        prev: last_col as u64,
                        col: first as u64,
                    });
                }
                // The node between the previous code and this one: the
                // previous sequence, then this code's first pair.
                loc.extend_from_slice(&[prev_first, first, prev_depth + 1]);
                created += 1;
            }
            last_col = last;
            nnz += depth as u64;
            (prev_first, prev_depth) = (first, depth);
        }
    }
    Ok(nnz)
}

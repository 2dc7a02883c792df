//! Building and decoding a version-3 page against its segment's shared
//! dictionary (`shared.rs`).
//!
//! [`DecodeTree::build_shared`] is the content check of an untrusted page
//! (the rules of `DecodeTree::build`, with the shared tree's nodes below
//! the page's own) and builds the compact tree the kernels run on: only
//! the shared nodes the page's codes use, their ancestors and the pairs
//! of their keys, then the page's own nodes that a code uses. So kernels
//! touch about as many nodes as on a self-contained page, however large
//! the segment's dictionary. (The dataset loader, which keeps the page's
//! bytes rather than its tree, checks the same rules without building
//! anything: `check.rs`.) [`DecodeTree::decode_trusted_shared`] is the
//! loader's decode of a page validated before: shared nodes are written
//! from the shared tree (walking up from the node), the page's own as
//! back-references into its output (`trusted.rs`).

use super::layout::Layout;
use super::shared::SharedDict;
use super::trusted::{push_node_output, PageRows};
use super::{DecodeTree, TocBatch};
use crate::error::{Error, Result};
use crate::limits::try_reserve;
use std::sync::Arc;

/// A page node's record while it is checked: raw parent, first pair,
/// key pair (both first-layer ids of the shared tree), depth, compact id.
const LOCAL: usize = 5;
/// Marks a node that a code uses but that has no compact id yet.
const UNASSIGNED: u32 = u32::MAX;
/// Tags a placed shared node's index among the created ones, until the
/// pair count is known.
const CREATED: u32 = 1 << 31;

impl DecodeTree {
    /// Rebuilds the tree of a version-3 page from its structurally valid
    /// `blob` and its segment's dictionary, checking every content rule:
    /// the page's columns are the dictionary's, every code names a node
    /// that exists when its row starts (shared nodes first, then the
    /// page's own, numbered from the dictionary's node count), and the
    /// columns of every row ascend strictly.
    pub(crate) fn build_shared(
        &mut self,
        blob: &[u8],
        layout: &Layout,
        dict: &SharedDict,
    ) -> Result<()> {
        self.build_shared_pages(&[(blob, layout)], dict)
    }

    /// [`build_shared`](Self::build_shared) for a mini-batch of several
    /// version-3 pages of one segment: every page is checked as
    /// `build_shared` checks one, and the tree holds the shared nodes any
    /// page uses once (with their ancestors and key pairs), then each
    /// page's own nodes, with the rows of all pages in order. The
    /// first-layer products and node values the kernels compute are then
    /// computed once per mini-batch instead of once per page (issue 27,
    /// item 2). An error is the first page's that breaks a rule, its rows
    /// numbered within that page.
    pub(crate) fn build_shared_pages(
        &mut self,
        pages: &[(&[u8], &Layout)],
        dict: &SharedDict,
    ) -> Result<()> {
        let t = &dict.tree;
        for (_, layout) in pages {
            check_dict_cols(layout, dict)?;
        }
        self.n_cols = t.n_cols;
        self.zeros_possible = false;
        self.flat = false;
        let mut scratch = SharedScratch::take();
        let built = self.build_shared_in(pages, t, &mut scratch);
        if built.is_err() {
            scratch.reset_after_error();
        }
        SharedScratch::give(scratch);
        built
    }

    /// [`build_shared_pages`](Self::build_shared_pages) with the thread's
    /// scratch: on success, every entry of `s.map` it set is zero again;
    /// on error, the caller resets them ([`SharedScratch::reset_after_error`]).
    fn build_shared_in(
        &mut self,
        pages: &[(&[u8], &Layout)],
        t: &DecodeTree,
        s: &mut SharedScratch,
    ) -> Result<()> {
        let n_shared = t.parent.len();
        let mut loc = std::mem::take(&mut self.scratch);
        loc.clear();
        s.list.clear();
        s.pairs.clear();
        s.created.clear();
        if s.map.len() < n_shared {
            let more = n_shared - s.map.len();
            let grown = try_reserve(&mut s.map, more, "a thread's map of shared nodes");
            if let Err(e) = grown {
                self.scratch = loc;
                return Err(e);
            }
            s.map.resize(n_shared, 0);
        }
        // Where each page's codes and node records start (only for more
        // than one page: a single page's are the whole arrays).
        let mut bounds: Vec<(usize, usize)> = Vec::new();
        let checked = self.check_pages(pages, t, &mut loc, &mut s.map, &mut s.list, &mut bounds);
        let placed = checked.and_then(|nnz| {
            s.place(t)?;
            Ok(nnz)
        });
        let nnz = match placed {
            Ok(nnz) => nnz,
            Err(e) => {
                self.scratch = loc;
                return Err(e);
            }
        };
        let SharedScratch {
            map,
            pairs,
            created,
            ..
        } = s;
        let used_local = loc.chunks_exact(LOCAL).filter(|l| l[4] != 0).count();
        let n_nodes = 1 + pairs.len() + created.len() + used_local;
        // The compact tree holds the ancestors of the shared nodes the
        // pages use: bounded by the non-zeros they decode to, not by
        // their bytes, so its arrays are allocated fallibly.
        self.pair_cols.clear();
        self.pair_vals.clear();
        let reserved = try_reserve(&mut self.pair_cols, pairs.len() + 1, "a page's tree")
            .and_then(|()| try_reserve(&mut self.pair_vals, pairs.len() + 1, "a page's tree"));
        if let Err(e) = reserved {
            self.scratch = loc;
            return Err(e);
        }
        self.pair_cols.push(0);
        self.pair_vals.push(0.0);
        for &n in pairs.iter() {
            self.pair_cols.push(t.pair_cols[n as usize]);
            self.pair_vals.push(t.pair_vals[n as usize]);
        }
        if let Err(e) = self.try_reset_first_layer(n_nodes) {
            self.scratch = loc;
            return Err(e);
        }
        let compact = |map: &[u32], n: u32| if n == 0 { 0 } else { map[n as usize] };
        for &n in created.iter() {
            let n = n as usize;
            self.parent.push(compact(map, t.parent[n]));
            self.key.push(compact(map, t.key[n]));
            self.first.push(compact(map, t.first[n]));
            self.depth.push(t.depth[n]);
        }
        // Each page's own nodes, page after page: a record's parent is a
        // shared node or an earlier record of the same page.
        let n_pages = bounds.len().saturating_sub(1).max(1);
        let (n_codes, n_records) = (self.codes.len(), loc.len());
        let span = |p: usize| match bounds.get(p + 1) {
            Some(&end) => (bounds[p].0..end.0, bounds[p].1..end.1),
            None => (0..n_codes, 0..n_records),
        };
        let mut next = (1 + pairs.len() + created.len()) as u32;
        for p in 0..n_pages {
            let (_, records) = span(p);
            let base = records.start;
            for b in records.step_by(LOCAL) {
                if loc[b + 4] == 0 {
                    continue;
                }
                loc[b + 4] = next;
                next += 1;
                let parent = loc[b];
                let parent = if (parent as usize) < n_shared {
                    map[parent as usize]
                } else {
                    loc[base + LOCAL * (parent as usize - n_shared) + 4]
                };
                self.parent.push(parent);
                self.first.push(map[loc[b + 1] as usize]);
                self.key.push(map[loc[b + 2] as usize]);
                self.depth.push(loc[b + 3]);
            }
        }
        for p in 0..n_pages {
            let (codes, records) = span(p);
            let base = records.start;
            for c in &mut self.codes[codes] {
                let raw = *c as usize;
                *c = if raw < n_shared {
                    map[raw]
                } else {
                    loc[base + LOCAL * (raw - n_shared) + 4]
                };
            }
        }
        for &n in pairs.iter().chain(created.iter()) {
            map[n as usize] = 0;
        }
        self.scratch = loc;
        self.decoded_nnz = nnz;
        Ok(())
    }

    /// Loads and checks every page with [`check_codes`], the shared nodes
    /// used marked in `map` and `list` across pages. One page's rows and
    /// records are left in `self.codes`, `self.row_starts` and `loc`; for
    /// several, their concatenation, and `bounds` gets each page's first
    /// code and first record, then the totals. Returns the non-zeros.
    fn check_pages(
        &mut self,
        pages: &[(&[u8], &Layout)],
        t: &DecodeTree,
        loc: &mut Vec<u32>,
        map: &mut [u32],
        list: &mut Vec<u32>,
        bounds: &mut Vec<(usize, usize)>,
    ) -> Result<u64> {
        let n_shared = t.parent.len() as u64;
        let (mut codes, mut starts, mut page_loc) = (Vec::new(), Vec::new(), Vec::new());
        let mut n_local_total = 0u64;
        let mut nnz = 0u64;
        for (i, &(blob, layout)) in pages.iter().enumerate() {
            self.load_rows(blob, layout)?;
            let non_empty = self.row_starts.windows(2).filter(|w| w[1] > w[0]).count();
            let n_local = self.codes.len() - non_empty;
            n_local_total += n_local as u64;
            let total = n_shared + n_local_total;
            if total > u32::MAX as u64 {
                return Err(Error::TooLarge {
                    what: "prefix tree nodes",
                    value: total,
                    max: u32::MAX as u64,
                });
            }
            if pages.len() == 1 {
                try_reserve(loc, LOCAL * n_local, "a page's tree")?;
                return check_codes(t, &self.row_starts, &self.codes, loc, map, list);
            }
            if codes.len() as u64 + self.codes.len() as u64 > u32::MAX as u64 {
                return Err(Error::TooLarge {
                    what: "codes of a mini-batch of pages",
                    value: codes.len() as u64 + self.codes.len() as u64,
                    max: u32::MAX as u64,
                });
            }
            page_loc.clear();
            try_reserve(&mut page_loc, LOCAL * n_local, "a page's tree")?;
            nnz += check_codes(t, &self.row_starts, &self.codes, &mut page_loc, map, list)?;
            bounds.push((codes.len(), loc.len()));
            try_reserve(loc, page_loc.len(), "a mini-batch's tree")?;
            loc.extend_from_slice(&page_loc);
            if i == 0 {
                starts.push(0);
            }
            let offset = codes.len() as u32;
            try_reserve(&mut codes, self.codes.len(), "a mini-batch's codes")?;
            codes.extend_from_slice(&self.codes);
            try_reserve(&mut starts, self.row_starts.len(), "a mini-batch's rows")?;
            starts.extend(self.row_starts[1..].iter().map(|&s| s + offset));
        }
        bounds.push((codes.len(), loc.len()));
        self.codes = codes;
        self.row_starts = starts;
        Ok(nnz)
    }

    /// Not part of the API (hidden): used by the workspace's front ends,
    /// benches and tests; may change in any release.
    ///
    /// Builds one tree for the mini-batch made of `pages`, rows in page
    /// order, checking every page again: one page as
    /// [`TocBatch::build_tree`] does; several must be version-3 pages of
    /// one segment (one [`SharedDict`]), whose shared nodes are placed
    /// once, so that the kernels compute the first-layer products of the
    /// pairs and nodes the pages share once per mini-batch.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for no pages, or several that are not
    /// version-3 pages of one dictionary; a content rule a page breaks
    /// (as [`TocBatch::from_bytes_shared`]). On error the tree is empty.
    #[doc(hidden)]
    pub fn build_pages<B: AsRef<[u8]>>(&mut self, pages: &[TocBatch<B>]) -> Result<()> {
        let built = match pages {
            [] => Err(Error::BadArgument {
                what: "pages of a mini-batch",
                expected: "at least one page",
            }),
            [page] => match page.shared_dict() {
                Some(dict) => self.build_shared(page.as_bytes(), &page.layout, dict),
                None => self.build(page.as_bytes(), &page.layout, true),
            },
            [first, rest @ ..] => match first.shared_dict() {
                Some(dict)
                    if rest
                        .iter()
                        .all(|p| p.shared_dict().is_some_and(|d| Arc::ptr_eq(d, dict))) =>
                {
                    let blobs: Vec<(&[u8], &Layout)> =
                        pages.iter().map(|p| (p.as_bytes(), &p.layout)).collect();
                    self.build_shared_pages(&blobs, dict)
                }
                _ => Err(Error::BadArgument {
                    what: "pages merged into one tree",
                    expected: "version-3 pages of one segment (one shared dictionary)",
                }),
            },
        };
        if built.is_err() {
            *self = DecodeTree::default();
        }
        built
    }

    /// Decodes a version-3 page validated before (as
    /// [`decode_trusted`](Self::decode_trusted) does a self-contained
    /// one): a shared node's sequence is written walking up the shared
    /// tree, a page node's is a copy of earlier output.
    ///
    /// # Errors
    /// Only for bytes never validated (the structure checks run); a code
    /// out of range makes a wrong page, never a panic.
    pub(crate) fn decode_trusted_shared(
        &mut self,
        blob: &[u8],
        layout: &Layout,
        (nnz, rows): (usize, &mut PageRows),
        dict: &SharedDict,
    ) -> Result<()> {
        self.n_cols = layout.n_cols;
        self.load_rows(blob, layout)?;
        let t = &dict.tree;
        let n_shared = t.parent.len();
        rows.clear_for(nnz, self.n_rows())?;
        let (out, ends) = rows.ids_and_ends();
        let nodes = &mut self.scratch;
        nodes.clear();
        nodes.reserve(2 * self.codes.len());
        for w in self.row_starts.windows(2) {
            let row = &self.codes[w[0] as usize..w[1] as usize];
            let mut prev_start = out.len();
            for (j, &code) in row.iter().enumerate() {
                let start = out.len();
                let code = code as usize;
                if code < n_shared {
                    let d = t.depth[code] as usize;
                    out.resize(start + d, 0);
                    let mut node = code;
                    for slot in out[start..].iter_mut().rev() {
                        *slot = t.key[node];
                        node = t.parent[node] as usize;
                    }
                } else {
                    push_node_output(out, nodes, code - n_shared, start);
                }
                if j > 0 {
                    nodes.push(prev_start as u32);
                    nodes.push((start - prev_start) as u32 + 1);
                }
                prev_start = start;
            }
            ends.push(out.len() as u32);
        }
        nodes.clear();
        rows.materialize(t);
        Ok(())
    }
}

/// The scratch of the shared builds, one per thread and lent to each
/// build, never kept by a tree: `map` is indexed by the nodes of a
/// dictionary, so a map per tree made every resident page (and every
/// page of a block built at once) cost its dictionary's size, however
/// small the page (a 682 KB file of one-row pages asked for 2.5 MB a
/// page, and census at one row a page took 7 times its memory at file
/// version 2: issue 34). One map per thread costs a dictionary's size
/// once, and a build touches only the entries of the nodes its pages
/// use, resetting them after.
#[derive(Debug, Default)]
struct SharedScratch {
    /// Compact id of each shared node the pages use (0: unused;
    /// [`UNASSIGNED`] while checking; all zero between builds).
    map: Vec<u32>,
    /// The shared nodes the pages' codes name, in first-use order.
    list: Vec<u32>,
    /// The pairs (first-layer nodes and keys) and the created shared
    /// nodes the pages use, in compact order.
    pairs: Vec<u32>,
    created: Vec<u32>,
    /// A walk's stack.
    stack: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<SharedScratch> =
        std::cell::RefCell::new(SharedScratch::default());
}

impl SharedScratch {
    /// This thread's scratch (an empty one if it is lent out already).
    fn take() -> SharedScratch {
        SCRATCH
            .try_with(|cell| cell.try_borrow_mut().map(|mut s| std::mem::take(&mut *s)))
            .ok()
            .and_then(|s| s.ok())
            .unwrap_or_default()
    }

    /// Gives `self` back to the thread (its map all zero).
    fn give(self) {
        let _ = SCRATCH.try_with(|cell| {
            if let Ok(mut s) = cell.try_borrow_mut() {
                if s.map.len() <= self.map.len() {
                    *s = self;
                }
            }
        });
    }

    /// Zeroes every entry of `map` a failed build may have set.
    fn reset_after_error(&mut self) {
        for &n in self.list.iter().chain(&self.pairs).chain(&self.created) {
            if let Some(m) = self.map.get_mut(n as usize) {
                *m = 0;
            }
        }
    }

    /// Compact ids: the pairs the pages' nodes use (first-layer nodes
    /// and keys), in first-use order, then the shared nodes they use and
    /// their ancestors, each after its parent (no sort: a walk up from
    /// each used node stops at the first node already placed). Shared
    /// nodes get their final ids in `map`.
    fn place(&mut self, t: &DecodeTree) -> Result<()> {
        let n_first = t.pair_cols.len();
        let SharedScratch {
            map,
            list,
            pairs,
            created,
            stack,
        } = self;
        let placed = |v: u32| v != 0 && v != UNASSIGNED;
        for &n in list.iter() {
            stack.clear();
            let mut m = n as usize;
            while m != 0 && !placed(map[m]) {
                push(stack, m as u32)?;
                m = t.parent[m] as usize;
            }
            for &m in stack.iter().rev() {
                let m = m as usize;
                if m < n_first {
                    push(pairs, m as u32)?;
                    map[m] = pairs.len() as u32;
                    continue;
                }
                let k = t.key[m] as usize;
                if !placed(map[k]) {
                    push(pairs, k as u32)?;
                    map[k] = pairs.len() as u32;
                }
                push(created, m as u32)?;
                map[m] = CREATED | created.len() as u32;
            }
        }
        let n_pairs = pairs.len() as u32;
        for (i, &m) in created.iter().enumerate() {
            map[m as usize] = n_pairs + 1 + i as u32;
        }
        Ok(())
    }
}

/// Pushes `value`, growing `v` fallibly: what the shared builds place is
/// bounded by the non-zeros of the pages, not by their bytes.
#[inline]
fn push(v: &mut Vec<u32>, value: u32) -> Result<()> {
    if v.len() == v.capacity() {
        try_reserve(v, 1, "a page's tree")?;
    }
    v.push(value);
    Ok(())
}

/// A version-3 page has its segment dictionary's columns (the first
/// rule of both the build here and the loader's check, `check.rs`).
pub(super) fn check_dict_cols(layout: &Layout, dict: &SharedDict) -> Result<()> {
    Error::check_equal(
        "columns of a page (its segment dictionary's)",
        dict.tree.n_cols,
        layout.n_cols,
    )
}

/// The checking pass of [`DecodeTree::build_shared`]: every code in
/// range when its row starts and every row's columns ascending; records
/// each page node in `loc` and marks the codes used (shared ones in `map`
/// and `list`, page ones in their record). Returns the decoded non-zeros.
fn check_codes(
    t: &DecodeTree,
    row_starts: &[u32],
    codes: &[u32],
    loc: &mut Vec<u32>,
    map: &mut [u32],
    list: &mut Vec<u32>,
) -> Result<u64> {
    let n_shared = t.parent.len() as u32;
    let mut created = n_shared;
    let mut nnz = 0u64;
    for (row, w) in row_starts.windows(2).enumerate() {
        let limit = created;
        let (mut prev, mut prev_first, mut prev_depth, mut last_col) = (0u32, 0u32, 0u32, 0u32);
        for (j, &raw) in codes[w[0] as usize..w[1] as usize].iter().enumerate() {
            super::tree::check_code(raw, limit, row, j)?;
            let (first, key, depth) = if raw < n_shared {
                let r = raw as usize;
                if map[r] == 0 {
                    map[r] = UNASSIGNED;
                    list.push(raw);
                }
                (t.first[r], t.key[r], t.depth[r])
            } else {
                let b = LOCAL * (raw - n_shared) as usize;
                loc[b + 4] = UNASSIGNED;
                (loc[b + 1], loc[b + 2], loc[b + 3])
            };
            if j > 0 {
                let next_col = t.pair_cols[first as usize];
                if last_col >= next_col {
                    return Err(Error::ColumnsNotAscending {
                        row,
                        position: j,
                        prev: last_col as u64,
                        col: next_col as u64,
                    });
                }
                loc.extend_from_slice(&[prev, prev_first, first, prev_depth + 1, 0]);
                created += 1;
            }
            last_col = t.pair_cols[key as usize];
            nnz += depth as u64;
            (prev, prev_first, prev_depth) = (raw, first, depth);
        }
    }
    Ok(nnz)
}

//! Decoding a batch whose bytes were validated before, in this process:
//! the loader keeps pages in memory as their encoded bytes (checked once,
//! when they were read) and decodes them again every epoch. Building the
//! decode tree `C'` with every content check (`tree.rs`) and then walking
//! it up from each code is what a first look at untrusted bytes needs;
//! bytes already known to be valid can be decoded the way LZW output
//! usually is, as back-references into what was decoded before.
//!
//! Between two consecutive codes `a, b` of a row, Algorithm 2 (TOC paper
//! 4.1.2) creates the node `seq(a) ++ first(b)`. When `a` and then `b`
//! have just been written to the output, that sequence is exactly the
//! output's `len(a) + 1` entries from where `a` starts. So a created node
//! is an (offset, length) into the page's output, a code of a created
//! node is one copy of earlier output, and nothing walks a tree: one pass
//! over the codes and one sequential write per entry.
//!
//! The structure checks (`layout::parse`) and the cheap range checks of
//! the pair columns and values still run (they are linear in the encoded
//! bytes, not in the output); what is skipped is the tree's content
//! checks (codes in range when their row starts, ascending columns),
//! which the first validation made.

use super::dict_layout::grouped_groups;
use super::gaps::escape;
use super::layout::{Dict, Layout, Values};
use super::pairs::scaled_value;
use super::DecodeTree;
use crate::error::Result;
use crate::limits::try_reserve;
use crate::sparse::SparseBatch;
use crate::wire::{f64_at, unpack_into, Packed};

const DECODED_PAGE: &str = "a decoded page";

/// Entries past the end of [`PageRows`]'s column and value arrays that
/// may be read (they hold zeros): a row is copied in chunks of this many
/// entries, each a fixed-size copy the compiler emits inline, and the
/// excess trimmed (the "wild copy" of LZ decoders). A call to `memcpy` per
/// row of a few entries cost more than the copy.
pub(crate) const PAD: usize = 8;

/// One page's rows, decoded: every row's columns and values one after the
/// other (followed by [`PAD`] zeros), and where each row ends. The
/// back-references copy first-layer pair ids (half the bytes of a column
/// and value); the ids are turned into columns and values in one pass at
/// the end. Reused from page to page (its arrays keep their capacity).
#[derive(Debug, Default, Clone)]
pub(crate) struct PageRows {
    ids: Vec<u32>,
    /// `ends[i]` is one past row `i`'s last entry.
    ends: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<f64>,
    /// The page's value dictionary, resolved (scratch).
    dict: Vec<f64>,
}

impl PageRows {
    /// Number of rows.
    pub(crate) fn n_rows(&self) -> usize {
        self.ends.len()
    }

    /// Entries of every row.
    pub(crate) fn nnz(&self) -> usize {
        self.cols.len().saturating_sub(PAD)
    }

    /// Where row `i`'s entries are in [`cols`](Self::cols) and
    /// [`vals`](Self::vals).
    #[inline]
    pub(crate) fn range(&self, i: usize) -> (usize, usize) {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (start, self.ends[i] as usize)
    }

    /// Every row's columns, then [`PAD`] zeros.
    pub(crate) fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Every row's values, then [`PAD`] zeros.
    pub(crate) fn vals(&self) -> &[f64] {
        &self.vals
    }

    /// Heap bytes of the arrays.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.ids.capacity() + self.ends.capacity() + self.cols.capacity())
            + 8 * (self.dict.capacity() + self.vals.capacity())
    }

    /// Empties the rows for a page of `nnz` entries and `n_rows` rows.
    pub(super) fn clear_for(&mut self, nnz: usize, n_rows: usize) -> Result<()> {
        self.ids.clear();
        self.ends.clear();
        self.cols.clear();
        self.vals.clear();
        // The sizes were validated against the page limit; the memory may
        // still be refused (many such pages at once, a process limit).
        try_reserve(&mut self.ids, nnz, DECODED_PAGE)?;
        try_reserve(&mut self.ends, n_rows, DECODED_PAGE)?;
        try_reserve(&mut self.cols, nnz + PAD, DECODED_PAGE)?;
        try_reserve(&mut self.vals, nnz + PAD, DECODED_PAGE)?;
        Ok(())
    }

    /// Every row's entries as first-layer ids of the page (before
    /// [`materialize`](Self::materialize) turns them into columns and
    /// values), and where each row ends in them.
    pub(crate) fn ids(&self) -> (&[u32], &[u32]) {
        (&self.ids, &self.ends)
    }

    /// The pair ids and row ends being decoded.
    pub(super) fn ids_and_ends(&mut self) -> (&mut Vec<u32>, &mut Vec<u32>) {
        (&mut self.ids, &mut self.ends)
    }

    /// Turns the ids into columns and values (through `tree`'s pairs).
    pub(super) fn materialize(&mut self, tree: &DecodeTree) {
        let (pair_cols, pair_vals) = (&tree.pair_cols[..], &tree.pair_vals[..]);
        self.cols.clear();
        self.cols.extend(
            self.ids
                .iter()
                .map(|&id| pair_cols.get(id as usize).copied().unwrap_or(0)),
        );
        self.cols.extend_from_slice(&[0; PAD]);
        self.vals.clear();
        self.vals.extend(
            self.ids
                .iter()
                .map(|&id| pair_vals.get(id as usize).copied().unwrap_or(0.0)),
        );
        self.vals.extend_from_slice(&[0.0; PAD]);
    }

    /// Loads the rows of `batch` (a page of another format, decoded).
    pub(crate) fn load_sparse(&mut self, batch: &SparseBatch) {
        self.cols.clear();
        self.cols.extend_from_slice(batch.cols());
        self.cols.extend_from_slice(&[0; PAD]);
        self.vals.clear();
        self.vals.extend_from_slice(batch.values());
        self.vals.extend_from_slice(&[0.0; PAD]);
        self.ends.clear();
        self.ends
            .extend(batch.offsets()[1..].iter().map(|&o| o as u32));
    }
}

impl DecodeTree {
    /// Decodes the batch `blob`, validated before by
    /// [`TocBatch::from_bytes`](super::TocBatch::from_bytes) (in this
    /// process: its bytes have not left memory since) and decoding to
    /// `nnz` non-zeros (its [`decoded_nnz`](super::TocBatch::decoded_nnz)),
    /// into `rows` (`dict`: its segment's dictionary, `page_rows`: the
    /// page header's row count, as [`page_layout`](super::page_layout)
    /// reads them); the tree keeps the pairs the rows' ids refer to, until
    /// its next build. The tree holds no valid batch for the kernels
    /// afterwards.
    ///
    /// # Errors
    /// Only for bytes that were never validated: the structure checks and
    /// the pair checks still run. A code out of range or columns out of
    /// order (which validation rejects) make a wrong page, never a panic
    /// or an out-of-bounds access.
    pub(crate) fn decode_trusted(
        &mut self,
        blob: &[u8],
        nnz: usize,
        rows: &mut PageRows,
        (dict, page_rows): (Option<&super::SharedDict>, usize),
    ) -> Result<()> {
        let layout = super::page_layout(blob, page_rows, dict)?;
        if layout.is_shared() {
            return match dict {
                Some(dict) => self.decode_trusted_shared(blob, &layout, (nnz, rows), dict),
                None => Err(super::needs_dictionary()),
            };
        }
        self.n_cols = layout.n_cols;
        self.zeros_possible = false;
        self.flat = !layout.has_tree();
        self.load_rows(blob, &layout)?;
        self.load_pairs_trusted(blob, &layout, &mut rows.dict);
        rows.clear_for(nnz, self.n_rows())?;
        if layout.has_tree() {
            self.decode_codes(rows, nnz);
        } else {
            // Flat: the pairs are the entries, row after row.
            rows.ids.extend_from_slice(&self.codes);
            rows.ends.extend_from_slice(&self.row_starts[1..]);
        }
        rows.materialize(self);
        Ok(())
    }

    /// The first layer (or a flat batch's entries) of bytes validated
    /// before: what `load_pairs` reads, without its checks (columns in
    /// range, values non-zero, ids in the dictionary) and with the
    /// escape-coded gaps summed as they are unpacked. `dict` is scratch
    /// for the resolved value dictionary.
    fn load_pairs_trusted(&mut self, blob: &[u8], layout: &Layout, dict: &mut Vec<f64>) {
        let cols = &layout.pair_cols;
        let n = layout.n_pairs();
        unpack_into(
            cols.payload(blob),
            cols.width,
            cols.count,
            &mut self.scratch,
        );
        self.pair_cols.clear();
        self.pair_cols.push(0);
        if layout.has_gaps() {
            let e = escape(cols.width) as u32;
            let out = &mut self.pair_cols;
            out.resize(n + 1, 0);
            // The running total of the symbols; a symbol other than the
            // escape ends an element (see `gaps.rs`). A flat batch's gaps
            // restart at every row: its columns are the totals less the
            // total before the row.
            let (mut total, mut k) = (0u32, 1usize);
            let flat = !layout.has_tree();
            let starts = &self.row_starts[..];
            let (mut row, mut row_end, mut base, mut last) = (0usize, 0usize, 0u32, 0u32);
            for &sym in &self.scratch {
                total = total.wrapping_add(sym);
                if sym == e {
                    continue;
                }
                if flat {
                    // Element k - 1 begins a later row: its gaps count
                    // from the total at the end of the row before.
                    while k > row_end && row + 1 < starts.len() {
                        row += 1;
                        row_end = starts[row] as usize;
                        base = last;
                    }
                }
                if let Some(slot) = out.get_mut(k) {
                    *slot = total.wrapping_sub(base);
                }
                last = total;
                k += 1;
            }
        } else {
            self.pair_cols.extend_from_slice(&self.scratch);
        }
        self.pair_vals.clear();
        self.pair_vals.push(0.0);
        match layout.values {
            Values::Inline { start } => {
                self.pair_vals
                    .extend((0..n).map(|i| f64_at(blob, start + 8 * i)));
            }
            Values::Indexed { ids, dict: d } => {
                resolve_dict_trusted(blob, &d, &mut self.scratch, dict);
                unpack_into(ids.payload(blob), ids.width, ids.count, &mut self.scratch);
                let dict = &dict[..];
                self.pair_vals.extend(
                    self.scratch
                        .iter()
                        .map(|&id| dict.get(id as usize).copied().unwrap_or(0.0)),
                );
            }
        }
    }

    /// The back-reference decode of a tree batch's codes (see the module
    /// docs). Created nodes are numbered from `n_first` in the order
    /// Algorithm 2 creates them, which is the order of their codes' ids.
    fn decode_codes(&mut self, rows: &mut PageRows, nnz: usize) {
        let n_first = self.pair_cols.len();
        // (offset, length) of every created node, two `u32`s each: one per
        // code that is not the first of its row. Pushed, not pre-sized:
        // zeroing arrays a page long cost more than filling them.
        let nodes = &mut self.scratch;
        nodes.clear();
        nodes.reserve(2 * self.codes.len());
        let out = &mut rows.ids;
        out.reserve(nnz.max(self.codes.len()));
        rows.ends.reserve(self.row_starts.len());
        for w in self.row_starts.windows(2) {
            let row = &self.codes[w[0] as usize..w[1] as usize];
            let mut prev_start = out.len();
            for (j, &code) in row.iter().enumerate() {
                let start = out.len();
                let code = code as usize;
                if code < n_first {
                    out.push(code as u32);
                } else {
                    push_node_output(out, nodes, code - n_first, start);
                }
                if j > 0 {
                    nodes.push(prev_start as u32);
                    nodes.push((start - prev_start) as u32 + 1);
                }
                prev_start = start;
            }
            rows.ends.push(out.len() as u32);
        }
        nodes.clear();
    }
}

/// A value dictionary of bytes validated before, resolved into `out`
/// (`scratch` for its packed parts): `resolve_dict` without its checks.
fn resolve_dict_trusted(blob: &[u8], dict: &Dict, scratch: &mut Vec<u32>, out: &mut Vec<f64>) {
    out.clear();
    match *dict {
        Dict::Float { start, len } => out.extend((0..len).map(|i| f64_at(blob, start + 8 * i))),
        Dict::Int { base, offsets } => {
            unpack_into(offsets.payload(blob), offsets.width, offsets.count, scratch);
            out.extend(scratch.iter().map(|&o| base.wrapping_add(o as i64) as f64));
        }
        Dict::Scaled {
            exponent,
            base,
            deltas,
        } => push_scaled_trusted(blob, exponent, base, &deltas, scratch, out),
        Dict::Grouped {
            groups,
            start,
            raw_start,
            raw_len,
        } => {
            for (exponent, base, deltas) in grouped_groups(blob, groups, start) {
                push_scaled_trusted(blob, exponent, base, &deltas, scratch, out);
            }
            out.extend((0..raw_len).map(|i| f64_at(blob, raw_start + 8 * i)));
        }
    }
}

/// The entries of a scaled dictionary (or group) of validated bytes,
/// appended to `out`.
fn push_scaled_trusted(
    blob: &[u8],
    exponent: u8,
    base: i64,
    deltas: &Packed,
    scratch: &mut Vec<u32>,
    out: &mut Vec<f64>,
) {
    unpack_into(deltas.payload(blob), deltas.width, deltas.count, scratch);
    let e = escape(deltas.width) as u32;
    let mut total = 0u64;
    for &sym in scratch.iter() {
        total += sym as u64;
        if sym != e {
            out.push(scaled_value(base.wrapping_add(total as i64), exponent));
        }
    }
}

/// Appends the output of created node `index` (Algorithm 2's nodes are
/// spans of earlier output: `nodes` holds an offset and a length per
/// node) to `out`. A span that is not earlier output (bytes that were
/// never validated) copies nothing.
#[inline]
pub(super) fn push_node_output(out: &mut Vec<u32>, nodes: &[u32], index: usize, start: usize) {
    let k = 2 * index;
    if let (Some(&o), Some(&l)) = (nodes.get(k), nodes.get(k + 1)) {
        let (o, l) = (o as usize, l as usize);
        if o + l <= start {
            out.extend_from_within(o..o + l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PageRows;
    use crate::codec::{Adaptive, DecodeTree, EncodeOptions, Encoder, Level, Packing, TocBatch};
    use crate::rng::Rng;
    use crate::sparse::SparseBatch;

    /// Trusted decoding gives the rows that validated decoding gives.
    fn check(batch: &SparseBatch, options: EncodeOptions, tree: &mut DecodeTree) {
        let encoded = Encoder::new(options).encode(batch).unwrap();
        let bytes = encoded.as_bytes();
        let expected = TocBatch::from_bytes(bytes).unwrap().decode();
        assert_eq!(&expected, batch);
        let mut rows = PageRows::default();
        tree.decode_trusted(
            bytes,
            encoded.decoded_nnz() as usize,
            &mut rows,
            (None, encoded.n_rows()),
        )
        .unwrap();
        assert_eq!(rows.n_rows(), batch.n_rows());
        assert_eq!(rows.nnz(), batch.nnz());
        for i in 0..batch.n_rows() {
            let (s, e) = rows.range(i);
            assert_eq!(
                (&rows.cols()[s..e], &rows.vals()[s..e]),
                batch.row(i),
                "row {i} ({options:?}, has tree {})",
                encoded.has_tree()
            );
        }
    }

    /// A batch of `rows` rows over `cols` columns whose values come from
    /// `value` (0 leaves the cell empty): one-hot blocks, decimals,
    /// integers, raw floats, empty rows and wide sparse columns between
    /// them, so every layout (tree and flat, plain and gap-coded columns,
    /// every dictionary kind) is met.
    fn batch(rng: &mut Rng, rows: usize, cols: usize, kind: u64) -> SparseBatch {
        let dense: Vec<Vec<f64>> = (0..rows)
            .map(|r| {
                (0..cols)
                    .map(|_| {
                        if rng.below(100) < [70, 95, 40, 99][kind as usize % 4] {
                            return 0.0;
                        }
                        match (kind / 4) % 4 {
                            0 => 1.0,
                            1 => (rng.below(2000) as f64 - 1000.0) / 100.0,
                            2 => rng.below(50_000) as f64 + 1.0,
                            _ => rng.unit() * 3.0 + (r % 3) as f64,
                        }
                    })
                    .collect()
            })
            .collect();
        SparseBatch::from_dense_rows(cols, &dense).unwrap()
    }

    #[test]
    fn trusted_decode_matches_validated_decode_on_every_layout() {
        let mut rng = Rng::new(7);
        let mut tree = DecodeTree::default();
        let levels = [
            EncodeOptions::default(),
            EncodeOptions::level(Level::Sparse),
            EncodeOptions::level(Level::Logical),
            EncodeOptions {
                adaptive: Adaptive::NONE,
                ..EncodeOptions::default()
            },
            EncodeOptions {
                packing: Packing::Bytes,
                ..EncodeOptions::default()
            },
        ];
        for kind in 0..16 {
            for (rows, cols) in [(1, 1), (7, 3), (50, 40), (120, 700), (250, 12)] {
                let b = batch(&mut rng, rows, cols, kind);
                for options in levels {
                    // The same tree reused from one batch to the next, as
                    // the loader does.
                    check(&b, options, &mut tree);
                }
            }
        }
        let empty_rows =
            SparseBatch::from_dense_rows(3, &[[0.0; 3], [1.0, 0.0, 2.0], [0.0; 3]]).unwrap();
        check(&empty_rows, EncodeOptions::default(), &mut tree);
    }
}

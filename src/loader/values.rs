//! The buffer's rows decoded to values: the row pipeline's buffer form
//! for pages without a dictionary to code against (self-contained TOC
//! pages of version 1 and 2 files, such as mnist5k's, and every other
//! format). Rows are decoded from the pages' compressed bytes into one
//! set of arrays, in page order, with no allocation or handle per row.
//!
//! A mini-batch copies its rows out of the arrays into the ones of its CSR
//! page. The rows are all over the buffer (tens of MiB, more than the
//! cache holds), and each row's copy depends on where it starts, which
//! depends on which row it is: done row by row, every row waited for two
//! misses in turn. So the copy goes in passes whose loads do not depend
//! on each other, which the processor overlaps: where the rows are, then
//! a first touch of each row, then the copies. Measured on flights3m with
//! a 10% buffer (2.7M rows, loader alone, each variant against No
//! Shuffle in the same run): gathering row by row cost 2.2x No Shuffle's
//! epoch; decoding each row straight into its batch (a thousand batches
//! written at once) about 2x, also in groups of batches sized for the
//! cache; batches that read their rows where they lie in the decoded
//! buffer (no copy) made the trainer's kernels wait on those misses
//! instead, 2.5x slower; the passes, 1.6x.

use super::arena::BlockSpan;
use super::units::RowGather;
use crate::codec::PAD;
use crate::dataset::{PackedBlock, PageDecoder};
use crate::error::Result;
use crate::limits::try_reserve;

const ROWS_OF_A_BUFFER: &str = "the decoded rows of a buffer";
const ROWS_OF_A_BATCH: &str = "a mini-batch's rows";

/// Appends `src[s..e]` to `dst` in fixed-size chunks of [`PAD`] entries,
/// trimming the excess: `src` holds at least `PAD` readable entries past
/// `e` ([`PageDecoder::cols`]), and `dst` has room for `PAD` more than the
/// row. A call to `memcpy` per row of a few entries cost more than the
/// copy; a fixed-size copy is a few moves the compiler emits inline.
#[inline(always)]
fn append_padded<T: Copy>(dst: &mut Vec<T>, src: &[T], s: usize, e: usize) {
    let len = dst.len();
    let mut k = s;
    while k < e {
        let chunk: &[T; PAD] = src[k..k + PAD].try_into().expect("PAD entries");
        dst.extend_from_slice(chunk);
        k += PAD;
    }
    dst.truncate(len + (e - s));
}

/// Decoded rows, one after the other: row `r` is
/// `cols[offsets[r]..offsets[r + 1]]` and the same range of `values`,
/// with its label and (when tracing) its number in the file; [`PAD`]
/// zeros follow the last row once [`finish`](Self::finish)ed.
#[derive(Debug, Default)]
pub(crate) struct ValueRows {
    offsets: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<f64>,
    labels: Vec<f64>,
    trace: Vec<u64>,
    tracing: bool,
    blocks: Vec<BlockSpan>,
}

impl ValueRows {
    /// An empty buffer, recording each row's number when `trace`.
    pub(crate) fn new(trace: bool) -> ValueRows {
        let mut rows = ValueRows {
            tracing: trace,
            ..ValueRows::default()
        };
        rows.clear();
        rows
    }

    /// Empties the buffer, keeping its capacity.
    pub(crate) fn clear(&mut self) {
        self.offsets.clear();
        self.offsets.push(0);
        self.cols.clear();
        self.values.clear();
        self.labels.clear();
        self.trace.clear();
        self.blocks.clear();
    }

    /// Rows held.
    pub(crate) fn n_rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The blocks held, in the order they were pushed (`start`: the
    /// block's first row).
    pub(crate) fn blocks(&self) -> &[BlockSpan] {
        &self.blocks
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.offsets.capacity() + self.cols.capacity())
            + 8 * (self.values.capacity() + self.labels.capacity() + self.trace.capacity())
            + std::mem::size_of::<BlockSpan>() * self.blocks.capacity()
    }

    /// Reserves room for `rows` rows of `nnz` entries in all.
    pub(crate) fn reserve(&mut self, rows: usize, nnz: usize) -> Result<()> {
        try_reserve(&mut self.offsets, rows, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.cols, nnz + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.values, nnz + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.labels, rows, ROWS_OF_A_BUFFER)
    }

    /// Appends every row of `block`, whose first row is row `first_row`
    /// of the file.
    ///
    /// # Errors
    /// As [`PackedBlock::decode_page`]; [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    pub(crate) fn push_block(
        &mut self,
        block: &PackedBlock,
        first_row: u64,
        decoder: &mut PageDecoder,
    ) -> Result<()> {
        let start = self.n_rows() as u32;
        let mut row = first_row;
        for j in 0..block.n_pages() {
            block.decode_page(j, decoder)?;
            self.push_page(decoder)?;
            let n = decoder.n_rows() as u64;
            if self.tracing {
                try_reserve(&mut self.trace, n as usize, ROWS_OF_A_BUFFER)?;
                self.trace.extend(row..row + n);
            }
            row += n;
        }
        try_reserve(&mut self.blocks, 1, ROWS_OF_A_BUFFER)?;
        self.blocks.push(BlockSpan {
            block: block.number(),
            start,
            rows: (row - first_row) as u32,
        });
        Ok(())
    }

    /// Appends every row of the page `decoder` holds.
    fn push_page(&mut self, decoder: &PageDecoder) -> Result<()> {
        let room = decoder.nnz() + PAD;
        if self.cols.capacity() - self.cols.len() < room {
            try_reserve(&mut self.cols, room, ROWS_OF_A_BUFFER)?;
        }
        if self.values.capacity() - self.values.len() < room {
            try_reserve(&mut self.values, room, ROWS_OF_A_BUFFER)?;
        }
        let n = decoder.n_rows();
        try_reserve(&mut self.offsets, n, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.labels, n, ROWS_OF_A_BUFFER)?;
        let (cols, vals) = (decoder.cols(), decoder.vals());
        for i in 0..n {
            let (s, e) = decoder.row_range(i);
            append_padded(&mut self.cols, cols, s, e);
            append_padded(&mut self.values, vals, s, e);
            self.offsets.push(self.cols.len() as u32);
            self.labels.push(decoder.label(i));
        }
        Ok(())
    }

    /// Appends `other`'s rows and blocks.
    pub(crate) fn append(&mut self, other: &ValueRows) -> Result<()> {
        let (base_entries, base_rows) = (self.cols.len() as u32, self.n_rows() as u32);
        let nnz = other.cols.len();
        try_reserve(&mut self.cols, nnz + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.values, nnz + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.offsets, other.offsets.len(), ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.labels, other.labels.len(), ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.trace, other.trace.len(), ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.blocks, other.blocks.len(), ROWS_OF_A_BUFFER)?;
        self.cols.extend_from_slice(&other.cols);
        self.values.extend_from_slice(&other.values);
        let offsets = other.offsets[1..].iter().map(|&o| o + base_entries);
        self.offsets.extend(offsets);
        self.labels.extend_from_slice(&other.labels);
        self.trace.extend_from_slice(&other.trace);
        let blocks = other.blocks.iter().map(|b| BlockSpan {
            start: b.start + base_rows,
            ..*b
        });
        self.blocks.extend(blocks);
        Ok(())
    }

    /// Pads the arrays for the gather's fixed-size copies past the last
    /// row: call once every row is in.
    pub(crate) fn finish(&mut self) -> Result<()> {
        try_reserve(&mut self.cols, PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.values, PAD, ROWS_OF_A_BUFFER)?;
        self.cols.extend_from_slice(&[0; PAD]);
        self.values.extend_from_slice(&[0.0; PAD]);
        Ok(())
    }

    /// The rows of the `i`-th block pushed (indices), appended to `out`.
    pub(crate) fn block_rows(&self, i: usize, out: &mut Vec<u32>) {
        let b = self.blocks[i];
        out.extend(b.start..b.start + b.rows);
    }

    /// Prefetches where the rows `pick` (indices) are: the epoch's next
    /// batch, while this one is gathered.
    pub(crate) fn prefetch(&self, pick: &[u32]) {
        for &r in pick {
            crate::prefetch::prefetch(&self.offsets, r as usize);
            crate::prefetch::prefetch(&self.labels, r as usize);
        }
    }

    /// Copies the rows `pick` (indices) into the pending batch `dst`, and
    /// their numbers in the file into `trace` when tracing (see the
    /// module docs for the passes). `batch_rows` sizes a new batch's
    /// arrays; `ranges` is scratch.
    pub(crate) fn gather(
        &self,
        pick: &[u32],
        (dst, trace): (&mut RowGather, &mut Vec<u64>),
        batch_rows: usize,
        ranges: &mut Vec<(u32, u32)>,
    ) -> Result<()> {
        if dst.offsets.is_empty() {
            try_reserve(&mut dst.offsets, batch_rows + 1, ROWS_OF_A_BATCH)?;
            dst.offsets.push(0);
            try_reserve(&mut dst.labels, batch_rows, ROWS_OF_A_BATCH)?;
        }
        // Pass 1: where each row is, and its label.
        ranges.clear();
        try_reserve(ranges, pick.len(), ROWS_OF_A_BATCH)?;
        for &r in pick {
            let r = r as usize;
            ranges.push((self.offsets[r], self.offsets[r + 1]));
            dst.labels.push(self.labels[r]);
        }
        // Pass 2: a first touch of each row's entries.
        let mut nnz = 0;
        let mut touched = 0u64;
        for &(s, e) in ranges.iter() {
            nnz += (e - s) as usize;
            touched ^= u64::from(self.cols[s as usize]) ^ self.values[s as usize].to_bits();
        }
        std::hint::black_box(touched);
        // Pass 3: the copies, with room for what they hold (the rows'
        // own entries, not an average: a buffer of a few wide rows).
        try_reserve(&mut dst.cols, nnz + PAD, ROWS_OF_A_BATCH)?;
        try_reserve(&mut dst.values, nnz + PAD, ROWS_OF_A_BATCH)?;
        for &(s, e) in ranges.iter() {
            let (s, e) = (s as usize, e as usize);
            append_padded(&mut dst.cols, &self.cols, s, e);
            append_padded(&mut dst.values, &self.values, s, e);
            dst.offsets.push(dst.cols.len() as u32);
        }
        if self.tracing {
            trace.extend(pick.iter().map(|&r| self.trace[r as usize]));
        }
        Ok(())
    }
}

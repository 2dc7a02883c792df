//! The row pipeline: CorgiPile's tuple shuffle (Algorithm 1: a buffer of
//! blocks, its tuples shuffled, then cut into mini-batches) with no row
//! ever held on its own. The strategies that keep rows in file order
//! within a buffer (No Shuffle, Shuffle Once, Block-Only) take the same
//! path without the shuffle.
//!
//! A buffer's pages are decoded from their compressed bytes (resident, or
//! just read and validated) into one set of arrays, the buffer's rows in
//! page order: sequential writes, the two halves of the buffer's blocks on
//! two threads. Then a uniform random permutation of the buffer's rows is
//! drawn, and each mini-batch copies its rows out of the decoded buffer
//! into the arrays of its CSR page. No per-row allocation, no handle per
//! row; the decoded buffer's arrays are reused from buffer to buffer.
//!
//! The copy reads at random from tens of MiB, more than the cache holds:
//! it goes in passes whose loads do not depend on each other, so the
//! processor overlaps the misses ([`RowEpoch::gather`]). Measured on
//! flights3m with a 10% buffer (2.7M rows, loader alone, each variant
//! against No Shuffle in the same run): gathering row by row cost 2.2x No
//! Shuffle's epoch; decoding each row straight into its batch (a thousand
//! batches written at once) about 2x, also in groups of batches sized for
//! the cache; batches that read their rows where they lie in the decoded
//! buffer (no copy) made the trainer's kernels wait on those misses
//! instead, 2.5x slower; the passes, 1.6x.
//!
//! This runs on the loader's producer thread while the trainer consumes
//! the batches (double buffering, paper 6.3). The batches are CSR, not
//! TOC: a mini-batch is used once per epoch, and encoding it costs more
//! than one kernel pass over it saves (`docs/RESULTS.md`).
//!
//! Departure from the paper: a buffer's last mini-batch, when not full,
//! takes the next buffer's first rows (as the paper's implementation
//! streams tuples); only the epoch's last batch may be short.

use std::sync::Arc;

use super::epoch::{fused_step, Produce, STREAM_TUPLES};
use super::feed::Feed;
use super::resident::{packed_bytes, Packed, Resident};
use super::units::RowGather;
use super::{MiniBatch, Plan, Strategy};
use crate::codec::PAD;
use crate::dataset::{Dataset, PageDecoder, Source};
use crate::error::{Error, Result};
use crate::limits::try_reserve;
use crate::rng::Rng;

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
/// followed by [`PAD`] zeros once complete.
#[derive(Debug, Default)]
struct RowArena {
    offsets: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<f64>,
}

impl RowArena {
    /// Appends `other`'s rows (without their padding).
    fn append(&mut self, other: &RowArena) -> Result<()> {
        let base = self.cols.len() as u32;
        let nnz = other.cols.len();
        try_reserve(&mut self.cols, nnz + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.values, nnz + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.offsets, other.offsets.len(), ROWS_OF_A_BUFFER)?;
        self.cols.extend_from_slice(&other.cols);
        self.values.extend_from_slice(&other.values);
        self.offsets
            .extend(other.offsets[1..].iter().map(|&o| o + base));
        Ok(())
    }

    fn clear(&mut self) {
        self.offsets.clear();
        self.offsets.push(0);
        self.cols.clear();
        self.values.clear();
    }

    fn heap_bytes(&self) -> usize {
        4 * (self.offsets.capacity() + self.cols.capacity()) + 8 * self.values.capacity()
    }

    fn n_rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
}

/// Where one of the two halves of a buffer is decoded.
struct Part<'a> {
    rows: &'a mut RowArena,
    labels: &'a mut Vec<f64>,
    trace: &'a mut Vec<u64>,
    decoder: &'a mut PageDecoder,
}

impl Part<'_> {
    /// Decodes `blocks` (in order) into the part's arrays, cleared first.
    fn decode(self, blocks: &[(usize, Packed)], plan: &Plan) -> Result<()> {
        let n: usize = blocks.iter().map(|(_, b)| b.n_rows()).sum();
        let nnz: u64 = blocks.iter().map(|(_, b)| b.nnz()).sum();
        self.rows.clear();
        self.labels.clear();
        self.trace.clear();
        try_reserve(&mut self.rows.offsets, n, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.rows.cols, nnz as usize + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(&mut self.rows.values, nnz as usize + PAD, ROWS_OF_A_BUFFER)?;
        try_reserve(self.labels, n, ROWS_OF_A_BUFFER)?;
        for (b, block) in blocks {
            let mut row = plan.block_first_row[*b];
            for j in 0..block.n_pages() {
                block.decode_page(j, self.decoder)?;
                push_page(self.rows, self.labels, self.decoder)?;
                let n = self.decoder.n_rows() as u64;
                if plan.trace {
                    self.trace.extend(row..row + n);
                }
                row += n;
            }
        }
        Ok(())
    }
}

/// The arrays and decoder of the buffer half decoded on another thread.
#[derive(Default)]
struct Side {
    rows: RowArena,
    labels: Vec<f64>,
    trace: Vec<u64>,
    decoder: PageDecoder,
}

impl Side {
    fn heap_bytes(&self) -> usize {
        self.rows.heap_bytes()
            + 8 * (self.labels.capacity() + self.trace.capacity())
            + self.decoder.heap_bytes()
    }
}

/// Appends every row of the page `decoder` holds to `rows` and its
/// labels to `labels`.
fn push_page(rows: &mut RowArena, labels: &mut Vec<f64>, decoder: &PageDecoder) -> Result<()> {
    let room = decoder.nnz() + PAD;
    if rows.cols.capacity() - rows.cols.len() < room {
        try_reserve(&mut rows.cols, room, ROWS_OF_A_BUFFER)?;
    }
    if rows.values.capacity() - rows.values.len() < room {
        try_reserve(&mut rows.values, room, ROWS_OF_A_BUFFER)?;
    }
    let n = decoder.n_rows();
    try_reserve(&mut rows.offsets, n, ROWS_OF_A_BUFFER)?;
    try_reserve(labels, n, ROWS_OF_A_BUFFER)?;
    let (cols, vals) = (decoder.cols(), decoder.vals());
    for i in 0..n {
        let (s, e) = decoder.row_range(i);
        append_padded(&mut rows.cols, cols, s, e);
        append_padded(&mut rows.values, vals, s, e);
        rows.offsets.push(rows.cols.len() as u32);
        labels.push(decoder.label(i));
    }
    Ok(())
}

/// One epoch of one worker in row mode (see the module docs).
pub(crate) struct RowEpoch<S: Source + 'static> {
    feed: Feed<S>,
    plan: Arc<Plan>,
    epoch: u64,
    buffers: u64,
    /// The tuple shuffle (CorgiPile, Epoch Shuffle) or file order.
    shuffle: bool,
    /// The buffer's rows, decoded, with their labels and (when tracing)
    /// global row numbers; reused from buffer to buffer.
    rows: RowArena,
    labels: Vec<f64>,
    trace: Vec<u64>,
    /// The order the buffer's rows leave in, and how many have left.
    order: Vec<u32>,
    next: usize,
    /// The batch being gathered (a buffer's last rows wait here for the
    /// next buffer's first); empty, without arrays, between batches.
    pending: RowGather,
    pending_trace: Vec<u64>,
    /// Where the rows being gathered are (scratch).
    ranges: Vec<(u32, u32)>,
    decoder: PageDecoder,
    side: Side,
    input_done: bool,
    failed: bool,
    peak: usize,
    /// The file, for the errors that concern a buffer (several blocks).
    path: std::path::PathBuf,
}

impl<S: Source + 'static> RowEpoch<S> {
    /// Starts the epoch: `order` is this worker's block order.
    pub(crate) fn start(
        dataset: Arc<Dataset<S>>,
        plan: Arc<Plan>,
        epoch: u64,
        order: Vec<usize>,
        resident: Arc<Resident>,
    ) -> Result<Self> {
        let path = dataset.path().to_path_buf();
        let feed = Feed::start(dataset, &plan, order, resident)?;
        let shuffle = matches!(plan.strategy, Strategy::CorgiPile | Strategy::EpochShuffle);
        Ok(RowEpoch {
            feed,
            plan,
            epoch,
            buffers: 0,
            shuffle,
            rows: RowArena::default(),
            labels: Vec::new(),
            trace: Vec::new(),
            order: Vec::new(),
            next: 0,
            pending: RowGather::default(),
            pending_trace: Vec::new(),
            ranges: Vec::new(),
            decoder: PageDecoder::new(),
            side: Side::default(),
            input_done: false,
            failed: false,
            peak: 0,
            path,
        })
    }

    /// The next buffer's blocks (`buffer_blocks` of them).
    fn next_blocks(&mut self) -> Result<Vec<(usize, Packed)>> {
        let mut blocks = Vec::with_capacity(self.plan.buffer_blocks);
        while blocks.len() < self.plan.buffer_blocks {
            match self.feed.next().transpose()? {
                Some((b, block, _)) => blocks.push((b, block)),
                None => {
                    self.input_done = true;
                    break;
                }
            }
        }
        Ok(blocks)
    }

    /// Decodes the next buffer and draws the order its rows leave in.
    fn decode_buffer(&mut self) -> Result<()> {
        let blocks = self.next_blocks()?;
        let n: usize = blocks.iter().map(|(_, b)| b.n_rows()).sum();
        let nnz: u64 = blocks.iter().map(|(_, b)| b.nnz()).sum();
        // Known before anything is decoded: the pages' counts were
        // validated with the block.
        crate::limits::check_decode_nnz(nnz, "non-zeros one buffer's pages decode to").map_err(
            |error| {
                // A few block numbers, not a buffer's hundred.
                let numbers: Vec<String> =
                    blocks.iter().take(5).map(|(b, _)| b.to_string()).collect();
                let more = blocks.len().saturating_sub(numbers.len());
                let section = match more {
                    0 => format!("the buffer of blocks {}", numbers.join(", ")),
                    _ => format!(
                        "the buffer of {} blocks ({}, and {more} more)",
                        blocks.len(),
                        numbers.join(", ")
                    ),
                };
                Error::InFile {
                    path: self.path.display().to_string(),
                    section,
                    offset: 0,
                    error: Box::new(error),
                }
            },
        )?;
        if u32::try_from(n).is_err() || u32::try_from(nnz).is_err() {
            return Err(Error::TooLarge {
                what: "rows or non-zeros of one buffer (u32 offsets)",
                value: (n as u64).max(nnz),
                max: u32::MAX as u64,
            });
        }
        // The two halves of the buffer's blocks are decoded at once, the
        // second on another thread (rayon): when the trainer waits for the
        // loader, its core is free for that half.
        let mid = blocks.len() / 2;
        let (first, second) = blocks.split_at(mid);
        let plan = &*self.plan;
        let main = Part {
            rows: &mut self.rows,
            labels: &mut self.labels,
            trace: &mut self.trace,
            decoder: &mut self.decoder,
        };
        let side = &mut self.side;
        let other = Part {
            rows: &mut side.rows,
            labels: &mut side.labels,
            trace: &mut side.trace,
            decoder: &mut side.decoder,
        };
        let (a, b) = rayon::join(|| main.decode(first, plan), || other.decode(second, plan));
        a?;
        b?;
        let rows = &mut self.rows;
        rows.append(&self.side.rows)?;
        try_reserve(&mut self.labels, self.side.labels.len(), ROWS_OF_A_BUFFER)?;
        self.labels.extend_from_slice(&self.side.labels);
        self.trace.extend_from_slice(&self.side.trace);
        // Room for the gather's fixed-size copies past the last row.
        rows.cols.extend_from_slice(&[0; PAD]);
        rows.values.extend_from_slice(&[0.0; PAD]);
        self.order.clear();
        try_reserve(&mut self.order, n, ROWS_OF_A_BUFFER)?;
        self.order.extend(0..n as u32);
        if self.shuffle {
            let labels = [
                STREAM_TUPLES,
                self.epoch,
                self.plan.worker as u64,
                self.buffers,
            ];
            Rng::stream(self.plan.seed, &labels).shuffle(&mut self.order);
        }
        self.buffers += 1;
        self.next = 0;
        let streamed: usize = blocks
            .iter()
            .filter(|(_, b)| Arc::strong_count(b) == 1)
            .map(|(_, b)| packed_bytes(b))
            .sum();
        self.peak = self.peak.max(self.held_bytes() + streamed);
        Ok(())
    }

    /// Copies the next `n` rows of the order into the pending batch.
    ///
    /// The rows are all over the decoded buffer (tens of MiB, more than
    /// the cache holds). Each row's copy depends on where its row starts,
    /// which depends on which row it is: done row by row, every row waited
    /// for two misses in turn. So the work goes in passes whose loads do
    /// not depend on each other, which the processor overlaps: where the
    /// rows are, then a first touch of each row, then the copies.
    fn gather(&mut self, n: usize) -> Result<()> {
        let pick = &self.order[self.next..self.next + n];
        let src = &self.rows;
        let dst = &mut self.pending;
        if dst.offsets.is_empty() {
            // What the batch can hold: at most the buffer's rows and
            // their real non-zeros (the average times the batch's rows
            // asked 572 MiB for a 4-row file of 14 MB: issue 34, item 6).
            // A batch that spans buffers grows in pass 3.
            let batch = self.plan.batch_rows.min(src.n_rows());
            let per_row = src.cols.len() / src.n_rows().max(1) + 1;
            let entries = per_row.saturating_mul(batch).min(src.cols.len());
            try_reserve(&mut dst.offsets, batch + 1, ROWS_OF_A_BATCH)?;
            dst.offsets.push(0);
            try_reserve(&mut dst.cols, entries + PAD, ROWS_OF_A_BATCH)?;
            try_reserve(&mut dst.values, entries + PAD, ROWS_OF_A_BATCH)?;
            try_reserve(&mut dst.labels, batch, ROWS_OF_A_BATCH)?;
        }
        // Pass 1: where each row is, and its label.
        self.ranges.clear();
        for &r in pick {
            let r = r as usize;
            self.ranges.push((src.offsets[r], src.offsets[r + 1]));
            dst.labels.push(self.labels[r]);
        }
        // Pass 2: a first touch of each row's entries.
        let mut nnz = 0;
        let mut touched = 0u64;
        for &(s, e) in &self.ranges {
            nnz += (e - s) as usize;
            touched ^= u64::from(src.cols[s as usize]) ^ src.values[s as usize].to_bits();
        }
        std::hint::black_box(touched);
        // Pass 3: the copies.
        try_reserve(&mut dst.cols, nnz + PAD, ROWS_OF_A_BATCH)?;
        try_reserve(&mut dst.values, nnz + PAD, ROWS_OF_A_BATCH)?;
        for &(s, e) in &self.ranges {
            let (s, e) = (s as usize, e as usize);
            append_padded(&mut dst.cols, &src.cols, s, e);
            append_padded(&mut dst.values, &src.values, s, e);
            dst.offsets.push(dst.cols.len() as u32);
        }
        if self.plan.trace {
            let trace = &self.trace;
            self.pending_trace
                .extend(pick.iter().map(|&r| trace[r as usize]));
        }
        self.next += n;
        Ok(())
    }

    fn step(&mut self) -> Result<Option<MiniBatch>> {
        let batch = self.plan.batch_rows;
        loop {
            if self.next < self.order.len() {
                let n = (batch - self.pending.n_rows()).min(self.order.len() - self.next);
                self.gather(n)?;
                if self.pending.n_rows() == batch {
                    return self.finish().map(Some);
                }
                continue;
            }
            if self.input_done {
                return match self.pending.n_rows() {
                    0 => Ok(None),
                    _ => self.finish().map(Some),
                };
            }
            self.decode_buffer()?;
        }
    }

    /// The pending batch, as a mini-batch of one page.
    fn finish(&mut self) -> Result<MiniBatch> {
        let rows = std::mem::take(&mut self.pending);
        let mut trace = std::mem::take(&mut self.pending_trace);
        let page = rows.finish(self.plan.n_cols, self.plan.format)?;
        if let Some(origin) = &self.plan.row_origin {
            trace.iter_mut().for_each(|r| *r = origin[*r as usize]);
        }
        let bytes = page.heap_bytes();
        Ok(MiniBatch::new(
            vec![page],
            false,
            self.plan.trace.then_some(trace),
            bytes,
        ))
    }
}

impl<S: Source + 'static> Produce for RowEpoch<S> {
    fn next_batch(&mut self) -> Option<Result<MiniBatch>> {
        let mut failed = self.failed;
        let batch = fused_step(&mut failed, || self.step());
        self.failed = failed;
        batch
    }

    fn peak_bytes(&self) -> usize {
        self.peak
    }

    /// The decoded buffer and its labels, the batch being gathered and
    /// what the read-ahead holds.
    fn held_bytes(&self) -> usize {
        self.rows.heap_bytes()
            + 8 * (self.labels.capacity() + self.trace.capacity())
            + 4 * self.order.capacity()
            + self.pending.heap_bytes()
            + 8 * (self.pending_trace.capacity() + self.ranges.capacity())
            + self.feed.ahead_bytes()
            + self.decoder.heap_bytes()
            + self.side.heap_bytes()
    }

    fn next_chunk(&mut self, max: usize) -> Vec<Result<MiniBatch>> {
        let mut chunk: Vec<Result<MiniBatch>> = Vec::new();
        while chunk.len() < max {
            let Some(item) = self.next_batch() else {
                break;
            };
            let failed = item.is_err();
            chunk.push(item);
            // Hand over what is ready: the next batch may need a whole
            // buffer decoded first.
            if failed || self.next >= self.order.len() {
                break;
            }
        }
        chunk
    }
}

//! The row pipeline: CorgiPile's tuple shuffle (Algorithm 1: a buffer of
//! blocks, its tuples shuffled, then cut into mini-batches) with no row
//! ever held on its own. The strategies that keep rows in file order
//! within a buffer (No Shuffle, Shuffle Once, Block-Only) take the same
//! path without the shuffle.
//!
//! **What a buffer holds.** A file whose pages are coded against shared
//! dictionaries keeps each row as its codes into its segment's
//! dictionary, which stays resident (`arena.rs`): a page is decoded only
//! as far as its codes, a shuffled mini-batch moves a few 16-bit words a
//! row, and the trainer gets a TOC batch (a compact tree of the nodes its
//! codes name, `codec/code_batch.rs`) or, where that tree would cost the
//! kernels more work than the rows, the rows written out from the codes.
//! Other files decode their pages to values (`values.rs`).
//!
//! **The whole file when it fits.** When the buffer form of every block
//! fits the loader's memory budget ([`LoaderOptions::memory`](super::LoaderOptions::memory)),
//! the first epoch decodes the whole file into one buffer that every
//! later epoch reuses: no block is read, checksummed or decoded again,
//! and CorgiPile's buffer is the whole file, a full shuffle every epoch
//! (the tuple shuffle's law, over every row). On small label-sorted
//! files a buffer of a few blocks holds a few labels; a whole-file buffer
//! holds them all. Otherwise buffers of `buffer_blocks` blocks are decoded
//! one after the other from the resident or streamed blocks, the two
//! halves of a buffer's blocks on two threads, the next buffer while this
//! one's batches are handed out (`rows/fill.rs`).
//!
//! Each buffer's order is a uniform random permutation of its rows
//! (CorgiPile, Epoch Shuffle) or file order, and each mini-batch is the
//! next `batch_rows` rows of it.
//!
//! This runs on the loader's producer thread while the trainer consumes
//! the batches (double buffering, paper 6.3).
//!
//! Departure from the paper: a buffer's last mini-batch, when not full,
//! takes the next buffer's first rows (as the paper's implementation
//! streams tuples); only the epoch's last batch may be short.

use std::sync::{Arc, Mutex};

use super::arena::RowCodes;
use super::epoch::{fused_step, Produce, STREAM_TUPLES};
use super::feed::Feed;
use super::huge::reserve_huge;
use super::resident::Resident;
use super::step_shuffle::StepShuffle;
use super::units::RowGather;
use super::{MiniBatch, Plan, Strategy};
use crate::codec::{BatchForm, CodeBatch, CodeBatchBuilder, RowsOut};
use crate::dataset::{Dataset, Source};
use crate::error::Result;
use crate::formats::{give_tree, take_tree, Batch, CodedRows, TocPage};
use crate::page::Page;
use crate::rng::Rng;

mod buffer;
mod fill;

use buffer::whole_file;
pub(crate) use buffer::{Buffer, BufferScratch, RowsKind};
use fill::Buffers;

const ORDER: &str = "the row order of a buffer";

/// The whole-file buffer of a loader, made by its first epoch and kept
/// for the next (see the module docs), and the last epoch's order array
/// (its memory reused: a fresh one of tens of MiB cost a page fault a
/// few KiB every epoch).
#[derive(Debug, Default)]
pub(crate) struct Kept {
    pub(crate) buffer: Mutex<Option<Arc<Buffer>>>,
    order: Mutex<Vec<u32>>,
}

/// A loader's [`Kept`], shared with its epochs.
pub(crate) type WholeFile = Arc<Kept>;

/// Where an epoch's rows come from.
enum Input<S: Source + 'static> {
    /// The whole file, decoded once (`None` until the first step makes
    /// it, reading `feed`).
    Whole {
        kept: WholeFile,
        buffer: Option<Arc<Buffer>>,
        feed: Option<Feed<S>>,
    },
    /// One buffer of blocks after another (`rows/fill.rs`).
    Buffers(Buffers<S>),
}

/// The mini-batch being gathered (a buffer's last rows wait here for the
/// next buffer's first).
/// One of the three is used, by the buffer's form: rows (values, or
/// pair codes written out for a format asked for), codes (code rows), or
/// coded rows (pair codes).
struct Pending {
    rows: RowGather,
    codes: CodeBatch,
    /// The labels of `codes`' rows.
    code_labels: Vec<f64>,
    coded: Coded,
    trace: Vec<u64>,
}

/// A batch of pair codes being gathered: row ends, codes, labels.
#[derive(Default)]
struct Coded {
    ends: Vec<u32>,
    codes: Vec<u32>,
    labels: Vec<f64>,
}

impl Pending {
    fn n_rows(&self) -> usize {
        self.rows.n_rows() + self.codes.n_rows() + self.coded.labels.len()
    }

    fn heap_bytes(&self) -> usize {
        let c = &self.coded;
        self.rows.heap_bytes()
            + self.codes.heap_bytes()
            + 8 * (self.code_labels.capacity() + self.trace.capacity() + c.labels.capacity())
            + 4 * (c.ends.capacity() + c.codes.capacity())
    }
}

/// One epoch of one worker in row mode (see the module docs).
pub(crate) struct RowEpoch<S: Source + 'static> {
    input: Input<S>,
    plan: Arc<Plan>,
    epoch: u64,
    /// This worker's block order in the epoch.
    block_order: Vec<usize>,
    buffers: u64,
    /// The tuple shuffle (CorgiPile, Epoch Shuffle) or file order.
    shuffle: bool,
    /// The order the buffer's units leave in, and how many have left.
    order: Vec<u32>,
    /// The tuple shuffle of `order`, done as far as batches have taken.
    step: Option<StepShuffle>,
    next: usize,
    pending: Pending,
    /// Scratch of the value gather and of the code gather.
    ranges: Vec<(u32, u32)>,
    slot_map: Vec<u32>,
    builder: CodeBatchBuilder,
    rows_out: RowsOut,
    failed: bool,
    peak: usize,
    /// The file, for the errors that concern a buffer (several blocks).
    path: std::path::PathBuf,
}

impl<S: Source + 'static> RowEpoch<S> {
    /// Starts the epoch: `order` is this worker's block order; `whole`
    /// the loader's whole-file buffer when the plan keeps one.
    pub(crate) fn start(
        dataset: Arc<Dataset<S>>,
        plan: Arc<Plan>,
        (epoch, order): (u64, Vec<usize>),
        resident: Arc<Resident>,
        whole: Option<WholeFile>,
    ) -> Result<Self> {
        let path = dataset.path().to_path_buf();
        let shuffle = matches!(plan.strategy, Strategy::CorgiPile | Strategy::EpochShuffle);
        let input = match whole {
            Some(kept) => {
                let buffer = kept.buffer.lock().ok().and_then(|k| k.clone());
                let feed = match buffer {
                    Some(_) => None,
                    // Every block of the file, in file order.
                    None => {
                        let all = (0..dataset.n_blocks()).collect();
                        Some(Feed::start(dataset, &plan, all, resident)?)
                    }
                };
                Input::Whole { kept, buffer, feed }
            }
            None => Input::Buffers(Buffers::new(
                Feed::start(dataset, &plan, order.clone(), resident)?,
                Arc::clone(&plan),
                path.clone(),
            )),
        };
        Ok(RowEpoch {
            input,
            plan,
            epoch,
            block_order: order,
            buffers: 0,
            shuffle,
            order: Vec::new(),
            step: None,
            next: 0,
            pending: Pending {
                rows: RowGather::default(),
                codes: CodeBatch::default(),
                code_labels: Vec::new(),
                coded: Coded::default(),
                trace: Vec::new(),
            },
            ranges: Vec::new(),
            slot_map: Vec::new(),
            builder: CodeBatchBuilder::default(),
            rows_out: RowsOut::default(),
            failed: false,
            peak: 0,
            path,
        })
    }

    /// Whether every buffer of the epoch has been ordered.
    fn input_done(&self) -> bool {
        match &self.input {
            Input::Whole { buffer, .. } => buffer.is_some() && self.buffers > 0,
            Input::Buffers(buffers) => buffers.input_done(),
        }
    }

    /// The next buffer: its rows decoded (for the whole file, made once)
    /// and the order they leave in drawn.
    fn next_buffer(&mut self) -> Result<()> {
        let plan = Arc::clone(&self.plan);
        let mut units = std::mem::take(&mut self.order);
        units.clear();
        match &mut self.input {
            Input::Whole { kept, buffer, feed } => {
                if buffer.is_none() {
                    let made = Arc::new(whole_file(feed.as_mut(), &plan, &self.path)?);
                    if let Ok(mut k) = kept.buffer.lock() {
                        *k = Some(Arc::clone(&made));
                    }
                    *buffer = Some(made);
                    *feed = None;
                }
                if let Ok(mut spare) = kept.order.lock() {
                    if spare.capacity() > units.capacity() {
                        units = std::mem::take(&mut *spare);
                        units.clear();
                    }
                }
                let b = buffer.as_deref().expect("made above");
                reserve_huge(&mut units, b.n_rows(), ORDER)?;
                // The blocks were pushed in file order: block `k` is the
                // `k`-th held. In the epoch's block order, as a buffer of
                // every block is: where the buffer covers the file, whether
                // the budget keeps the whole file or not changes nothing.
                for &k in &self.block_order {
                    b.block_units(k, &mut units);
                }
            }
            Input::Buffers(buffers) => {
                let coded = &mut self.pending.coded.codes;
                let extra = buffers.advance(|spent, next| carry_codes(coded, spent, next))?;
                let buffer = buffers.current();
                reserve_huge(&mut units, buffer.n_rows(), ORDER)?;
                for i in 0..buffer.blocks().len() {
                    buffer.block_units(i, &mut units);
                }
                self.peak = self.peak.max(self.held_bytes() + extra);
            }
        }
        // The tuple shuffle, drawn as the batches take their rows
        // (`step_shuffle.rs`).
        self.step = self.shuffle.then(|| {
            let labels = [
                STREAM_TUPLES,
                self.epoch,
                self.plan.worker as u64,
                self.buffers,
            ];
            StepShuffle::new(Rng::stream(self.plan.seed, &labels))
        });
        self.order = units;
        self.buffers += 1;
        self.next = 0;
        self.peak = self.peak.max(self.held_bytes());
        Ok(())
    }

    /// Gathers the next `n` units of the order into the pending batch,
    /// the batch after it prefetched meanwhile.
    fn gather(&mut self, n: usize) -> Result<()> {
        if let Some(step) = &mut self.step {
            // This batch's rows and the next's (prefetched below).
            step.fix(&mut self.order, self.next + n + self.plan.batch_rows);
        }
        let pick = &self.order[self.next..self.next + n];
        let after = &self.order[self.next + n..];
        let after = &after[..after.len().min(self.plan.batch_rows)];
        let p = &mut self.pending;
        let buffer = match &self.input {
            Input::Whole { buffer, .. } => buffer.as_deref().expect("made before the first gather"),
            Input::Buffers(buffers) => buffers.current(),
        };
        match buffer {
            Buffer::Values(v) => v.prefetch(after),
            Buffer::Codes(c) => c.prefetch(after),
        }
        match buffer {
            Buffer::Values(v) => v.gather(
                pick,
                (&mut p.rows, &mut p.trace),
                self.plan.batch_rows,
                &mut self.ranges,
            )?,
            Buffer::Codes(c) if c.form() == RowCodes::Pairs && self.plan.format_asked.is_none() => {
                let coded = &mut p.coded;
                let out = (&mut coded.ends, &mut coded.codes);
                c.gather_coded(pick, out, (&mut coded.labels, &mut p.trace))?
            }
            Buffer::Codes(c) if c.form() == RowCodes::Pairs => {
                let rows = &mut p.rows;
                if rows.offsets.is_empty() {
                    rows.offsets.push(0);
                }
                c.gather_rows(
                    pick,
                    (&mut rows.offsets, &mut rows.cols, &mut rows.values),
                    (&mut rows.labels, &mut p.trace),
                )?
            }
            Buffer::Codes(c) => {
                if p.codes.starts.is_empty() {
                    p.codes.clear();
                }
                let out = (&mut p.code_labels, &mut p.trace);
                c.gather_codes(pick, &mut p.codes, &mut self.slot_map, out)?
            }
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
            if self.input_done() {
                return match self.pending.n_rows() {
                    0 => Ok(None),
                    _ => self.finish().map(Some),
                };
            }
            self.next_buffer()?;
        }
    }

    /// The pending batch, as a mini-batch of one page: its rows (CSR, or
    /// the format asked for), or its codes made into a TOC batch or
    /// written out as rows, as the kernels' form rule finds cheaper.
    fn finish(&mut self) -> Result<MiniBatch> {
        let p = &mut self.pending;
        let mut trace = std::mem::take(&mut p.trace);
        let page = if !p.coded.labels.is_empty() {
            let coded = std::mem::take(&mut p.coded);
            let table = match &self.input {
                Input::Whole { buffer, .. } => buffer.as_deref(),
                Input::Buffers(buffers) => Some(buffers.current()),
            };
            let Some(Buffer::Codes(arena)) = table else {
                unreachable!("pair codes come from a buffer of codes");
            };
            let table = arena.table().cloned().unwrap_or_else(|| Vec::new().into());
            let rows =
                CodedRows::from_valid_parts(self.plan.n_cols, table, coded.ends, coded.codes)?;
            Page::new(Batch::Coded(rows), coded.labels)?
        } else if p.codes.n_rows() > 0 {
            let force = self.plan.format_asked.map(|_| BatchForm::Rows);
            let mut tree = take_tree();
            let labels = std::mem::take(&mut p.code_labels);
            let form = self.builder.build(
                &mut p.codes,
                self.plan.n_cols,
                force,
                (&mut tree, &mut self.rows_out),
            );
            p.codes.clear();
            match form? {
                BatchForm::Tree => Page::new(Batch::Toc(TocPage::from_tree(tree)), labels)?,
                BatchForm::Rows => {
                    give_tree(tree);
                    let o = &mut self.rows_out;
                    let rows = RowGather {
                        offsets: std::mem::take(&mut o.offsets),
                        cols: std::mem::take(&mut o.cols),
                        values: std::mem::take(&mut o.vals),
                        labels,
                    };
                    rows.finish(self.plan.n_cols, self.plan.format)?
                }
            }
        } else {
            std::mem::take(&mut p.rows).finish(self.plan.n_cols, self.plan.format)?
        };
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

/// A mini-batch of pair codes begun in buffer `spent` and finished in
/// `next`: its codes, ids into `spent`'s table of pairs, made ids into
/// `next`'s (each buffer keeps its own table).
fn carry_codes(codes: &mut [u32], spent: &Buffer, next: &mut Buffer) -> Result<()> {
    match (spent, next) {
        (Buffer::Codes(spent), Buffer::Codes(next)) if !codes.is_empty() => {
            next.adopt_pair_codes(spent, codes)
        }
        _ => Ok(()),
    }
}

impl<S: Source + 'static> Drop for RowEpoch<S> {
    /// Hands the order's memory to the next epoch.
    fn drop(&mut self) {
        if let Input::Whole { kept, .. } = &self.input {
            if let Ok(mut spare) = kept.order.lock() {
                if self.order.capacity() > spare.capacity() {
                    *spare = std::mem::take(&mut self.order);
                }
            }
        }
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

    /// The buffers being decoded and gathered (not the whole-file buffer,
    /// which the loader keeps across epochs), the order, the batch being
    /// gathered and what the read-ahead holds.
    fn held_bytes(&self) -> usize {
        let input = match &self.input {
            Input::Whole { feed, .. } => feed.as_ref().map_or(0, Feed::ahead_bytes),
            Input::Buffers(buffers) => buffers.heap_bytes(),
        };
        input
            + 4 * (self.order.capacity() + self.slot_map.capacity())
            + self.pending.heap_bytes()
            + 8 * self.ranges.capacity()
            + self.builder.heap_bytes()
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

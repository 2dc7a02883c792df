//! One epoch of one worker for the strategies that hold units (pages in
//! page mode; rows of Sliding-Window and MRS in row mode): a pull-based
//! state machine (blocks in, mini-batches out), run either on the
//! consumer's thread (single buffering) or on a producer thread feeding a
//! bounded channel (double buffering, CorgiPile paper 6.3). Both runs draw
//! the same random numbers in the same order, so they yield the same
//! sequence. Row mode of the other strategies is `rows.rs`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::feed::Feed;
use super::resident::Resident;
use super::units::{block_units, make_batch, Unit};
use super::{MiniBatch, Mode, Plan, Strategy};
use crate::dataset::{Dataset, PageDecoder, Source};
use crate::error::Result;
use crate::rng::Rng;

/// Stream labels of the random generators (with the seed, the epoch and
/// the worker), so every permutation is fixed by (seed, epoch).
pub(crate) const STREAM_TUPLES: u64 = 2;
const STREAM_WINDOW: u64 = 3;

/// Something that yields an epoch's mini-batches in order.
pub(crate) trait Produce: Send {
    /// The next mini-batch; `None` at the end of the epoch or after an
    /// error.
    fn next_batch(&mut self) -> Option<Result<MiniBatch>>;
    /// The most heap bytes held at once so far (buffered units and
    /// batches made but not yet handed over).
    fn peak_bytes(&self) -> usize;
    /// Heap bytes held now.
    fn held_bytes(&self) -> usize;
    /// The next mini-batch, then up to `max - 1` more that are ready
    /// without further work; empty at the end of the epoch.
    fn next_chunk(&mut self, max: usize) -> Vec<Result<MiniBatch>>;
}

/// One step of a producer that stops for good at its first error: `None`
/// once `failed`, else the step's batch, its error marking it failed.
pub(super) fn fused_step(
    failed: &mut bool,
    step: impl FnOnce() -> Result<Option<MiniBatch>>,
) -> Option<Result<MiniBatch>> {
    if *failed {
        return None;
    }
    let result = step().transpose();
    *failed = matches!(result, Some(Err(_)));
    result
}

/// The state of one epoch for one worker.
pub(crate) struct EpochState<S: Source + 'static> {
    feed: Feed<S>,
    plan: Arc<Plan>,
    /// Units whose order is final, waiting to be cut into mini-batches.
    pending: VecDeque<Unit>,
    pending_rows: usize,
    pending_bytes: usize,
    /// Sliding-Window's window or MRS's reservoir.
    held: Vec<Unit>,
    held_bytes: usize,
    /// Units offered to the reservoir so far (MRS).
    seen: u64,
    /// Where MRS's replay loop over the reservoir stands.
    replay_cursor: usize,
    rng: Rng,
    epoch: u64,
    buffers: u64,
    input_done: bool,
    ready: VecDeque<MiniBatch>,
    ready_bytes: usize,
    failed: bool,
    peak: usize,
    decoder: PageDecoder,
}

impl<S: Source + 'static> EpochState<S> {
    /// Starts the epoch: `order` is this worker's block order.
    pub(crate) fn start(
        dataset: Arc<Dataset<S>>,
        plan: Arc<Plan>,
        epoch: u64,
        order: Vec<usize>,
        resident: Arc<Resident>,
    ) -> Result<Self> {
        let feed = Feed::start(dataset, &plan, order, resident)?;
        let rng = Rng::stream(plan.seed, &[STREAM_WINDOW, epoch, plan.worker as u64]);
        Ok(EpochState {
            feed,
            plan,
            pending: VecDeque::new(),
            pending_rows: 0,
            pending_bytes: 0,
            held: Vec::new(),
            held_bytes: 0,
            seen: 0,
            replay_cursor: 0,
            rng,
            epoch,
            buffers: 0,
            input_done: false,
            ready: VecDeque::new(),
            ready_bytes: 0,
            failed: false,
            peak: 0,
            decoder: PageDecoder::new(),
        })
    }

    /// The next block's units, or `None` when the worker's blocks are done.
    fn next_units(&mut self) -> Option<Result<Vec<Unit>>> {
        let (b, block, _) = match self.feed.next()? {
            Ok(loaded) => loaded,
            Err(e) => return Some(Err(e)),
        };
        let first_row = self.plan.block_first_row[b];
        Some(block_units(
            &block,
            first_row,
            &self.plan,
            &mut self.decoder,
        ))
    }

    fn push_pending(&mut self, unit: Unit) {
        self.pending_rows += unit.n_rows();
        self.pending_bytes += unit.bytes();
        self.pending.push_back(unit);
    }

    /// Reads more input and moves units into `pending` as the strategy
    /// says. Sets `input_done` when the worker's blocks are exhausted and
    /// every held unit has been released.
    fn refill(&mut self) -> Result<()> {
        match self.plan.strategy {
            Strategy::NoShuffle | Strategy::BlockOnly | Strategy::ShuffleOnce => {
                match self.next_units().transpose()? {
                    Some(units) => units.into_iter().for_each(|u| self.push_pending(u)),
                    None => self.input_done = true,
                }
            }
            Strategy::CorgiPile | Strategy::EpochShuffle => {
                // Fill the buffer with the next n blocks, shuffle their
                // tuples (pages in page mode), release them all.
                let mut buffer = Vec::new();
                for _ in 0..self.plan.buffer_blocks {
                    match self.next_units().transpose()? {
                        Some(units) => buffer.extend(units),
                        None => {
                            self.input_done = true;
                            break;
                        }
                    }
                }
                let labels = [
                    STREAM_TUPLES,
                    self.epoch,
                    self.plan.worker as u64,
                    self.buffers,
                ];
                Rng::stream(self.plan.seed, &labels).shuffle(&mut buffer);
                self.buffers += 1;
                buffer.into_iter().for_each(|u| self.push_pending(u));
            }
            Strategy::SlidingWindow => match self.next_units().transpose()? {
                Some(units) => {
                    for unit in units {
                        if self.held.len() < self.plan.window_units {
                            self.held_bytes += unit.bytes();
                            self.held.push(unit);
                        } else {
                            let j = self.rng.below(self.held.len() as u64) as usize;
                            self.held_bytes += unit.bytes();
                            let out = std::mem::replace(&mut self.held[j], unit);
                            self.held_bytes -= out.bytes();
                            self.push_pending(out);
                        }
                    }
                }
                None => self.release_held(),
            },
            Strategy::Mrs => match self.next_units().transpose()? {
                Some(units) => {
                    for unit in units {
                        self.seen += 1;
                        if self.held.len() < self.plan.window_units {
                            self.held_bytes += unit.bytes();
                            self.held.push(unit);
                            continue;
                        }
                        // Reservoir sampling: keep the new unit with
                        // probability R / seen, dropping a random one; the
                        // dropped unit streams to SGD.
                        let j = self.rng.below(self.seen) as usize;
                        if j < self.held.len() {
                            self.held_bytes += unit.bytes();
                            let out = std::mem::replace(&mut self.held[j], unit);
                            self.held_bytes -= out.bytes();
                            self.push_pending(out);
                        } else {
                            self.push_pending(unit);
                        }
                    }
                }
                None => self.release_held(),
            },
        }
        self.peak = self.peak.max(self.held_now());
        Ok(())
    }

    /// End of input for Sliding-Window and MRS: the held units leave in a
    /// random order, so every unit is visited once.
    fn release_held(&mut self) {
        let mut held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        self.rng.shuffle(&mut held);
        held.into_iter().for_each(|u| self.push_pending(u));
        self.input_done = true;
    }

    /// Takes units off `pending` until they hold `batch_rows` rows (or
    /// `pending` runs out).
    fn take_run(&mut self) -> Vec<Unit> {
        let mut run = Vec::new();
        let mut rows = 0;
        while rows < self.plan.batch_rows {
            let Some(unit) = self.pending.pop_front() else {
                break;
            };
            rows += unit.n_rows();
            self.pending_bytes -= unit.bytes();
            run.push(unit);
        }
        self.pending_rows -= rows;
        run
    }

    /// MRS's second thread, serialised: a run looping over the reservoir.
    fn replay_run(&mut self) -> Vec<Unit> {
        let mut run = Vec::new();
        let mut rows = 0;
        let n = self.held.len();
        while rows < self.plan.batch_rows && run.len() < n {
            let unit = self.held[self.replay_cursor % n].clone();
            self.replay_cursor = (self.replay_cursor + 1) % n;
            rows += unit.n_rows();
            run.push(unit);
        }
        run
    }

    /// Cuts every complete mini-batch out of `pending` (all of it once the
    /// input is done) and builds them in parallel.
    fn form_batches(&mut self) -> Result<()> {
        let mut runs = Vec::new();
        let mut replays = Vec::new();
        let before_take = self.pending_bytes;
        while self.pending_rows >= self.plan.batch_rows
            || (self.input_done && !self.pending.is_empty())
        {
            runs.push(self.take_run());
            let reservoir_full = self.held.len() == self.plan.window_units;
            if self.plan.strategy == Strategy::Mrs && reservoir_full && !self.input_done {
                replays.push(self.replay_run());
            }
        }
        let plan = &self.plan;
        let build = |runs: Vec<Vec<Unit>>, replay| -> Result<Vec<MiniBatch>> {
            runs.into_iter()
                .map(|run| make_batch(run, plan, replay))
                .collect()
        };
        let stream = build(runs, false)?;
        let before = self.ready.len();
        if replays.is_empty() {
            self.ready.extend(stream);
        } else {
            // One replay batch after each stream batch, as the two threads
            // of MRS interleave.
            let replay = build(replays, true)?;
            let mut replay = replay.into_iter();
            for batch in stream {
                self.ready.push_back(batch);
                self.ready.extend(replay.next());
            }
        }
        self.ready_bytes += self
            .ready
            .iter()
            .skip(before)
            .map(|b| b.owned_bytes)
            .sum::<usize>();
        if plan.mode != Mode::Page {
            // A row-mode batch copies its rows: the units it was made of
            // and the batch are held together for a moment. (A page-mode
            // batch shares its units' pages: nothing more.)
            let building = before_take + self.ready_bytes;
            self.peak = self
                .peak
                .max(building + self.held_bytes + self.feed.ahead_bytes());
        }
        self.peak = self.peak.max(self.held_now());
        Ok(())
    }

    /// Bytes held now, trees pooled for reuse included (the pool is the
    /// process's, shared by every loader: see `formats::pooled_bytes`).
    fn held_now(&self) -> usize {
        self.pending_bytes
            + self.held_bytes
            + self.ready_bytes
            + self.feed.ahead_bytes()
            + crate::formats::pooled_bytes()
    }

    fn step(&mut self) -> Result<Option<MiniBatch>> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                self.ready_bytes -= batch.owned_bytes;
                return Ok(Some(batch));
            }
            if self.input_done && self.pending.is_empty() {
                return Ok(None);
            }
            if !self.input_done {
                self.refill()?;
            }
            self.form_batches()?;
        }
    }
}

impl<S: Source + 'static> Produce for EpochState<S> {
    fn next_batch(&mut self) -> Option<Result<MiniBatch>> {
        let mut failed = self.failed;
        let batch = fused_step(&mut failed, || self.step());
        self.failed = failed;
        batch
    }

    fn peak_bytes(&self) -> usize {
        self.peak
    }

    fn held_bytes(&self) -> usize {
        self.held_now()
    }

    fn next_chunk(&mut self, max: usize) -> Vec<Result<MiniBatch>> {
        let mut chunk: Vec<Result<MiniBatch>> = self.next_batch().into_iter().collect();
        if !matches!(chunk.first(), Some(Ok(_))) {
            return chunk;
        }
        while chunk.len() < max {
            let Some(batch) = self.ready.pop_front() else {
                break;
            };
            self.ready_bytes -= batch.owned_bytes;
            chunk.push(Ok(batch));
        }
        chunk
    }
}

//! The end of TupleShuffle (CorgiPile paper section 6.2): buffers in,
//! their tuples shuffled, cut into mini-batches and handed to the
//! library's trainer ([`tocpile_lib::train::Sgd`]), which steps the model
//! as `tocpile train` does (the step rule, the learning rate's decay,
//! the last epoch's tail average, the divergence check): the extension
//! has no SGD loop of its own.
//!
//! The producer (the backend's thread: it alone may call PostgreSQL)
//! reads blocks and sends [`Chunk`]s, one buffer each, then
//! [`Chunk::EndEpoch`]; a [`Feeder`] shuffles each buffer's tuples, cuts
//! them into mini-batches of `batch_rows` rows (a mini-batch continues
//! across buffers; the last of an epoch may be short), as the library's
//! loader cuts a file's rows, and steps. Page tables: whole pages
//! shuffled, a mini-batch of the next pages holding `batch_rows` rows, as
//! the library's page mode.
//!
//! Before each step the feeder checks whether the statement was
//! cancelled ([`Interrupts`]): on the backend's thread with
//! `CHECK_FOR_INTERRUPTS`, on a thread of its own (double buffering) by a
//! flag the backend sets, so that a cancel or terminate takes effect
//! within a mini-batch, however large the buffer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tocpile_lib::model::Model;
use tocpile_lib::rng::Rng;
use tocpile_lib::train::{LabelSummary, Sgd, TrainOptions};
use tocpile_lib::Page;

use crate::failure::{try_vec, Failure, Result};
use crate::pages::{PageFormat, RawPage};
use crate::rows::RowBuffer;

/// One buffer's tuples, as read, and the tuple shuffle to apply (done by
/// the feeder: with double buffering, on its thread, while the backend
/// reads the next buffer).
#[derive(Debug)]
pub enum Chunk {
    /// Rows of an ordinary table.
    Rows {
        /// The buffer's rows, in table order.
        rows: RowBuffer,
        /// The tuple shuffle (CorgiPile), or `None` for table order.
        shuffle: Option<Rng>,
    },
    /// Pages of a page table, as stored, in table order, and their
    /// shuffle.
    Pages(Vec<RawPage>, Option<Rng>),
    /// The epoch's last buffer has been sent.
    EndEpoch,
}

/// How the feeder learns that the statement was cancelled.
#[derive(Debug, Clone)]
pub enum Interrupts {
    /// It runs on the backend's thread: `CHECK_FOR_INTERRUPTS` (which
    /// raises the cancel's error itself).
    Backend,
    /// It runs on a thread of its own: the flag the backend sets.
    Flag(Arc<AtomicBool>),
}

impl Interrupts {
    fn check(&self) -> Result<()> {
        match self {
            Interrupts::Backend => {
                pgrx::check_for_interrupts!();
                Ok(())
            }
            Interrupts::Flag(stop) if stop.load(Ordering::Relaxed) => Err(Failure::cancelled()),
            Interrupts::Flag(_) => Ok(()),
        }
    }
}

/// What one epoch did.
#[derive(Debug, Clone)]
pub struct EpochFigures {
    /// Epoch number, from 0.
    pub epoch: usize,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Mean training loss of the epoch's rows, before their step.
    pub loss: f64,
    /// Their accuracy (R^2 for regression).
    pub accuracy: f64,
    /// Rows stepped on.
    pub rows: u64,
    /// Mini-batches (steps).
    pub steps: usize,
    /// Seconds from the end of the previous epoch (the start of training
    /// for the first) to the end of this one.
    pub seconds: f64,
    /// Of those, seconds the feeder waited for buffers.
    pub wait_seconds: f64,
}

/// Cuts buffers into mini-batches and steps the model.
pub struct Feeder {
    sgd: Sgd,
    batch_rows: usize,
    /// How stored pages are validated and loaded (page tables).
    pages: Option<PageFormat>,
    interrupts: Interrupts,
    /// Rows of a mini-batch begun in the previous buffer.
    carry: RowBuffer,
    /// Pages of a mini-batch begun, and their rows.
    pending: Vec<Page>,
    pending_rows: usize,
    epoch_start: Instant,
    waited: f64,
}

impl Feeder {
    /// A feeder training `model` under `options` on rows whose labels
    /// `labels` summarises (its first epoch starts now).
    ///
    /// # Errors
    /// The library's, for options out of range (checked by the caller
    /// before) or memory the trainer cannot allocate.
    pub fn new(
        model: Model,
        options: &TrainOptions,
        labels: &LabelSummary,
        batch_rows: usize,
        pages: Option<PageFormat>,
        interrupts: Interrupts,
    ) -> Result<Feeder> {
        let carry = RowBuffer::new(model.n_cols());
        Ok(Feeder {
            sgd: Sgd::new(model, options, labels)?,
            batch_rows,
            pages,
            interrupts,
            carry,
            pending: Vec::new(),
            pending_rows: 0,
            epoch_start: Instant::now(),
            waited: 0.0,
        })
    }

    /// The model as trained so far.
    pub fn into_model(self) -> Model {
        self.sgd.into_model()
    }

    /// Runs on its own thread: the interrupts it checks are a flag.
    pub fn set_interrupts(&mut self, interrupts: Interrupts) {
        self.interrupts = interrupts;
    }

    /// Counts `seconds` spent waiting for a chunk.
    pub fn waited(&mut self, seconds: f64) {
        self.waited += seconds;
    }

    /// Takes one chunk; at [`Chunk::EndEpoch`] returns the epoch's
    /// figures.
    pub fn feed(&mut self, chunk: Chunk) -> Result<Option<EpochFigures>> {
        match chunk {
            Chunk::Rows { rows, shuffle } => {
                let mut order = try_vec(rows.n_rows(), "the buffer's order")?;
                order.extend(0..rows.n_rows() as u32);
                if let Some(mut rng) = shuffle {
                    rng.shuffle(&mut order);
                }
                self.feed_rows(&rows, &order).map(|()| None)
            }
            Chunk::Pages(mut pages, shuffle) => {
                if let Some(mut rng) = shuffle {
                    rng.shuffle(&mut pages);
                }
                self.feed_pages(pages).map(|()| None)
            }
            Chunk::EndEpoch => self.end_epoch().map(Some),
        }
    }

    fn step(&mut self, pages: &[Page]) -> Result<()> {
        self.interrupts.check()?;
        self.sgd.step(pages).map_err(Failure::from)
    }

    /// Moves row `r` of `rows` to the mini-batch begun.
    fn carry_row(&mut self, rows: &RowBuffer, r: usize) -> Result<()> {
        let (cols, values) = rows.row(r);
        for (&c, &v) in cols.iter().zip(values) {
            self.carry.push_entry(c, v)?;
        }
        self.carry.finish_row(rows.labels()[r])
    }

    /// The mini-batch begun, as one page (emptied).
    fn carried(&mut self) -> Result<Page> {
        let all: Vec<u32> = (0..self.carry.n_rows() as u32).collect();
        let page = self.carry.gather(&all)?;
        self.carry.clear();
        Ok(page)
    }

    fn feed_rows(&mut self, rows: &RowBuffer, order: &[u32]) -> Result<()> {
        let batch = self.batch_rows;
        let mut rest = order;
        if self.carry.n_rows() > 0 {
            let take = (batch - self.carry.n_rows()).min(rest.len());
            for &r in &rest[..take] {
                self.carry_row(rows, r as usize)?;
            }
            rest = &rest[take..];
            if self.carry.n_rows() < batch {
                return Ok(());
            }
            let page = self.carried()?;
            self.step(&[page])?;
        }
        let mut chunks = rest.chunks_exact(batch);
        for ids in chunks.by_ref() {
            let page = rows.gather(ids)?;
            self.step(&[page])?;
        }
        for &r in chunks.remainder() {
            self.carry_row(rows, r as usize)?;
        }
        Ok(())
    }

    fn feed_pages(&mut self, raw: Vec<RawPage>) -> Result<()> {
        let format = self
            .pages
            .clone()
            .ok_or_else(|| Failure::data("pages given to a feeder of rows"))?;
        for r in &raw {
            let page = format.load(r)?;
            self.pending_rows += page.n_rows();
            self.pending.push(page);
            if self.pending_rows >= self.batch_rows {
                let pages = std::mem::take(&mut self.pending);
                self.pending_rows = 0;
                self.step(&pages)?;
            }
        }
        Ok(())
    }

    fn end_epoch(&mut self) -> Result<EpochFigures> {
        if self.carry.n_rows() > 0 {
            let page = self.carried()?;
            self.step(&[page])?;
        }
        if !self.pending.is_empty() {
            let pages = std::mem::take(&mut self.pending);
            self.pending_rows = 0;
            self.step(&pages)?;
        }
        let score = self.sgd.end_epoch()?;
        let now = Instant::now();
        let figures = EpochFigures {
            epoch: score.epoch,
            learning_rate: score.learning_rate,
            loss: score.train.loss,
            accuracy: score.train.accuracy,
            rows: score.train.rows,
            steps: score.steps,
            seconds: (now - self.epoch_start).as_secs_f64(),
            wait_seconds: self.waited,
        };
        self.waited = 0.0;
        self.epoch_start = now;
        Ok(figures)
    }
}

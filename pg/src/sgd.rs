//! The end of TupleShuffle and the SGD operator (CorgiPile paper section
//! 6.2): buffers in, their tuples shuffled, mini-batch steps through the
//! library's model code out. Everything that
//! touches the library's trainer is here and in [`Core`], so that the
//! extension can switch to the library's trainer core when it has one.
//!
//! The producer (the backend's thread: it alone may call PostgreSQL)
//! reads blocks and sends [`Chunk`]s, one buffer each, then
//! [`Chunk::EndEpoch`]; a [`Stepper`] shuffles each buffer's tuples,
//! cuts them into mini-batches of
//! `batch_rows` rows (a mini-batch continues across buffers; the last of
//! an epoch may be short) and steps the model. With double buffering
//! (section 6.3) the stepper runs on a thread of its own and the channel
//! between them holds nothing: the producer fills the next buffer while
//! the stepper shuffles and trains on the current one (the paper's write
//! thread shuffles; here the backend's thread, the only one that may read
//! the table, does nothing but read).
//!
//! The epoch's figures are the running loss and accuracy of the
//! mini-batches as the model met them (before each step), as the
//! library's trainer reports them; the learning rate decays as
//! `lr * decay^epoch`.

use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use tocpile_lib::model::{Gradient, Metrics, Model, Optimizer, OptimizerState};
use tocpile_lib::rng::Rng;
use tocpile_lib::Page;

use crate::failure::{try_vec, Context, Failure, Result};
use crate::pages::{PageFormat, RawPage};
use crate::rows::RowBuffer;

/// One buffer's tuples, as read, and the tuple shuffle to apply (done by
/// the stepper: with double buffering, on its thread, while the backend
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

/// How to step.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Learning rate of the first epoch.
    pub learning_rate: f64,
    /// Factor applied to the learning rate after each epoch.
    pub decay: f64,
    /// L2 regularisation strength.
    pub l2: f64,
    /// The step rule.
    pub optimizer: Optimizer,
    /// Rows per mini-batch.
    pub batch_rows: usize,
    /// How stored pages are validated and loaded (page tables).
    pub pages: Option<PageFormat>,
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
    pub rows: usize,
    /// Mini-batches (steps).
    pub steps: usize,
    /// Seconds from the end of the previous epoch (the start of training
    /// for the first) to the end of this one.
    pub seconds: f64,
    /// Of those, seconds the stepper waited for buffers.
    pub wait_seconds: f64,
}

/// One step of the library's trainer: gradient on the encoded pages,
/// then the optimizer's step.
struct Core {
    model: Model,
    grad: Gradient,
    state: OptimizerState,
    l2: f64,
}

impl Core {
    fn step(&mut self, pages: &[Page], lr: f64, metrics: &mut Metrics) -> Result<()> {
        let stats = self
            .model
            .gradient(pages, self.l2, &mut self.grad)
            .context(|| "a mini-batch".into())?;
        self.model.step_with(&self.grad, lr, &mut self.state);
        metrics.add(&stats);
        Ok(())
    }
}

/// Cuts buffers into mini-batches and steps the model.
pub struct Stepper {
    core: Core,
    settings: Settings,
    epoch: usize,
    metrics: Metrics,
    steps: usize,
    /// Rows of a mini-batch begun in the previous buffer.
    carry: RowBuffer,
    /// Pages of a mini-batch begun, and their rows.
    pending: Vec<Page>,
    pending_rows: usize,
    epoch_start: Instant,
    waited: f64,
}

impl Stepper {
    /// A stepper training `model` (its first epoch starts now).
    pub fn new(model: Model, settings: Settings) -> Stepper {
        let grad = Gradient::new(&model);
        let metrics = Metrics::new(model.kind());
        let carry = RowBuffer::new(model.n_cols());
        Stepper {
            core: Core {
                grad,
                state: OptimizerState::new(settings.optimizer),
                l2: settings.l2,
                model,
            },
            settings,
            epoch: 0,
            metrics,
            steps: 0,
            carry,
            pending: Vec::new(),
            pending_rows: 0,
            epoch_start: Instant::now(),
            waited: 0.0,
        }
    }

    /// The model as trained so far.
    pub fn into_model(self) -> Model {
        self.core.model
    }

    fn learning_rate(&self) -> f64 {
        self.settings.learning_rate * self.settings.decay.powi(self.epoch as i32)
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

    fn feed_rows(&mut self, rows: &RowBuffer, order: &[u32]) -> Result<()> {
        let batch = self.settings.batch_rows;
        let lr = self.learning_rate();
        let mut rest = order;
        if self.carry.n_rows() > 0 {
            let take = (batch - self.carry.n_rows()).min(rest.len());
            for &r in &rest[..take] {
                let (cols, values) = rows.row(r as usize);
                for (&c, &v) in cols.iter().zip(values) {
                    self.carry.push_entry(c, v)?;
                }
                self.carry.finish_row(rows.labels()[r as usize])?;
            }
            rest = &rest[take..];
            if self.carry.n_rows() < batch {
                return Ok(());
            }
            let all: Vec<u32> = (0..self.carry.n_rows() as u32).collect();
            let page = self.carry.gather(&all)?;
            self.carry.clear();
            self.core.step(&[page], lr, &mut self.metrics)?;
            self.steps += 1;
        }
        let mut chunks = rest.chunks_exact(batch);
        for ids in chunks.by_ref() {
            let page = rows.gather(ids)?;
            self.core.step(&[page], lr, &mut self.metrics)?;
            self.steps += 1;
        }
        for &r in chunks.remainder() {
            let (cols, values) = rows.row(r as usize);
            for (&c, &v) in cols.iter().zip(values) {
                self.carry.push_entry(c, v)?;
            }
            self.carry.finish_row(rows.labels()[r as usize])?;
        }
        Ok(())
    }

    fn feed_pages(&mut self, raw: Vec<RawPage>) -> Result<()> {
        let format = self
            .settings
            .pages
            .clone()
            .ok_or_else(|| Failure::data("pages given to a stepper of rows"))?;
        let lr = self.learning_rate();
        for r in &raw {
            let page = format.load(r)?;
            self.pending_rows += page.n_rows();
            self.pending.push(page);
            if self.pending_rows >= self.settings.batch_rows {
                let pages = std::mem::take(&mut self.pending);
                self.pending_rows = 0;
                self.core.step(&pages, lr, &mut self.metrics)?;
                self.steps += 1;
            }
        }
        Ok(())
    }

    fn end_epoch(&mut self) -> Result<EpochFigures> {
        let lr = self.learning_rate();
        if self.carry.n_rows() > 0 {
            let all: Vec<u32> = (0..self.carry.n_rows() as u32).collect();
            let page = self.carry.gather(&all)?;
            self.carry.clear();
            self.core.step(&[page], lr, &mut self.metrics)?;
            self.steps += 1;
        }
        if !self.pending.is_empty() {
            let pages = std::mem::take(&mut self.pending);
            self.pending_rows = 0;
            self.core.step(&pages, lr, &mut self.metrics)?;
            self.steps += 1;
        }
        let metrics = std::mem::replace(&mut self.metrics, Metrics::new(self.core.model.kind()));
        let loss = metrics.mean_loss();
        if metrics.rows() > 0 && !loss.is_finite() {
            return Err(Failure::from_lib(
                "",
                tocpile_lib::Error::Diverged {
                    epoch: self.epoch,
                    learning_rate: lr,
                },
            ));
        }
        let now = Instant::now();
        let figures = EpochFigures {
            epoch: self.epoch,
            learning_rate: lr,
            loss,
            accuracy: metrics.accuracy().or(metrics.r2()).unwrap_or(f64::NAN),
            rows: metrics.rows(),
            steps: self.steps,
            seconds: (now - self.epoch_start).as_secs_f64(),
            wait_seconds: self.waited,
        };
        self.epoch += 1;
        self.steps = 0;
        self.waited = 0.0;
        self.epoch_start = now;
        Ok(figures)
    }

    /// Runs on a thread of its own: takes chunks until the channel
    /// closes, sending each epoch's figures; returns the stepper, or the
    /// first failure (the producer sees the channel close and stops).
    pub fn run(mut self, chunks: Receiver<Chunk>, figures: Sender<EpochFigures>) -> Result<Self> {
        loop {
            let wait = Instant::now();
            let Ok(chunk) = chunks.recv() else {
                return Ok(self);
            };
            self.waited += wait.elapsed().as_secs_f64();
            if let Some(f) = self.feed(chunk)? {
                // The producer may have stopped listening (an error): the
                // figures are then of no use.
                let _ = figures.send(f);
            }
        }
    }
}

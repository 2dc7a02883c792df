//! `tocpile.train`: mini-batch SGD inside the database, the CorgiPile
//! paper's in-database pipeline (sections 6.1 to 6.3): BlockShuffle (block
//! order, [`crate::order`], over heap pages, [`crate::heap`]),
//! TupleShuffle (a buffer of blocks, its tuples shuffled) and SGD (the
//! library's trainer, fed by [`crate::feed`]), with double buffering
//! ([`crate::handoff`]).
//!
//! Shuffle Once copies the table with `ORDER BY random()` first (a temp
//! table, dropped at the end, its time counted), as MADlib and Bismarck
//! do; No Shuffle reads the table in order.

use std::sync::mpsc;
use std::time::Instant;

use pgrx::pg_sys;
use pgrx::prelude::*;
use serde_json::json;
use tocpile_lib::model::{Model, ModelKind, Optimizer};
use tocpile_lib::scale::ScaleKind;
use tocpile_lib::train::{LabelSummary, Scale, TrainOptions};

use crate::failure::{Failure, Result};
use crate::feed::{Chunk, EpochFigures, Feeder, Interrupts};
use crate::handoff::{FinishGuard, Handoff, StopGuard};
use crate::order::{block_order, buffer_blocks, tuple_rng, Shuffle};
use crate::rows::RowBuffer;
use crate::source::{Kind, Statistics, Table};

/// `scale =>`: which input scaling the model trains with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleArg {
    /// A page table's stored scaling; max-abs fitted by a pass over an
    /// ordinary table (what `tocpile encode` stores by default).
    Auto,
    /// None.
    None,
    /// This kind (a page table's stored one if it is of this kind).
    Kind(ScaleKind),
}

impl ScaleArg {
    fn from_name(name: &str) -> Result<ScaleArg> {
        match name.to_ascii_lowercase().as_str() {
            "auto" => Ok(ScaleArg::Auto),
            "none" => Ok(ScaleArg::None),
            other => ScaleKind::from_name(other)
                .map(ScaleArg::Kind)
                .ok_or_else(|| {
                    Failure::argument(format!(
                        "scale \"{name}\" is not one of auto, none, maxabs, standard"
                    ))
                }),
        }
    }
}

/// Everything `tocpile.train` is asked, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Model name (`lr`, `svm`, `linreg`, `softmax`, `mlp`).
    pub model: String,
    /// Shuffling strategy.
    pub shuffle: Shuffle,
    /// Epochs.
    pub epochs: usize,
    /// Rows per mini-batch.
    pub batch_rows: usize,
    /// Buffer as a fraction of the blocks.
    pub buffer: f64,
    /// Learning rate (default: 0.03 for Adam, 0.1 otherwise).
    pub learning_rate: f64,
    /// Seed of the shuffles and of the model.
    pub seed: u64,
    /// Step rule.
    pub optimizer: Optimizer,
    /// Learning-rate decay per epoch.
    pub decay: f64,
    /// L2 strength.
    pub l2: f64,
    /// Input scaling.
    pub scale: ScaleArg,
    /// Pages per block: heap pages of an ordinary table, stored pages of
    /// a page table.
    pub block_pages: u32,
    /// Classes (softmax, mlp); default: the largest label + 1.
    pub classes: Option<usize>,
    /// Train on a thread of its own while the next buffer is read.
    pub double_buffer: bool,
}

impl Options {
    /// Checks the SQL arguments.
    #[allow(clippy::too_many_arguments)]
    pub fn parse(
        model: &str,
        shuffle: &str,
        epochs: i32,
        batch_size: i32,
        buffer: f64,
        lr: Option<f64>,
        seed: i64,
        optimizer: &str,
        decay: f64,
        l2: f64,
        scale: &str,
        block_pages: i32,
        classes: Option<i32>,
        double_buffer: bool,
    ) -> Result<Options> {
        let positive = |v: i32, what: &str| -> Result<usize> {
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| Failure::argument(format!("{what} must be at least 1 ({v} given)")))
        };
        let optimizer = Optimizer::from_name(optimizer).ok_or_else(|| {
            Failure::argument(format!(
                "optimizer \"{optimizer}\" is not one of adam, adagrad, sgd"
            ))
        })?;
        let learning_rate = lr.unwrap_or(optimizer.default_learning_rate());
        if !(learning_rate > 0.0 && learning_rate.is_finite()) {
            return Err(Failure::argument(format!(
                "lr must be positive and finite ({learning_rate} given)"
            )));
        }
        if !(buffer > 0.0 && buffer <= 1.0) {
            return Err(Failure::argument(format!(
                "buffer must be in (0, 1] ({buffer} given)"
            )));
        }
        if !(decay > 0.0 && decay <= 1.0) {
            return Err(Failure::argument(format!(
                "decay must be in (0, 1] ({decay} given)"
            )));
        }
        if !(l2 >= 0.0 && l2.is_finite()) {
            return Err(Failure::argument(format!(
                "l2 must be non-negative ({l2} given)"
            )));
        }
        let classes = match classes {
            Some(c) if c < 2 => {
                return Err(Failure::argument(format!(
                    "classes must be at least 2 ({c} given)"
                )))
            }
            other => other.map(|c| c as usize),
        };
        let model = model.to_ascii_lowercase();
        ModelKind::from_name(&model, 2).map_err(|e| Failure::argument(e.to_string()))?;
        Ok(Options {
            model,
            shuffle: Shuffle::from_name(shuffle)?,
            epochs: positive(epochs, "epochs")?,
            batch_rows: positive(batch_size, "batch_size")?,
            buffer,
            learning_rate,
            seed: seed as u64,
            optimizer,
            decay,
            l2,
            scale: ScaleArg::from_name(scale)?,
            block_pages: positive(block_pages, "block_pages")? as u32,
            classes,
            double_buffer,
        })
    }
}

impl Options {
    /// The library's training options for these (its defaults beside
    /// them: the last epoch's iterates averaged; the scaling the model's).
    pub fn train_options(&self) -> TrainOptions {
        TrainOptions::default()
            .with_optimizer(self.optimizer)
            .with_learning_rate(self.learning_rate)
            .with_epochs(self.epochs)
            .with_decay(self.decay)
            .with_l2(self.l2)
            .with_split_gradient(false)
            .with_scale(Scale::Model)
    }
}

/// A model ready for its first step, and what the pass over the table
/// found.
pub struct Prepared {
    model: Model,
    labels: LabelSummary,
    /// The WARNINGs raised (kept in the report).
    warnings: Vec<String>,
    /// Seconds of the pass (and the set-up around it).
    setup_seconds: f64,
}

/// The set-up before the first epoch, by one pass over `table` in table
/// order (for Shuffle Once, the table itself, before its copy): the
/// scaling (a page table's stored one, or one fitted), the labels'
/// summary (the trainer's binary labels and target standardisation),
/// softmax's and mlp's classes, the model. A table without rows is an
/// error; a binary model meeting more than two labels is warned of, as
/// the command line warns.
pub fn prepare(table: &Table, options: &Options, start: Instant) -> Result<Prepared> {
    crate::threads::start_pool();
    let (stored, fit) = match (table.kind(), options.scale) {
        (_, ScaleArg::None) => (None, None),
        (Kind::Pages { meta, .. }, ScaleArg::Auto) => (meta.scaling.clone(), None),
        (Kind::Pages { meta, .. }, ScaleArg::Kind(k))
            if meta.scaling.as_ref().is_some_and(|s| s.kind() == k) =>
        {
            (meta.scaling.clone(), None)
        }
        (_, ScaleArg::Kind(k)) => (None, Some(k)),
        (Kind::Rows(_), ScaleArg::Auto) => (None, Some(ScaleKind::MaxAbs)),
    };
    let stats = table.statistics(fit)?;
    if stats.labels.rows() == 0 {
        return Err(Failure::data(format!(
            "table {} has no rows to train on",
            table.name()
        )));
    }
    let warnings: Vec<String> = warn_labels(table.name(), &options.model, &stats)
        .into_iter()
        .collect();
    for w in &warnings {
        warning!("{w}");
    }
    let classes = options.classes.unwrap_or_else(|| {
        if options.model == "mlp" && stats.max_label <= 1.0 {
            2
        } else {
            (stats.max_label.max(1.0) as usize).saturating_add(1)
        }
    });
    let kind = ModelKind::from_name(&options.model, classes)?;
    let mut model = Model::new(kind, table.n_cols(), options.seed)?;
    model.set_scaling(stats.scaling.or(stored))?;
    Ok(Prepared {
        model,
        labels: stats.labels,
        warnings,
        setup_seconds: start.elapsed().as_secs_f64(),
    })
}

/// The WARNING when a binary model (lr, svm) meets more than two
/// distinct labels: it takes label > 0 as the positive class (the
/// command line's warning, in SQL's words).
fn warn_labels(table: &str, model: &str, stats: &Statistics) -> Option<String> {
    let seen = stats.labels.distinct();
    if !matches!(model, "lr" | "svm") || seen.len() < 3 {
        return None;
    }
    let shown: Vec<String> = seen.iter().map(|y| format!("{y}")).collect();
    let shown = shown.join(", ");
    Some(if stats.integers {
        format!(
            "tocpile.train: table {table} has more than two distinct labels ({shown}, ...): \
             {model} is a binary model and takes label > 0 as the positive class; for \
             classes, train with model => 'softmax' or 'mlp'"
        )
    } else {
        format!(
            "tocpile.train: table {table} has labels ({shown}, ...) that look like a \
             regression target: for a linear regression, train with model => 'linreg' \
             ({model} is a classifier and takes label > 0 as the positive class)"
        )
    })
}

/// Trains the prepared model on `table` (for Shuffle Once, the shuffled
/// copy the caller made); returns the model and the run's report.
pub fn run(
    table: &Table,
    prepared: Prepared,
    options: &Options,
) -> Result<(Model, serde_json::Value)> {
    crate::threads::start_pool();
    let Prepared {
        model,
        labels,
        warnings,
        setup_seconds,
    } = prepared;
    let scaling = model.scaling().map(|s| s.kind().name());
    let pages = match table.kind() {
        Kind::Pages { format, .. } => Some(format.clone()),
        Kind::Rows(_) => None,
    };
    let feeder = Feeder::new(
        model,
        &options.train_options(),
        &labels,
        options.batch_rows,
        pages,
        Interrupts::Backend,
    )?;
    let (model, figures, read, layout) = run_epochs(table, feeder, options)?;
    let epochs: Vec<serde_json::Value> = figures
        .iter()
        .zip(&read)
        .map(|(f, r)| {
            json!({"epoch": f.epoch, "seconds": f.seconds, "read_seconds": r,
                   "wait_seconds": f.wait_seconds, "loss": f.loss, "accuracy": f.accuracy,
                   "rows": f.rows, "steps": f.steps, "learning_rate": f.learning_rate})
        })
        .collect();
    let report = json!({
        "table": table.name(), "model": model.kind().to_string(), "shuffle": options.shuffle.name(),
        "columns": table.n_cols(), "scaling": scaling,
        "batch_size": options.batch_rows, "buffer": options.buffer, "seed": options.seed,
        "optimizer": options.optimizer.name(), "double_buffer": options.double_buffer,
        "heap_pages": layout.0, "block_pages": options.block_pages, "blocks": layout.1,
        "buffer_blocks": layout.2, "setup_seconds": setup_seconds,
        "epoch_seconds": figures.iter().map(|f| f.seconds).sum::<f64>(), "epochs": epochs,
        "warnings": warnings,
    });
    Ok((model, report))
}

/// Heap pages, blocks and blocks per buffer of a run.
type Layout = (u32, usize, usize);

/// The epochs: the producer (this thread) reads buffers, the feeder
/// shuffles their tuples and trains on them (on a thread of its own with
/// double buffering, handed each buffer through a [`Handoff`] that this
/// thread waits on with interrupts checked). Returns the model, each
/// epoch's figures and the seconds this thread spent reading blocks in
/// each.
fn run_epochs(
    table: &Table,
    feeder: Feeder,
    options: &Options,
) -> Result<(Model, Vec<EpochFigures>, Vec<f64>, Layout)> {
    let mut scan = table.scan(options.block_pages)?;
    let n_blocks = scan.n_blocks();
    let per_buffer = buffer_blocks(options.buffer, n_blocks);
    let layout = (scan.n_pages(), n_blocks, per_buffer);
    let mut read_seconds = Vec::new();
    let mut produce = |send: &mut dyn FnMut(Chunk) -> Result<bool>| -> Result<()> {
        for epoch in 0..options.epochs {
            let mut seconds = 0.0;
            let order = block_order(options.shuffle, n_blocks, options.seed, epoch as u64);
            for (k, group) in order.chunks(per_buffer).enumerate() {
                let start = Instant::now();
                let chunk = read_buffer(table, &mut scan, group, options, (epoch, k))?;
                seconds += start.elapsed().as_secs_f64();
                if !send(chunk)? {
                    return Ok(());
                }
            }
            read_seconds.push(seconds);
            if !send(Chunk::EndEpoch)? {
                return Ok(());
            }
        }
        Ok(())
    };
    let mut figures = Vec::new();
    let feeder = if options.double_buffer {
        let handoff = Handoff::default();
        let (done, outbox) = mpsc::channel::<EpochFigures>();
        std::thread::scope(|s| {
            let mut feeder = feeder;
            feeder.set_interrupts(Interrupts::Flag(handoff.stop_flag()));
            let handoff = &handoff;
            let worker = crate::threads::with_signals_blocked(|| {
                std::thread::Builder::new()
                    .name("tocpile sgd".into())
                    .spawn_scoped(s, move || feed_thread(feeder, handoff, done))
            })
            .map_err(|e| Failure::out_of_memory(format!("starting the SGD thread: {e}")))?;
            // However this thread leaves the scope (an ERROR or a cancel
            // unwinds it), the SGD thread stops before its next
            // mini-batch, and the scope joins it.
            let _stop = StopGuard(handoff);
            let mut between = || {
                check_for_interrupts!();
                for f in outbox.try_iter() {
                    notice_epoch(&f);
                    figures.push(f);
                }
            };
            let produced = produce(&mut |chunk| Ok(handoff.send(chunk, &mut between)));
            if produced.is_err() {
                // Reading failed: the buffer in training is of no use.
                handoff.stop();
            }
            handoff.close_and_wait(&mut between);
            let stepped = worker.join();
            for f in outbox.try_iter() {
                notice_epoch(&f);
                figures.push(f);
            }
            let feeder = match stepped {
                Ok(result) => result?,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("a panic");
                    return Err(Failure::data(format!(
                        "internal error in the SGD thread: {what}"
                    )));
                }
            };
            produced?;
            Ok(feeder)
        })?
    } else {
        let mut feeder = feeder;
        produce(&mut |chunk| {
            if let Some(f) = feeder.feed(chunk)? {
                notice_epoch(&f);
                figures.push(f);
            }
            Ok(true)
        })?;
        feeder
    };
    drop(scan);
    Ok((feeder.into_model(), figures, read_seconds, layout))
}

/// The SGD thread: takes chunks until the backend sends no more (or
/// tells it to stop), sending each epoch's figures; returns the feeder,
/// or the first failure (the backend sees the thread end and stops).
fn feed_thread(
    mut feeder: Feeder,
    handoff: &Handoff,
    figures: mpsc::Sender<EpochFigures>,
) -> Result<Feeder> {
    let _finish = FinishGuard(handoff);
    loop {
        let (chunk, waited) = handoff.receive();
        feeder.waited(waited);
        let Some(chunk) = chunk else {
            return Ok(feeder);
        };
        if let Some(f) = feeder.feed(chunk)? {
            // The backend may have stopped listening (an error): the
            // figures are then of no use.
            let _ = figures.send(f);
        }
    }
}

/// Reads the blocks `group` into one buffer, with the tuple shuffle
/// (CorgiPile) that the stepper applies.
fn read_buffer(
    table: &Table,
    scan: &mut crate::heap::BlockScan,
    group: &[usize],
    options: &Options,
    (epoch, buffer): (usize, usize),
) -> Result<Chunk> {
    let shuffle = (options.shuffle == Shuffle::CorgiPile)
        .then(|| tuple_rng(options.seed, epoch as u64, buffer as u64));
    match table.kind() {
        Kind::Rows(_) => {
            let mut rows = RowBuffer::new(table.n_cols());
            for &b in group {
                table.read_rows(scan, b, &mut rows)?;
            }
            Ok(Chunk::Rows { rows, shuffle })
        }
        Kind::Pages { .. } => {
            let mut pages = Vec::new();
            for &b in group {
                table.read_pages(scan, b, &mut pages)?;
            }
            Ok(Chunk::Pages(pages, shuffle))
        }
    }
}

fn notice_epoch(f: &EpochFigures) {
    notice!(
        "tocpile.train: epoch {}: loss {:.6}, accuracy {:.4}, {} rows, {:.3} s",
        f.epoch,
        f.loss,
        f.accuracy,
        f.rows,
        f.seconds
    );
}

/// A Shuffle Once copy: a temp table made by `ORDER BY random()` under a
/// seed, dropped by [`OnceCopy::drop_table`]; while it lives, the active
/// snapshot is one that sees it.
pub struct OnceCopy {
    name: String,
    snapshot_pushed: bool,
}

impl OnceCopy {
    /// Copies `source` (SQL name) in a random order fixed by `seed`;
    /// returns the copy and its OID.
    pub fn create(source: &str, seed: u64) -> Result<(OnceCopy, pg_sys::Oid)> {
        static COPIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: reads the backend's pid.
        let name = format!("pg_temp.tocpile_once_{}_{n}", unsafe { pg_sys::MyProcPid });
        // setseed takes a number in [-1, 1]: one drawn from the seed, so
        // that every seed gives another order.
        let fraction = 2.0 * tocpile_lib::rng::Rng::new(seed).unit() - 1.0;
        let fail =
            |e: pgrx::spi::SpiError| Failure::data(format!("Shuffle Once's copy of {source}: {e}"));
        Spi::run_with_args("SELECT setseed($1)", &[fraction.into()]).map_err(fail)?;
        Spi::run(&format!(
            "CREATE TEMP TABLE {name} AS SELECT * FROM {source} ORDER BY random()"
        ))
        .map_err(fail)?;
        let oid = Spi::get_one::<pg_sys::Oid>(&format!("SELECT '{name}'::regclass::oid"))
            .map_err(fail)?
            .ok_or_else(|| Failure::data("Shuffle Once's copy vanished"))?;
        // SAFETY: standard snapshot-stack calls: the copy is visible to a
        // snapshot taken after the command that made it.
        unsafe {
            pg_sys::CommandCounterIncrement();
            pg_sys::PushCopiedSnapshot(pg_sys::GetActiveSnapshot());
            pg_sys::UpdateActiveSnapshotCommandId();
        }
        Ok((
            OnceCopy {
                name,
                snapshot_pushed: true,
            },
            oid,
        ))
    }

    /// Drops the copy (its relation must be closed).
    pub fn drop_table(mut self) -> Result<()> {
        self.pop();
        Spi::run(&format!("DROP TABLE {}", self.name))
            .map_err(|e| Failure::data(format!("dropping Shuffle Once's copy: {e}")))
    }

    fn pop(&mut self) {
        if self.snapshot_pushed {
            // SAFETY: pops the snapshot pushed by `create`.
            unsafe { pg_sys::PopActiveSnapshot() };
            self.snapshot_pushed = false;
        }
    }
}

impl Drop for OnceCopy {
    fn drop(&mut self) {
        // On an error the abort pops the snapshot and drops the temp
        // table (it was made in this transaction).
        if !std::thread::panicking() {
            self.pop();
        }
    }
}

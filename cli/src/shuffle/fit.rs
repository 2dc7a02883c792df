//! `tocpile shuffle --train MODEL`: the UberShuffle paper's end-to-end
//! setting (section 5, Figure 8). The workers train synchronous SGD on the
//! blocks in their caches, the server (rank 0) summing their gradients
//! each step; before every epoch after the first, a shuffle gives each
//! worker its next blocks (scheme `none`: the workers keep their first
//! blocks). The library runs the epochs (`tocpile::dist::train_on_batches`,
//! the trainer core of `train`: the server sets the model up on the file
//! as `train` does, its stored scaling included, and every rank starts
//! from it); this command gives it each epoch's mini-batches. Workers
//! open the file for its footer only (block sizes, checksums, format):
//! every block they train on came through the shuffle, checked by
//! `Dataset::block_from_bytes`. Rank 0 times each shuffle and epoch,
//! scores the model on the whole file (untimed), and reports the time to
//! `--target-loss`.

use std::sync::Arc;
use std::time::Instant;

use tocpile::dataset::Dataset;
use tocpile::dist::{train_on_batches, Communicator, Scheme, ShuffleServer, ShuffleWorker};
use tocpile::model::{Model, ModelKind, Optimizer};
use tocpile::train::{Average, TrainOptions};
use tocpile::Page;

use super::{options, ShuffleArgs};
use crate::output::emit;
use crate::{Failure, Outcome};

/// One scheme's end-to-end run on this rank; `scheme` `None` is no
/// shuffle. Rank 0 prints its rows of the table.
pub fn run<C: Communicator>(
    args: &ShuffleArgs,
    comm: &C,
    model_name: &str,
    scheme: Option<Scheme>,
    blocks: Option<&[Vec<u8>]>,
) -> Outcome {
    let name = scheme.map_or("none", Scheme::name);
    let dataset = Arc::new(Dataset::open(&args.file)?);
    let kind = ModelKind::from_name(model_name, 2)?;
    if !matches!(
        kind,
        ModelKind::Logistic | ModelKind::LinearRegression | ModelKind::Svm
    ) {
        return Err(Failure("--train takes lr, svm or linreg".into()));
    }
    let mut model = Model::new(kind, dataset.info().n_cols, args.seed)?;
    // The paper's rule: plain SGD at --lr, decaying by 0.95 an epoch, the
    // last iterate.
    let train_options = TrainOptions::default()
        .with_optimizer(Optimizer::Sgd)
        .with_epochs(usize::try_from(args.epochs).unwrap_or(usize::MAX))
        .with_learning_rate(args.lr)
        .with_average(Average::None);
    // The session places the caches; with no shuffle it is never shuffled.
    let session = options(args, scheme.unwrap_or(Scheme::Uncoded));
    let mut server = None;
    let mut worker = None;
    match blocks {
        Some(blocks) => server = Some(ShuffleServer::start(comm, blocks.to_vec(), &session)?),
        None => worker = Some(ShuffleWorker::join(comm)?),
    }
    let batch_rows = usize::try_from(args.batch_size).unwrap_or(usize::MAX);
    // Each epoch's mini-batches: a shuffle first (after the first epoch),
    // then the worker's cached blocks, their pages in a new order. The
    // server has none. The shuffle's time is kept for the table.
    let shuffle_seconds = std::cell::Cell::new(0.0);
    let epoch_batches = |epoch: usize| -> tocpile::Result<Vec<Vec<Page>>> {
        let started = Instant::now();
        if epoch > 0 && scheme.is_some() {
            if let Some(s) = server.as_mut() {
                s.shuffle()?;
            }
            if let Some(w) = worker.as_mut() {
                w.shuffle()?;
            }
        }
        shuffle_seconds.set(started.elapsed().as_secs_f64());
        let Some(w) = &worker else {
            return Ok(Vec::new());
        };
        let mut pages = Vec::new();
        for &b in w.blocks() {
            let bytes = w.block(b).expect("a worker caches its blocks").to_vec();
            pages.extend(dataset.block_from_bytes(b, bytes)?.pages()?);
        }
        shuffle_pages(&mut pages, args.seed, epoch as u64, w.worker() as u64);
        Ok(batches(pages, batch_rows))
    };
    let mut total = 0.0;
    let mut reached = None;
    let mut printed = Ok(());
    // The server holds the file: it sets the model up and scores it.
    let root = (comm.rank() == 0).then_some(&dataset);
    train_on_batches(
        comm,
        &mut model,
        &train_options,
        root,
        epoch_batches,
        root,
        |r| {
            let (epoch, shuffle_seconds) = (r.epoch.epoch, shuffle_seconds.get());
            let train_seconds = r.epoch.seconds - shuffle_seconds;
            total += r.epoch.seconds;
            let Some(eval) = r.epoch.eval else { return };
            if reached.is_none() && args.target_loss.is_some_and(|t| eval.loss <= t) {
                reached = Some(total);
            }
            if printed.is_ok() {
                printed = emit(&format!(
                "| {name} | {epoch} | {shuffle_seconds:.3} | {train_seconds:.3} | {total:.3} | {} | {:.4} | {:.4} | {:.4} |\n",
                r.epoch.steps, r.epoch.train.loss, eval.loss, eval.accuracy
            ));
            }
        },
    )?;
    printed?;
    if comm.rank() == 0 {
        if let Some(target) = args.target_loss {
            emit(&match reached {
                Some(t) => {
                    format!("| {name} | reached loss {target} after {t:.3} s | | | | | | | |\n")
                }
                None => format!("| {name} | loss {target} not reached | | | | | | | |\n"),
            })?;
        }
    }
    Ok(())
}

/// The header of the table rank 0 prints.
pub fn header() -> &'static str {
    "| scheme | epoch | shuffle s | train s | total s | steps | train loss | eval loss | eval accuracy (R^2) |\n\
     |---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
}

/// Fisher-Yates with splitmix64 from (seed, epoch, worker): the worker's
/// pages in a new order each epoch (CorgiPile's tuple shuffle, in page
/// mode, over all of the worker's blocks).
fn shuffle_pages(pages: &mut [Page], seed: u64, epoch: u64, worker: u64) {
    let mut state = seed ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ worker.rotate_left(32);
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..pages.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        pages.swap(i, j);
    }
}

/// Consecutive pages holding at least `rows` rows each (the last may hold
/// fewer).
fn batches(pages: Vec<Page>, rows: usize) -> Vec<Vec<Page>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut held = 0;
    for page in pages {
        held += page.n_rows();
        current.push(page);
        if held >= rows {
            out.push(std::mem::take(&mut current));
            held = 0;
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

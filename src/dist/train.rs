//! Data-parallel training over a [`Communicator`]: every rank runs the
//! CorgiPile loader on its slice of the epoch's block permutation
//! (CorgiPile section 5.1: the seed fixes the permutation, so the ranks
//! agree on it without messages), computes the gradient of its own
//! mini-batch, and the ranks combine them each step by an allreduce
//! ([`Averaging::Gradients`], synchronous data-parallel SGD), or step alone and
//! average their models every `k` steps ([`Averaging::Models`], local SGD).
//!
//! **The global mini-batch.** Step `t` of an epoch takes the `t`-th
//! mini-batch of every rank's loader; the union of those rows is the
//! step's global mini-batch, and [`Averaging::Gradients`] steps along its mean
//! gradient (each rank's mean weighted by its rows), exactly what
//! [`Model::gradient`] gives on the union's pages. So a run on `k` ranks
//! equals, to rounding, the single process that opens the `k` worker
//! slices' loaders ([`LoaderOptions::worker`](crate::loader::LoaderOptions::worker)
//! `0..k` of `k`), takes their `t`-th mini-batches together and steps on
//! their pages (the tests check it to 1e-9). The global mini-batch is `k`
//! times a rank's `batch_rows`.
//!
//! **Equal step counts.** Ranks whose slices hold fewer rows run out of
//! mini-batches first; they keep joining each step's allreduce with a
//! zero gradient and no rows (padding) until every rank is done, which
//! the same allreduce tells them. So every rank takes the same number of
//! collective steps whatever the block sizes, and none waits for a
//! message that never comes. A rank that fails (a corrupt block) says so
//! in the next allreduce, and every rank returns an error.
//!
//! **Determinism.** The allreduce sums in rank order, so the model depends
//! on the seed and the rank count only: the same bits whether the ranks
//! are threads ([`InProcess`](super::InProcess)) or MPI processes. Rank
//! 0's parameters are broadcast at the start, so every rank starts from
//! them.

use std::sync::Arc;
use std::time::Instant;

use super::comm::Communicator;
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};
use crate::loader::Loader;
use crate::model::{BatchStats, Gradient, Metrics, Model, OptimizerState};
use crate::page::Page;
use crate::train::{evaluate, EpochReport, Score, TrainOptions};

/// How the ranks keep their models in step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Averaging {
    /// Allreduce the gradients every step: one model, synchronous SGD on
    /// the global mini-batch (the default).
    Gradients,
    /// Each rank steps on its own mini-batches; every `every` steps (and
    /// at the end of each epoch) the ranks replace their parameters by
    /// the mean over the ranks (local SGD, model averaging). Fewer and
    /// larger messages; the models differ between averages.
    Models {
        /// Steps between averages (at least 1).
        every: usize,
    },
}

/// Figures of one epoch on every rank, beyond the [`EpochReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct DistributedReport {
    /// The epoch's report: training figures over every rank's rows, the
    /// evaluation (rank 0 only; `None` elsewhere), seconds and loader wait
    /// of this rank, `steps` the collective steps.
    pub epoch: EpochReport,
    /// Mini-batches each rank read (the rest of its steps were padding).
    pub batches_per_rank: Vec<usize>,
    /// Seconds this rank spent in the communicator's collectives.
    pub communication_seconds: f64,
    /// Bytes this rank handed to the communicator in the epoch.
    pub bytes_sent: u64,
}

/// Trains `model` data-parallel with the other ranks of `comm` (called by
/// every rank with the same options). `loader` must be this rank's slice:
/// [`LoaderOptions::workers`](crate::loader::LoaderOptions::workers) the
/// communicator's size and `worker` its rank, the same seed everywhere.
/// `eval` is scored on rank 0 after each epoch; `on_epoch` sees every
/// epoch's report as it is made. Every rank ends with rank 0's model
/// under [`Averaging::Gradients`] and after the last average under
/// [`Averaging::Models`].
///
/// # Errors
/// [`Error::BadArgument`] for options [`train`](crate::train::train)
/// refuses, a loader that is not this rank's slice, or
/// [`Averaging::Models`] every 0 steps; loader and model errors of this rank;
/// [`Error::Communication`] on every other rank when one fails;
/// [`Error::Diverged`] when the epoch's loss over all ranks is not
/// finite; errors of the communicator.
pub fn train_distributed<C, S>(
    comm: &C,
    model: &mut Model,
    loader: &Loader<S>,
    options: &TrainOptions,
    sync: Averaging,
    eval: Option<&Arc<Dataset<S>>>,
    mut on_epoch: impl FnMut(&DistributedReport),
) -> Result<Vec<DistributedReport>>
where
    C: Communicator + ?Sized,
    S: Source + 'static,
{
    check(comm, loader, options, sync)?;
    let (rank, size) = (comm.rank(), comm.size());
    // Everyone starts from rank 0's parameters.
    let n = broadcast_params(comm, model)?.len();
    options.scale.apply(model, loader.dataset())?;
    model.fit_binary_labels(loader.dataset())?;
    let mut grad = Gradient::try_new(model)?;
    // Every rank applies the step rule to the same averaged gradient, so
    // their optimizer states stay equal (with model averaging each rank
    // steps on its own gradients and keeps its own state).
    let mut state = OptimizerState::try_new(options.optimizer, model)?;
    // Per step: the gradient (times rows), then rows, active ranks, and a
    // failure flag per rank.
    let mut buffer = crate::limits::try_filled(n + 2 + size, 0.0, "the gradient exchanged")?;
    let mut reports = Vec::with_capacity(options.epochs);
    for epoch in 0..options.epochs {
        let lr = options.learning_rate * options.decay.powi(epoch as i32);
        let start = Instant::now();
        let traffic = comm.traffic();
        let mut comm_seconds = 0.0;
        let mut local = BatchStats::default();
        let mut batches = loader.epoch(epoch as u64)?;
        let (mut steps, mut read, mut since_average) = (0, 0, 0);
        let mut failure: Option<Error> = None;
        loop {
            buffer.fill(0.0);
            let next = match failure {
                Some(_) => None,
                None => batches.next(),
            };
            let taken = next.map(|batch| {
                let batch = batch?;
                Ok((
                    model.gradient(&batch.pages, options.l2, &mut grad)?,
                    batch.replay,
                ))
            });
            match taken {
                Some(Ok((stats, replay))) => {
                    read += 1;
                    if !replay {
                        local.merge(&stats);
                    }
                    match sync {
                        Averaging::Gradients => {
                            let rows = stats.rows as f64;
                            for (b, g) in buffer.iter_mut().zip(gradient_values(&grad)) {
                                *b = g * rows;
                            }
                            buffer[n] = rows;
                        }
                        Averaging::Models { .. } => model.step_with(&grad, lr, &mut state),
                    }
                    buffer[n + 1] = 1.0;
                }
                Some(Err(e)) => {
                    failure = Some(e);
                    buffer[n + 2 + rank] = 1.0;
                }
                None => {}
            }
            let waited = Instant::now();
            match sync {
                Averaging::Gradients => comm.allreduce_sum(&mut buffer)?,
                // Only the flags travel between averages.
                Averaging::Models { .. } => comm.allreduce_sum(&mut buffer[n..])?,
            }
            comm_seconds += waited.elapsed().as_secs_f64();
            if let Some(r) = buffer[n + 2..].iter().position(|&f| f != 0.0) {
                return Err(failure.unwrap_or_else(|| Error::Communication {
                    rank,
                    peer: r,
                    message: format!("rank {r} failed in epoch {epoch} (see its error)"),
                }));
            }
            if buffer[n + 1] == 0.0 {
                break;
            }
            steps += 1;
            match sync {
                Averaging::Gradients if buffer[n] > 0.0 => {
                    let scale = 1.0 / buffer[n];
                    buffer[..n].iter_mut().for_each(|g| *g *= scale);
                    grad.set_values(&buffer[..n])?;
                    model.step_with(&grad, lr, &mut state);
                }
                Averaging::Gradients => {}
                Averaging::Models { every } => {
                    since_average += 1;
                    if since_average == every {
                        since_average = 0;
                        let waited = Instant::now();
                        average(comm, model)?;
                        comm_seconds += waited.elapsed().as_secs_f64();
                    }
                }
            }
        }
        if matches!(sync, Averaging::Models { .. }) && since_average > 0 {
            let waited = Instant::now();
            average(comm, model)?;
            comm_seconds += waited.elapsed().as_secs_f64();
        }
        let seconds = start.elapsed().as_secs_f64();
        let (train, batches_per_rank) = gather_figures(comm, model, &local, read)?;
        if !train.loss.is_finite() {
            return Err(Error::Diverged {
                epoch,
                learning_rate: lr,
            });
        }
        let eval = match eval {
            Some(ds) if rank == 0 => Some(evaluate(model, ds)?),
            _ => None,
        };
        let stats = batches.stats();
        let report = DistributedReport {
            epoch: EpochReport {
                epoch,
                learning_rate: lr,
                train,
                eval,
                seconds,
                wait_seconds: stats.wait_seconds,
                steps,
                buffer_peak_bytes: stats.buffer_peak_bytes,
                gradient_threads: 1,
            },
            batches_per_rank,
            communication_seconds: comm_seconds,
            bytes_sent: comm.traffic().since(traffic).bytes_sent,
        };
        on_epoch(&report);
        reports.push(report);
    }
    Ok(reports)
}

fn check<C: Communicator + ?Sized, S: Source + 'static>(
    comm: &C,
    loader: &Loader<S>,
    options: &TrainOptions,
    sync: Averaging,
) -> Result<()> {
    check_rates(options)?;
    let bad = |what, expected| Err(Error::BadArgument { what, expected });
    let o = loader.options();
    if o.workers != comm.size() || o.worker != comm.rank() {
        return bad(
            "loader of a distributed run",
            "worker = the rank and workers = the communicator's size",
        );
    }
    if sync == (Averaging::Models { every: 0 }) {
        return bad("model averaging", "every 1 step or more");
    }
    Ok(())
}

/// The gradient's values in parameter order, without a copy (it is as
/// large as the model).
fn gradient_values(grad: &Gradient) -> impl Iterator<Item = f64> + '_ {
    grad.layers()
        .iter()
        .flat_map(|l| l.weights().iter().chain(l.bias().iter()))
        .copied()
}

/// Replaces every rank's parameters by rank 0's; returns them.
fn broadcast_params<C: Communicator + ?Sized>(comm: &C, model: &mut Model) -> Result<Vec<f64>> {
    let mut params = model.try_params()?;
    let mut bytes: Vec<u8> = Vec::new();
    bytes
        .try_reserve_exact(8 * params.len())
        .map_err(|_| Error::OutOfMemory {
            what: "the model broadcast",
            bytes: 8 * params.len() as u64,
        })?;
    bytes.extend(params.iter().flat_map(|p| p.to_le_bytes()));
    comm.broadcast(0, &mut bytes)?;
    if bytes.len() != params.len() * 8 {
        return Err(Error::Communication {
            rank: comm.rank(),
            peer: 0,
            message: "rank 0's model has another parameter count".into(),
        });
    }
    for (p, b) in params.iter_mut().zip(bytes.chunks_exact(8)) {
        *p = f64::from_le_bytes(b.try_into().expect("8 bytes"));
    }
    model.set_params(&params)?;
    Ok(params)
}

/// One epoch of synchronous data-parallel SGD over mini-batches each rank
/// makes itself, say from the blocks a coded shuffle left in its cache
/// (UberShuffle section 4's setting: a rank without data, such as the
/// parameter server, passes no batches and still joins every step, as
/// the rank the allreduce sums on). Starts from rank 0's parameters; each
/// step averages the gradients of the ranks' next mini-batches weighted
/// by their rows, as [`train_distributed`] does, padding ranks whose
/// batches ran out. Returns the epoch's training figures over every rank
/// and the steps taken.
///
/// # Errors
/// As [`train_distributed`]: this rank's model errors, or
/// [`Error::Communication`] when another rank failed.
pub fn sgd_epoch<C, I>(
    comm: &C,
    model: &mut Model,
    batches: I,
    learning_rate: f64,
    l2: f64,
) -> Result<(Score, usize)>
where
    C: Communicator + ?Sized,
    I: IntoIterator<Item = Vec<Page>>,
{
    let (rank, size) = (comm.rank(), comm.size());
    let mut params = broadcast_params(comm, model)?;
    let n = params.len();
    let mut grad = Gradient::try_new(model)?;
    let mut buffer = crate::limits::try_filled(n + 2 + size, 0.0, "the gradient exchanged")?;
    let mut local = BatchStats::default();
    let (mut batches, mut steps, mut read) = (batches.into_iter(), 0, 0);
    let mut failure = None;
    loop {
        buffer.fill(0.0);
        if let Some(pages) = failure.is_none().then(|| batches.next()).flatten() {
            match model.gradient(&pages, l2, &mut grad) {
                Ok(stats) => {
                    read += 1;
                    local.merge(&stats);
                    let rows = stats.rows as f64;
                    for (b, g) in buffer.iter_mut().zip(gradient_values(&grad)) {
                        *b = g * rows;
                    }
                    buffer[n] = rows;
                    buffer[n + 1] = 1.0;
                }
                Err(e) => {
                    failure = Some(e);
                    buffer[n + 2 + rank] = 1.0;
                }
            }
        }
        comm.allreduce_sum(&mut buffer)?;
        if let Some(r) = buffer[n + 2..].iter().position(|&f| f != 0.0) {
            return Err(failure.unwrap_or_else(|| Error::Communication {
                rank,
                peer: r,
                message: format!("rank {r} failed (see its error)"),
            }));
        }
        if buffer[n + 1] == 0.0 {
            break;
        }
        steps += 1;
        if buffer[n] > 0.0 {
            let scale = 1.0 / buffer[n];
            for (p, g) in params.iter_mut().zip(&buffer[..n]) {
                *p += -learning_rate * (g * scale);
            }
            model.set_params(&params)?;
        }
    }
    let (score, _) = gather_figures(comm, model, &local, read)?;
    Ok((score, steps))
}

/// The learning-rate checks of [`train`](crate::train::train).
fn check_rates(options: &TrainOptions) -> Result<()> {
    let bad = |what, expected| Err(Error::BadArgument { what, expected });
    if !(options.learning_rate > 0.0 && options.learning_rate.is_finite()) {
        return bad("learning rate", "a positive finite number");
    }
    let decay_ok = options.decay > 0.0 && options.decay <= 1.0;
    if !decay_ok || options.l2.is_nan() || options.l2 < 0.0 {
        return bad("decay and l2", "a decay in (0, 1] and a non-negative l2");
    }
    Ok(())
}

/// Replaces the parameters of every rank by their mean over the ranks.
fn average<C: Communicator + ?Sized>(comm: &C, model: &mut Model) -> Result<()> {
    let mut params = model.try_params()?;
    comm.allreduce_sum(&mut params)?;
    let scale = 1.0 / comm.size() as f64;
    params.iter_mut().for_each(|p| *p *= scale);
    model.set_params(&params)
}

/// The epoch's training figures over every rank (merged in rank order)
/// and each rank's mini-batch count.
fn gather_figures<C: Communicator + ?Sized>(
    comm: &C,
    model: &Model,
    local: &BatchStats,
    read: usize,
) -> Result<(Score, Vec<usize>)> {
    const FIELDS: usize = 7;
    let size = comm.size();
    let mut all = vec![0.0; FIELDS * size];
    let mine = &mut all[FIELDS * comm.rank()..][..FIELDS];
    mine.copy_from_slice(&[
        local.rows as f64,
        local.loss_sum,
        local.correct as f64,
        local.label_mean,
        local.label_m2,
        local.sse,
        read as f64,
    ]);
    comm.allreduce_sum(&mut all)?;
    let mut metrics = Metrics::new(model.kind());
    let mut batches = Vec::with_capacity(size);
    for f in all.chunks_exact(FIELDS) {
        metrics.add(&BatchStats {
            rows: f[0] as usize,
            loss_sum: f[1],
            correct: f[2] as usize,
            label_mean: f[3],
            label_m2: f[4],
            sse: f[5],
        });
        batches.push(f[6] as usize);
    }
    Ok((
        Score {
            loss: metrics.mean_loss(),
            accuracy: metrics.accuracy().or(metrics.r2()).unwrap_or(f64::NAN),
            rows: metrics.rows() as u64,
        },
        batches,
    ))
}

/// The single-process run a data-parallel run on `loaders.len()` ranks
/// equals (to rounding, under [`Averaging::Gradients`]): one process opens
/// every rank's loader (slices `0..k` of `k`, the same seed), and each step
/// takes the next mini-batch of every loader that has one and steps along
/// [`Model::gradient`] of all their pages together, until every loader is
/// done. This is what "the same permutation" means for a distributed
/// run: the same global mini-batches, the same mean gradient, computed
/// without a communicator. Returns the steps of each epoch.
///
/// # Errors
/// [`Error::BadArgument`] unless loader `i` of `k` is worker `i` of `k`,
/// and for options [`train`](crate::train::train) refuses; loader and
/// model errors.
pub fn train_lockstep<S: Source + 'static>(
    model: &mut Model,
    loaders: &[Loader<S>],
    options: &TrainOptions,
) -> Result<Vec<usize>> {
    let k = loaders.len();
    let sliced = loaders
        .iter()
        .enumerate()
        .all(|(i, l)| l.options().worker == i && l.options().workers == k);
    if k == 0 || !sliced {
        return Err(Error::BadArgument {
            what: "lockstep loaders",
            expected: "loader i of k is worker i of k workers",
        });
    }
    check_rates(options)?;
    options.scale.apply(model, loaders[0].dataset())?;
    model.fit_binary_labels(loaders[0].dataset())?;
    let mut grad = Gradient::try_new(model)?;
    let mut state = OptimizerState::try_new(options.optimizer, model)?;
    let mut steps = Vec::with_capacity(options.epochs);
    for epoch in 0..options.epochs {
        let lr = options.learning_rate * options.decay.powi(epoch as i32);
        let mut epochs = loaders
            .iter()
            .map(|l| l.epoch(epoch as u64).map(Some))
            .collect::<Result<Vec<_>>>()?;
        let mut taken = 0;
        loop {
            let mut pages = Vec::new();
            for slot in epochs.iter_mut() {
                let Some(batches) = slot else { continue };
                match batches.next() {
                    Some(batch) => pages.extend(batch?.pages),
                    None => *slot = None,
                }
            }
            if epochs.iter().all(Option::is_none) {
                break;
            }
            model.gradient(&pages, options.l2, &mut grad)?;
            model.step_with(&grad, lr, &mut state);
            taken += 1;
        }
        steps.push(taken);
    }
    Ok(steps)
}

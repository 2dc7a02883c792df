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
//! **One step loop.** The ranks run the trainer core of
//! [`train`](crate::train::train) (its checks, step rule, set-up and tail
//! mean, [`TrainOptions::average`]) with the allreduce between gradient
//! and step (`dist::collective`); under [`Averaging::Models`] each rank's
//! tail mean is averaged over the ranks at the end.
//!
//! **Determinism.** The allreduce sums in rank order, so the model depends
//! on the seed and the rank count only: the same bits whether the ranks
//! are threads ([`InProcess`](super::InProcess)) or MPI processes. Rank
//! 0's parameters are broadcast at the start, so every rank starts from
//! them.

use std::sync::Arc;
use std::time::Instant;

use super::collective::{Averaging, Exchange};
use super::comm::Communicator;
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};
use crate::loader::Loader;
use crate::model::{BatchStats, Metrics, Model, Optimizer};
use crate::page::Page;
use crate::train::core::{self, Step, Stepper, TailMean, TargetScale};
use crate::train::{evaluate, Average, EpochReport, Prepared, Score, TrainOptions};

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
    let target = core::prepare(model, loader.dataset(), options)?;
    // Everyone starts from rank 0's parameters (a linear regression's
    // bias at rank 0's label mean included).
    broadcast_params(comm, model)?;
    // Every rank applies the step rule to the same averaged gradient, so
    // their optimizer states stay equal (with model averaging each rank
    // steps on its own gradients and keeps its own state).
    let mut stepper = Stepper::new(model, options, target)?;
    let mut exchange = Exchange::new(comm, model)?;
    let mut reports = Vec::with_capacity(options.epochs);
    for epoch in 0..options.epochs {
        let lr = core::learning_rate(options, epoch);
        let start = Instant::now();
        let traffic = comm.traffic();
        let mut batches = loader.epoch(epoch as u64)?;
        let tail = TailMean::start(model, options, epoch)?;
        let steps = batches.by_ref().map(|b| {
            b.map(|b| Step {
                pages: b.pages,
                replay: b.replay,
            })
        });
        let run = exchange.epoch(
            comm,
            model,
            &mut stepper,
            steps,
            lr,
            sync,
            tail,
            Some(epoch),
        )?;
        let (local, steps, read, comm_seconds) = (run.local, run.steps, run.read, run.comm_seconds);
        let seconds = start.elapsed().as_secs_f64();
        let (train, batches_per_rank) = gather_figures(comm, model, &local, read)?;
        if !train.loss.is_finite() {
            return Err(Error::Diverged {
                epoch,
                learning_rate: lr,
            });
        }
        let eval = match eval {
            Some(ds) if comm.rank() == 0 => Some(evaluate(model, ds)?),
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
                tree_batches: stats.tree_batches,
                row_batches: stats.row_batches,
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

impl<S: Source + 'static> Prepared<S> {
    /// Trains the start model data-parallel with the other ranks of
    /// `comm` ([`train_distributed`]; every rank calls it with the same
    /// trainer). The trainer's loader options must make this rank's
    /// slice: [`LoaderOptions::workers`](crate::loader::LoaderOptions::workers)
    /// the communicator's size and `worker` its rank (a default memory
    /// budget is then shared by the ranks, see
    /// [`Trainer::prepare`](crate::train::Trainer::prepare)). Rank 0
    /// evaluates after each epoch; every rank returns the final model and
    /// its reports.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for more than one strategy; as
    /// [`train_distributed`].
    pub fn fit_distributed<C: Communicator + ?Sized>(
        self,
        comm: &C,
        sync: Averaging,
        on_epoch: impl FnMut(&DistributedReport),
    ) -> Result<(Model, Vec<DistributedReport>)> {
        // The split's scratch files live until training ends.
        let (mut model, options, loaders, eval, _holdout) = self.into_parts();
        let [loader] = &loaders[..] else {
            return Err(Error::BadArgument {
                what: "strategies of a distributed run",
                expected: "one",
            });
        };
        let reports = train_distributed(
            comm,
            &mut model,
            loader,
            &options,
            sync,
            eval.as_ref(),
            on_epoch,
        )?;
        Ok((model, reports))
    }
}

fn check<C: Communicator + ?Sized, S: Source + 'static>(
    comm: &C,
    loader: &Loader<S>,
    options: &TrainOptions,
    sync: Averaging,
) -> Result<()> {
    core::check_options(options)?;
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
    broadcast_params(comm, model)?;
    // Plain SGD at `learning_rate`, no tail mean: the caller runs the
    // epochs (and decays the rate).
    let options = TrainOptions {
        epochs: 1,
        learning_rate,
        l2,
        optimizer: Optimizer::Sgd,
        average: Average::None,
        ..TrainOptions::default()
    };
    // Plain SGD steps alike on the standardised target or not.
    let mut stepper = Stepper::new(model, &options, TargetScale::UNIT)?;
    let mut exchange = Exchange::new(comm, model)?;
    let steps = batches.into_iter().map(|pages| {
        Ok(Step {
            pages,
            replay: false,
        })
    });
    let tail = TailMean::start(model, &options, 0)?;
    let run = exchange.epoch(
        comm,
        model,
        &mut stepper,
        steps,
        learning_rate,
        Averaging::Gradients,
        tail,
        None,
    )?;
    let (score, _) = gather_figures(comm, model, &run.local, run.read)?;
    Ok((score, run.steps))
}

/// Synchronous data-parallel SGD, epoch after epoch, on mini-batches each
/// rank makes itself: UberShuffle's setting (section 4), where a coded
/// shuffle leaves each worker its next blocks before every epoch and the
/// parameter server holds the file. The trainer core of
/// [`train_distributed`] with another source of mini-batches:
/// `epoch_batches(epoch)` gives this rank's (after shuffling, say; a
/// rank without data gives none and still joins every step), each step
/// averages the ranks' gradients weighted by their rows, the learning
/// rate decays and the last epoch's iterates are averaged as
/// [`TrainOptions`] say, and rank 0 evaluates on `eval` after each epoch
/// (untimed).
///
/// Rank 0 sets the model up as every trainer does, on `dataset` (its
/// data; other ranks pass `None`): the input scaling
/// [`TrainOptions::scale`] gives it, a binary model's two label values,
/// a linear regression's target standardisation; every rank then starts
/// from rank 0's model (sent whole, scaling and labels included), so no
/// other rank reads the file. A report's `seconds` run from the call to
/// `epoch_batches` to the epoch's last step.
///
/// # Errors
/// [`Error::BadArgument`] for options out of range, or no `dataset` on
/// rank 0; errors of `epoch_batches` and of the model on this rank, and
/// [`Error::Communication`] on every other rank when one fails;
/// [`Error::Diverged`]; errors of the communicator.
pub fn train_on_batches<C, S, I>(
    comm: &C,
    model: &mut Model,
    options: &TrainOptions,
    dataset: Option<&Arc<Dataset<S>>>,
    mut epoch_batches: impl FnMut(usize) -> Result<I>,
    eval: Option<&Arc<Dataset<S>>>,
    mut on_epoch: impl FnMut(&DistributedReport),
) -> Result<Vec<DistributedReport>>
where
    C: Communicator + ?Sized,
    S: Source + 'static,
    I: IntoIterator<Item = Vec<Page>>,
{
    core::check_options(options)?;
    let target = start_from_root(comm, model, options, dataset)?;
    let mut stepper = Stepper::new(model, options, target)?;
    let mut exchange = Exchange::new(comm, model)?;
    let mut reports = Vec::with_capacity(options.epochs);
    for epoch in 0..options.epochs {
        let lr = core::learning_rate(options, epoch);
        let start = Instant::now();
        let traffic = comm.traffic();
        // Batches computed on trees and as rows, counted as they pass.
        let mut forms = [0usize; 2];
        // A rank whose batches fail says so in the next collective step.
        let steps: Box<dyn Iterator<Item = Result<Step<Vec<Page>>>>> = match epoch_batches(epoch) {
            Ok(batches) => Box::new(batches.into_iter().map(|pages| {
                for page in &pages {
                    let on_tree = &mut forms[usize::from(!page.batch().on_tree())];
                    *on_tree += 1;
                }
                Ok(Step {
                    pages,
                    replay: false,
                })
            })),
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        let tail = TailMean::start(model, options, epoch)?;
        let run = exchange.epoch(
            comm,
            model,
            &mut stepper,
            steps,
            lr,
            Averaging::Gradients,
            tail,
            Some(epoch),
        )?;
        let seconds = start.elapsed().as_secs_f64();
        let (train, batches_per_rank) = gather_figures(comm, model, &run.local, run.read)?;
        if !train.loss.is_finite() {
            return Err(Error::Diverged {
                epoch,
                learning_rate: lr,
            });
        }
        let eval = match eval {
            Some(ds) if comm.rank() == 0 => Some(evaluate(model, ds)?),
            _ => None,
        };
        let report = DistributedReport {
            epoch: EpochReport {
                epoch,
                learning_rate: lr,
                train,
                eval,
                seconds,
                wait_seconds: 0.0,
                steps: run.steps,
                buffer_peak_bytes: 0,
                gradient_threads: 1,
                tree_batches: forms[0],
                row_batches: forms[1],
            },
            batches_per_rank,
            communication_seconds: run.comm_seconds,
            bytes_sent: comm.traffic().since(traffic).bytes_sent,
        };
        on_epoch(&report);
        reports.push(report);
    }
    Ok(reports)
}

/// Rank 0 sets `model` up on its `dataset` (`core::prepare`) and sends it
/// whole, with the target's scale, to every rank; returns the target's
/// scale. A failure on rank 0 reaches the others as an empty model.
fn start_from_root<C, S>(
    comm: &C,
    model: &mut Model,
    options: &TrainOptions,
    dataset: Option<&Arc<Dataset<S>>>,
) -> Result<TargetScale>
where
    C: Communicator + ?Sized,
    S: Source + 'static,
{
    let mut bytes = Vec::new();
    let mut prepared = Ok(TargetScale::UNIT);
    if comm.rank() == 0 {
        prepared = match dataset {
            Some(ds) => core::prepare(model, ds, options),
            None => Err(Error::BadArgument {
                what: "rank 0 of a run on batches",
                expected: "the dataset, to set the model up on",
            }),
        };
        if let Ok(target) = &prepared {
            bytes = target.spread().to_le_bytes().to_vec();
            bytes.extend(model.to_bytes());
        }
    }
    comm.broadcast(0, &mut bytes)?;
    let target = prepared?;
    if comm.rank() == 0 {
        return Ok(target);
    }
    if bytes.len() < 8 {
        return Err(Error::Communication {
            rank: comm.rank(),
            peer: 0,
            message: "rank 0 could not set the model up".into(),
        });
    }
    let (spread, rest) = bytes.split_at(8);
    *model = Model::from_bytes(rest)?;
    Ok(TargetScale::with_spread(f64::from_le_bytes(
        spread.try_into().expect("8 bytes"),
    )))
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
    core::check_options(options)?;
    let target = core::prepare(model, loaders[0].dataset(), options)?;
    let mut stepper = Stepper::new(model, options, target)?;
    let mut steps = Vec::with_capacity(options.epochs);
    for epoch in 0..options.epochs {
        let lr = core::learning_rate(options, epoch);
        let mut epochs = loaders
            .iter()
            .map(|l| l.epoch(epoch as u64).map(Some))
            .collect::<Result<Vec<_>>>()?;
        // Each step: the next mini-batch of every loader that has one.
        let global = std::iter::from_fn(|| {
            let mut pages = Vec::new();
            for slot in epochs.iter_mut() {
                let Some(batches) = slot else { continue };
                match batches.next() {
                    Some(Ok(batch)) => pages.extend(batch.pages),
                    Some(Err(e)) => return Some(Err(e)),
                    None => *slot = None,
                }
            }
            match epochs.iter().all(Option::is_none) {
                true => None,
                false => Some(Ok(Step {
                    pages,
                    replay: false,
                })),
            }
        });
        let tail = TailMean::start(model, options, epoch)?;
        let run = core::run_epoch(model, &mut stepper, global, lr, tail, None, drop)?;
        steps.push(run.steps);
    }
    Ok(steps)
}

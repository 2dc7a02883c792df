//! The collective epoch: the trainer core's step loop
//! ([`crate::train::core`]) with the ranks' allreduce between the
//! gradient and the step. [`train_distributed`](super::train_distributed)
//! runs it on each rank's loader,
//! [`train_on_batches`](super::train_on_batches) and
//! [`sgd_epoch`](super::sgd_epoch) on the mini-batches of a coded
//! shuffle's caches.

use std::time::Instant;

use super::comm::Communicator;
use crate::error::{Error, Result};
use crate::model::{BatchStats, Gradient, Model};
use crate::page::Page;
use crate::train::core::{Step, Stepper, TailMean};

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

/// The buffer the ranks sum each step: the gradient (times this rank's
/// rows), then rows, active ranks, and a failure flag per rank.
pub(crate) struct Exchange {
    buffer: Vec<f64>,
    /// Parameters of the model.
    n: usize,
}

/// What one rank did in a collective epoch.
pub(crate) struct CollectiveRun {
    /// Figures of this rank's rows (replays excluded), before each step.
    pub(crate) local: BatchStats,
    /// Collective steps (the same on every rank).
    pub(crate) steps: usize,
    /// Mini-batches this rank read (the rest of its steps were padding).
    pub(crate) read: usize,
    /// Seconds spent in the communicator's collectives.
    pub(crate) comm_seconds: f64,
}

impl Exchange {
    /// The buffer for `model` on `comm`'s ranks (allocated now, fallibly).
    pub(crate) fn new<C: Communicator + ?Sized>(comm: &C, model: &Model) -> Result<Exchange> {
        let n = model.n_params();
        Ok(Exchange {
            buffer: crate::limits::try_filled(n + 2 + comm.size(), 0.0, "the gradient exchanged")?,
            n,
        })
    }

    /// One epoch over this rank's `batches` in step with the other ranks
    /// (see [`train_distributed`](super::train_distributed) for the
    /// global mini-batch, padding and failures). `epoch` names the epoch
    /// in the error other ranks see when this one fails.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn epoch<C, P>(
        &mut self,
        comm: &C,
        model: &mut Model,
        stepper: &mut Stepper,
        mut batches: impl Iterator<Item = Result<Step<P>>>,
        lr: f64,
        sync: Averaging,
        mut tail: TailMean,
        epoch: Option<usize>,
    ) -> Result<CollectiveRun>
    where
        C: Communicator + ?Sized,
        P: AsRef<[Page]>,
    {
        let (rank, n) = (comm.rank(), self.n);
        let buffer = &mut self.buffer;
        let mut run = CollectiveRun {
            local: BatchStats::default(),
            steps: 0,
            read: 0,
            comm_seconds: 0.0,
        };
        let mut since_average = 0;
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
                    stepper.gradient(model, batch.pages.as_ref(), None)?,
                    batch.replay,
                ))
            });
            match taken {
                Some(Ok((stats, replay))) => {
                    run.read += 1;
                    if !replay {
                        run.local.merge(&stats);
                    }
                    match sync {
                        Averaging::Gradients => {
                            let rows = stats.rows as f64;
                            for (b, g) in buffer.iter_mut().zip(gradient_values(stepper.grad())) {
                                *b = g * rows;
                            }
                            buffer[n] = rows;
                        }
                        Averaging::Models { .. } => stepper.step(model, lr),
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
                Averaging::Gradients => comm.allreduce_sum(buffer)?,
                // Only the flags travel between averages.
                Averaging::Models { .. } => comm.allreduce_sum(&mut buffer[n..])?,
            }
            run.comm_seconds += waited.elapsed().as_secs_f64();
            if let Some(r) = buffer[n + 2..].iter().position(|&f| f != 0.0) {
                let when = epoch.map_or(String::new(), |e| format!(" in epoch {e}"));
                return Err(failure.unwrap_or_else(|| Error::Communication {
                    rank,
                    peer: r,
                    message: format!("rank {r} failed{when} (see its error)"),
                }));
            }
            if buffer[n + 1] == 0.0 {
                break;
            }
            run.steps += 1;
            match sync {
                Averaging::Gradients if buffer[n] > 0.0 => {
                    let scale = 1.0 / buffer[n];
                    buffer[..n].iter_mut().for_each(|g| *g *= scale);
                    stepper.set_gradient(&buffer[..n])?;
                    stepper.step(model, lr);
                }
                Averaging::Gradients => {}
                Averaging::Models { every } => {
                    since_average += 1;
                    if since_average == every {
                        since_average = 0;
                        let waited = Instant::now();
                        average(comm, model)?;
                        run.comm_seconds += waited.elapsed().as_secs_f64();
                    }
                }
            }
            tail.add(model);
        }
        // Under model averaging each rank's tail mean is its own: the
        // final average makes them one (the mean of the ranks' means).
        let kept = tail.keeps();
        tail.finish(model);
        if matches!(sync, Averaging::Models { .. }) && (since_average > 0 || kept) {
            let waited = Instant::now();
            average(comm, model)?;
            run.comm_seconds += waited.elapsed().as_secs_f64();
        }
        Ok(run)
    }
}

/// Replaces the parameters of every rank by their mean over the ranks.
pub(crate) fn average<C: Communicator + ?Sized>(comm: &C, model: &mut Model) -> Result<()> {
    let mut params = model.try_params()?;
    comm.allreduce_sum(&mut params)?;
    let scale = 1.0 / comm.size() as f64;
    params.iter_mut().for_each(|p| *p *= scale);
    model.set_params(&params)
}

/// The gradient's values in parameter order, without a copy (it is as
/// large as the model).
fn gradient_values(grad: &Gradient) -> impl Iterator<Item = f64> + '_ {
    grad.layers()
        .iter()
        .flat_map(|l| l.weights().iter().chain(l.bias().iter()))
        .copied()
}

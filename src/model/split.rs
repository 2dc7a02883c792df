//! A second thread for the gradient of the linear models: the pages of a
//! mini-batch are shared between the trainer's thread and a helper
//! thread, each adds its pages' gradient into its own vector, and the
//! trainer adds the helper's into its own.
//!
//! Why: with every page resident an epoch runs on the trainer's thread
//! alone (nothing is read or validated), so on a machine of two cores one
//! stands idle, while a mini-batch of five 50-row pages is a few
//! microseconds of kernels. Handing work over through a channel costs
//! a futex wake-up (several microseconds) if the other thread sleeps, so
//! both sides spin briefly ([`SPIN`]) before they block: in steady state
//! neither sleeps between steps. The split is fixed (the trainer's thread
//! takes the first `len / 2` pages), so a run is as deterministic as
//! before, though its sums are grouped differently from the one-thread
//! gradient's (equal up to rounding).
//!
//! Not a departure from the papers' algorithms: the step is the same
//! mini-batch SGD step, the gradient computed on two cores.

use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{linear, BatchStats, ModelKind};
use crate::kernels::Workspace;
use crate::page::Page;

/// How long a side spins on its channel before blocking.
const SPIN: Duration = Duration::from_micros(200);

/// Work for the helper thread, and the buffers it gives back.
#[derive(Debug, Default)]
struct Job {
    kind: Option<ModelKind>,
    w: Vec<f64>,
    b: f64,
    pages: Vec<Page>,
    grad: Vec<f64>,
}

#[derive(Debug)]
struct Done {
    job: Job,
    bias: f64,
    stats: BatchStats,
}

/// A helper thread taking part in linear gradients (see the module
/// docs): made by [`GradientHelper::start`], used by
/// [`Model::gradient_split`](super::Model::gradient_split), stopped when
/// dropped.
#[derive(Debug)]
pub struct GradientHelper {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    handle: Option<JoinHandle<()>>,
    spare: Option<Job>,
}

impl GradientHelper {
    /// Starts the helper thread.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io)-like failure to spawn a thread, as
    /// [`std::thread::Builder::spawn`] reports it.
    pub fn start() -> std::io::Result<GradientHelper> {
        let (jobs, job_rx) = channel::<Job>();
        let (done_tx, done) = channel::<Done>();
        let handle = std::thread::Builder::new()
            .name("tocpile-gradient".into())
            .spawn(move || work(job_rx, done_tx))?;
        Ok(GradientHelper {
            jobs: Some(jobs),
            done,
            handle: Some(handle),
            spare: None,
        })
    }

    /// Adds the gradient of `pages` into `gw` on the helper thread while
    /// `mine` runs on this one; returns the helper's bias part and
    /// figures, or `None` if the helper is gone (the caller then does the
    /// pages itself).
    pub(super) fn run(
        &mut self,
        kind: &ModelKind,
        w: &[f64],
        b: f64,
        pages: &[Page],
        gw: &mut [f64],
        mine: impl FnOnce(&mut [f64]),
    ) -> Option<(f64, BatchStats)> {
        let mut job = self.spare.take().unwrap_or_default();
        if job.kind.as_ref() != Some(kind) {
            job.kind = Some(kind.clone());
        }
        job.w.clear();
        job.w.extend_from_slice(w);
        job.b = b;
        job.pages.extend(pages.iter().cloned());
        job.grad.clear();
        job.grad.resize(gw.len(), 0.0);
        let sent = self.jobs.as_ref().is_some_and(|tx| tx.send(job).is_ok());
        mine(gw);
        if !sent {
            return None;
        }
        let Some(done) = spin_recv(&self.done) else {
            // The thread is gone before answering: it panicked (a bug);
            // do not pass a partial gradient off as a whole one.
            self.jobs = None;
            if let Some(Err(panic)) = self.handle.take().map(JoinHandle::join) {
                std::panic::resume_unwind(panic);
            }
            return None;
        };
        for (g, h) in gw.iter_mut().zip(&done.job.grad) {
            *g += h;
        }
        self.spare = Some(done.job);
        Some((done.bias, done.stats))
    }
}

impl Drop for GradientHelper {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.jobs = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// The helper thread's loop.
fn work(jobs: Receiver<Job>, done: Sender<Done>) {
    let mut ws = Workspace::new();
    while let Some(mut job) = spin_recv(&jobs) {
        let kind = job.kind.clone().expect("a job names its model");
        let (bias, stats) =
            linear::gradient_add(&kind, &job.w, job.b, &job.pages, &mut job.grad, &mut ws);
        // Let go of the pages now, not when the buffers come back.
        job.pages.clear();
        if done.send(Done { job, bias, stats }).is_err() {
            return;
        }
    }
}

/// The next message, spinning for up to [`SPIN`] before blocking; `None`
/// once the other side is gone.
fn spin_recv<T>(rx: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        match rx.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins % 64 == 0 && start.elapsed() > SPIN {
            return rx.recv().ok();
        }
    }
}

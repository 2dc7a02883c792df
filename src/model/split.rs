//! A second thread for the gradient of the linear models: the pages of a
//! mini-batch are shared between the trainer's thread and a helper
//! thread, each adds its pages' gradient into its own vector, and the
//! trainer adds the helper's into its own.
//!
//! Why: with every page resident an epoch runs on the trainer's thread
//! alone (nothing is read or validated), so on a machine of two cores one
//! stands idle, while a mini-batch of five 50-row pages is a few
//! microseconds of kernels: too little to wait for a thread's wake-up.
//! So the helper spins while work keeps coming (it parks after [`SPIN`]
//! without any), and the hand-over works as a work-stealing `join`: the
//! trainer posts the second half, does the first, then takes the second
//! half back and does it itself unless the helper has already claimed it.
//! A busy machine that does not schedule the helper thus costs a post and
//! a take-back per step, never a wait (a plain channel hand-over made a
//! resident epoch 20 times slower under load). The split is fixed (the
//! trainer's thread takes the first `len / 2` pages), so a run's sums are
//! grouped the same way whoever does the second half, though differently
//! from the one-thread gradient's (equal up to rounding).
//!
//! Not a departure from the papers' algorithms: the step is the same
//! mini-batch SGD step, the gradient computed on two cores.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{linear, BatchStats, ModelKind};
use crate::kernels::Workspace;
use crate::page::Page;

/// How long the helper spins without work before it parks.
const SPIN: Duration = Duration::from_micros(200);

/// States of the hand-over.
const IDLE: u8 = 0;
const POSTED: u8 = 1;
const CLAIMED: u8 = 2;
const DONE: u8 = 3;
const QUIT: u8 = 4;

/// Work for the helper thread, and the buffers it gives back.
#[derive(Debug, Default)]
struct Job {
    kind: Option<ModelKind>,
    /// Labels above this are positive (`Model::positive_above`).
    above: f64,
    w: Vec<f64>,
    b: f64,
    pages: Vec<Page>,
    grad: Vec<f64>,
    /// What the helper found: the bias part and the figures.
    bias: f64,
    stats: BatchStats,
}

impl Job {
    /// Adds the pages' gradient into the gradient (zeroed when posted).
    fn run(&mut self, ws: &mut Workspace) {
        let kind = self.kind.as_ref().expect("a job names its model");
        (self.bias, self.stats) = linear::gradient_add(
            kind,
            self.above,
            &self.w,
            self.b,
            &self.pages,
            &mut self.grad,
            ws,
        );
        // Let go of the pages now, not when the buffers come back.
        self.pages.clear();
    }
}

#[derive(Debug, Default)]
struct Shared {
    state: AtomicU8,
    /// The helper is parked (or about to be): unpark it after posting.
    sleeping: AtomicBool,
    job: Mutex<Option<Job>>,
}

impl Shared {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Job>> {
        // A panic while holding the lock is a bug reported elsewhere; the
        // slot itself is always whole.
        self.job.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A helper thread taking part in linear gradients (see the module
/// docs): made by [`GradientHelper::start`], used by
/// [`Model::gradient_split`](super::Model::gradient_split), stopped when
/// dropped.
#[derive(Debug)]
pub struct GradientHelper {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
    /// The buffers of the last job, reused.
    spare: Option<Job>,
    /// The trainer thread's workspace for a half taken back.
    ws: Workspace,
    /// This window's time in `mine` and after it until the other half
    /// was in hand, and its steps (see [`WINDOW`]).
    mine_time: Duration,
    extra_time: Duration,
    steps: u32,
    /// Sharing did not pay in a window of this epoch: the trainer does
    /// every page itself until [`new_epoch`](Self::new_epoch).
    off: bool,
}

/// Steps per check that sharing pays: once the time spent after its own
/// half waiting for (or doing) the other half exceeds half the time of
/// its own half, the helper is not getting a core (a busy machine) and
/// the trainer stops offering work for the rest of the epoch. Measured
/// under load (two other jobs on two cores), always sharing made a
/// resident flights3m epoch 1.6 to 2 times slower than one thread.
const WINDOW: u32 = 256;

impl GradientHelper {
    /// Starts the helper thread.
    ///
    /// # Errors
    /// The failure to spawn a thread, as [`std::thread::Builder::spawn`]
    /// reports it.
    pub fn start() -> std::io::Result<GradientHelper> {
        let shared = Arc::new(Shared::default());
        let theirs = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("tocpile-gradient".into())
            .spawn(move || work(&theirs))?;
        Ok(GradientHelper {
            shared,
            handle: Some(handle),
            spare: None,
            ws: Workspace::new(),
            mine_time: Duration::ZERO,
            extra_time: Duration::ZERO,
            steps: 0,
            off: false,
        })
    }

    /// Offers work again (after the sharing check found that sharing
    /// did not pay in the previous epoch).
    pub fn new_epoch(&mut self) {
        self.off = false;
        (self.mine_time, self.extra_time, self.steps) = (Duration::ZERO, Duration::ZERO, 0);
    }

    /// Stops offering work until [`new_epoch`](Self::new_epoch): every
    /// page is then done on the caller's thread, its sums grouped as when
    /// shared (the same gradient to the last bit).
    pub fn pause(&mut self) {
        self.off = true;
    }

    /// Whether the last epoch's steps were shared to its end.
    pub fn sharing(&self) -> bool {
        !self.off
    }

    /// Adds the gradient of `pages` into `gw`, offered to the helper
    /// thread while `mine` runs on this one (taken back and done here if
    /// the helper has not claimed it by then); returns their bias part
    /// and figures.
    pub(super) fn run(
        &mut self,
        (kind, above): (&ModelKind, f64),
        w: &[f64],
        b: f64,
        pages: &[Page],
        gw: &mut [f64],
        mine: impl FnOnce(&mut [f64]),
    ) -> (f64, BatchStats) {
        let mut job = self.spare.take().unwrap_or_default();
        if self.off {
            mine(gw);
            return self.finish_here(job, (kind, above), w, b, pages, gw);
        }
        if job.kind.as_ref() != Some(kind) {
            job.kind = Some(kind.clone());
        }
        job.above = above;
        job.w.clear();
        job.w.extend_from_slice(w);
        job.b = b;
        job.pages.extend(pages.iter().cloned());
        job.grad.clear();
        job.grad.resize(gw.len(), 0.0);
        let shared = &*self.shared;
        *shared.slot() = Some(job);
        shared.state.store(POSTED, Ordering::SeqCst);
        if shared.sleeping.load(Ordering::SeqCst) {
            if let Some(handle) = &self.handle {
                handle.thread().unpark();
            }
        }
        let start = Instant::now();
        mine(gw);
        let mine_done = Instant::now();
        let taken_back = shared
            .state
            .compare_exchange(POSTED, IDLE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if !taken_back {
            // Claimed: the helper is at work on it. Wait for it, giving
            // the core away if that takes long.
            let mut spins = 0u32;
            while shared.state.load(Ordering::Acquire) != DONE {
                if self.handle.as_ref().is_some_and(JoinHandle::is_finished) {
                    // It died with the job (a bug): re-raise its panic.
                    if let Some(Err(panic)) = self.handle.take().map(JoinHandle::join) {
                        std::panic::resume_unwind(panic);
                    }
                    unreachable!("the helper thread ended while holding a job");
                }
                spins = spins.wrapping_add(1);
                if spins < 1024 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        let mut job = shared.slot().take().expect("a posted job is in the slot");
        shared.state.store(IDLE, Ordering::SeqCst);
        if taken_back {
            job.run(&mut self.ws);
        }
        self.mine_time += mine_done - start;
        self.extra_time += mine_done.elapsed();
        self.steps += 1;
        if self.steps == WINDOW {
            self.off = 2 * self.extra_time > self.mine_time;
            (self.mine_time, self.extra_time, self.steps) = (Duration::ZERO, Duration::ZERO, 0);
        }
        Self::add(gw, &job);
        let out = (job.bias, job.stats);
        self.spare = Some(job);
        out
    }

    /// The other half done on this thread, sharing being off: straight
    /// from the caller's weights and pages (nothing copied into the job),
    /// into the job's zeroed vector and then added, so the sums are
    /// grouped as when shared.
    fn finish_here(
        &mut self,
        mut job: Job,
        (kind, above): (&ModelKind, f64),
        w: &[f64],
        b: f64,
        pages: &[Page],
        gw: &mut [f64],
    ) -> (f64, BatchStats) {
        job.grad.clear();
        job.grad.resize(gw.len(), 0.0);
        let out = linear::gradient_add(kind, above, w, b, pages, &mut job.grad, &mut self.ws);
        Self::add(gw, &job);
        self.spare = Some(job);
        out
    }

    fn add(gw: &mut [f64], job: &Job) {
        for (g, h) in gw.iter_mut().zip(&job.grad) {
            *g += h;
        }
    }
}

impl Drop for GradientHelper {
    fn drop(&mut self) {
        self.shared.state.store(QUIT, Ordering::SeqCst);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

/// The helper thread's loop: claim a posted job, do it, mark it done;
/// spin while jobs keep coming, park after [`SPIN`] without one.
fn work(shared: &Shared) {
    let mut ws = Workspace::new();
    let mut idle_since = Instant::now();
    let mut spins = 0u32;
    loop {
        match shared.state.load(Ordering::Acquire) {
            QUIT => return,
            POSTED => {
                let claimed = shared
                    .state
                    .compare_exchange(POSTED, CLAIMED, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok();
                if claimed {
                    let mut job = shared.slot().take().expect("a posted job is in the slot");
                    job.run(&mut ws);
                    *shared.slot() = Some(job);
                    shared.state.store(DONE, Ordering::Release);
                    idle_since = Instant::now();
                }
                continue;
            }
            _ => {}
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) && idle_since.elapsed() > SPIN {
            // Park, unless a job came in between: the trainer reads
            // `sleeping` after posting, so one of the two sees the other.
            shared.sleeping.store(true, Ordering::SeqCst);
            if !matches!(shared.state.load(Ordering::SeqCst), POSTED | QUIT) {
                std::thread::park_timeout(Duration::from_millis(50));
            }
            shared.sleeping.store(false, Ordering::SeqCst);
            idle_since = Instant::now();
        }
    }
}

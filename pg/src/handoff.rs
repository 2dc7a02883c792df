//! Double buffering (CorgiPile paper section 6.3) that a cancel can
//! interrupt: the backend's thread reads the next buffer while the SGD
//! thread trains on the current one, and hands each buffer over through
//! a [`Handoff`], a one-chunk mailbox.
//!
//! Handing a buffer over waits until the SGD thread takes it (so two
//! buffers at most are held, the one trained on and the one read), but
//! never blindly: the backend waits on a condition variable in slices of
//! [`POLL`], checking for interrupts between them (`CHECK_FOR_INTERRUPTS`,
//! on the backend's thread, the only one that may call PostgreSQL). A
//! cancel or terminate that arrives while the SGD thread is mid-buffer
//! (a whole table's buffer of one-row mini-batches through a network can
//! take many seconds) raises its error within a slice; on the way out
//! the handoff's [`StopGuard`] raises the flag the SGD thread polls
//! before each mini-batch, so it stops within one, and the backend
//! joins it before the error reaches PostgreSQL.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::feed::Chunk;

/// The longest the backend waits without checking for interrupts.
pub const POLL: Duration = Duration::from_millis(50);

#[derive(Default)]
struct State {
    /// A chunk sent and not yet taken.
    chunk: Option<Chunk>,
    /// The backend sends no more.
    closed: bool,
    /// The SGD thread has ended (done, failed or stopped).
    finished: bool,
}

/// The mailbox between the backend (sender) and the SGD thread.
pub struct Handoff {
    state: Mutex<State>,
    changed: Condvar,
    /// Raised when the backend leaves (an error, a cancel): the SGD
    /// thread stops before its next mini-batch.
    stop: Arc<AtomicBool>,
}

impl Default for Handoff {
    fn default() -> Self {
        Handoff {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

impl Handoff {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock is reported elsewhere; the state
        // itself is always whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The flag the SGD thread polls.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Backend: hands `chunk` over and waits until the SGD thread takes
    /// it, calling `between` (which checks for interrupts and reports
    /// finished epochs) at least every [`POLL`]. Returns false if the SGD
    /// thread has ended (it failed: its result says why).
    pub fn send(&self, chunk: Chunk, between: &mut dyn FnMut()) -> bool {
        let mut state = self.lock();
        if state.finished {
            return false;
        }
        state.chunk = Some(chunk);
        self.changed.notify_all();
        loop {
            if state.chunk.is_none() {
                return true;
            }
            if state.finished {
                state.chunk = None;
                return false;
            }
            state = self
                .changed
                .wait_timeout(state, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            drop(state);
            between();
            state = self.lock();
        }
    }

    /// Backend: sends no more, and waits until the SGD thread has ended,
    /// calling `between` at least every [`POLL`].
    pub fn close_and_wait(&self, between: &mut dyn FnMut()) {
        let mut state = self.lock();
        state.closed = true;
        self.changed.notify_all();
        while !state.finished {
            state = self
                .changed
                .wait_timeout(state, POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            drop(state);
            between();
            state = self.lock();
        }
    }

    /// SGD thread: the next chunk and the seconds waited for it, or
    /// `None` once the backend sends no more or asks it to stop.
    pub fn receive(&self) -> (Option<Chunk>, f64) {
        let start = Instant::now();
        let mut state = self.lock();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return (None, start.elapsed().as_secs_f64());
            }
            if let Some(chunk) = state.chunk.take() {
                self.changed.notify_all();
                return (Some(chunk), start.elapsed().as_secs_f64());
            }
            if state.closed {
                return (None, start.elapsed().as_secs_f64());
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// SGD thread: it has ended (called by [`FinishGuard`] however it
    /// ends, a panic included).
    fn finish(&self) {
        self.lock().finished = true;
        self.changed.notify_all();
    }

    /// Backend: the SGD thread is to stop before its next mini-batch
    /// (also done by [`StopGuard`]).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut state = self.lock();
        state.closed = true;
        state.chunk = None;
        self.changed.notify_all();
    }
}

/// Held by the backend while the SGD thread runs: when dropped (at the
/// end, or while an error unwinds the backend's stack) the SGD thread
/// stops before its next mini-batch, so that joining it takes no longer.
pub struct StopGuard<'a>(pub &'a Handoff);

impl Drop for StopGuard<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Held by the SGD thread: marks it ended when dropped, however it ends.
pub struct FinishGuard<'a>(pub &'a Handoff);

impl Drop for FinishGuard<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::RowBuffer;

    fn rows() -> Chunk {
        Chunk::Rows {
            rows: RowBuffer::new(1),
            shuffle: None,
        }
    }

    #[test]
    fn a_chunk_is_handed_over_and_the_sender_waits_for_it_to_be_taken() {
        let handoff = Handoff::default();
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                let _finish = FinishGuard(&handoff);
                let mut got = 0;
                while let (Some(_), _) = handoff.receive() {
                    got += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                got
            });
            let mut calls = 0;
            for _ in 0..3 {
                assert!(handoff.send(rows(), &mut || calls += 1));
            }
            handoff.close_and_wait(&mut || calls += 1);
            assert_eq!(worker.join().unwrap(), 3);
        });
    }

    #[test]
    fn a_sender_waiting_on_a_busy_worker_is_called_back_and_a_stop_ends_the_worker() {
        let handoff = Handoff::default();
        let stop = handoff.stop_flag();
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                let _finish = FinishGuard(&handoff);
                let (first, _) = handoff.receive();
                assert!(first.is_some());
                // Busy "training" until told to stop.
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let guard = StopGuard(&handoff);
            assert!(handoff.send(rows(), &mut || {}));
            // The second waits on the busy worker: the callback runs
            // (where the backend checks for interrupts) and, when it
            // leaves (here after three calls), the guard stops the worker.
            let mut calls = 0;
            let sent = handoff.send(rows(), &mut || {
                calls += 1;
                if calls == 3 {
                    handoff.stop();
                }
            });
            assert!(!sent || calls >= 3);
            drop(guard);
            worker.join().unwrap();
        });
        // The worker has ended: a send says so.
        assert!(!handoff.send(rows(), &mut || {}));
    }
}

//! The next epoch's first buffer, decoded while this epoch's last one is
//! handed out.
//!
//! A streamed epoch began with its first buffer decoded while the
//! trainer waited (on shuffled flights3m with `--memory 0`, 22-37 ms of a
//! 255-295 ms drained epoch), and ended with the decode thread idle
//! while the last buffer trained: `tocpile train` kept 1.75 of its 2
//! cores busy. When an epoch reaches its last buffer, the loader now
//! starts the next epoch's feed and first decode ([`Next::start`]) and
//! keeps them here; [`Loader::epoch`](super::super::Loader::epoch) for
//! that epoch takes them instead of starting anew. The blocks, the
//! buffers and the order are the same either way: what a buffer holds
//! does not depend on when it was decoded.
//!
//! The spent buffers of the ending epoch are freed first
//! ([`Buffers::advance`](super::fill::Buffers)), so the overlap holds no
//! more decoded buffers than double buffering does within an epoch. An
//! epoch asked for out of turn drops what was started (waiting for its
//! decode to end). A process forked from the loader's (PyTorch's
//! `DataLoader` workers) inherits none of the threads, so it never
//! starts one ahead nor joins one: [`NextEpoch`] leaks what it holds
//! there rather than wait on threads that do not exist.

use std::any::Any;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::super::feed::Feed;
use super::super::resident::Resident;
use super::super::Plan;
use super::fill::Buffers;
use crate::dataset::{Dataset, Source};

/// An epoch's buffers, started ahead: its number and its [`Buffers`].
type Started = (u64, Box<dyn Any + Send>);

/// The loader's slot for the next epoch's buffers (see the module docs).
pub(crate) struct NextEpoch {
    /// The process that made the loader: the only one that starts or
    /// joins threads through the slot.
    owner: u32,
    slot: Mutex<Option<Started>>,
}

impl NextEpoch {
    pub(crate) fn new() -> NextEpoch {
        NextEpoch {
            owner: std::process::id(),
            slot: Mutex::new(None),
        }
    }

    /// Whether this process may start an epoch ahead.
    fn owned(&self) -> bool {
        self.owner == std::process::id()
    }

    /// The buffers started ahead for `epoch`, if they were; anything else
    /// started is dropped.
    pub(crate) fn take<S: Source + 'static>(&self, epoch: u64) -> Option<Buffers<S>> {
        if !self.owned() {
            return None;
        }
        let started = self.slot.lock().ok()?.take();
        let (e, buffers) = started?;
        if e != epoch {
            return None;
        }
        buffers.downcast::<Buffers<S>>().ok().map(|b| *b)
    }

    fn put(&self, epoch: u64, buffers: Box<dyn Any + Send>) {
        if let Ok(mut slot) = self.slot.lock() {
            *slot = Some((epoch, buffers));
        }
    }
}

impl std::fmt::Debug for NextEpoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = self
            .slot
            .try_lock()
            .ok()
            .and_then(|s| s.as_ref().map(|(e, _)| *e));
        f.debug_struct("NextEpoch")
            .field("owner", &self.owner)
            .field("started", &started)
            .finish()
    }
}

impl Drop for NextEpoch {
    fn drop(&mut self) {
        if !self.owned() {
            // A forked child: the threads behind what is held are the
            // parent's. `get_mut` takes no lock (one held at the fork
            // would never be released here).
            if let Ok(slot) = self.slot.get_mut() {
                std::mem::forget(slot.take());
            }
        }
    }
}

/// What an epoch needs to start the next one's buffers.
pub(crate) struct Next<S: Source + 'static> {
    pub(crate) slot: Arc<NextEpoch>,
    pub(crate) epoch: u64,
    /// The next epoch's block order (this worker's).
    pub(crate) order: Vec<usize>,
    pub(crate) dataset: Arc<Dataset<S>>,
    pub(crate) resident: Arc<Resident>,
}

impl<S: Source + 'static> Next<S> {
    /// Starts the next epoch's feed and the decode of its first buffer,
    /// kept in the slot. An error leaves the slot empty: the epoch, when
    /// asked for, starts anew and meets it there.
    pub(super) fn start(self, plan: &Arc<Plan>, path: &Path) {
        if !self.slot.owned() {
            return;
        }
        let Ok(feed) = Feed::start(self.dataset, plan, self.order, self.resident) else {
            return;
        };
        let mut buffers = Buffers::new(feed, Arc::clone(plan), path.to_path_buf());
        if buffers.start_decode().is_ok() {
            self.slot.put(self.epoch, Box::new(buffers));
        }
    }
}

//! The loader's read-ahead for streamed blocks (those not resident):
//! background threads read, checksum *and validate* the blocks of an
//! epoch's order (every page checked, [`Block::pack`](crate::dataset::Block::pack)), in groups of consecutive blocks
//! of at least [`GROUP_BYTES`] encoded bytes, and hand each group over in
//! one message. With small blocks (2 KiB, the default) one message and one
//! thread wake-up per block, and a rayon split of a block's five pages on
//! the producer's thread, cost more than the reading and validating: a
//! profile of a streamed epoch showed about a third of its time in
//! futex waits, wake-ups and `sched_yield`. Validating here also takes that
//! work off the producer's thread, so it overlaps the consumer's training
//! (CorgiPile paper 6.3, double buffering). Groups are dealt round-robin
//! to one thread per core (at most [`MAX_THREADS`]) and taken back in
//! order.
//!
//! Memory: at most `ahead` groups (rounded up to a multiple of the
//! threads) wait in the channels, plus one being made per thread; their
//! bytes are counted in [`Ahead::in_flight_bytes`] from when a block is
//! packed until the producer takes it, so the loader's peak includes
//! them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::resident::{packed_bytes, Packed, Resident};
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};

/// Encoded bytes of blocks handed over together: 32 blocks of 2 KiB, one
/// block of 64 KiB or more.
pub(crate) const GROUP_BYTES: u64 = 64 << 10;

/// Most read-ahead threads of one epoch.
const MAX_THREADS: usize = 4;

/// Validated blocks in a given order, from background threads.
/// Yields each block's result in order; after an error nothing more.
/// Dropping it stops the threads.
pub(crate) struct Ahead {
    /// One channel per thread; group `g` comes from `rxs[g % threads]`.
    rxs: Vec<Receiver<Vec<Result<Packed>>>>,
    handles: Vec<JoinHandle<()>>,
    /// The next group's number.
    next_group: usize,
    groups: usize,
    group: std::vec::IntoIter<Result<Packed>>,
    in_flight: Arc<AtomicUsize>,
    done: bool,
}

impl Ahead {
    /// Starts reading `order` (block numbers of `dataset`), at most
    /// `ahead` groups in front of the consumer.
    ///
    /// Validating (building decode trees) costs several times the
    /// training of the same rows, so one thread made a streamed epoch
    /// wait on it (shuffled flights3m, No Shuffle: 70% of the epoch
    /// waiting). Groups are dealt round-robin to up to [`MAX_THREADS`]
    /// threads (as many as the machine has cores, since the trainer
    /// keeps a core busy only part of the time), each with its own
    /// channel, and taken back in order, so the blocks arrive exactly in
    /// `order` whatever the threads' timing.
    pub(crate) fn start<S: Source + 'static>(
        dataset: Arc<Dataset<S>>,
        order: Vec<usize>,
        ahead: usize,
        resident: Arc<Resident>,
    ) -> Result<Ahead> {
        if order.iter().any(|&b| b >= dataset.n_blocks()) {
            return Err(Error::BadArgument {
                what: "block order",
                expected: "block numbers below the file's block count",
            });
        }
        // Consecutive runs of the order holding at least GROUP_BYTES each.
        let mut bounds = vec![0];
        let mut bytes = 0;
        for (i, &b) in order.iter().enumerate() {
            bytes += dataset.block_bytes(b);
            if bytes >= GROUP_BYTES || i + 1 == order.len() {
                bounds.push(i + 1);
                bytes = 0;
            }
        }
        let groups = bounds.len() - 1;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = cores.clamp(1, MAX_THREADS).min(groups.max(1));
        let order: Arc<[usize]> = order.into();
        let bounds: Arc<[usize]> = bounds.into();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let mut rxs = Vec::with_capacity(threads);
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let (tx, rx) = sync_channel(ahead.div_ceil(threads).max(1));
            let (order, bounds) = (Arc::clone(&order), Arc::clone(&bounds));
            let (data, counted) = (Arc::clone(&dataset), Arc::clone(&in_flight));
            let resident = Arc::clone(&resident);
            let handle = std::thread::Builder::new()
                .name("tocpile-read-ahead".into())
                .spawn(move || {
                    for g in (t..groups).step_by(threads) {
                        let blocks = &order[bounds[g]..bounds[g + 1]];
                        let mut group = Vec::with_capacity(blocks.len());
                        let mut failed = false;
                        for &b in blocks {
                            let block = data
                                .read_block(b)
                                .and_then(|block| resident.pack(block))
                                .map(Arc::new);
                            failed = block.is_err();
                            if let Ok(block) = &block {
                                counted.fetch_add(packed_bytes(block), Ordering::AcqRel);
                            }
                            group.push(block);
                            if failed {
                                break;
                            }
                        }
                        // A closed channel means the consumer is gone: stop.
                        if tx.send(group).is_err() || failed {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::spawn_failed(dataset.path(), "read-ahead", e))?;
            rxs.push(rx);
            handles.push(handle);
        }
        Ok(Ahead {
            rxs,
            handles,
            next_group: 0,
            groups,
            group: Vec::new().into_iter(),
            in_flight,
            done: false,
        })
    }

    /// Heap bytes of validated blocks made and not yet taken.
    pub(crate) fn in_flight_bytes(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Stops every thread (closing the channels first unblocks a thread
    /// waiting to send) and re-raises a thread's panic, if any: a bug must
    /// not pass a truncated order off as a complete one.
    fn finish(&mut self, propagate: bool) {
        self.done = true;
        self.rxs.clear();
        self.group = Vec::new().into_iter();
        for handle in self.handles.drain(..) {
            if let Err(panic) = handle.join() {
                if propagate {
                    std::panic::resume_unwind(panic);
                }
            }
        }
    }
}

impl Iterator for Ahead {
    type Item = Result<Packed>;

    fn next(&mut self) -> Option<Result<Packed>> {
        loop {
            if let Some(item) = self.group.next() {
                match &item {
                    Ok(block) => {
                        self.in_flight
                            .fetch_sub(packed_bytes(block), Ordering::AcqRel);
                    }
                    Err(_) => self.finish(true),
                }
                return Some(item);
            }
            if self.done || self.next_group >= self.groups {
                self.finish(true);
                return None;
            }
            let rx = &self.rxs[self.next_group % self.rxs.len()];
            match rx.recv() {
                Ok(group) => {
                    self.group = group.into_iter();
                    self.next_group += 1;
                }
                // A thread ended before its group: it panicked (an error
                // would have come as an item).
                Err(_) => {
                    self.finish(true);
                    return None;
                }
            }
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        self.finish(false);
    }
}

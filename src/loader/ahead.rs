//! The loader's read-ahead for streamed blocks (those not resident): a
//! background thread reads, checksums *and validates* the blocks of an
//! epoch's order (TOC decode trees built), in groups of consecutive blocks
//! of at least [`GROUP_BYTES`] encoded bytes, and hands each group over in
//! one message. With small blocks (2 KiB, the default) one message and one
//! thread wake-up per block, and a rayon split of a block's five pages on
//! the producer's thread, cost more than the reading and validating: a
//! profile of a streamed epoch showed about a third of its time in
//! futex waits, wake-ups and `sched_yield`. Validating here also takes that
//! work off the producer's thread, so it overlaps the consumer's training
//! (CorgiPile paper 6.3, double buffering).
//!
//! Memory: at most `ahead` groups wait in the channel, plus the one being
//! made; their pages' heap bytes are counted in
//! [`Ahead::in_flight_bytes`] from when a block's pages are made until the
//! producer takes them, so the loader's peak includes them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::resident::{block_heap_bytes, BlockPages};
use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};

/// Encoded bytes of blocks handed over together: 32 blocks of 2 KiB, one
/// block of 64 KiB or more.
pub(crate) const GROUP_BYTES: u64 = 64 << 10;

/// Validated pages of blocks in a given order, from a background thread.
/// Yields each block's result in order; after an error nothing more.
/// Dropping it stops the thread.
pub(crate) struct Ahead {
    rx: Option<Receiver<Vec<Result<BlockPages>>>>,
    handle: Option<JoinHandle<()>>,
    group: std::vec::IntoIter<Result<BlockPages>>,
    in_flight: Arc<AtomicUsize>,
}

impl Ahead {
    /// Starts reading `order` (block numbers of `dataset`), at most
    /// `ahead` groups in front of the consumer.
    pub(crate) fn start<S: Source + 'static>(
        dataset: Arc<Dataset<S>>,
        order: Vec<usize>,
        ahead: usize,
    ) -> Result<Ahead> {
        if order.iter().any(|&b| b >= dataset.n_blocks()) {
            return Err(Error::BadArgument {
                what: "block order",
                expected: "block numbers below the file's block count",
            });
        }
        let sizes: Vec<u64> = order.iter().map(|&b| dataset.block_bytes(b)).collect();
        let (tx, rx) = sync_channel(ahead);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&in_flight);
        let path = dataset.path().to_path_buf();
        let handle = std::thread::Builder::new()
            .name("tocpile-read-ahead".into())
            .spawn(move || {
                let mut at = 0;
                while at < order.len() {
                    let mut end = at;
                    let mut bytes = 0;
                    while end < order.len() && bytes < GROUP_BYTES {
                        bytes += sizes[end];
                        end += 1;
                    }
                    let mut group = Vec::with_capacity(end - at);
                    let mut failed = false;
                    for &b in &order[at..end] {
                        let pages = dataset.read_block(b).and_then(|block| validate(&block));
                        failed = pages.is_err();
                        if let Ok(pages) = &pages {
                            counted.fetch_add(block_heap_bytes(pages), Ordering::AcqRel);
                        }
                        group.push(pages);
                        if failed {
                            break;
                        }
                    }
                    // A closed channel means the consumer is gone: stop.
                    if tx.send(group).is_err() || failed {
                        break;
                    }
                    at = end;
                }
            })
            .map_err(|e| Error::io(&path, e))?;
        Ok(Ahead {
            rx: Some(rx),
            handle: Some(handle),
            group: Vec::new().into_iter(),
            in_flight,
        })
    }

    /// Heap bytes of validated pages made and not yet taken.
    pub(crate) fn in_flight_bytes(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

/// A block's pages, validated one after the other on this thread: a block
/// holds a few small pages, too little to split across threads.
fn validate(block: &crate::dataset::Block) -> Result<BlockPages> {
    (0..block.n_pages())
        .map(|j| block.page(j))
        .collect::<Result<Vec<_>>>()
        .map(Into::into)
}

impl Iterator for Ahead {
    type Item = Result<BlockPages>;

    fn next(&mut self) -> Option<Result<BlockPages>> {
        loop {
            if let Some(item) = self.group.next() {
                match &item {
                    Ok(pages) => {
                        self.in_flight
                            .fetch_sub(block_heap_bytes(pages), Ordering::AcqRel);
                    }
                    Err(_) => {
                        self.rx = None;
                        self.group = Vec::new().into_iter();
                    }
                }
                return Some(item);
            }
            match self.rx.as_ref()?.recv() {
                Ok(group) => self.group = group.into_iter(),
                Err(_) => {
                    self.rx = None;
                    // The thread is done. If it panicked (a bug), do not
                    // pass a truncated order off as a complete one.
                    if let Some(Err(panic)) = self.handle.take().map(JoinHandle::join) {
                        std::panic::resume_unwind(panic);
                    }
                    return None;
                }
            }
        }
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // Closing the channel first unblocks a thread waiting to send.
        self.rx = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

//! Read-ahead: a background thread reads (and checksums) the blocks of a
//! dataset in a given order while the caller works on the previous ones,
//! so disk time overlaps decoding and training. The channel between them
//! is bounded, so memory holds at most `ahead + 2` blocks (the one being
//! read, those waiting, the one being used). The CorgiPile loader reads
//! its block permutation through this, and a sequential scan is the
//! identity order.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::block::Block;
use super::reader::Dataset;
use super::source::Source;
use crate::error::{Error, Result};

/// Blocks of a dataset in a chosen order, read ahead by a background
/// thread. Made by [`Dataset::prefetch`]. Yields each block's result in
/// order; after an error it yields nothing more. Dropping it stops the
/// thread.
#[derive(Debug)]
pub struct Prefetch {
    rx: Option<Receiver<Result<Block>>>,
    handle: Option<JoinHandle<()>>,
}

impl<S: Source + 'static> Dataset<S> {
    /// Reads the blocks listed in `order` on a background thread, at most
    /// `ahead` blocks in front of the consumer (plus the one being read).
    /// Blocks may repeat or be left out: `order` is any list of block
    /// numbers.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if a number in `order` is not a block of the
    /// file. Read errors arrive through the iterator, in order.
    pub fn prefetch(self: &Arc<Self>, order: Vec<usize>, ahead: usize) -> Result<Prefetch> {
        if order.iter().any(|&b| b >= self.n_blocks()) {
            return Err(Error::BadArgument {
                what: "block order",
                expected: "block numbers below the file's block count",
            });
        }
        let (tx, rx) = sync_channel(ahead);
        let dataset = Arc::clone(self);
        let handle = std::thread::Builder::new()
            .name("tocpile-prefetch".into())
            .spawn(move || {
                for b in order {
                    let block = dataset.read_block(b);
                    let failed = block.is_err();
                    // A closed channel means the consumer is gone: stop.
                    if tx.send(block).is_err() || failed {
                        break;
                    }
                }
            })
            .map_err(|e| Error::spawn_failed(self.path(), "prefetch", e))?;
        Ok(Prefetch {
            rx: Some(rx),
            handle: Some(handle),
        })
    }
}

impl Iterator for Prefetch {
    type Item = Result<Block>;

    fn next(&mut self) -> Option<Result<Block>> {
        let item = self.rx.as_ref()?.recv().ok();
        if matches!(item, Some(Err(_)) | None) {
            self.rx = None;
        }
        if item.is_none() {
            // The thread is done. If it panicked (a bug), do not pass a
            // truncated order off as a complete one.
            if let Some(Err(panic)) = self.handle.take().map(JoinHandle::join) {
                std::panic::resume_unwind(panic);
            }
        }
        item
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        // Closing the channel first unblocks a thread waiting to send.
        self.rx = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

//! Spent mini-batches handed back to the loader's thread, to be freed
//! where they were made.
//!
//! A whole-file epoch's loader thread allocates every mini-batch (its
//! codes, row ends and labels, a few KiB each) and the trainer frees it
//! after its step. glibc returns a block freed on another thread to the
//! malloc arena of the thread that allocated it, under that arena's lock,
//! while the loader's next allocations take the same lock: in a profile of
//! `tocpile train` on flights3m (whole file, pair codes), the futex
//! wake-ups of that lock were 3% of the trainer thread's samples, on the
//! epoch's critical path. Handed back 64 batches at a time and freed
//! between the loader's chunks, the trainer thread's samples fell by 7 to
//! 12% and the loader's by 12 to 20% (two alternated runs of each build;
//! `docs/archive/RESULTS-HISTORY.md`, section 47).
//!
//! Only whole-file epochs hand batches back: their loader thread cuts
//! batches continuously, so what comes back is freed within a chunk. A
//! buffer-at-a-time epoch's loader spends long stretches decoding the
//! next buffer, over which a buffer's worth of spent batches would pile
//! up beside it. The bytes on their way back count in the epoch's peak
//! ([`EpochStats::buffer_peak_bytes`](super::EpochStats::buffer_peak_bytes)).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use crate::page::Page;

/// Mini-batches handed back at once: one channel operation per group.
const GROUP: usize = 64;

/// The consumer's end: takes each spent mini-batch's pages
/// ([`Epoch::spent`](super::Epoch::spent)).
pub(crate) struct Spent {
    back: Option<Sender<Vec<Vec<Page>>>>,
    held: Vec<Vec<Page>>,
    /// Bytes of the pages given and not yet freed, shared with the
    /// producer's end.
    bytes: Arc<AtomicUsize>,
}

/// The producer's end: frees what came back.
pub(crate) struct SpentReturn {
    rx: Receiver<Vec<Vec<Page>>>,
    bytes: Arc<AtomicUsize>,
    freed: Arc<AtomicUsize>,
}

/// A consumer's end that frees in place (no producer thread).
pub(crate) fn in_place() -> Spent {
    Spent {
        back: None,
        held: Vec::new(),
        bytes: Arc::default(),
    }
}

/// The two ends of a way back, and a count of the mini-batches the
/// producer's end has freed (for the tests).
pub(crate) fn way_back() -> (Spent, SpentReturn, Arc<AtomicUsize>) {
    let (tx, rx) = channel();
    let (bytes, freed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let spent = Spent {
        back: Some(tx),
        held: Vec::new(),
        bytes: Arc::clone(&bytes),
    };
    let back = SpentReturn {
        rx,
        bytes,
        freed: Arc::clone(&freed),
    };
    (spent, back, freed)
}

fn heap_bytes(pages: &[Page]) -> usize {
    pages.iter().map(Page::heap_bytes).sum()
}

impl Spent {
    /// Another consumer's end to the same producer.
    pub(crate) fn another(&self) -> Spent {
        Spent {
            back: self.back.clone(),
            held: Vec::new(),
            bytes: Arc::clone(&self.bytes),
        }
    }

    /// Takes a mini-batch's pages once the consumer is done with them.
    pub(crate) fn give(&mut self, pages: Vec<Page>) {
        if self.back.is_none() {
            return;
        }
        self.bytes.fetch_add(heap_bytes(&pages), Ordering::Relaxed);
        self.held.push(pages);
        if self.held.len() >= GROUP {
            self.send();
        }
    }

    fn send(&mut self) {
        let held = std::mem::take(&mut self.held);
        if let Some(back) = &self.back {
            if let Err(returned) = back.send(held) {
                // The producer has ended: free them here, and what comes
                // after them.
                self.forget(&returned.0);
                self.back = None;
            }
        }
    }

    fn forget(&self, groups: &[Vec<Page>]) {
        let bytes: usize = groups.iter().map(|g| heap_bytes(g)).sum();
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for Spent {
    fn drop(&mut self) {
        if !self.held.is_empty() {
            self.send();
        }
    }
}

impl SpentReturn {
    /// Frees what has come back so far.
    pub(crate) fn free(&self) {
        for group in self.rx.try_iter() {
            let bytes: usize = group.iter().map(|g| heap_bytes(g)).sum();
            let n = group.len();
            drop(group);
            self.bytes.fetch_sub(bytes, Ordering::Relaxed);
            self.freed.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Bytes given back and not yet freed.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::dataset::Dataset;
    use crate::loader::budget::tests::write_rows;
    use crate::loader::{Loader, LoaderOptions};

    /// Drains epoch 0, handing every batch back; its batch count and the
    /// batches its producer freed.
    fn drain(loader: &Loader) -> (usize, usize) {
        let mut epoch = loader.epoch(0).unwrap();
        let mut spent = epoch.spent();
        let mut n = 0;
        for batch in epoch.by_ref() {
            spent.give(batch.unwrap().pages);
            n += 1;
        }
        drop(spent);
        (n, epoch.freed_by_producer())
    }

    /// A whole-file epoch's producer frees the batches handed back but
    /// those it can no longer see: the ones still queued for the consumer
    /// (four chunks), in its hands and on their way when it ends.
    #[test]
    fn a_whole_file_epochs_spent_batches_are_freed_by_its_producer() {
        let path = write_rows("spent-whole", 20_000);
        let ds = Arc::new(Dataset::open(&path).unwrap());
        let loader = Loader::new(ds, LoaderOptions::default().with_batch_rows(10)).unwrap();
        assert!(
            loader.buffer_choice().whole_file,
            "a small file is one buffer"
        );
        let (n, freed) = drain(&loader);
        assert_eq!(n, 2_000);
        assert!(freed >= n - 8 * super::GROUP, "{freed} of {n} freed");
        std::fs::remove_file(&path).unwrap();
    }

    /// A buffer-at-a-time epoch takes nothing back (see the module docs).
    #[test]
    fn a_buffered_epoch_frees_its_batches_in_place() {
        let path = write_rows("spent-buffers", 20_000);
        let ds = Arc::new(Dataset::open(&path).unwrap());
        let options = LoaderOptions::default().with_batch_rows(10).with_memory(0);
        let loader = Loader::new(ds, options).unwrap();
        assert!(!loader.buffer_choice().whole_file);
        assert_eq!(drain(&loader), (2_000, 0));
        std::fs::remove_file(&path).unwrap();
    }
}

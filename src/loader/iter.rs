//! The consumer's side of an epoch: an iterator over mini-batches made
//! on the consumer's thread (single buffering) or received from a
//! producer thread through a bounded channel (double buffering), with the
//! epoch's costs and trace.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::epoch::Produce;
use super::{MiniBatch, Plan, Strategy, Trace};
use crate::error::Result;

/// Most batches handed from the producer thread to the consumer at once.
const CHUNK_BATCHES: usize = 16;

/// What an epoch cost, from the consumer's side.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EpochStats {
    /// Mini-batches yielded (replays included).
    pub batches: usize,
    /// Rows yielded by the epoch's stream (every row once).
    pub rows: u64,
    /// Rows yielded by MRS's replay batches.
    pub replay_rows: u64,
    /// Seconds the consumer waited for the next mini-batch (with single
    /// buffering: the whole time spent producing it).
    pub wait_seconds: f64,
    /// Most heap bytes the loader held at once for this epoch: its
    /// buffered pages or rows (a TOC page with its decode tree), the
    /// mini-batches made and not yet taken (in the channel, and the one
    /// the consumer holds). Pages of the resident cache are not counted
    /// here but in [`resident_bytes`](Self::resident_bytes): the loader
    /// holds the two together. Pages validated by the read-ahead thread
    /// and not yet taken are counted (as the producer last saw them); the
    /// raw bytes of the block being read are not.
    pub buffer_peak_bytes: usize,
    /// Heap bytes of the pages the loader keeps resident across epochs,
    /// at the end of the epoch (see
    /// [`LoaderOptions::memory`](super::LoaderOptions::memory)).
    pub resident_bytes: usize,
    /// Mini-batches the channel between producer and consumer holds at
    /// most (0 without double buffering).
    pub channel_batches: usize,
    /// Mini-batches yielded in their TOC form: every page a TOC batch on
    /// its decode tree (TOC paper section 4), the kernels' cheaper form
    /// for it (`kernels/form.rs`).
    pub tree_batches: usize,
    /// Mini-batches yielded as rows: CSR, pair codes
    /// ([`Batch::Coded`](crate::formats::Batch::Coded)), a flat TOC batch,
    /// or another format.
    pub row_batches: usize,
}

/// One epoch's mini-batches, in order: an iterator of
/// `Result<MiniBatch>` that ends after the first error.
///
/// It is not an [`ExactSizeIterator`]: the number of mini-batches is
/// known only as the epoch runs. In page mode a mini-batch is whole pages
/// holding at least `batch_rows` rows, so the count depends on the rows of
/// the pages in the epoch's random order; MRS adds replay batches drawn at
/// random; an error ends the epoch early. [`EpochStats::batches`] counts
/// them afterwards.
pub struct Epoch {
    source: EpochSource,
    stats: EpochStats,
    trace: Option<Trace>,
    /// Bytes of the batch last handed to the consumer (still held by it).
    last_bytes: usize,
    resident: Option<Arc<super::resident::Resident>>,
}

enum EpochSource {
    Inline {
        producer: Box<dyn Produce>,
        peak: usize,
    },
    Thread {
        rx: Option<Receiver<Vec<Result<MiniBatch>>>>,
        /// Batches of the last chunk received, not yet yielded.
        local: std::collections::VecDeque<Result<MiniBatch>>,
        handle: Option<JoinHandle<()>>,
        peak: Arc<AtomicUsize>,
        /// Bytes of the batches sent and not yet replaced by the
        /// consumer's next call.
        queued: Arc<AtomicUsize>,
    },
}

impl std::fmt::Debug for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epoch").field("stats", &self.stats).finish()
    }
}

impl Epoch {
    pub(crate) fn new(
        mut producer: Box<dyn Produce>,
        plan: &Plan,
        path: &Path,
        resident: Option<Arc<super::resident::Resident>>,
    ) -> Result<Epoch> {
        let trace = plan.trace.then(Trace::default);
        if !plan.double_buffer {
            return Ok(Epoch {
                source: EpochSource::Inline { producer, peak: 0 },
                stats: EpochStats::default(),
                trace,
                last_bytes: 0,
                resident,
            });
        }
        // Room for about one buffer of mini-batches: the producer fills
        // the next buffer while the consumer drains this one.
        let per_buffer = match plan.strategy {
            Strategy::CorgiPile | Strategy::EpochShuffle => {
                let blocks = plan.block_first_row.len().max(1) as u64;
                let rows = plan.buffer_blocks as u64 * plan.n_rows / blocks;
                (rows / plan.batch_rows as u64) as usize
            }
            _ => 0,
        };
        // The row pipeline hands a whole buffer over at once (its batches
        // are complete only when the buffer is decoded): the channel holds
        // one, so the next is decoded while this one trains.
        // A whole-file buffer is made once and then cut into batches as
        // they are taken: a few chunks ahead keep the trainer fed.
        let capacity = if plan.row_pipeline() && plan.whole {
            4 * CHUNK_BATCHES
        } else if plan.row_pipeline() {
            per_buffer.max(2) + CHUNK_BATCHES
        } else {
            per_buffer.clamp(2, 64)
        };
        // Batches travel in chunks of what the producer has ready (up to
        // CHUNK_BATCHES): one hand-over per batch cost 10 to 15% of a
        // resident page-mode epoch in thread wake-ups (flights3m profile).
        let (tx, rx) = sync_channel(capacity.div_ceil(CHUNK_BATCHES));
        let peak = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let (shared, in_channel) = (Arc::clone(&peak), Arc::clone(&queued));
        let handle = std::thread::Builder::new()
            .name("tocpile-loader".into())
            .spawn(move || {
                let mut most = 0;
                loop {
                    let chunk = producer.next_chunk(CHUNK_BATCHES);
                    if chunk.is_empty() {
                        break;
                    }
                    let bytes: usize = chunk
                        .iter()
                        .map(|item| item.as_ref().map_or(0, |b| b.owned_bytes))
                        .sum();
                    let queued = in_channel.fetch_add(bytes, Ordering::AcqRel) + bytes;
                    most = most
                        .max(producer.peak_bytes())
                        .max(producer.held_bytes() + queued);
                    shared.store(most, Ordering::Relaxed);
                    if tx.send(chunk).is_err() {
                        break;
                    }
                }
                shared.store(most.max(producer.peak_bytes()), Ordering::Relaxed);
            })
            .map_err(|e| crate::error::Error::spawn_failed(path, "loader", e))?;
        Ok(Epoch {
            source: EpochSource::Thread {
                rx: Some(rx),
                local: std::collections::VecDeque::new(),
                handle: Some(handle),
                peak,
                queued,
            },
            stats: EpochStats {
                channel_batches: capacity,
                ..EpochStats::default()
            },
            trace,
            last_bytes: 0,
            resident,
        })
    }

    /// True when the epoch runs on the consumer's thread (no double
    /// buffering): no loader thread is busy, so the trainer may use
    /// another core.
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.source, EpochSource::Inline { .. })
    }

    /// What the epoch has cost so far (complete once the iterator ends).
    pub fn stats(&self) -> EpochStats {
        let mut stats = self.stats.clone();
        stats.buffer_peak_bytes = match &self.source {
            EpochSource::Inline { producer, peak } => (*peak).max(producer.peak_bytes()),
            EpochSource::Thread { peak, .. } => peak.load(Ordering::Relaxed),
        };
        stats.resident_bytes = self.resident.as_ref().map_or(0, |r| r.bytes());
        stats
    }

    /// The rows visited so far, in order (with
    /// [`LoaderOptions::trace`](super::LoaderOptions::trace)).
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_ref()
    }
}

impl Iterator for Epoch {
    type Item = Result<MiniBatch>;

    fn next(&mut self) -> Option<Result<MiniBatch>> {
        let start = Instant::now();
        let last = std::mem::take(&mut self.last_bytes);
        let item = match &mut self.source {
            EpochSource::Inline { producer, peak } => {
                let item = producer.next_batch();
                let bytes = match &item {
                    Some(Ok(b)) => b.owned_bytes,
                    _ => 0,
                };
                *peak = (*peak).max(producer.held_bytes() + bytes);
                item
            }
            EpochSource::Thread {
                rx,
                local,
                handle,
                queued,
                ..
            } => {
                // The consumer has let go of the previous batch.
                queued.fetch_sub(last, Ordering::AcqRel);
                if local.is_empty() {
                    if let Some(chunk) = rx.as_ref().and_then(|rx| rx.recv().ok()) {
                        local.extend(chunk);
                    }
                }
                let item = local.pop_front();
                if !matches!(item, Some(Ok(_))) {
                    *rx = None;
                }
                if item.is_none() {
                    // The producer is done. If it panicked (a bug), do not
                    // pass a truncated epoch off as a complete one.
                    if let Some(Err(panic)) = handle.take().map(JoinHandle::join) {
                        std::panic::resume_unwind(panic);
                    }
                }
                item
            }
        };
        self.stats.wait_seconds += start.elapsed().as_secs_f64();
        if let Some(Ok(batch)) = &item {
            self.last_bytes = batch.owned_bytes;
            self.stats.batches += 1;
            match batch.pages.iter().all(|p| p.batch().on_tree()) {
                true => self.stats.tree_batches += 1,
                false => self.stats.row_batches += 1,
            }
            let rows = batch.n_rows() as u64;
            if batch.replay {
                self.stats.replay_rows += rows;
            } else {
                self.stats.rows += rows;
            }
            if let (Some(trace), Some(visited)) = (&mut self.trace, &batch.rows) {
                trace.record(visited, batch.replay);
            }
        }
        item
    }
}

impl Drop for Epoch {
    fn drop(&mut self) {
        if let EpochSource::Thread { rx, handle, .. } = &mut self.source {
            // Closing the channel unblocks a producer waiting to send.
            *rx = None;
            if let Some(handle) = handle.take() {
                let _ = handle.join();
            }
        }
    }
}

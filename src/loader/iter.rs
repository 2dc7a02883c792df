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
    /// Most bytes of rows or pages the producer's buffers held at once.
    pub buffer_peak_bytes: usize,
    /// Mini-batches the channel between producer and consumer holds at
    /// most (0 without double buffering).
    pub channel_batches: usize,
}

/// One epoch's mini-batches, in order: an iterator of
/// `Result<MiniBatch>` that ends after the first error.
pub struct Epoch {
    source: EpochSource,
    stats: EpochStats,
    trace: Option<Trace>,
}

enum EpochSource {
    Inline(Box<dyn Produce>),
    Thread {
        rx: Option<Receiver<Result<MiniBatch>>>,
        handle: Option<JoinHandle<()>>,
        peak: Arc<AtomicUsize>,
    },
}

impl std::fmt::Debug for Epoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Epoch").field("stats", &self.stats).finish()
    }
}

impl Epoch {
    pub(crate) fn new(mut producer: Box<dyn Produce>, plan: &Plan, path: &Path) -> Result<Epoch> {
        let trace = plan.trace.then(Trace::default);
        if !plan.double_buffer {
            return Ok(Epoch {
                source: EpochSource::Inline(producer),
                stats: EpochStats::default(),
                trace,
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
        let capacity = per_buffer.clamp(2, 64);
        let (tx, rx) = sync_channel(capacity);
        let peak = Arc::new(AtomicUsize::new(0));
        let shared = Arc::clone(&peak);
        let handle = std::thread::Builder::new()
            .name("tocpile-loader".into())
            .spawn(move || {
                while let Some(item) = producer.next_batch() {
                    shared.store(producer.peak_bytes(), Ordering::Relaxed);
                    if tx.send(item).is_err() {
                        break;
                    }
                }
                shared.store(producer.peak_bytes(), Ordering::Relaxed);
            })
            .map_err(|e| crate::error::Error::io(path, e))?;
        Ok(Epoch {
            source: EpochSource::Thread {
                rx: Some(rx),
                handle: Some(handle),
                peak,
            },
            stats: EpochStats {
                channel_batches: capacity,
                ..EpochStats::default()
            },
            trace,
        })
    }

    /// What the epoch has cost so far (complete once the iterator ends).
    pub fn stats(&self) -> EpochStats {
        let mut stats = self.stats.clone();
        stats.buffer_peak_bytes = match &self.source {
            EpochSource::Inline(p) => p.peak_bytes(),
            EpochSource::Thread { peak, .. } => peak.load(Ordering::Relaxed),
        };
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
        let item = match &mut self.source {
            EpochSource::Inline(p) => p.next_batch(),
            EpochSource::Thread { rx, handle, .. } => {
                let item = rx.as_ref()?.recv().ok();
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
            self.stats.batches += 1;
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

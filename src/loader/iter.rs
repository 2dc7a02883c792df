//! The consumer's side of an epoch: an iterator over mini-batches made
//! on the consumer's thread (single buffering) or received from a
//! producer thread through a bounded channel (double buffering), with the
//! epoch's costs and trace; its length when the strategy fixes it
//! ([`ExactEpoch`]), and `for batch in &loader` ([`Loader`]'s
//! `IntoIterator`).

use std::iter::FusedIterator;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::epoch::Produce;
use super::spent::{self, Spent, SpentReturn};
use super::{Loader, MiniBatch, Mode, Plan, Strategy, Trace};
use crate::dataset::Source;
use crate::error::{Error, Result};

/// Most batches handed from the producer thread to the consumer at once.
const CHUNK_BATCHES: usize = 16;
/// The same for a whole-file epoch in row mode.
const WHOLE_CHUNK_BATCHES: usize = 64;

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
/// When the strategy fixes the number of mini-batches, the epoch knows
/// it from the start ([`Loader::epoch_batches`]): its `size_hint` is
/// exact, [`len_known`](Self::len_known) says how many are left, and
/// [`exact`](Self::exact) turns it into an [`ExactEpoch`], an
/// [`ExactSizeIterator`]. That is every strategy but MRS in row mode
/// ([`Mode::Exact`]): every mini-batch holds `batch_rows` rows but the
/// epoch's last, so an epoch yields its rows over `batch_rows`, rounded
/// up. In page mode a mini-batch is whole pages holding at least
/// `batch_rows` rows, so the count depends on the rows of the pages in
/// the epoch's random order, and MRS adds replay batches drawn at random:
/// those epochs know their count only at the end
/// ([`EpochStats::batches`]), and their `size_hint` is `(0, None)`.
pub struct Epoch {
    source: EpochSource,
    stats: EpochStats,
    trace: Option<Trace>,
    /// Bytes of the batch last handed to the consumer (still held by it).
    last_bytes: usize,
    resident: Option<Arc<super::resident::Resident>>,
    /// Mini-batches still to come, when the strategy fixes their count.
    remaining: Option<usize>,
}

enum EpochSource {
    /// An epoch that could not start (`for batch in &loader`): yields
    /// the error, once.
    Failed(Option<Error>),
    Inline {
        producer: Box<dyn Produce>,
        peak: usize,
    },
    Thread {
        /// Where the consumer's spent pages go to be freed on the
        /// producer's thread (whole-file epochs; see [`Epoch::spent`]),
        /// and how many it has freed.
        back: Option<(Spent, Arc<AtomicUsize>)>,
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
                remaining: None,
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
        let whole_rows = plan.row_pipeline() && plan.whole;
        // Batches travel in chunks of what the producer has ready (up to
        // CHUNK_BATCHES): one hand-over per batch cost 10 to 15% of a
        // resident page-mode epoch in thread wake-ups (flights3m profile).
        // A whole-file epoch always has its next batches ready: chunks of
        // 64 halved the trainer's wait on flights3m (8 ms an epoch rather
        // than 14; history section 47).
        let chunk_batches = if whole_rows {
            WHOLE_CHUNK_BATCHES
        } else {
            CHUNK_BATCHES
        };
        let capacity = if whole_rows {
            4 * chunk_batches
        } else if plan.row_pipeline() {
            per_buffer.max(2) + CHUNK_BATCHES
        } else {
            per_buffer.clamp(2, 64)
        };
        let (tx, rx) = sync_channel(capacity.div_ceil(chunk_batches));
        // Spent batches of a whole-file epoch come back to be freed on
        // this thread (`spent.rs` says why).
        let (back, spent_rx) = if whole_rows {
            let (spent, back, freed) = spent::way_back();
            (Some((spent, freed)), Some(back))
        } else {
            (None, None)
        };
        let peak = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let (shared, in_channel) = (Arc::clone(&peak), Arc::clone(&queued));
        let handle = std::thread::Builder::new()
            .name("tocpile-loader".into())
            .spawn(move || {
                let mut most = 0;
                loop {
                    if let Some(spent) = &spent_rx {
                        spent.free();
                    }
                    let chunk = producer.next_chunk(chunk_batches);
                    if chunk.is_empty() {
                        break;
                    }
                    let bytes: usize = chunk
                        .iter()
                        .map(|item| item.as_ref().map_or(0, |b| b.owned_bytes))
                        .sum();
                    let queued = in_channel.fetch_add(bytes, Ordering::AcqRel) + bytes;
                    let returning = spent_rx.as_ref().map_or(0, SpentReturn::bytes);
                    most = most
                        .max(producer.peak_bytes())
                        .max(producer.held_bytes() + queued + returning);
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
                back,
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
            remaining: None,
        })
    }

    /// The epoch that yields `error` and ends (an epoch that could not
    /// start, when starting it cannot return the error).
    fn failed(error: Error) -> Epoch {
        Epoch {
            source: EpochSource::Failed(Some(error)),
            stats: EpochStats::default(),
            trace: None,
            last_bytes: 0,
            resident: None,
            remaining: None,
        }
    }

    /// Sets the number of mini-batches the epoch will yield, when its
    /// strategy fixes it ([`Loader::epoch_batches`]).
    pub(crate) fn with_batches(mut self, batches: Option<usize>) -> Epoch {
        self.remaining = batches;
        self
    }

    /// Mini-batches still to come, when the strategy fixes their number
    /// (see [`Epoch`]); `None` when it is known only at the end. An error
    /// ends the epoch early: it is the last item, whatever this said.
    pub fn len_known(&self) -> Option<usize> {
        self.remaining
    }

    /// This epoch as an [`ExactSizeIterator`] when its number of
    /// mini-batches is known ([`len_known`](Self::len_known)), else the
    /// epoch itself back (page mode, MRS).
    ///
    /// # Errors
    /// `Err(self)` when the epoch does not know its length.
    // The error is the epoch handed back, as `Rc::try_unwrap` does.
    #[allow(clippy::result_large_err)]
    pub fn exact(self) -> std::result::Result<ExactEpoch, Epoch> {
        match self.remaining {
            Some(_) => Ok(ExactEpoch(self)),
            None => Err(self),
        }
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
            EpochSource::Failed(_) => 0,
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
            EpochSource::Failed(error) => error.take().map(Err),
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
        self.remaining = match (&item, self.remaining) {
            (Some(Ok(_)), Some(n)) => Some(n.saturating_sub(1)),
            // An error or the end: nothing more comes.
            (_, Some(_)) => Some(0),
            (_, None) => None,
        };
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

    /// Exact when the strategy fixes the number of mini-batches (see
    /// [`Epoch`]), else `(0, None)`.
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.remaining {
            Some(n) => (n, Some(n)),
            None => (0, None),
        }
    }
}

// After the end or an error, every call returns `None`: the producers
// stop for good at their first error (`fused_step`) and stay ended.
impl FusedIterator for Epoch {}

/// An [`Epoch`] whose number of mini-batches is known from the start
/// ([`Epoch::exact`]): an [`ExactSizeIterator`], for a progress bar's
/// total or a vector's capacity.
///
/// ```
/// # use std::sync::Arc;
/// # use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
/// # use tocpile::loader::{Loader, LoaderOptions};
/// # use tocpile::SparseBatch;
/// # let path = std::env::temp_dir().join(format!("tocpile-exact-doc-{}.toc", std::process::id()));
/// # let rows: Vec<[f64; 2]> = (0..1000).map(|i| [1.0, i as f64]).collect();
/// # let labels: Vec<f64> = (0..1000).map(|i| (i % 2) as f64).collect();
/// # let mut writer = DatasetWriter::create(&path, 2, WriterOptions::default())?;
/// # writer.push(&SparseBatch::from_dense_rows(2, &rows)?, &labels)?;
/// # writer.finish()?;
/// // 1,000 rows in 300-row mini-batches (CorgiPile, rows shuffled).
/// let loader = Loader::open(&path, LoaderOptions::default().with_batch_rows(300))?;
/// let epoch = loader.epoch(0)?.exact().expect("row-shuffled epochs know their length");
/// assert_eq!(epoch.len(), 4); // 1000 / 300, rounded up
/// let sizes: Vec<usize> = epoch.map(|b| b.map(|b| b.n_rows())).collect::<Result<_, _>>()?;
/// assert_eq!(sizes, [300, 300, 300, 100]);
/// # drop(loader);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), tocpile::Error>(())
/// ```
///
/// The length counts the mini-batches still to come if nothing fails: a
/// read or decode error is the last item, and ends the epoch early.
#[derive(Debug)]
pub struct ExactEpoch(Epoch);

impl ExactEpoch {
    /// What the epoch has cost so far ([`Epoch::stats`]).
    pub fn stats(&self) -> EpochStats {
        self.0.stats()
    }

    /// The rows visited so far ([`Epoch::trace`]).
    pub fn trace(&self) -> Option<&Trace> {
        self.0.trace()
    }

    /// The epoch.
    pub fn into_inner(self) -> Epoch {
        self.0
    }
}

impl Iterator for ExactEpoch {
    type Item = Result<MiniBatch>;

    fn next(&mut self) -> Option<Result<MiniBatch>> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for ExactEpoch {}

impl FusedIterator for ExactEpoch {}

impl<S: Source + 'static> Loader<S> {
    /// Rows of `epoch`'s stream on this worker: the rows of the blocks
    /// it reads ([`block_order`](Self::block_order); for Shuffle Once,
    /// blocks of the shuffled copy). Every strategy yields each of them
    /// once per epoch; MRS's replay batches come on top.
    pub fn epoch_rows(&self, epoch: u64) -> u64 {
        let first = &self.plan.block_first_row;
        let rows_of = |b: usize| first.get(b + 1).copied().unwrap_or(self.plan.n_rows) - first[b];
        self.block_order(epoch).into_iter().map(rows_of).sum()
    }

    /// The number of mini-batches `epoch` yields on this worker, when the
    /// strategy fixes it: in row mode ([`Mode::Exact`]) every strategy
    /// but MRS makes mini-batches of `batch_rows` rows but the epoch's
    /// last, so [`epoch_rows`](Self::epoch_rows) over `batch_rows`,
    /// rounded up. `None` in page mode (whole pages per mini-batch) and
    /// for MRS (random replays). What [`Epoch::len_known`] starts from.
    pub fn epoch_batches(&self, epoch: u64) -> Option<usize> {
        let fixed = self.plan.mode == Mode::Exact && self.plan.strategy != Strategy::Mrs;
        fixed.then(|| {
            let batches = self.epoch_rows(epoch).div_ceil(self.plan.batch_rows as u64);
            usize::try_from(batches).unwrap_or(usize::MAX)
        })
    }

    /// The epoch `for batch in &loader` iterates next: 0 for a new
    /// loader, one more after each such loop.
    pub fn next_epoch(&self) -> u64 {
        self.next_epoch.load(Ordering::Relaxed)
    }

    /// Sets the epoch `for batch in &loader` iterates next (to resume a
    /// run at an epoch). [`epoch`](Self::epoch) is not affected.
    pub fn set_next_epoch(&self, epoch: u64) {
        self.next_epoch.store(epoch, Ordering::Relaxed);
    }
}

/// `for batch in &loader`: the mini-batches of the loader's next epoch
/// ([`Loader::next_epoch`]: 0 the first time, then 1, 2, ...), as a
/// `torch.utils.data.DataLoader` reshuffles on each pass, so that a loop
/// of loops trains on a new order every epoch:
///
/// ```
/// # use tocpile::dataset::{DatasetWriter, WriterOptions};
/// # use tocpile::loader::{Loader, LoaderOptions};
/// # use tocpile::SparseBatch;
/// # let path = std::env::temp_dir().join(format!("tocpile-for-doc-{}.toc", std::process::id()));
/// # let rows: Vec<[f64; 2]> = (0..1000).map(|i| [1.0, i as f64]).collect();
/// # let labels: Vec<f64> = (0..1000).map(|i| (i % 2) as f64).collect();
/// # let mut writer = DatasetWriter::create(&path, 2, WriterOptions::default().with_block_bytes(1024))?;
/// # writer.push(&SparseBatch::from_dense_rows(2, &rows)?, &labels)?;
/// # writer.finish()?;
/// let loader = Loader::open(&path, LoaderOptions::default())?;
/// for _ in 0..3 {
///     let mut rows = 0;
///     for batch in &loader {
///         rows += batch?.n_rows(); // pages, ready for Model::gradient
///     }
///     assert_eq!(rows, 1000); // every row once per epoch
/// }
/// assert_eq!(loader.next_epoch(), 3); // epochs 0, 1 and 2 were visited
/// # drop(loader);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), tocpile::Error>(())
/// ```
///
/// An epoch that cannot start (its producer thread) yields that error as
/// its only item. [`Loader::epoch`] starts any epoch explicitly, leaving
/// the count alone (the trainer's way).
impl<S: Source + 'static> IntoIterator for &Loader<S> {
    type Item = Result<MiniBatch>;
    type IntoIter = Epoch;

    fn into_iter(self) -> Epoch {
        let epoch = self.next_epoch.fetch_add(1, Ordering::Relaxed);
        self.epoch(epoch).unwrap_or_else(Epoch::failed)
    }
}

impl Epoch {
    /// Where the consumer's spent pages go: back to the producer's thread
    /// for a whole-file epoch run on one, else nowhere (freed in place).
    pub(crate) fn spent(&self) -> Spent {
        match &self.source {
            EpochSource::Thread {
                back: Some((back, _)),
                ..
            } => back.another(),
            _ => spent::in_place(),
        }
    }

    /// Mini-batches freed on the producer's thread so far (see
    /// [`spent`](Self::spent)).
    #[cfg(test)]
    pub(crate) fn freed_by_producer(&self) -> usize {
        match &self.source {
            EpochSource::Thread {
                back: Some((_, freed)),
                ..
            } => freed.load(Ordering::Relaxed),
            _ => 0,
        }
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

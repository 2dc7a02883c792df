//! The CorgiPile loader (Xu et al., "CorgiPile: SGD without full data
//! shuffle", sections 4 to 6) over a [dataset file](crate::dataset),
//! yielding encoded mini-batches, plus every strategy the paper compares
//! against, behind one interface.
//!
//! | [`Strategy`] | each epoch |
//! |---|---|
//! | `CorgiPile` | a random permutation of the blocks; a buffer of `n` blocks at a time, its tuples shuffled, then cut into mini-batches (Algorithm 1) |
//! | `BlockOnly` | CorgiPile without the tuple shuffle (paper 7.4.4) |
//! | `NoShuffle` | blocks and tuples in file order |
//! | `ShuffleOnce` | No Shuffle over a copy of the file shuffled once, up front ([`shuffle_file`]) |
//! | `EpochShuffle` | a full shuffle every epoch (CorgiPile with the whole dataset as buffer) |
//! | `SlidingWindow` | tf.data's shuffle: a window of tuples, each incoming tuple replaces a random one, which is emitted (paper 3.3) |
//! | `Mrs` | multiplexed reservoir sampling (paper 3.4): tuples dropped by reservoir sampling stream to SGD, and after each such mini-batch one mini-batch loops over the reservoir (marked [`MiniBatch::replay`]) |
//!
//! **Units.** TOC assumes batches encoded once; CorgiPile reshuffles tuples
//! every epoch. [`Mode::Exact`] (the default, through [`Mode::Auto`])
//! shuffles rows as the paper does (Algorithm 1, the same law and, for a
//! seed, the same order as before rows were kept as codes): each
//! buffer's pages are decoded from their compressed bytes, a permutation
//! of its rows is drawn, and each mini-batch gathers its rows. Pages
//! coded against their segments' shared dictionaries are decoded only as
//! far as their codes (`codec/code_rows.rs`): a buffer keeps each row as
//! its codes into the resident dictionaries, or written out as pair
//! codes (indices into one table of the file's distinct column-value
//! pairs), a fraction of the decoded values; files without dictionaries
//! keep decoded values. The form is chosen from a sample of the file
//! (`sample.rs`). A mini-batch of code rows becomes a TOC batch on the
//! compact tree of the codes it uses (the TOC paper's section 4 kernels,
//! work bounded by the batch: `codec/code_batch.rs`) where that tree
//! costs less work than the rows, else rows; pair codes become
//! [`Batch::Coded`](crate::formats::Batch::Coded) rows against the shared
//! table; values become one CSR page ([`LoaderOptions::format`] asks for
//! another format). No allocation or handle per row (`rows.rs`,
//! `arena.rs`, `values.rs`).
//!
//! **The whole file.** With [`Buffer::Auto`] (the default), when the
//! buffer form of every block fits the memory budget the buffer is the
//! whole file, made by the first epoch and kept: a full shuffle every
//! epoch at no I/O after the first, each row decoded once (this departs
//! from CorgiPile's fixed buffer share, where the paper's share exists to
//! bound memory; the order is the paper's with a buffer of 1.0).
//! Otherwise a tenth of the file (at least 4 blocks). The automatic
//! budget lets a whole-file buffer take three quarters of the memory
//! available rather than half, since nothing streams beside it
//! (`budget::WHOLE_FILE_SHARE`).
//!
//! [`Mode::Page`] (retired from the command line's help; kept for
//! comparisons) shuffles whole encoded pages and makes a mini-batch of
//! the next pages holding `batch_rows` rows, with no re-encoding; it is as
//! good as shuffling rows only when a page's rows are already as mixed as
//! random ones, and slower than exact mode on every file measured.
//!
//! **Memory.** What stays in memory across epochs is the whole-file
//! buffer when it fits, else each block's bytes as in the file, checked
//! once, not decode trees (5 to 27 times larger): see
//! [`LoaderOptions::memory`].
//!
//! **Engineering.** With double buffering (the default, paper 6.3) a
//! read-ahead thread reads and validates blocks (in groups of small
//! blocks, one hand-over each) and a producer thread fills and shuffles
//! the next buffer while the consumer drains the current one, through a
//! bounded channel. One seed and the epoch number fix every permutation,
//! whatever the thread count. Worker `i` of `w` takes the `i`-th of `w`
//! contiguous slices of the epoch's block order (paper 5.1) with its own
//! buffer, so the workers visit every row once per epoch between them.
//! Every strategy visits every row exactly once per epoch (MRS's replay
//! batches aside); partial pages and blocks are kept, and the last
//! mini-batch of an epoch may be short.
//!
//! ```
//! use std::sync::Arc;
//! use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
//! use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
//! use tocpile::SparseBatch;
//!
//! // 1,000 rows in 50-row pages, blocks of about 1 KiB.
//! let path = std::env::temp_dir().join(format!("tocpile-loader-doc-{}.toc", std::process::id()));
//! let rows: Vec<[f64; 2]> = (0..1000).map(|i| [1.0, i as f64]).collect();
//! let labels: Vec<f64> = (0..1000).map(|i| (i % 2) as f64).collect();
//! let layout = WriterOptions::default().with_page_rows(50).with_block_bytes(1024);
//! let mut writer = DatasetWriter::create(&path, 2, layout)?;
//! writer.push(&SparseBatch::from_dense_rows(2, &rows)?, &labels)?;
//! writer.finish()?;
//!
//! let options = LoaderOptions::default().with_strategy(Strategy::CorgiPile).with_trace(true);
//! let loader = Loader::new(Arc::new(Dataset::open(&path)?), options)?;
//! // Rows are shuffled (CorgiPile's tuple shuffle); the reason says what
//! // the file's label mix shows: alternating labels, pages well mixed.
//! assert_eq!(loader.mode(), Mode::Exact);
//! assert!(loader.mode_choice().reason.contains("pages as mixed as random rows"));
//! let mut epoch = loader.epoch(0)?;
//! let mut seen = 0;
//! for batch in epoch.by_ref() {
//!     let batch = batch?; // pages, ready for Model::gradient
//!     seen += batch.n_rows();
//! }
//! assert_eq!(seen, 1000); // every row once per epoch
//! let mut order = epoch.trace().expect("traced").rows().to_vec();
//! assert_ne!(order, (0..1000).collect::<Vec<u64>>()); // in a shuffled order,
//! order.sort();
//! assert_eq!(order, (0..1000).collect::<Vec<u64>>()); // a permutation of the rows
//! std::fs::remove_file(&path).ok();
//! # Ok::<(), tocpile::Error>(())
//! ```
//!
//! Departures from the paper: Sliding-Window and MRS read blocks in file
//! order and, at the end of an epoch, release what they hold in random
//! order (the paper leaves the end unspecified); MRS's two threads are
//! serialised into alternating batches so that runs are reproducible.

mod ahead;
mod arena;
mod budget;
mod epoch;
mod feed;
mod huge;
mod iter;
mod options;
mod plan;
mod resident;
mod rows;
mod sample;
mod shuffle;
mod spent;
mod step_shuffle;
mod trace;
mod units;
mod values;
mod working_set;

pub use budget::{MemoryBudget, MemorySource};
pub use iter::{Epoch, EpochStats, ExactEpoch};
use options::check_options;
#[doc(hidden)]
pub use options::RowForm;
pub use options::{Buffer, LoaderOptions, Mode, Strategy};
pub use shuffle::shuffle_file;
use shuffle::shuffle_file_mapped;

// Not part of the API (hidden): the budget's constants, the mode's
// explanation and the shuffle-quality trace, used by the command line,
// the Python package and the tests; may change in any release.
#[doc(hidden)]
pub use budget::{
    default_memory, memory_budget, AVAILABLE_SHARE_DIVISOR, DEFAULT_MEMORY, PROCESS_BYTES,
    WHOLE_FILE_SHARE,
};
#[doc(hidden)]
pub use options::{ModeChoice, AUTO_MIN_PAGES};
#[doc(hidden)]
pub use trace::{labels_in_file_order, ShuffleQuality, Trace};
#[doc(hidden)]
pub use working_set::memory_budget_for;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use epoch::{EpochState, Produce};
use plan::make_plan;
use resident::Resident;
use rows::{RowEpoch, RowsKind, WholeFile};

use crate::cleanup::{self, ScratchFile};
use crate::dataset::{Dataset, Source};
use crate::error::Result;
use crate::formats::FormatKind;
use crate::page::Page;
use crate::rng::Rng;

/// One mini-batch: in exact mode one page of its rows (CSR unless
/// [`LoaderOptions::format`] says otherwise), in page mode
/// the file's pages it is made of (shared with the loader's buffer, not
/// copied). [`Model::gradient`](crate::model::Model::gradient) takes the
/// pages as they are; gradients add up page by page.
#[derive(Debug, Clone)]
pub struct MiniBatch {
    /// The pages, validated (TOC decode trees built).
    pub pages: Vec<Page>,
    /// True for MRS's batches looping over the reservoir (rows already
    /// visited, or to be visited, by the epoch's stream).
    pub replay: bool,
    /// Global row numbers (file order) of the rows, page by page, when
    /// tracing.
    pub rows: Option<Vec<u64>>,
    /// Heap bytes this batch alone keeps alive: its pages unless the
    /// loader's resident cache holds them (an exact-mode batch's page is
    /// always its own), and its vectors.
    owned_bytes: usize,
}

impl MiniBatch {
    fn new(pages: Vec<Page>, replay: bool, rows: Option<Vec<u64>>, pages_bytes: usize) -> Self {
        let mut batch = MiniBatch {
            pages,
            replay,
            rows,
            owned_bytes: 0,
        };
        batch.owned_bytes = pages_bytes + batch.own_bytes();
        batch
    }

    /// Rows in the mini-batch.
    pub fn n_rows(&self) -> usize {
        self.pages.iter().map(Page::n_rows).sum()
    }

    /// Heap bytes the batch refers to: every page's
    /// ([`Page::heap_bytes`], for TOC the decode tree included), the page
    /// list and the trace. Pages shared with the loader's resident cache
    /// count here too; the loader's own figure
    /// ([`EpochStats::buffer_peak_bytes`]) counts them once.
    pub fn heap_bytes(&self) -> usize {
        self.own_bytes() + self.pages.iter().map(Page::heap_bytes).sum::<usize>()
    }

    /// Heap bytes of the batch's vectors, pages excluded.
    fn own_bytes(&self) -> usize {
        std::mem::size_of::<Page>() * self.pages.capacity()
            + self.rows.as_ref().map_or(0, |r| 8 * r.capacity())
    }
}

impl Plan {
    /// Whether epochs take the row pipeline (`rows.rs`).
    fn row_pipeline(&self) -> bool {
        self.mode == Mode::Exact
            && !matches!(self.strategy, Strategy::SlidingWindow | Strategy::Mrs)
    }
}

/// Resolved options: what an epoch's state machine reads.
#[derive(Debug)]
pub(crate) struct Plan {
    strategy: Strategy,
    mode: Mode,
    mode_choice: ModeChoice,
    batch_rows: usize,
    buffer_blocks: usize,
    window_units: usize,
    seed: u64,
    worker: usize,
    double_buffer: bool,
    read_ahead: usize,
    trace: bool,
    format: FormatKind,
    /// The format exact-mode batches were asked in
    /// ([`LoaderOptions::format`]); `None`: the row pipeline's own.
    format_asked: Option<FormatKind>,
    /// What the row pipeline's buffers keep of each row.
    rows: RowsKind,
    /// Whether the row pipeline's buffer is the whole file, made once.
    whole: bool,
    n_cols: usize,
    n_rows: u64,
    nnz: u64,
    block_first_row: Vec<u64>,
    /// Shuffle Once: the original row number of each row of the copy.
    row_origin: Option<Vec<u64>>,
}

/// Reads a dataset file epoch by epoch in the order a [`Strategy`] gives.
#[derive(Debug)]
pub struct Loader<S: Source + 'static = File> {
    dataset: Arc<Dataset<S>>,
    /// Shuffle Once's copy (read instead of `dataset`) and its path.
    shuffled: Option<(Arc<Dataset>, ScratchFile)>,
    options: LoaderOptions,
    plan: Arc<Plan>,
    warnings: Vec<String>,
    /// Pages kept across epochs (of the copy, for Shuffle Once).
    resident: Arc<Resident>,
    /// The whole-file buffer, once the first epoch made it (when the plan
    /// keeps one).
    whole: Option<WholeFile>,
    buffer_choice: BufferChoice,
    /// The epoch `for batch in &loader` iterates next (`iter.rs`).
    next_epoch: std::sync::atomic::AtomicU64,
}

/// Not part of the API (hidden): what a loader's buffer is and why, for
/// the command line's header; may change in any release.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub struct BufferChoice {
    /// The buffer is the whole file, decoded once and kept.
    pub whole_file: bool,
    /// Blocks a buffer holds (every block of the worker for the whole
    /// file).
    pub blocks: usize,
    /// What each row is kept as: "code rows" (codes into the segments'
    /// dictionaries, as the pages have them), "pair codes" (written out
    /// against their dictionaries' first layers) or "decoded values".
    pub rows: &'static str,
    /// Estimated heap bytes of the whole file in that form.
    pub whole_bytes: u64,
    /// The loader's memory budget.
    pub memory: usize,
}

impl Loader {
    /// Opens the dataset file at `path` and prepares a loader.
    ///
    /// # Errors
    /// As [`Dataset::open`] and [`Loader::new`].
    pub fn open(path: impl AsRef<Path>, options: LoaderOptions) -> Result<Loader> {
        Loader::new(Arc::new(Dataset::open(path)?), options)
    }
}

impl<S: Source + 'static> Loader<S> {
    /// A loader over an open dataset. For Shuffle Once this writes the
    /// shuffled copy first ([`shuffle_file`]).
    ///
    /// # Errors
    /// [`Error::BadArgument`](crate::Error::BadArgument) for options that cannot work (zero batch
    /// rows, a worker number not below `workers`, a buffer fraction
    /// outside (0, 1]); errors of writing Shuffle Once's copy.
    pub fn new(dataset: Arc<Dataset<S>>, options: LoaderOptions) -> Result<Self> {
        check_options(&options)?;
        let shuffled =
            match options.strategy {
                Strategy::ShuffleOnce => {
                    // Default beside the file: its file system held the data
                    // once, so it likely holds the copy; the temporary
                    // directory is often a small in-memory file system.
                    let dir = options.scratch_dir.clone().unwrap_or_else(|| {
                        match dataset.path().parent() {
                            Some(p) if p.as_os_str().is_empty() => Path::new(".").to_path_buf(),
                            Some(p) => p.to_path_buf(),
                            None => std::env::temp_dir(),
                        }
                    });
                    // Copies, buckets and their temporaries left by killed
                    // runs (their locks are free).
                    for prefix in [".", "..", "..."] {
                        cleanup::remove_stale(&dir, &format!("{prefix}tocpile-shuffled-"));
                    }
                    // Guarded before it exists: an interruption while it is
                    // written or read removes it, as does dropping the loader.
                    let pid = std::process::id();
                    let path = ScratchFile::claim(&dir, |n| {
                        format!(".tocpile-shuffled-{pid}-{}-{n}.toc", options.seed)
                    })?;
                    let (_, origin) = shuffle_file_mapped(&dataset, path.path(), options.seed)?;
                    let copy = Dataset::open(path.path())?;
                    Some((Arc::new(copy), path, origin))
                }
                _ => None,
            };
        // An automatic budget is probed here, not in `LoaderOptions::default`,
        // as the trainer's (`memory_budget_for`, a worker's share of it).
        let memory = options.memory.unwrap_or_else(|| {
            memory_budget_for(&dataset, &options).bytes / options.workers.max(1)
        });
        let (plan, warnings, shuffled) = match shuffled {
            Some((copy, path, origin)) => {
                let ((mut plan, choice), warnings) = make_plan(&copy, &options, memory);
                plan.row_origin = Some(origin);
                ((plan, choice), warnings, Some((copy, path)))
            }
            None => {
                let (plan, warnings) = make_plan(&dataset, &options, memory);
                (plan, warnings, None)
            }
        };
        let (plan, buffer_choice) = plan;
        let n_blocks = match &shuffled {
            Some((copy, _)) => copy.n_blocks(),
            None => dataset.n_blocks(),
        };
        // The whole-file buffer takes the budget: nothing else stays.
        let kept = if plan.whole { 0 } else { memory };
        // Code rows decode through the checked decoder: a block read
        // again need not be validated again (`Resident::pack`). A
        // whole-file buffer reads each block once.
        let check_once = !plan.whole && matches!(plan.rows, RowsKind::Codes(_));
        let resident = Arc::new(Resident::new(n_blocks, kept, check_once));
        let whole = plan.whole.then(WholeFile::default);
        Ok(Loader {
            dataset,
            shuffled,
            options,
            plan: Arc::new(plan),
            warnings,
            resident,
            whole,
            buffer_choice,
            next_epoch: Default::default(),
        })
    }

    /// The dataset read (for Shuffle Once, the original file).
    pub fn dataset(&self) -> &Arc<Dataset<S>> {
        &self.dataset
    }

    /// The options the loader was made with.
    pub fn options(&self) -> &LoaderOptions {
        &self.options
    }

    /// The mode in use ([`Mode::Auto`] resolved).
    pub fn mode(&self) -> Mode {
        self.plan.mode
    }

    /// The mode in use and why ([`Mode::choose`]).
    pub fn mode_choice(&self) -> &ModeChoice {
        &self.plan.mode_choice
    }

    /// Blocks the CorgiPile buffer holds (all of this worker's blocks for
    /// Epoch Shuffle).
    pub fn buffer_blocks(&self) -> usize {
        self.plan.buffer_blocks
    }

    /// Heap bytes of what the loader keeps in memory across epochs (see
    /// [`LoaderOptions::memory`]): resident blocks, or the whole-file
    /// buffer once the first epoch made it.
    pub fn resident_bytes(&self) -> usize {
        self.resident.bytes() + self.whole_bytes()
    }

    /// Heap bytes of the whole-file buffer, once made.
    fn whole_bytes(&self) -> usize {
        let whole = self
            .whole
            .as_ref()
            .and_then(|w| w.buffer.lock().ok()?.clone());
        whole.map_or(0, |b| b.heap_bytes())
    }

    /// Not part of the API (hidden): what the buffer is and why.
    #[doc(hidden)]
    pub fn buffer_choice(&self) -> &BufferChoice {
        &self.buffer_choice
    }

    /// Blocks whose pages are kept in memory across epochs.
    pub fn resident_blocks(&self) -> usize {
        self.resident.n_resident()
    }

    /// Settings that are likely to shuffle poorly, as sentences: a buffer
    /// of only a handful of blocks, or page-mode batches of a single page.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The blocks worker `options.worker` reads in `epoch`, in order.
    pub fn block_order(&self, epoch: u64) -> Vec<usize> {
        let n = match &self.shuffled {
            Some((copy, _)) => copy.n_blocks(),
            None => self.dataset.n_blocks(),
        };
        let order = match self.options.strategy {
            Strategy::CorgiPile | Strategy::BlockOnly | Strategy::EpochShuffle => {
                Rng::stream(self.options.seed, &[STREAM_BLOCKS, epoch]).permutation(n)
            }
            _ => (0..n).collect(),
        };
        let (i, w) = (self.options.worker, self.options.workers);
        order[i * n / w..(i + 1) * n / w].to_vec()
    }

    /// Starts epoch `epoch` (any number: epochs are independent).
    ///
    /// # Errors
    /// If the producer thread cannot be started. Read and decode errors
    /// arrive through the iterator.
    pub fn epoch(&self, epoch: u64) -> Result<Epoch> {
        let order = self.block_order(epoch);
        let producer = match &self.shuffled {
            Some((copy, _)) => self.producer(Arc::clone(copy), epoch, order)?,
            None => self.producer(Arc::clone(&self.dataset), epoch, order)?,
        };
        Epoch::new(
            producer,
            &self.plan,
            self.dataset.path(),
            Some(Arc::clone(&self.resident)),
        )
        .map(|e| e.with_batches(self.epoch_batches(epoch)))
    }

    /// The state machine of an epoch over `dataset` (the file, or Shuffle
    /// Once's copy): the row pipeline for row mode of the strategies that
    /// read whole buffers or runs of blocks, the unit-by-unit machine for
    /// page mode, Sliding-Window and MRS.
    fn producer<T: Source + 'static>(
        &self,
        dataset: Arc<Dataset<T>>,
        epoch: u64,
        order: Vec<usize>,
    ) -> Result<Box<dyn Produce>> {
        let (plan, resident) = (Arc::clone(&self.plan), Arc::clone(&self.resident));
        Ok(if plan.row_pipeline() {
            let whole = self.whole.clone();
            Box::new(RowEpoch::start(
                dataset,
                plan,
                (epoch, order),
                resident,
                whole,
            )?)
        } else {
            Box::new(EpochState::start(dataset, plan, epoch, order, resident)?)
        })
    }
}

const STREAM_BLOCKS: u64 = 1;

//! What a [`Loader`](super::Loader) is asked to do: the ordering
//! [`Strategy`], the [`Mode`] (what the buffer shuffles), the [`Buffer`]
//! size and the rest of [`LoaderOptions`], with their checks.

use std::path::PathBuf;

use super::budget::default_memory;
use crate::error::{Error, Result};
use crate::formats::FormatKind;

/// How tuples are ordered each epoch (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Block permutation, buffer of blocks, tuple shuffle in the buffer.
    CorgiPile,
    /// Block permutation only.
    BlockOnly,
    /// File order.
    NoShuffle,
    /// File order over a copy shuffled once.
    ShuffleOnce,
    /// A full shuffle each epoch.
    EpochShuffle,
    /// tf.data-style sliding window.
    SlidingWindow,
    /// Multiplexed reservoir sampling.
    Mrs,
}

impl Strategy {
    /// Every strategy, in the order of the paper's tables.
    pub const ALL: [Strategy; 7] = [
        Strategy::NoShuffle,
        Strategy::ShuffleOnce,
        Strategy::EpochShuffle,
        Strategy::SlidingWindow,
        Strategy::Mrs,
        Strategy::BlockOnly,
        Strategy::CorgiPile,
    ];

    /// The short name used on the command line ("corgipile", "none",
    /// "once", "epoch", "window", "mrs", "block").
    pub fn name(self) -> &'static str {
        match self {
            Strategy::CorgiPile => "corgipile",
            Strategy::BlockOnly => "block",
            Strategy::NoShuffle => "none",
            Strategy::ShuffleOnce => "once",
            Strategy::EpochShuffle => "epoch",
            Strategy::SlidingWindow => "window",
            Strategy::Mrs => "mrs",
        }
    }

    /// Looks a strategy up by its short name, ignoring case.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Self::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the buffer holds and shuffles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Decoded rows, shuffled one by one; each mini-batch is its rows
    /// gathered into one CSR page (or encoded in
    /// [`LoaderOptions::format`] when that is set).
    Exact,
    /// Whole encoded pages; no re-encoding.
    Page,
    /// Page mode when a mini-batch spans at least [`AUTO_MIN_PAGES`]
    /// pages of the file (so that it mixes rows of several blocks), exact
    /// mode otherwise. The default: page mode trains to the same accuracy
    /// at a fraction of the loading cost when pages are small (measured in
    /// `docs/RESULTS.md`), and exact mode is the safe choice when they are
    /// not.
    Auto,
}

/// Pages a mini-batch must span for [`Mode::Auto`] to choose page mode.
pub const AUTO_MIN_PAGES: usize = 4;

impl Mode {
    /// The mode a loader uses for mini-batches of `batch_rows` rows over a
    /// file of `page_rows`-row pages: [`Mode::Auto`] resolved (page mode
    /// when a mini-batch spans at least [`AUTO_MIN_PAGES`] pages), any
    /// other mode as it is. [`Loader::mode`](super::Loader::mode) is this for its file and
    /// options; callers that describe a run before making a loader ask
    /// here rather than repeat the rule.
    ///
    /// ```
    /// use tocpile::loader::Mode;
    ///
    /// assert_eq!(Mode::Auto.resolve(50, 250), Mode::Page);
    /// assert_eq!(Mode::Auto.resolve(250, 250), Mode::Exact);
    /// assert_eq!(Mode::Exact.resolve(50, 250), Mode::Exact);
    /// ```
    pub fn resolve(self, page_rows: usize, batch_rows: usize) -> Mode {
        match self {
            Mode::Auto if batch_rows / page_rows.max(1) >= AUTO_MIN_PAGES => Mode::Page,
            Mode::Auto => Mode::Exact,
            chosen => chosen,
        }
    }

    /// The mode's name on the command line: "exact", "page" or "auto".
    pub fn name(self) -> &'static str {
        match self {
            Mode::Exact => "exact",
            Mode::Page => "page",
            Mode::Auto => "auto",
        }
    }
}

/// The buffer size of CorgiPile, Sliding-Window and MRS.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Buffer {
    /// A share of the dataset (the paper's default is 0.1). For CorgiPile
    /// it is rounded up to whole blocks; for Sliding-Window and MRS it is
    /// that share of the worker's rows (pages in page mode).
    Fraction(f64),
    /// A number of blocks (for Sliding-Window and MRS: as many units as
    /// that many blocks hold on average).
    Blocks(usize),
}

/// Everything a [`Loader`](super::Loader) needs besides the file.
#[derive(Debug, Clone, PartialEq)]
pub struct LoaderOptions {
    /// The ordering strategy (default CorgiPile).
    pub strategy: Strategy,
    /// What the buffer shuffles (default [`Mode::Auto`]).
    pub mode: Mode,
    /// Rows per mini-batch (default 250).
    pub batch_rows: usize,
    /// Buffer size (default 10% of the dataset).
    pub buffer: Buffer,
    /// Seed of every permutation.
    pub seed: u64,
    /// This worker's number, below `workers`.
    pub worker: usize,
    /// Number of workers sharing each epoch's blocks (default 1).
    pub workers: usize,
    /// Produce on a separate thread while the consumer trains (default
    /// true). A page-mode epoch whose blocks are all resident runs on the
    /// consumer's thread whatever this says: there is nothing to overlap.
    pub double_buffer: bool,
    /// Groups of validated blocks the read-ahead threads may hold beyond
    /// the ones they are making (double buffering only; default 8: with
    /// one validating thread per core, 2 left each thread a single slot
    /// and a streamed No Shuffle epoch stalled in bursts, 0.36 to 0.61 s
    /// on shuffled flights3m against 0.29 to 0.40 s with 8). A group
    /// is consecutive blocks of the epoch's order holding at least 64 KiB
    /// of the file (one block when blocks are that large). CorgiPile and
    /// the epoch shuffle read at least one buffer of blocks ahead
    /// whatever this says, so the next buffer is validated while this
    /// one trains (CorgiPile paper 6.3).
    pub read_ahead: usize,
    /// Record each mini-batch's rows (see
    /// [`MiniBatch::rows`](super::MiniBatch::rows) and
    /// [`Epoch::trace`](super::Epoch::trace)).
    pub trace: bool,
    /// Format of exact-mode mini-batches. `None` (the default): CSR, the
    /// rows gathered straight into the page's arrays with no encode; a
    /// mini-batch is used once per epoch, and one kernel pass over it
    /// never repays encoding it (encoding every batch in the file's TOC
    /// format made exact mode 9 to 10 times the cost of page mode).
    /// `Some(kind)` encodes each exact-mode mini-batch in `kind`, for
    /// callers who want batches in a given format. Page mode yields the
    /// file's pages as they are whatever this says.
    pub format: Option<FormatKind>,
    /// Where Shuffle Once writes its shuffled copy and bucket files
    /// (default: beside the file, whose file system held the data once;
    /// the temporary directory is often a small in-memory one). They are
    /// deleted when the loader is dropped, on an error, and on an
    /// interruption ([`crate::cleanup`]); copies of killed runs are
    /// removed by the next Shuffle Once loader in the same directory.
    pub scratch_dir: Option<PathBuf>,
    /// Bytes of loaded pages the loader may keep in memory across epochs
    /// (default [`default_memory`](super::default_memory): half the memory
    /// available to the process, from `/proc/meminfo` and its memory
    /// cgroups, at most [`DEFAULT_MEMORY`](super::DEFAULT_MEMORY)): blocks whose pages fit stay resident
    /// after their first visit, validated once per process; the rest are
    /// read from the file every epoch. 0 streams every block every epoch.
    /// Counts what the pages hold ([`Page::heap_bytes`](crate::Page::heap_bytes):
    /// for TOC the decode trees, several times the file's bytes).
    pub memory: usize,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            strategy: Strategy::CorgiPile,
            mode: Mode::Auto,
            batch_rows: 250,
            buffer: Buffer::Fraction(0.1),
            seed: 0,
            worker: 0,
            workers: 1,
            double_buffer: true,
            read_ahead: 8,
            trace: false,
            format: None,
            scratch_dir: None,
            memory: default_memory(),
        }
    }
}

/// Fails on options that cannot work.
pub(super) fn check_options(o: &LoaderOptions) -> Result<()> {
    let bad = |what, expected| Err(Error::BadArgument { what, expected });
    if o.batch_rows == 0 {
        return bad("batch_rows", "at least 1");
    }
    if o.workers == 0 || o.worker >= o.workers {
        return bad("worker", "below the number of workers (at least 1)");
    }
    match o.buffer {
        Buffer::Fraction(f) if !(f > 0.0 && f <= 1.0) => bad("buffer", "a fraction in (0, 1]"),
        Buffer::Blocks(0) => bad("buffer", "at least one block"),
        _ => Ok(()),
    }
}

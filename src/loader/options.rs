//! What a [`Loader`](super::Loader) is asked to do: the ordering
//! [`Strategy`], the [`Mode`] (what the buffer shuffles), the [`Buffer`]
//! size and the rest of [`LoaderOptions`], with their checks.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::formats::FormatKind;

/// How tuples are ordered each epoch (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Mode {
    /// Rows, shuffled one by one (CorgiPile paper, Algorithm 1): each
    /// buffer's pages decoded from their compressed bytes, each
    /// mini-batch its rows copied into one CSR page (or encoded in
    /// [`LoaderOptions::format`] when that is set).
    Exact,
    /// Whole encoded pages, their decode trees built; no re-encoding. As
    /// good as shuffling rows only when a page's rows are already as mixed
    /// as random rows: for shuffled data.
    Page,
    /// Decided from the file ([`Mode::choose`]): page mode when its
    /// pages' labels are as mixed as random rows would be and a
    /// mini-batch spans at least [`AUTO_MIN_PAGES`] pages, exact mode
    /// otherwise. The default.
    Auto,
}

/// Pages a mini-batch must span for [`Mode::Auto`] to choose page mode.
pub const AUTO_MIN_PAGES: usize = 4;

/// How far above 1 a file's label mix ratio may be (beyond three standard
/// deviations of a random file's) for its pages to count as mixed.
const MIXED_SLACK: f64 = 0.1;

/// The mode a loader uses and why ([`Mode::choose`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ModeChoice {
    /// The mode ([`Mode::Auto`] resolved).
    pub mode: Mode,
    /// Why, as a phrase for a person ("pages hold clustered labels
    /// (label mix 27.4; random pages give about 1)").
    pub reason: String,
}

impl Mode {
    /// The mode a loader uses for mini-batches of `batch_rows` rows over a
    /// file described by `info`, and why. [`Mode::Auto`] shuffles rows
    /// (exact mode), as CorgiPile's Algorithm 1 does, and says what the
    /// file's label mix ([`LabelMix`](crate::dataset::LabelMix), measured
    /// by the writer) shows. Page mode, whose shuffle is as good only when
    /// pages are as mixed as random rows, was the choice for such files
    /// while it was the faster mode; since rows are decoded from the
    /// compressed resident blocks, exact mode is the faster one there too
    /// (shuffled flights3m: 0.57 to 0.80 s an epoch against 0.98 to 1.10;
    /// `docs/archive/RESULTS-HISTORY.md` section 22), so auto never takes it. Any other
    /// mode is taken as it is. [`Loader::mode_choice`](super::Loader::mode_choice)
    /// is this for its file and options.
    pub fn choose(self, info: &crate::dataset::DatasetInfo, batch_rows: usize) -> ModeChoice {
        let choice = |mode, reason: String| ModeChoice { mode, reason };
        if self != Mode::Auto {
            return choice(self, "as asked".into());
        }
        let spans = batch_rows / info.page_rows.max(1);
        let reason = match info.label_mix {
            _ if spans < AUTO_MIN_PAGES => {
                format!("a mini-batch spans {spans} of the file's pages: rows shuffled")
            }
            Some(m) if m.pages_mixed(MIXED_SLACK) => format!(
                "pages as mixed as random rows (label mix {:.2} over {} pages): rows shuffled, \
                 faster than whole pages",
                m.ratio, m.pages
            ),
            Some(m) => format!(
                "pages hold clustered labels (label mix {:.2}; random pages give about 1): \
                 rows shuffled",
                m.ratio
            ),
            None => "the file records no label mix: rows shuffled".into(),
        };
        choice(Mode::Exact, reason)
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

/// Not part of the API (hidden): what the row pipeline's buffers keep of
/// each row, for the tests and the benchmarks; may change in any release.
/// `Auto` (the default) is decided from the file (`loader/sample.rs`).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum RowForm {
    /// Codes where every segment has a dictionary, in the form the
    /// kernels' rule prefers; values otherwise.
    #[default]
    Auto,
    /// Decoded values.
    Values,
    /// The pages' codes (page nodes resolved).
    Codes,
    /// Pair codes (rows written out against the first layers).
    PairCodes,
}

/// The buffer size of CorgiPile, Sliding-Window and MRS.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Buffer {
    /// The whole file when the buffer form of every block (code rows,
    /// or decoded values for files without dictionaries) fits the
    /// loader's memory budget ([`LoaderOptions::memory`]): every row is
    /// decoded once, and CorgiPile shuffles all of them every epoch (a
    /// full shuffle at no extra I/O; what a small label-sorted file
    /// needs). Otherwise `Fraction(0.1)`, the paper's default. The
    /// default; [`Loader::buffer_choice`](super::Loader::buffer_choice)
    /// says which it was.
    Auto,
    /// A share of the dataset (the paper's default is 0.1). For CorgiPile
    /// it is rounded up to whole blocks, and is at least 4 blocks (or
    /// every block of the worker) so that no block's tuples dominate a
    /// small file's buffer; for Sliding-Window and MRS it is
    /// that share of the worker's rows (pages in page mode).
    Fraction(f64),
    /// A number of blocks (for Sliding-Window and MRS: as many units as
    /// that many blocks hold on average).
    Blocks(usize),
}

/// Everything a [`Loader`](super::Loader) needs besides the file.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LoaderOptions {
    /// The ordering strategy (default CorgiPile).
    pub strategy: Strategy,
    /// What the buffer shuffles (default [`Mode::Auto`]).
    pub mode: Mode,
    /// Rows per mini-batch (default 250).
    pub batch_rows: usize,
    /// Buffer size (default [`Buffer::Auto`]: the whole file when it
    /// fits the memory budget and, decoded, the decode budget of
    /// [`limits`](crate::limits), else 10% of it).
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
    /// Bytes of blocks the loader may keep in memory across epochs: blocks
    /// that fit stay resident after their first visit, as their bytes in
    /// the file (checked once per process) plus a page index of 24 bytes a
    /// page; the rest are read from the file every epoch. `Some(0)` streams
    /// every block every epoch. Rows are decoded from the resident bytes
    /// every epoch; what stays is compressed. With [`Buffer::Auto`] the
    /// budget also decides the buffer: the whole file, kept across epochs
    /// in its buffer form (code rows, pair codes or values) instead of
    /// resident blocks, when that form's estimated bytes fit it.
    ///
    /// `None` (the default) is automatic: when the loader opens, half the
    /// memory available to the process (from `/proc/meminfo` and its
    /// memory cgroups) once the loader's own working set is set aside, at
    /// most 1 GiB; with [`Buffer::Auto`] and one worker, up to three
    /// quarters of it when that holds the whole file's buffer
    /// ([`memory_budget_for`](super::memory_budget_for)).
    /// `LoaderOptions::default()` itself reads nothing of the system.
    pub memory: Option<usize>,
    /// Not part of the API (hidden): see [`RowForm`].
    #[doc(hidden)]
    pub rows: RowForm,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            strategy: Strategy::CorgiPile,
            mode: Mode::Auto,
            batch_rows: 250,
            buffer: Buffer::Auto,
            seed: 0,
            worker: 0,
            workers: 1,
            double_buffer: true,
            read_ahead: 8,
            trace: false,
            format: None,
            scratch_dir: None,
            memory: None,
            rows: RowForm::Auto,
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

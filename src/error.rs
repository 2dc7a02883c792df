//! The crate's single error type.
//!
//! Every variant carries the numbers a user needs to find the problem: the
//! byte offset in an encoded batch, the row and position of a bad entry, the
//! limit that was exceeded. Bad input is always reported as an [`Error`];
//! only violations of a documented caller contract (see the `# Panics`
//! sections) panic.

use std::path::Path;
use std::sync::Arc;

/// Everything that can go wrong in tocpile.
///
/// The enum is `non_exhaustive`: later releases can add variants without
/// a breaking change.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The input ended before a field could be read.
    Truncated {
        /// The field that was being read.
        what: &'static str,
        /// Byte offset where the field starts.
        offset: usize,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the input from `offset`.
        available: usize,
    },
    /// The input does not start with the magic number of what it is read
    /// as ("TOCB" for a TOC batch, "TOCD" for a dataset file, "TOCM" for a
    /// model file, the page magic of the format for other pages): it is
    /// another kind of file (a dataset file given as a model, say), empty,
    /// or not a tocpile file at all. The message names what was found when
    /// it is another tocpile magic.
    BadMagic {
        /// The magic expected.
        expected: [u8; 4],
        /// The first bytes found (up to four).
        found: Vec<u8>,
    },
    /// The bytes are a page of another format than the one they are loaded
    /// as (another page magic, or a TOC batch of another level).
    WrongFormat {
        /// The format asked for: its name (`"CSR"`), or a description
        /// with its article (`"a compact page or ..."`).
        expected: &'static str,
        /// The format the bytes hold, likewise.
        found: &'static str,
    },
    /// The format version is not one this build can read.
    UnsupportedVersion {
        /// Whose version (`"dataset file format"`).
        what: &'static str,
        /// Version byte found.
        found: u8,
        /// Highest version this build reads.
        supported: u8,
    },
    /// A flags byte has bits set that this version does not define.
    UnknownFlags {
        /// Byte offset of the flags byte.
        offset: usize,
        /// The flags found.
        flags: u8,
    },
    /// A variable-length integer is malformed (too long or overflowing).
    BadVarint {
        /// The field that was being read.
        what: &'static str,
        /// Byte offset where the varint starts.
        offset: usize,
    },
    /// A header field holds a value outside its allowed range.
    FieldOutOfRange {
        /// The field.
        what: &'static str,
        /// Byte offset of the field.
        offset: usize,
        /// The value found.
        value: u64,
        /// The largest value allowed.
        max: u64,
    },
    /// A header field holds a value below the smallest allowed (a count
    /// of layers, columns or parts that must be at least 1).
    FieldBelowMinimum {
        /// The field.
        what: &'static str,
        /// Byte offset of the field.
        offset: usize,
        /// The value found.
        value: u64,
        /// The smallest value allowed.
        min: u64,
    },
    /// A packed integer array declares a bit width this format does not allow.
    BadWidth {
        /// The array.
        what: &'static str,
        /// Byte offset of the width byte.
        offset: usize,
        /// Width found, in bits.
        width: u8,
    },
    /// An escape-coded array (format version 2) ends with escape
    /// symbols: its last element never ends.
    UnterminatedEscape {
        /// The array.
        what: &'static str,
        /// Byte offset of the array's payload.
        offset: usize,
    },
    /// The unused bits at the end of a packed array are not zero.
    NonZeroPadding {
        /// The array.
        what: &'static str,
        /// Byte offset of the last byte of the array.
        offset: usize,
    },
    /// Two sections that must agree in length do not.
    LengthMismatch {
        /// What was compared.
        what: &'static str,
        /// The length implied by the other section.
        expected: u64,
        /// The length found.
        found: u64,
    },
    /// Bytes remain after the last section.
    TrailingBytes {
        /// What they follow (`"the footer's last section"`).
        what: &'static str,
        /// Byte offset where the unexpected bytes start.
        offset: usize,
        /// How many bytes remain.
        len: usize,
    },
    /// A code in the encoded table points at a prefix-tree node that does not
    /// exist when the row is decoded.
    CodeOutOfRange {
        /// Row of the code.
        row: usize,
        /// Position of the code within the row's codes.
        position: usize,
        /// The code found.
        code: u64,
        /// Codes must be in `1..limit`.
        limit: u64,
    },
    /// A column id is not below the batch's column count.
    ColumnOutOfRange {
        /// Where: a row index for sparse input, or the first-layer entry.
        row: usize,
        /// Position within the row (or first-layer index).
        position: usize,
        /// The column found.
        col: u64,
        /// The batch's column count.
        n_cols: u64,
    },
    /// A first-layer (or flat) pair's column id is not below the column count.
    PairColumnOutOfRange {
        /// Index of the pair in the pair-column section.
        index: usize,
        /// The column found.
        col: u64,
        /// The batch's column count.
        n_cols: u64,
    },
    /// A value id does not point into the value dictionary.
    ValueIdOutOfRange {
        /// Index of the first-layer entry holding the id.
        position: usize,
        /// The id found.
        id: u64,
        /// Length of the dictionary.
        dict_len: u64,
    },
    /// A stored value is zero; zeros are never stored.
    ZeroValue {
        /// What held it.
        what: &'static str,
        /// Its index.
        index: usize,
    },
    /// Column ids within a row are not strictly ascending.
    ColumnsNotAscending {
        /// Row index.
        row: usize,
        /// Position of the offending entry (in pairs for sparse input, in
        /// codes for an encoded batch).
        position: usize,
        /// Column before the offending entry.
        prev: u64,
        /// Column of the offending entry.
        col: u64,
    },
    /// Row offsets of CSR input do not start at zero, decrease, or do not end
    /// at the number of entries.
    BadOffsets {
        /// Index of the offending offset.
        index: usize,
        /// The offset found.
        offset: u64,
        /// What was expected.
        expected: &'static str,
    },
    /// Two triplets name the same (row, column).
    DuplicateEntry {
        /// Row.
        row: usize,
        /// Column.
        col: u64,
    },
    /// A count exceeds what the representation supports.
    TooLarge {
        /// What was counted.
        what: &'static str,
        /// The count.
        value: u64,
        /// The maximum supported.
        max: u64,
    },
    /// Reading, writing or decompressing a file failed (the file is
    /// missing or unreadable, the disk is full, a compressed stream is
    /// corrupt or truncated). Made by [`Error::io`];
    /// [`source`](std::error::Error::source) returns the underlying error.
    Io {
        /// The file (or the name given to an in-memory reader).
        path: String,
        /// The kind of the underlying I/O error.
        kind: std::io::ErrorKind,
        /// The underlying error's message, with the line being read where
        /// known.
        message: String,
        /// The underlying error itself.
        source: IoSource,
    },
    /// A text input (LIBSVM, CSV, schema text) holds something that does not
    /// fit its format.
    Parse {
        /// The file (or the name given to an in-memory reader).
        path: String,
        /// 1-based line of the offending token.
        line: u64,
        /// 1-based byte column of the offending token within its line.
        column: usize,
        /// What the format needs at that point.
        expected: &'static str,
        /// What was there (at most about 40 characters).
        found: String,
    },
    /// A CSV header lacks a column that the options or the schema name.
    MissingColumn {
        /// The file.
        path: String,
        /// The column looked for.
        name: String,
        /// The header's column names, comma-separated (shortened if long).
        header: String,
    },
    /// A categorical CSV column has more distinct values than supported.
    TooManyLevels {
        /// The file.
        path: String,
        /// The column.
        column: String,
        /// The most levels a column may have.
        max: usize,
        /// Line of the first value that made the column categorical.
        line: u64,
        /// That value (at most about 40 characters).
        found: String,
    },
    /// A schema is inconsistent (duplicate column or level, too many
    /// output columns).
    InvalidSchema {
        /// What is wrong.
        message: String,
    },
    /// An argument or option cannot be used as given.
    BadArgument {
        /// The argument or option.
        what: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A section of a dataset file does not match its checksum: the file
    /// was damaged after it was written.
    ChecksumMismatch {
        /// The file.
        path: String,
        /// The section ("block 3", "footer").
        section: String,
        /// Byte offset of the section in the file.
        offset: u64,
        /// The checksum the index records.
        expected: u32,
        /// The checksum of the bytes read.
        found: u32,
    },
    /// A label cannot be used by the model: a class label that is not an
    /// integer in `0..classes`, or a label that is not finite.
    BadLabel {
        /// Index of the page within the mini-batch.
        page: usize,
        /// Row within the page.
        row: usize,
        /// The label found.
        label: f64,
        /// What the model needs (e.g. "a class index in 0..10").
        expected: String,
    },
    /// Training diverged: the loss of an epoch is not finite.
    Diverged {
        /// The epoch (from 0).
        epoch: usize,
        /// The learning rate of that epoch.
        learning_rate: f64,
    },
    /// A held-out split ([`Holdout`](crate::train::Holdout), a
    /// [`Trainer`](crate::train::Trainer)'s holdout) left one side
    /// without rows: the share is too small or too large for the file.
    EmptySplit {
        /// The share held out.
        fraction: f64,
        /// Rows left to train on.
        train_rows: u64,
        /// Rows held out.
        test_rows: u64,
    },
    /// A value of a columnar input (Arrow record batches, a Parquet file)
    /// that its column cannot hold: a label or number that is null or not
    /// finite, too many distinct strings.
    BadValue {
        /// The input's name (a file).
        path: String,
        /// 0-based row of the input (rows of every batch read, in order).
        row: u64,
        /// The column.
        column: String,
        /// What the column needs.
        expected: &'static str,
        /// What was there (at most about 40 characters).
        found: String,
    },
    /// A column of a columnar input that cannot be read: an Arrow type
    /// tocpile does not read, a type the schema does not allow, or a column
    /// that is neither the label nor in the schema.
    BadColumn {
        /// The input's name (a file).
        path: String,
        /// The column.
        column: String,
        /// Its Arrow type.
        found: String,
        /// What was expected of it.
        expected: &'static str,
    },
    /// An error inside a section of a file: `error`'s offsets are relative
    /// to the section, which starts at byte `offset` of the file.
    InFile {
        /// The file.
        path: String,
        /// The section ("header", "footer", "block 3, page 2").
        section: String,
        /// Byte offset of the section in the file.
        offset: u64,
        /// What was wrong.
        error: Box<Error>,
    },
    /// A message between the ranks of a distributed run went wrong: a
    /// peer stopped or timed out, or the ranks called different
    /// collectives.
    Communication {
        /// The rank that saw the problem.
        rank: usize,
        /// The rank it was talking to.
        peer: usize,
        /// What went wrong.
        message: String,
    },
    /// A worker could not recover its blocks from a shuffle: a packet it
    /// cannot decode, a block that never arrived, or a recovered block
    /// whose checksum differs from the server's.
    Shuffle {
        /// The worker (0-based; rank `worker + 1`).
        worker: usize,
        /// The epoch being shuffled into.
        epoch: u64,
        /// What went wrong.
        message: String,
    },
    /// The work was interrupted (the command line's handler of SIGINT and
    /// SIGTERM asks for it); temporary files were removed.
    Interrupted,
    /// A size an input asks for is above a limit of the resource policy
    /// ([`crate::limits`]): the input is hostile or bigger than this
    /// process was told to trust.
    LimitExceeded {
        /// What was sized.
        what: &'static str,
        /// The size asked for.
        value: u64,
        /// The limit.
        max: u64,
        /// How to raise the limit.
        raise: &'static str,
    },
    /// A number that cannot be used as read: NaN or an infinity where a
    /// finite number is required (a value of a batch or page, a label of
    /// a dataset file, a model parameter, a score), or a number outside
    /// its range (a scaling factor must be positive).
    InvalidNumber {
        /// Which number, and where (e.g. `"row 2, column 5: value"`,
        /// `"parameter 17 (at byte 180)"`).
        what: String,
        /// The number found.
        value: f64,
        /// What it must be (e.g. `"a finite number"`).
        expected: &'static str,
    },
    /// Bytes that must be UTF-8 text are not (a dataset file's schema).
    NotUtf8 {
        /// What the bytes are.
        what: &'static str,
        /// Byte offset where they start.
        offset: usize,
        /// How many bytes they are.
        len: u64,
        /// Byte offset of the first invalid byte.
        invalid_at: usize,
    },
    /// The system refused an allocation that an input or an option asked
    /// for.
    OutOfMemory {
        /// What was being allocated.
        what: &'static str,
        /// Bytes asked for.
        bytes: u64,
    },
    /// A dataset file ends before its trailer: it was cut short (a copy
    /// or a write that did not complete).
    TruncatedFile {
        /// The file.
        path: String,
        /// Bytes the file has.
        len: u64,
        /// Bytes it must have at least (the end of the section the data
        /// stops in, plus the trailer).
        needed: u64,
    },
    /// A dataset file whose trailer is followed by more bytes: something
    /// was written after the file (such as text sent to the same
    /// output).
    BytesAfterEnd {
        /// The file.
        path: String,
        /// Where the file's trailer ends.
        end: u64,
        /// Bytes the file has.
        len: u64,
    },
}

// The messages, one per variant, live in error/display.rs.
mod display;
pub(crate) use display::Number;

impl Error {
    /// An [`Error::Io`] for `path` (a file, or the name of an in-memory
    /// input), keeping `error`'s kind and the error itself as the
    /// [`source`](std::error::Error::source).
    pub fn io(path: impl AsRef<Path>, error: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().display().to_string(),
            kind: error.kind(),
            message: error.to_string(),
            source: IoSource(Arc::new(error)),
        }
    }
}

impl Error {
    /// As [`Error::io`], with `message` (which should say what was being
    /// done, and may quote `error`) instead of `error`'s own.
    pub(crate) fn io_context(
        path: impl AsRef<Path>,
        error: std::io::Error,
        message: String,
    ) -> Error {
        Error::Io {
            path: path.as_ref().display().to_string(),
            kind: error.kind(),
            message,
            source: IoSource(Arc::new(error)),
        }
    }
}

impl Error {
    /// `Ok` when `found` is `expected`, else an [`Error::LengthMismatch`]
    /// naming `what` (columns of two files, rows of a page and its labels).
    pub(crate) fn check_equal(what: &'static str, expected: usize, found: usize) -> Result<()> {
        if expected != found {
            return Err(Error::LengthMismatch {
                what,
                expected: expected as u64,
                found: found as u64,
            });
        }
        Ok(())
    }
}

impl Error {
    /// The [`Error::Io`] for a thread that could not be started while
    /// working on `path` (its name, `thread`, says which): the system's
    /// limit on threads or on address space was reached.
    pub(crate) fn spawn_failed(
        path: impl AsRef<Path>,
        thread: &str,
        error: std::io::Error,
    ) -> Error {
        let message = format!(
            "could not start the {thread} thread: {error} (a limit on threads or on address \
             space was reached)"
        );
        Error::io_context(path, error, message)
    }
}

/// An I/O error with no file to name (`?` on an `io::Result` in a
/// caller's own code): an [`Error::Io`] with an empty `path`, the error
/// kept as its [`source`](std::error::Error::source). The crate itself
/// names the file with [`Error::io`].
impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Error {
        Error::io("", error)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.get()),
            // The error inside a file's context: its own source follows.
            Error::InFile { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// The underlying error of an [`Error::Io`], shared so that [`Error`]
/// stays `Clone`. Two are equal when their kinds and messages are.
#[derive(Debug, Clone)]
pub struct IoSource(Arc<std::io::Error>);

impl IoSource {
    /// The I/O error.
    pub fn get(&self) -> &std::io::Error {
        &self.0
    }
}

impl PartialEq for IoSource {
    fn eq(&self, other: &IoSource) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.kind() == other.0.kind() && self.0.to_string() == other.0.to_string())
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

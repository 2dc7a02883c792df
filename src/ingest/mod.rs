//! Streaming readers that turn LIBSVM and CSV text files, plain or gzip,
//! into [`Chunk`]s: a [`SparseBatch`] of at most `max_rows` rows plus the
//! rows' labels, ready for the encoder and the dataset writer.
//!
//! - [`libsvm::LibsvmReader`]: `label idx:val idx:val ... # comment` lines.
//! - [`csv::CsvReader`]: a header line, a label column named in
//!   [`csv::CsvOptions`], and numeric or categorical (one-hot) feature
//!   columns described by a [`csv::Schema`]; missing numbers as the
//!   [`missing`] module says.
//! - `arrow::ArrowEncoder` (cargo feature `arrow`): Arrow record batches
//!   (from Parquet, IPC or any Arrow source) into chunks, through the same
//!   [`csv::Schema`].
//!
//! # Input
//!
//! A file is gzip if it starts with the gzip magic bytes `1f 8b` (whatever
//! its name); several concatenated gzip members are read as one stream.
//! Anything else is read as plain text. Both readers also take any
//! `BufRead` (`from_reader`, e.g. standard input), under a name used in
//! error messages; since such a stream cannot be read twice, the options
//! must then name what a file would let the reader infer.
//!
//! # Errors
//!
//! Bad input is an [`Error`], never a panic:
//!
//! - [`Error::Parse`] names the file, the 1-based line, the 1-based byte
//!   column of the offending token, what was expected and what was found,
//!   e.g. `train.svm:12:9: expected a value (a finite number), found "x"`.
//!   Blank and comment lines count in line numbers. Labels and feature
//!   values must be finite numbers: `NaN` and infinities are rejected,
//!   since one of them poisons every weight it touches during training.
//! - [`Error::Io`] names the file and the line being read for a failed
//!   read, including a corrupt or truncated gzip stream (a cut file is an
//!   error, never a silent end of data).
//!
//! Within a chunk the first error in file order is reported. After an
//! error a reader is spent: every later `next_chunk` returns the same
//! error.
//!
//! # Memory and threads
//!
//! Memory is bounded by the chunk, never the file: a reader holds the text
//! of at most `max_rows` rows (one line may be up to [`MAX_LINE_BYTES`],
//! a CSV record up to 255 MiB)
//! plus the parsed chunk. The rows of a chunk are read sequentially, then
//! parsed in parallel with rayon in sub-chunks; results keep file order.
//!
//! # Two passes
//!
//! Where something must be known before the first row is returned and the
//! options do not give it, the reader opening a file reads it twice: once
//! to infer (LIBSVM: the column count, when `n_cols` is `None`; CSV: the
//! [`csv::Schema`], when none is given), then again to return the rows.
//! For a gzip file that means decompressing twice.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};
use crate::sparse::SparseBatch;

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod csv;
pub mod libsvm;
mod lines;
pub mod missing;
mod schema;
mod table;

/// The longest line (LIBSVM) a reader accepts, in bytes: 1 GiB. A longer
/// line (or a binary file with no line breaks) is a [`Error::Parse`]
/// rather than an unbounded allocation. The line is held as it is read,
/// growing fallibly: a line the memory cannot hold is an
/// [`Error::Io`] saying so (or, if it is longer than this anyway, the
/// line error), never an abort. A CSV record may be up to 255 MiB (the
/// `csv` crate holds a record in buffers of its own, which double as they
/// grow: a longer record would need more than twice its length).
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const MAX_LINE_BYTES: usize = 1 << 30;

/// Characters of an offending token kept in [`Error::Parse`]'s `found`.
const FOUND_CHARS: usize = 40;

/// A run of consecutive rows read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// The rows' features, with the reader's column count.
    pub batch: SparseBatch,
    /// One label per row.
    pub labels: Vec<f64>,
    /// 1-based line of the file where the chunk's first row starts (for
    /// Arrow input, which has no lines, the 1-based number of its first
    /// row).
    pub first_line: u64,
}

/// Opens a file for reading, decompressing it if it is gzip.
pub(crate) fn open_path(path: &Path) -> Result<(String, Box<dyn BufRead + Send>)> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| io_error(&name, e, None))?;
    let input = detect_gzip(BufReader::with_capacity(1 << 16, file), &name)?;
    Ok((name, input))
}

/// Wraps `reader` in a gzip decoder if its first two bytes are the gzip
/// magic number.
pub(crate) fn detect_gzip(
    mut reader: impl BufRead + Send + 'static,
    name: &str,
) -> Result<Box<dyn BufRead + Send>> {
    let mut head = [0u8; 2];
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(name, e, None)),
        }
    }
    let rejoined = io::Cursor::new(head[..got].to_vec()).chain(reader);
    if head[..got] == [0x1f, 0x8b] {
        let decoder = flate2::bufread::MultiGzDecoder::new(rejoined);
        Ok(Box::new(BufReader::with_capacity(1 << 16, decoder)))
    } else {
        Ok(Box::new(rejoined))
    }
}

/// [`Error::io`] for `name`, its message mentioning the line being read
/// if known.
pub(crate) fn io_error(name: &str, e: io::Error, line: Option<u64>) -> Error {
    let mut error = Error::io(name, e);
    if let (Error::Io { message, .. }, Some(line)) = (&mut error, line) {
        message.push_str(&format!(" (while reading line {line})"));
    }
    error
}

/// `bytes` as text for an error message: invalid UTF-8 replaced, cut to
/// about [`FOUND_CHARS`] characters.
pub(crate) fn shorten(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() <= FOUND_CHARS {
        return text.into_owned();
    }
    let mut cut: String = text.chars().take(FOUND_CHARS).collect();
    cut.push_str("...");
    cut
}

/// Parses a finite `f64` (Rust's syntax: `1`, `-2.5`, `+1`, `1e3`, `.5`);
/// `None` for anything else, including NaN and infinities. Short integers
/// take a fast path; all results are correctly rounded.
#[inline]
pub(crate) fn parse_finite(token: &[u8]) -> Option<f64> {
    let (negative, digits) = match token.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, token),
    };
    if !digits.is_empty() && digits.len() <= 15 && digits.iter().all(u8::is_ascii_digit) {
        // At most 15 digits: below 2^53, exact in an f64.
        let v = digits
            .iter()
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0')) as f64;
        return Some(if negative { -v } else { v });
    }
    let v: f64 = std::str::from_utf8(token).ok()?.parse().ok()?;
    v.is_finite().then_some(v)
}

/// Rows per rayon task when parsing `n_rows` rows: about four tasks per
/// thread, at least 64 rows each.
pub(crate) fn sub_chunk_rows(n_rows: usize) -> usize {
    n_rows
        .div_ceil(crate::parallel::current_num_threads() * 4)
        .max(64)
}

/// The rows of one parallel task: labels and CSR parts with row ends
/// relative to the task's first entry.
#[derive(Default)]
pub(crate) struct Part {
    pub(crate) labels: Vec<f64>,
    pub(crate) ends: Vec<usize>,
    pub(crate) cols: Vec<u32>,
    pub(crate) values: Vec<f64>,
}

/// Joins the parts of a chunk (in order) into a [`Chunk`].
pub(crate) fn join_parts(n_cols: usize, parts: Vec<Part>, first_line: u64) -> Result<Chunk> {
    let n_rows: usize = parts.iter().map(|p| p.labels.len()).sum();
    let nnz: usize = parts.iter().map(|p| p.cols.len()).sum();
    let mut offsets = Vec::with_capacity(n_rows + 1);
    offsets.push(0);
    let mut cols = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    let mut labels = Vec::with_capacity(n_rows);
    for part in parts {
        let base = cols.len();
        offsets.extend(part.ends.iter().map(|e| base + e));
        cols.extend_from_slice(&part.cols);
        values.extend_from_slice(&part.values);
        labels.extend_from_slice(&part.labels);
    }
    Ok(Chunk {
        batch: SparseBatch::from_csr(n_cols, offsets, cols, values)?,
        labels,
        first_line,
    })
}

/// The checks both readers make before reading a chunk: a reader that
/// failed keeps returning its error, and `max_rows` must be positive.
pub(crate) fn check_chunk_call(failed: &Option<Error>, max_rows: usize) -> Result<()> {
    if let Some(e) = failed {
        return Err(e.clone());
    }
    if max_rows == 0 {
        return Err(Error::BadArgument {
            what: "max_rows",
            expected: "at least 1",
        });
    }
    Ok(())
}

/// Keeps the first error a reader returns, so it is spent afterwards.
pub(crate) fn remember_failure<T>(failed: &mut Option<Error>, result: &Result<T>) {
    if let Err(e) = result {
        *failed = Some(e.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_finite_accepts_numbers_only() {
        for (text, v) in [
            ("1", 1.0),
            ("-1", -1.0),
            ("+1", 1.0),
            ("0", 0.0),
            ("2.5", 2.5),
            ("1e3", 1000.0),
            (".5", 0.5),
            ("123456789012345", 123456789012345.0),
            ("1234567890123456789", 1234567890123456789.0),
        ] {
            assert_eq!(parse_finite(text.as_bytes()), Some(v), "{text}");
        }
        for text in [
            "",
            "-",
            "NaN",
            "nan",
            "inf",
            "-infinity",
            "1e400",
            "x",
            "1,5",
            " 1",
        ] {
            assert_eq!(parse_finite(text.as_bytes()), None, "{text}");
        }
        assert!(parse_finite(b"-0").unwrap().is_sign_negative());
    }

    #[test]
    fn shorten_cuts_long_tokens() {
        assert_eq!(shorten(b"abc"), "abc");
        let long = "x".repeat(100);
        assert_eq!(shorten(long.as_bytes()), format!("{}...", "x".repeat(40)));
        assert_eq!(shorten(b"a\xffb"), "a\u{fffd}b");
    }
}

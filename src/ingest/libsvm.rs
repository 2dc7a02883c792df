//! LIBSVM (and SVMlight) text: one row per line.
//!
//! ```text
//! label [qid:N] index:value index:value ... [# comment]
//! ```
//!
//! - Tokens are separated by spaces or tabs; `\r\n` line ends and a
//!   UTF-8 byte order mark at the start of the file are fine.
//! - `#` starts a comment that runs to the end of the line. Blank lines
//!   and comment-only lines are skipped (they still count in line
//!   numbers).
//! - The label is a finite number: `+1`, `-1`, `0`, `2.5`, `1e3` are all
//!   fine; `NaN`, infinities and non-numbers are errors.
//! - An SVMlight query id `qid:N` (`N` an unsigned integer) right after the
//!   label is accepted and ignored; anywhere else it is an error.
//! - Indices are 1-based unless [`LibsvmOptions::zero_based`] is set
//!   (index `i` becomes column `i - 1`, so index 0 is an error), unsigned
//!   integers, strictly ascending within a line (a repeated or descending
//!   index is an error naming its column), and below the column count.
//! - Values are finite numbers. Zero values are dropped, as everywhere in
//!   [`SparseBatch`](crate::SparseBatch).
//!
//! # Column count
//!
//! With [`LibsvmOptions::n_cols`] given, an index at or beyond it is an
//! error. Without it, [`LibsvmReader::open`] first reads the whole file to
//! find the largest index (**the file is read twice**; a gzip file is
//! decompressed twice). Inference cannot see columns that are zero in
//! every row (trailing all-zero pixels of an image set, say), which is why
//! the option exists: a training set and its test set must agree on the
//! column count.
//!
//! ```
//! use std::io::Cursor;
//! use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
//!
//! let text = "+1 1:0.5 3:2 # first row\n\n-1 qid:7 2:1\n";
//! let options = LibsvmOptions::default().with_n_cols(Some(3));
//! let mut reader = LibsvmReader::from_reader(Cursor::new(text), "example", options)?;
//! let chunk = reader.next_chunk(1000)?.expect("two rows");
//! assert_eq!(chunk.labels, [1.0, -1.0]);
//! assert_eq!(chunk.batch.row(0), (&[0u32, 2][..], &[0.5, 2.0][..]));
//! assert_eq!(chunk.batch.row(1), (&[1u32][..], &[1.0][..]));
//! assert!(reader.next_chunk(1000)?.is_none());
//! # Ok::<(), tocpile::Error>(())
//! ```

use std::io::BufRead;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::lines::{Lines, Tokens};
use super::{
    check_chunk_call, detect_gzip, join_parts, open_path, parse_finite, remember_failure, shorten,
    sub_chunk_rows, Chunk, Part,
};
use crate::error::{Error, Result};
use crate::sparse::MAX_COLS;

/// Rows per chunk of the column-count inference pass.
const SCAN_ROWS: usize = 16_384;

/// How to read a LIBSVM file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct LibsvmOptions {
    /// The column count. `None`: inferred from the largest index, which
    /// reads the file twice (see the [module docs](self)).
    pub n_cols: Option<usize>,
    /// Indices start at 0 instead of 1.
    pub zero_based: bool,
}

/// Reads a LIBSVM file chunk by chunk; see the [module docs](self).
pub struct LibsvmReader {
    lines: Lines,
    zero_based: bool,
    n_cols: usize,
    failed: Option<Error>,
}

impl std::fmt::Debug for LibsvmReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibsvmReader")
            .field("name", &self.lines.name)
            .field("n_cols", &self.n_cols)
            .field("zero_based", &self.zero_based)
            .field("lines_read", &self.lines.line)
            .finish()
    }
}

impl LibsvmReader {
    /// Opens a LIBSVM file, plain or gzip. Without
    /// [`LibsvmOptions::n_cols`], reads the file once to infer the column
    /// count first.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read; [`Error::TooLarge`] if
    /// `n_cols` exceeds [`MAX_COLS`]. A failed inference pass reports only
    /// I/O errors; parse errors are reported when the rows are read.
    pub fn open(path: impl AsRef<Path>, options: LibsvmOptions) -> Result<LibsvmReader> {
        let path: PathBuf = path.as_ref().to_path_buf();
        let n_cols = match options.n_cols {
            Some(n) => n,
            None => {
                let (name, input) = open_path(&path)?;
                infer_n_cols(Lines::new(input, name), options.zero_based)?
            }
        };
        let (name, input) = open_path(&path)?;
        Self::with_lines(Lines::new(input, name), n_cols, options)
    }

    /// Reads LIBSVM text from any reader (standard input, a test string),
    /// gzip-compressed or not; `name` stands for the file in error
    /// messages.
    ///
    /// # Errors
    /// [`Error::BadArgument`] if `options.n_cols` is `None` (a stream cannot
    /// be read twice to infer it); [`Error::Io`] if the first bytes cannot
    /// be read; [`Error::TooLarge`] if `n_cols` exceeds [`MAX_COLS`].
    pub fn from_reader(
        reader: impl BufRead + Send + 'static,
        name: &str,
        options: LibsvmOptions,
    ) -> Result<LibsvmReader> {
        let Some(n_cols) = options.n_cols else {
            return Err(Error::BadArgument {
                what: "the column count of LIBSVM input (LibsvmOptions::n_cols)",
                expected: "given when reading a stream (it cannot be read twice to infer it)",
            });
        };
        let input = detect_gzip(reader, name)?;
        Self::with_lines(Lines::new(input, name.to_string()), n_cols, options)
    }

    fn with_lines(lines: Lines, n_cols: usize, options: LibsvmOptions) -> Result<LibsvmReader> {
        if n_cols > MAX_COLS {
            return Err(Error::TooLarge {
                what: "the column count of LIBSVM input",
                value: n_cols as u64,
                max: MAX_COLS as u64,
            });
        }
        Ok(LibsvmReader {
            lines,
            zero_based: options.zero_based,
            n_cols,
            failed: None,
        })
    }

    /// The column count: given, or inferred (largest column index + 1).
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// The next (at most) `max_rows` rows; `None` at the end of the file.
    ///
    /// # Errors
    /// [`Error::Parse`] or [`Error::Io`], the first in file order among the
    /// chunk's lines; [`Error::BadArgument`] if `max_rows` is 0. After an
    /// error every call returns it again.
    pub fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Chunk>> {
        check_chunk_call(&self.failed, max_rows)?;
        let result = self.read_chunk(max_rows);
        remember_failure(&mut self.failed, &result);
        result
    }

    fn read_chunk(&mut self, max_rows: usize) -> Result<Option<Chunk>> {
        let pending = self.lines.fill(max_rows).err();
        let rows = &self.lines.rows;
        let text = &self.lines.text;
        let (zero_based, n_cols) = (self.zero_based, self.n_cols);
        let parts: Vec<std::result::Result<Part, (usize, Bad)>> = crate::parallel::install(|| {
            rows.par_chunks(sub_chunk_rows(rows.len()))
                .enumerate()
                .map(|(k, spans)| {
                    let first = k * sub_chunk_rows(rows.len());
                    let mut part = Part::default();
                    for (i, span) in spans.iter().enumerate() {
                        let line = &text[span.start..span.end];
                        parse_line(line, zero_based, n_cols, &mut part)
                            .map_err(|b| (first + i, b))?;
                    }
                    Ok(part)
                })
                .collect()
        });
        let parts = parts
            .into_iter()
            .collect::<std::result::Result<Vec<Part>, _>>()
            .map_err(|(row, bad)| Error::Parse {
                path: self.lines.name.clone(),
                line: rows[row].line,
                column: bad.column,
                expected: bad.expected,
                found: shorten(bad.found(&text[rows[row].start..rows[row].end])),
            })?;
        if let Some(e) = pending {
            return Err(e);
        }
        match rows.first() {
            None => Ok(None),
            Some(first) => join_parts(n_cols, parts, first.line).map(Some),
        }
    }
}

/// Reads the whole input and returns the column count implied by its
/// largest index (0 for a file without entries). Malformed tokens are
/// skipped; the reading pass reports them.
fn infer_n_cols(mut lines: Lines, zero_based: bool) -> Result<usize> {
    let mut n_cols = 0;
    loop {
        lines.fill(SCAN_ROWS)?;
        if lines.rows.is_empty() {
            return Ok(n_cols);
        }
        let text = &lines.text;
        let chunk_max = crate::parallel::install(|| {
            lines
                .rows
                .par_iter()
                .map(|span| max_column(&text[span.start..span.end], zero_based))
                .max()
                .flatten()
        });
        if let Some(c) = chunk_max {
            n_cols = n_cols.max(c as usize + 1);
        }
    }
}

/// The largest valid column in a line, ignoring malformed tokens.
fn max_column(line: &[u8], zero_based: bool) -> Option<u64> {
    let mut tokens = Tokens::new(line);
    tokens.next()?; // label
    tokens
        .filter_map(|(_, token)| {
            let colon = token.iter().position(|&b| b == b':')?;
            let index = parse_index(&token[..colon])?;
            let col = if zero_based {
                index
            } else {
                index.checked_sub(1)?
            };
            (col < MAX_COLS as u64).then_some(col)
        })
        .max()
}

/// A parse failure within a line: byte range of the offending token and
/// what was expected.
struct Bad {
    /// 1-based byte column.
    column: usize,
    len: usize,
    expected: &'static str,
}

impl Bad {
    fn new(offset: usize, token: &[u8], expected: &'static str) -> Bad {
        Bad {
            column: offset + 1,
            len: token.len(),
            expected,
        }
    }

    fn found<'a>(&self, line: &'a [u8]) -> &'a [u8] {
        &line[self.column - 1..self.column - 1 + self.len]
    }
}

/// An unsigned decimal integer (digits only), `None` if malformed or
/// beyond `u64`.
#[inline]
fn parse_index(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &d| {
        if d.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        } else {
            None
        }
    })
}

/// Parses one data line into `part`; on error `part` may hold a partial
/// row (the chunk is dropped anyway).
fn parse_line(line: &[u8], zero_based: bool, n_cols: usize, part: &mut Part) -> Result<(), Bad> {
    let mut tokens = Tokens::new(line).peekable();
    let (offset, token) = tokens.next().expect("data lines have a token");
    let label =
        parse_finite(token).ok_or_else(|| Bad::new(offset, token, "a label (a finite number)"))?;
    if let Some(&(offset, token)) = tokens.peek() {
        if let Some(qid) = token.strip_prefix(b"qid:") {
            if parse_index(qid).is_none() {
                return Err(Bad::new(offset, token, "qid:N with N an unsigned integer"));
            }
            tokens.next();
        }
    }
    let mut prev: Option<u64> = None;
    for (offset, token) in tokens {
        let Some(colon) = token.iter().position(|&b| b == b':') else {
            return Err(Bad::new(offset, token, "index:value"));
        };
        let (index_text, value_text) = (&token[..colon], &token[colon + 1..]);
        let index = parse_index(index_text)
            .ok_or_else(|| Bad::new(offset, index_text, "an index (an unsigned integer)"))?;
        let col = if zero_based {
            index
        } else {
            index.checked_sub(1).ok_or_else(|| {
                Bad::new(
                    offset,
                    index_text,
                    "an index of at least 1 (indices are 1-based)",
                )
            })?
        };
        if prev.is_some_and(|p| col <= p) {
            return Err(Bad::new(
                offset,
                index_text,
                "an index above the previous one (strictly ascending)",
            ));
        }
        if col >= MAX_COLS as u64 {
            // Column ids are u32: the largest index is 2^32 (1-based) or
            // 2^32 - 1 (--zero-based).
            let expected = match zero_based {
                true => "an index of at most 4294967295 (2^32 - 1, as --zero-based)",
                false => "an index of at most 4294967296 (2^32)",
            };
            return Err(Bad::new(offset, index_text, expected));
        }
        if col >= n_cols as u64 {
            return Err(Bad::new(
                offset,
                index_text,
                "an index within the column count (n_cols)",
            ));
        }
        prev = Some(col);
        let value = parse_finite(value_text)
            .ok_or_else(|| Bad::new(offset + colon + 1, value_text, "a value (a finite number)"))?;
        if value != 0.0 {
            part.cols.push(col as u32);
            part.values.push(value);
        }
    }
    part.labels.push(label);
    part.ends.push(part.cols.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parsed = (Vec<u32>, Vec<f64>, f64);

    fn parse(line: &str, n_cols: usize) -> Result<Parsed, (usize, String)> {
        let mut part = Part::default();
        parse_line(line.as_bytes(), false, n_cols, &mut part).map_err(|b| {
            (
                b.column,
                String::from_utf8_lossy(b.found(line.as_bytes())).into(),
            )
        })?;
        Ok((part.cols, part.values, part.labels[0]))
    }

    #[test]
    fn lines_parse_and_fail_at_the_right_column() {
        assert_eq!(
            parse("1 1:2 4:0 5:-1.5", 9),
            Ok((vec![0, 4], vec![2.0, -1.5], 1.0))
        );
        assert_eq!(
            parse("\t-1\tqid:3 2:1 # c 3:1", 9),
            Ok((vec![1], vec![1.0], -1.0))
        );
        assert_eq!(parse("1 2:1 2:1", 9), Err((7, "2".into())));
        assert_eq!(parse("1 2:1 x:1", 9), Err((7, "x".into())));
        assert_eq!(parse("1 2:1 3:y", 9), Err((9, "y".into())));
        assert_eq!(parse("1 2:1 3:", 9), Err((9, "".into())));
        assert_eq!(parse("1 qid:x 3:1", 9), Err((3, "qid:x".into())));
        assert_eq!(parse("1 3:1 qid:1", 9), Err((7, "qid".into())));
        assert_eq!(
            parse("1 99999999999999999999:1", 9),
            Err((3, "99999999999999999999".into()))
        );
        assert_eq!(
            parse("1 4294967297:1", 1 << 32),
            Err((3, "4294967297".into()))
        );
        assert!(parse("1 4294967296:1", 1 << 32).is_ok());
    }
}

//! The LIBSVM line source: raw data lines of a chunk, read sequentially,
//! and the tokenizer the parsers share.

use std::io::{BufRead, Read};

use super::{io_error, shorten, MAX_LINE_BYTES};
use crate::error::{Error, Result};

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Bytes of a line read at a time (the text grows by at least this much
/// when it must).
const STEP: usize = 1 << 16;

/// One data line of the current chunk: a byte range of the text.
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) line: u64,
}

/// The line source: reads raw data lines, a chunk at a time.
pub(crate) struct Lines {
    input: Box<dyn BufRead + Send>,
    pub(crate) name: String,
    /// Lines consumed so far.
    pub(crate) line: u64,
    pub(crate) text: Vec<u8>,
    pub(crate) rows: Vec<Span>,
}

impl Lines {
    pub(crate) fn new(input: Box<dyn BufRead + Send>, name: String) -> Lines {
        Lines {
            input,
            name,
            line: 0,
            text: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Replaces the chunk with the next (at most) `max_rows` data lines.
    /// On error the complete lines read before it stay in the chunk.
    pub(crate) fn fill(&mut self, max_rows: usize) -> Result<()> {
        self.text.clear();
        self.rows.clear();
        while self.rows.len() < max_rows {
            let start = self.text.len();
            let n = self.read_line(start)?;
            if n == 0 {
                break;
            }
            self.line += 1;
            let mut end = self.text.len();
            if self.text[end - 1] == b'\n' {
                end -= 1;
            }
            if end > start && self.text[end - 1] == b'\r' {
                end -= 1;
            }
            // A UTF-8 byte order mark before the first line is skipped
            // (columns then count from after it).
            let first = if self.line == 1 && self.text[start..end].starts_with(BOM) {
                start + BOM.len()
            } else {
                start
            };
            if is_data_line(&self.text[first..end]) {
                self.rows.push(Span {
                    start: first,
                    end,
                    line: self.line,
                });
            } else {
                self.text.truncate(start);
            }
        }
        Ok(())
    }

    /// Appends the next line (its `\n` included, if any) to `text`, which
    /// holds `start` bytes of earlier lines; returns its length (0 at the
    /// end of the input). The text grows a step at a time, fallibly: a
    /// line never needs more than about its own length (plus what a
    /// doubling reserves, given back to the system untouched), and one
    /// that cannot be held is read on without being kept, to tell a line
    /// over the limit (its error) from one the memory cannot hold (an
    /// error saying so), never an abort.
    ///
    /// # Errors
    /// [`Error::Io`] for a read error, or a line the memory cannot hold;
    /// [`Error::Parse`] for a line over [`MAX_LINE_BYTES`].
    fn read_line(&mut self, start: usize) -> Result<usize> {
        let max = MAX_LINE_BYTES as u64;
        let mut len = 0u64;
        loop {
            if !self.room_for_a_step() {
                return Err(self.line_out_of_memory(start, len));
            }
            let step = (max + 1 - len).min(STEP as u64);
            let read = (&mut self.input)
                .take(step)
                .read_until(b'\n', &mut self.text);
            let n = match read {
                Ok(n) => n as u64,
                Err(e) => {
                    self.text.truncate(start);
                    return Err(io_error(&self.name, e, Some(self.line + 1)));
                }
            };
            len += n;
            if n == 0 || self.text.last() == Some(&b'\n') {
                return Ok(len as usize);
            }
            if len > max {
                return Err(self.line_too_long(&self.text[start..start + 64]));
            }
        }
    }

    /// Makes room for [`STEP`] more bytes of text, fallibly: doubling
    /// first, then an eighth more, then the step alone (a large block
    /// grows in place, without a second copy). False if the system
    /// refuses all three.
    fn room_for_a_step(&mut self) -> bool {
        let text = &mut self.text;
        if text.capacity() - text.len() >= STEP {
            return true;
        }
        text.try_reserve(STEP).is_ok()
            || text.try_reserve_exact(STEP.max(text.len() / 8)).is_ok()
            || text.try_reserve_exact(STEP).is_ok()
    }

    /// The error for line `self.line + 1`, of which `len` bytes are in
    /// `text` from `start`, when no more of it can be held: the rest is
    /// read without being kept, so that a line over the limit still gets
    /// the line error.
    fn line_out_of_memory(&mut self, start: usize, mut len: u64) -> Error {
        let max = MAX_LINE_BYTES as u64;
        let head = self.text[start..]
            .iter()
            .take(64)
            .copied()
            .collect::<Vec<u8>>();
        self.text.truncate(start);
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) => return io_error(&self.name, e, Some(self.line + 1)),
            };
            if buf.is_empty() {
                break;
            }
            let (take, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            self.input.consume(take);
            len += take as u64;
            if len > max {
                return self.line_too_long(&head);
            }
            if end {
                break;
            }
        }
        let message = format!(
            "line {}: could not allocate memory for a line of {len} bytes (at most 1 GiB are \
             accepted; this one is within that, the memory is not)",
            self.line + 1
        );
        let e = std::io::Error::new(std::io::ErrorKind::OutOfMemory, message.clone());
        Error::io_context(&self.name, e, message)
    }

    /// The [`Error::Parse`] for line `self.line + 1`, longer than
    /// [`MAX_LINE_BYTES`], which starts with `head`.
    fn line_too_long(&self, head: &[u8]) -> Error {
        Error::Parse {
            path: self.name.clone(),
            line: self.line + 1,
            column: 1,
            expected: "a line of at most 1 GiB (1073741824 bytes)",
            found: shorten(head),
        }
    }
}

/// Whitespace-separated tokens of a line up to its comment (a `#`
/// anywhere), with their byte offsets.
pub(crate) struct Tokens<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    pub(crate) fn new(line: &'a [u8]) -> Tokens<'a> {
        Tokens { line, pos: 0 }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = (usize, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<(usize, &'a [u8])> {
        let line = self.line;
        let mut pos = self.pos;
        while pos < line.len() && line[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let start = pos;
        while pos < line.len() && !line[pos].is_ascii_whitespace() && line[pos] != b'#' {
            pos += 1;
        }
        if pos < line.len() && line[pos] == b'#' {
            // The comment ends the line.
            self.line = &line[..pos];
        }
        self.pos = pos;
        (pos > start).then(|| (start, &line[start..pos]))
    }
}

/// True if the line holds a token before any comment.
fn is_data_line(line: &[u8]) -> bool {
    line.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b != b'#')
}

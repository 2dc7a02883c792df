//! The LIBSVM line source: raw data lines of a chunk, read sequentially,
//! and the tokenizer the parsers share.

use std::io::{BufRead, Read};

use super::{io_error, shorten, MAX_LINE_BYTES};
use crate::error::{Error, Result};

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

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
            let limit = MAX_LINE_BYTES as u64 + 1;
            let read = (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.text);
            let n = match read {
                Ok(n) => n,
                Err(e) => {
                    self.text.truncate(start);
                    return Err(io_error(&self.name, e, Some(self.line + 1)));
                }
            };
            if n == 0 {
                break;
            }
            self.line += 1;
            let mut end = self.text.len();
            if self.text[end - 1] == b'\n' {
                end -= 1;
            } else if n as u64 == limit {
                return Err(Error::Parse {
                    path: self.name.clone(),
                    line: self.line,
                    column: 1,
                    expected: "a line of at most MAX_LINE_BYTES (1 GiB)",
                    found: shorten(&self.text[start..start + 64]),
                });
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

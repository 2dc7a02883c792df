//! The CSV record source shared by schema inference and [`CsvReader`]:
//! the `csv` crate does the quoting; this module keeps the raw text of the
//! current chunk so that an error can name the exact line and byte column
//! of the offending field.
//!
//! [`CsvReader`]: super::csv::CsvReader

use std::io::{BufRead, Cursor, Read};

use ::csv::{ByteRecord, Reader, ReaderBuilder};
use hashbrown::HashMap;

use super::{io_error, shorten};
use crate::error::{Error, Result};

/// The header's column names joined for [`Error::MissingColumn`], cut to
/// about this many characters.
const HEADER_CHARS: usize = 200;

/// The longest CSV record (a line, or several within quotes) read: 255
/// MiB. A record is held twice while it is read (in the `csv` crate's
/// buffer, which doubles as it grows, without a limit of its own, and as
/// text kept here for the messages), so the LIBSVM reader's 1 GiB would
/// need up to 4 GiB; just under a power of two, the crate's buffer stops
/// at 256 MiB. A file with no line break would otherwise be held whole.
pub(crate) const MAX_RECORD_BYTES: u64 = (1 << 28) - (1 << 20);

/// Copies every byte the `csv` reader pulls, from `base` on, and stops a
/// record longer than [`MAX_RECORD_BYTES`].
struct Recorder {
    inner: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Stream offset where the record being read starts.
    record: u64,
}

impl Read for Recorder {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let held = self.base + self.buf.len() as u64 - self.record;
        if held > MAX_RECORD_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a record (line) longer than 255 MiB (267386880 bytes)",
            ));
        }
        let n = self.inner.read(out)?;
        // Fallibly: the text is kept for the messages' line and column.
        if self.buf.try_reserve(n).is_err() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!(
                    "could not allocate memory for a record of {} bytes",
                    held + n as u64
                ),
            ));
        }
        self.buf.extend_from_slice(&out[..n]);
        Ok(n)
    }
}

/// Which field of a record an error is about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At {
    /// The field with this index.
    Field(usize),
    /// Just past the record's last field.
    End,
}

/// A CSV stream with its header read, giving records a chunk at a time.
pub(crate) struct Table {
    pub(crate) name: String,
    reader: Reader<Recorder>,
    delimiter: u8,
    /// The header's column names.
    pub(crate) header: Vec<String>,
    /// Each name's index in `header`: looking a column up is linear in
    /// nothing (a header of 100,000 columns took a minute to check
    /// name by name).
    index: HashMap<String, usize>,
    header_record: ByteRecord,
    header_end: u64,
    /// The current chunk's records (only the first `len` are current).
    records: Vec<ByteRecord>,
    /// Stream offset just past each current record.
    ends: Vec<u64>,
    len: usize,
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// `input` without a UTF-8 byte order mark at its start (as the LIBSVM
/// reader skips it): a header written by a spreadsheet would otherwise
/// name its first column "\u{feff}label". Byte columns in messages then
/// count from after it.
fn skip_bom(mut input: Box<dyn BufRead + Send>) -> std::io::Result<Box<dyn BufRead + Send>> {
    let mut head = Vec::with_capacity(BOM.len());
    while head.len() < BOM.len() && BOM.starts_with(&head) {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let take = (BOM.len() - head.len()).min(buf.len());
        head.extend_from_slice(&buf[..take]);
        input.consume(take);
    }
    if head == BOM {
        return Ok(input);
    }
    Ok(Box::new(Cursor::new(head).chain(input)))
}

impl Table {
    /// Reads the header, after a UTF-8 byte order mark if there is one.
    /// The header needs unique UTF-8 names.
    pub(crate) fn new(
        input: Box<dyn BufRead + Send>,
        name: String,
        delimiter: u8,
    ) -> Result<Table> {
        if matches!(delimiter, b'"' | b'\n' | b'\r') {
            return Err(Error::BadArgument {
                what: "the CSV delimiter",
                expected: "a byte other than a quote or a line end",
            });
        }
        let input = skip_bom(input).map_err(|e| io_error(&name, e, Some(1)))?;
        let recorder = Recorder {
            inner: input,
            buf: Vec::new(),
            base: 0,
            record: 0,
        };
        let reader = ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .buffer_capacity(1 << 16)
            .from_reader(recorder);
        let mut table = Table {
            name,
            reader,
            delimiter,
            header: Vec::new(),
            index: HashMap::new(),
            header_record: ByteRecord::new(),
            header_end: 0,
            records: Vec::new(),
            ends: Vec::new(),
            len: 0,
        };
        let mut header = ByteRecord::new();
        let got = table
            .reader
            .read_byte_record(&mut header)
            .map_err(|e| table.csv_error(e, 1))?;
        if !got {
            return Err(Error::Parse {
                path: table.name.clone(),
                line: 1,
                column: 1,
                expected: "a header line naming the columns",
                found: "end of file".to_string(),
            });
        }
        table.header_end = table.reader.position().byte();
        table.header_record = header;
        for (i, field) in table.header_record.iter().enumerate() {
            let name = match std::str::from_utf8(field) {
                Ok(name) => name.to_string(),
                Err(_) => return Err(table.header_error(i, "a column name in UTF-8")),
            };
            if table.index.insert(name.clone(), i).is_some() {
                return Err(table.header_error(i, "a column name not used before in the header"));
            }
            table.header.push(name);
        }
        Ok(table)
    }

    /// Index of the header column `name`.
    pub(crate) fn column(&self, name: &str) -> Result<usize> {
        self.index
            .get(name)
            .copied()
            .ok_or_else(|| Error::MissingColumn {
                path: self.name.clone(),
                name: name.to_string(),
                header: header_list(&self.header),
            })
    }

    /// A [`Error::Parse`] about field `field` of the header.
    pub(crate) fn header_error(&self, field: usize, expected: &'static str) -> Error {
        let (line, column) = self.locate(&self.header_record, self.header_end, At::Field(field));
        Error::Parse {
            path: self.name.clone(),
            line,
            column,
            expected,
            found: shorten(&self.header_record[field]),
        }
    }

    /// Replaces the chunk with the next (at most) `max_rows` records. A
    /// record whose field count differs from the header's ends the chunk
    /// before it and is the returned error, as is an I/O error; the records
    /// before it stay in the chunk.
    pub(crate) fn fill(&mut self, max_rows: usize) -> Result<()> {
        let start = self.reader.position().byte();
        let recorder = self.reader.get_mut();
        recorder.buf.drain(..(start - recorder.base) as usize);
        recorder.base = start;
        self.len = 0;
        self.ends.clear();
        while self.len < max_rows {
            if self.records.len() == self.len {
                self.records.push(ByteRecord::new());
            }
            let line = self.reader.position().line();
            let at = self.reader.position().byte();
            self.reader.get_mut().record = at;
            let got = self.reader.read_byte_record(&mut self.records[self.len]);
            match got {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Err(self.csv_error(e, line)),
            }
            self.ends.push(self.reader.position().byte());
            let fields = self.records[self.len].len();
            if fields != self.header.len() {
                // A quote never closed takes the rest of the input into
                // one field: say so, where the quote opens (the record's
                // end is past the last line).
                if let Some(error) = self.unclosed_quote(self.len) {
                    return Err(error);
                }
                let at = if fields > self.header.len() {
                    At::Field(self.header.len())
                } else {
                    At::End
                };
                let (line, column) = self.locate_current(self.len, at);
                return Err(Error::Parse {
                    path: self.name.clone(),
                    line,
                    column,
                    expected: "as many fields as the header has",
                    found: format!("{fields} fields (the header has {})", self.header.len()),
                });
            }
            self.len += 1;
        }
        Ok(())
    }

    /// The error for current record `i` if it ends inside a quoted field
    /// (at the end of the input: the `csv` crate closes it there).
    fn unclosed_quote(&self, i: usize) -> Option<Error> {
        let record = &self.records[i];
        let pos = record.position()?;
        let recorder = self.reader.get_ref();
        let raw = &recorder.buf
            [(pos.byte() - recorder.base) as usize..(self.ends[i] - recorder.base) as usize];
        let open = unclosed_quote(raw, self.delimiter)?;
        let before = &raw[..open];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let newlines = before.iter().filter(|&&b| b == b'\n').count() as u64;
        Some(Error::Parse {
            path: self.name.clone(),
            line: pos.line() + newlines,
            column: open - line_start + 1,
            expected: "a closing quote (\") before the end of the input, for the field opened here",
            found: shorten(&raw[open..]),
        })
    }

    /// The current chunk's records.
    pub(crate) fn records(&self) -> &[ByteRecord] {
        &self.records[..self.len]
    }

    /// 1-based line where current record `i` starts.
    pub(crate) fn line_of(&self, i: usize) -> u64 {
        self.locate_current(i, At::Field(0)).0
    }

    /// A [`Error::Parse`] about field `field` of current record `i`.
    pub(crate) fn field_error(&self, i: usize, field: usize, expected: &'static str) -> Error {
        let (line, column) = self.locate_current(i, At::Field(field));
        Error::Parse {
            path: self.name.clone(),
            line,
            column,
            expected,
            found: shorten(&self.records[i][field]),
        }
    }

    fn locate_current(&self, i: usize, at: At) -> (u64, usize) {
        self.locate(&self.records[i], self.ends[i], at)
    }

    /// Line and byte column of `at` in `record`, which ends at stream
    /// offset `end`, by re-scanning its raw text with the `csv` crate's
    /// default quoting rules.
    fn locate(&self, record: &ByteRecord, end: u64, at: At) -> (u64, usize) {
        let pos = record
            .position()
            .expect("records read from a reader have a position");
        let recorder = self.reader.get_ref();
        let raw =
            &recorder.buf[(pos.byte() - recorder.base) as usize..(end - recorder.base) as usize];
        // The csv crate's position of a record is a line start, or the line
        // end of the previous record and blank lines it skipped; `scan`
        // skips those, so counting `\n` before the field gives its line.
        let offset = scan(raw, self.delimiter, at);
        let before = &raw[..offset];
        let newlines = before.iter().filter(|&&b| b == b'\n').count() as u64;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        (pos.line() + newlines, offset - line_start + 1)
    }

    fn csv_error(&self, e: ::csv::Error, line: u64) -> Error {
        match e.into_kind() {
            ::csv::ErrorKind::Io(e) => io_error(&self.name, e, Some(line)),
            other => io_error(
                &self.name,
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{other:?}")),
                Some(line),
            ),
        }
    }
}

/// Byte offset within `raw` (one record's text, possibly preceded by line
/// ends) where `at` starts.
fn scan(raw: &[u8], delimiter: u8, at: At) -> usize {
    let mut i = 0;
    while i < raw.len() && (raw[i] == b'\n' || raw[i] == b'\r') {
        i += 1;
    }
    let mut field = 0;
    loop {
        if let At::Field(f) = at {
            if f == field {
                return i;
            }
        }
        // One field from `i`.
        if raw.get(i) == Some(&b'"') {
            i += 1;
            while i < raw.len() {
                if raw[i] == b'"' {
                    if raw.get(i + 1) == Some(&b'"') {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                i += 1;
            }
        }
        while i < raw.len() && raw[i] != delimiter && raw[i] != b'\n' && raw[i] != b'\r' {
            i += 1;
        }
        if i < raw.len() && raw[i] == delimiter {
            i += 1;
            field += 1;
        } else {
            return i;
        }
    }
}

/// Byte offset within `raw` (one record's text, as for [`scan`]) of the
/// opening quote of a field that is never closed, if any.
fn unclosed_quote(raw: &[u8], delimiter: u8) -> Option<usize> {
    let mut i = 0;
    while i < raw.len() && (raw[i] == b'\n' || raw[i] == b'\r') {
        i += 1;
    }
    loop {
        if raw.get(i) == Some(&b'"') {
            let open = i;
            i += 1;
            loop {
                match raw.get(i) {
                    None => return Some(open),
                    Some(b'"') if raw.get(i + 1) == Some(&b'"') => i += 2,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
        }
        while i < raw.len() && raw[i] != delimiter && raw[i] != b'\n' && raw[i] != b'\r' {
            i += 1;
        }
        if i < raw.len() && raw[i] == delimiter {
            i += 1;
        } else {
            return None;
        }
    }
}

fn header_list(header: &[String]) -> String {
    let mut out = String::new();
    for (i, name) in header.iter().enumerate() {
        if out.chars().count() > HEADER_CHARS {
            out.push_str(&format!(", ... ({} more)", header.len() - i));
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("{name:?}"));
    }
    out
}

//! The footer of a dataset file the reader has already opened (so its
//! bytes are valid), split into its parts for the byte measurements
//! (`file_bytes.rs`, `entropy.rs`): grammar in `docs/FORMAT.md`.

#![allow(dead_code)]

use std::ops::Range;

/// A cursor over bytes the reader has already validated.
pub struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl Cursor<'_> {
    pub fn varint(&mut self) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = self.bytes[self.at];
            self.at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    }

    pub fn skip(&mut self, n: usize) -> &[u8] {
        self.at += n;
        &self.bytes[self.at - n..self.at]
    }

    /// A packed array: (header bytes, count, width, payload range).
    pub fn packed(&mut self) -> (u64, u64, u8, Range<usize>) {
        let start = self.at;
        let count = self.varint();
        let width = self.skip(1)[0];
        let payload = (count * width as u64).div_ceil(8) as usize;
        let header = (self.at - start) as u64;
        self.skip(payload);
        (header, count, width, self.at - payload..self.at)
    }
}

/// Where the footer's parts lie, as offsets into the file.
pub struct Footer {
    /// The footer (from its magic to the trailer).
    pub footer: Range<usize>,
    /// The block index entries.
    pub index: Range<usize>,
    /// The scaling section (empty when there is none).
    pub scaling: Range<usize>,
    /// Its factors equal to 1 (columns whose largest magnitude is 1,
    /// such as one-hot columns, under the default max-abs scaling).
    pub scaling_ones: u64,
    /// The shared section (empty when there is none).
    pub shared: Range<usize>,
    /// Per segment: its block count and its dictionary's bytes.
    pub segments: Vec<(u64, Range<usize>)>,
}

/// Splits the footer of `file`, a whole dataset file that opened.
pub fn parse(file: &[u8]) -> Footer {
    let trailer = &file[file.len() - 16..];
    let footer_at = u64::from_le_bytes(trailer[..8].try_into().expect("8")) as usize;
    let footer = &file[footer_at..file.len() - 16];
    let mut c = Cursor {
        bytes: footer,
        at: 4,
    };
    for _ in 0..3 {
        c.varint(); // n_cols, n_rows, nnz
    }
    c.skip(1); // format
    for _ in 0..4 {
        c.varint(); // page_rows, block_bytes, n_pages, payload_bytes
    }
    let schema_len = c.varint() as usize;
    c.skip(schema_len);
    let n_blocks = c.varint();
    let index_at = c.at;
    for _ in 0..n_blocks {
        for _ in 0..3 {
            c.varint();
        }
        c.skip(4);
    }
    let index = footer_at + index_at..footer_at + c.at;
    // The scaling section, if any, comes right after the index.
    let (scaling, scaling_ones) = if footer[c.at..].starts_with(b"SCAL") {
        let start = c.at;
        let version = footer[c.at + 4];
        c.skip(6); // tag, version, kind
        let n = c.varint() as usize;
        let ones = if version == 1 {
            // Every column's factor.
            let factors = c.skip(8 * n);
            factors
                .chunks(8)
                .filter(|f| f64::from_le_bytes((*f).try_into().expect("8")) == 1.0)
                .count() as u64
        } else {
            // Version 2: only the factors other than 1, each after its
            // column's gap.
            let listed = c.varint() as usize;
            for _ in 0..listed {
                c.varint();
                c.skip(8);
            }
            (n - listed) as u64
        };
        (footer_at + start..footer_at + c.at, ones)
    } else {
        (footer_at + c.at..footer_at + c.at, 0)
    };
    // The shared section is last: find where it parses to the footer's end.
    let shared_at = (c.at..footer.len().saturating_sub(5))
        .find(|&p| footer[p..].starts_with(b"SHRD") && parses_shared(&footer[p..]))
        .unwrap_or(footer.len());
    let mut segments = Vec::new();
    if shared_at < footer.len() {
        let mut c = Cursor {
            bytes: footer,
            at: shared_at + 5,
        };
        for _ in 0..c.varint() {
            let blocks = c.varint();
            let len = c.varint() as usize;
            let at = footer_at + c.at;
            c.skip(len);
            segments.push((blocks, at..at + len));
        }
    }
    Footer {
        footer: footer_at..file.len() - 16,
        index,
        scaling,
        scaling_ones,
        shared: footer_at + shared_at..file.len() - 16,
        segments,
    }
}

/// Whether `bytes` is a whole shared section (tag, version, segments).
fn parses_shared(bytes: &[u8]) -> bool {
    let mut at = 5;
    let varint = |at: &mut usize| -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = *bytes.get(*at)?;
            *at += 1;
            if shift > 63 {
                return None;
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
            shift += 7;
        }
    };
    let Some(n) = varint(&mut at) else {
        return false;
    };
    for _ in 0..n {
        let (Some(_), Some(len)) = (varint(&mut at), varint(&mut at)) else {
            return false;
        };
        at = at.saturating_add(len as usize);
    }
    at == bytes.len()
}

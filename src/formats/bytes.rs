//! The byte layout shared by the comparison-format pages (DEN, CSR, CVI,
//! DVI and the general-purpose codecs; `docs/FORMAT.md`, "Comparison-format
//! pages"): a header of magic, version and dimensions, then the format's
//! arrays as the paper defines them, plain little-endian `u32`s, `f64`s
//! and value ids of 1, 2 or 4 bytes.
//!
//! Reading is checked as in [`TocBatch::from_bytes`](crate::TocBatch):
//! every count is checked against the bytes that remain before anything
//! is allocated, then the contents (offsets, columns, ids) are validated
//! once, so the kernels never index out of range.

use super::FormatKind;
use crate::error::{Error, Result};
use crate::kernels::layout::Shape;
use crate::sparse::MAX_COLS;
use crate::wire::{varint_len, write_varint, Reader};

/// Version of every comparison-format page layout.
pub(super) const PAGE_VERSION: u8 = 1;

/// Most rows a page may declare (row offsets are `u32` in CSR and CVI).
pub(super) const MAX_ROWS: u64 = u32::MAX as u64;

/// The magic of each non-TOC page format.
const MAGICS: [(FormatKind, &[u8; 4]); 7] = [
    (FormatKind::Den, b"TDEN"),
    (FormatKind::Csr, b"TCSR"),
    (FormatKind::Cvi, b"TCVI"),
    (FormatKind::Dvi, b"TDVI"),
    (FormatKind::Snappy, b"TSNP"),
    (FormatKind::Gzip, b"TGZP"),
    (FormatKind::Lz4, b"TLZ4"),
];

/// The page magic of `kind` (a non-TOC format).
fn magic(kind: FormatKind) -> &'static [u8; 4] {
    MAGICS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, m)| *m)
        .expect("a comparison format")
}

/// Bytes of the header of a page of `shape` with the format's `extra`
/// header fields.
pub(super) fn header_len(shape: Shape, extra: &[u64]) -> usize {
    5 + varint_len(shape.n_rows as u64)
        + varint_len(shape.n_cols as u64)
        + extra.iter().map(|&v| varint_len(v)).sum::<usize>()
}

/// Appends the header: magic, version, `n_rows`, `n_cols`, then `extra`.
pub(super) fn write_header(out: &mut Vec<u8>, kind: FormatKind, shape: Shape, extra: &[u64]) {
    out.extend_from_slice(magic(kind));
    out.push(PAGE_VERSION);
    write_varint(out, shape.n_rows as u64);
    write_varint(out, shape.n_cols as u64);
    extra.iter().for_each(|&v| write_varint(out, v));
}

/// Checks the magic and version of a `kind` page and reads its shape;
/// the reader is left after `n_cols`.
///
/// # Errors
/// [`Error::BadMagic`] for an unknown magic, [`Error::WrongFormat`] for
/// the magic of another format, [`Error::UnsupportedVersion`], and the
/// errors of reading the two varints (`n_rows <= 2^32 - 1`,
/// `n_cols <= 2^32`).
pub(super) fn read_header(bytes: &[u8], kind: FormatKind) -> Result<(Reader<'_>, Shape)> {
    let mut r = Reader::new(bytes);
    let found = r.magic_bytes(magic(kind))?;
    if found != *magic(kind) {
        let other = MAGICS
            .iter()
            .find(|(_, m)| **m == found)
            .map(|(k, _)| k.name())
            .or((found == crate::codec::MAGIC).then_some("TOC"));
        return Err(match other {
            Some(other) => Error::WrongFormat {
                expected: kind.name(),
                found: other,
            },
            None => Error::BadMagic {
                expected: *magic(kind),
                found: found.to_vec(),
            },
        });
    }
    let version = r.u8("version")?;
    if version != PAGE_VERSION {
        return Err(Error::UnsupportedVersion {
            what: "page format",
            found: version,
            supported: PAGE_VERSION,
        });
    }
    let n_rows = r.varint_max("n_rows", MAX_ROWS)? as usize;
    let n_cols = r.varint_max("n_cols", MAX_COLS as u64)? as usize;
    Ok((r, Shape { n_rows, n_cols }))
}

/// Fails unless `r` is at the end of its input.
pub(super) fn finish(r: &Reader<'_>) -> Result<()> {
    match r.remaining() {
        0 => Ok(()),
        len => Err(Error::TrailingBytes {
            what: "the page's last array",
            offset: r.offset(),
            len,
        }),
    }
}

/// Fails if `shape` has more rows than a page may declare (so that every
/// batch an encoder accepts loads back).
pub(super) fn check_rows(shape: Shape) -> Result<()> {
    if shape.n_rows as u64 > MAX_ROWS {
        return Err(Error::TooLarge {
            what: "rows of a page",
            value: shape.n_rows as u64,
            max: MAX_ROWS,
        });
    }
    Ok(())
}

/// Reads `n_rows + 1` row offsets and checks that they start at 0 and
/// never decrease; the last is the number of entries.
///
/// # Errors
/// [`Error::Truncated`] or [`Error::BadOffsets`].
pub(super) fn read_offsets(r: &mut Reader<'_>, n_rows: usize) -> Result<Vec<u32>> {
    let offsets = r.u32s(n_rows as u64 + 1, "row offsets")?;
    if offsets[0] != 0 {
        return Err(Error::BadOffsets {
            index: 0,
            offset: offsets[0].into(),
            expected: "0",
        });
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::BadOffsets {
            index: i + 1,
            offset: offsets[i + 1].into(),
            expected: "non-decreasing",
        });
    }
    Ok(offsets)
}

/// Checks that every row's columns (delimited by `offsets`, already
/// checked by [`read_offsets`] to end at `cols.len()`) are below `n_cols`
/// and strictly ascending.
///
/// # Errors
/// [`Error::ColumnOutOfRange`] or [`Error::ColumnsNotAscending`].
pub(super) fn check_columns(offsets: &[u32], cols: &[u32], n_cols: usize) -> Result<()> {
    for (row, w) in offsets.windows(2).enumerate() {
        let cols = &cols[w[0] as usize..w[1] as usize];
        for (position, &col) in cols.iter().enumerate() {
            if col as usize >= n_cols {
                return Err(Error::ColumnOutOfRange {
                    row,
                    position,
                    col: col.into(),
                    n_cols: n_cols as u64,
                });
            }
            if position > 0 && cols[position - 1] >= col {
                return Err(Error::ColumnsNotAscending {
                    row,
                    position,
                    prev: cols[position - 1].into(),
                    col: col.into(),
                });
            }
        }
    }
    Ok(())
}

/// A CSR or CVI page read up to its values, checked.
pub(super) struct Structure<'a> {
    /// After the column ids.
    pub(super) r: Reader<'a>,
    pub(super) shape: Shape,
    /// CVI's dictionary length (0 for CSR).
    pub(super) dict_len: u64,
    pub(super) offsets: Vec<u32>,
    pub(super) cols: Vec<u32>,
}

impl<'a> Structure<'a> {
    /// Reads the header (CVI: with the dictionary length), the row offsets
    /// and the columns, checked.
    pub(super) fn read(bytes: &'a [u8], kind: FormatKind) -> Result<Self> {
        let (mut r, shape) = read_header(bytes, kind)?;
        let dict_len = match kind {
            FormatKind::Cvi => r.varint("dictionary length")?,
            _ => 0,
        };
        let offsets = read_offsets(&mut r, shape.n_rows)?;
        let nnz = *offsets.last().expect("n_rows + 1 offsets");
        let cols = r.u32s(nnz.into(), "column ids")?;
        check_columns(&offsets, &cols, shape.n_cols)?;
        Ok(Structure {
            r,
            shape,
            dict_len,
            offsets,
            cols,
        })
    }
}

/// Checks that every one of `values` (stored `what`s, the first at byte
/// `offset`) is finite: a NaN would make every score it touches NaN.
///
/// # Errors
/// [`Error::InvalidNumber`] naming the first that is not, and its byte.
pub(super) fn check_finite(values: &[f64], what: &str, offset: usize) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(Error::InvalidNumber {
            what: format!("{what} {i} (at byte {})", offset + 8 * i),
            value: values[i],
            expected: "a finite number",
        }),
        None => Ok(()),
    }
}

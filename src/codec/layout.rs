//! The section layout of an encoded batch (grammar in `docs/FORMAT.md`).
//!
//! [`parse`] walks the header and every section once, checking structure
//! only: magic, version, flags, varints, widths, that every payload lies
//! inside the blob, padding bits, and no trailing bytes. It allocates
//! nothing. The contents of the sections (ids in range, ascending columns)
//! are checked afterwards by the tree builder in `tree.rs`.

use crate::error::{Error, Result};
use crate::sparse::MAX_COLS;
use crate::wire::{read_packed, unzigzag, Packed, Reader, MAX_COUNT};

/// The four bytes every encoded batch starts with.
pub const MAGIC: [u8; 4] = *b"TOCB";
/// The format version this build writes (and the highest it reads).
pub const VERSION: u8 = 1;

/// Flag: the batch carries a prefix tree (first layer plus codes).
pub(crate) const FLAG_TREE: u8 = 1;
/// Flag: values are indexed into a dictionary.
pub(crate) const FLAG_INDEXED: u8 = 2;
const KNOWN_FLAGS: u8 = FLAG_TREE | FLAG_INDEXED;

/// Dictionary kind: raw little-endian `f64` values.
pub(crate) const DICT_F64: u8 = 0;
/// Dictionary kind: integers, stored as `base` plus packed offsets.
pub(crate) const DICT_INT: u8 = 1;

/// How the values of the pairs are stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Values {
    /// One raw `f64` per pair, starting at this byte offset.
    Inline { start: usize },
    /// A packed value id per pair, into a dictionary.
    Indexed { ids: Packed, dict: Dict },
}

/// The value dictionary of an indexed batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Dict {
    /// `len` raw `f64` values starting at byte `start`.
    Float { start: usize, len: usize },
    /// Value `i` is `base + offsets[i]`, exactly representable as `f64`.
    Int { base: i64, offsets: Packed },
}

impl Dict {
    pub(crate) fn len(&self) -> usize {
        match self {
            Dict::Float { len, .. } => *len,
            Dict::Int { offsets, .. } => offsets.count,
        }
    }
}

/// Where everything sits in a structurally valid blob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Layout {
    pub(crate) flags: u8,
    pub(crate) n_cols: usize,
    /// Per row: number of codes (tree batches) or pairs (flat batches).
    pub(crate) row_lengths: Packed,
    /// Column id of each pair: the first layer `I` for tree batches, every
    /// entry in row order for flat batches.
    pub(crate) pair_cols: Packed,
    pub(crate) values: Values,
    /// The encoded table `D`, all rows concatenated (tree batches only).
    pub(crate) codes: Option<Packed>,
}

impl Layout {
    pub(crate) fn n_rows(&self) -> usize {
        self.row_lengths.count
    }

    pub(crate) fn n_pairs(&self) -> usize {
        self.pair_cols.count
    }

    pub(crate) fn has_tree(&self) -> bool {
        self.flags & FLAG_TREE != 0
    }
}

/// Checks the structure of `blob` and returns its layout.
pub(crate) fn parse(blob: &[u8]) -> Result<Layout> {
    let mut r = Reader::new(blob);
    r.magic(&MAGIC)?;
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(Error::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    let flags_at = r.offset();
    let flags = r.u8("flags")?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(Error::UnknownFlags {
            offset: flags_at,
            flags,
        });
    }
    let n_cols = r.varint_max("n_cols", MAX_COLS as u64)? as usize;
    let row_lengths = read_packed(&mut r, "row lengths", false)?;
    let pair_cols = read_packed(&mut r, "pair columns", false)?;
    let values = if flags & FLAG_INDEXED != 0 {
        // Ids may have width 0 (a one-value dictionary): their count must
        // equal the pair count, which the byte-backed columns bound.
        let ids = read_packed(&mut r, "value ids", true)?;
        if ids.count != pair_cols.count {
            return Err(Error::LengthMismatch {
                what: "value ids (one per pair)",
                expected: pair_cols.count as u64,
                found: ids.count as u64,
            });
        }
        let kind_at = r.offset();
        let dict = match r.u8("dictionary kind")? {
            DICT_F64 => {
                let len = r.varint_max("dictionary length", MAX_COUNT)?;
                let start = r.offset();
                r.bytes(len * 8, "dictionary values")?;
                Dict::Float {
                    start,
                    len: len as usize,
                }
            }
            DICT_INT => {
                let base = unzigzag(r.varint("dictionary base")?);
                let offsets = read_packed(&mut r, "dictionary offsets", false)?;
                Dict::Int { base, offsets }
            }
            kind => {
                return Err(Error::FieldOutOfRange {
                    what: "dictionary kind",
                    offset: kind_at,
                    value: kind as u64,
                    max: DICT_INT as u64,
                })
            }
        };
        Values::Indexed { ids, dict }
    } else {
        let start = r.offset();
        r.bytes(pair_cols.count as u64 * 8, "inline values")?;
        Values::Inline { start }
    };
    let codes = if flags & FLAG_TREE != 0 {
        Some(read_packed(&mut r, "codes", false)?)
    } else {
        None
    };
    if r.remaining() > 0 {
        return Err(Error::TrailingBytes {
            offset: r.offset(),
            len: r.remaining(),
        });
    }
    Ok(Layout {
        flags,
        n_cols,
        row_lengths,
        pair_cols,
        values,
        codes,
    })
}

//! The section layout of an encoded batch (grammar in `docs/FORMAT.md`).
//!
//! [`parse`] walks the header and every section once, checking structure
//! only: magic, version, flags, varints, widths, that every payload lies
//! inside the blob, padding bits, and no trailing bytes. It allocates
//! nothing. The contents of the sections (ids in range, ascending columns)
//! are checked afterwards by the tree builder in `tree.rs` and `pairs.rs`.
//!
//! Version 2 adds the `GAPS` flag (escape-coded column gaps) and the
//! scaled-integer dictionary; a version-1 blob may use neither. Version 3
//! is a page coded against its segment's shared dictionary; a dataset
//! file of version 4 stores those pages in a compact form without the
//! batch header or the counts ([`parse_compact`], given the page
//! header's row count).

use super::dict_layout::{grouped_groups, read_grouped, read_scaled};
use super::gaps::count_packed_elements;
use crate::error::{Error, Result};
use crate::sparse::MAX_COLS;
use crate::wire::{read_packed, read_packed_of, unzigzag, Packed, Reader, MAX_COUNT};

/// The four bytes every encoded batch starts with.
pub const MAGIC: [u8; 4] = *b"TOCB";
/// The highest format version this build writes and reads. The encoder
/// writes the lowest version that can express a batch: a batch that uses
/// no version-2 feature is a version-1 blob, readable by older builds.
/// Version 3 is a page of a dataset file coded against its segment's
/// shared dictionary (`shared.rs`), never a self-contained batch (a
/// version-4 file stores such pages compact, with no version byte:
/// `COMPACT_PAGE`).
pub const VERSION: u8 = 3;

/// Flag: the batch carries a prefix tree (first layer plus codes).
pub(crate) const FLAG_TREE: u8 = 1;
/// Flag: values are indexed into a dictionary.
pub(crate) const FLAG_INDEXED: u8 = 2;
/// Flag (version 2, only with `FLAG_INDEXED`): pair columns are
/// escape-coded gaps (see `gaps.rs`): for a tree batch, between the columns
/// of consecutive first-layer pairs (sorted by column); for a flat batch,
/// between consecutive columns of a row.
pub(crate) const FLAG_GAPS: u8 = 4;

/// Flag (version 2, only in the pairs of a shared dictionary of a dataset
/// file of version 8, with `FLAG_TREE` and `FLAG_INDEXED`): the value ids
/// are escape-coded gaps between the ids of consecutive pairs of one
/// column (each column's first pair: its id), so a column's ascending
/// ids cost a few bits each.
pub(crate) const FLAG_ID_GAPS: u8 = 16;

/// Flag (version 3, with `FLAG_TREE` and nothing else): the page's
/// codes refer to its segment's shared dictionary; the page stores row
/// lengths and codes only.
pub(crate) const FLAG_SHARED: u8 = 8;

/// First byte of a compact page (a page of a dataset file of version 4
/// coded against its segment's dictionary): `COMPACT_PAGE` then the row
/// lengths and the codes, each as a width byte and its payload, with no
/// count (`docs/FORMAT.md`). A self-contained page starts with
/// [`MAGIC`], whose first byte is another.
pub(crate) const COMPACT_PAGE: u8 = 1;
/// The version [`Layout::version`] reports for a compact page: that of
/// the dataset files that hold them.
pub(crate) const COMPACT_VERSION: u8 = 4;
/// First byte of a page of row ids (dataset file version 7): a compact
/// page whose rows each name one of a table of the page's distinct rows
/// (`row_ids.rs`).
pub(crate) const ROW_IDS_PAGE: u8 = 2;
/// The version [`Layout::version`] reports for a page of row ids.
pub(crate) const ROW_IDS_VERSION: u8 = 7;

/// Flags defined by each version (index: version).
const KNOWN_FLAGS: [u8; 4] = [
    0,
    FLAG_TREE | FLAG_INDEXED,
    FLAG_TREE | FLAG_INDEXED | FLAG_GAPS,
    FLAG_TREE | FLAG_SHARED,
];

/// Dictionary kind: raw little-endian `f64` values.
pub(crate) const DICT_F64: u8 = 0;
/// Dictionary kind: integers, stored as `base` plus packed offsets.
pub(crate) const DICT_INT: u8 = 1;
/// Dictionary kind (version 2): scaled integers, `(base + prefix sums of
/// escape-coded deltas) / 10^exponent`.
pub(crate) const DICT_SCALED: u8 = 2;
/// Dictionary kind (the pairs of a shared dictionary of a dataset file of
/// version 8, [`parse_pairs`]): groups of scaled integers, each with its
/// own exponent, then raw `f64` values (`docs/FORMAT.md`).
pub(crate) const DICT_GROUPED: u8 = 3;
pub(crate) use super::dict_layout::MAX_EXPONENT;

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
    /// Value `i` is `(base + deltas[0] + ... + deltas[i]) / 10^exponent`;
    /// `deltas` is escape-coded, so its element count is known only once
    /// it is decoded.
    Scaled {
        exponent: u8,
        base: i64,
        deltas: Packed,
    },
    /// `groups` groups from byte `start`, each as [`Dict::Scaled`] stores
    /// its exponent, base and deltas (exponents strictly ascending; read
    /// again by [`grouped_groups`]), their values in stored order, then
    /// `raw_len` raw `f64` values from byte `raw_start`.
    Grouped {
        groups: u8,
        start: usize,
        raw_start: usize,
        raw_len: usize,
    },
}

/// Where everything sits in a structurally valid blob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Layout {
    /// The blob's version byte ([`COMPACT_VERSION`] for a compact page).
    pub(crate) version: u8,
    pub(crate) flags: u8,
    pub(crate) n_cols: usize,
    /// Pairs: first-layer pairs (tree batches) or entries (flat batches).
    /// Equal to `pair_cols.count` unless the columns are escape-coded.
    pub(crate) n_pairs: usize,
    /// Per row: number of codes (tree batches) or pairs (flat batches).
    pub(crate) row_lengths: Packed,
    /// Column id of each pair: the first layer `I` for tree batches, every
    /// entry in row order for flat batches.
    pub(crate) pair_cols: Packed,
    pub(crate) values: Values,
    /// The encoded table `D`, all rows concatenated (tree batches only).
    /// With `row_ids`, the distinct rows' codes.
    pub(crate) codes: Option<Packed>,
    /// A page of row ids: `row_lengths` and `codes` are its distinct
    /// rows, and each row of the page names one of them.
    pub(crate) row_ids: Option<RowIds>,
}

/// Where a page's rows name its distinct rows (see [`ROW_IDS_PAGE`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RowIds {
    /// One id per row of the page, each below `row_lengths.count`.
    pub(crate) ids: Packed,
    /// The codes of the page's rows, as the ids repeat the distinct
    /// rows' codes.
    pub(crate) codes: usize,
}

impl Layout {
    pub(crate) fn n_rows(&self) -> usize {
        match self.row_ids {
            Some(ids) => ids.ids.count,
            None => self.row_lengths.count,
        }
    }

    pub(crate) fn n_pairs(&self) -> usize {
        self.n_pairs
    }

    pub(crate) fn has_tree(&self) -> bool {
        self.flags & FLAG_TREE != 0
    }

    /// Whether the codes refer to a segment's shared dictionary (a
    /// version-3 page: no pairs of its own).
    pub(crate) fn is_shared(&self) -> bool {
        self.flags & FLAG_SHARED != 0
    }

    /// Whether pair columns are escape-coded gaps.
    pub(crate) fn has_gaps(&self) -> bool {
        self.flags & FLAG_GAPS != 0
    }

    /// Whether value ids are escape-coded gaps within each column.
    pub(crate) fn has_id_gaps(&self) -> bool {
        self.flags & FLAG_ID_GAPS != 0
    }
}

/// Checks the structure of `blob` and returns its layout.
pub(crate) fn parse(blob: &[u8]) -> Result<Layout> {
    parse_in(blob, false)
}

/// As [`parse`], for the pairs of a shared dictionary, whose value
/// dictionary may also be grouped ([`DICT_GROUPED`]; what the dataset
/// reader allows only in a file of version 8 or later).
pub(crate) fn parse_pairs(blob: &[u8]) -> Result<Layout> {
    parse_in(blob, true)
}

fn parse_in(blob: &[u8], grouped_allowed: bool) -> Result<Layout> {
    let mut r = Reader::new(blob);
    r.magic(&MAGIC)?;
    let version = r.u8("version")?;
    if version == 0 || version > VERSION {
        return Err(Error::UnsupportedVersion {
            what: "TOC batch format",
            found: version,
            supported: VERSION,
        });
    }
    let flags_at = r.offset();
    let flags = r.u8("flags")?;
    // GAPS without INDEXED is undefined: the pair count comes from the ids.
    let undefined_combination = flags & FLAG_GAPS != 0 && flags & FLAG_INDEXED == 0;
    // A version-3 page has exactly one form.
    let partial_shared = version == 3 && flags != FLAG_TREE | FLAG_SHARED;
    // Id gaps: a dictionary's pairs (a tree batch of version 2) only.
    let id_gaps = flags & FLAG_ID_GAPS != 0;
    let known = KNOWN_FLAGS[version as usize]
        | if grouped_allowed && version == 2 {
            FLAG_ID_GAPS
        } else {
            0
        };
    let id_gaps_misplaced =
        id_gaps && flags & (FLAG_TREE | FLAG_INDEXED) != FLAG_TREE | FLAG_INDEXED;
    if flags & !known != 0 || undefined_combination || partial_shared || id_gaps_misplaced {
        return Err(Error::UnknownFlags {
            offset: flags_at,
            flags,
        });
    }
    let n_cols = r.varint_max("n_cols", MAX_COLS as u64)? as usize;
    let row_lengths = read_packed(&mut r, "row lengths", false)?;
    if flags & FLAG_SHARED != 0 {
        let codes = read_packed(&mut r, "codes", false)?;
        return shared_layout(&r, version, flags, n_cols, row_lengths, codes);
    }
    let pair_cols = read_packed(&mut r, "pair columns", false)?;
    let gaps = flags & FLAG_GAPS != 0;
    let mut n_pairs = pair_cols.count;
    let values = if flags & FLAG_INDEXED != 0 {
        // Ids may have width 0 (a one-value dictionary): their count must
        // equal the pair count (at most the column symbols when those are
        // escape-coded), which the byte-backed columns bound.
        let ids = read_packed(&mut r, "value ids", !id_gaps)?;
        // Escape-coded ids hold as many pairs as they have elements.
        let n_ids = if id_gaps {
            count_packed_elements(ids.payload(r.blob()), ids.width, ids.count)
        } else {
            ids.count
        };
        if n_ids != pair_cols.count && !(gaps && n_ids <= pair_cols.count) {
            return Err(Error::LengthMismatch {
                what: if gaps {
                    "value ids (at most one per column symbol)"
                } else {
                    "value ids (one per pair)"
                },
                expected: pair_cols.count as u64,
                found: n_ids as u64,
            });
        }
        n_pairs = n_ids;
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
            DICT_SCALED if version >= 2 => {
                let (exponent, base, deltas) = read_scaled(&mut r, None)?;
                Dict::Scaled {
                    exponent,
                    base,
                    deltas,
                }
            }
            DICT_GROUPED if version >= 2 && grouped_allowed => {
                let (groups, start, raw_start, raw_len) = read_grouped(&mut r)?;
                Dict::Grouped {
                    groups,
                    start,
                    raw_start,
                    raw_len,
                }
            }
            kind => {
                let max = match version {
                    1 => DICT_INT,
                    _ if grouped_allowed => DICT_GROUPED,
                    _ => DICT_SCALED,
                };
                return Err(Error::FieldOutOfRange {
                    what: "dictionary kind",
                    offset: kind_at,
                    value: kind as u64,
                    max: max as u64,
                });
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
            what: "the batch's last section (its codes, or pairs of a flat batch)",
            offset: r.offset(),
            len: r.remaining(),
        });
    }
    Ok(Layout {
        version,
        flags,
        n_cols,
        n_pairs,
        row_lengths,
        pair_cols,
        values,
        codes,
        row_ids: None,
    })
}

/// Checks the structure of a compact page of `rows` rows (the page
/// header's count) whose segment dictionary has `n_cols` columns, and
/// returns its layout, that of a version-3 page with the counts the
/// page does not store: `rows` row lengths, and as many codes as they
/// add up to. Allocates nothing; the content rules are the version-3
/// page's (`shared_tree.rs`, `check.rs`).
pub(crate) fn parse_compact(
    blob: &[u8],
    rows: u64,
    n_cols: usize,
    row_ids_allowed: bool,
) -> Result<Layout> {
    let mut r = Reader::new(blob);
    let form = r.u8("page form")?;
    if form != COMPACT_PAGE && form != ROW_IDS_PAGE {
        return Err(Error::WrongFormat {
            expected: if row_ids_allowed {
                "a compact page (first byte 1 or 2) or a self-contained TOC batch (\"TOCB\")"
            } else {
                "a compact page (first byte 1) or a self-contained TOC batch (\"TOCB\")"
            },
            found: "a page of another first byte",
        });
    }
    check_compact_rows(rows)?;
    // A page of row ids is parsed by `row_ids.rs` (`super::compact_layout`).
    if form == ROW_IDS_PAGE {
        return Err(Error::WrongFormat {
            expected: "a compact page of its rows (first byte 1)",
            found: "a page of row ids (first byte 2)",
        });
    }
    let (row_lengths, codes) =
        read_rows(&mut r, blob, rows, "row lengths (one per row of the page)")?;
    let flags = FLAG_TREE | FLAG_SHARED;
    shared_layout(&r, COMPACT_VERSION, flags, n_cols, row_lengths, codes)
}

/// A compact page's row count (the page header's) as a packed count.
pub(super) fn check_compact_rows(rows: u64) -> Result<()> {
    if rows > MAX_COUNT {
        return Err(Error::TooLarge {
            what: "rows of a compact page",
            value: rows,
            max: MAX_COUNT,
        });
    }
    Ok(())
}

/// The row lengths of `rows` rows (`what`) and their codes, as a compact
/// page stores them: each a width byte and its payload, the codes' count
/// the sum of the lengths (taken in place, bounded by the input: every
/// code takes at least one bit).
pub(super) fn read_rows(
    r: &mut Reader<'_>,
    blob: &[u8],
    rows: u64,
    what: &'static str,
) -> Result<(Packed, Packed)> {
    let row_lengths = read_packed_of(r, what, rows, false)?;
    let n_codes = sum_packed(
        row_lengths.payload(blob),
        row_lengths.width,
        row_lengths.count,
    );
    if n_codes > MAX_COUNT {
        return Err(Error::TooLarge {
            what: "codes of a compact page (the sum of its row lengths)",
            value: n_codes,
            max: MAX_COUNT,
        });
    }
    let codes = read_packed_of(r, "codes (the sum of the row lengths)", n_codes, false)?;
    Ok((row_lengths, codes))
}

/// The layout of a page coded against a shared dictionary (a version-3
/// batch or a compact page), whose row lengths and codes `r` has just
/// read: nothing may follow them; no pairs or values of its own.
pub(super) fn shared_layout(
    r: &Reader<'_>,
    version: u8,
    flags: u8,
    n_cols: usize,
    row_lengths: Packed,
    codes: Packed,
) -> Result<Layout> {
    if r.remaining() > 0 {
        return Err(Error::TrailingBytes {
            what: "the page's codes",
            offset: r.offset(),
            len: r.remaining(),
        });
    }
    let none = Packed {
        count: 0,
        width: 0,
        start: r.offset(),
        len: 0,
    };
    Ok(Layout {
        version,
        flags,
        n_cols,
        n_pairs: 0,
        row_lengths,
        pair_cols: none,
        values: Values::Inline { start: r.offset() },
        codes: Some(codes),
        row_ids: None,
    })
}

/// The sum of `count` values of `width` bits packed in `payload`, which
/// must be exactly `payload_len(count, width)` bytes with zero padding
/// bits (as `read_packed_of` has checked), without unpacking them
/// anywhere: a compact page's code count is the sum of its row lengths,
/// taken on every decode. At most `2^32 - 1` values below `2^32`: no
/// overflow.
pub(super) fn sum_packed(payload: &[u8], width: u8, count: usize) -> u64 {
    let w = width as usize;
    if w == 0 || count == 0 {
        return 0;
    }
    if 8 % w == 0 {
        // Widths 1, 2, 4 and 8 never cross a byte: the sum is, for each
        // bit of a field, its weight times the set bits at that place
        // (padding bits are zero, so whole words may be counted).
        let ones = match w {
            1 => u64::MAX,
            2 => 0x5555_5555_5555_5555,
            4 => 0x1111_1111_1111_1111,
            _ => 0x0101_0101_0101_0101,
        };
        let fields = |x: u64| -> u64 {
            (0..w)
                .map(|b| ((x & (ones << b)).count_ones() as u64) << b)
                .sum()
        };
        let chunks = payload.chunks_exact(8);
        let mut last = [0u8; 8];
        last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        let whole: u64 = chunks
            .map(|c| fields(u64::from_le_bytes(c.try_into().expect("8 bytes"))))
            .sum();
        return whole + fields(u64::from_le_bytes(last));
    }
    let mask = (1u64 << w) - 1;
    let mut sum = 0u64;
    let mut i = 0;
    // One unaligned 64-bit load a value while 8 bytes remain (a field
    // starts at most 7 bits into its first byte and spans at most 32).
    while i < count {
        let bit = i * w;
        let at = bit / 8;
        let Some(bytes) = payload.get(at..at + 8) else {
            break;
        };
        sum += (u64::from_le_bytes(bytes.try_into().expect("8 bytes")) >> (bit % 8)) & mask;
        i += 1;
    }
    if i < count {
        // The last values lie in the last 7 bytes or fewer: copied once
        // into a zero-padded word pair, read there the same way.
        let base = i * w / 8;
        let tail = &payload[base..];
        let mut padded = [0u8; 16];
        padded[..tail.len()].copy_from_slice(tail);
        for j in i..count {
            let bit = j * w - 8 * base;
            let word = &padded[bit / 8..bit / 8 + 8];
            sum += (u64::from_le_bytes(word.try_into().expect("8 bytes")) >> (bit % 8)) & mask;
        }
    }
    sum
}

/// Whether `blob` is in the compact page form (by its first byte; a
/// batch starts with [`MAGIC`]).
pub(crate) fn is_compact(blob: &[u8]) -> bool {
    blob.first() != Some(&MAGIC[0])
}

/// The packed arrays of a structurally valid blob, in stored order, as
/// (section name, array): what the bit unpacker meets on every decode
/// (measured by `examples/unpack.rs`).
pub(crate) fn packed_arrays(blob: &[u8], layout: &Layout) -> Vec<(&'static str, Packed)> {
    let mut arrays = vec![("row lengths", layout.row_lengths)];
    if !layout.is_shared() {
        arrays.push(("pair columns", layout.pair_cols));
    }
    if let Values::Indexed { ids, dict } = layout.values {
        arrays.push(("value ids", ids));
        match dict {
            Dict::Int { offsets, .. } => arrays.push(("dictionary offsets", offsets)),
            Dict::Scaled { deltas, .. } => arrays.push(("dictionary deltas", deltas)),
            Dict::Grouped { groups, start, .. } => arrays.extend(
                grouped_groups(blob, groups, start)
                    .map(|(_, _, deltas)| ("dictionary deltas", deltas)),
            ),
            Dict::Float { .. } => {}
        }
    }
    if let Some(codes) = layout.codes {
        arrays.push(("codes", codes));
    }
    if let Some(row_ids) = layout.row_ids {
        arrays.push(("row ids", row_ids.ids));
    }
    arrays
}

#[cfg(test)]
mod tests {
    use super::sum_packed;
    use crate::wire::{read_packed, unpack_into, write_packed, Reader};

    #[test]
    fn sum_packed_is_the_sum_of_the_unpacked_values_at_every_width() {
        for width in 0..=32u8 {
            let max = if width == 0 {
                0
            } else {
                u32::MAX >> (32 - width)
            };
            for count in [0usize, 1, 2, 7, 8, 9, 63, 64, 65, 200] {
                let values: Vec<u32> = (0..count)
                    .map(|i| match i % 3 {
                        0 => max,
                        1 => (i as u32).wrapping_mul(2_654_435_761) & max,
                        _ => 0,
                    })
                    .collect();
                let mut buf = Vec::new();
                write_packed(&mut buf, &values, width);
                let p = read_packed(&mut Reader::new(&buf), "test", true).unwrap();
                let mut out = Vec::new();
                unpack_into(p.payload(&buf), p.width, p.count, &mut out);
                let sum: u64 = out.iter().map(|&v| v as u64).sum();
                assert_eq!(
                    sum_packed(p.payload(&buf), width, count),
                    sum,
                    "width {width} count {count}"
                );
            }
        }
    }
}

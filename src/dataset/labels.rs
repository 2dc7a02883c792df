//! Labels of a page, value-indexed: a dictionary of the distinct labels
//! (by bits) and one bit-packed id per row. Classification labels cost a
//! bit or two per row instead of eight bytes, which matters next to TOC
//! pages of a few bytes per row.
//!
//! ```text
//! labels = dict_len:varint f64le{dict_len} ids:packed(count = rows, width >= 1)
//! ```

use crate::error::{Error, Result};
use crate::formats::index_values;
use crate::wire::{
    bits_needed, f64_at, read_packed, unpack_into, write_f64s, write_packed, write_varint, Reader,
};

/// Appends the labels section for `labels` (at most one page of rows).
pub(crate) fn write_labels(labels: &[f64], out: &mut Vec<u8>) -> Result<()> {
    let (ids, dict) = index_values(labels, false)?;
    write_varint(out, dict.len() as u64);
    write_f64s(out, &dict);
    let width = if ids.is_empty() {
        0
    } else {
        bits_needed(dict.len() as u32 - 1).max(1)
    };
    write_packed(out, &ids, width);
    Ok(())
}

/// Reads a labels section of `rows` labels into `out` (cleared first).
pub(crate) fn read_labels(
    r: &mut Reader<'_>,
    rows: usize,
    out: &mut Vec<f64>,
    scratch: &mut Vec<u32>,
) -> Result<()> {
    let dict_len = r.varint_max("label dictionary length", u32::MAX as u64)?;
    let dict_at = r.offset();
    let dict = r.bytes(dict_len * 8, "label dictionary")?;
    // A NaN or infinite label is no label: rejected with the file, as the
    // text readers reject it at its line.
    for i in 0..dict_len as usize {
        let label = f64_at(dict, 8 * i);
        if !label.is_finite() {
            return Err(Error::InvalidNumber {
                what: format!("label dictionary entry {i} (at byte {})", dict_at + 8 * i),
                value: label,
                expected: "a finite number",
            });
        }
    }
    let ids = read_packed(r, "label ids", false)?;
    if ids.count != rows {
        return Err(Error::LengthMismatch {
            what: "label ids (one per row)",
            expected: rows as u64,
            found: ids.count as u64,
        });
    }
    unpack_into(ids.payload(r.blob()), ids.width, ids.count, scratch);
    out.clear();
    for &id in scratch.iter() {
        if id as u64 >= dict_len {
            return Err(Error::FieldOutOfRange {
                what: "label id",
                offset: dict_at,
                value: id as u64,
                max: dict_len.saturating_sub(1),
            });
        }
        out.push(f64_at(dict, id as usize * 8));
    }
    Ok(())
}

//! Labels of a page, value-indexed: a dictionary of the distinct labels
//! and one bit-packed id per row. Classification labels cost a bit or two
//! per row instead of eight bytes, which matters next to TOC pages of a
//! few bytes per row.
//!
//! ```text
//! version 1:  labels = dict_len:varint f64le{dict_len} ids:packed(count = rows, width >= 1)
//! version 2:  labels = 0x00 (the version-1 form)
//!                    | 0x01 n:varint value:zigzag-varint{n} ids:bits{rows * width}
//! ```
//!
//! The version-2 integer form stores a dictionary of integer labels as
//! varints (a byte each for the usual class numbers, instead of eight)
//! and the ids without a header: the count is the page's rows and the
//! width follows from `n`. A page of 50 rows of two classes takes 11
//! bytes instead of 26 (a third of a byte per row; census, flights3m: 11%
//! and 6% of the file in version 1).

use crate::error::{Error, Result};
use crate::formats::index_values;
use crate::wire::{
    bits_needed, f64_at, payload_len, read_packed, unpack_into, unzigzag, write_f64s, write_packed,
    write_varint, zigzag, Reader,
};

/// Largest magnitude of an integer label in the integer form: every
/// integer up to `2^53` is an `f64` exactly.
const MAX_INT_LABEL: i64 = 1 << 53;

/// Labels section form: an `f64` dictionary (kind byte 0 in version 2).
const KIND_FLOAT: u8 = 0;
/// Labels section form (version 2): an integer dictionary as varints.
const KIND_INT: u8 = 1;

/// How a file's pages store their labels: set by the file's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelsForm {
    /// Version 1: the `f64` dictionary form only, no kind byte.
    Float,
    /// Version 2: a kind byte, then the `f64` or the integer form.
    Tagged,
}

impl LabelsForm {
    /// The form of a file of `version` (already checked to be known).
    pub(crate) fn of_version(version: u8) -> LabelsForm {
        if version >= 2 {
            LabelsForm::Tagged
        } else {
            LabelsForm::Float
        }
    }
}

/// The width of the ids of a dictionary of `n` labels (at least one bit,
/// so that every row takes a bit: what bounds a block's rows by its
/// bytes).
fn id_width(n: usize) -> u8 {
    bits_needed(n.saturating_sub(1) as u32).max(1)
}

/// `label` as an integer when it is one exactly (`-0.0` is not: it would
/// come back as `+0.0`).
fn as_int(label: f64) -> Option<i64> {
    let i = label as i64;
    (i.abs() <= MAX_INT_LABEL && (i as f64).to_bits() == label.to_bits()).then_some(i)
}

/// Appends the labels section for `labels` (at most one page of rows) in
/// `form`: in version 2, the integer form whenever every label is an
/// integer.
pub(crate) fn write_labels(labels: &[f64], form: LabelsForm, out: &mut Vec<u8>) -> Result<()> {
    let (ids, dict) = index_values(labels, false)?;
    let ints: Option<Vec<i64>> = match form {
        LabelsForm::Tagged => dict.iter().map(|&l| as_int(l)).collect(),
        LabelsForm::Float => None,
    };
    if let Some(mut ints) = ints {
        // Strictly ascending, as readers require (one encoding per page).
        let first_seen = ints.clone();
        ints.sort_unstable();
        let ids: Vec<u32> = ids
            .iter()
            .map(|&id| {
                let value = first_seen[id as usize];
                ints.binary_search(&value).expect("a label of the page") as u32
            })
            .collect();
        out.push(KIND_INT);
        write_varint(out, ints.len() as u64);
        for &i in &ints {
            write_varint(out, zigzag(i));
        }
        let mut packed = Vec::new();
        write_packed(&mut packed, &ids, id_width(ints.len()));
        // The payload only: the count is the rows, the width follows.
        let header = crate::wire::varint_len(ids.len() as u64) + 1;
        out.extend_from_slice(&packed[header..]);
        return Ok(());
    }
    if form == LabelsForm::Tagged {
        out.push(KIND_FLOAT);
    }
    write_varint(out, dict.len() as u64);
    write_f64s(out, &dict);
    let width = if ids.is_empty() {
        0
    } else {
        id_width(dict.len())
    };
    write_packed(out, &ids, width);
    Ok(())
}

/// Reads a labels section of `rows` labels in `form` into `out` (cleared
/// first). Allocates at most `rows` labels and ids, and a dictionary
/// backed by the section's bytes.
pub(crate) fn read_labels(
    r: &mut Reader<'_>,
    rows: usize,
    form: LabelsForm,
    out: &mut Vec<f64>,
    scratch: &mut Vec<u32>,
) -> Result<()> {
    if form == LabelsForm::Tagged {
        let kind_at = r.offset();
        match r.u8("labels kind")? {
            KIND_FLOAT => {}
            KIND_INT => return read_int_labels(r, rows, out, scratch),
            kind => {
                return Err(Error::FieldOutOfRange {
                    what: "labels kind",
                    offset: kind_at,
                    value: kind as u64,
                    max: KIND_INT as u64,
                })
            }
        }
    }
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

/// The integer form, after its kind byte: `n` (at least 1 unless the page
/// is empty, at most its rows) strictly ascending integers of at most
/// `2^53` in magnitude, then `rows` ids of `id_width(n)` bits, zero
/// padding bits.
fn read_int_labels(
    r: &mut Reader<'_>,
    rows: usize,
    out: &mut Vec<f64>,
    scratch: &mut Vec<u32>,
) -> Result<()> {
    let n_at = r.offset();
    let n = r.varint_max("integer label dictionary length", rows as u64)? as usize;
    if n == 0 && rows > 0 {
        return Err(Error::FieldOutOfRange {
            what: "integer label dictionary length (a page with rows has labels)",
            offset: n_at,
            value: 0,
            max: rows as u64,
        });
    }
    // `n <= rows`, and each entry takes at least a byte: bounded twice.
    let mut dict: Vec<f64> = Vec::with_capacity(n.min(r.remaining()));
    let mut previous: Option<i64> = None;
    for _ in 0..n {
        let at = r.offset();
        let raw = r.varint("integer label")?;
        let value = unzigzag(raw);
        if value.unsigned_abs() > MAX_INT_LABEL as u64 {
            return Err(Error::FieldOutOfRange {
                what: "integer label (magnitude at most 2^53)",
                offset: at,
                value: value.unsigned_abs(),
                max: MAX_INT_LABEL as u64,
            });
        }
        if previous.is_some_and(|p| value <= p) {
            return Err(Error::FieldOutOfRange {
                what: "integer label (the dictionary is strictly ascending)",
                offset: at,
                value: raw,
                max: previous.map_or(0, zigzag),
            });
        }
        previous = Some(value);
        dict.push(value as f64);
    }
    let width = id_width(n);
    let ids_at = r.offset();
    let len = payload_len(rows as u64, width);
    let payload = r.bytes(len, "label ids")?;
    let used_bits = (rows as u64 * width as u64) % 8;
    if used_bits != 0 && payload[payload.len() - 1] >> used_bits != 0 {
        return Err(Error::NonZeroPadding {
            what: "label ids",
            offset: ids_at + payload.len() - 1,
        });
    }
    unpack_into(payload, width, rows, scratch);
    out.clear();
    for &id in scratch.iter() {
        let Some(&label) = dict.get(id as usize) else {
            return Err(Error::FieldOutOfRange {
                what: "label id",
                offset: ids_at,
                value: id as u64,
                max: n.saturating_sub(1) as u64,
            });
        };
        out.push(label);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(labels: &[f64], form: LabelsForm) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_labels(labels, form, &mut bytes).unwrap();
        let mut r = Reader::new(&bytes);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        read_labels(&mut r, labels.len(), form, &mut out, &mut scratch).unwrap();
        assert_eq!(r.remaining(), 0);
        let bits = |v: &[f64]| v.iter().map(|l| l.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(labels));
        bytes
    }

    #[test]
    fn two_classes_of_fifty_rows_take_eleven_bytes() {
        let labels: Vec<f64> = (0..50)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert_eq!(round_trip(&labels, LabelsForm::Tagged).len(), 11);
        assert_eq!(round_trip(&labels, LabelsForm::Float).len(), 26);
    }

    #[test]
    fn non_integers_negative_zero_and_huge_labels_keep_the_float_form() {
        for odd in [0.5, -0.0, 1e300, (1u64 << 54) as f64] {
            let labels = [1.0, odd, 2.0];
            let bytes = round_trip(&labels, LabelsForm::Tagged);
            assert_eq!(bytes[0], KIND_FLOAT, "{odd}");
        }
        let bytes = round_trip(&[-(1i64 << 53) as f64, 0.0, 7.0], LabelsForm::Tagged);
        assert_eq!(bytes[0], KIND_INT);
        round_trip(&[], LabelsForm::Tagged);
        round_trip(&[3.0], LabelsForm::Tagged);
    }

    fn read(bytes: &[u8], rows: usize) -> Result<Vec<f64>> {
        let mut r = Reader::new(bytes);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        read_labels(&mut r, rows, LabelsForm::Tagged, &mut out, &mut scratch).map(|()| out)
    }

    #[test]
    fn hostile_integer_forms_are_errors() {
        // Unknown kind.
        assert!(matches!(read(&[7], 1), Err(Error::FieldOutOfRange { .. })));
        // More dictionary entries than rows.
        assert!(read(&[1, 3, 0, 2, 4, 0], 2).is_err());
        // An empty dictionary for a page with rows.
        assert!(read(&[1, 0, 0], 1).is_err());
        // Not strictly ascending.
        assert!(read(&[1, 2, 4, 4, 0b01], 2).is_err());
        assert!(read(&[1, 2, 4, 2, 0b01], 2).is_err());
        // Beyond 2^53.
        let mut big = vec![1, 1];
        write_varint(&mut big, zigzag((1i64 << 53) + 1));
        big.push(0);
        assert!(read(&big, 1).is_err());
        // An id past the dictionary: three entries, width 2, id 3.
        assert!(matches!(
            read(&[1, 3, 0, 2, 4, 0b11], 3),
            Err(Error::FieldOutOfRange { .. })
        ));
        // Padding bits set (one row of width 1).
        assert!(matches!(
            read(&[1, 1, 0, 0b10], 1),
            Err(Error::NonZeroPadding { .. })
        ));
        // Ids cut short.
        assert!(matches!(read(&[1, 1, 0], 9), Err(Error::Truncated { .. })));
        // The valid ones read.
        assert_eq!(read(&[1, 2, 1, 2, 0b10], 2).unwrap(), vec![-1.0, 1.0]);
    }
}

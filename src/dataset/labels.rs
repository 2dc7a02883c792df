//! Labels of a page, value-indexed: a dictionary of the distinct labels
//! and one bit-packed id per row. Classification labels cost a bit or two
//! per row instead of eight bytes, which matters next to TOC pages of a
//! few bytes per row.
//!
//! ```text
//! version 1:  labels = dict_len:varint f64le{dict_len} ids:packed(count = rows, width >= 1)
//! version 2:  labels = 0x00 (the version-1 form)
//!                    | 0x01 n:varint value:zigzag-varint{n} ids:bits{rows * width}
//! version 8:         | 0x02 exponent:u8 base:zigzag-varint width:u8 offsets:bits{rows * width}
//! ```
//!
//! The version-2 integer form stores a dictionary of integer labels as
//! varints (a byte each for the usual class numbers, instead of eight)
//! and the ids without a header: the count is the page's rows and the
//! width follows from `n`. A page of 50 rows of two classes takes 11
//! bytes instead of 26 (a third of a byte per row; census, flights3m: 11%
//! and 6% of the file in version 1).
//!
//! The version-8 scaled form stores each label as `(base + offset) /
//! 10^exponent` with an offset of `width` bits per row and no dictionary:
//! where a page's labels are mostly distinct (birthdays' daily counts of
//! 1 to 1,779, countymurders' 7-digit rates), a dictionary costs a
//! varint or eight bytes per row on top of the ids. The writer takes
//! whichever form is smallest, exactly.

use crate::codec::{decimal_exponent, scaled_value, MAX_EXPONENT};
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
/// Labels section form (version 8): scaled integers, an offset per row.
const KIND_SCALED: u8 = 2;

/// How a file's pages store their labels: set by the file's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelsForm {
    /// Version 1: the `f64` dictionary form only, no kind byte.
    Float,
    /// Version 2: a kind byte, then the `f64` or the integer form.
    Tagged,
    /// Version 8: as `Tagged`, or the scaled form.
    Scaled,
}

impl LabelsForm {
    /// The form of a file of `version` (already checked to be known).
    pub(crate) fn of_version(version: u8) -> LabelsForm {
        match version {
            v if v >= super::SCALED_LABELS_VERSION => LabelsForm::Scaled,
            v if v >= 2 => LabelsForm::Tagged,
            _ => LabelsForm::Float,
        }
    }

    /// Whether the section starts with a kind byte.
    pub(crate) fn tagged(self) -> bool {
        self != LabelsForm::Float
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
/// `form`: from version 2, the integer form whenever every label is an
/// integer; from version 8, the scaled form where it is smaller.
pub(crate) fn write_labels(labels: &[f64], form: LabelsForm, out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    write_indexed_labels(labels, form, out)?;
    if form == LabelsForm::Scaled {
        if let Some(scaled) = scaled_labels(labels) {
            if scaled.len() < out.len() - start {
                out.truncate(start);
                out.extend_from_slice(&scaled);
            }
        }
    }
    Ok(())
}

/// The scaled form of `labels` (a page with rows, every label a decimal
/// whose offsets from the smallest fit 32 bits at the largest exponent
/// among them), or `None`.
fn scaled_labels(labels: &[f64]) -> Option<Vec<u8>> {
    let mut exponent = 0;
    for &l in labels {
        exponent = exponent.max(decimal_exponent(l)?);
    }
    let mut ints = Vec::with_capacity(labels.len());
    for &l in labels {
        let n = (l * crate::codec::POW10[exponent as usize]).round();
        if n.abs() > MAX_INT_LABEL as f64
            || scaled_value(n as i64, exponent).to_bits() != l.to_bits()
        {
            return None;
        }
        ints.push(n as i64);
    }
    let base = *ints.iter().min()?;
    let range = ints.iter().max()? - base;
    if range > u32::MAX as i64 {
        return None;
    }
    let width = bits_needed(range as u32).max(1);
    let offsets: Vec<u32> = ints.iter().map(|&n| (n - base) as u32).collect();
    let mut out = vec![KIND_SCALED, exponent];
    write_varint(&mut out, zigzag(base));
    // The width and payload only: the count is the rows.
    crate::wire::write_packed_payload(&mut out, &offsets, width);
    Some(out)
}

/// The dictionary forms: integer (from version 2) or `f64`.
fn write_indexed_labels(labels: &[f64], form: LabelsForm, out: &mut Vec<u8>) -> Result<()> {
    let (ids, dict) = index_values(labels, false)?;
    let ints: Option<Vec<i64>> = match form {
        LabelsForm::Tagged | LabelsForm::Scaled => dict.iter().map(|&l| as_int(l)).collect(),
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
    if form.tagged() {
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
    if form.tagged() {
        let kind_at = r.offset();
        match r.u8("labels kind")? {
            KIND_FLOAT => {}
            KIND_INT => return read_int_labels(r, rows, out, scratch),
            KIND_SCALED if form == LabelsForm::Scaled => {
                return read_scaled_labels(r, rows, out, scratch)
            }
            kind => {
                return Err(Error::FieldOutOfRange {
                    what: "labels kind",
                    offset: kind_at,
                    value: kind as u64,
                    max: if form == LabelsForm::Scaled {
                        KIND_SCALED
                    } else {
                        KIND_INT
                    } as u64,
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

/// The scaled form, after its kind byte: an exponent of at most 22, a
/// base, a width of 1 to 32 bits, then `rows` offsets of that width (zero
/// padding bits), each `base + offset` at most `2^53` in magnitude.
fn read_scaled_labels(
    r: &mut Reader<'_>,
    rows: usize,
    out: &mut Vec<f64>,
    scratch: &mut Vec<u32>,
) -> Result<()> {
    let exponent_at = r.offset();
    let exponent = r.u8("label exponent")?;
    if exponent > MAX_EXPONENT {
        return Err(Error::FieldOutOfRange {
            what: "label exponent",
            offset: exponent_at,
            value: exponent as u64,
            max: MAX_EXPONENT as u64,
        });
    }
    let base_at = r.offset();
    let base = unzigzag(r.varint("label base")?);
    let width_at = r.offset();
    let width = r.u8("label offset width")?;
    if width == 0 || width > 32 {
        return Err(Error::BadWidth {
            what: "label offsets (1 to 32 bits)",
            offset: width_at,
            width,
        });
    }
    let offsets_at = r.offset();
    let payload = r.bytes(payload_len(rows as u64, width), "label offsets")?;
    let used_bits = (rows as u64 * width as u64) % 8;
    if used_bits != 0 && payload[payload.len() - 1] >> used_bits != 0 {
        return Err(Error::NonZeroPadding {
            what: "label offsets",
            offset: offsets_at + payload.len() - 1,
        });
    }
    unpack_into(payload, width, rows, scratch);
    out.clear();
    // Every offset is below 2^width: when the whole range is within 2^53,
    // no label needs its own check.
    let top = base.saturating_add((1i64 << width) - 1);
    if base.unsigned_abs() <= MAX_INT_LABEL as u64 && top.unsigned_abs() <= MAX_INT_LABEL as u64 {
        if exponent == 0 {
            out.extend(scratch.iter().map(|&o| (base + o as i64) as f64));
        } else {
            out.extend(
                scratch
                    .iter()
                    .map(|&o| scaled_value(base + o as i64, exponent)),
            );
        }
        return Ok(());
    }
    for &o in scratch.iter() {
        let n = base.saturating_add(o as i64);
        if n.unsigned_abs() > MAX_INT_LABEL as u64 {
            return Err(Error::FieldOutOfRange {
                what: "label base + offset (magnitude at most 2^53)",
                offset: base_at,
                value: n.unsigned_abs(),
                max: MAX_INT_LABEL as u64,
            });
        }
        out.push(scaled_value(n, exponent));
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
        read_in(bytes, rows, LabelsForm::Tagged)
    }

    fn read_in(bytes: &[u8], rows: usize, form: LabelsForm) -> Result<Vec<f64>> {
        let mut r = Reader::new(bytes);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        read_labels(&mut r, rows, form, &mut out, &mut scratch)?;
        if r.remaining() > 0 {
            return Err(Error::TrailingBytes {
                what: "labels",
                offset: r.offset(),
                len: r.remaining(),
            });
        }
        Ok(out)
    }

    #[test]
    fn distinct_counts_and_decimals_take_the_scaled_form() {
        // Birthdays' daily counts: 50 distinct integers of 1 to 1,779.
        let counts: Vec<f64> = (0..50).map(|i| (1 + i * 37 % 1779) as f64).collect();
        let scaled = round_trip(&counts, LabelsForm::Scaled);
        assert_eq!(scaled[0], KIND_SCALED);
        let tagged = round_trip(&counts, LabelsForm::Tagged);
        assert!(
            scaled.len() * 3 < tagged.len() * 2,
            "{} {}",
            scaled.len(),
            tagged.len()
        );
        // Seven-digit rates, negative decimals, zero.
        // (As parsed from text: a difference of doubles is rarely one.)
        let rates: Vec<f64> = (0..50)
            .map(|i| format!("{:.7}", 0.6208096 - i as f64 * 0.0312345))
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(round_trip(&rates, LabelsForm::Scaled)[0], KIND_SCALED);
        assert_eq!(
            round_trip(&[0.0, -1.5, 2.25], LabelsForm::Scaled)[0],
            KIND_SCALED
        );
        // Two classes keep the integer form (ties go to it); -0.0, 1/3
        // with counts (past 2^53 at 16 digits) and huge values are no
        // scaled labels.
        let classes: Vec<f64> = (0..50).map(|i| (i % 2) as f64).collect();
        assert_eq!(round_trip(&classes, LabelsForm::Scaled)[0], KIND_INT);
        for odd in [-0.0, 1.0 / 3.0, 1e300, f64::from_bits(1)] {
            let labels = [1000.0, odd, 2.0, 3.0, 4.0];
            assert_ne!(
                round_trip(&labels, LabelsForm::Scaled)[0],
                KIND_SCALED,
                "{odd}"
            );
        }
        // Offsets past 32 bits: the dictionary forms.
        let wide = [0.0, 5e9, 1.0];
        assert_ne!(round_trip(&wide, LabelsForm::Scaled)[0], KIND_SCALED);
    }

    #[test]
    fn hostile_scaled_forms_are_errors() {
        let scaled = LabelsForm::Scaled;
        // Exponent 2, base 5 (zigzag 10), width 3, offsets 0, 7, 3 from
        // the low bits: 0.05, 0.12, 0.08.
        let ok = [2, 2, 10, 3, 0b11_111_000, 0b0];
        assert_eq!(read_in(&ok, 3, scaled).unwrap(), vec![0.05, 0.12, 0.08]);
        // Kind 2 before version 8.
        assert!(matches!(
            read_in(&ok, 3, LabelsForm::Tagged),
            Err(Error::FieldOutOfRange {
                value: 2,
                max: 1,
                ..
            })
        ));
        let cases: [(&str, Vec<u8>, usize); 6] = [
            ("exponent 23", vec![2, 23, 10, 3, 0, 0], 3),
            ("width 0", vec![2, 2, 10, 0], 3),
            (
                "width 33",
                vec![2, 2, 10, 33, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                3,
            ),
            ("padding bits", vec![2, 2, 10, 3, 0b11_111_000, 0b10], 3),
            ("cut short", vec![2, 2, 10, 3, 0b11_111_000], 3),
            ("trailing byte", vec![2, 2, 10, 3, 0b11_111_000, 0, 0], 3),
        ];
        for (name, bytes, rows) in cases {
            assert!(read_in(&bytes, rows, scaled).is_err(), "{name}");
        }
        // base + offset past 2^53.
        let mut big = vec![2, 0];
        write_varint(&mut big, zigzag(1 << 53));
        big.extend_from_slice(&[1, 0b1]);
        assert!(matches!(
            read_in(&big, 1, scaled),
            Err(Error::FieldOutOfRange { .. })
        ));
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

//! The structure of scaled value dictionaries and of the grouped ones
//! (`docs/FORMAT.md`, "Scaled dictionary" and "Grouped dictionary"):
//! read by `layout::parse`, which allocates nothing; the values
//! are resolved by `pairs.rs` (checked) and `trusted.rs`.

use crate::error::{Error, Result};
use crate::wire::{read_packed, unzigzag, Packed, Reader, MAX_COUNT};

/// Largest exponent of a scaled dictionary: `10^22` is the largest power
/// of ten an `f64` holds exactly.
pub(crate) const MAX_EXPONENT: u8 = 22;
/// Most groups of a grouped dictionary: one per exponent.
pub(crate) const MAX_GROUPS: u8 = MAX_EXPONENT + 1;

/// Reads a scaled dictionary's (or a group's) exponent, at most
/// [`MAX_EXPONENT`] and above `after` when given, its base and its deltas.
pub(super) fn read_scaled(r: &mut Reader<'_>, after: Option<u8>) -> Result<(u8, i64, Packed)> {
    let exponent_at = r.offset();
    let exponent = r.u8("dictionary exponent")?;
    if exponent > MAX_EXPONENT {
        return Err(Error::FieldOutOfRange {
            what: "dictionary exponent",
            offset: exponent_at,
            value: exponent as u64,
            max: MAX_EXPONENT as u64,
        });
    }
    if after.is_some_and(|previous| exponent <= previous) {
        return Err(Error::FieldOutOfRange {
            what: "a group's exponent (groups in strictly ascending exponents): not above the \
                   group before it",
            offset: exponent_at,
            value: exponent as u64,
            max: MAX_EXPONENT as u64,
        });
    }
    let base = unzigzag(r.varint("dictionary base")?);
    let deltas = read_packed(r, "dictionary deltas", false)?;
    Ok((exponent, base, deltas))
}

/// A grouped dictionary's structure, after its kind byte: the group
/// count (at most [`MAX_GROUPS`]), the groups, and the raw values.
/// Returns the group count, the groups' first byte, and the raw values'
/// first byte and count.
pub(super) fn read_grouped(r: &mut Reader<'_>) -> Result<(u8, usize, usize, usize)> {
    let groups_at = r.offset();
    let groups = r.u8("dictionary groups")?;
    if groups > MAX_GROUPS {
        return Err(Error::FieldOutOfRange {
            what: "dictionary groups",
            offset: groups_at,
            value: groups as u64,
            max: MAX_GROUPS as u64,
        });
    }
    let start = r.offset();
    let mut previous = None;
    for _ in 0..groups {
        previous = Some(read_scaled(r, previous)?.0);
    }
    let raw_len = r.varint_max("dictionary raw values", MAX_COUNT)?;
    let raw_start = r.offset();
    r.bytes(raw_len * 8, "dictionary raw values")?;
    Ok((groups, start, raw_start, raw_len as usize))
}

/// The groups of a grouped dictionary whose structure `layout::parse_pairs`
/// has checked: `(exponent, base, deltas)` of each, in stored order.
pub(crate) fn grouped_groups(
    blob: &[u8],
    groups: u8,
    start: usize,
) -> impl Iterator<Item = (u8, i64, Packed)> + '_ {
    let mut r = Reader::at(blob, start);
    (0..groups).map_while(move |_| read_scaled(&mut r, None).ok())
}

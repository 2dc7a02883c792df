//! Value indexing, shared by CVI, DVI and the dataset file's labels: one
//! id per value into a dictionary of the distinct values (by bits), the
//! ids stored at the narrowest of 1, 2 or 4 bytes that holds them
//! (`docs/FORMAT.md`, "Comparison-format pages").

use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use crate::error::{Error, Result};
use crate::wire::{write_u32s, Reader};

/// Value ids at the narrowest width that holds the largest id.
#[derive(Debug, Clone)]
pub(super) enum Ids {
    /// Dictionaries of at most 256 entries.
    U8(Vec<u8>),
    /// Dictionaries of at most 65,536 entries.
    U16(Vec<u16>),
    /// Larger dictionaries.
    U32(Vec<u32>),
}

impl Ids {
    /// Stores `ids`, all below `dict_len`, at the narrowest width.
    pub(super) fn narrow(ids: Vec<u32>, dict_len: usize) -> Self {
        if dict_len <= 1 << 8 {
            Ids::U8(ids.into_iter().map(|i| i as u8).collect())
        } else if dict_len <= 1 << 16 {
            Ids::U16(ids.into_iter().map(|i| i as u16).collect())
        } else {
            Ids::U32(ids)
        }
    }

    /// Heap bytes the ids hold (their allocation, not their length).
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Ids::U8(ids) => ids.capacity(),
            Ids::U16(ids) => 2 * ids.capacity(),
            Ids::U32(ids) => 4 * ids.capacity(),
        }
    }

    /// Bytes the ids take.
    pub(super) fn byte_len(&self) -> usize {
        match self {
            Ids::U8(ids) => ids.len(),
            Ids::U16(ids) => 2 * ids.len(),
            Ids::U32(ids) => 4 * ids.len(),
        }
    }
}

/// Runs `$body` with `$slice` bound to the ids (a `&Vec` of the stored
/// width) and `$val` to a closure looking an id up in `$dict`.
macro_rules! with_ids {
    ($ids:expr, $dict:expr, $slice:ident, $val:ident => $body:expr) => {{
        let dict: &[f64] = $dict;
        match $ids {
            $crate::formats::ids::Ids::U8(ids) => {
                let $slice: &[u8] = ids;
                let $val = |i: u8| dict[usize::from(i)];
                $body
            }
            $crate::formats::ids::Ids::U16(ids) => {
                let $slice: &[u16] = ids;
                let $val = |i: u16| dict[usize::from(i)];
                $body
            }
            $crate::formats::ids::Ids::U32(ids) => {
                let $slice: &[u32] = ids;
                let $val = |i: u32| dict[i as usize];
                $body
            }
        }
    }};
}
pub(super) use with_ids;

/// Value indexing: one id per value and the dictionary of distinct values
/// (by bits) in order of first appearance. With `reserve_zero`, id 0 is
/// `0.0` and the values get ids from 1.
///
/// # Errors
/// [`Error::TooLarge`] if the ids do not fit in `u32`.
pub(crate) fn index_values(values: &[f64], reserve_zero: bool) -> Result<(Vec<u32>, Vec<f64>)> {
    let mut dict = if reserve_zero { vec![0.0] } else { Vec::new() };
    let mut map: HashMap<u64, u32> = HashMap::new();
    let mut ids = Vec::with_capacity(values.len());
    for &v in values {
        let id = match map.entry(v.to_bits()) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let id = u32::try_from(dict.len()).map_err(|_| Error::TooLarge {
                    what: "distinct values (u32 value ids)",
                    value: dict.len() as u64 + 1,
                    max: u32::MAX as u64 + 1 - u64::from(reserve_zero),
                })?;
                dict.push(v);
                *e.insert(id)
            }
        };
        ids.push(id);
    }
    Ok((ids, dict))
}

/// Appends the ids at their stored width, little-endian.
pub(super) fn write_ids(out: &mut Vec<u8>, ids: &Ids) {
    match ids {
        Ids::U8(ids) => out.extend_from_slice(ids),
        Ids::U16(ids) => ids
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
        Ids::U32(ids) => write_u32s(out, ids),
    }
}

/// Reads `count` value ids at the width [`Ids::narrow`] picks for a
/// dictionary of `dict_len` entries, each of which must be below
/// `dict_len`.
///
/// # Errors
/// [`Error::Truncated`], or [`Error::ValueIdOutOfRange`] naming the first
/// bad id by its position.
pub(super) fn read_ids(
    r: &mut Reader<'_>,
    count: u64,
    dict_len: u64,
    what: &'static str,
) -> Result<Ids> {
    let check = |position: usize, id: u64| {
        if id >= dict_len {
            return Err(Error::ValueIdOutOfRange {
                position,
                id,
                dict_len,
            });
        }
        Ok(())
    };
    let ids = if dict_len <= 1 << 8 {
        let ids = r.bytes(count, what)?.to_vec();
        ids.iter()
            .enumerate()
            .try_for_each(|(i, &id)| check(i, id.into()))?;
        Ids::U8(ids)
    } else if dict_len <= 1 << 16 {
        let ids: Vec<u16> = r
            .bytes(count.saturating_mul(2), what)?
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        ids.iter()
            .enumerate()
            .try_for_each(|(i, &id)| check(i, id.into()))?;
        Ids::U16(ids)
    } else {
        let ids = r.u32s(count, what)?;
        ids.iter()
            .enumerate()
            .try_for_each(|(i, &id)| check(i, id.into()))?;
        Ids::U32(ids)
    };
    Ok(ids)
}

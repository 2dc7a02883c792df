//! The model of an entropy-coded stream: which values have a slot, their
//! frequencies in `2^L`, the escape's, and the decode table built from
//! them. Read as hostile input: every count is bounded by `2^L` before
//! anything is allocated.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::wire::{write_varint, Reader};

/// Largest precision `L` of a model: `2^12` slots of 8 bytes, a 32 KiB
/// decode table (an L1 data cache on the machines measured).
pub const MAX_PRECISION: u8 = 12;

/// Flag in [`Slot::bias`] marking the escape's slots.
pub(super) const ESCAPE: u16 = 1 << 15;

/// One entry of the decode table: the value of the slot's symbol, the
/// symbol's frequency and the slot's offset within the symbol's range
/// (with [`ESCAPE`] set for the escape).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(super) struct Slot {
    pub(super) value: u32,
    pub(super) freq: u16,
    pub(super) bias: u16,
}

/// How [`AnsModel::learn`] picks the values that get a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearnOptions {
    /// Precision `L`: frequencies are in `2^L` (1 to [`MAX_PRECISION`]).
    pub precision: u8,
    /// A value seen fewer times than this is escaped (its few bytes of
    /// model would cost more than coding it raw saves).
    pub min_count: u64,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions {
            precision: MAX_PRECISION,
            min_count: 3,
        }
    }
}

/// A static model of a stream of `u32` values, and its decode table.
///
/// Wire form (all varints LEB128, as elsewhere in the format):
///
/// ```text
/// model := precision:u8 n_symbols:varint escape_freq:varint
///          gaps:varint{n_symbols} freqs:varint{n_symbols}
/// ```
///
/// The symbols' values ascend strictly: the first gap is the first value,
/// each later one the difference from the previous (at least 1). Every
/// frequency is at least 1 and they sum, with `escape_freq`, to exactly
/// `2^precision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsModel {
    pub(super) precision: u8,
    pub(super) values: Vec<u32>,
    pub(super) freqs: Vec<u32>,
    pub(super) escape_freq: u32,
    pub(super) table: Vec<Slot>,
    /// The first slot of each symbol (`values.len()` is the escape).
    pub(super) starts: Vec<u32>,
    pub(super) index: HashMap<u32, u32>,
}

impl AnsModel {
    /// Learns a model of `values`: the values seen at least
    /// `options.min_count` times (at most `2^L - 1` of them, the most
    /// frequent) get a slot, the rest are escaped. `None` for an empty
    /// input.
    ///
    /// # Panics
    /// If `options.precision` is not in `1..=MAX_PRECISION`.
    pub fn learn(values: &[u32], options: LearnOptions) -> Option<AnsModel> {
        let precision = options.precision;
        assert!(
            (1..=MAX_PRECISION).contains(&precision),
            "precision {precision} not in 1..={MAX_PRECISION}"
        );
        if values.is_empty() {
            return None;
        }
        let mut counts: HashMap<u32, u64> = HashMap::new();
        for &v in values {
            *counts.entry(v).or_default() += 1;
        }
        let mut by_count: Vec<(u32, u64)> = counts.into_iter().collect();
        by_count.sort_unstable_by_key(|&(v, c)| (std::cmp::Reverse(c), v));
        let total = values.len() as u64;
        let slots = 1u64 << precision;
        // At most half the slots go to distinct symbols, so that the
        // common ones keep most of the precision.
        let keep = by_count
            .iter()
            .take((slots / 2) as usize)
            .take_while(|&&(_, c)| c >= options.min_count.max(1))
            .count();
        let escaped: u64 = by_count[keep..].iter().map(|&(_, c)| c).sum();
        let mut kept: Vec<(u32, u64)> = by_count[..keep].to_vec();
        kept.sort_unstable_by_key(|&(v, _)| v);
        let mut counts: Vec<u64> = kept.iter().map(|&(_, c)| c).collect();
        counts.push(escaped);
        let freqs = normalise(&counts, total, slots);
        let escape_freq = *freqs.last().expect("the escape's entry");
        let values = kept.iter().map(|&(v, _)| v).collect();
        let freqs = freqs[..keep].to_vec();
        Some(AnsModel::build(precision, values, freqs, escape_freq))
    }

    /// Builds the decode table and the encoder's index of a model whose
    /// fields are valid.
    fn build(precision: u8, values: Vec<u32>, freqs: Vec<u32>, escape_freq: u32) -> AnsModel {
        let mut table = Vec::with_capacity(1 << precision);
        let mut starts = Vec::with_capacity(values.len() + 1);
        for (&value, &freq) in values.iter().zip(&freqs) {
            starts.push(table.len() as u32);
            table.extend((0..freq).map(|k| Slot {
                value,
                freq: freq as u16,
                bias: k as u16,
            }));
        }
        starts.push(table.len() as u32);
        table.extend((0..escape_freq).map(|k| Slot {
            value: 0,
            freq: escape_freq as u16,
            bias: k as u16 | ESCAPE,
        }));
        debug_assert_eq!(table.len(), 1 << precision);
        let index = values
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as u32))
            .collect();
        AnsModel {
            precision,
            values,
            freqs,
            escape_freq,
            table,
            starts,
            index,
        }
    }

    /// Precision `L` (frequencies are in `2^L`).
    pub fn precision(&self) -> u8 {
        self.precision
    }

    /// Values with a slot of their own (the escape excluded).
    pub fn n_symbols(&self) -> usize {
        self.values.len()
    }

    /// Appends the model's wire form.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.precision);
        write_varint(out, self.values.len() as u64);
        write_varint(out, self.escape_freq as u64);
        let mut prev = 0u32;
        for &v in &self.values {
            write_varint(out, (v - prev) as u64);
            prev = v;
        }
        for &f in &self.freqs {
            write_varint(out, f as u64);
        }
    }

    /// Bytes of the model's wire form.
    pub fn encoded_len(&self) -> usize {
        let mut out = Vec::new();
        self.write(&mut out);
        out.len()
    }

    /// Reads a model from the start of `bytes`; returns it and the bytes
    /// it took. Errors name byte offsets within `bytes`.
    ///
    /// # Errors
    /// `Truncated` or `BadVarint` if a field is cut or malformed;
    /// `FieldOutOfRange` for a precision outside `1..=12`, more symbols
    /// than slots, a frequency or escape frequency above `2^L`, frequencies
    /// summing above `2^L` or a value above `u32::MAX`; `FieldBelowMinimum`
    /// for a zero frequency or a zero gap after the first;
    /// `LengthMismatch` if the frequencies and the escape's sum below
    /// `2^L`.
    pub fn read(bytes: &[u8]) -> Result<(AnsModel, usize)> {
        let mut r = Reader::new(bytes);
        let at = r.offset();
        let precision = r.u8("entropy model precision")?;
        if !(1..=MAX_PRECISION).contains(&precision) {
            return Err(if precision == 0 {
                Error::FieldBelowMinimum {
                    what: "entropy model precision",
                    offset: at,
                    value: 0,
                    min: 1,
                }
            } else {
                Error::FieldOutOfRange {
                    what: "entropy model precision",
                    offset: at,
                    value: precision as u64,
                    max: MAX_PRECISION as u64,
                }
            });
        }
        let slots = 1u64 << precision;
        let n = r.varint_max("entropy model symbol count", slots)? as usize;
        let escape_freq = r.varint_max("entropy model escape frequency", slots)?;
        // n <= 2^12: both vectors are bounded whatever the bytes say.
        let mut values = Vec::with_capacity(n);
        let mut prev = 0u64;
        for i in 0..n {
            let at = r.offset();
            let gap = r.varint("entropy model symbol gap")?;
            if i > 0 && gap == 0 {
                return Err(Error::FieldBelowMinimum {
                    what: "entropy model symbol gap (values ascend strictly)",
                    offset: at,
                    value: 0,
                    min: 1,
                });
            }
            let value = prev.saturating_add(gap);
            if value > u32::MAX as u64 {
                return Err(Error::FieldOutOfRange {
                    what: "entropy model symbol value",
                    offset: at,
                    value,
                    max: u32::MAX as u64,
                });
            }
            values.push(value as u32);
            prev = value;
        }
        let mut freqs = Vec::with_capacity(n);
        let mut sum = escape_freq;
        for _ in 0..n {
            let f = r.varint_nonzero("entropy model frequency", slots - sum)?;
            sum += f;
            freqs.push(f as u32);
        }
        if sum != slots {
            return Err(Error::LengthMismatch {
                what: "entropy model frequencies and escape (sum against 2^precision)",
                expected: slots,
                found: sum,
            });
        }
        let used = r.offset();
        Ok((
            AnsModel::build(precision, values, freqs, escape_freq as u32),
            used,
        ))
    }
}

/// Frequencies in `slots` for `counts` (summing to `total`): each
/// non-zero count gets at least 1, a zero count 0, and they sum to
/// `slots` exactly (the difference is taken from, or given to, the
/// largest).
fn normalise(counts: &[u64], total: u64, slots: u64) -> Vec<u32> {
    let mut freqs: Vec<u64> = counts
        .iter()
        .map(|&c| {
            if c == 0 {
                0
            } else {
                (c as u128 * slots as u128 / total as u128).max(1) as u64
            }
        })
        .collect();
    let mut sum: u64 = freqs.iter().sum();
    while sum != slots {
        let largest = (0..freqs.len())
            .max_by_key(|&i| (freqs[i], std::cmp::Reverse(i)))
            .expect("a count");
        if sum < slots {
            freqs[largest] += slots - sum;
            sum = slots;
        } else {
            // Take what the largest can spare (it stays at least 1, or
            // half of itself, so that the next largest shares the cut).
            let spare = (freqs[largest] - 1).min(sum - slots).max(1);
            let spare = spare.min(freqs[largest].div_ceil(2)).max(1);
            freqs[largest] -= spare;
            sum -= spare;
        }
    }
    freqs.into_iter().map(|f| f as u32).collect()
}

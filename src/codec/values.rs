//! Value indexing (TOC paper 3.2) and the physical form of the value
//! dictionary, chosen per batch by exact size:
//!
//! - raw `f64`s (the paper's form);
//! - integers as a base plus packed offsets (version 1: one-hot, counts,
//!   pixel intensities);
//! - scaled integers (version 2): every value is `n / 10^e` for one
//!   exponent `e` and integers `n`, as decimals parsed from text are (a
//!   price of 21.76 is the `f64` nearest 2176/100). In the spirit of ALP
//!   (Afroozeh et al., SIGMOD 2024), which finds such an exponent per
//!   vector of doubles; here the exponent is per dictionary and a
//!   dictionary with a single value that does not round-trip stays raw
//!   (ALP patches exceptions instead). The integers are sorted and stored
//!   as escape-coded gaps, so sorted dense ranges (distances, pixel values)
//!   cost a few bits per entry instead of the width of the largest offset.
//!
//! - grouped (the pairs of a shared dictionary of a dataset file of
//!   version 8): the values of each exponent in a group of their own,
//!   sorted and gap-coded as a scaled dictionary is, and the values that
//!   are no decimal (or a group that would cost more than its raw bytes)
//!   raw after the groups. One exponent per dictionary costs every entry
//!   the digits of the longest decimal: countymurders' dictionary mixes
//!   counts, 2-digit and 7-digit decimals and a few 16-digit ones, which
//!   kept its 162,329 values raw (1.30 MB; 0.24 MB grouped). ALP picks an
//!   exponent per vector and patches the rest; here each exponent has its
//!   own vector.
//!
//! Lossless bit for bit: a value is scaled only if `n as f64 / 10^e` gives
//! back its exact bits (NaN, infinities and subnormals never do, and stay
//! raw).

use hashbrown::HashMap;

use super::gaps::{best_width, write_escaped};
use super::layout::{DICT_F64, DICT_GROUPED, DICT_INT, DICT_SCALED, MAX_EXPONENT};
use super::pairs::{scaled_value, POW10};
use crate::wire::{bits_needed, payload_len, write_packed, write_varint, zigzag};

/// Largest integer magnitude a scaled entry may have (exact in `f64`).
const EXACT: f64 = (1u64 << 53) as f64;

/// The physical form chosen for a dictionary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Float,
    Int {
        base: i64,
        width: u8,
    },
    Scaled {
        exponent: u8,
        width: u8,
    },
    /// Groups of one exponent each, then raw values (`Dictionary::groups`).
    Grouped,
}

/// A group of a grouped dictionary: its `len` integers are the next ones
/// of `Dictionary::group_ints` (sorted), written at `width`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    exponent: u8,
    width: u8,
    len: usize,
}

/// Which forms a dictionary may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Allowed {
    /// Integer dictionaries (version 1).
    pub(super) int: bool,
    /// Scaled dictionaries (version 2).
    pub(super) scaled: bool,
    /// Whole-byte widths for plain packed arrays.
    pub(super) bytes: bool,
    /// Grouped dictionaries (a shared dictionary's pairs, file version 8).
    pub(super) grouped: bool,
}

/// A value dictionary being built: provisional ids in order of first
/// appearance, then a final order fixed by [`Dictionary::finish`].
#[derive(Debug, Default)]
pub(super) struct Dictionary {
    ids: HashMap<u64, u32>,
    /// Distinct values, provisional order.
    values: Vec<f64>,
    /// Provisional id -> final id.
    remap: Vec<u32>,
    /// Scaled integers, in final (ascending) order, when scaled.
    ints: Vec<i64>,
    /// Integer gaps between consecutive `ints`, scratch.
    gaps: Vec<u64>,
    form: Option<Form>,
    scratch: Vec<u32>,
    /// A grouped form: its groups, their integers (each group's sorted),
    /// the provisional ids of the raw values, and its bytes.
    groups: Vec<Group>,
    group_ints: Vec<i64>,
    raw: Vec<u32>,
    /// Provisional ids in the grouped form's final order.
    group_order: Vec<u32>,
    grouped_len: u64,
}

impl Dictionary {
    pub(super) fn clear(&mut self) {
        self.ids.clear();
        self.values.clear();
        self.remap.clear();
        self.ints.clear();
        self.form = None;
    }

    /// The provisional id of `v`, adding it if new.
    #[inline]
    pub(super) fn id(&mut self, v: f64) -> u32 {
        let next = self.values.len() as u32;
        let id = *self.ids.entry(v.to_bits()).or_insert(next);
        if id == next {
            self.values.push(v);
        }
        id
    }

    /// Number of distinct values.
    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    /// Chooses the smallest allowed form and fixes the final ids.
    pub(super) fn finish(&mut self, allowed: Allowed) {
        let float_len = 1 + varint_len(self.values.len() as u64) + 8 * self.values.len() as u64;
        let mut best = (float_len, Form::Float);
        if allowed.int {
            if let Some((base, width, len)) = self.int_form(allowed.bytes) {
                // Ties go to the integer form (readable by version 1).
                if len <= best.0 {
                    best = (len, Form::Int { base, width });
                }
            }
        }
        let mut scaled = false;
        if allowed.scaled {
            if let Some((exponent, width, len)) = self.scaled_form(allowed.bytes) {
                if len < best.0 {
                    best = (len, Form::Scaled { exponent, width });
                    scaled = true;
                }
            }
        }
        if allowed.scaled && allowed.grouped {
            let len = self.grouped_form(allowed.bytes);
            if len < best.0 {
                best = (len, Form::Grouped);
                scaled = false;
            }
        }
        self.form = Some(best.1);
        self.remap.clear();
        if best.1 == Form::Grouped {
            self.remap.resize(self.values.len(), 0);
            for (rank, &i) in self.group_order.iter().enumerate() {
                self.remap[i as usize] = rank as u32;
            }
        } else if scaled {
            // `ints` is in provisional order: sort, and map ids by rank.
            let mut order: Vec<u32> = (0..self.values.len() as u32).collect();
            order.sort_unstable_by_key(|&i| self.ints[i as usize]);
            self.remap.resize(order.len(), 0);
            for (rank, &i) in order.iter().enumerate() {
                self.remap[i as usize] = rank as u32;
            }
            let sorted: Vec<i64> = order.iter().map(|&i| self.ints[i as usize]).collect();
            self.ints = sorted;
        } else {
            self.remap.extend(0..self.values.len() as u32);
        }
    }

    /// The final id of provisional id `id` (after [`finish`](Self::finish)).
    #[inline]
    pub(super) fn final_id(&self, id: u32) -> u32 {
        self.remap[id as usize]
    }

    /// Whether the chosen form orders the values by the set alone
    /// (scaled: ascending; grouped: by group, then ascending, raw values
    /// by their bits), so that another dictionary of the same values and
    /// choices gives the same ids (float and integer forms keep the order
    /// of first appearance).
    pub(super) fn orders_by_value(&self) -> bool {
        matches!(self.form, Some(Form::Scaled { .. } | Form::Grouped))
    }

    /// Whether the chosen form needs format version 2.
    pub(super) fn needs_v2(&self) -> bool {
        matches!(self.form, Some(Form::Scaled { .. } | Form::Grouped))
    }

    /// Exact bytes of the dictionary section as [`write`](Self::write)
    /// writes it.
    pub(super) fn byte_len(&self) -> u64 {
        match self.form.expect("finish() first") {
            Form::Float => 1 + varint_len(self.values.len() as u64) + 8 * self.values.len() as u64,
            Form::Int { base, width } => {
                1 + varint_len(zigzag(base)) + packed_len(self.values.len() as u64, width)
            }
            Form::Scaled { width, .. } => {
                let symbols = self.symbols(width);
                2 + varint_len(zigzag(self.ints.first().copied().unwrap_or(0)))
                    + varint_len(symbols)
                    + 1
                    + payload_len(symbols, width)
            }
            Form::Grouped => self.grouped_len,
        }
    }

    /// Writes the dictionary section.
    pub(super) fn write(&mut self, out: &mut Vec<u8>) {
        let start = out.len();
        self.write_section(out);
        debug_assert_eq!((out.len() - start) as u64, self.byte_len());
    }

    fn write_section(&mut self, out: &mut Vec<u8>) {
        match self.form.expect("finish() first") {
            Form::Float => {
                out.push(DICT_F64);
                write_varint(out, self.values.len() as u64);
                out.reserve(8 * self.values.len());
                for v in &self.values {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Form::Int { base, width } => {
                out.push(DICT_INT);
                write_varint(out, zigzag(base));
                self.scratch.clear();
                self.scratch
                    .extend(self.values.iter().map(|&v| (v as i64 - base) as u32));
                write_packed(out, &self.scratch, width);
            }
            Form::Scaled { exponent, width } => {
                out.push(DICT_SCALED);
                out.push(exponent);
                let base = self.ints.first().copied().unwrap_or(0);
                write_varint(out, zigzag(base));
                self.fill_gaps();
                write_escaped(out, &self.gaps, width, &mut self.scratch);
            }
            Form::Grouped => {
                out.push(DICT_GROUPED);
                out.push(self.groups.len() as u8);
                let mut at = 0;
                for group in &self.groups {
                    let ints = &self.group_ints[at..at + group.len];
                    at += group.len;
                    out.push(group.exponent);
                    write_varint(out, zigzag(ints[0]));
                    gaps_of(ints, &mut self.gaps);
                    write_escaped(out, &self.gaps, group.width, &mut self.scratch);
                }
                write_varint(out, self.raw.len() as u64);
                for &i in &self.raw {
                    out.extend_from_slice(&self.values[i as usize].to_le_bytes());
                }
            }
        }
    }

    /// The grouped form: each value in the group of its own exponent
    /// (sorted by integer), a group that costs more than its values raw
    /// made raw, as are values that are no decimal. Fills `groups`,
    /// `group_ints`, `raw` and `group_order`; returns the bytes.
    fn grouped_form(&mut self, bytes: bool) -> u64 {
        let mut keyed: Vec<(u8, i64, u32)> = Vec::with_capacity(self.values.len());
        self.raw.clear();
        for (i, &v) in self.values.iter().enumerate() {
            match decimal_exponent(v) {
                Some(e) => keyed.push((e, (v * POW10[e as usize]).round() as i64, i as u32)),
                None => self.raw.push(i as u32),
            }
        }
        keyed.sort_unstable();
        self.groups.clear();
        self.group_ints.clear();
        self.group_order.clear();
        let mut len = 2;
        for run in keyed.chunk_by(|a, b| a.0 == b.0) {
            let ints: Vec<i64> = run.iter().map(|k| k.1).collect();
            gaps_of(&ints, &mut self.gaps);
            let (width, bits) = best_width(&self.gaps, bytes);
            let cost = 1
                + varint_len(zigzag(ints[0]))
                + varint_len(bits / width as u64)
                + 1
                + bits.div_ceil(8);
            if cost >= 8 * run.len() as u64 {
                self.raw.extend(run.iter().map(|k| k.2));
                continue;
            }
            len += cost;
            self.groups.push(Group {
                exponent: run[0].0,
                width,
                len: run.len(),
            });
            self.group_ints.extend_from_slice(&ints);
            self.group_order.extend(run.iter().map(|k| k.2));
        }
        // By their bits: the order, like the groups', follows from the
        // set of values alone (`orders_by_value`).
        let values = &self.values;
        self.raw
            .sort_unstable_by_key(|&i| values[i as usize].to_bits());
        self.group_order.extend_from_slice(&self.raw);
        len += varint_len(self.raw.len() as u64) + 8 * self.raw.len() as u64;
        self.grouped_len = len;
        len
    }

    /// Version 1's integer form: every value an exact integer, range
    /// within `u32`. Returns `(base, width, bytes)`.
    fn int_form(&self, bytes: bool) -> Option<(i64, u8, u64)> {
        let mut min = i64::MAX;
        let mut max = i64::MIN;
        for &v in &self.values {
            if !v.is_finite() || v.abs() > EXACT || v.fract() != 0.0 {
                return None;
            }
            let i = v as i64;
            if (i as f64).to_bits() != v.to_bits() {
                return None;
            }
            min = min.min(i);
            max = max.max(i);
        }
        if self.values.is_empty() || max - min > u32::MAX as i64 {
            return None;
        }
        let mut width = bits_needed((max - min) as u32).max(1);
        if bytes {
            width = width.div_ceil(8) * 8;
        }
        let len = 1 + varint_len(zigzag(min)) + packed_len(self.values.len() as u64, width);
        Some((min, width, len))
    }

    /// The scaled form: the smallest exponent at which every value is an
    /// exact decimal, the integers sorted into gaps. Fills `ints` (in
    /// provisional order). Returns `(exponent, width, bytes)`.
    fn scaled_form(&mut self, bytes: bool) -> Option<(u8, u8, u64)> {
        if self.values.is_empty() {
            return None;
        }
        let mut exponent = 0u8;
        for &v in &self.values {
            exponent = exponent.max(decimal_exponent(v)?);
        }
        // A value exact at its own exponent is exact at any larger one
        // (its integer gains zeros), unless the integer leaves the exact
        // range: check every value at the common exponent.
        self.ints.clear();
        for &v in &self.values {
            let n = (v * POW10[exponent as usize]).round();
            if n.abs() > EXACT || scaled_value(n as i64, exponent).to_bits() != v.to_bits() {
                self.ints.clear();
                return None;
            }
            self.ints.push(n as i64);
        }
        let mut sorted = self.ints.clone();
        sorted.sort_unstable();
        let base = sorted[0];
        self.gaps.clear();
        self.gaps.push(0);
        self.gaps
            .extend(sorted.windows(2).map(|w| (w[1] - w[0]) as u64));
        let (width, bits) = best_width(&self.gaps, bytes);
        let symbols = bits / width as u64;
        let len = 2 + varint_len(zigzag(base)) + varint_len(symbols) + 1 + bits.div_ceil(8);
        Some((exponent, width, len))
    }

    /// `gaps` from the sorted `ints`: 0 first, then consecutive differences.
    fn fill_gaps(&mut self) {
        gaps_of(&self.ints, &mut self.gaps);
    }

    /// Symbols of the sorted gaps at `width`.
    fn symbols(&self, width: u8) -> u64 {
        let e = super::gaps::escape(width);
        let gaps = std::iter::once(0).chain(self.ints.windows(2).map(|w| (w[1] - w[0]) as u64));
        gaps.map(|g| g / e + 1).sum()
    }
}

/// The gaps of the sorted `ints` into `gaps`: 0 first (the base is stored
/// apart), then consecutive differences.
fn gaps_of(ints: &[i64], gaps: &mut Vec<u64>) {
    gaps.clear();
    if !ints.is_empty() {
        gaps.push(0);
    }
    gaps.extend(ints.windows(2).map(|w| (w[1] - w[0]) as u64));
}

/// The smallest exponent `e <= MAX_EXPONENT` such that `v` is exactly
/// `round(v * 10^e) / 10^e` with an integer of at most 53 bits.
pub(crate) fn decimal_exponent(v: f64) -> Option<u8> {
    if !v.is_finite() {
        return None;
    }
    for e in 0..=MAX_EXPONENT {
        let n = (v * POW10[e as usize]).round();
        if n.abs() > EXACT {
            return None;
        }
        if scaled_value(n as i64, e).to_bits() == v.to_bits() {
            return Some(e);
        }
    }
    None
}

/// Bytes of a LEB128 varint.
pub(super) fn varint_len(v: u64) -> u64 {
    (64 - v.leading_zeros() as u64).max(1).div_ceil(7)
}

/// Bytes of a packed array of `count` values at `width` bits.
pub(super) fn packed_len(count: u64, width: u8) -> u64 {
    varint_len(count) + 1 + payload_len(count, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_found_and_others_are_not() {
        assert_eq!(decimal_exponent(21.76), Some(2));
        assert_eq!(decimal_exponent(0.23), Some(2));
        assert_eq!(decimal_exponent(-3.0), Some(0));
        assert_eq!(decimal_exponent(1e-5), Some(5));
        // Shortest form 0.3333333333333333: a 16-digit decimal.
        assert_eq!(decimal_exponent(1.0 / 3.0), Some(16));
        // 0.30000000000000004 needs 17 digits, past 2^53.
        assert_eq!(decimal_exponent(0.1 + 0.2), None);
        assert_eq!(decimal_exponent(f64::NAN), None);
        assert_eq!(decimal_exponent(f64::INFINITY), None);
        assert_eq!(decimal_exponent(f64::from_bits(1)), None);
        assert_eq!(decimal_exponent(1e300), None);
    }

    #[test]
    fn a_price_dictionary_is_scaled_and_smaller_than_raw() {
        let mut d = Dictionary::default();
        for cents in (100..2000).step_by(7) {
            d.id(cents as f64 / 100.0);
        }
        let allowed = Allowed {
            int: true,
            scaled: true,
            bytes: false,
            grouped: false,
        };
        d.finish(allowed);
        assert!(matches!(d.form, Some(Form::Scaled { exponent: 2, .. })));
        let mut out = Vec::new();
        d.write(&mut out);
        assert_eq!(out.len() as u64, d.byte_len());
        assert!(out.len() < 8 * d.len() / 4);
    }
}

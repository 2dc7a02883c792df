//! Loading the pairs of a batch into its [`DecodeTree`]: the first layer
//! `I` of a tree batch, or every entry of a flat batch. Columns are read
//! as stored (version 1) or as escape-coded gaps (version 2, `GAPS`);
//! values inline or through a dictionary of raw `f64`s, integers, or
//! scaled integers (decimals, in the spirit of ALP: Afroozeh et al.,
//! SIGMOD 2024), or groups of scaled integers of several exponents and
//! raw exceptions (a shared dictionary's, file version 8). Every column
//! is checked against `n_cols` and every value
//! against zero and for being finite (a NaN would turn every score it
//! touches into NaN) on the way.

use super::dict_layout::grouped_groups;
use super::gaps::{count_elements, running_totals};
use super::layout::{Dict, Layout, Values};
use super::DecodeTree;
use crate::error::{Error, Result};
use crate::sparse::is_zero;
use crate::wire::{f64_at, unpack_into, Packed};

thread_local! {
    /// A value-indexed batch's dictionary, resolved to `f64`s.
    static DICT: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `10^e` for every exponent a scaled dictionary may use, each exact.
pub(crate) const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The value a scaled dictionary entry decodes to (the encoder keeps an
/// entry scaled only if this gives back its exact bits).
#[inline]
pub(crate) fn scaled_value(int: i64, exponent: u8) -> f64 {
    // Dividing by 10^0 = 1 is exact: skip the division for integers.
    if exponent == 0 {
        int as f64
    } else {
        int as f64 / POW10[exponent as usize]
    }
}

impl DecodeTree {
    /// Appends the columns that the running totals of the gaps give to
    /// `pair_cols`, each checked against `n_cols`: the totals themselves
    /// for a tree's first layer; for a flat batch, the totals less the
    /// total before the row's first entry (gaps restart at every row).
    fn totals_to_columns(&mut self, totals: &[u64], flat: bool) -> Result<()> {
        let n_cols = self.n_cols as u64;
        let check = |start: usize, run: &[u64], base: u64, cols: &mut Vec<u32>| {
            for (j, &t) in run.iter().enumerate() {
                let col = t - base;
                if col >= n_cols {
                    return Err(Error::PairColumnOutOfRange {
                        index: start + j,
                        col,
                        n_cols,
                    });
                }
                cols.push(col as u32);
            }
            Ok(())
        };
        if !flat {
            return check(0, totals, 0, &mut self.pair_cols);
        }
        for w in self.row_starts.windows(2) {
            let (s, e) = (w[0] as usize, w[1] as usize);
            let base = if s == 0 { 0 } else { totals[s - 1] };
            check(s, &totals[s..e], base, &mut self.pair_cols)?;
        }
        Ok(())
    }

    /// Fills the first layer: columns checked against `n_cols`, values
    /// resolved through the dictionary and checked non-zero. Flat batches
    /// with escape-coded columns need `row_starts` (loaded first): their
    /// gaps restart at each row.
    pub(super) fn load_pairs(&mut self, blob: &[u8], layout: &Layout) -> Result<()> {
        let n = layout.n_pairs();
        let cols = &layout.pair_cols;
        unpack_into(
            cols.payload(blob),
            cols.width,
            cols.count,
            &mut self.scratch,
        );
        self.pair_cols.clear();
        self.pair_cols.push(0);
        let n_cols = self.n_cols as u64;
        let out_of_range =
            |index: usize, col: u64| Error::PairColumnOutOfRange { index, col, n_cols };
        if layout.has_gaps() {
            let what = "pair columns (escape-coded gaps)";
            let mut totals = std::mem::take(&mut self.gaps);
            running_totals(&self.scratch, cols, n, what, &mut totals)?;
            let checked = self.totals_to_columns(&totals, !layout.has_tree());
            self.gaps = totals;
            checked?;
        } else {
            for (i, &c) in self.scratch.iter().enumerate() {
                if c as u64 >= n_cols {
                    return Err(out_of_range(i, c as u64));
                }
            }
            self.pair_cols.extend_from_slice(&self.scratch);
        }
        self.pair_vals.clear();
        self.pair_vals.push(0.0);
        match layout.values {
            Values::Inline { start } => {
                for i in 0..n {
                    let v = f64_at(blob, start + 8 * i);
                    if is_zero(v) {
                        return Err(Error::ZeroValue {
                            what: "inline value",
                            index: i,
                        });
                    }
                    if !v.is_finite() {
                        return Err(not_finite("inline value", i, start + 8 * i, v));
                    }
                    self.pair_vals.push(v);
                }
            }
            Values::Indexed { ids, dict } => {
                // The resolved dictionary lives in a per-thread scratch:
                // one allocation per page less on the loader's threads.
                DICT.with(|cell| {
                    let mut dict_vals = cell.borrow_mut();
                    resolve_dict(
                        blob,
                        &dict,
                        &mut self.scratch,
                        &mut self.gaps,
                        &mut dict_vals,
                    )?;
                    unpack_into(ids.payload(blob), ids.width, ids.count, &mut self.scratch);
                    if layout.has_id_gaps() {
                        self.ids_from_gaps(&ids, n)?;
                    }
                    self.pair_vals.reserve(self.scratch.len());
                    for (i, &id) in self.scratch.iter().enumerate() {
                        match dict_vals.get(id as usize) {
                            Some(&v) => self.pair_vals.push(v),
                            None => {
                                return Err(Error::ValueIdOutOfRange {
                                    position: i,
                                    id: id as u64,
                                    dict_len: dict_vals.len() as u64,
                                })
                            }
                        }
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }
}

impl DecodeTree {
    /// Turns the escape-coded id gaps in `scratch` (the symbols of `ids`)
    /// into the `n` pairs' value ids, in `scratch`: a pair's id is its
    /// element where its column starts (the first layer is sorted by
    /// column), else the previous pair's id plus its element. Needs the
    /// pairs' columns (loaded first). An id past `u32` is one past every
    /// dictionary.
    fn ids_from_gaps(&mut self, ids: &Packed, n: usize) -> Result<()> {
        let mut totals = std::mem::take(&mut self.gaps);
        let what = "value ids (escape-coded gaps within a column)";
        let summed = running_totals(&self.scratch, ids, n, what, &mut totals);
        if let Err(e) = summed {
            self.gaps = totals;
            return Err(e);
        }
        self.scratch.clear();
        let (mut previous_total, mut id) = (0u64, 0u64);
        for (k, &total) in totals.iter().enumerate() {
            let element = total - previous_total;
            previous_total = total;
            // pair_cols[0] is the root's placeholder: pair k is k + 1.
            let same_column = k > 0 && self.pair_cols[k + 1] == self.pair_cols[k];
            id = if same_column { id + element } else { element };
            self.scratch.push(id.min(u32::MAX as u64) as u32);
        }
        self.gaps = totals;
        Ok(())
    }
}

/// The error for a stored value `what` number `index`, at byte `offset`,
/// that is NaN or infinite.
fn not_finite(what: &str, index: usize, offset: usize, value: f64) -> Error {
    Error::InvalidNumber {
        what: format!("{what} {index} (at byte {offset})"),
        value,
        expected: "a finite number",
    }
}

/// Resolves the dictionary to `f64` values, rejecting zeros and values
/// that are not finite (and integer entries whose `base + offset`
/// overflows; integer and scaled entries are always finite).
fn resolve_dict(
    blob: &[u8],
    dict: &Dict,
    scratch: &mut Vec<u32>,
    totals: &mut Vec<u64>,
    out: &mut Vec<f64>,
) -> Result<()> {
    out.clear();
    let zero = |index: usize| Error::ZeroValue {
        what: "dictionary value",
        index,
    };
    match *dict {
        Dict::Float { start, len } => push_floats(blob, start, len, out),
        Dict::Int { base, offsets } => {
            unpack_into(offsets.payload(blob), offsets.width, offsets.count, scratch);
            out.reserve(offsets.count);
            for (i, &o) in scratch.iter().enumerate() {
                match base.checked_add(o as i64) {
                    Some(0) => return Err(zero(i)),
                    Some(v) => out.push(v as f64),
                    None => {
                        return Err(Error::FieldOutOfRange {
                            what: "dictionary base + offset",
                            offset: offsets.start,
                            value: o as u64,
                            max: i64::MAX.saturating_sub(base) as u64,
                        })
                    }
                }
            }
            Ok(())
        }
        Dict::Scaled {
            exponent,
            base,
            deltas,
        } => push_scaled(blob, exponent, base, &deltas, scratch, totals, out),
        Dict::Grouped {
            groups,
            start,
            raw_start,
            raw_len,
        } => {
            for (exponent, base, deltas) in grouped_groups(blob, groups, start) {
                push_scaled(blob, exponent, base, &deltas, scratch, totals, out)?;
            }
            push_floats(blob, raw_start, raw_len, out)
        }
    }
}

/// Appends `len` raw `f64` values from byte `start` to `out`, each
/// neither zero nor NaN nor infinite.
fn push_floats(blob: &[u8], start: usize, len: usize, out: &mut Vec<f64>) -> Result<()> {
    out.reserve(len);
    for i in 0..len {
        let v = f64_at(blob, start + 8 * i);
        if is_zero(v) {
            return Err(Error::ZeroValue {
                what: "dictionary value",
                index: out.len(),
            });
        }
        if !v.is_finite() {
            return Err(not_finite("dictionary value", out.len(), start + 8 * i, v));
        }
        out.push(v);
    }
    Ok(())
}

/// Appends the entries of a scaled dictionary (or a group of a grouped
/// one) to `out`: `(base + running total of the deltas) / 10^exponent`,
/// none zero, and no total past `i64`.
fn push_scaled(
    blob: &[u8],
    exponent: u8,
    base: i64,
    deltas: &Packed,
    scratch: &mut Vec<u32>,
    totals: &mut Vec<u64>,
    out: &mut Vec<f64>,
) -> Result<()> {
    unpack_into(deltas.payload(blob), deltas.width, deltas.count, scratch);
    // The dictionary holds as many entries as the deltas end.
    let len = count_elements(scratch, deltas.width);
    let what = "dictionary deltas (escape-coded)";
    running_totals(scratch, deltas, len, what, totals)?;
    out.reserve(len);
    for &t in totals.iter() {
        // Entry i is base + the running total of the deltas.
        let int = i64::try_from(t)
            .ok()
            .and_then(|t| base.checked_add(t))
            .ok_or_else(|| Error::FieldOutOfRange {
                what: "dictionary base + deltas",
                offset: deltas.start,
                value: t,
                max: i64::MAX.saturating_sub(base) as u64,
            })?;
        if int == 0 {
            return Err(Error::ZeroValue {
                what: "dictionary value",
                index: out.len(),
            });
        }
        out.push(scaled_value(int, exponent));
    }
    Ok(())
}

//! Escape-coded packed arrays (format version 2, `docs/FORMAT.md`,
//! "Escape-coded arrays"): a packed array of `width`-bit symbols in which
//! the all-ones symbol `E = 2^width - 1` adds `E` to the element being read
//! and continues, and any other symbol `s` ends the element with value
//! `(sum of the escapes) + s`.
//!
//! They store non-negative gaps (between sorted columns, between sorted
//! dictionary integers) whose distribution has a long tail: a width fitted
//! to the common gaps plus a few escapes for the rare large ones beats one
//! width fitted to the largest (mnist5k's pixel gaps: 5 bits instead of 10;
//! the first layer's column gaps on nycflights13: 4 bits instead of 13).
//! Width 1 is unary coding. This is the "width by frequency" split of the
//! TOC follow-up notes, chosen here over an entropy coder because decoding
//! stays one unpack and one add per symbol.

use crate::error::{Error, Result};
use crate::wire::{write_packed, Packed};

/// The escape symbol at `width` bits (`1..=32`).
#[inline]
pub(crate) fn escape(width: u8) -> u64 {
    (1u64 << width) - 1
}

/// Symbols needed to write `value` at `width` bits.
#[inline]
fn symbols_of(value: u64, width: u8) -> u64 {
    value / escape(width) + 1
}

/// The width (`1..=32`, or whole bytes only with `bytes`) that writes
/// `values` in the fewest bits, and that many bits. One pass sums the
/// values by bit length; each width's cost is then estimated in constant
/// time from suffix sums, and the three best widths are costed exactly.
/// (Estimating every width with a pass over the buckets inside a sort
/// made encoding census_fertility's small batches 2.5 times slower.)
pub(crate) fn best_width(values: &[u64], bytes: bool) -> (u8, u64) {
    let mut sum = [0u128; 66];
    for &v in values {
        sum[(64 - v.leading_zeros()) as usize] += v as u128;
    }
    // above[b]: sum of the values longer than b - 1 bits.
    for b in (0..65).rev() {
        sum[b] += sum[b + 1];
    }
    let n = values.len() as u128;
    // Values of more than w bits take about v / E extra symbols.
    let estimate = |w: u8| (n + sum[w as usize + 1] / escape(w) as u128) * w as u128;
    let mut widths: Vec<(u128, u8)> = if bytes {
        [8u8, 16, 24, 32]
            .iter()
            .map(|&w| (estimate(w), w))
            .collect()
    } else {
        (1..=32u8).map(|w| (estimate(w), w)).collect()
    };
    widths.sort_unstable();
    widths
        .into_iter()
        .take(3)
        .map(|(_, w)| (w, exact_bits(values, w)))
        .min_by_key(|&(w, bits)| (bits, w))
        .expect("three widths")
}

/// Exact bits of `values` written at `width`.
pub(crate) fn exact_bits(values: &[u64], width: u8) -> u64 {
    values
        .iter()
        .map(|&v| symbols_of(v, width))
        .sum::<u64>()
        .saturating_mul(width as u64)
}

/// Appends `values` as an escape-coded packed array (header and payload)
/// at `width` bits, using `symbols` as scratch.
pub(crate) fn write_escaped(out: &mut Vec<u8>, values: &[u64], width: u8, symbols: &mut Vec<u32>) {
    let e = escape(width);
    symbols.clear();
    for &v in values {
        for _ in 0..v / e {
            symbols.push(e as u32);
        }
        symbols.push((v % e) as u32);
    }
    write_packed(out, symbols, width);
}

/// The running totals of the escape-coded `packed` array (`symbols` holds
/// its unpacked symbols): `out[k]` is the sum of elements `0..=k`, which
/// is the sum of every symbol up to the one ending element `k`. Checks
/// that there are exactly `expected` elements, and no escapes after the
/// last. Columns stored as gaps are these running totals (restarted per
/// row for flat batches, by subtraction), and a scaled dictionary's
/// integers are its base plus them.
///
/// Branch-free, with one addition as the only dependency between symbols:
/// every symbol writes the running total to `out[n]` and advances `n` only
/// when it ends an element. Testing each symbol for the escape with a
/// branch mispredicted on every other symbol at width 1 (unary gaps), and
/// summing each element separately chained a multiply into every step;
/// flights3m page builds went from 9 to 12 us with either, 9.5 with this.
///
/// Sums cannot overflow: fewer than `2^32` symbols of fewer than `2^32`.
pub(crate) fn running_totals(
    symbols: &[u32],
    packed: &Packed,
    expected: usize,
    what: &'static str,
    out: &mut Vec<u64>,
) -> Result<()> {
    let e = escape(packed.width) as u32;
    out.clear();
    out.resize(symbols.len() + 1, 0);
    let mut total = 0u64;
    let mut n = 0usize;
    for &s in symbols {
        total += s as u64;
        out[n] = total;
        n += (s != e) as usize;
    }
    if symbols.last() == Some(&e) {
        return Err(Error::UnterminatedEscape {
            what,
            offset: packed.start,
        });
    }
    if n != expected {
        return Err(Error::LengthMismatch {
            what,
            expected: expected as u64,
            found: n as u64,
        });
    }
    out.truncate(n);
    Ok(())
}

/// The elements of an escape-coded array of `count` symbols of `width`
/// bits packed in `payload` (structure checked): its symbols that are not
/// the escape, counted in place (what a layout parse may do: it
/// allocates nothing).
pub(crate) fn count_packed_elements(payload: &[u8], width: u8, count: usize) -> usize {
    let e = escape(width) as u32;
    (0..count)
        .filter(|&i| crate::wire::packed_get(payload, width, i) != e)
        .count()
}

/// Number of elements of escape-coded `symbols` at `width` (an
/// unterminated trailing one not counted).
pub(crate) fn count_elements(symbols: &[u32], width: u8) -> usize {
    let e = escape(width) as u32;
    symbols.iter().filter(|&&s| s != e).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{read_packed, unpack_into, Reader};

    fn round_trip(values: &[u64], width: u8) -> Vec<u64> {
        let mut buf = Vec::new();
        write_escaped(&mut buf, values, width, &mut Vec::new());
        let mut r = Reader::new(&buf);
        let p = read_packed(&mut r, "test", false).unwrap();
        let mut syms = Vec::new();
        unpack_into(p.payload(&buf), p.width, p.count, &mut syms);
        let mut totals = Vec::new();
        running_totals(&syms, &p, values.len(), "test", &mut totals).unwrap();
        let got: Vec<u64> = (0..totals.len())
            .map(|k| totals[k] - if k == 0 { 0 } else { totals[k - 1] })
            .collect();
        assert_eq!(exact_bits(values, width), p.count as u64 * width as u64);
        got
    }

    #[test]
    fn every_width_round_trips() {
        let values = [
            0u64,
            1,
            2,
            3,
            7,
            8,
            255,
            256,
            1 << 20,
            u32::MAX as u64,
            1 << 33,
        ];
        for width in 1..=32 {
            let small: Vec<u64> = if width < 8 {
                values.iter().copied().filter(|&v| v < 1 << 12).collect()
            } else {
                values.to_vec()
            };
            assert_eq!(round_trip(&small, width), small, "width {width}");
        }
    }

    #[test]
    fn best_width_is_no_worse_than_any_width() {
        let values: Vec<u64> = (0..500u64)
            .map(|i| (i * 37) % 23 + (i % 97 == 0) as u64 * 900)
            .collect();
        let (w, bits) = best_width(&values, false);
        assert_eq!(bits, exact_bits(&values, w));
        let max_w = (64 - values.iter().max().unwrap().leading_zeros()) as u8;
        assert!(bits <= exact_bits(&values, max_w));
        assert!(bits < values.len() as u64 * max_w as u64);
    }

    #[test]
    fn a_dangling_escape_is_an_error() {
        let p = Packed {
            count: 3,
            width: 2,
            start: 7,
            len: 1,
        };
        assert_eq!(count_elements(&[1, 3, 3], 2), 1);
        let mut out = Vec::new();
        assert_eq!(
            running_totals(&[1, 3, 3], &p, 1, "x", &mut out),
            Err(Error::UnterminatedEscape {
                what: "x",
                offset: 7
            })
        );
        assert_eq!(
            running_totals(&[1, 3, 0, 2], &p, 2, "x", &mut out),
            Err(Error::LengthMismatch {
                what: "x",
                expected: 2,
                found: 3
            })
        );
    }
}

#[cfg(test)]
mod totals_tests {
    use super::*;

    #[test]
    fn running_totals_sum_escapes_into_their_element() {
        let p = Packed {
            count: 7,
            width: 2,
            start: 0,
            len: 2,
        };
        let mut out = Vec::new();
        // Elements 1, 3 + 0 = 3, 3 + 3 + 1 = 7, 2: totals 1, 4, 11, 13.
        running_totals(&[1, 3, 0, 3, 3, 1, 2], &p, 4, "x", &mut out).unwrap();
        assert_eq!(out, vec![1, 4, 11, 13]);
    }
}

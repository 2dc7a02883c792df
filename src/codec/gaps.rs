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

use super::wire::{write_packed, Packed};
use crate::error::{Error, Result};

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
/// `values` in the fewest bits, and that many bits. One pass builds a
/// histogram by bit length; the cost of each width is then estimated from
/// the bucket sums, and the three best widths are costed exactly.
pub(crate) fn best_width(values: &[u64], bytes: bool) -> (u8, u64) {
    let mut count = [0u64; 65];
    let mut sum = [0u128; 65];
    for &v in values {
        let b = (64 - v.leading_zeros()) as usize;
        count[b] += 1;
        sum[b] += v as u128;
    }
    let n = values.len() as u128;
    let estimate = |w: u8| -> u128 {
        let e = escape(w) as u128;
        let extra: u128 = (w as usize + 1..=64).map(|b| sum[b] / e).sum();
        (n + extra) * w as u128
    };
    let mut widths: Vec<u8> = if bytes {
        vec![8, 16, 24, 32]
    } else {
        (1..=32).collect()
    };
    widths.sort_by_key(|&w| estimate(w));
    widths
        .into_iter()
        .take(3)
        .map(|w| (w, exact_bits(values, w)))
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

/// Calls `each(index, value)` for every element of the escape-coded
/// `packed` array (`symbols` holds its unpacked symbols) and checks that
/// there are exactly `expected` elements, and no escapes after the last.
///
/// Sums cannot overflow: fewer than `2^32` symbols of fewer than `2^32`.
pub(crate) fn for_each_element(
    symbols: &[u32],
    packed: &Packed,
    expected: usize,
    what: &'static str,
    mut each: impl FnMut(usize, u64) -> Result<()>,
) -> Result<()> {
    let e = escape(packed.width) as u32;
    let mut pending = 0u64;
    let mut n = 0usize;
    for &s in symbols {
        pending += s as u64;
        if s != e {
            if n == expected {
                return Err(mismatch(what, expected, symbols, e));
            }
            each(n, pending)?;
            n += 1;
            pending = 0;
        }
    }
    if symbols.last() == Some(&e) {
        return Err(Error::UnterminatedEscape {
            what,
            offset: packed.start,
        });
    }
    if n != expected {
        return Err(mismatch(what, expected, symbols, e));
    }
    Ok(())
}

/// The element count error, counting every element.
fn mismatch(what: &'static str, expected: usize, symbols: &[u32], e: u32) -> Error {
    Error::LengthMismatch {
        what,
        expected: expected as u64,
        found: symbols.iter().filter(|&&s| s != e).count() as u64,
    }
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
    use crate::codec::wire::{read_packed, unpack_into, Reader};

    fn round_trip(values: &[u64], width: u8) -> Vec<u64> {
        let mut buf = Vec::new();
        write_escaped(&mut buf, values, width, &mut Vec::new());
        let mut r = Reader::new(&buf);
        let p = read_packed(&mut r, "test", false).unwrap();
        let mut syms = Vec::new();
        unpack_into(p.payload(&buf), p.width, p.count, &mut syms);
        let mut got = Vec::new();
        for_each_element(&syms, &p, values.len(), "test", |_, v| {
            got.push(v);
            Ok(())
        })
        .unwrap();
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
        assert_eq!(
            for_each_element(&[1, 3, 3], &p, 1, "x", |_, _| Ok(())),
            Err(Error::UnterminatedEscape {
                what: "x",
                offset: 7
            })
        );
        assert_eq!(
            for_each_element(&[1, 3, 0, 2], &p, 2, "x", |_, _| Ok(())),
            Err(Error::LengthMismatch {
                what: "x",
                expected: 2,
                found: 3
            })
        );
    }
}

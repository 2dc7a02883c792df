//! The crate's one wire layer: checked reading and writing of the primitive
//! fields of every byte format (`docs/FORMAT.md`): magic numbers, bytes,
//! fixed-width little-endian integers and floats, LEB128 varints and
//! bit-packed integer arrays (TOC paper 3.2, "bit packing", with true bit
//! widths as well as the paper's whole bytes). The TOC codec, the
//! comparison-format pages, the dataset file (footer, labels) and model
//! files all read through [`Reader`].
//!
//! Every read names the field it reads, so an error says what was wrong and
//! at which byte. Every length is checked against the bytes that remain
//! before anything is allocated.

use crate::error::{Error, Result};

/// Largest element count of one packed array (node ids are `u32`).
pub(crate) const MAX_COUNT: u64 = u32::MAX as u64;

/// A cursor over untrusted bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// A reader of `buf` from byte `pos` (at most its length).
    pub(crate) fn at(buf: &'a [u8], pos: usize) -> Self {
        Reader {
            buf,
            pos: pos.min(buf.len()),
        }
    }

    /// The whole input this reader walks.
    pub(crate) fn blob(&self) -> &'a [u8] {
        self.buf
    }

    /// Current byte offset.
    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Takes `n` bytes, or fails naming `what` if fewer remain.
    pub(crate) fn bytes(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(Error::Truncated {
                what,
                offset: self.pos,
                needed: n,
                available: self.remaining(),
            });
        }
        let n = n as usize;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    /// `N` bytes as an array.
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        Ok(self
            .bytes(N as u64, what)?
            .try_into()
            .expect("N bytes were taken"))
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian `u64`.
    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A little-endian `u64` that must not exceed `max`
    /// ([`Error::FieldOutOfRange`] at the field's offset).
    pub(crate) fn u64_max(&mut self, what: &'static str, max: u64) -> Result<u64> {
        let offset = self.pos;
        let value = self.u64(what)?;
        if value > max {
            return Err(Error::FieldOutOfRange {
                what,
                offset,
                value,
                max,
            });
        }
        Ok(value)
    }

    /// `count` items of `size` bytes, or [`Error::Truncated`] (checked
    /// before the caller allocates anything for them).
    fn items(&mut self, count: u64, size: u64, what: &'static str) -> Result<&'a [u8]> {
        self.bytes(count.saturating_mul(size), what)
    }

    /// `count` little-endian `u32`s.
    pub(crate) fn u32s(&mut self, count: u64, what: &'static str) -> Result<Vec<u32>> {
        Ok(self
            .items(count, 4, what)?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect())
    }

    /// `count` little-endian `f64`s.
    pub(crate) fn f64s(&mut self, count: u64, what: &'static str) -> Result<Vec<f64>> {
        Ok(self
            .items(count, 8, what)?
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect())
    }

    /// The 4-byte magic number at the reader's position: the one magic
    /// check of every format.
    ///
    /// # Errors
    /// [`Error::BadMagic`] with the bytes found (fewer than four if the
    /// input is shorter).
    pub(crate) fn magic(&mut self, expected: &[u8; 4]) -> Result<()> {
        let found = self.magic_bytes(expected)?;
        if found != *expected {
            return Err(Error::BadMagic {
                expected: *expected,
                found: found.to_vec(),
            });
        }
        Ok(())
    }

    /// The next four bytes as a magic number, for formats that tell
    /// several magics apart.
    ///
    /// # Errors
    /// [`Error::BadMagic`] (expecting `expected`) with what remains if
    /// fewer than four bytes do.
    pub(crate) fn magic_bytes(&mut self, expected: &[u8; 4]) -> Result<[u8; 4]> {
        let rest = &self.buf[self.pos..];
        self.array("magic").map_err(|_| Error::BadMagic {
            expected: *expected,
            found: rest.to_vec(),
        })
    }

    /// An unsigned LEB128 varint of at most 10 bytes, canonical (no
    /// redundant trailing zero groups) and fitting in `u64`.
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..10 {
            let b = self.u8(what)?;
            let group = (b & 0x7f) as u64;
            if i == 9 && b > 1 {
                return Err(Error::BadVarint {
                    what,
                    offset: start,
                });
            }
            value |= group << (7 * i);
            if b & 0x80 == 0 {
                if i > 0 && b == 0 {
                    return Err(Error::BadVarint {
                        what,
                        offset: start,
                    });
                }
                return Ok(value);
            }
        }
        Err(Error::BadVarint {
            what,
            offset: start,
        })
    }

    /// A varint of at least 1 and at most `max` (a count of things that
    /// must not be empty): 0 is [`Error::FieldBelowMinimum`], above `max`
    /// [`Error::FieldOutOfRange`], both at the varint's first byte.
    pub(crate) fn varint_nonzero(&mut self, what: &'static str, max: u64) -> Result<u64> {
        let offset = self.pos;
        match self.varint_max(what, max)? {
            0 => Err(Error::FieldBelowMinimum {
                what,
                offset,
                value: 0,
                min: 1,
            }),
            value => Ok(value),
        }
    }

    /// A varint that must not exceed `max`.
    pub(crate) fn varint_max(&mut self, what: &'static str, max: u64) -> Result<u64> {
        let offset = self.pos;
        let value = self.varint(what)?;
        if value > max {
            return Err(Error::FieldOutOfRange {
                what,
                offset,
                value,
                max,
            });
        }
        Ok(value)
    }
}

/// Bytes of `v` as a varint.
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends `v` little-endian.
pub(crate) fn write_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` little-endian.
pub(crate) fn write_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `values` little-endian.
pub(crate) fn write_u32s(out: &mut Vec<u8>, values: &[u32]) {
    values.iter().for_each(|&v| write_u32(out, v));
}

/// Appends `values` little-endian.
pub(crate) fn write_f64s(out: &mut Vec<u8>, values: &[f64]) {
    out.reserve(8 * values.len());
    values
        .iter()
        .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

/// The `f64` at byte `at` of `bytes`, which a [`Reader`] has already
/// checked to hold it.
///
/// # Panics
/// If `bytes` is shorter than `at + 8` (a bug in the caller's check).
pub(crate) fn f64_at(bytes: &[u8], at: usize) -> f64 {
    f64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// Appends `v` as an unsigned LEB128 varint.
pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag maps signed to unsigned so small magnitudes stay small.
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Bits needed to store `max` (0 for 0).
pub(crate) fn bits_needed(max: u32) -> u8 {
    (32 - max.leading_zeros()) as u8
}

/// Payload bytes of `count` values of `width` bits.
pub(crate) fn payload_len(count: u64, width: u8) -> u64 {
    (count * width as u64).div_ceil(8)
}

/// Where a packed array sits in a blob: its element count, bit width and
/// the byte range of its payload. Produced only by [`read_packed`], which
/// has checked that the payload is inside the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Packed {
    pub(crate) count: usize,
    pub(crate) width: u8,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

impl Packed {
    pub(crate) fn payload<'b>(&self, blob: &'b [u8]) -> &'b [u8] {
        &blob[self.start..self.start + self.len]
    }
}

/// Reads a packed array header and skips its payload.
///
/// `zero_width_ok` allows width 0 with a non-zero count (an array of
/// zeros that takes no bytes); callers allow it only where the count is
/// bounded by another, byte-backed section, so that memory stays bounded by
/// the input size.
pub(crate) fn read_packed(
    r: &mut Reader<'_>,
    what: &'static str,
    zero_width_ok: bool,
) -> Result<Packed> {
    let count = r.varint_max(what, MAX_COUNT)?;
    read_packed_of(r, what, count, zero_width_ok)
}

/// Reads the width and payload of a packed array whose `count` the
/// caller knows (a compact page's arrays store no count); checked as
/// [`read_packed`] checks a stored one. `count` must be at most
/// [`MAX_COUNT`].
pub(crate) fn read_packed_of(
    r: &mut Reader<'_>,
    what: &'static str,
    count: u64,
    zero_width_ok: bool,
) -> Result<Packed> {
    debug_assert!(count <= MAX_COUNT);
    let width_at = r.offset();
    let width = r.u8(what)?;
    if width > 32 || (width == 0 && count > 0 && !zero_width_ok) {
        return Err(Error::BadWidth {
            what,
            offset: width_at,
            width,
        });
    }
    let len = payload_len(count, width);
    let start = r.offset();
    let payload = r.bytes(len, what)?;
    let used_bits = (count * width as u64) % 8;
    if used_bits != 0 {
        let last = payload[payload.len() - 1];
        if last >> used_bits != 0 {
            return Err(Error::NonZeroPadding {
                what,
                offset: start + payload.len() - 1,
            });
        }
    }
    Ok(Packed {
        count: count as usize,
        width,
        start,
        len: len as usize,
    })
}

/// Appends a packed array (header and payload) of `values`, each of which
/// must fit in `width` bits.
pub(crate) fn write_packed(out: &mut Vec<u8>, values: &[u32], width: u8) {
    write_varint(out, values.len() as u64);
    write_packed_payload(out, values, width);
}

/// Appends the width byte and payload of a packed array of `values`
/// without its count (which the reader knows: [`read_packed_of`]).
pub(crate) fn write_packed_payload(out: &mut Vec<u8>, values: &[u32], width: u8) {
    debug_assert!(width <= 32);
    debug_assert!(values.iter().all(|&v| width == 32 || v >> width == 0));
    out.push(width);
    match width {
        0 => {}
        8 => out.extend(values.iter().map(|&v| v as u8)),
        16 => values
            .iter()
            .for_each(|&v| out.extend_from_slice(&(v as u16).to_le_bytes())),
        32 => values
            .iter()
            .for_each(|&v| out.extend_from_slice(&v.to_le_bytes())),
        _ => {
            let mut acc: u64 = 0;
            let mut nbits: u32 = 0;
            for &v in values {
                acc |= (v as u64) << nbits;
                nbits += width as u32;
                while nbits >= 8 {
                    out.push(acc as u8);
                    acc >>= 8;
                    nbits -= 8;
                }
            }
            if nbits > 0 {
                out.push(acc as u8);
            }
        }
    }
}

/// Value `i` of `width`-bit values packed least significant bit first in
/// `payload` (which holds at least `i + 1` of them), without unpacking
/// the others.
pub(crate) fn packed_get(payload: &[u8], width: u8, i: usize) -> u32 {
    if width == 0 {
        return 0;
    }
    let bit = i * width as usize;
    let from = bit / 8;
    // A whole word where the payload has one (a fixed-size load), else
    // the last bytes (a value of 32 bits or less spans 5 bytes at most).
    let word = match payload.get(from..from + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        None => {
            let mut word = [0u8; 8];
            let to = payload.len().min(from + 8);
            word[..to - from].copy_from_slice(&payload[from..to]);
            u64::from_le_bytes(word)
        }
    };
    let v = word >> (bit % 8);
    (v & ((1u64 << width) - 1)) as u32
}

/// Unpacks `count` values of `width` bits from `payload` into `out`
/// (cleared first). `payload` must hold at least
/// `payload_len(count, width)` bytes, as [`read_packed`] guarantees.
pub(crate) fn unpack_into(payload: &[u8], width: u8, count: usize, out: &mut Vec<u32>) {
    out.clear();
    out.reserve(count);
    match width {
        0 => out.resize(count, 0),
        8 => out.extend(payload[..count].iter().map(|&b| b as u32)),
        16 => out.extend(
            payload[..2 * count]
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]) as u32),
        ),
        32 => out.extend(
            payload[..4 * count]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        ),
        _ => unpack_bits(payload, width, count, out),
    }
}

// Why hand-written, by measurement (`examples/unpack.rs`,
// docs/archive/RESULTS-HISTORY.md section 20: every packed array of real 50-row pages of
// the six shared datasets, widths 1 to 12 and lengths of 1 to 18,000,
// mostly 50 to 400 values): `bitvec` (bit slices, `load_le` per value)
// unpacks 9 to 21 times slower than this code; the `bitpacking` crate's
// SIMD block packer (blocks of 128 values, four interleaved lanes) 1.4
// to 2.1 times faster, but only in its own layout, which would change
// the byte format and pad every array to whole blocks (+9% to +111% of
// the packed bytes on pages of 50 to 400 values; its 32-value scalar
// blocks are no faster than this code), and unpacking is 7% to 14% of a
// page's decode, so it could save at most 2% to 7% of it. Eight values at
// a time through 64-bit loads at constant offsets instead of 128-bit
// words was slower on five datasets of six. So the byte format keeps its plain LSB-first bit
// packing and this unpacker; a later format could adopt 128-value SIMD
// blocks for its long arrays (codes, mnist5k's pair columns) only.
/// The general bit-width path: whole groups of eight values (`width`
/// bytes each) through [`unpack_groups`], monomorphised per width so the
/// shifts and masks are constants and the eight extractions unroll, then
/// the last `count % 8` values one by one.
///
/// One unaligned load, shift and mask per value with the width known only
/// at run time cost 10 to 12 instructions a value (bounds checks, variable
/// shifts); a page of flights3m unpacks five arrays of 50 to 200 values on
/// every decode, so this was a fifth of decoding a resident page.
fn unpack_bits(payload: &[u8], width: u8, count: usize, out: &mut Vec<u32>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => unpack_groups::<$w>(payload, count, out),)*
                _ => unreachable!("widths 1 to 31 other than 8 and 16"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 9 10 11 12 13 14 15 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    // Tail values, one at a time (the layout checked that the payload
    // holds `ceil(count * width / 8)` bytes).
    for i in out.len()..count {
        out.push(packed_get(payload, width, i));
    }
}

/// Appends the whole groups of eight `W`-bit values of `payload` (of the
/// first `count`) to `out`: eight values fill exactly `W` bytes.
#[inline(always)]
fn unpack_groups<const W: usize>(payload: &[u8], count: usize, out: &mut Vec<u32>) {
    let groups = (count / 8).min(payload.len() / W);
    for chunk in payload[..groups * W].chunks_exact(W) {
        out.extend_from_slice(&unpack8::<W>(chunk));
    }
}

/// The eight `W`-bit values (`W` in 1..=31) packed in the `W` bytes of
/// `chunk`, least significant bits first.
#[inline(always)]
fn unpack8<const W: usize>(chunk: &[u8]) -> [u32; 8] {
    let mask = (1u128 << W) - 1;
    let mut bytes = [0u8; 32];
    bytes[..W].copy_from_slice(chunk);
    let mut out = [0u32; 8];
    if W <= 16 {
        // Eight values in at most 128 bits: one word.
        let word = u128::from_le_bytes(bytes[..16].try_into().expect("16 bytes"));
        for (k, o) in out.iter_mut().enumerate() {
            *o = ((word >> (k * W)) & mask) as u32;
        }
    } else {
        // Four values (at most 124 bits) from byte 0, four from bit 4W.
        let lo = u128::from_le_bytes(bytes[..16].try_into().expect("16 bytes"));
        let at = 4 * W / 8;
        let hi =
            u128::from_le_bytes(bytes[at..at + 16].try_into().expect("16 bytes")) >> ((4 * W) % 8);
        for k in 0..4 {
            out[k] = ((lo >> (k * W)) & mask) as u32;
            out[4 + k] = ((hi >> (k * W)) & mask) as u32;
        }
    }
    out
}

#[cfg(test)]
mod tests;

//! One page's stream coded against an [`AnsModel`]: two interleaved rANS
//! states of 32 bits, renormalised a byte at a time, and the escaped
//! values packed beside them.
//!
//! ```text
//! stream := n_escapes:varint [escape_width:u8 escapes:bits{n_escapes * escape_width}]
//!           rans:u8*                     to the end of the stream
//! rans   := x0:u32le x1:u32le renorm:u8*  (empty when the stream holds no value)
//! ```
//!
//! Value `i` (from 0) is decoded from state `i mod 2`: slot `x mod 2^L`
//! names a symbol of frequency `f` whose range starts `b` slots before
//! the slot; then `x = f * (x >> L) + b`, and while `x < 2^23` the next
//! byte is shifted in (`x = x * 256 + byte`). An escape's value is the
//! next element of `escapes`. Both states start in `[2^23, 2^31)` and
//! must end at exactly `2^23` (where the encoder started them), every
//! renormalisation byte and every escape used.

use super::model::{AnsModel, Slot, ESCAPE};
use crate::error::{Error, Result};
use crate::wire::{bits_needed, read_packed_of, write_packed, write_varint, Reader};

/// Lower bound of a state between steps (and its value before the first
/// encode step, after the last decode step).
const LOW: u32 = 1 << 23;

impl AnsModel {
    /// Appends the stream of `values`.
    ///
    /// # Errors
    /// `BadArgument` if a value has no slot and the model has no escape.
    pub fn encode(&self, values: &[u32], out: &mut Vec<u8>) -> Result<()> {
        let precision = self.precision as u32;
        let escape = self.values.len();
        let mut escaped = Vec::new();
        let mut steps = Vec::with_capacity(values.len());
        for &v in values {
            let symbol = match self.index.get(&v) {
                Some(&i) => i as usize,
                None if self.escape_freq > 0 => {
                    escaped.push(v);
                    escape
                }
                None => {
                    return Err(Error::BadArgument {
                        what: "a value to entropy-code",
                        expected: "a value of the model, or a model with an escape",
                    })
                }
            };
            let freq = if symbol == escape {
                self.escape_freq
            } else {
                self.freqs[symbol]
            };
            steps.push((freq, self.starts[symbol]));
        }
        write_varint(out, escaped.len() as u64);
        if !escaped.is_empty() {
            let width = bits_needed(escaped.iter().copied().max().unwrap_or(0)).max(1);
            // write_packed writes a count first; the stream's count is the
            // varint above, so only the width and payload are kept.
            let mut packed = Vec::new();
            write_packed(&mut packed, &escaped, width);
            let count_len = crate::wire::varint_len(escaped.len() as u64);
            out.extend_from_slice(&packed[count_len..]);
        }
        if values.is_empty() {
            return Ok(());
        }
        // Encode backwards so that the decoder reads forwards; the bytes
        // are produced in the reverse of their stored order.
        let mut reversed = Vec::with_capacity(values.len() / 2 + 8);
        let mut states = [LOW, LOW];
        for (i, &(freq, start)) in steps.iter().enumerate().rev() {
            let x = &mut states[i & 1];
            let x_max = ((LOW >> precision) << 8) * freq;
            while *x >= x_max {
                reversed.push(*x as u8);
                *x >>= 8;
            }
            *x = ((*x / freq) << precision) + (*x % freq) + start;
        }
        for x in [states[1], states[0]] {
            reversed.extend(x.to_be_bytes());
        }
        out.extend(reversed.iter().rev());
        Ok(())
    }

    /// Decodes the stream `bytes` (exactly: nothing may follow it) of
    /// `n` values into `out` (cleared first). `n` comes from the
    /// stream's context (a page's row lengths) and must be bounded by the
    /// caller: a model whose one symbol takes every slot codes any number
    /// of values in no bytes. Errors name byte offsets within `bytes`.
    ///
    /// # Errors
    /// `Truncated` or `BadVarint` if a field or the renormalisation bytes
    /// run out; `FieldOutOfRange` for more escapes than values, a state
    /// outside `[2^23, 2^31)`, or an escape beyond `n_escapes`; `BadWidth`
    /// or `NonZeroPadding` for the escapes' array; `LengthMismatch` if a
    /// state does not end at `2^23` or an escape is left unused;
    /// `TrailingBytes` if bytes follow the last renormalisation byte.
    pub fn decode(&self, bytes: &[u8], n: usize, out: &mut Vec<u32>) -> Result<()> {
        out.clear();
        let mut r = Reader::new(bytes);
        let n_escapes = r.varint_max("escapes of an entropy-coded stream", n as u64)? as usize;
        let escapes = if n_escapes > 0 {
            let packed = read_packed_of(
                &mut r,
                "escapes of an entropy-coded stream",
                n_escapes as u64,
                false,
            )?;
            Some((packed.payload(bytes), packed.width, packed.start))
        } else {
            None
        };
        if n == 0 {
            if r.remaining() > 0 {
                return Err(Error::TrailingBytes {
                    what: "an entropy-coded stream of no values",
                    offset: r.offset(),
                    len: r.remaining(),
                });
            }
            return Ok(());
        }
        let mut states = [0u32; 2];
        for x in &mut states {
            let at = r.offset();
            *x = u32::from_le_bytes(
                r.bytes(4, "state of an entropy-coded stream")?
                    .try_into()
                    .expect("4 bytes"),
            );
            if !(LOW..LOW << 8).contains(x) {
                return Err(Error::FieldOutOfRange {
                    what: "state of an entropy-coded stream (at least 2^23)",
                    offset: at,
                    value: *x as u64,
                    max: (LOW << 8) as u64 - 1,
                });
            }
        }
        let mut cursor = Cursor {
            bytes,
            pos: r.offset(),
        };
        // Grows with what is decoded: n is the caller's bound.
        out.reserve(n.min(1 << 16));
        let mut next_escape = 0usize;
        let table = &self.table[..];
        let precision = self.precision as u32;
        let mask = (1u32 << precision) - 1;
        let [mut x0, mut x1] = states;
        let mut i = 0;
        while i + 2 <= n {
            let s0 = table[(x0 & mask) as usize];
            let s1 = table[(x1 & mask) as usize];
            x0 = s0.freq as u32 * (x0 >> precision) + (s0.bias & !ESCAPE) as u32;
            x1 = s1.freq as u32 * (x1 >> precision) + (s1.bias & !ESCAPE) as u32;
            if (s0.bias | s1.bias) & ESCAPE != 0 {
                out.push(self.escaped(s0, escapes, &mut next_escape, n_escapes, &cursor)?);
                out.push(self.escaped(s1, escapes, &mut next_escape, n_escapes, &cursor)?);
            } else {
                out.push(s0.value);
                out.push(s1.value);
            }
            if cursor.pos + 4 <= bytes.len() {
                cursor.refill_pair(&mut x0, &mut x1);
            } else {
                cursor.refill(&mut x0)?;
                cursor.refill(&mut x1)?;
            }
            i += 2;
        }
        if i < n {
            let s0 = table[(x0 & mask) as usize];
            x0 = s0.freq as u32 * (x0 >> precision) + (s0.bias & !ESCAPE) as u32;
            out.push(self.escaped(s0, escapes, &mut next_escape, n_escapes, &cursor)?);
            cursor.refill(&mut x0)?;
        }
        if cursor.pos < bytes.len() {
            return Err(Error::TrailingBytes {
                what: "an entropy-coded stream's last renormalisation byte",
                offset: cursor.pos,
                len: bytes.len() - cursor.pos,
            });
        }
        for x in [x0, x1] {
            if x != LOW {
                return Err(Error::LengthMismatch {
                    what: "final state of an entropy-coded stream (against 2^23)",
                    expected: LOW as u64,
                    found: x as u64,
                });
            }
        }
        if next_escape != n_escapes {
            return Err(Error::LengthMismatch {
                what: "escapes used by an entropy-coded stream",
                expected: n_escapes as u64,
                found: next_escape as u64,
            });
        }
        Ok(())
    }

    /// The value of slot `s`: its symbol's, or the next escape's.
    #[inline]
    fn escaped(
        &self,
        s: Slot,
        escapes: Option<(&[u8], u8, usize)>,
        next: &mut usize,
        n_escapes: usize,
        cursor: &Cursor<'_>,
    ) -> Result<u32> {
        if s.bias & ESCAPE == 0 {
            return Ok(s.value);
        }
        let Some((payload, width, _)) = escapes.filter(|_| *next < n_escapes) else {
            return Err(Error::FieldOutOfRange {
                what: "escapes of an entropy-coded stream (one more used than stored)",
                offset: cursor.pos,
                value: *next as u64 + 1,
                max: n_escapes as u64,
            });
        };
        let value = read_bits(payload, *next as u64 * width as u64, width);
        *next += 1;
        Ok(value)
    }
}

/// The renormalisation bytes, read forwards.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// Shifts bytes into `x` until it is at least [`LOW`] (at most three:
    /// a step leaves `x` at least the symbol's frequency).
    #[inline(always)]
    fn refill(&mut self, x: &mut u32) -> Result<()> {
        while *x < LOW {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(Error::Truncated {
                    what: "renormalisation bytes of an entropy-coded stream",
                    offset: self.pos,
                    needed: 1,
                    available: 0,
                });
            };
            *x = (*x << 8) | b as u32;
            self.pos += 1;
        }
        Ok(())
    }
}

impl Cursor<'_> {
    /// [`Cursor::refill`] of both states without a branch on the byte
    /// counts, when at least four bytes remain: a step leaves a state at
    /// least `2^11` (a frequency of at least 1 times `x >> L` with `x >=
    /// 2^23` and `L <= 12`), so each needs at most two bytes. One load
    /// serves both (the second state's bytes follow the first's), so the
    /// second state's refill does not wait for a load at the first's new
    /// position; which of 0, 1 or 2 bytes depends on the data, a branch
    /// the processor would mispredict often.
    #[inline(always)]
    fn refill_pair(&mut self, x0: &mut u32, x1: &mut u32) {
        let word: [u8; 4] = self.bytes[self.pos..self.pos + 4]
            .try_into()
            .expect("4 bytes");
        let w = u32::from_be_bytes(word) as u64;
        let k0 = (*x0 < LOW) as u32 + (*x0 < LOW >> 8) as u32;
        let k1 = (*x1 < LOW) as u32 + (*x1 < LOW >> 8) as u32;
        *x0 = (((*x0 as u64) << (8 * k0)) | (w >> (32 - 8 * k0))) as u32;
        let rest = (w << (8 * k0)) & 0xffff_ffff;
        *x1 = (((*x1 as u64) << (8 * k1)) | (rest >> (32 - 8 * k1))) as u32;
        self.pos += (k0 + k1) as usize;
    }
}

/// `width` bits (at most 32) of `payload` from bit `at`, least
/// significant first; the caller has checked that they are inside it.
fn read_bits(payload: &[u8], at: u64, width: u8) -> u32 {
    let first = (at / 8) as usize;
    let mut word = 0u64;
    for (k, &b) in payload[first..].iter().take(5).enumerate() {
        word |= (b as u64) << (8 * k);
    }
    ((word >> (at % 8)) & ((1u64 << width) - 1)) as u32
}

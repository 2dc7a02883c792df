//! The general-purpose compressors (snappy, gzip, LZ4) over the DEN bytes.
//!
//! Every kernel decompresses the whole batch first, as a user of these
//! codecs would, and then runs the dense kernels of DEN on the result.
//! Scratch: the decompressed values go to `ws.operand`, the dense kernels
//! get `ws.pair` and `ws.node`. The decompressed bytes need a byte buffer,
//! which [`Workspace`] does not have (and `f64` scratch cannot be viewed
//! as bytes without `unsafe`), so they go to a per-thread buffer that is
//! reused the same way: after the first call on a batch of a given size,
//! snappy and LZ4 allocate nothing (gzip allocates its inflate state).

use std::cell::RefCell;
use std::io::{Read, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::bytes::{header_len, read_header, write_header};
use super::dense::{dense_values, plain, scale_values};
use super::FormatKind;
use crate::error::{Error, Result};
use crate::kernels::layout::Shape;
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

/// A general-purpose compressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    /// snappy, raw format (`snap::raw`).
    Snappy,
    /// gzip at level 6 (flate2).
    Gzip,
    /// LZ4, block format (`lz4_flex::block`).
    Lz4,
}

/// Largest dense batch the codecs take, in bytes (snappy's limit).
const MAX_RAW_BYTES: u64 = u32::MAX as u64;

/// A decompressor's failure on a page, as [`Error::Io`] (kind
/// `InvalidData`, as a corrupt gzip stream read from a file would be).
fn corrupt(codec: Codec, message: String) -> Error {
    let error = std::io::Error::new(std::io::ErrorKind::InvalidData, message);
    Error::io(format!("{} page", codec.kind().name()), error)
}

impl Codec {
    fn kind(self) -> FormatKind {
        match self {
            Codec::Snappy => FormatKind::Snappy,
            Codec::Gzip => FormatKind::Gzip,
            Codec::Lz4 => FormatKind::Lz4,
        }
    }

    /// An upper bound on decompressed bytes per compressed byte: deflate
    /// at most 1032 (a 258-byte match in 2 bits), LZ4 under 255 (a match
    /// extended by 255 per byte), snappy under 22 (64 bytes from a 3-byte
    /// copy). A page declaring more is rejected before anything is
    /// allocated.
    fn max_ratio(self) -> u64 {
        match self {
            Codec::Snappy => 32,
            Codec::Gzip => 1032,
            Codec::Lz4 => 256,
        }
    }

    /// Checks that `packed` decompresses to exactly `expected` bytes,
    /// allocating `expected` bytes and no more: the decompressor's output
    /// is capped, so a stream inflating beyond it (a decompression bomb)
    /// is an error. Then that every value is finite. `start`: offset of
    /// `packed` in the page.
    fn check(self, packed: &[u8], expected: usize, start: usize) -> Result<()> {
        let what = match self {
            Codec::Snappy => "decompressed bytes of a snappy page (8 * n_rows * n_cols)",
            Codec::Gzip => "decompressed bytes of a gzip page (8 * n_rows * n_cols)",
            Codec::Lz4 => "decompressed bytes of an lz4 page (8 * n_rows * n_cols)",
        };
        let mismatch = |found: u64| Error::LengthMismatch {
            what,
            expected: expected as u64,
            found,
        };
        let (found, raw) = match self {
            Codec::Snappy => {
                let len =
                    snap::raw::decompress_len(packed).map_err(|e| corrupt(self, e.to_string()))?;
                if len != expected {
                    return Err(mismatch(len as u64));
                }
                let mut raw = vec![0u8; expected];
                let n = snap::raw::Decoder::new()
                    .decompress(packed, &mut raw)
                    .map_err(|e| corrupt(self, e.to_string()))?;
                (n, raw)
            }
            Codec::Gzip => {
                let mut dec = flate2::bufread::GzDecoder::new(packed);
                let mut raw = Vec::with_capacity(expected + 1);
                (&mut dec)
                    .take(expected as u64 + 1)
                    .read_to_end(&mut raw)
                    .map_err(|e| corrupt(self, e.to_string()))?;
                if raw.len() == expected {
                    // The whole member was read (its CRC checked): nothing
                    // may follow it.
                    let rest = dec.into_inner().len();
                    if rest > 0 {
                        return Err(Error::TrailingBytes {
                            what: "the gzip member",
                            offset: start + packed.len() - rest,
                            len: rest,
                        });
                    }
                }
                (raw.len(), raw)
            }
            Codec::Lz4 => {
                let mut raw = vec![0u8; expected];
                let n = match lz4_flex::block::decompress_into(packed, &mut raw) {
                    Ok(n) => n,
                    Err(lz4_flex::block::DecompressError::OutputTooSmall { .. }) => expected + 1,
                    Err(e) => return Err(corrupt(self, e.to_string())),
                };
                (n, raw)
            }
        };
        if found != expected {
            return Err(mismatch(found as u64));
        }
        // The values, as every other format's, must be finite.
        let values = raw
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")));
        for (i, v) in values.enumerate() {
            if !v.is_finite() {
                return Err(Error::InvalidNumber {
                    what: format!("value {i} (at byte {} of the decompressed payload)", 8 * i),
                    value: v,
                    expected: "a finite number",
                });
            }
        }
        Ok(())
    }

    /// Compresses `raw` (at most [`MAX_RAW_BYTES`]).
    fn compress(self, raw: &[u8]) -> Vec<u8> {
        let mut packed = match self {
            Codec::Snappy => snap::raw::Encoder::new()
                .compress_vec(raw)
                .expect("input within snappy's size limit"),
            Codec::Gzip => {
                let mut enc = GzEncoder::new(Vec::new(), Compression::new(6));
                enc.write_all(raw).expect("writing to a Vec cannot fail");
                enc.finish().expect("writing to a Vec cannot fail")
            }
            Codec::Lz4 => lz4_flex::block::compress(raw),
        };
        packed.shrink_to_fit();
        packed
    }

    /// Decompresses `packed` into `raw`, which has exactly its original
    /// length.
    fn decompress(self, packed: &[u8], raw: &mut [u8]) {
        let n = match self {
            Codec::Snappy => snap::raw::Decoder::new()
                .decompress(packed, raw)
                .expect("snappy bytes written by encode"),
            Codec::Gzip => {
                let mut dec = flate2::bufread::GzDecoder::new(packed);
                dec.read_exact(raw).expect("gzip bytes written by encode");
                raw.len()
            }
            Codec::Lz4 => {
                lz4_flex::block::decompress_into(packed, raw).expect("LZ4 bytes written by encode")
            }
        };
        assert_eq!(n, raw.len(), "decompressed length");
    }
}

thread_local! {
    /// Decompressed bytes, reused across calls on this thread.
    static RAW: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A batch as one of the general-purpose codecs over its dense
/// little-endian `f64` bytes (row-major).
#[derive(Debug, Clone)]
pub struct Compressed {
    codec: Codec,
    shape: Shape,
    packed: Vec<u8>,
}

impl Compressed {
    /// Compresses the dense bytes of `batch` with `codec`.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the dense batch exceeds `u32::MAX` bytes.
    pub(crate) fn encode(batch: &SparseBatch, codec: Codec) -> Result<Self> {
        let shape = Shape::of(batch);
        let bytes = shape.cells(8)? as u64 * 8;
        if bytes > MAX_RAW_BYTES {
            return Err(Error::TooLarge {
                what: "dense bytes for a general-purpose codec",
                value: bytes,
                max: MAX_RAW_BYTES,
            });
        }
        let packed = compress_values(codec, &dense_values(batch)?);
        Ok(Compressed {
            codec,
            shape,
            packed,
        })
    }

    /// Validates a snappy, gzip or LZ4 page (`docs/FORMAT.md`): after the
    /// header, a compressed stream that decompresses to exactly
    /// `8 * n_rows * n_cols` bytes. Memory: the declared size is checked
    /// against the codec's largest ratio times the payload length (and
    /// `u32::MAX`) before it is allocated.
    ///
    /// # Errors
    /// Header errors; [`Error::TooLarge`] for a declared size above those
    /// bounds; [`Error::Io`] for a corrupt stream; [`Error::LengthMismatch`]
    /// if it decompresses to another size (`found` is `expected + 1` when
    /// decompression stopped at the cap); [`Error::TrailingBytes`] after a
    /// gzip member; [`Error::InvalidNumber`] for a value that is not
    /// finite.
    pub(crate) fn load(bytes: &[u8], codec: Codec) -> Result<Self> {
        let (mut r, shape) = read_header(bytes, codec.kind())?;
        let start = r.offset();
        let packed = r.bytes(r.remaining() as u64, "compressed payload")?;
        let raw = shape.n_rows as u128 * shape.n_cols as u128 * 8;
        let max = MAX_RAW_BYTES.min(codec.max_ratio().saturating_mul(packed.len() as u64));
        if raw > max as u128 {
            return Err(Error::TooLarge {
                what: "dense bytes declared by a compressed page (at most u32::MAX and the codec's ratio times the payload)",
                value: u64::try_from(raw).unwrap_or(u64::MAX),
                max,
            });
        }
        codec.check(packed, raw as usize, start)?;
        Ok(Compressed {
            codec,
            shape,
            packed: packed.to_vec(),
        })
    }

    /// Decompresses into `values` (cleared first) and returns them.
    fn inflate<'a>(&self, values: &'a mut Vec<f64>) -> &'a [f64] {
        let len = self.shape.n_rows * self.shape.n_cols;
        RAW.with(|raw| {
            let mut raw = raw.borrow_mut();
            if raw.len() != 8 * len {
                // Every byte is overwritten below: no need to zero again.
                raw.clear();
                raw.resize(8 * len, 0);
            }
            self.codec.decompress(&self.packed, &mut raw);
            values.clear();
            values.extend(
                raw.chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))),
            );
        });
        values
    }
}

/// Compresses `values` as little-endian bytes.
fn compress_values(codec: Codec, values: &[f64]) -> Vec<u8> {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    codec.compress(&raw)
}

impl Compressed {
    /// Heap bytes held: the compressed stream. The buffers a kernel
    /// decompresses into belong to the thread and the [`Workspace`], not
    /// to the batch.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.packed.capacity()
    }

    pub(crate) fn kind(&self) -> FormatKind {
        self.codec.kind()
    }

    /// The header and the compressed bytes.
    pub(crate) fn encoded_len(&self) -> usize {
        header_len(self.shape, &[]) + self.packed.len()
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        write_header(out, self.codec.kind(), self.shape, &[]);
        out.extend_from_slice(&self.packed);
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.shape.n_rows
    }

    pub(crate) fn n_cols(&self) -> usize {
        self.shape.n_cols
    }

    pub(crate) fn decode(&self) -> SparseBatch {
        let mut values = Vec::new();
        plain(self.inflate(&mut values), self.shape).decode()
    }

    /// Decompresses, scales and recompresses, as a user of the codec must.
    pub(crate) fn scale(&mut self, c: f64) {
        let mut values = Vec::new();
        self.inflate(&mut values);
        scale_values(&mut values, c);
        self.packed = compress_values(self.codec, &values);
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        let Workspace { pair, operand, .. } = ws;
        plain(self.inflate(operand), self.shape).matvec(v, out, pair);
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        let Workspace {
            node,
            pair,
            operand,
            ..
        } = ws;
        plain(self.inflate(operand), self.shape).vecmat(v, out, pair, node);
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let Workspace {
            node,
            pair,
            operand,
            ..
        } = ws;
        plain(self.inflate(operand), self.shape).matmat(m, out, pair, node);
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let Workspace {
            node,
            pair,
            operand,
            ..
        } = ws;
        plain(self.inflate(operand), self.shape).left_matmat(m, out, pair, node);
    }
}

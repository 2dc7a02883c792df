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

use super::dense::{dense_values, plain, scale_values};
use super::{EncodedBatch, FormatKind};
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

impl Codec {
    fn kind(self) -> FormatKind {
        match self {
            Codec::Snappy => FormatKind::Snappy,
            Codec::Gzip => FormatKind::Gzip,
            Codec::Lz4 => FormatKind::Lz4,
        }
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
pub(crate) struct Compressed {
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

impl EncodedBatch for Compressed {
    fn kind(&self) -> FormatKind {
        self.codec.kind()
    }

    /// The compressed bytes plus the two `u64` dimensions.
    fn encoded_len(&self) -> usize {
        self.packed.len() + 16
    }

    fn n_rows(&self) -> usize {
        self.shape.n_rows
    }

    fn n_cols(&self) -> usize {
        self.shape.n_cols
    }

    fn decode(&self) -> SparseBatch {
        let mut values = Vec::new();
        plain(self.inflate(&mut values), self.shape).decode()
    }

    /// Decompresses, scales and recompresses, as a user of the codec must.
    fn scale(&mut self, c: f64) {
        let mut values = Vec::new();
        self.inflate(&mut values);
        scale_values(&mut values, c);
        self.packed = compress_values(self.codec, &values);
    }

    fn matvec_into(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace) {
        let Workspace { pair, operand, .. } = ws;
        plain(self.inflate(operand), self.shape).matvec(v, out, pair);
    }

    fn vecmat_into(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace) {
        let Workspace {
            node,
            pair,
            operand,
            ..
        } = ws;
        plain(self.inflate(operand), self.shape).vecmat(v, out, pair, node);
    }

    fn matmat_into(&self, m: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>, ws: &mut Workspace) {
        let Workspace {
            node,
            pair,
            operand,
            ..
        } = ws;
        plain(self.inflate(operand), self.shape).matmat(m, out, pair, node);
    }

    fn left_matmat_into(
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

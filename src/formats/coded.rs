//! Rows as first-layer codes into a table of pairs that many batches
//! share: the loader's mini-batches of pair codes ([`Batch::Coded`]).
//!
//! A TOC batch whose tree would cost the kernels more work than its
//! entries (the form rule of `kernels/form.rs`) is, in TOC's terms, its
//! codes `D` against the first layer `I` alone: each entry one code
//! naming a `(column, value)` pair. The loader keeps such rows as codes
//! into the pairs of every dictionary of the file, deduplicated into one
//! small table (flights3m: 1,605 pairs, 26 KB), and a mini-batch is its
//! rows' codes and that table, shared rather than copied: the loader
//! writes 4 bytes an entry where CSR takes 12, and the kernels read each
//! entry's column and value from a table that stays in the cache. The
//! products are CSR's loops with that one lookup per entry.
//!
//! A pending `A*c` is a factor applied once per row or entry, as on a flat
//! TOC batch. The batch's bytes, if asked for, are its rows encoded as a
//! TOC_FULL batch (its codes mean nothing without the table).

use std::sync::{Arc, OnceLock};

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::FormatKind;
use crate::codec::{EncodeOptions, Encoder, TocBatch};
use crate::error::{Error, Result};
use crate::kernels::layout::{columns, fill, fill_columns, standard, Shape};
use crate::kernels::{sum4, Workspace};
use crate::sparse::SparseBatch;

/// A `(column, value)` pair of a [`PairTable`], read with one load.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pair {
    /// The value.
    pub val: f64,
    /// The column.
    pub col: u32,
}

/// The pairs the codes of [`CodedRows`] name.
pub type PairTable = Arc<[Pair]>;

/// A mini-batch of rows as codes into a shared [`PairTable`] (see the
/// module docs): the payload of [`Batch::Coded`](super::Batch::Coded).
#[derive(Debug, Clone)]
pub struct CodedRows {
    shape: Shape,
    table: PairTable,
    /// Row `r`'s codes are `codes[ends[r - 1]..ends[r]]` (from 0 for the
    /// first).
    ends: Vec<u32>,
    codes: Vec<u32>,
    /// `A*c` not yet applied (1 when none).
    factor: f64,
    /// The rows encoded as a TOC_FULL batch, on first use.
    bytes: OnceLock<TocBatch>,
}

impl CodedRows {
    /// Rows of `n_cols` columns whose codes are `codes`, row `r` ending at
    /// `ends[r]`, into `table`.
    ///
    /// # Errors
    /// [`Error::CodeOutOfRange`] for a code past the table,
    /// [`Error::ColumnsNotAscending`] for a row whose columns do not
    /// ascend, [`Error::LengthMismatch`] for row ends that are not
    /// ascending offsets into the codes, and [`Error::TooLarge`] for a
    /// column past `n_cols` (every kernel then indexes safely).
    pub fn new(n_cols: usize, table: PairTable, ends: Vec<u32>, codes: Vec<u32>) -> Result<Self> {
        Self::check_parts(n_cols, &table, &ends, &codes)?;
        Ok(Self::build(n_cols, table, ends, codes))
    }

    /// [`new`](Self::new) for parts known to be valid (the loader's, made
    /// from validated pages): checked only in debug builds.
    pub(crate) fn from_valid_parts(
        n_cols: usize,
        table: PairTable,
        ends: Vec<u32>,
        codes: Vec<u32>,
    ) -> Self {
        debug_assert!(Self::check_parts(n_cols, &table, &ends, &codes).is_ok());
        Self::build(n_cols, table, ends, codes)
    }

    fn build(n_cols: usize, table: PairTable, ends: Vec<u32>, codes: Vec<u32>) -> Self {
        CodedRows {
            shape: Shape {
                n_rows: ends.len(),
                n_cols,
            },
            table,
            ends,
            codes,
            factor: 1.0,
            bytes: OnceLock::new(),
        }
    }

    /// What [`new`](Self::new) checks of its parts.
    fn check_parts(n_cols: usize, table: &[Pair], ends: &[u32], codes: &[u32]) -> Result<()> {
        let mut start = 0usize;
        for (row, &end) in ends.iter().enumerate() {
            let end = end as usize;
            if end < start || end > codes.len() {
                return Err(Error::LengthMismatch {
                    what: "row ends of coded rows (ascending offsets into the codes)",
                    expected: codes.len() as u64,
                    found: end as u64,
                });
            }
            let mut last = None;
            for (position, &c) in codes[start..end].iter().enumerate() {
                let Some(pair) = table.get(c as usize) else {
                    return Err(Error::CodeOutOfRange {
                        row,
                        position,
                        code: c as u64,
                        limit: table.len() as u64,
                    });
                };
                if pair.col as usize >= n_cols {
                    return Err(Error::TooLarge {
                        what: "column of a pair of coded rows",
                        value: pair.col as u64,
                        max: n_cols.saturating_sub(1) as u64,
                    });
                }
                if let Some(prev) = last.filter(|&p| p >= pair.col) {
                    return Err(Error::ColumnsNotAscending {
                        row,
                        position,
                        prev: prev as u64,
                        col: pair.col as u64,
                    });
                }
                last = Some(pair.col);
            }
            start = end;
        }
        if start != codes.len() {
            return Err(Error::LengthMismatch {
                what: "codes of coded rows (the last row's end)",
                expected: start as u64,
                found: codes.len() as u64,
            });
        }
        Ok(())
    }

    /// Each row's pairs.
    #[inline]
    fn rows(&self) -> impl Iterator<Item = &[u32]> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&e| {
            let row = &self.codes[start..e as usize];
            start = e as usize;
            row
        })
    }

    #[inline]
    fn pair(&self, c: u32) -> Pair {
        self.table.get(c as usize).copied().unwrap_or_default()
    }

    /// Heap bytes held: the codes and row ends (the table is the
    /// loader's, shared by every batch), and the bytes once encoded.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.ends.capacity() + self.codes.capacity())
            + self.bytes.get().map_or(0, TocBatch::heap_bytes)
    }

    pub(crate) fn kind(&self) -> FormatKind {
        FormatKind::TocFull
    }

    fn encoded(&self) -> &TocBatch {
        self.bytes.get_or_init(|| {
            Encoder::new(EncodeOptions::default())
                .encode(&self.decode())
                .expect("a batch of coded rows has fewer than 2^32 - 1 entries")
        })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.encoded().encoded_len()
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.encoded().as_bytes());
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.shape.n_rows
    }

    pub(crate) fn n_cols(&self) -> usize {
        self.shape.n_cols
    }

    pub(crate) fn decode(&self) -> SparseBatch {
        let mut out = SparseBatch::with_cols(self.shape.n_cols).expect("a valid column count");
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for row in self.rows() {
            cols.clear();
            vals.clear();
            for &c in row {
                let p = self.pair(c);
                let v = p.val * self.factor;
                // A scale by 0 leaves stored zeros, which decode drops.
                if v != 0.0 {
                    cols.push(p.col);
                    vals.push(v);
                }
            }
            out.push_row(&cols, &vals)
                .expect("coded rows hold ascending columns of the batch");
        }
        out
    }

    pub(crate) fn scale(&mut self, c: f64) {
        self.factor *= c;
        self.bytes = OnceLock::new();
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        mut out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.shape.check_matvec(v.len(), out.len());
        let v = standard(v, &mut ws.operand);
        let f = self.factor;
        for (o, row) in out.iter_mut().zip(self.rows()) {
            *o = f * sum4(row.len(), |i| {
                let p = self.pair(row[i]);
                p.val * v[p.col as usize]
            });
        }
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.shape.check_vecmat(v.len(), out.len());
        let v = standard(v, &mut ws.operand);
        fill(out, &mut ws.pair, |out| self.add_rows(v, out));
    }

    pub(crate) fn vecmat_add(&self, v: &[f64], out: &mut [f64]) {
        self.shape.check_vecmat(v.len(), out.len());
        self.add_rows(v, out);
    }

    /// `out += v . A`.
    fn add_rows(&self, v: &[f64], out: &mut [f64]) {
        let f = self.factor;
        for (&w, row) in v.iter().zip(self.rows()) {
            let w = w * f;
            for &c in row {
                let p = self.pair(c);
                out[p.col as usize] += p.val * w;
            }
        }
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let p = self.shape.check_matmat(m.dim(), out.dim());
        if p == 0 {
            return;
        }
        let m = standard(m, &mut ws.operand);
        let f = self.factor;
        fill(out, &mut ws.pair, |out| {
            for (dst, row) in out.chunks_exact_mut(p).zip(self.rows()) {
                for &c in row {
                    let pair = self.pair(c);
                    let x = pair.val * f;
                    let src = &m[pair.col as usize * p..][..p];
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let q = self.shape.check_left_matmat(m.dim(), out.dim());
        if q == 0 {
            return;
        }
        let mt = columns(m, &mut ws.operand);
        let f = self.factor;
        fill_columns(out, &mut ws.pair, |acc| {
            for (src, row) in mt.chunks_exact(q).zip(self.rows()) {
                for &c in row {
                    let pair = self.pair(c);
                    let x = pair.val * f;
                    let dst = &mut acc[pair.col as usize * q..][..q];
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }
}

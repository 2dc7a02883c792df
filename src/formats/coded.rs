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
//!
//! The products index the table and the operand without bounds checks.
//! With the checks (two an entry, where CSR's loops keep one), coil2000's
//! `A.v` and `v.A` took 1.30-1.49x CSR's time and nycflights13's
//! 1.14-1.50x; without, 0.91-1.23x (flights3m's `v.A` 1.36-1.49x;
//! `docs/archive/RESULTS-HISTORY.md`, section 43). What makes that sound
//! is checked once, never per entry: a [`PairTable`] knows its largest
//! column when it is made, every code of a batch is checked against the
//! table's length when the batch is made (by [`CodedRows::new`] with the
//! rest of its parts, or in one branch-free pass over the codes for the
//! loader's), and each kernel checks its operand's length against the
//! batch's columns as every format's does. Nothing changes the codes or
//! the table afterwards.

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

/// The pairs the codes of [`CodedRows`] name, shared by many batches,
/// with the number of columns they need (the largest column plus one,
/// found once when the table is made).
#[derive(Debug, Clone, Default)]
pub struct PairTable {
    pairs: Arc<[Pair]>,
    columns: usize,
}

impl PairTable {
    /// A table of `pairs`.
    pub fn new(pairs: impl Into<Arc<[Pair]>>) -> PairTable {
        let pairs = pairs.into();
        let columns = pairs.iter().map(|p| p.col as usize + 1).max().unwrap_or(0);
        PairTable { pairs, columns }
    }

    /// The columns a batch needs for every pair to be one of its columns:
    /// the largest column plus one (0 for no pairs).
    pub fn columns(&self) -> usize {
        self.columns
    }
}

impl std::ops::Deref for PairTable {
    type Target = [Pair];

    fn deref(&self) -> &[Pair] {
        &self.pairs
    }
}

impl From<Vec<Pair>> for PairTable {
    fn from(pairs: Vec<Pair>) -> PairTable {
        PairTable::new(pairs)
    }
}

impl From<&[Pair]> for PairTable {
    fn from(pairs: &[Pair]) -> PairTable {
        PairTable::new(pairs)
    }
}

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
    /// column of the table past `n_cols` (even one no code names: the
    /// kernels rely on the table's bound, see the module docs).
    pub fn new(n_cols: usize, table: PairTable, ends: Vec<u32>, codes: Vec<u32>) -> Result<Self> {
        Self::check_parts(n_cols, &table, &ends, &codes)?;
        // `check_parts` held every code to the table; the table's own
        // columns are what is left of the kernels' bounds.
        Self::check_table(n_cols, &table)?;
        Ok(Self::build(n_cols, table, ends, codes))
    }

    /// [`new`](Self::new) for parts the loader made from validated pages:
    /// their rows are checked only in debug builds, but what the kernels'
    /// unchecked indexing relies on (every code below the table's length,
    /// every column of the table below `n_cols`) is checked in every
    /// build, in one branch-free pass over the codes.
    ///
    /// # Errors
    /// As [`new`](Self::new), where those bounds do not hold (a bug of the
    /// loader's, reported rather than trusted).
    pub(crate) fn from_valid_parts(
        n_cols: usize,
        table: PairTable,
        ends: Vec<u32>,
        codes: Vec<u32>,
    ) -> Result<Self> {
        if let Err(e) = Self::check_bounds(n_cols, &table, &codes) {
            // The full check names the row and position.
            Self::check_parts(n_cols, &table, &ends, &codes)?;
            return Err(e);
        }
        debug_assert!(Self::check_parts(n_cols, &table, &ends, &codes).is_ok());
        Ok(Self::build(n_cols, table, ends, codes))
    }

    /// Every column of `table` below `n_cols`.
    fn check_table(n_cols: usize, table: &PairTable) -> Result<()> {
        if table.columns() > n_cols {
            return Err(Error::TooLarge {
                what: "column of a pair of coded rows",
                value: table.columns() as u64 - 1,
                max: n_cols.saturating_sub(1) as u64,
            });
        }
        Ok(())
    }

    /// What the kernels' unchecked indexing relies on: every code below
    /// the table's length and every column of the table below `n_cols`.
    fn check_bounds(n_cols: usize, table: &PairTable, codes: &[u32]) -> Result<()> {
        Self::check_table(n_cols, table)?;
        // A max over the codes: no branch per code, so it vectorizes.
        let largest = codes.iter().fold(0u32, |m, &c| m.max(c));
        if !codes.is_empty() && largest as usize >= table.len() {
            return Err(Error::CodeOutOfRange {
                row: 0,
                position: 0,
                code: u64::from(largest),
                limit: table.len() as u64,
            });
        }
        Ok(())
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

    /// The pair of code `c`, checked (for the paths that are not hot).
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
        let (f, t) = (self.factor, &self.table[..]);
        for (o, row) in out.iter_mut().zip(self.rows()) {
            *o = f * sum4(row.len(), |i| {
                // SAFETY: `row[i]` is a code of this batch, below its
                // table's length; `p.col < self.table.columns() <= n_cols`
                // (both checked when the batch was made) and
                // `v.len() == n_cols` (the shape check above).
                #[allow(unsafe_code)]
                let (p, x) = unsafe {
                    let p = unchecked_pair(t, row[i]);
                    (p, *v.get_unchecked(p.col as usize))
                };
                p.val * x
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
        let (f, t) = (self.factor, &self.table[..]);
        assert_eq!(
            out.len(),
            self.shape.n_cols,
            "v.A: out has the batch's columns"
        );
        for (&w, row) in v.iter().zip(self.rows()) {
            let w = w * f;
            for &c in row {
                // SAFETY: `c` is a code of this batch, below its table's
                // length; `p.col < self.table.columns() <= n_cols` (both
                // checked when the batch was made) and `out.len() ==
                // n_cols` (asserted above).
                #[allow(unsafe_code)]
                unsafe {
                    let p = unchecked_pair(t, c);
                    *out.get_unchecked_mut(p.col as usize) += p.val * w;
                }
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
        let (f, t) = (self.factor, &self.table[..]);
        fill(out, &mut ws.pair, |out| {
            for (dst, row) in out.chunks_exact_mut(p).zip(self.rows()) {
                for &c in row {
                    // SAFETY: `c` is a code of this batch, below its
                    // table's length (checked when the batch was made).
                    #[allow(unsafe_code)]
                    let pair = unsafe { unchecked_pair(t, c) };
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
        let (f, t) = (self.factor, &self.table[..]);
        fill_columns(out, &mut ws.pair, |acc| {
            for (src, row) in mt.chunks_exact(q).zip(self.rows()) {
                for &c in row {
                    // SAFETY: `c` is a code of this batch, below its
                    // table's length (checked when the batch was made).
                    #[allow(unsafe_code)]
                    let pair = unsafe { unchecked_pair(t, c) };
                    let x = pair.val * f;
                    let dst = &mut acc[pair.col as usize * q..][..q];
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }
}

/// The pair `code` names, read without a bounds check (the kernels'
/// inner step; see the module docs).
///
/// # Safety
/// `code` must be below `table.len()`: a code of a [`CodedRows`] and its
/// table are (checked by `CodedRows::new` or `from_valid_parts` when the
/// batch was made; neither changes afterwards).
#[inline(always)]
#[allow(unsafe_code)]
unsafe fn unchecked_pair(table: &[Pair], code: u32) -> Pair {
    debug_assert!((code as usize) < table.len());
    // SAFETY: the caller's.
    unsafe { *table.get_unchecked(code as usize) }
}

#[cfg(test)]
mod tests {
    use super::{CodedRows, Pair, PairTable};
    use crate::error::Error;

    /// The loader's parts are trusted for their rows, not for the bounds
    /// the kernels index by: a code past the table or a table column past
    /// the batch is an error in every build, named by the full check.
    #[test]
    fn the_loaders_parts_are_held_to_the_kernels_bounds() {
        let table = PairTable::new(vec![Pair { val: 1.0, col: 2 }]);
        let err = CodedRows::from_valid_parts(3, table.clone(), vec![1, 2], vec![0, 1])
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(err, Error::CodeOutOfRange { row: 1, .. }), "{err}");
        let err = CodedRows::from_valid_parts(2, table.clone(), vec![1], vec![0])
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        assert!(CodedRows::from_valid_parts(3, table, vec![1], vec![0]).is_ok());
    }
}

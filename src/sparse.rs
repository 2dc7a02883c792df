//! [`SparseBatch`]: a mini-batch in sparse row form (TOC paper section 3,
//! "sparse encoding"), the uncompressed input and output of the codec.
//!
//! Each row is a list of `(column id, value)` pairs with column ids strictly
//! ascending and below `n_cols`. Zeros are never stored: every constructor
//! drops entries equal to `0.0`, and that includes `-0.0`, so a negative zero
//! decodes as an absent entry (a plain zero). Values are finite: every
//! constructor rejects NaN and infinities ([`Error::InvalidNumber`] naming
//! the row and column), as every reader of tocpile's files does, so
//! nothing the crate writes holds a number a model cannot use. Every other
//! value keeps its exact bits (subnormals, the largest magnitudes), and
//! equality of batches compares bits.

use ndarray::{Array2, ArrayView2};

use crate::error::{Error, Result};
use crate::limits::try_reserve;

/// Largest column count supported: every `u32` is a valid column id.
pub const MAX_COLS: usize = 1 << 32;

/// A batch of sparse rows: row offsets, column ids and values, CSR-style.
///
/// Built through validated constructors; the invariants (offsets monotone,
/// columns strictly ascending per row and below `n_cols`, no zero values,
/// every value finite) hold for every value of this type.
#[derive(Debug, Clone)]
pub struct SparseBatch {
    n_cols: usize,
    offsets: Vec<usize>,
    cols: Vec<u32>,
    values: Vec<f64>,
}

/// An empty batch with no rows and no columns.
impl Default for SparseBatch {
    fn default() -> Self {
        SparseBatch {
            n_cols: 0,
            offsets: vec![0],
            cols: Vec::new(),
            values: Vec::new(),
        }
    }
}

/// True for `0.0` and `-0.0`, the values that are never stored.
#[inline]
pub(crate) fn is_zero(v: f64) -> bool {
    v == 0.0
}

/// The error for a value that is not finite at `row`, `col`.
pub(crate) fn not_finite(row: usize, col: u64, value: f64) -> Error {
    Error::InvalidNumber {
        what: format!("row {row}, column {col}: value"),
        value,
        expected: "a finite number",
    }
}

/// Checks that every value of row `row` (columns `cols`) is finite.
fn check_finite(row: usize, cols: impl IntoIterator<Item = u64>, values: &[f64]) -> Result<()> {
    match values.iter().zip(cols).find(|(v, _)| !v.is_finite()) {
        Some((&v, c)) => Err(not_finite(row, c, v)),
        None => Ok(()),
    }
}

impl SparseBatch {
    /// An empty batch (no rows) with `n_cols` columns.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if `n_cols` exceeds [`MAX_COLS`].
    pub fn with_cols(n_cols: usize) -> Result<Self> {
        check_n_cols(n_cols)?;
        Ok(SparseBatch {
            n_cols,
            offsets: vec![0],
            cols: Vec::new(),
            values: Vec::new(),
        })
    }

    /// Appends a row given as parallel slices of ascending column ids and
    /// values. Zero values are dropped.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if the slices differ in length,
    /// [`Error::ColumnOutOfRange`] or [`Error::ColumnsNotAscending`] for a bad
    /// column, [`Error::InvalidNumber`] for a value that is not finite,
    /// [`Error::OutOfMemory`] if the system refuses the memory. On error
    /// the batch is unchanged.
    pub fn push_row(&mut self, cols: &[u32], values: &[f64]) -> Result<()> {
        if cols.len() != values.len() {
            return Err(Error::LengthMismatch {
                what: "values in row (one per column id)",
                expected: cols.len() as u64,
                found: values.len() as u64,
            });
        }
        let row = self.n_rows();
        check_row(row, cols, self.n_cols)?;
        check_finite(row, cols.iter().map(|&c| u64::from(c)), values)?;
        // Rows come from decoders and readers of any size: a refused
        // allocation is an error, not an abort.
        try_reserve(
            &mut self.cols,
            cols.len(),
            "the rows of a batch (column ids)",
        )?;
        try_reserve(&mut self.values, cols.len(), "the rows of a batch (values)")?;
        try_reserve(&mut self.offsets, 1, "the rows of a batch (row offsets)")?;
        for (&c, &v) in cols.iter().zip(values) {
            if !is_zero(v) {
                self.cols.push(c);
                self.values.push(v);
            }
        }
        self.offsets.push(self.cols.len());
        Ok(())
    }

    /// Appends a dense row of exactly `n_cols` values; zeros are skipped.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `row.len() != n_cols`;
    /// [`Error::InvalidNumber`] for a value that is not finite. On error
    /// the batch is unchanged.
    pub fn push_dense_row(&mut self, row: &[f64]) -> Result<()> {
        if row.len() != self.n_cols {
            return Err(Error::LengthMismatch {
                what: "dense row length (n_cols)",
                expected: self.n_cols as u64,
                found: row.len() as u64,
            });
        }
        check_finite(self.n_rows(), 0.., row)?;
        for (c, &v) in row.iter().enumerate() {
            if !is_zero(v) {
                self.cols.push(c as u32);
                self.values.push(v);
            }
        }
        self.offsets.push(self.cols.len());
        Ok(())
    }

    /// Builds a batch from dense rows, each of length `n_cols`.
    ///
    /// # Errors
    /// As [`SparseBatch::with_cols`] and [`SparseBatch::push_dense_row`].
    pub fn from_dense_rows<R: AsRef<[f64]>>(n_cols: usize, rows: &[R]) -> Result<Self> {
        let mut batch = Self::with_cols(n_cols)?;
        for row in rows {
            batch.push_dense_row(row.as_ref())?;
        }
        Ok(batch)
    }

    /// Builds a batch from a dense `ndarray` view (rows x columns, any
    /// memory layout).
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the view has more than [`MAX_COLS`] columns;
    /// [`Error::InvalidNumber`] for a value that is not finite.
    pub fn from_array(view: ArrayView2<'_, f64>) -> Result<Self> {
        let mut batch = Self::with_cols(view.ncols())?;
        for (r, row) in view.rows().into_iter().enumerate() {
            for (c, &v) in row.iter().enumerate() {
                if !v.is_finite() {
                    return Err(not_finite(r, c as u64, v));
                }
                if !is_zero(v) {
                    batch.cols.push(c as u32);
                    batch.values.push(v);
                }
            }
            batch.offsets.push(batch.cols.len());
        }
        Ok(batch)
    }

    /// Builds a batch from CSR parts: `offsets` has one entry per row plus
    /// one, starting at 0 and ending at `cols.len()`. Zero values are
    /// dropped.
    ///
    /// # Errors
    /// [`Error::BadOffsets`], [`Error::LengthMismatch`],
    /// [`Error::ColumnOutOfRange`], [`Error::ColumnsNotAscending`],
    /// [`Error::InvalidNumber`] for a value that is not finite.
    pub fn from_csr(
        n_cols: usize,
        offsets: Vec<usize>,
        cols: Vec<u32>,
        values: Vec<f64>,
    ) -> Result<Self> {
        check_n_cols(n_cols)?;
        if cols.len() != values.len() {
            return Err(Error::LengthMismatch {
                what: "CSR values (one per column id)",
                expected: cols.len() as u64,
                found: values.len() as u64,
            });
        }
        match offsets.first() {
            Some(0) => {}
            Some(&o) => {
                return Err(Error::BadOffsets {
                    index: 0,
                    offset: o as u64,
                    expected: "0",
                })
            }
            None => {
                return Err(Error::BadOffsets {
                    index: 0,
                    offset: 0,
                    expected: "at least one offset (rows + 1)",
                })
            }
        }
        for (i, w) in offsets.windows(2).enumerate() {
            if w[1] < w[0] || w[1] > cols.len() {
                return Err(Error::BadOffsets {
                    index: i + 1,
                    offset: w[1] as u64,
                    expected: "non-decreasing and at most the number of entries",
                });
            }
            let row = &cols[w[0]..w[1]];
            check_row(i, row, n_cols)?;
            check_finite(i, row.iter().map(|&c| u64::from(c)), &values[w[0]..w[1]])?;
        }
        let last = offsets.len() - 1;
        if offsets[last] != cols.len() {
            return Err(Error::BadOffsets {
                index: last,
                offset: offsets[last] as u64,
                expected: "the number of entries",
            });
        }
        let mut batch = SparseBatch {
            n_cols,
            offsets,
            cols,
            values,
        };
        batch.drop_zeros();
        Ok(batch)
    }

    /// Builds a batch of `n_rows` rows from `(row, column, value)` triplets
    /// in any order. Zero values are dropped.
    ///
    /// # Errors
    /// [`Error::FieldOutOfRange`] for a row `>= n_rows`,
    /// [`Error::ColumnOutOfRange`], [`Error::DuplicateEntry`],
    /// [`Error::InvalidNumber`] for a value that is not finite.
    pub fn from_triplets(
        n_rows: usize,
        n_cols: usize,
        triplets: &[(usize, u32, f64)],
    ) -> Result<Self> {
        check_n_cols(n_cols)?;
        let mut sorted: Vec<(usize, u32, f64)> = triplets.to_vec();
        sorted.sort_unstable_by_key(|&(r, c, _)| (r, c));
        let mut batch = Self::with_cols(n_cols)?;
        let mut row = 0usize;
        for (i, &(r, c, v)) in sorted.iter().enumerate() {
            if r >= n_rows {
                return Err(Error::FieldOutOfRange {
                    what: "triplet row",
                    offset: i,
                    value: r as u64,
                    max: n_rows.saturating_sub(1) as u64,
                });
            }
            if c as usize >= n_cols {
                return Err(Error::ColumnOutOfRange {
                    row: r,
                    position: i,
                    col: c as u64,
                    n_cols: n_cols as u64,
                });
            }
            if i > 0 && sorted[i - 1].0 == r && sorted[i - 1].1 == c {
                return Err(Error::DuplicateEntry {
                    row: r,
                    col: c as u64,
                });
            }
            if !v.is_finite() {
                return Err(not_finite(r, u64::from(c), v));
            }
            while row < r {
                batch.offsets.push(batch.cols.len());
                row += 1;
            }
            if !is_zero(v) {
                batch.cols.push(c);
                batch.values.push(v);
            }
        }
        while row < n_rows {
            batch.offsets.push(batch.cols.len());
            row += 1;
        }
        Ok(batch)
    }

    /// Builds a batch from parts already known to be valid (used by the
    /// decoder, which has checked every invariant).
    pub(crate) fn from_parts_unchecked(
        n_cols: usize,
        offsets: Vec<usize>,
        cols: Vec<u32>,
        values: Vec<f64>,
    ) -> Self {
        debug_assert!(
            Self::from_csr(n_cols, offsets.clone(), cols.clone(), values.clone())
                .is_ok_and(|b| b.nnz() == cols.len())
        );
        SparseBatch {
            n_cols,
            offsets,
            cols,
            values,
        }
    }

    fn drop_zeros(&mut self) {
        if !self.values.iter().any(|&v| is_zero(v)) {
            return;
        }
        let mut write = 0;
        let mut read = 0;
        for r in 0..self.n_rows() {
            let end = self.offsets[r + 1];
            while read < end {
                if !is_zero(self.values[read]) {
                    self.cols[write] = self.cols[read];
                    self.values[write] = self.values[read];
                    write += 1;
                }
                read += 1;
            }
            self.offsets[r + 1] = write;
        }
        self.cols.truncate(write);
        self.values.truncate(write);
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Number of stored (non-zero) entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Row offsets: `n_rows() + 1` entries, row `i` is
    /// `offsets[i]..offsets[i + 1]` of [`cols`](Self::cols) and
    /// [`values`](Self::values).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Column ids of all rows, concatenated.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// Values of all rows, concatenated.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Column ids and values of row `i`.
    ///
    /// # Panics
    /// If `i >= n_rows()`.
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (s, e) = (self.offsets[i], self.offsets[i + 1]);
        (&self.cols[s..e], &self.values[s..e])
    }

    /// Iterates over rows as `(column ids, values)`.
    pub fn rows(&self) -> impl ExactSizeIterator<Item = (&[u32], &[f64])> + '_ {
        (0..self.n_rows()).map(move |i| self.row(i))
    }

    /// A new batch holding rows `range` of this one.
    ///
    /// # Panics
    /// If the range is out of bounds.
    pub fn slice_rows(&self, range: std::ops::Range<usize>) -> SparseBatch {
        let (s, e) = (self.offsets[range.start], self.offsets[range.end]);
        SparseBatch {
            n_cols: self.n_cols,
            offsets: self.offsets[range.start..=range.end]
                .iter()
                .map(|o| o - s)
                .collect(),
            cols: self.cols[s..e].to_vec(),
            values: self.values[s..e].to_vec(),
        }
    }

    /// The batch as a dense `n_rows x n_cols` array.
    ///
    /// # Panics
    /// If `n_rows * n_cols` overflows or cannot be allocated.
    pub fn to_dense(&self) -> Array2<f64> {
        let mut out = Array2::zeros((self.n_rows(), self.n_cols));
        for (i, (cols, vals)) in self.rows().enumerate() {
            for (&c, &v) in cols.iter().zip(vals) {
                out[[i, c as usize]] = v;
            }
        }
        out
    }

    /// Removes all rows, keeping `n_cols` and the allocations.
    pub fn clear(&mut self) {
        self.offsets.truncate(1);
        self.cols.clear();
        self.values.clear();
    }

    /// Consumes the batch, returning `(n_cols, offsets, cols, values)`.
    pub fn into_parts(self) -> (usize, Vec<usize>, Vec<u32>, Vec<f64>) {
        (self.n_cols, self.offsets, self.cols, self.values)
    }
}

/// Equality compares value bits (a negative zero is never stored, so
/// this is numeric equality).
impl PartialEq for SparseBatch {
    fn eq(&self, other: &Self) -> bool {
        self.n_cols == other.n_cols
            && self.offsets == other.offsets
            && self.cols == other.cols
            && self
                .values
                .iter()
                .zip(&other.values)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

fn check_n_cols(n_cols: usize) -> Result<()> {
    if n_cols > MAX_COLS {
        return Err(Error::TooLarge {
            what: "column count",
            value: n_cols as u64,
            max: MAX_COLS as u64,
        });
    }
    Ok(())
}

fn check_row(row: usize, cols: &[u32], n_cols: usize) -> Result<()> {
    for (j, &c) in cols.iter().enumerate() {
        if c as usize >= n_cols {
            return Err(Error::ColumnOutOfRange {
                row,
                position: j,
                col: c as u64,
                n_cols: n_cols as u64,
            });
        }
        if j > 0 && cols[j - 1] >= c {
            return Err(Error::ColumnsNotAscending {
                row,
                position: j,
                prev: cols[j - 1] as u64,
                col: c as u64,
            });
        }
    }
    Ok(())
}

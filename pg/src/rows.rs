//! [`RowBuffer`]: rows read from a table, held as CSR arrays (no
//! allocation per row), and gathered into the library's pages: the
//! CorgiPile paper's TupleShuffle buffer (section 6.2), whose tuples are
//! shuffled by an index permutation and cut into mini-batches.
//!
//! Its arrays grow with `try_reserve`: the buffer's size is the table's
//! (a fraction of it), and a refused allocation must be an ERROR, not an
//! aborted backend.

use tocpile_lib::formats::FormatKind;
use tocpile_lib::{Page, SparseBatch};

use crate::failure::{reserve, try_vec, Context, Failure, Result};

/// Rows as CSR arrays and their labels.
#[derive(Debug, Default)]
pub struct RowBuffer {
    n_cols: usize,
    /// Start of each row in `cols` / `values`, plus the end.
    offsets: Vec<usize>,
    cols: Vec<u32>,
    values: Vec<f64>,
    labels: Vec<f64>,
}

const WHAT: &str = "the rows of the buffer";

impl RowBuffer {
    /// An empty buffer of rows of `n_cols` columns.
    pub fn new(n_cols: usize) -> RowBuffer {
        RowBuffer {
            n_cols,
            offsets: vec![0],
            ..RowBuffer::default()
        }
    }

    /// Columns of every row.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Rows held.
    pub fn n_rows(&self) -> usize {
        self.labels.len()
    }

    /// Non-zero entries held.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// Empties the buffer, keeping its memory.
    pub fn clear(&mut self) {
        self.offsets.truncate(1);
        self.cols.clear();
        self.values.clear();
        self.labels.clear();
    }

    /// Appends an entry to the row being built (columns ascending, the
    /// caller's duty; zeros are skipped).
    #[inline]
    pub fn push_entry(&mut self, col: u32, value: f64) -> Result<()> {
        if value == 0.0 {
            return Ok(());
        }
        if self.cols.len() == self.cols.capacity() {
            reserve(&mut self.cols, 1, WHAT)?;
            reserve(&mut self.values, 1, WHAT)?;
        }
        self.cols.push(col);
        self.values.push(value);
        Ok(())
    }

    /// Makes room for `n` more entries, so that the next `n`
    /// [`push_reserved`](Self::push_reserved) calls never allocate.
    pub fn reserve_entries(&mut self, n: usize) -> Result<()> {
        reserve(&mut self.cols, n, WHAT)?;
        reserve(&mut self.values, n, WHAT)
    }

    /// [`push_entry`](Self::push_entry) within room made by
    /// [`reserve_entries`](Self::reserve_entries).
    #[inline]
    pub fn push_reserved(&mut self, col: u32, value: f64) {
        if value != 0.0 {
            self.cols.push(col);
            self.values.push(value);
        }
    }

    /// Ends the row being built with its label.
    pub fn finish_row(&mut self, label: f64) -> Result<()> {
        reserve(&mut self.offsets, 1, WHAT)?;
        reserve(&mut self.labels, 1, WHAT)?;
        self.offsets.push(self.cols.len());
        self.labels.push(label);
        Ok(())
    }

    /// Drops the entries of a row that was not finished (its conversion
    /// failed part-way).
    pub fn abandon_row(&mut self) {
        let start = *self.offsets.last().expect("offsets start with 0");
        self.cols.truncate(start);
        self.values.truncate(start);
    }

    /// Every label, in row order.
    pub fn labels(&self) -> &[f64] {
        &self.labels
    }

    /// Row `i`'s columns and values.
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let (s, e) = (self.offsets[i], self.offsets[i + 1]);
        (&self.cols[s..e], &self.values[s..e])
    }

    /// Rows `rows` (in that order) as one CSR page with their labels: a
    /// mini-batch, as the library's exact mode gathers it.
    pub fn gather(&self, rows: &[u32]) -> Result<Page> {
        let nnz: usize = rows
            .iter()
            .map(|&r| self.offsets[r as usize + 1] - self.offsets[r as usize])
            .sum();
        // A mini-batch is at most a buffer, which is user-sized.
        let what = "a mini-batch";
        let mut offsets = try_vec(rows.len() + 1, what)?;
        let mut cols = try_vec(nnz, what)?;
        let mut values = try_vec(nnz, what)?;
        let mut labels = try_vec(rows.len(), what)?;
        offsets.push(0);
        for &r in rows {
            let (c, v) = self.row(r as usize);
            cols.extend_from_slice(c);
            values.extend_from_slice(v);
            offsets.push(cols.len());
            labels.push(self.labels[r as usize]);
        }
        let batch = SparseBatch::from_csr(self.n_cols, offsets, cols, values)
            .context(|| "gathering a mini-batch".into())?;
        Page::encode(FormatKind::Csr, &batch, &labels).context(|| "a mini-batch page".into())
    }

    /// Rows `start..end` as a sparse batch (for fitting a scaling and for
    /// encoding pages).
    pub fn batch(&self, start: usize, end: usize) -> Result<SparseBatch> {
        let (s, e) = (self.offsets[start], self.offsets[end]);
        let offsets = self.offsets[start..=end].iter().map(|o| o - s).collect();
        SparseBatch::from_csr(
            self.n_cols,
            offsets,
            self.cols[s..e].to_vec(),
            self.values[s..e].to_vec(),
        )
        .context(|| format!("rows {start}..{end} of the buffer"))
    }

    /// Moves every row of `other` to the end of this buffer.
    pub fn append(&mut self, other: &RowBuffer) -> Result<()> {
        if other.n_cols != self.n_cols {
            return Err(Failure::data("rows of another width"));
        }
        reserve(&mut self.cols, other.cols.len(), WHAT)?;
        reserve(&mut self.values, other.values.len(), WHAT)?;
        reserve(&mut self.offsets, other.n_rows(), WHAT)?;
        reserve(&mut self.labels, other.n_rows(), WHAT)?;
        let base = self.cols.len();
        self.cols.extend_from_slice(&other.cols);
        self.values.extend_from_slice(&other.values);
        self.offsets
            .extend(other.offsets[1..].iter().map(|o| o + base));
        self.labels.extend_from_slice(&other.labels);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::RowBuffer;

    fn buffer() -> RowBuffer {
        let mut b = RowBuffer::new(3);
        for (i, row) in [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 4.0]]
            .iter()
            .enumerate()
        {
            for (c, &v) in row.iter().enumerate() {
                b.push_entry(c as u32, v).unwrap();
            }
            b.finish_row(i as f64).unwrap();
        }
        b
    }

    #[test]
    fn gathered_rows_decode_to_the_rows_in_the_order_asked() {
        let b = buffer();
        let page = b.gather(&[2, 0, 1]).unwrap();
        assert_eq!(page.labels(), [2.0, 0.0, 1.0]);
        let rows = page.batch().decode().to_dense();
        assert_eq!(
            rows.as_slice().unwrap(),
            [0.0, 3.0, 4.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn an_abandoned_row_leaves_no_entries() {
        let mut b = buffer();
        b.push_entry(0, 9.0).unwrap();
        b.abandon_row();
        assert_eq!((b.n_rows(), b.nnz()), (3, 4));
        let batch = b.batch(1, 3).unwrap();
        assert_eq!(batch.n_rows(), 2);
        assert_eq!(batch.nnz(), 2);
    }

    #[test]
    fn append_keeps_rows_and_labels() {
        let mut a = buffer();
        a.append(&buffer()).unwrap();
        assert_eq!(a.n_rows(), 6);
        assert_eq!(a.row(5), (&[1u32, 2][..], &[3.0, 4.0][..]));
        assert_eq!(a.labels()[3..], [0.0, 1.0, 2.0]);
    }
}

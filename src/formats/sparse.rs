//! CSR (the baseline every format is compared to) and CVI (CSR with the
//! values replaced by ids into a dictionary, see [`ids`](super::ids)).
//!
//! The kernels are plain sparse loops written once, generic over how a
//! stored value is read, so CSR and CVI run the same code.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::bytes::{check_finite, check_rows, finish, header_len, write_header, Structure};
use super::ids::{index_values, read_ids, with_ids, write_ids, Ids};
use super::FormatKind;
use crate::error::{Error, Result};
use crate::kernels::layout::{columns, fill, fill_columns, standard, Shape};
use crate::kernels::{sum4, Workspace};
use crate::sparse::SparseBatch;
use crate::wire::{write_f64s, write_u32s};

/// CSR arrays with values of type `T` read as `f64` through `val`.
#[derive(Debug, Clone, Copy)]
struct SparseView<'a, T, F> {
    shape: Shape,
    offsets: &'a [u32],
    cols: &'a [u32],
    vals: &'a [T],
    val: F,
}

impl<'a, T: Copy, F: Fn(T) -> f64 + Copy> SparseView<'a, T, F> {
    /// Each row's column ids and stored values.
    #[inline]
    fn rows(&self) -> impl Iterator<Item = (&'a [u32], &'a [T])> + 'a {
        let (cols, vals) = (self.cols, self.vals);
        self.offsets
            .iter()
            .zip(&self.offsets[1..])
            .map(move |(&s, &e)| {
                let (s, e) = (s as usize, e as usize);
                (&cols[s..e], &vals[s..e])
            })
    }

    fn decode(&self) -> SparseBatch {
        let offsets = self.offsets.iter().map(|&o| o as usize).collect();
        let values = self.vals.iter().map(|&x| (self.val)(x)).collect();
        SparseBatch::from_csr(self.shape.n_cols, offsets, self.cols.to_vec(), values)
            .expect("a CSR page holds a valid batch")
    }

    /// `A . v`: one sparse dot product per row.
    fn matvec(&self, v: ArrayView1<'_, f64>, mut out: ArrayViewMut1<'_, f64>, ws: &mut Workspace) {
        self.shape.check_matvec(v.len(), out.len());
        let v = standard(v, &mut ws.operand);
        let val = self.val;
        for (o, (cols, vals)) in out.iter_mut().zip(self.rows()) {
            *o = sum4(cols.len(), |i| val(vals[i]) * v[cols[i] as usize]);
        }
    }

    /// `v . A`: each row scattered into the output with weight `v[r]`.
    fn vecmat(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace) {
        self.shape.check_vecmat(v.len(), out.len());
        let v = standard(v, &mut ws.operand);
        let val = self.val;
        fill(out, &mut ws.pair, |out| {
            for (&w, (cols, vals)) in v.iter().zip(self.rows()) {
                for (&c, &x) in cols.iter().zip(vals) {
                    out[c as usize] += val(x) * w;
                }
            }
        });
    }

    /// Adds `v . A` into `out` (not zeroed first).
    fn vecmat_add(&self, v: &[f64], out: &mut [f64]) {
        self.shape.check_vecmat(v.len(), out.len());
        let val = self.val;
        for (&w, (cols, vals)) in v.iter().zip(self.rows()) {
            for (&c, &x) in cols.iter().zip(vals) {
                out[c as usize] += val(x) * w;
            }
        }
    }

    /// `A . M`: output row `r` accumulates `a * M[c, ..]` for each entry
    /// `(c, a)` of row `r`, the inner loop over `p` contiguous.
    fn matmat(&self, m: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>, ws: &mut Workspace) {
        let p = self.shape.check_matmat(m.dim(), out.dim());
        if p == 0 {
            return;
        }
        let m = standard(m, &mut ws.operand);
        let val = self.val;
        fill(out, &mut ws.pair, |out| {
            for (dst, (cols, vals)) in out.chunks_exact_mut(p).zip(self.rows()) {
                for (&c, &x) in cols.iter().zip(vals) {
                    let x = val(x);
                    let src = &m[c as usize * p..][..p];
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }

    /// `M . A`: with `M`'s columns contiguous, output column `c`
    /// accumulates `a * M[.., r]` for each entry `(c, a)` of row `r`.
    fn left_matmat(&self, m: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>, ws: &mut Workspace) {
        let q = self.shape.check_left_matmat(m.dim(), out.dim());
        if q == 0 {
            return;
        }
        let mt = columns(m, &mut ws.operand);
        let val = self.val;
        fill_columns(out, &mut ws.pair, |acc| {
            for (src, (cols, vals)) in mt.chunks_exact(q).zip(self.rows()) {
                for (&c, &x) in cols.iter().zip(vals) {
                    let x = val(x);
                    let dst = &mut acc[c as usize * q..][..q];
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }
}

/// Row offsets of `batch` as `u32`.
///
/// # Errors
/// [`Error::TooLarge`] if the batch has more than `u32::MAX` entries or
/// rows.
fn offsets_u32(batch: &SparseBatch) -> Result<Vec<u32>> {
    check_rows(Shape::of(batch))?;
    if u32::try_from(batch.nnz()).is_err() {
        return Err(Error::TooLarge {
            what: "stored entries (u32 row offsets)",
            value: batch.nnz() as u64,
            max: u32::MAX as u64,
        });
    }
    Ok(batch.offsets().iter().map(|&o| o as u32).collect())
}

/// CSR: `u32` row offsets, `u32` column ids and `f64` values.
#[derive(Debug, Clone)]
pub struct Csr {
    shape: Shape,
    offsets: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<f64>,
}

impl Csr {
    /// Encodes `batch` as CSR.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the batch has more than `u32::MAX` entries.
    pub(crate) fn encode(batch: &SparseBatch) -> Result<Self> {
        Ok(Csr {
            shape: Shape::of(batch),
            offsets: offsets_u32(batch)?,
            cols: batch.cols().to_vec(),
            values: batch.values().to_vec(),
        })
    }

    /// A CSR batch of arrays already known to hold valid rows (the
    /// loader's exact-mode mini-batches, gathered from decoded rows): the
    /// arrays are moved in, not copied or encoded. `offsets` has one entry
    /// per row plus one, starting at 0 and ending at `cols.len()`; each
    /// row's columns ascend below `n_cols`.
    ///
    /// # Errors
    /// [`Error::TooLarge`] for more rows than a page holds.
    pub(crate) fn from_valid_parts(
        n_cols: usize,
        offsets: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<f64>,
    ) -> Result<Self> {
        let shape = Shape {
            n_rows: offsets.len().saturating_sub(1),
            n_cols,
        };
        check_rows(shape)?;
        debug_assert!(SparseBatch::from_csr(
            n_cols,
            offsets.iter().map(|&o| o as usize).collect(),
            cols.clone(),
            values.clone()
        )
        .is_ok());
        Ok(Csr {
            shape,
            offsets,
            cols,
            values,
        })
    }

    /// Validates a CSR page (`docs/FORMAT.md`). Stored zeros are allowed
    /// (a page written after [`Batch::scale`](super::Batch::scale) by 0 holds them):
    /// kernels multiply by them and `decode` drops them.
    ///
    /// # Errors
    /// The first broken rule: header, offsets, columns, length, values
    /// (finite).
    pub(crate) fn load(bytes: &[u8]) -> Result<Self> {
        let Structure {
            mut r,
            shape,
            offsets,
            cols,
            ..
        } = Structure::read(bytes, FormatKind::Csr)?;
        let at = r.offset();
        let values = r.f64s(cols.len() as u64, "values")?;
        finish(&r)?;
        check_finite(&values, "value", at)?;
        Ok(Csr {
            shape,
            offsets,
            cols,
            values,
        })
    }

    fn view(&self) -> SparseView<'_, f64, impl Fn(f64) -> f64 + Copy> {
        SparseView {
            shape: self.shape,
            offsets: &self.offsets,
            cols: &self.cols,
            vals: &self.values,
            val: |x: f64| x,
        }
    }
}

impl Csr {
    /// Heap bytes held: offsets, columns and values.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * self.offsets.capacity() + 4 * self.cols.capacity() + 8 * self.values.capacity()
    }

    pub(crate) fn kind(&self) -> FormatKind {
        FormatKind::Csr
    }

    /// The header, then `4 * (n_rows + 1) + 12 * nnz`.
    pub(crate) fn encoded_len(&self) -> usize {
        header_len(self.shape, &[])
            + 4 * self.offsets.len()
            + 4 * self.cols.len()
            + 8 * self.values.len()
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        write_header(out, FormatKind::Csr, self.shape, &[]);
        write_u32s(out, &self.offsets);
        write_u32s(out, &self.cols);
        write_f64s(out, &self.values);
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.shape.n_rows
    }

    pub(crate) fn n_cols(&self) -> usize {
        self.shape.n_cols
    }

    pub(crate) fn decode(&self) -> SparseBatch {
        self.view().decode()
    }

    pub(crate) fn scale(&mut self, c: f64) {
        self.values.iter_mut().for_each(|x| *x *= c);
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().matvec(v, out, ws);
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().vecmat(v, out, ws);
    }

    pub(crate) fn vecmat_add(&self, v: &[f64], out: &mut [f64]) {
        self.view().vecmat_add(v, out);
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().matmat(m, out, ws);
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().left_matmat(m, out, ws);
    }
}

/// CVI (CSR-VI): CSR with each value replaced by an id into a dictionary
/// of the distinct values (by bits).
#[derive(Debug, Clone)]
pub struct Cvi {
    shape: Shape,
    offsets: Vec<u32>,
    cols: Vec<u32>,
    /// One id per entry, at the narrowest width that holds the largest id.
    ids: Ids,
    /// The distinct values in order of first appearance.
    dict: Vec<f64>,
}

impl Cvi {
    /// Encodes `batch` as CSR with value indexing.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the batch has more than `u32::MAX` entries.
    pub(crate) fn encode(batch: &SparseBatch) -> Result<Self> {
        let offsets = offsets_u32(batch)?;
        let (ids, dict) = index_values(batch.values(), false)?;
        Ok(Cvi {
            shape: Shape::of(batch),
            offsets,
            cols: batch.cols().to_vec(),
            ids: Ids::narrow(ids, dict.len()),
            dict,
        })
    }

    /// Validates a CVI page (`docs/FORMAT.md`): as CSR, with every id
    /// below the dictionary length. The dictionary may hold zeros and
    /// repeated values.
    ///
    /// # Errors
    /// The first broken rule: header, offsets, columns, ids, length,
    /// dictionary values (finite).
    pub(crate) fn load(bytes: &[u8]) -> Result<Self> {
        let Structure {
            mut r,
            shape,
            dict_len,
            offsets,
            cols,
        } = Structure::read(bytes, FormatKind::Cvi)?;
        let ids = read_ids(&mut r, cols.len() as u64, dict_len, "value ids")?;
        let at = r.offset();
        let dict = r.f64s(dict_len, "dictionary")?;
        finish(&r)?;
        check_finite(&dict, "dictionary value", at)?;
        Ok(Cvi {
            shape,
            offsets,
            cols,
            ids,
            dict,
        })
    }
}

/// Runs `$method` on the [`SparseView`] of a [`Cvi`] at its id width.
macro_rules! cvi_view {
    ($cvi:expr, $method:ident($($arg:expr),*)) => {{
        let cvi: &Cvi = $cvi;
        let (shape, offsets, cols) = (cvi.shape, &cvi.offsets[..], &cvi.cols[..]);
        with_ids!(&cvi.ids, &cvi.dict, vals, val => SparseView { shape, offsets, cols, vals, val }
            .$method($($arg),*))
    }};
}

impl Cvi {
    /// Heap bytes held: offsets, columns, ids and the dictionary.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * self.offsets.capacity()
            + 4 * self.cols.capacity()
            + self.ids.heap_bytes()
            + 8 * self.dict.capacity()
    }

    pub(crate) fn kind(&self) -> FormatKind {
        FormatKind::Cvi
    }

    /// The header (with the dictionary length), offsets and columns as
    /// CSR, the ids, the dictionary.
    pub(crate) fn encoded_len(&self) -> usize {
        header_len(self.shape, &[self.dict.len() as u64])
            + 4 * self.offsets.len()
            + 4 * self.cols.len()
            + self.ids.byte_len()
            + 8 * self.dict.len()
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        write_header(out, FormatKind::Cvi, self.shape, &[self.dict.len() as u64]);
        write_u32s(out, &self.offsets);
        write_u32s(out, &self.cols);
        write_ids(out, &self.ids);
        write_f64s(out, &self.dict);
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.shape.n_rows
    }

    pub(crate) fn n_cols(&self) -> usize {
        self.shape.n_cols
    }

    pub(crate) fn decode(&self) -> SparseBatch {
        cvi_view!(self, decode())
    }

    /// Touches only the dictionary.
    pub(crate) fn scale(&mut self, c: f64) {
        self.dict.iter_mut().for_each(|x| *x *= c);
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        cvi_view!(self, matvec(v, out, ws))
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        cvi_view!(self, vecmat(v, out, ws))
    }

    pub(crate) fn vecmat_add(&self, v: &[f64], out: &mut [f64]) {
        cvi_view!(self, vecmat_add(v, out))
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        cvi_view!(self, matmat(m, out, ws))
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        cvi_view!(self, left_matmat(m, out, ws))
    }
}

//! DEN (dense row-major `f64`) and DVI (dense row-major value ids into a
//! dictionary), plus what every non-TOC format shares: the dimension checks,
//! the staging of operands and outputs through contiguous scratch, and the
//! dense kernels over a row-major slice, which the general-purpose
//! compressors also run after decompressing.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::bytes::{check_finite, check_rows, finish, header_len, read_header, write_header};
use super::ids::{index_values, read_ids, with_ids, write_ids, Ids};
use super::FormatKind;
use crate::error::{Error, Result};
use crate::kernels::layout::{columns, fill, fill_columns, standard, Shape};
use crate::kernels::{sum4, Workspace};
use crate::sparse::SparseBatch;
use crate::wire::write_f64s;

/// Bytes of a DEN page of `n_rows` x `n_cols` (header and values), computed
/// without building it: what [`Batch::encoded_len`](super::Batch::encoded_len) of the encoded
/// page returns.
pub fn den_len(n_rows: usize, n_cols: usize) -> u64 {
    let shape = Shape { n_rows, n_cols };
    header_len(shape, &[]) as u64 + 8 * n_rows as u64 * n_cols as u64
}

/// The batch as a dense row-major `f64` matrix.
///
/// # Errors
/// [`Error::LimitExceeded`] above the resource limits;
/// [`Error::OutOfMemory`] if the dense matrix cannot be allocated.
pub(super) fn dense_values(batch: &SparseBatch) -> Result<Vec<f64>> {
    let shape = Shape::of(batch);
    check_rows(shape)?;
    crate::limits::check_dense_cells(shape.n_rows, shape.n_cols)?;
    let mut out = try_zeros(shape.cells(8)?)?;
    scatter_rows(batch, &mut out, batch.values());
    Ok(out)
}

/// `len` zeros, or [`Error::OutOfMemory`] if they cannot be allocated.
fn try_zeros<T: Copy + Default>(len: usize) -> Result<Vec<T>> {
    crate::limits::try_filled(len, T::default(), "a dense matrix")
}

/// Writes `items` (one per stored entry of `batch`) at their row-major
/// positions in `dense`.
fn scatter_rows<T: Copy>(batch: &SparseBatch, dense: &mut [T], items: &[T]) {
    let n = batch.n_cols();
    for (r, w) in batch.offsets().windows(2).enumerate() {
        let row = &mut dense[r * n..(r + 1) * n];
        for (&c, &x) in batch.cols()[w[0]..w[1]].iter().zip(&items[w[0]..w[1]]) {
            row[c as usize] = x;
        }
    }
}

/// `A * c` on dense values; zeros stay zero (as in every sparse format).
pub(super) fn scale_values(values: &mut [f64], c: f64) {
    for x in values {
        *x = if *x == 0.0 { 0.0 } else { *x * c };
    }
}

/// The dense matrix of `shape` in `data` as a [`DenseView`].
pub(super) fn plain(data: &[f64], shape: Shape) -> DenseView<'_, f64, impl Fn(f64) -> f64 + Copy> {
    DenseView {
        data,
        shape,
        val: |x: f64| x,
    }
}

/// A dense row-major matrix of cells `T`, read as `f64` through `val`.
#[derive(Debug, Clone, Copy)]
pub(super) struct DenseView<'a, T, F> {
    /// `n_rows * n_cols` cells, row-major.
    pub(super) data: &'a [T],
    /// The dimensions.
    pub(super) shape: Shape,
    /// A cell's value.
    pub(super) val: F,
}

impl<T: Copy, F: Fn(T) -> f64 + Copy> DenseView<'_, T, F> {
    #[inline]
    fn row(&self, r: usize) -> &[T] {
        let n = self.shape.n_cols;
        &self.data[r * n..(r + 1) * n]
    }

    /// The batch in sparse row form (zeros dropped).
    pub(super) fn decode(&self) -> SparseBatch {
        let (mut offsets, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
        for r in 0..self.shape.n_rows {
            for (c, &x) in self.row(r).iter().enumerate() {
                let x = (self.val)(x);
                if x != 0.0 {
                    cols.push(c as u32);
                    values.push(x);
                }
            }
            offsets.push(cols.len());
        }
        SparseBatch::from_csr(self.shape.n_cols, offsets, cols, values)
            .expect("a dense page holds a valid batch")
    }

    /// `A . v`: one dot product per row. `buf`: scratch for a strided `v`.
    pub(super) fn matvec(
        &self,
        v: ArrayView1<'_, f64>,
        mut out: ArrayViewMut1<'_, f64>,
        buf: &mut Vec<f64>,
    ) {
        self.shape.check_matvec(v.len(), out.len());
        let v = standard(v, buf);
        let val = self.val;
        for (r, o) in out.iter_mut().enumerate() {
            let row = self.row(r);
            *o = sum4(row.len(), |i| val(row[i]) * v[i]);
        }
    }

    /// `v . A`: `v[r]` times row `r`, summed. `a`, `b`: scratch.
    pub(super) fn vecmat(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        a: &mut Vec<f64>,
        b: &mut Vec<f64>,
    ) {
        self.shape.check_vecmat(v.len(), out.len());
        let v = standard(v, a);
        let val = self.val;
        fill(out, b, |out| {
            for (r, &vr) in v.iter().enumerate() {
                for (o, &x) in out.iter_mut().zip(self.row(r)) {
                    *o += vr * val(x);
                }
            }
        });
    }

    /// `A . M`: each output row is the rows of `M` weighted by the row of
    /// `A`, the inner loop over `p` contiguous. `a`, `b`: scratch.
    pub(super) fn matmat(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        a: &mut Vec<f64>,
        b: &mut Vec<f64>,
    ) {
        let p = self.shape.check_matmat(m.dim(), out.dim());
        if p == 0 {
            return;
        }
        let m = standard(m, a);
        let val = self.val;
        fill(out, b, |out| {
            for (r, dst) in out.chunks_exact_mut(p).enumerate() {
                for (&x, src) in self.row(r).iter().zip(m.chunks_exact(p)) {
                    let x = val(x);
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }

    /// `M . A`: with `M`'s columns contiguous, output column `c`
    /// accumulates `A[r, c] * M[.., r]` over the rows, the inner loop over
    /// `q` contiguous (one value lookup per cell, as in `A.M`). `a`, `b`:
    /// scratch.
    pub(super) fn left_matmat(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        a: &mut Vec<f64>,
        b: &mut Vec<f64>,
    ) {
        let q = self.shape.check_left_matmat(m.dim(), out.dim());
        if q == 0 {
            return;
        }
        let mt = columns(m, a);
        let val = self.val;
        fill_columns(out, b, |acc| {
            for (r, src) in mt.chunks_exact(q).enumerate() {
                for (&x, dst) in self.row(r).iter().zip(acc.chunks_exact_mut(q)) {
                    let x = val(x);
                    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
                }
            }
        });
    }
}

/// DEN: the batch as a dense row-major `f64` matrix.
#[derive(Debug, Clone)]
pub struct Den {
    shape: Shape,
    values: Vec<f64>,
}

impl Den {
    /// Encodes `batch` densely.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the dense matrix cannot be allocated.
    pub(crate) fn encode(batch: &SparseBatch) -> Result<Self> {
        Ok(Den {
            shape: Shape::of(batch),
            values: dense_values(batch)?,
        })
    }

    /// Validates a DEN page (`docs/FORMAT.md`): after the header, exactly
    /// `8 * n_rows * n_cols` bytes of values.
    ///
    /// # Errors
    /// Header errors, or [`Error::LengthMismatch`] for any other payload
    /// length (checked before allocating); [`Error::InvalidNumber`] for a
    /// value that is not finite.
    pub(crate) fn load(bytes: &[u8]) -> Result<Self> {
        let (mut r, shape) = read_header(bytes, FormatKind::Den)?;
        let want = shape.n_rows as u128 * shape.n_cols as u128 * 8;
        if want != r.remaining() as u128 {
            return Err(Error::LengthMismatch {
                what: "DEN payload bytes (8 * n_rows * n_cols)",
                expected: u64::try_from(want).unwrap_or(u64::MAX),
                found: r.remaining() as u64,
            });
        }
        let at = r.offset();
        let values = r.f64s((want / 8) as u64, "values")?;
        finish(&r)?;
        check_finite(&values, "value", at)?;
        Ok(Den { shape, values })
    }

    fn view(&self) -> DenseView<'_, f64, impl Fn(f64) -> f64 + Copy> {
        plain(&self.values, self.shape)
    }
}

impl Den {
    /// Heap bytes held: the dense values.
    pub(crate) fn heap_bytes(&self) -> usize {
        8 * self.values.capacity()
    }

    pub(crate) fn kind(&self) -> FormatKind {
        FormatKind::Den
    }

    /// The header and 8 bytes per cell.
    pub(crate) fn encoded_len(&self) -> usize {
        header_len(self.shape, &[]) + 8 * self.values.len()
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        write_header(out, FormatKind::Den, self.shape, &[]);
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
        scale_values(&mut self.values, c);
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().matvec(v, out, &mut ws.operand);
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().vecmat(v, out, &mut ws.operand, &mut ws.pair);
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view().matmat(m, out, &mut ws.operand, &mut ws.pair);
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.view()
            .left_matmat(m, out, &mut ws.operand, &mut ws.pair);
    }
}

/// DVI: a dense row-major matrix of value ids into a dictionary of the
/// distinct non-zero values (by bits); id 0 stands for `0.0`.
#[derive(Debug, Clone)]
pub struct Dvi {
    shape: Shape,
    /// One id per cell, at the narrowest width that holds the largest id.
    ids: Ids,
    /// `dict[0] == 0.0` (implicit, not counted in the size), then the
    /// distinct values in order of first appearance.
    dict: Vec<f64>,
}

impl Dvi {
    /// Encodes `batch` as dense value ids.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the dense matrix cannot be allocated;
    /// [`Error::TooLarge`] if the batch has more distinct values than
    /// `u32` ids can number.
    pub(crate) fn encode(batch: &SparseBatch) -> Result<Self> {
        let shape = Shape::of(batch);
        check_rows(shape)?;
        crate::limits::check_dense_cells(shape.n_rows, shape.n_cols)?;
        let (nnz_ids, dict) = index_values(batch.values(), true)?;
        let mut ids = try_zeros::<u32>(shape.cells(4)?)?;
        scatter_rows(batch, &mut ids, &nnz_ids);
        Ok(Dvi {
            shape,
            ids: Ids::narrow(ids, dict.len()),
            dict,
        })
    }

    /// Validates a DVI page (`docs/FORMAT.md`): one id per cell, each at
    /// most the dictionary length (0 is the implicit zero). The dictionary
    /// may hold zeros and repeated values.
    ///
    /// # Errors
    /// Header errors, [`Error::Truncated`], [`Error::ValueIdOutOfRange`]
    /// (`dict_len` counting the implicit zero), [`Error::TrailingBytes`],
    /// [`Error::InvalidNumber`] for a dictionary value that is not finite.
    pub(crate) fn load(bytes: &[u8]) -> Result<Self> {
        let (mut r, shape) = read_header(bytes, FormatKind::Dvi)?;
        let dict_len = r.varint_max("dictionary length", u32::MAX.into())?;
        let cells = shape.n_rows as u128 * shape.n_cols as u128;
        // One byte or more per cell: more cells than bytes left is truncated.
        let cells = u64::try_from(cells).unwrap_or(u64::MAX);
        let ids = read_ids(&mut r, cells, dict_len + 1, "value ids")?;
        let at = r.offset();
        let mut dict = vec![0.0];
        dict.extend(r.f64s(dict_len, "dictionary")?);
        finish(&r)?;
        check_finite(&dict[1..], "dictionary value", at)?;
        Ok(Dvi { shape, ids, dict })
    }
}

/// Runs `$method` on the [`DenseView`] of a [`Dvi`] at its id width.
macro_rules! dvi_view {
    ($dvi:expr, $method:ident($($arg:expr),*)) => {{
        let dvi: &Dvi = $dvi;
        let shape = dvi.shape;
        with_ids!(&dvi.ids, &dvi.dict, data, val => DenseView { data, shape, val }.$method($($arg),*))
    }};
}

impl Dvi {
    /// Heap bytes held: the ids and the dictionary.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.ids.heap_bytes() + 8 * self.dict.capacity()
    }

    pub(crate) fn kind(&self) -> FormatKind {
        FormatKind::Dvi
    }

    /// The header (with the dictionary length), the ids, the dictionary
    /// without the implicit zero.
    pub(crate) fn encoded_len(&self) -> usize {
        let stored = self.dict.len() - 1;
        header_len(self.shape, &[stored as u64]) + self.ids.byte_len() + 8 * stored
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        write_header(
            out,
            FormatKind::Dvi,
            self.shape,
            &[(self.dict.len() - 1) as u64],
        );
        write_ids(out, &self.ids);
        write_f64s(out, &self.dict[1..]);
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.shape.n_rows
    }

    pub(crate) fn n_cols(&self) -> usize {
        self.shape.n_cols
    }

    pub(crate) fn decode(&self) -> SparseBatch {
        dvi_view!(self, decode())
    }

    /// Touches only the dictionary; the reserved zero stays zero.
    pub(crate) fn scale(&mut self, c: f64) {
        self.dict[1..].iter_mut().for_each(|x| *x *= c);
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        dvi_view!(self, matvec(v, out, &mut ws.operand))
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        dvi_view!(self, vecmat(v, out, &mut ws.operand, &mut ws.pair))
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        dvi_view!(self, matmat(m, out, &mut ws.operand, &mut ws.pair))
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        dvi_view!(self, left_matmat(m, out, &mut ws.operand, &mut ws.pair))
    }
}

//! [`Batch`]: one mini-batch (or page) held in any of the formats, with
//! the kernels MGD needs.
//!
//! The set of formats is closed (the paper's comparison, section 5, and
//! TOC's three levels), so a batch is an enum rather than a trait object:
//! a kernel call is a `match` the compiler can see through, a batch is a
//! plain value (no `Box<dyn ..>`), and adding a format is a compile error
//! everywhere it must be handled.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::{CodedRows, Compressed, Csr, Cvi, Den, Dvi, FormatKind, TocPage};
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

/// One batch in some format, with the kernels MGD needs.
///
/// Made by [`FormatKind::encode`] (from rows) or [`FormatKind::load`]
/// (from untrusted page bytes, validated). The kernels have the contracts
/// of those of [`DecodeTree`](crate::DecodeTree): `out` is overwritten,
/// and a dimension mismatch panics.
///
/// ```
/// use tocpile::ndarray::Array1;
/// use tocpile::formats::{Batch, FormatKind};
/// use tocpile::{SparseBatch, Workspace};
///
/// let rows = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])?;
/// let toc = FormatKind::TocFull.encode(&rows)?;
/// let csr = FormatKind::Csr.encode(&rows)?;
/// assert!(matches!(toc, Batch::Toc(_)));
///
/// // A.v on the encoded forms: the same result in every format.
/// let v = Array1::from(vec![1.0, 10.0, 100.0]);
/// let mut ws = Workspace::new();
/// let (mut a, mut b) = (Array1::zeros(2), Array1::zeros(2));
/// toc.matvec_into(v.view(), a.view_mut(), &mut ws);
/// csr.matvec_into(v.view(), b.view_mut(), &mut ws);
/// assert_eq!(a, b);
/// assert_eq!(a.to_vec(), [201.0, 30.0]);
///
/// // Page bytes round-trip through validation.
/// let back = FormatKind::TocFull.load(&toc.to_bytes())?;
/// assert_eq!(back.decode(), rows);
/// assert!(back.heap_bytes() > back.encoded_len()); // the decode tree
/// # Ok::<(), tocpile::Error>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
// The TOC variant (bytes, decode tree, scaling state: about 700 bytes) is
// the large one and the common one. Boxing it would add an allocation per
// page on the loader's path, while a batch is moved rarely: it lives in
// its page's one shared allocation (`Page`).
#[allow(clippy::large_enum_variant)]
pub enum Batch {
    /// DEN: dense `f64` rows.
    Den(Den),
    /// CSR: compressed sparse rows.
    Csr(Csr),
    /// CVI: CSR with value indexing.
    Cvi(Cvi),
    /// DVI: dense value ids into a dictionary.
    Dvi(Dvi),
    /// snappy, gzip or LZ4 over the DEN bytes.
    Compressed(Compressed),
    /// TOC at any level, with its decode tree.
    Toc(TocPage),
    /// Rows as first-layer codes into a pair table shared by many batches
    /// (the loader's mini-batches whose rows are cheaper than their tree:
    /// [`CodedRows`]). Reports [`FormatKind::TocFull`], its bytes a
    /// TOC_FULL batch.
    Coded(CodedRows),
}

/// `$body` with `$b` bound to the batch inside whichever variant `$batch`
/// is: every format has the same inherent methods.
macro_rules! dispatch {
    ($batch:expr, $b:ident => $body:expr) => {
        match $batch {
            Batch::Den($b) => $body,
            Batch::Csr($b) => $body,
            Batch::Cvi($b) => $body,
            Batch::Dvi($b) => $body,
            Batch::Compressed($b) => $body,
            Batch::Toc($b) => $body,
            Batch::Coded($b) => $body,
        }
    };
}

impl Batch {
    /// The format.
    pub fn kind(&self) -> FormatKind {
        dispatch!(self, b => b.kind())
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        dispatch!(self, b => b.n_rows())
    }

    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        dispatch!(self, b => b.n_cols())
    }

    /// Bytes this batch takes in its format: exactly what
    /// [`write_bytes`](Self::write_bytes) appends.
    pub fn encoded_len(&self) -> usize {
        dispatch!(self, b => b.encoded_len())
    }

    /// Heap bytes the batch holds in memory: its arrays' allocations
    /// (capacity, not length), and for TOC the decode tree as well as the
    /// bytes, which makes it several times
    /// [`encoded_len`](Self::encoded_len). Scratch memory of the kernels
    /// lives in the [`Workspace`] and is not counted.
    pub fn heap_bytes(&self) -> usize {
        dispatch!(self, b => b.heap_bytes())
    }

    /// Appends the page bytes of this batch, which [`FormatKind::load`]
    /// reads back. After [`scale`](Self::scale) they hold the scaled batch
    /// (a DEN, CSR, CVI or DVI page may then hold zeros, which decode
    /// drops).
    pub fn write_bytes(&self, out: &mut Vec<u8>) {
        dispatch!(self, b => b.write_bytes(out))
    }

    /// The page bytes in a new vector of [`encoded_len`](Self::encoded_len)
    /// bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.write_bytes(&mut out);
        out
    }

    /// The batch in sparse row form.
    ///
    /// # Panics
    /// If the system refuses the memory (an abort, as for any `Vec`): a
    /// TOC page may decode to far more than its bytes; use
    /// [`try_decode`](Self::try_decode) for pages of untrusted files.
    pub fn decode(&self) -> SparseBatch {
        dispatch!(self, b => b.decode())
    }

    /// [`decode`](Self::decode), with a TOC page's allocations fallible
    /// (the other formats decode to at most a small multiple of their
    /// bytes).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the system
    /// refuses the decoded batch's memory.
    pub fn try_decode(&self) -> crate::Result<SparseBatch> {
        match self {
            Batch::Toc(page) => {
                let mut out = SparseBatch::default();
                page.tree().try_decode_into(&mut out)?;
                Ok(out)
            }
            other => Ok(dispatch!(other, b => b.decode())),
        }
    }

    /// `A * c` in place.
    pub fn scale(&mut self, c: f64) {
        dispatch!(self, b => b.scale(c))
    }

    /// Whether the kernels run on a decode tree (TOC paper section 4): a
    /// TOC batch that is not flat (`kernels/form.rs`). Other formats,
    /// coded rows and flat TOC batches run on their rows.
    pub fn on_tree(&self) -> bool {
        matches!(self, Batch::Toc(page) if !page.tree().is_flat())
    }

    /// The TOC page, with its decode tree, if this is one.
    pub fn as_toc(&self) -> Option<&TocPage> {
        match self {
            Batch::Toc(page) => Some(page),
            _ => None,
        }
    }

    /// `A . v` into `out` (`n_rows` entries).
    ///
    /// # Panics
    /// If `v` does not have `n_cols` entries or `out` `n_rows`.
    pub fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        dispatch!(self, b => b.matvec_into(v, out, ws))
    }

    /// `v . A` into `out` (`n_cols` entries).
    ///
    /// # Panics
    /// If `v` does not have `n_rows` entries or `out` `n_cols`.
    pub fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        dispatch!(self, b => b.vecmat_into(v, out, ws))
    }

    /// Adds `v . A` into `out` (`n_cols` entries, **not** zeroed first).
    /// A linear model's gradient sums `v . A` over the pages of a
    /// mini-batch: added in place, a page costs its non-zeros, not also a
    /// zeroed `n_cols` vector and a second pass to add it (on 50-row pages
    /// of flights3m's 496 columns those were as much work as the kernel).
    /// TOC, CSR and CVI add in place; the other formats go through
    /// [`vecmat_into`](Self::vecmat_into) and a temporary vector.
    ///
    /// # Panics
    /// If `v` does not have `n_rows` entries or `out` `n_cols`.
    pub fn vecmat_add(&self, v: &[f64], out: &mut [f64], ws: &mut Workspace) {
        match self {
            Batch::Toc(b) => b.vecmat_add(v, out, ws),
            Batch::Csr(b) => b.vecmat_add(v, out),
            Batch::Cvi(b) => b.vecmat_add(v, out),
            Batch::Coded(b) => b.vecmat_add(v, out),
            other => {
                let mut tmp = vec![0.0; out.len()];
                other.vecmat_into(
                    ndarray::ArrayView1::from(v),
                    ndarray::ArrayViewMut1::from(&mut tmp[..]),
                    ws,
                );
                out.iter_mut().zip(&tmp).for_each(|(o, t)| *o += t);
            }
        }
    }

    /// The gradient of a linear model on this batch, added into `out`
    /// (**not** zeroed first): `out += s . A` with
    /// `s[r] = slope(r, (A.w)[r])`. `slope` is called once per row, in row
    /// order, with the row's dot product with `w`, and returns the loss
    /// derivative at that row (the caller adds its bias and sums its loss
    /// there). TOC runs one fused kernel
    /// ([`DecodeTree::linear_gradient_add`](crate::DecodeTree::linear_gradient_add));
    /// the other formats run
    /// [`linear_gradient_add_separate`](Self::linear_gradient_add_separate).
    ///
    /// # Panics
    /// If `w` or `out` does not have `n_cols` entries.
    pub fn linear_gradient_add(
        &self,
        w: &[f64],
        slope: impl FnMut(usize, f64) -> f64,
        out: &mut [f64],
        ws: &mut Workspace,
    ) {
        match self {
            Batch::Toc(b) => b.tree().linear_gradient_add(w, slope, out, ws),
            other => other.linear_gradient_add_separate(w, slope, out, ws),
        }
    }

    /// [`linear_gradient_add`](Self::linear_gradient_add) as two kernels
    /// and a loop between them, in every format: `A.w` into a per-row
    /// vector (kept in the workspace), the slopes in place, then
    /// [`vecmat_add`](Self::vecmat_add). The reference the fused kernel is
    /// measured and tested against.
    ///
    /// # Panics
    /// As [`linear_gradient_add`](Self::linear_gradient_add).
    pub fn linear_gradient_add_separate(
        &self,
        w: &[f64],
        mut slope: impl FnMut(usize, f64) -> f64,
        out: &mut [f64],
        ws: &mut Workspace,
    ) {
        let mut z = std::mem::take(&mut ws.rows);
        z.clear();
        z.resize(self.n_rows(), 0.0);
        self.matvec_into(ArrayView1::from(w), ArrayViewMut1::from(&mut z[..]), ws);
        for (r, zr) in z.iter_mut().enumerate() {
            *zr = slope(r, *zr);
        }
        self.vecmat_add(&z, out, ws);
        ws.rows = z;
    }

    /// `A . M` into `out` (`M`: `n_cols x p`; `out`: `n_rows x p`).
    ///
    /// # Panics
    /// On a dimension mismatch.
    pub fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        dispatch!(self, b => b.matmat_into(m, out, ws))
    }

    /// `M . A` into `out` (`M`: `q x n_rows`; `out`: `q x n_cols`).
    ///
    /// # Panics
    /// On a dimension mismatch.
    pub fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        dispatch!(self, b => b.left_matmat_into(m, out, ws))
    }
}

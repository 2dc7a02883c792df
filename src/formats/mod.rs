//! The formats the TOC paper compares against (section 5), behind one
//! interface with TOC itself, so that benchmarks, the compression study and
//! the trainer compare formats on identical batches.
//!
//! | [`FormatKind`] | name | what is stored | kernels |
//! |---|---|---|---|
//! | `Den` | DEN | dense `f64` rows | dense loops |
//! | `Csr` | CSR | `u32` row offsets, `u32` columns, `f64` values | sparse loops |
//! | `Cvi` | CVI | CSR with values replaced by ids into a dictionary | sparse loops, value lookup |
//! | `Dvi` | DVI | dense rows of value ids into a dictionary | dense loops, value lookup |
//! | `Snappy` | snappy | snappy over the DEN bytes | decompress, then dense |
//! | `Gzip` | gzip | gzip (level 6) over the DEN bytes | decompress, then dense |
//! | `Lz4` | lz4 | LZ4 block over the DEN bytes | decompress, then dense |
//! | `TocSparse`, `TocLogical`, `TocFull` | TOC_SPARSE, TOC_LOGICAL, TOC_FULL | [`TocBatch`](crate::TocBatch) at each [`Level`] | on the decode tree |
//!
//! The general-purpose compressors decompress before every kernel, as a
//! user of them would. Encoded sizes count every byte a page of that format
//! needs (array lengths included), so ratios compare like with like: they
//! are the exact length of the page's bytes ([`EncodedBatch::write_bytes`]),
//! which [`FormatKind::load`] validates and loads back. The page layouts
//! are specified in `docs/FORMAT.md` ("Comparison-format pages").

mod bytes;
mod dense;
mod general;
mod sparse;
mod toc;

pub(crate) use dense::den_len;
pub(crate) use sparse::index_values;

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use crate::codec::{EncodeOptions, Level};
use crate::error::Result;
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

/// Every format tocpile can compare, by the names the paper uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FormatKind {
    /// Dense `f64` rows.
    Den,
    /// Compressed sparse rows.
    Csr,
    /// CSR with value indexing.
    Cvi,
    /// Dense with value indexing.
    Dvi,
    /// snappy over the dense bytes.
    Snappy,
    /// gzip (level 6) over the dense bytes.
    Gzip,
    /// LZ4 (block format) over the dense bytes.
    Lz4,
    /// TOC, sparse encoding only.
    TocSparse,
    /// TOC, sparse and logical encoding.
    TocLogical,
    /// TOC, all three stages (the default format).
    TocFull,
}

impl FormatKind {
    /// Every format, in table order.
    pub const ALL: [FormatKind; 10] = [
        FormatKind::Den,
        FormatKind::Csr,
        FormatKind::Cvi,
        FormatKind::Dvi,
        FormatKind::Snappy,
        FormatKind::Gzip,
        FormatKind::Lz4,
        FormatKind::TocSparse,
        FormatKind::TocLogical,
        FormatKind::TocFull,
    ];

    /// The format's name as the paper writes it ("DEN", "CSR", "TOC_FULL").
    pub fn name(self) -> &'static str {
        match self {
            FormatKind::Den => "DEN",
            FormatKind::Csr => "CSR",
            FormatKind::Cvi => "CVI",
            FormatKind::Dvi => "DVI",
            FormatKind::Snappy => "snappy",
            FormatKind::Gzip => "gzip",
            FormatKind::Lz4 => "lz4",
            FormatKind::TocSparse => "TOC_SPARSE",
            FormatKind::TocLogical => "TOC_LOGICAL",
            FormatKind::TocFull => "TOC_FULL",
        }
    }

    /// Looks a format up by name, ignoring case; `toc` means `TOC_FULL`.
    pub fn from_name(name: &str) -> Option<FormatKind> {
        if name.eq_ignore_ascii_case("toc") {
            return Some(FormatKind::TocFull);
        }
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    /// Encodes `batch` in this format.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) if the batch does not fit
    /// the format's integer widths.
    pub fn encode(self, batch: &SparseBatch) -> Result<Box<dyn EncodedBatch>> {
        let toc = |level| toc::TocPage::encode(batch, EncodeOptions::level(level));
        Ok(match self {
            FormatKind::Den => Box::new(dense::Den::encode(batch)?),
            FormatKind::Csr => Box::new(sparse::Csr::encode(batch)?),
            FormatKind::Cvi => Box::new(sparse::Cvi::encode(batch)?),
            FormatKind::Dvi => Box::new(dense::Dvi::encode(batch)?),
            FormatKind::Snappy => {
                Box::new(general::Compressed::encode(batch, general::Codec::Snappy)?)
            }
            FormatKind::Gzip => Box::new(general::Compressed::encode(batch, general::Codec::Gzip)?),
            FormatKind::Lz4 => Box::new(general::Compressed::encode(batch, general::Codec::Lz4)?),
            FormatKind::TocSparse => Box::new(toc(Level::Sparse)?),
            FormatKind::TocLogical => Box::new(toc(Level::Logical)?),
            FormatKind::TocFull => Box::new(toc(Level::Full)?),
        })
    }

    /// Validates untrusted page bytes of this format (as written by
    /// [`EncodedBatch::write_bytes`]) and loads them. TOC pages are the
    /// [`TocBatch`](crate::TocBatch) blob, checked by
    /// [`TocBatch::from_bytes`](crate::TocBatch::from_bytes), their decode
    /// tree built once; the other formats are specified in
    /// `docs/FORMAT.md`. Never panics; memory is linear in `bytes.len()`
    /// (for snappy, gzip and LZ4 at most the codec's largest compression
    /// ratio times it).
    ///
    /// # Errors
    /// The first rule the bytes break, as an [`Error`](crate::Error)
    /// naming the field and offset, row and position, or id.
    pub fn load(self, bytes: &[u8]) -> Result<Box<dyn EncodedBatch>> {
        let toc = |level| toc::TocPage::load(bytes, level);
        let compressed = |codec| general::Compressed::load(bytes, codec);
        Ok(match self {
            FormatKind::Den => Box::new(dense::Den::load(bytes)?),
            FormatKind::Csr => Box::new(sparse::Csr::load(bytes)?),
            FormatKind::Cvi => Box::new(sparse::Cvi::load(bytes)?),
            FormatKind::Dvi => Box::new(dense::Dvi::load(bytes)?),
            FormatKind::Snappy => Box::new(compressed(general::Codec::Snappy)?),
            FormatKind::Gzip => Box::new(compressed(general::Codec::Gzip)?),
            FormatKind::Lz4 => Box::new(compressed(general::Codec::Lz4)?),
            FormatKind::TocSparse => Box::new(toc(Level::Sparse)?),
            FormatKind::TocLogical => Box::new(toc(Level::Logical)?),
            FormatKind::TocFull => Box::new(toc(Level::Full)?),
        })
    }
}

impl std::fmt::Display for FormatKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One batch held in some format, with the kernels MGD needs.
///
/// Kernels have the same contracts as those of
/// [`DecodeTree`](crate::DecodeTree): `out` is overwritten, and a dimension
/// mismatch panics.
pub trait EncodedBatch: Send + Sync {
    /// The format.
    fn kind(&self) -> FormatKind;
    /// Bytes this batch takes in its format: exactly what
    /// [`write_bytes`](Self::write_bytes) appends.
    fn encoded_len(&self) -> usize;
    /// Appends the page bytes of this batch, which
    /// [`FormatKind::load`] reads back. After [`scale`](Self::scale) they
    /// hold the scaled batch (a DEN, CSR, CVI or DVI page may then hold
    /// zeros, which decode drops).
    fn write_bytes(&self, out: &mut Vec<u8>);
    /// The page bytes in a new vector of [`encoded_len`](Self::encoded_len)
    /// bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.write_bytes(&mut out);
        out
    }
    /// Number of rows.
    fn n_rows(&self) -> usize;
    /// Number of columns.
    fn n_cols(&self) -> usize;
    /// The batch in sparse row form.
    fn decode(&self) -> SparseBatch;
    /// `A * c` in place.
    fn scale(&mut self, c: f64);
    /// `A . v` into `out` (`n_rows` entries).
    fn matvec_into(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace);
    /// `v . A` into `out` (`n_cols` entries).
    fn vecmat_into(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace);
    /// `A . M` into `out` (`M`: `n_cols x p`; `out`: `n_rows x p`).
    fn matmat_into(&self, m: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>, ws: &mut Workspace);
    /// `M . A` into `out` (`M`: `q x n_rows`; `out`: `q x n_cols`).
    fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    );
}

impl std::fmt::Debug for dyn EncodedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodedBatch")
            .field("kind", &self.kind())
            .field("n_rows", &self.n_rows())
            .field("n_cols", &self.n_cols())
            .field("encoded_len", &self.encoded_len())
            .finish()
    }
}

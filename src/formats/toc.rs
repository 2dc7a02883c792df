//! TOC behind the [`EncodedBatch`] interface: the encoded bytes plus the
//! decode tree, built once when the page is created or loaded, so every
//! kernel call runs on the tree without rebuilding it.

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::{EncodedBatch, FormatKind};
use crate::codec::{DecodeTree, EncodeOptions, Encoder, Level, TocBatch};
use crate::error::Result;
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

/// A TOC-encoded batch with its decode tree.
#[derive(Debug, Clone)]
pub(crate) struct TocPage {
    batch: TocBatch,
    tree: DecodeTree,
}

impl TocPage {
    pub(crate) fn encode(batch: &SparseBatch, options: EncodeOptions) -> Result<Self> {
        let batch = Encoder::new(options).encode(batch)?;
        let tree = batch.tree();
        Ok(TocPage { batch, tree })
    }
}

impl EncodedBatch for TocPage {
    fn kind(&self) -> FormatKind {
        match self.batch.level() {
            Level::Sparse => FormatKind::TocSparse,
            Level::Logical => FormatKind::TocLogical,
            Level::Full => FormatKind::TocFull,
        }
    }

    fn encoded_len(&self) -> usize {
        self.batch.encoded_len()
    }

    fn n_rows(&self) -> usize {
        self.batch.n_rows()
    }

    fn n_cols(&self) -> usize {
        self.batch.n_cols()
    }

    fn decode(&self) -> SparseBatch {
        let mut out = SparseBatch::default();
        self.tree.decode_into(&mut out);
        out
    }

    fn scale(&mut self, c: f64) {
        self.tree.scale(c);
    }

    fn matvec_into(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace) {
        self.tree.matvec_into(v, out, ws);
    }

    fn vecmat_into(&self, v: ArrayView1<'_, f64>, out: ArrayViewMut1<'_, f64>, ws: &mut Workspace) {
        self.tree.vecmat_into(v, out, ws);
    }

    fn matmat_into(&self, m: ArrayView2<'_, f64>, out: ArrayViewMut2<'_, f64>, ws: &mut Workspace) {
        self.tree.matmat_into(m, out, ws);
    }

    fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.tree.left_matmat_into(m, out, ws);
    }
}

//! TOC behind the [`EncodedBatch`] interface: the encoded bytes plus the
//! decode tree, built once when the page is created or loaded, so every
//! kernel call runs on the tree without rebuilding it.
//!
//! The page's bytes are the [`TocBatch`] blob itself. [`EncodedBatch::scale`]
//! scales the tree only; the bytes of a scaled page are re-encoded (at
//! the page's options) the first time they are asked for.

use std::sync::OnceLock;

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::{EncodedBatch, FormatKind};
use crate::codec::{DecodeTree, EncodeOptions, Encoder, Level, TocBatch};
use crate::error::{Error, Result};
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

/// A TOC-encoded batch with its decode tree.
#[derive(Debug, Clone)]
pub(crate) struct TocPage {
    /// The bytes as encoded or loaded.
    batch: TocBatch,
    tree: DecodeTree,
    /// Options to re-encode with after `scale`.
    options: EncodeOptions,
    /// Whether `scale` has made `batch` stale.
    scaled: bool,
    /// The scaled batch re-encoded, on first use.
    rewritten: OnceLock<TocBatch>,
}

/// The format of a TOC batch at `level`.
fn kind_of(level: Level) -> FormatKind {
    match level {
        Level::Sparse => FormatKind::TocSparse,
        Level::Logical => FormatKind::TocLogical,
        Level::Full => FormatKind::TocFull,
    }
}

impl TocPage {
    pub(crate) fn encode(batch: &SparseBatch, options: EncodeOptions) -> Result<Self> {
        let batch = Encoder::new(options).encode(batch)?;
        let tree = batch.tree();
        Ok(Self::new(batch, tree, options))
    }

    fn new(batch: TocBatch, tree: DecodeTree, options: EncodeOptions) -> Self {
        TocPage {
            batch,
            tree,
            options,
            scaled: false,
            rewritten: OnceLock::new(),
        }
    }

    /// Validates a TOC blob of `level` with [`TocBatch::from_bytes`],
    /// building its decode tree once. A scaled loaded page re-encodes with
    /// the default options of its level.
    ///
    /// # Errors
    /// As [`TocBatch::from_bytes`], or [`Error::WrongFormat`] for a batch
    /// of another level.
    pub(crate) fn load(bytes: &[u8], level: Level) -> Result<Self> {
        let mut tree = DecodeTree::default();
        let batch = TocBatch::from_bytes_with_tree(bytes.to_vec(), &mut tree)?;
        if batch.level() != level {
            return Err(Error::WrongFormat {
                expected: kind_of(level).name(),
                found: kind_of(batch.level()).name(),
            });
        }
        Ok(Self::new(batch, tree, EncodeOptions::level(level)))
    }

    /// The bytes of the batch as it is now.
    fn current(&self) -> &TocBatch {
        if !self.scaled {
            return &self.batch;
        }
        self.rewritten.get_or_init(|| {
            Encoder::new(self.options)
                .encode(&self.decode())
                .expect("a decoded TOC batch has fewer than 2^32 - 1 entries")
        })
    }
}

impl EncodedBatch for TocPage {
    fn kind(&self) -> FormatKind {
        kind_of(self.batch.level())
    }

    fn encoded_len(&self) -> usize {
        self.current().encoded_len()
    }

    fn write_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.current().as_bytes());
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
        self.scaled = true;
        self.rewritten = OnceLock::new();
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

//! TOC as a [`Batch`](super::Batch): the encoded bytes plus the decode
//! tree, built once when the page is created or loaded, so every kernel
//! call runs on the tree without rebuilding it.
//!
//! The page's bytes are the [`TocBatch`] blob itself.
//! [`Batch::scale`](super::Batch::scale) scales the tree only; the bytes of
//! a scaled page are re-encoded (at the page's options) the first time
//! they are asked for.

use std::sync::OnceLock;

use ndarray::{ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::{pool, FormatKind};
use crate::codec::{DecodeTree, EncodeOptions, Encoder, Level, TocBatch};
use crate::error::{Error, Result};
use crate::kernels::Workspace;
use crate::sparse::SparseBatch;

thread_local! {
    /// This thread's encoder for [`TocPage::encode`].
    static ENCODER: std::cell::RefCell<Option<Encoder>> = const { std::cell::RefCell::new(None) };
}

/// A TOC-encoded batch with its decode tree: the payload of
/// [`Batch::Toc`](super::Batch::Toc).
#[derive(Debug, Clone)]
pub struct TocPage {
    /// The bytes as encoded or loaded; `None` for a batch made from code
    /// rows against resident dictionaries ([`TocPage::from_tree`]), whose
    /// bytes are encoded when asked for.
    batch: Option<TocBatch>,
    tree: DecodeTree,
    /// Options to re-encode with after `scale`.
    options: EncodeOptions,
    /// Whether `scale` has made `batch` stale.
    scaled: bool,
    /// The scaled batch re-encoded, on first use.
    rewritten: OnceLock<TocBatch>,
}

impl TocPage {
    pub(crate) fn encode(batch: &SparseBatch, options: EncodeOptions) -> Result<Self> {
        // One encoder per thread, reused: its hash maps and arrays keep
        // their capacity from one batch to the next (the loader's exact
        // mode encodes every mini-batch of every epoch on its threads).
        let rows = batch;
        let batch = ENCODER.with(|cell| {
            let mut slot = cell.borrow_mut();
            match slot.as_mut() {
                Some(encoder) if encoder.options() == options => encoder.encode(rows),
                _ => slot.insert(Encoder::new(options)).encode(rows),
            }
        })?;
        let mut tree = batch.tree();
        tree.settle_with_rows(rows);
        Ok(Self::new(batch, tree, options))
    }

    fn new(batch: TocBatch, tree: DecodeTree, options: EncodeOptions) -> Self {
        TocPage {
            batch: Some(batch),
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
    pub(crate) fn load(
        bytes: &[u8],
        level: Level,
        dict: Option<(usize, &std::sync::Arc<crate::codec::SharedDict>)>,
    ) -> Result<Self> {
        // A tree from the pool (see `pool.rs`) and this thread's scratch:
        // in steady state a streamed page allocates nothing for its tree.
        let mut tree = pool::take();
        let batch = pool::with_scratch(&mut tree, |tree| match dict {
            Some((rows, dict)) => TocBatch::from_bytes_shared(bytes.to_vec(), rows, dict, tree),
            None => TocBatch::from_bytes_with_tree(bytes.to_vec(), tree),
        });
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                pool::give(tree);
                return Err(e);
            }
        };
        // A loaded page is kept (by the loader's buffer, or resident for
        // the whole run): no large spare capacity.
        // A loaded page keeps its tree, whatever the kernels' work
        // (`DecodeTree::settle_for_kernels`): the loader that loads it is
        // the bottleneck of page-mode training, and writing the rows out
        // there made flights3m's page-mode epochs 10 to 20% slower than
        // the kernels it saved (`docs/RESULTS.md` section 30).
        tree.trim();
        if batch.level() != level {
            return Err(Error::WrongFormat {
                expected: FormatKind::from(level).name(),
                found: FormatKind::from(batch.level()).name(),
            });
        }
        // A version-3 page's bytes mean nothing without its segment's
        // dictionary: asked for its bytes, the page gives them
        // self-contained (re-encoded once, as a scaled page does).
        let shared = batch.shared_dict().is_some();
        let mut page = Self::new(batch, tree, EncodeOptions::level(level));
        page.scaled = shared;
        Ok(page)
    }

    /// A mini-batch of code rows made into its compact tree by the loader
    /// (`codec/code_batch.rs`): the kernels run on `tree`; its bytes, if
    /// ever asked for, are the rows encoded self-contained (the tree's
    /// nodes belong to the segments' dictionaries, not to a page).
    pub(crate) fn from_tree(tree: DecodeTree) -> Self {
        TocPage {
            batch: None,
            tree,
            options: EncodeOptions::default(),
            scaled: true,
            rewritten: OnceLock::new(),
        }
    }

    /// The decode tree the kernels run on (scaled along with the batch).
    pub fn tree(&self) -> &DecodeTree {
        &self.tree
    }

    /// The bytes of the batch as it is now.
    fn current(&self) -> &TocBatch {
        if let (false, Some(batch)) = (self.scaled, &self.batch) {
            return batch;
        }
        self.rewritten.get_or_init(|| {
            Encoder::new(self.options)
                .encode(&self.decode())
                .expect("a decoded TOC batch has fewer than 2^32 - 1 entries")
        })
    }
}

impl Drop for TocPage {
    fn drop(&mut self) {
        pool::give(std::mem::take(&mut self.tree));
    }
}

impl TocPage {
    /// Heap bytes held: the encoded bytes, the decode tree (usually the
    /// larger: the kernels' structure, unpacked) and, after a scale, the
    /// re-encoded bytes once asked for.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.batch.as_ref().map_or(0, TocBatch::heap_bytes)
            + self.tree.heap_bytes()
            + self.rewritten.get().map_or(0, TocBatch::heap_bytes)
    }

    pub(crate) fn kind(&self) -> FormatKind {
        self.batch
            .as_ref()
            .map_or(FormatKind::TocFull, |b| b.level().into())
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.current().encoded_len()
    }

    pub(crate) fn write_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.current().as_bytes());
    }

    pub(crate) fn n_rows(&self) -> usize {
        self.tree.n_rows()
    }

    pub(crate) fn n_cols(&self) -> usize {
        self.tree.n_cols()
    }

    pub(crate) fn decode(&self) -> SparseBatch {
        let mut out = SparseBatch::default();
        self.tree.decode_into(&mut out);
        out
    }

    pub(crate) fn scale(&mut self, c: f64) {
        self.tree.scale(c);
        self.scaled = true;
        self.rewritten = OnceLock::new();
    }

    pub(crate) fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.tree.matvec_into(v, out, ws);
    }

    pub(crate) fn vecmat_add(&self, v: &[f64], out: &mut [f64], ws: &mut Workspace) {
        self.tree.vecmat_add(v, out, ws)
    }

    pub(crate) fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.tree.vecmat_into(v, out, ws);
    }

    pub(crate) fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.tree.matmat_into(m, out, ws);
    }

    pub(crate) fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.tree.left_matmat_into(m, out, ws);
    }
}

//! Tuple-oriented compression (TOC paper section 3) of one mini-batch, and
//! its validated decoding.
//!
//! ```text
//! SparseBatch --Encoder::encode--> TocBatch (bytes) --decode--> SparseBatch
//!                                      |
//!                                      +--build_tree--> DecodeTree (C') --> kernels
//! ```
//!
//! [`TocBatch::from_bytes`] is the trust boundary: it checks the structure
//! of the blob (every length against the remaining input before anything
//! is allocated), then every content rule while rebuilding the prefix tree.
//! After that nothing indexes out of range. The byte format is specified in
//! `docs/FORMAT.md`.

mod check;
mod code_batch;
mod code_rows;
mod dict_layout;
mod encoder;
// Measured and kept out of every file version (history §38): public for
// its examples and benchmark, hidden from the API's documentation.
#[doc(hidden)]
pub mod entropy;
mod gaps;
mod layout;
mod pairs;
mod physical;
mod row_ids;
mod shared;
mod shared_tree;
mod tree;
mod trusted;
mod values;

/// The layout of a blob, structure checked (for [`crate::internals`]; a
/// shared dictionary's pairs among them, whose value dictionary may be
/// grouped).
pub(crate) fn layout_of(blob: &[u8]) -> Result<layout::Layout> {
    layout::parse_pairs(blob)
}

/// The layout of a page of a dataset file, structure checked: `rows` is
/// the page header's row count, `dict` the dictionary of the page's
/// segment. Where the dictionary is for compact pages (file version 4),
/// a page is a compact page or a self-contained batch (versions 1 and
/// 2); elsewhere it is a batch, a version-3 page where a dictionary is.
pub(crate) fn page_layout(blob: &[u8], rows: usize, dict: Option<&SharedDict>) -> Result<Layout> {
    match dict {
        Some(dict) if dict.compact_pages() => {
            if layout::is_compact(blob) {
                return compact_layout(blob, rows, dict.n_cols(), dict.row_id_pages());
            }
            let layout = layout::parse(blob)?;
            if layout.is_shared() {
                return Err(Error::WrongFormat {
                    expected: "a compact page or a self-contained TOC batch (a version-4 file)",
                    found: "a version-3 page",
                });
            }
            Ok(layout)
        }
        _ => layout::parse(blob),
    }
}
/// The layout of a compact page of `rows` rows (the page header's count)
/// against a dictionary of `n_cols` columns: a page of its rows, or, where
/// `row_ids` (a file of version 7), a page of row ids.
pub(crate) fn compact_layout(
    blob: &[u8],
    rows: usize,
    n_cols: usize,
    row_ids: bool,
) -> Result<Layout> {
    if row_ids && blob.first() == Some(&layout::ROW_IDS_PAGE) {
        return row_ids::parse_row_ids(blob, rows as u64, n_cols);
    }
    layout::parse_compact(blob, rows as u64, n_cols, row_ids)
}

pub(crate) use layout::packed_arrays;
pub(crate) use layout::MAX_EXPONENT;
pub(crate) use pairs::{scaled_value, POW10};
pub(crate) use values::decimal_exponent;

pub(crate) use check::check_page;
// Not part of the API (hidden): what the loader's check of a page found
// (`tocpile::internals::check_page`).
#[doc(hidden)]
pub use check::CheckedPage;
pub use encoder::{Adaptive, EncodeOptions, Encoder, Level, Packing};
// Not part of the API (hidden): the batch format's magic and version
// (docs/FORMAT.md); may change in any release.
#[doc(hidden)]
pub use layout::{MAGIC, VERSION};
// Not part of the API (hidden): the dataset writer's and reader's shared
// dictionaries (file version 3), used by tests, benches and the fuzz
// targets; may change in any release.
pub(crate) use code_batch::{BatchForm, CodeBatch, CodeBatchBuilder, RowsOut};
pub(crate) use code_rows::RowDict;
#[doc(hidden)]
pub use shared::{SegmentModel, SharedDict, MIN_NODE_USES};
pub use tree::DecodeTree;
pub(crate) use trusted::{PageRows, PAD};

pub(crate) use layout::Layout;
use layout::{FLAG_INDEXED, FLAG_TREE};

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sparse::SparseBatch;

/// Encodes `batch` at [`Level::Full`] with the default options.
///
/// For many batches, keep an [`Encoder`] instead: it reuses its buffers.
///
/// # Errors
/// As [`Encoder::encode`].
pub fn encode(batch: &SparseBatch) -> Result<TocBatch> {
    Encoder::new(EncodeOptions::default()).encode(batch)
}

/// Validates and decodes untrusted bytes in one step, building the decode
/// tree once (`TocBatch::from_bytes(..)?.decode()` builds it twice).
///
/// Validation checks structure, not integrity: damaged bytes may decode to
/// different rows without an error (see [`TocBatch::from_bytes`]).
///
/// # Errors
/// As [`TocBatch::from_bytes`].
pub fn decode_bytes(bytes: &[u8]) -> Result<SparseBatch> {
    let mut tree = DecodeTree::default();
    TocBatch::from_bytes_with_tree(bytes, &mut tree)?;
    let mut out = SparseBatch::default();
    tree.try_decode_into(&mut out)?;
    Ok(out)
}

/// One encoded mini-batch: a self-describing byte blob whose structure
/// has been validated (see [`TocBatch::from_bytes`] for what that does and
/// does not prove).
///
/// `B` is the byte container: `Vec<u8>` (the default, owned) or any
/// `AsRef<[u8]>` such as `&[u8]` for a zero-copy view into a larger buffer.
#[derive(Debug, Clone)]
pub struct TocBatch<B = Vec<u8>> {
    bytes: B,
    layout: Layout,
    decoded_nnz: u64,
    /// The segment dictionary of a version-3 page.
    shared: Option<Arc<SharedDict>>,
}

impl<B: AsRef<[u8]>> TocBatch<B> {
    /// Validates `bytes` as an encoded batch.
    ///
    /// Checks, in order: magic, version, flags; each section's header and
    /// that its payload lies inside the input (before any allocation);
    /// padding bits; no trailing bytes; then pair columns `< n_cols`,
    /// value ids inside the dictionary, no zero values, row lengths adding
    /// up to the code count, every code naming an existing node, and
    /// strictly ascending columns in every row. Memory used is linear in
    /// the input size. Finally, the non-zeros the batch decodes to must
    /// stay within [`limits`](crate::limits::limits) (`max_page_nnz`).
    ///
    /// # Structure, not integrity
    ///
    /// Validation proves that the bytes are *a* well-formed batch: decoding
    /// it and running every kernel on it stay in bounds, cannot panic, and
    /// use memory bounded by the input and the limits. It does not prove
    /// that they are the bytes the encoder wrote: a batch carries no
    /// checksum, and damage to a value, a column number or a code often
    /// leaves another well-formed batch that decodes, without an error,
    /// to different rows. Of every single-bit flip of a 50-row batch
    /// encoded with the default options (`tests/codec/integrity.rs`),
    /// 316 of 4,192 on mushrooms' one-hot rows and 486 of 1,560 on
    /// census_fertility's numeric rows decoded to different rows without
    /// an error; the rest were refused (or, 4 on mushrooms, decoded to the
    /// same rows), and 28,934 of 30,296 on 50 dense rows of 8 random
    /// values, whose bytes are mostly values (any value but zero is valid).
    ///
    /// Integrity is checked where bytes are stored or moved: every block
    /// of a dataset file carries a CRC-32 checked on each read
    /// ([`Error::ChecksumMismatch`], see
    /// `docs/FORMAT.md`), as do model files and the blocks of the
    /// distributed shuffle. A batch stored or sent on its own needs a
    /// checksum kept beside it by the caller.
    ///
    /// # Errors
    /// The first rule broken, as an [`Error`] naming the
    /// field and its byte offset, or the row and position;
    /// [`Error::LimitExceeded`] for a batch
    /// decoding to more than `max_page_nnz` non-zeros.
    pub fn from_bytes(bytes: B) -> Result<Self> {
        Self::from_bytes_with_tree(bytes, &mut DecodeTree::default())
    }

    /// As [`TocBatch::from_bytes`], leaving the rebuilt decode tree in
    /// `tree` (reusing its allocations) so kernels can run without a second
    /// build.
    ///
    /// # Errors
    /// As [`TocBatch::from_bytes`]; on error `tree` holds no valid batch.
    pub fn from_bytes_with_tree(bytes: B, tree: &mut DecodeTree) -> Result<Self> {
        Self::checked(bytes, tree, None)
    }

    /// As [`TocBatch::from_bytes_with_tree`] for a page of a dataset file
    /// whose segment has the shared dictionary `dict`: a version-3 page
    /// (or, with a dictionary of a version-4 file, a compact page) is
    /// decoded against it, any other page as by itself. `rows` is the
    /// page header's row count, which a compact page does not repeat
    /// (the caller checks it against any other page's, as the dataset
    /// reader does).
    ///
    /// # Errors
    /// As [`TocBatch::from_bytes`], and a version-3 page's columns must be
    /// the dictionary's; a dictionary for compact pages refuses
    /// version-3 pages.
    pub fn from_bytes_shared(
        bytes: B,
        rows: usize,
        dict: &Arc<SharedDict>,
        tree: &mut DecodeTree,
    ) -> Result<Self> {
        Self::checked(bytes, tree, Some((rows, dict)))
    }

    fn checked(
        bytes: B,
        tree: &mut DecodeTree,
        page: Option<(usize, &Arc<SharedDict>)>,
    ) -> Result<Self> {
        let blob = bytes.as_ref();
        let mut shared = None;
        let dict = page.map(|(_, dict)| dict);
        let checked = match page {
            Some((rows, dict)) => page_layout(blob, rows, Some(dict)),
            None => layout::parse(blob),
        }
        .and_then(|layout| {
            match (layout.is_shared(), dict) {
                (false, _) => tree.build(blob, &layout, true)?,
                (true, Some(dict)) => {
                    tree.build_shared(blob, &layout, dict)?;
                    shared = Some(Arc::clone(dict));
                }
                (true, None) => return Err(needs_dictionary()),
            }
            // The resource policy: a tree can decode to quadratically more
            // entries than its bytes; refuse before anyone allocates them.
            crate::limits::check_page_nnz(tree.decoded_nnz(), tree.n_rows(), tree.n_cols())?;
            Ok(layout)
        });
        let layout = match checked {
            Ok(layout) => layout,
            Err(e) => {
                // Never leave the previous batch's tree looking valid.
                *tree = DecodeTree::default();
                return Err(e);
            }
        };
        Ok(TocBatch {
            layout,
            decoded_nnz: tree.decoded_nnz(),
            bytes,
            shared,
        })
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// Size of the encoding in bytes.
    pub fn encoded_len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Consumes the batch, returning its byte container.
    pub fn into_bytes(self) -> B {
        self.bytes
    }

    /// An owned copy.
    pub fn to_owned_batch(&self) -> TocBatch {
        TocBatch {
            bytes: self.as_bytes().to_vec(),
            layout: self.layout,
            decoded_nnz: self.decoded_nnz,
            shared: self.shared.clone(),
        }
    }

    /// Where the sections of the bytes are (for [`crate::internals`]).
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The segment dictionary a version-3 page is coded against.
    pub fn shared_dict(&self) -> Option<&Arc<SharedDict>> {
        self.shared.as_ref()
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.layout.n_rows()
    }

    /// Number of columns.
    pub fn n_cols(&self) -> usize {
        self.layout.n_cols
    }

    /// Size of the first layer `I` (for [`Level::Sparse`], every entry).
    pub fn n_first_layer(&self) -> usize {
        match &self.shared {
            Some(dict) => dict.n_pairs(),
            None => self.layout.n_pairs(),
        }
    }

    /// Number of codes in the encoded table `D`.
    pub fn n_codes(&self) -> usize {
        if let Some(row_ids) = self.layout.row_ids {
            return row_ids.codes;
        }
        match self.layout.codes {
            Some(codes) => codes.count,
            None => self.layout.n_pairs(),
        }
    }

    /// Non-zero entries of the decoded batch. It can be much larger than
    /// the encoding (a prefix tree can grow one level per row): check it
    /// before decoding untrusted input if memory matters.
    pub fn decoded_nnz(&self) -> u64 {
        self.decoded_nnz
    }

    /// Which TOC stages this batch uses: [`Level::Full`] for every
    /// value-indexed batch, including the flat pages `Level::Full` writes
    /// when the prefix tree does not pay ([`TocBatch::has_tree`]).
    pub fn level(&self) -> Level {
        level_of(&self.layout)
    }

    /// Whether the batch carries a prefix tree; a flat batch stores its
    /// entries row by row (CSR with packed columns and value ids).
    pub fn has_tree(&self) -> bool {
        self.layout.has_tree()
    }

    /// The format version of the blob (1 to 3; see `docs/FORMAT.md`),
    /// 4 for a compact page (a page of a version-4 dataset file).
    pub fn version(&self) -> u8 {
        self.layout.version
    }

    /// Rebuilds the decode tree into `tree`, reusing its allocations.
    pub fn build_tree(&self, tree: &mut DecodeTree) {
        match &self.shared {
            Some(dict) => tree.build_shared(self.as_bytes(), &self.layout, dict),
            None => tree.build(self.as_bytes(), &self.layout, true),
        }
        .expect("batch was validated when it was created");
    }

    /// The complete decode tree `C'` of Algorithm 2 (Table 4 of the paper),
    /// including the nodes no code refers to, which [`TocBatch::tree`]
    /// drops. For inspection: kernels are faster on the compact tree. A
    /// version-3 page's tree is the compact one.
    pub fn full_tree(&self) -> DecodeTree {
        if self.shared.is_some() {
            return self.tree();
        }
        let mut tree = DecodeTree::default();
        tree.build(self.as_bytes(), &self.layout, false)
            .expect("batch was validated when it was created");
        tree
    }

    /// The decode tree of this batch, newly allocated.
    pub fn tree(&self) -> DecodeTree {
        let mut tree = DecodeTree::default();
        self.build_tree(&mut tree);
        tree
    }

    /// Decodes into a [`SparseBatch`] (see [`decoded_nnz`](Self::decoded_nnz)
    /// for its size). This rebuilds the decode tree: to validate and decode
    /// bytes with one build, use [`decode_bytes`], or
    /// [`TocBatch::from_bytes_with_tree`] and [`DecodeTree::decode_into`].
    pub fn decode(&self) -> SparseBatch {
        let mut out = SparseBatch::default();
        self.tree().decode_into(&mut out);
        out
    }
}

impl TocBatch {
    /// Heap bytes the owned bytes hold (their allocation, which may exceed
    /// [`encoded_len`](Self::encoded_len)).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// Wraps bytes the encoder just wrote; validated only in debug builds.
    pub(crate) fn from_parts_trusted(bytes: Vec<u8>, layout: Layout, decoded_nnz: u64) -> Self {
        debug_assert!(TocBatch::from_bytes(&bytes[..]).is_ok_and(|b| b.decoded_nnz == decoded_nnz));
        TocBatch {
            bytes,
            layout,
            decoded_nnz,
            shared: None,
        }
    }

    /// Wraps a version-3 page the encoder just wrote against `dict`.
    pub(crate) fn from_shared_parts(
        bytes: Vec<u8>,
        layout: Layout,
        decoded_nnz: u64,
        dict: &Arc<SharedDict>,
    ) -> Self {
        TocBatch {
            bytes,
            layout,
            decoded_nnz,
            shared: Some(Arc::clone(dict)),
        }
    }
}

/// The level of a batch of `layout` (see [`TocBatch::level`]).
fn level_of(layout: &Layout) -> Level {
    let f = layout.flags;
    if f & FLAG_INDEXED != 0 || layout.is_shared() {
        Level::Full
    } else if f & FLAG_TREE != 0 {
        Level::Logical
    } else {
        Level::Sparse
    }
}

/// The error for a version-3 page read without its segment's dictionary.
pub(crate) fn needs_dictionary() -> Error {
    Error::WrongFormat {
        expected: "a self-contained TOC batch",
        found: "a version-3 page (decodable with its segment's dictionary only)",
    }
}

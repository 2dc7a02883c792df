//! The on-disk dataset file: rows encoded in pages, pages grouped into
//! blocks (the unit of random I/O for the CorgiPile loader), a checksum per
//! block and a footer index. The grammar is in `docs/FORMAT.md`.
//!
//! ```text
//! file    = header block* footer trailer
//! header  = "TOCD" version(1 to 8) 0 0 0
//! block   = page*                      checksummed as a whole (CRC-32)
//! page    = rows labels payload        payload: one encoded batch;
//!                                      labels: version 2 adds an integer form,
//!                                      version 8 a scaled one (an offset a row);
//!                                      version 3 a page coded against its
//!                                      segment's dictionary, version 4 its
//!                                      compact form, version 7 a compact
//!                                      page of row ids, version 8 grouped
//!                                      values in the segment's dictionary
//!         | 0x00                       version 5: a copy of the block's
//!                                      previous page (rows, labels, payload)
//!         | 0x00 count                 version 6: `count` such copies
//! footer  = index of blocks, column count, page format, schema,
//!           optional sections (the column scaling)
//! trailer = footer offset, footer CRC-32, "TOCD"
//! ```
//!
//! [`DatasetWriter`] streams rows in and writes the file atomically: to a
//! temporary file beside the target, fsynced, then renamed, so a crash or
//! kill never leaves a file that opens as valid. [`Dataset::open`] reads the
//! trailer and footer only; [`Dataset::read_block`] reads one block with a
//! positional read and verifies its checksum before anything is parsed.

mod block;
mod footer;
mod labels;
mod mix;
mod packed;
mod prefetch;
mod reader;
mod source;
mod split;
mod truncation;
mod verify;
mod writer;

pub use block::Block;
pub use mix::LabelMix;

// Not part of the API (hidden): the block's views and decoders, the
// prefetcher and the class cap, used by the loader, the command line and
// the tests; may change in any release.
#[doc(hidden)]
pub use block::TocView;
#[doc(hidden)]
pub use mix::MAX_CLASSES;
#[doc(hidden)]
pub use packed::{PackedBlock, PageDecoder};
#[doc(hidden)]
pub use prefetch::Prefetch;
pub use reader::Dataset;
pub use source::Source;
pub use split::split_holdout;
// Not part of the API (hidden): the held-out rule of one row, for the
// tests and the Python package; may change in any release.
#[doc(hidden)]
pub use split::is_held_out;
pub use writer::{
    DatasetWriter, WriterOptions, DEFAULT_BLOCK_BYTES, DEFAULT_PAGE_ROWS, DEFAULT_SEGMENT_ROWS,
};

use crate::formats::FormatKind;

/// First bytes of a dataset file (and its last four).
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const FILE_MAGIC: [u8; 4] = *b"TOCD";
/// The file format version this build writes; it reads every version
/// from 1 up to it. Version 2 adds a kind byte to every page's labels
/// section and the integer labels form (`docs/FORMAT.md`).
/// Version 3 adds segments whose pages share a dictionary (a
/// TOC_FULL file written with [`WriterOptions::segment_rows`]); a file
/// without them is written as version 2. Version 4 stores the pages
/// coded against a segment's dictionary in a compact form (no batch
/// header, no counts: `docs/FORMAT.md`). Version 5 adds page copies: a
/// page equal to the previous page of its block (rows, labels and
/// payload) is stored as one zero byte. Version 6 stores a run of such
/// copies as one zero byte and their count (military's 26,604 copies
/// were 582 runs). Version 7 adds pages of row ids: a compact page that
/// stores each distinct row once and an id per row (wvs_bribe's pages hold
/// about one distinct row each). Version 8 lets a shared dictionary's
/// values be grouped by exponent (countymurders' 162,329 decimals of
/// 0 to 16 digits were raw `f64`s) and a page's labels be scaled
/// integers with an offset per row (birthdays' daily counts); it is what
/// a file with segments is written as.
///
/// Not part of the API (hidden): may change in any release.
#[doc(hidden)]
pub const FILE_VERSION: u8 = 8;

/// The first file version whose shared dictionaries may hold grouped
/// value dictionaries.
pub(crate) const GROUPED_VERSION: u8 = 8;

/// The first file version whose pages' labels may be in the scaled form
/// (an offset per row, no dictionary).
pub(crate) const SCALED_LABELS_VERSION: u8 = 8;

/// The first file version whose compact pages may be pages of row ids.
pub(crate) const ROW_IDS_VERSION: u8 = 7;

/// The first file version whose blocks may hold page copies.
pub(crate) const COPIES_VERSION: u8 = 5;

/// The first file version whose page copies come in runs: the zero byte
/// is followed by the number of copies (a varint, at least 1).
pub(crate) const RUNS_VERSION: u8 = 6;

/// What the footer says about a dataset file.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DatasetInfo {
    /// The file format version (1 to [`FILE_VERSION`]).
    pub version: u8,
    /// Rows in the file.
    pub n_rows: u64,
    /// Columns of every row.
    pub n_cols: usize,
    /// Non-zero entries in all rows.
    pub nnz: u64,
    /// Format of every page.
    pub format: FormatKind,
    /// Rows per page (the last page of the file may hold fewer).
    pub page_rows: usize,
    /// Target block size in bytes the file was written with.
    pub block_bytes: usize,
    /// Number of blocks.
    pub n_blocks: usize,
    /// Number of pages.
    pub n_pages: u64,
    /// Bytes of the whole file.
    pub file_bytes: u64,
    /// Bytes of the pages' payloads (encoded batches, labels excluded).
    pub payload_bytes: u64,
    /// The column schema saved with the data (empty when none was given).
    pub schema: String,
    /// The column scaling fitted while the file was written (the footer's
    /// optional scaling section; `None` in files written without one).
    pub scaling: Option<crate::scale::Scaling>,
    /// How mixed the labels of the pages are (the footer's optional label
    /// mix section, measured as the file was written; `None` in files
    /// written before it existed, or whose labels say nothing: a single
    /// page, or one label value). What [`Mode::Auto`](crate::loader::Mode::Auto)
    /// decides from.
    pub label_mix: Option<LabelMix>,
}

impl DatasetInfo {
    /// Size of the rows as a dense `f64` matrix.
    pub fn dense_bytes(&self) -> f64 {
        self.n_rows as f64 * self.n_cols as f64 * 8.0
    }

    /// Size of the rows as CSR pages of `page_rows` rows (`u32` offsets
    /// and columns, `f64` values).
    pub fn csr_bytes(&self) -> f64 {
        12.0 * self.nnz as f64 + 4.0 * (self.n_rows + self.n_pages) as f64
    }

    /// A human-readable summary: rows, columns, blocks, pages, bytes,
    /// the compression ratio against dense and CSR, the stored scaling if
    /// any, and the label mix (what `--mode auto` decides from).
    pub fn summary(&self) -> String {
        let payload = self.payload_bytes.max(1) as f64;
        let mix = match &self.label_mix {
            Some(m) => format!(
                "\nlabel mix {:.2} over {} pages ({}: about 1 when pages are as mixed as \
                 random rows, up to the page size when each page holds one label)",
                m.ratio,
                m.pages,
                if m.pages_mixed(0.1) {
                    "mixed"
                } else {
                    "clustered"
                }
            ),
            None => String::new(),
        };
        let scaling = match &self.scaling {
            Some(s) => format!(
                "\nscaling {} (a factor per column, applied by train)",
                s.kind()
            ),
            None => String::new(),
        };
        format!(
            "rows {}, columns {}, non-zeros {}\n\
             pages {} of {} rows ({}), blocks {} (target {} bytes)\n\
             file {} bytes, payload {} bytes\n\
             ratio vs dense f64 {:.1}, vs CSR {:.2}{scaling}{mix}",
            self.n_rows,
            self.n_cols,
            self.nnz,
            self.n_pages,
            self.page_rows,
            self.format,
            self.n_blocks,
            self.block_bytes,
            self.file_bytes,
            self.payload_bytes,
            self.dense_bytes() / payload,
            self.csr_bytes() / payload,
        )
    }
}

/// What every page of a block is read with: the file's page format,
/// column count, page list form and the block's segment dictionary.
pub(crate) type PageContext = (
    FormatKind,
    usize,
    PageListForm,
    Option<std::sync::Arc<crate::codec::SharedDict>>,
);

/// How a block's page list is written, set by the file's version: the
/// labels form, and whether a page may be a copy of the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageListForm {
    /// How each page stores its labels.
    pub(crate) labels: labels::LabelsForm,
    /// Whether a page may be a copy (version 5 on): a zero byte where a
    /// page's row count would be, standing for the block's previous page.
    pub(crate) copies: bool,
    /// Whether the zero byte is followed by a count of copies (version 6).
    pub(crate) runs: bool,
}

impl PageListForm {
    /// The form of a file of `version` (already checked to be known).
    pub(crate) fn of_version(version: u8) -> PageListForm {
        PageListForm {
            labels: labels::LabelsForm::of_version(version),
            copies: version >= COPIES_VERSION,
            runs: version >= RUNS_VERSION,
        }
    }
}

/// One block's entry in the footer index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockEntry {
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) rows: u64,
    pub(crate) pages: u64,
    pub(crate) crc: u32,
}

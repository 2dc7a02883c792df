//! [`PackedBlock`]: a block's bytes as the file stores them, checked
//! once (checksum, page list, labels, every page's payload validated by
//! every rule of its format, without building the decode tree that
//! nothing keeps), and kept as they are: the compressed form the loader
//! holds in memory across epochs. Rows are decoded from it again each
//! time they are needed, without the checks
//! ([`PackedBlock::decode_page`]), into a [`PageDecoder`] reused from
//! page to page.
//!
//! ```text
//! read_block --> Block --pack (validate every page once)--> PackedBlock
//!   PackedBlock::decode_page(j) --> PageDecoder: row lengths, rows appended where they go
//!   PackedBlock::page(j)        --> Page (a batch for the kernels)
//! ```
//!
//! This is what makes the TOC paper's memory argument (section 1, Figure
//! 1; Table 6: the compressed data fits where the others do not) hold for
//! training: a decode tree is 5 to 27 times its page's bytes, so keeping
//! trees resident held no more rows than CSR did.

use std::sync::Arc;

use super::labels::read_labels;
use super::{PageContext, PageListForm};
use crate::codec::{DecodeTree, PageRows, RowDict, SharedDict};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::page::Page;
use crate::wire::Reader;

/// One page of a [`PackedBlock`]: where its labels and payload sit in the
/// block's bytes, its rows and what it decodes to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackedPage {
    pub(crate) rows: u32,
    /// Byte offset of the page's labels section.
    labels_at: u32,
    payload_at: u32,
    payload_len: u32,
    /// Non-zeros the page decodes to (found when it was validated).
    pub(crate) nnz: u64,
}

/// A block's stored bytes, every page validated once: the loader's
/// resident form (see the module docs). Cheap to share (`Arc`).
#[derive(Debug)]
pub struct PackedBlock {
    /// The file's path and the block's byte offset in it, for errors.
    path: Box<str>,
    offset: u64,
    number: usize,
    format: FormatKind,
    n_cols: usize,
    /// How the page list is written (the file's version).
    form: PageListForm,
    /// The shared dictionary of the block's segment (version 3).
    dict: Option<Arc<SharedDict>>,
    bytes: Box<[u8]>,
    pages: Box<[PackedPage]>,
    rows: usize,
    nnz: u64,
    /// Whether every page was validated when this block was packed;
    /// `false` for [`Block::pack_seen`](super::Block::pack_seen)'s
    /// blocks, whose pages are checked where they are decoded.
    checked: bool,
}

impl PackedBlock {
    /// Packs a block whose pages were validated: `pages` gives, per page,
    /// its rows, the byte offsets of its labels section and payload and
    /// its decoded non-zeros.
    pub(super) fn new(
        (path, offset): (String, u64),
        number: usize,
        (format, n_cols, form, dict): PageContext,
        bytes: Vec<u8>,
        pages: Vec<PackedPage>,
    ) -> PackedBlock {
        let rows = pages.iter().map(|p| p.rows as usize).sum();
        let nnz = pages.iter().map(|p| p.nnz).sum();
        PackedBlock {
            path: path.into_boxed_str(),
            offset,
            number,
            format,
            n_cols,
            form,
            dict,
            bytes: bytes.into_boxed_slice(),
            pages: pages.into_boxed_slice(),
            rows,
            nnz,
            checked: true,
        }
    }

    /// This block, marked as packed from bytes not validated in this
    /// packing (see [`Block::pack_seen`](super::Block::pack_seen)).
    pub(super) fn unchecked(mut self) -> PackedBlock {
        self.checked = false;
        self
    }

    /// Validates page `j` if this block was packed unchecked (else
    /// nothing to do): every rule [`Block::pack`](super::Block::pack)
    /// checks, and that it decodes to the non-zeros recorded, before a
    /// decoder that relies on them runs.
    fn check_page(&self, j: usize) -> Result<()> {
        if self.checked {
            return Ok(());
        }
        let page = self.pages[j];
        let mut tree = crate::formats::take_tree();
        let nnz = crate::formats::with_build_scratch(&mut tree, |tree| {
            validate_payload(
                (self.format, self.dict.as_ref()),
                self.payload(j),
                (page.rows as usize, self.n_cols),
                tree,
            )
        });
        crate::formats::give_tree(tree);
        let nnz = nnz?;
        if nnz != page.nnz {
            return Err(Error::LengthMismatch {
                what: "non-zeros of a page read again (the bytes changed since it was checked)",
                expected: page.nnz,
                found: nnz,
            });
        }
        Ok(())
    }

    /// The block's number in its file.
    pub fn number(&self) -> usize {
        self.number
    }

    /// Number of pages.
    pub fn n_pages(&self) -> usize {
        self.pages.len()
    }

    /// Rows of every page.
    pub fn n_rows(&self) -> usize {
        self.rows
    }

    /// Rows of page `j`.
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub fn page_rows(&self, j: usize) -> usize {
        self.pages[j].rows as usize
    }

    /// Non-zeros every page decodes to.
    pub fn nnz(&self) -> u64 {
        self.nnz
    }

    /// Non-zeros each page decodes to, in page order.
    pub(crate) fn page_nnz(&self) -> impl Iterator<Item = u64> + '_ {
        self.pages.iter().map(|p| p.nnz)
    }

    /// Heap bytes held: the stored bytes and the page index. About the
    /// block's size in the file: this, not a decode tree, is what stays in
    /// memory.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of::<PackedBlock>()
            + self.path.len()
            + self.bytes.len()
            + std::mem::size_of_val(&*self.pages)
    }

    /// `error` of page `j`, naming the file, block and page (as
    /// [`Block`](super::Block)'s errors do).
    fn page_error(&self, j: usize, error: Error) -> Error {
        Error::InFile {
            path: self.path.to_string(),
            section: format!("block {}, page {j}", self.number),
            offset: self.offset + u64::from(self.pages[j].payload_at),
            error: Box::new(error),
        }
    }

    fn payload(&self, j: usize) -> &[u8] {
        let p = &self.pages[j];
        let at = p.payload_at as usize;
        &self.bytes[at..at + p.payload_len as usize]
    }

    /// Decodes page `j`'s rows and labels into `out`, without the checks
    /// its first validation made.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the system refuses the rows' memory;
    /// otherwise only if the block was packed from bytes that were not
    /// validated (never through [`Block::pack`](super::Block::pack)):
    /// the cheap structure checks still run. Either in an
    /// [`Error::InFile`] naming the file, block and page.
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub fn decode_page(&self, j: usize, out: &mut PageDecoder) -> Result<()> {
        self.decode_page_in(j, out)
            .map_err(|error| self.page_error(j, error))
    }

    fn decode_page_in(&self, j: usize, out: &mut PageDecoder) -> Result<()> {
        self.check_page(j)?;
        let page = self.pages[j];
        let mut r = Reader::new(&self.bytes[page.labels_at as usize..]);
        read_labels(
            &mut r,
            page.rows as usize,
            self.form.labels,
            &mut out.labels,
            &mut out.ids,
        )?;
        let payload = self.payload(j);
        match self.format.level() {
            Some(_) => out.tree.decode_trusted(
                payload,
                page.nnz as usize,
                &mut out.rows,
                (self.dict.as_deref(), page.rows as usize),
            ),
            None => {
                let rows = self.format.load(payload)?.decode();
                out.rows.load_sparse(&rows);
                Ok(())
            }
        }
    }

    /// Appends page `j`'s rows as codes into a dictionary (see
    /// `codec/code_rows.rs`): their codes to `codes`, each row's end in
    /// `codes` to `ends` and its label to `labels`, without the checks
    /// its first validation made; returns the dictionary the codes name.
    /// A page coded against its segment's dictionary names that one; a
    /// self-contained TOC page names its own first layer.
    ///
    /// # Errors
    /// As [`decode_page`](Self::decode_page); [`Error::WrongFormat`] for
    /// a page of another format than TOC.
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub(crate) fn decode_page_codes(
        &self,
        j: usize,
        out: &mut PageDecoder,
        (codes, ends, labels): (&mut Vec<u32>, &mut Vec<u32>, &mut Vec<f64>),
    ) -> Result<RowDict> {
        let page = self.pages[j];
        let rows = page.rows as usize;
        let mut r = Reader::new(&self.bytes[page.labels_at as usize..]);
        read_labels(
            &mut r,
            rows,
            self.form.labels,
            &mut out.labels,
            &mut out.ids,
        )?;
        crate::limits::try_reserve(labels, rows, "the labels of a buffer")?;
        labels.extend_from_slice(&out.labels);
        if self.format.level().is_none() {
            return Err(Error::WrongFormat {
                expected: "TOC pages (rows kept as codes)",
                found: self.format.name(),
            });
        }
        let payload = self.payload(j);
        let layout = crate::codec::page_layout(payload, rows, self.dict.as_deref())?;
        if layout.is_shared() {
            let dict = self
                .dict
                .as_ref()
                .ok_or_else(crate::codec::needs_dictionary)?;
            let before = ends.len();
            out.tree
                .decode_shared_codes(payload, &layout, dict, codes, ends)?;
            // Checked at packing, but not for a block packed unchecked: a
            // row without a label must not reach the buffer.
            Error::check_equal(
                "page rows (labels against the codes)",
                rows,
                ends.len() - before,
            )?;
            return Ok(RowDict::Shared(Arc::clone(dict)));
        }
        self.check_page(j)
            .map_err(|error| self.page_error(j, error))?;
        out.tree.decode_trusted(
            payload,
            page.nnz as usize,
            &mut out.rows,
            (self.dict.as_deref(), rows),
        )?;
        let (ids, row_ends) = out.rows.ids();
        let base = codes.len() as u32;
        crate::limits::try_reserve(codes, ids.len(), "the code rows of a buffer")?;
        crate::limits::try_reserve(ends, row_ends.len(), "the code rows of a buffer")?;
        codes.extend_from_slice(ids);
        ends.extend(row_ends.iter().map(|&e| e + base));
        let (cols, vals) = out.tree.pairs();
        Ok(RowDict::Own(Arc::new(DecodeTree::pairs_only(
            self.n_cols,
            cols,
            vals,
        ))))
    }

    /// Page `j` as a [`Page`] for the kernels (a TOC page with its decode
    /// tree built, into a pooled tree).
    ///
    /// # Errors
    /// As [`PackedBlock::decode_page`] (a decode tree is allocated
    /// fallibly where the page's bytes do not bound it).
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub fn page(&self, j: usize) -> Result<Page> {
        self.page_in(j).map_err(|error| self.page_error(j, error))
    }

    fn page_in(&self, j: usize) -> Result<Page> {
        self.check_page(j)?;
        let page = self.pages[j];
        let mut r = Reader::new(&self.bytes[page.labels_at as usize..]);
        let (mut labels, mut scratch) = (Vec::new(), Vec::new());
        read_labels(
            &mut r,
            page.rows as usize,
            self.form.labels,
            &mut labels,
            &mut scratch,
        )?;
        Page::new(
            self.format
                .load_shared(self.payload(j), page.rows as usize, self.dict.as_ref())?,
            labels,
        )
    }

    /// Every page, as by [`PackedBlock::page`].
    ///
    /// # Errors
    /// As [`PackedBlock::page`].
    pub fn pages(&self) -> Result<Vec<Page>> {
        (0..self.n_pages()).map(|j| self.page(j)).collect()
    }

    /// The file's column count, which every page has.
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
}

/// The rows of one page decoded by [`PackedBlock::decode_page`]: their
/// labels, their lengths, and each row appended wherever its mini-batch
/// is being built. Keep one per thread and reuse it: its arrays keep
/// their capacity, so decoding allocates nothing in steady state.
#[derive(Debug, Default)]
pub struct PageDecoder {
    tree: DecodeTree,
    rows: PageRows,
    labels: Vec<f64>,
    ids: Vec<u32>,
}

impl PageDecoder {
    /// A decoder with empty scratch.
    pub fn new() -> PageDecoder {
        PageDecoder::default()
    }

    /// Rows of the page decoded last.
    pub fn n_rows(&self) -> usize {
        self.rows.n_rows()
    }

    /// Non-zeros of the page decoded last.
    pub fn nnz(&self) -> usize {
        self.rows.nnz()
    }

    /// Label of row `i`.
    ///
    /// # Panics
    /// If `i >= n_rows()`.
    #[inline]
    pub fn label(&self, i: usize) -> f64 {
        self.labels[i]
    }

    /// Where row `i`'s entries are in [`cols`](Self::cols) and
    /// [`vals`](Self::vals).
    ///
    /// # Panics
    /// If `i >= n_rows()`.
    #[inline]
    pub fn row_range(&self, i: usize) -> (usize, usize) {
        self.rows.range(i)
    }

    /// Every row's columns, one row after the other, followed by
    /// [`PAD`](Self::PAD) zeros (so that rows may be copied in chunks).
    pub fn cols(&self) -> &[u32] {
        self.rows.cols()
    }

    /// Every row's values, one row after the other, followed by
    /// [`PAD`](Self::PAD) zeros.
    pub fn vals(&self) -> &[f64] {
        self.rows.vals()
    }

    /// Zeros after the last row's entries in [`cols`](Self::cols) and
    /// [`vals`](Self::vals).
    pub const PAD: usize = crate::codec::PAD;

    /// Heap bytes of the scratch.
    pub fn heap_bytes(&self) -> usize {
        self.tree.heap_bytes()
            + self.rows.heap_bytes()
            + 8 * self.labels.capacity()
            + 4 * self.ids.capacity()
    }
}

/// Validates page `payload` of `format` (`rows` labels, `n_cols`
/// columns) by every rule [`FormatKind::load`] checks, and returns the
/// non-zeros it decodes to. A TOC page is checked without building its
/// decode tree (`tree` is scratch): the packed block keeps the bytes and
/// decodes them with the trusted decoders, so a tree built here would be
/// thrown away (for a version-3 page, placing the shared nodes it uses
/// in a compact tree was most of its validation: `docs/archive/RESULTS-HISTORY.md`
/// section 24).
pub(super) fn validate_payload(
    (format, dict): (FormatKind, Option<&Arc<SharedDict>>),
    payload: &[u8],
    (rows, n_cols): (usize, usize),
    tree: &mut DecodeTree,
) -> Result<u64> {
    let (found_rows, found_cols, nnz) = match format.level() {
        Some(level) => {
            let page = crate::codec::check_page(payload, rows, dict.map(|d| &**d), tree)?;
            if page.level != level {
                return Err(Error::WrongFormat {
                    expected: format.name(),
                    found: FormatKind::from(page.level).name(),
                });
            }
            (page.n_rows, page.n_cols, page.decoded_nnz)
        }
        None => {
            let batch = format.load(payload)?;
            let nnz = batch.decode().nnz() as u64;
            (batch.n_rows(), batch.n_cols(), nnz)
        }
    };
    check_rows(rows, found_rows)?;
    check_cols(n_cols, found_cols)?;
    Ok(nnz)
}

pub(super) fn packed_page(
    rows: usize,
    labels_at: usize,
    payload: std::ops::Range<usize>,
    nnz: u64,
) -> Result<PackedPage> {
    let narrow = |v: usize, what: &'static str| {
        u32::try_from(v).map_err(|_| Error::TooLarge {
            what,
            value: v as u64,
            max: u32::MAX as u64,
        })
    };
    Ok(PackedPage {
        rows: narrow(rows, "rows of a page")?,
        labels_at: narrow(labels_at, "offset of a page in its block")?,
        payload_at: narrow(payload.start, "offset of a page in its block")?,
        payload_len: narrow(payload.len(), "bytes of a page")?,
        nnz,
    })
}

/// A page's payload must hold as many rows as it has labels.
pub(super) fn check_rows(labels: usize, rows: usize) -> Result<()> {
    Error::check_equal("page rows (labels against the encoded batch)", labels, rows)
}

/// A page must have the file's columns: the loader gathers exact-mode
/// rows into mini-batches of the file's width, and a wider page's columns
/// would index past the model's weights. Found by the `train_forged` fuzz
/// target (a page of 10 columns in a file of 4, exact mode).
pub(super) fn check_cols(file: usize, page: usize) -> Result<()> {
    Error::check_equal("columns of a page (the file's column count)", file, page)
}

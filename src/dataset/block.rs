//! [`Block`]: one block of a dataset file, read and checksummed, with its
//! page list; pages come out as owned [`Page`]s of any format
//! ([`Block::page`]) or as borrowed [`TocView`]s of a TOC file
//! ([`Block::toc_view`]).

use std::ops::Range;
use std::sync::Arc;

use super::labels::read_labels;
use super::packed::{
    check_cols, check_rows, packed_page, validate_payload, PackedBlock, PackedPage,
};
use super::{BlockEntry, PageContext, PageListForm};
use crate::codec::{DecodeTree, SharedDict, TocBatch};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::page::Page;
use crate::wire::Reader;

/// One block, read and verified: its bytes, and where each page sits.
#[derive(Debug, Clone)]
pub struct Block {
    path: String,
    format: FormatKind,
    /// The file's column count: every page must have it.
    n_cols: usize,
    /// How the page list is written (the file's version): labels form,
    /// page copies.
    form: PageListForm,
    /// The shared dictionary of the block's segment (version 3).
    dict: Option<Arc<SharedDict>>,
    number: usize,
    offset: u64,
    bytes: Vec<u8>,
    labels: Vec<f64>,
    pages: Vec<PageSpan>,
}

#[derive(Debug, Clone)]
struct PageSpan {
    rows: usize,
    /// The page's labels in [`Block::labels`].
    labels: Range<usize>,
    /// Byte offset of the page's labels section in the block.
    labels_at: usize,
    payload: Range<usize>,
    /// Whether the page is a copy of the previous one (version 5 on): its
    /// labels and payload are the previous page's bytes.
    copy: bool,
}

/// A borrowed view of one TOC page of a block: its labels and its
/// [`TocBatch`], validated and pointing into the block's bytes (no copy),
/// its decode tree in a [`DecodeTree`] the caller reuses. The zero-copy
/// path of a sequential scan
/// ([`Dataset::for_each_toc_view`](super::Dataset::for_each_toc_view)); the owned
/// page of any format, as the loader and the model use it, is a
/// [`Page`] ([`Block::page`]).
#[derive(Debug)]
pub struct TocView<'a> {
    /// One label per row.
    pub labels: &'a [f64],
    /// The rows.
    pub batch: TocBatch<&'a [u8]>,
}

impl Block {
    /// Block `number` of the file `path` (pages of `format`), its bytes
    /// already checksummed: reads the page list and checks it against the
    /// index `entry`.
    ///
    /// # Errors
    /// [`Error::InFile`] naming the block, for a malformed page list.
    pub(super) fn parse(
        path: String,
        (format, n_cols, form, dict): PageContext,
        number: usize,
        entry: &BlockEntry,
        bytes: Vec<u8>,
    ) -> Result<Block> {
        let mut block = Block {
            path,
            format,
            n_cols,
            form,
            dict,
            number,
            offset: entry.offset,
            bytes,
            labels: Vec::new(),
            pages: Vec::new(),
        };
        match block.index_pages(entry) {
            Ok(()) => Ok(block),
            Err(error) => Err(Error::InFile {
                path: block.path,
                section: format!("block {number}"),
                offset: entry.offset,
                error: Box::new(error),
            }),
        }
    }

    fn index_pages(&mut self, entry: &BlockEntry) -> Result<()> {
        let mut r = Reader::new(&self.bytes);
        let mut scratch = Vec::new();
        let mut labels = Vec::new();
        let mut rows_seen = 0u64;
        let mut page = 0u64;
        while page < entry.pages {
            let rows_at = r.offset();
            if self.form.copies && r.blob().get(rows_at) == Some(&0) {
                // Page copies: one zero byte (and in version 6 how many),
                // the previous page again that many times.
                r.u8("page copy")?;
                let run = if self.form.runs {
                    r.varint_nonzero("page copies in a run", entry.pages - page)?
                } else {
                    1
                };
                // Within the footer's pages, which the decode limit holds
                // where they pass the block's bytes; refused, not an abort.
                self.pages
                    .try_reserve(run as usize)
                    .map_err(|_| Error::OutOfMemory {
                        what: "the pages of a run of page copies",
                        bytes: run.saturating_mul(std::mem::size_of::<PageSpan>() as u64),
                    })?;
                for _ in 0..run {
                    push_copy(
                        (&mut self.pages, &mut self.labels),
                        rows_at,
                        entry.rows - rows_seen,
                    )?;
                    rows_seen += self.pages.last().map_or(0, |p| p.rows as u64);
                }
                page += run;
                continue;
            }
            page += 1;
            let rows = r.varint_max("page rows", entry.rows - rows_seen)? as usize;
            let labels_at = r.offset();
            read_labels(&mut r, rows, self.form.labels, &mut labels, &mut scratch)?;
            let start = self.labels.len();
            self.labels.extend_from_slice(&labels);
            let len = r.varint("page payload length")?;
            let at = r.offset();
            r.bytes(len, "page payload")?;
            self.pages.push(PageSpan {
                rows,
                labels: start..self.labels.len(),
                labels_at,
                payload: at..at + len as usize,
                copy: false,
            });
            rows_seen += rows as u64;
        }
        if rows_seen != entry.rows {
            return Err(Error::LengthMismatch {
                what: "rows of the block's pages (the index's count)",
                expected: entry.rows,
                found: rows_seen,
            });
        }
        if r.remaining() > 0 {
            return Err(Error::TrailingBytes {
                what: "the block's last page",
                offset: r.offset(),
                len: r.remaining(),
            });
        }
        Ok(())
    }

    /// The block's bytes as stored in the file (checksum verified): what
    /// a transport moves between machines.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Consumes the block, returning its stored bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Every label of the block, page after page.
    pub fn labels(&self) -> &[f64] {
        &self.labels
    }

    /// The block's number in the file.
    pub fn number(&self) -> usize {
        self.number
    }

    /// Rows of each page, in order.
    pub fn page_rows(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.pages.iter().map(|p| p.rows)
    }

    /// Every page of the block, as by [`Block::page`], validated in
    /// parallel across pages (rayon). The pages are held at once, so
    /// what their TOC pages decode to is bounded as a block's decoded
    /// rows are ([`Block::pack`]): a decode tree has at most a node per
    /// non-zero, and pages each under the page limit add up (5,000
    /// one-row pages of a shared dictionary's 131,072-node chain, 682
    /// KB, asked for 10 GB of trees: issue 34).
    ///
    /// # Errors
    /// The first failing page's error, as [`Block::page`];
    /// [`Error::LimitExceeded`] (in an [`Error::InFile`] naming the
    /// block) when the TOC pages decode to more than
    /// [`Limits::max_decode_nnz`](crate::limits::Limits::max_decode_nnz)
    /// together.
    pub fn pages(&self) -> Result<Vec<Page>> {
        use rayon::prelude::*;
        use std::sync::atomic::{AtomicU64, Ordering};
        let block_nnz = AtomicU64::new(0);
        let page = |j: usize| -> Result<Page> {
            let page = self.page(j)?;
            if let Some(toc) = page.batch().as_toc() {
                let nnz = toc.tree().decoded_nnz();
                let total = block_nnz
                    .fetch_add(nnz, Ordering::Relaxed)
                    .saturating_add(nnz);
                self.check_block_nnz(total)?;
            }
            Ok(page)
        };
        if self.n_pages() < 2 {
            // Nothing to share: no hand-over to the pool.
            return (0..self.n_pages()).map(page).collect();
        }
        crate::parallel::install(|| (0..self.n_pages()).into_par_iter().map(page).collect())
    }

    /// The non-zeros `total` of pages of the block held at once against
    /// the decode budget, the error naming the block.
    fn check_block_nnz(&self, total: u64) -> Result<()> {
        crate::limits::check_block_nnz(total).map_err(|error| Error::InFile {
            path: self.path.clone(),
            section: format!("block {}", self.number),
            offset: self.offset,
            error: Box::new(error),
        })
    }

    /// Bytes of the pages' payloads (labels excluded), as the footer's
    /// `payload_bytes` counts them.
    pub(super) fn payload_bytes(&self) -> u64 {
        self.pages
            .iter()
            .filter(|p| !p.copy)
            .map(|p| p.payload.len() as u64)
            .sum()
    }

    /// Whether page `j` is stored as a copy of the page before it (a
    /// zero byte of a version-5 or 6 file; it reads as that page's rows and
    /// labels).
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub fn page_is_copy(&self, j: usize) -> bool {
        self.pages[j].copy
    }

    /// Number of pages.
    pub fn n_pages(&self) -> usize {
        self.pages.len()
    }

    /// Rows in the block.
    pub fn n_rows(&self) -> usize {
        self.labels.len()
    }

    /// Page `j` in whatever format the file holds, validated (see
    /// [`FormatKind::load`]; a TOC page's decode tree is built once, here)
    /// and owning its bytes and labels.
    ///
    /// # Errors
    /// [`Error::InFile`] naming the block and page.
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub fn page(&self, j: usize) -> Result<Page> {
        let span = &self.pages[j];
        let checked = self
            .format
            .load_shared(
                &self.bytes[span.payload.clone()],
                span.rows,
                self.dict.as_ref(),
            )
            .and_then(|batch| {
                check_rows(span.rows, batch.n_rows())?;
                check_cols(self.n_cols, batch.n_cols())?;
                Page::new(batch, &self.labels[span.labels.clone()])
            });
        checked.map_err(|error| self.page_error(j, error))
    }

    /// Validates every page by the rules [`Block::page`] checks (a TOC
    /// page without building its decode tree, which nothing here would
    /// use: one pooled tree is the check's scratch) and keeps the block's
    /// bytes as they are, with a page index: the form the loader keeps in
    /// memory, a little more than the block's size in the file, whose
    /// rows it decodes again without the checks ([`PackedBlock`]).
    ///
    /// # Errors
    /// As [`Block::page`], naming the block and page.
    pub fn pack(self) -> Result<PackedBlock> {
        let packed = self.validate_pages()?;
        Ok(self.packed_with(packed))
    }

    /// The block's bytes kept with the page index `pages`.
    fn packed_with(self, pages: Vec<PackedPage>) -> PackedBlock {
        PackedBlock::new(
            (self.path, self.offset),
            self.number,
            (self.format, self.n_cols, self.form, self.dict),
            self.bytes,
            pages,
        )
    }

    /// Packs a block whose bytes this process validated before, when they
    /// decoded to `nnz` (one count per page): the checksum the read
    /// verified says they are the same bytes, so the pages are not
    /// checked again (a streamed epoch of shuffled flights3m spent 11% of
    /// its CPU re-checking bytes it had checked the epoch before: issue
    /// 33).
    /// The block is marked unchecked: it decodes its pages as codes into
    /// a shared dictionary only through the decoder that checks every
    /// index, and checks any other page before decoding it
    /// ([`PackedBlock::decode_page_codes`]), so bytes changed behind the
    /// checksum give wrong rows or an error, never a panic. A page count
    /// other than `nnz`'s packs as [`pack`](Self::pack) does.
    ///
    /// # Errors
    /// As [`pack`](Self::pack).
    pub(crate) fn pack_seen(self, nnz: &[u64]) -> Result<PackedBlock> {
        if nnz.len() != self.pages.len() {
            return self.pack();
        }
        let mut packed = Vec::with_capacity(self.pages.len());
        let mut block_nnz = 0u64;
        for (j, (span, &n)) in self.pages.iter().zip(nnz).enumerate() {
            block_nnz = block_nnz.saturating_add(n);
            let page = crate::limits::check_block_nnz(block_nnz)
                .and_then(|()| packed_page(span.rows, span.labels_at, span.payload.clone(), n));
            packed.push(page.map_err(|error| self.page_error(j, error))?);
        }
        Ok(self.packed_with(packed).unchecked())
    }

    /// The block's bytes, to change as a file changed behind its
    /// checksum would (tests of [`pack_seen`](Self::pack_seen)).
    #[cfg(test)]
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// What [`pack`](Self::pack) checks, and the non-zeros the pages
    /// decode to together, within
    /// [`Limits::max_decode_nnz`](crate::limits::Limits::max_decode_nnz)
    /// ([`Dataset::verify`](super::Dataset::verify)).
    ///
    /// # Errors
    /// As `pack`.
    pub(super) fn validated_nnz(&self) -> Result<u64> {
        Ok(self.validate_pages()?.iter().map(|p| p.nnz).sum())
    }

    /// Validates every page as [`pack`](Self::pack) does and returns
    /// the packed block's page index.
    fn validate_pages(&self) -> Result<Vec<PackedPage>> {
        let mut packed = Vec::with_capacity(self.pages.len());
        let mut tree = crate::formats::take_tree();
        let mut block_nnz = 0u64;
        let checked: Result<()> = crate::formats::with_build_scratch(&mut tree, |tree| {
            for (j, span) in self.pages.iter().enumerate() {
                let payload = &self.bytes[span.payload.clone()];
                // A copy holds the bytes just validated: the same count.
                let nnz = match packed.last() {
                    Some(&PackedPage { nnz, .. }) if span.copy => Ok(nnz),
                    _ => validate_payload(
                        (self.format, self.dict.as_ref()),
                        payload,
                        (span.rows, self.n_cols),
                        tree,
                    ),
                };
                let page = nnz.and_then(|nnz| {
                    // Pages each in the page limit can add up to far
                    // more: the block's total is bounded too.
                    block_nnz = block_nnz.saturating_add(nnz);
                    crate::limits::check_block_nnz(block_nnz)?;
                    packed_page(span.rows, span.labels_at, span.payload.clone(), nnz)
                });
                packed.push(page.map_err(|error| self.page_error(j, error))?);
            }
            Ok(())
        });
        crate::formats::give_tree(tree);
        checked?;
        Ok(packed)
    }

    fn page_error(&self, j: usize, error: Error) -> Error {
        Error::InFile {
            path: self.path.clone(),
            section: format!("block {}, page {j}", self.number),
            offset: self.offset + self.pages[j].payload.start as u64,
            error: Box::new(error),
        }
    }

    /// Page `j` of a TOC file as a [`TocView`]: validated (see
    /// [`TocBatch::from_bytes`]) into `tree`, so kernels can run on it at
    /// once, and borrowing the block's bytes. Other formats:
    /// [`Block::page`].
    ///
    /// # Errors
    /// [`Error::InFile`] naming the block and page; its inner error is
    /// [`Error::WrongFormat`] for a file of another page format.
    ///
    /// # Panics
    /// If `j >= n_pages()`.
    pub fn toc_view(&self, j: usize, tree: &mut DecodeTree) -> Result<TocView<'_>> {
        let span = &self.pages[j];
        let payload = &self.bytes[span.payload.clone()];
        let checked = match self.format.level() {
            Some(_) => match &self.dict {
                Some(dict) => TocBatch::from_bytes_shared(payload, span.rows, dict, tree),
                None => TocBatch::from_bytes_with_tree(payload, tree),
            },
            None => Err(Error::WrongFormat {
                expected: "TOC",
                found: self.format.name(),
            }),
        }
        .and_then(|batch| {
            check_rows(span.rows, batch.n_rows())?;
            check_cols(self.n_cols, batch.n_cols())?;
            Ok(batch)
        });
        match checked {
            Ok(batch) => Ok(TocView {
                labels: &self.labels[span.labels.clone()],
                batch,
            }),
            Err(error) => Err(self.page_error(j, error)),
        }
    }
}

/// Appends a copy of the block's last page (the copy's zero byte at
/// `at`), whose rows must be within the `rows_left` of the block's
/// count: the labels come again, which that count bounds.
fn push_copy(
    (pages, labels): (&mut Vec<PageSpan>, &mut Vec<f64>),
    at: usize,
    rows_left: u64,
) -> Result<()> {
    let Some(last) = pages.last().cloned() else {
        return Err(Error::FieldBelowMinimum {
            what: "rows of a block's first page (a page copy needs a page before it)",
            offset: at,
            value: 0,
            min: 1,
        });
    };
    if last.rows as u64 > rows_left {
        return Err(Error::FieldOutOfRange {
            what: "rows of a page copy (the rows the block's count leaves)",
            offset: at,
            value: last.rows as u64,
            max: rows_left,
        });
    }
    let start = labels.len();
    labels.extend_from_within(last.labels.clone());
    pages.push(PageSpan {
        labels: start..labels.len(),
        copy: true,
        ..last
    });
    Ok(())
}

//! [`Dataset`]: opens a dataset file by its trailer and footer, reads
//! blocks by positional reads and verifies each block's checksum before
//! parsing it.

use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::footer::{check_header, check_trailer, parse_footer, HEADER_LEN, TRAILER_LEN};
use super::labels::read_labels;
use super::source::{read_at, Source};
use super::{BlockEntry, DatasetInfo};
use crate::codec::{DecodeTree, TocBatch};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::page::Page;
use crate::wire::Reader;

/// An open dataset: a file by default, or bytes in memory.
#[derive(Debug)]
pub struct Dataset<S: Source = File> {
    path: PathBuf,
    source: S,
    info: DatasetInfo,
    index: Vec<BlockEntry>,
}

/// One block, read and verified: its bytes, and where each page sits.
#[derive(Debug, Clone)]
pub struct Block {
    path: String,
    format: FormatKind,
    number: usize,
    offset: u64,
    bytes: Vec<u8>,
    labels: Vec<f64>,
    pages: Vec<PageSpan>,
}

#[derive(Debug, Clone)]
struct PageSpan {
    rows: usize,
    labels: Range<usize>,
    payload: Range<usize>,
}

/// A borrowed view of one TOC page of a block: its labels and its
/// [`TocBatch`], validated and pointing into the block's bytes (no copy),
/// its decode tree in a [`DecodeTree`] the caller reuses. The zero-copy
/// path of a sequential scan ([`Dataset::for_each_toc_view`]); the owned
/// page of any format, as the loader and the model use it, is a
/// [`Page`] ([`Block::page`]).
#[derive(Debug)]
pub struct TocView<'a> {
    /// One label per row.
    pub labels: &'a [f64],
    /// The rows.
    pub batch: TocBatch<&'a [u8]>,
}

impl Dataset {
    /// Opens a dataset file, reading the header, trailer and footer only.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::InFile`] naming the header, trailer or
    /// footer and what is wrong there; [`Error::ChecksumMismatch`] for a
    /// damaged footer.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        Dataset::from_source(file, path)
    }
}

impl Dataset<Vec<u8>> {
    /// Opens a dataset held in memory; `name` stands for the path in
    /// errors.
    ///
    /// # Errors
    /// As [`Dataset::open`].
    pub fn from_memory(bytes: Vec<u8>, name: &str) -> Result<Self> {
        Dataset::from_source(bytes, PathBuf::from(name))
    }
}

impl<S: Source> Dataset<S> {
    /// Opens a dataset from any [`Source`], checking what
    /// [`Dataset::open`] checks.
    ///
    /// # Errors
    /// As [`Dataset::open`].
    pub fn from_source(source: S, path: PathBuf) -> Result<Self> {
        let len = source.size().map_err(|e| Error::io(&path, e))?;
        let name = path.display().to_string();
        let wrap = |section: &str, offset: u64| {
            let name = name.clone();
            let section = section.to_string();
            move |error: Error| Error::InFile {
                path: name,
                section,
                offset,
                error: Box::new(error),
            }
        };
        if len < HEADER_LEN + TRAILER_LEN {
            return Err(wrap("file", 0)(Error::Truncated {
                what: "header and trailer",
                offset: 0,
                needed: HEADER_LEN + TRAILER_LEN,
                available: len as usize,
            }));
        }
        let header = read_at(&source, &path, 0, HEADER_LEN)?;
        check_header(&header).map_err(wrap("header", 0))?;
        let trailer_at = len - TRAILER_LEN;
        let trailer = read_at(&source, &path, trailer_at, TRAILER_LEN)?;
        let (footer_at, crc) =
            check_trailer(&trailer, trailer_at).map_err(wrap("trailer", trailer_at))?;
        let footer = read_at(&source, &path, footer_at, trailer_at - footer_at)?;
        let found = crc32fast::hash(&footer);
        // Fuzzing builds skip checksums so that mutated inputs reach the
        // parsers behind them (every other check still applies).
        if found != crc && !cfg!(fuzzing) {
            return Err(Error::ChecksumMismatch {
                path: name,
                section: "footer".into(),
                offset: footer_at,
                expected: crc,
                found,
            });
        }
        let (mut info, index) =
            parse_footer(&footer, footer_at).map_err(wrap("footer", footer_at))?;
        info.file_bytes = len;
        Ok(Dataset {
            path,
            source,
            info,
            index,
        })
    }

    /// The file's path (or the name given to an in-memory dataset).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the footer says.
    pub fn info(&self) -> &DatasetInfo {
        &self.info
    }

    /// Number of blocks.
    pub fn n_blocks(&self) -> usize {
        self.index.len()
    }

    /// Rows of block `i`.
    ///
    /// # Panics
    /// If `i >= n_blocks()`.
    pub fn block_rows(&self, i: usize) -> u64 {
        self.index[i].rows
    }

    /// Pages of block `i`.
    ///
    /// # Panics
    /// If `i >= n_blocks()`.
    pub fn block_pages(&self, i: usize) -> u64 {
        self.index[i].pages
    }

    /// Bytes of block `i` in the file.
    ///
    /// # Panics
    /// If `i >= n_blocks()`.
    pub fn block_bytes(&self, i: usize) -> u64 {
        self.index[i].len
    }

    /// Visits every page of a TOC file in file order without copying:
    /// reads each block once, validates each page into one reused decode
    /// tree, and calls `f` with the [`TocView`] and the tree, ready for
    /// kernels. Files of other page formats: [`Block::pages`].
    ///
    /// # Errors
    /// The first error of a block or page, or of `f`.
    pub fn for_each_toc_view(
        &self,
        mut f: impl FnMut(&TocView<'_>, &DecodeTree) -> Result<()>,
    ) -> Result<()> {
        let mut tree = DecodeTree::default();
        for b in 0..self.n_blocks() {
            let block = self.read_block(b)?;
            for p in 0..block.n_pages() {
                let view = block.toc_view(p, &mut tree)?;
                f(&view, &tree)?;
            }
        }
        Ok(())
    }

    /// Reads block `i` with one positional read and verifies its checksum
    /// and page structure. Page contents are validated when a page is
    /// taken ([`Block::page`], [`Block::toc_view`]).
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::ChecksumMismatch`] naming the block, or
    /// [`Error::InFile`] for a malformed page list.
    ///
    /// # Panics
    /// If `i >= n_blocks()`.
    pub fn read_block(&self, i: usize) -> Result<Block> {
        let entry = self.index[i];
        let bytes = read_at(&self.source, &self.path, entry.offset, entry.len)?;
        let found = crc32fast::hash(&bytes);
        if found != entry.crc && !cfg!(fuzzing) {
            return Err(Error::ChecksumMismatch {
                path: self.path.display().to_string(),
                section: format!("block {i}"),
                offset: entry.offset,
                expected: entry.crc,
                found,
            });
        }
        let mut block = Block {
            path: self.path.display().to_string(),
            format: self.info.format,
            number: i,
            offset: entry.offset,
            bytes,
            labels: Vec::new(),
            pages: Vec::new(),
        };
        block.index_pages(&entry).map_err(|error| Error::InFile {
            path: self.path.display().to_string(),
            section: format!("block {i}"),
            offset: entry.offset,
            error: Box::new(error),
        })?;
        Ok(block)
    }
}

impl Block {
    fn index_pages(&mut self, entry: &BlockEntry) -> Result<()> {
        let mut r = Reader::new(&self.bytes);
        let mut scratch = Vec::new();
        let mut labels = Vec::new();
        let mut rows_seen = 0u64;
        for _ in 0..entry.pages {
            let rows = r.varint_max("page rows", entry.rows - rows_seen)? as usize;
            read_labels(&mut r, rows, &mut labels, &mut scratch)?;
            let start = self.labels.len();
            self.labels.extend_from_slice(&labels);
            let len = r.varint("page payload length")?;
            let at = r.offset();
            r.bytes(len, "page payload")?;
            self.pages.push(PageSpan {
                rows,
                labels: start..self.labels.len(),
                payload: at..at + len as usize,
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
                offset: r.offset(),
                len: r.remaining(),
            });
        }
        Ok(())
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
    /// parallel across pages (rayon).
    ///
    /// # Errors
    /// The first failing page's error, as [`Block::page`].
    pub fn pages(&self) -> Result<Vec<Page>> {
        use rayon::prelude::*;
        (0..self.n_pages())
            .into_par_iter()
            .map(|j| self.page(j))
            .collect()
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
            .load(&self.bytes[span.payload.clone()])
            .and_then(|batch| {
                check_rows(span.rows, batch.n_rows())?;
                Page::new(batch, &self.labels[span.labels.clone()])
            });
        checked.map_err(|error| self.page_error(j, error))
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
            Some(_) => TocBatch::from_bytes_with_tree(payload, tree),
            None => Err(Error::WrongFormat {
                expected: "TOC",
                found: self.format.name(),
            }),
        }
        .and_then(|batch| {
            check_rows(span.rows, batch.n_rows())?;
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

/// A page's payload must hold as many rows as it has labels.
fn check_rows(labels: usize, rows: usize) -> Result<()> {
    if labels != rows {
        return Err(Error::LengthMismatch {
            what: "page rows (labels against the encoded batch)",
            expected: labels as u64,
            found: rows as u64,
        });
    }
    Ok(())
}

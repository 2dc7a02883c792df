//! [`Dataset`]: opens a dataset file by its trailer and footer, reads
//! blocks by positional reads and verifies each block's checksum before
//! parsing it (into a [`Block`]).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::block::{Block, TocView};
use super::footer::{check_header, check_trailer, parse_footer, HEADER_LEN, TRAILER_LEN};
use super::source::{read_at, Source};
use super::truncation;
use super::{BlockEntry, DatasetInfo};
use crate::codec::{DecodeTree, SharedDict};
use crate::error::{Error, Result};

/// An open dataset: a file by default, or bytes in memory.
#[derive(Debug)]
pub struct Dataset<S: Source = File> {
    path: PathBuf,
    source: S,
    info: DatasetInfo,
    index: Vec<BlockEntry>,
    /// Version 3: the shared dictionary of each segment, validated at
    /// open and resident while the file is open.
    dicts: Vec<Option<Arc<SharedDict>>>,
    /// The segment of each block (empty without segments).
    block_segment: Vec<u32>,
    /// Bytes of the shared dictionaries in the footer.
    dict_file_bytes: u64,
}

impl Dataset {
    /// Opens a dataset file, reading the header, trailer and footer only.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::InFile`] naming the header, trailer or
    /// footer and what is wrong there (a footer total beyond what the
    /// blocks can hold, or beyond the page limit of
    /// [`limits`](crate::limits), included); [`Error::ChecksumMismatch`]
    /// for a damaged footer; [`Error::TruncatedFile`] for a file that ends
    /// before its trailer, [`Error::BytesAfterEnd`] for one followed by
    /// more bytes.
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
            let header = read_at(&source, &path, 0, len.min(HEADER_LEN))?;
            if len >= HEADER_LEN && check_header(&header).is_ok() {
                return Err(Error::TruncatedFile {
                    path: name,
                    len,
                    needed: HEADER_LEN + TRAILER_LEN,
                });
            }
            return Err(wrap("file", 0)(Error::Truncated {
                what: "header and trailer",
                offset: 0,
                needed: HEADER_LEN + TRAILER_LEN,
                available: len as usize,
            }));
        }
        let header = read_at(&source, &path, 0, HEADER_LEN)?;
        let version = check_header(&header).map_err(wrap("header", 0))?;
        let trailer_at = len - TRAILER_LEN;
        let trailer = read_at(&source, &path, trailer_at, TRAILER_LEN)?;
        let (footer_at, crc) = match check_trailer(&trailer, trailer_at) {
            Ok(found) => found,
            Err(error) => {
                // No trailer where the file ends: a file cut short says
                // so, with its size; one whose whole trailer ends earlier,
                // followed by more bytes, had something written after it.
                // Anything else is a damaged trailer.
                let bound = truncation::lower_bound(&source, len, (version, &trailer));
                match bound {
                    Some(needed) if needed > len && matches!(error, Error::BadMagic { .. }) => {
                        return Err(Error::TruncatedFile {
                            path: name,
                            len,
                            needed,
                        });
                    }
                    // `needed` counts a trailer, so it is at least
                    // TRAILER_LEN, but a hostile file gets no subtraction
                    // on trust.
                    Some(end) if end < len => {
                        let whole_trailer = end.checked_sub(TRAILER_LEN).is_some_and(|at| {
                            read_at(&source, &path, at, TRAILER_LEN)
                                .is_ok_and(|t| check_trailer(&t, at).is_ok())
                        });
                        if whole_trailer {
                            return Err(Error::BytesAfterEnd {
                                path: name,
                                end,
                                len,
                            });
                        }
                    }
                    _ => {}
                }
                return Err(wrap("trailer", trailer_at)(error));
            }
        };
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
        let (mut info, index, segments) =
            parse_footer(&footer, footer_at, version).map_err(wrap("footer", footer_at))?;
        info.file_bytes = len;
        info.version = version;
        if !segments.is_empty() && version < 3 {
            // Shared dictionaries are version 3's.
            return Err(wrap("header", 0)(Error::FieldBelowMinimum {
                what: "file version (a file with shared dictionaries)",
                offset: 4,
                value: version as u64,
                min: 3,
            }));
        }
        let mut dicts = Vec::with_capacity(segments.len());
        let mut block_segment = Vec::new();
        let dict_file_bytes = segments.iter().map(|s| s.dict.len() as u64).sum();
        for (k, segment) in segments.into_iter().enumerate() {
            block_segment.extend(std::iter::repeat_n(k as u32, segment.blocks as usize));
            if segment.dict.is_empty() {
                dicts.push(None);
                continue;
            }
            // The pages of a file of version 4 or later that use the
            // dictionary are compact; from version 7 they may be pages
            // of row ids; from version 8 its values may be grouped.
            let dict = SharedDict::from_bytes(segment.dict)
                .map(|dict| {
                    dict.with_compact_pages(version >= 4)
                        .with_row_id_pages(version >= super::ROW_IDS_VERSION)
                })
                .and_then(|dict| {
                    if dict.grouped_values() && version < super::GROUPED_VERSION {
                        return Err(Error::WrongFormat {
                            expected: "a value dictionary of kind 0 to 2 (a file before version 8)",
                            found: "a grouped value dictionary (kind 3)",
                        });
                    }
                    if dict.gap_coded_ids() && version < super::GROUPED_VERSION {
                        return Err(Error::WrongFormat {
                            expected: "packed value ids (a file before version 8)",
                            found: "gap-coded value ids (flag 16)",
                        });
                    }
                    if dict.n_cols() != info.n_cols {
                        return Err(Error::LengthMismatch {
                            what: "columns of a shared dictionary (the file's)",
                            expected: info.n_cols as u64,
                            found: dict.n_cols() as u64,
                        });
                    }
                    Ok(dict)
                })
                .map_err(|error| Error::InFile {
                    path: name.clone(),
                    section: format!("footer, shared dictionary of segment {k}"),
                    offset: footer_at,
                    error: Box::new(error),
                })?;
            dicts.push(Some(Arc::new(dict)));
        }
        Ok(Dataset {
            path,
            source,
            info,
            index,
            dicts,
            block_segment,
            dict_file_bytes,
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

    /// Heap bytes of the shared dictionaries (file version 3), resident
    /// while the file is open: every block of a segment needs its
    /// segment's.
    pub fn shared_dict_bytes(&self) -> usize {
        self.dicts.iter().flatten().map(|d| d.heap_bytes()).sum()
    }

    /// Bytes the shared dictionaries take in the file (version 3; their
    /// resident size is [`shared_dict_bytes`](Self::shared_dict_bytes)).
    pub fn shared_dict_file_bytes(&self) -> u64 {
        self.dict_file_bytes
    }

    /// Number of segments with a shared dictionary, and of segments.
    pub fn n_segments(&self) -> (usize, usize) {
        (self.dicts.iter().flatten().count(), self.dicts.len())
    }

    /// The shared dictionary of block `i`'s segment, if any.
    fn dict_of(&self, i: usize) -> Option<Arc<SharedDict>> {
        let k = *self.block_segment.get(i)? as usize;
        self.dicts.get(k)?.clone()
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
        // The fuzzer reaches the page parsers through blocks whose
        // checksums it cannot forge.
        self.checked_block(i, entry, bytes, format!("block {i}"), cfg!(fuzzing))
    }

    /// `bytes` as block `i` (`entry`), after their length and checksum
    /// (unless `skip_checksum`); `section` names them in a mismatch.
    fn checked_block(
        &self,
        i: usize,
        entry: BlockEntry,
        bytes: Vec<u8>,
        section: String,
        skip_checksum: bool,
    ) -> Result<Block> {
        let found = crc32fast::hash(&bytes);
        let intact = bytes.len() as u64 == entry.len && found == entry.crc;
        if !intact && !skip_checksum {
            return Err(Error::ChecksumMismatch {
                path: self.path.display().to_string(),
                section,
                offset: entry.offset,
                expected: entry.crc,
                found,
            });
        }
        Block::parse(
            self.path.display().to_string(),
            (
                self.info.format,
                self.info.n_cols,
                super::PageListForm::of_version(self.info.version),
                self.dict_of(i),
            ),
            i,
            &entry,
            bytes,
        )
    }

    /// Block `i` from bytes that came from elsewhere than this file's
    /// source (a worker's cache, filled by a coded shuffle), checked as
    /// [`read_block`](Self::read_block) checks what it reads: length and
    /// checksum against this file's index, then the page structure. A
    /// worker needs only the file's footer to use the blocks it receives.
    ///
    /// # Errors
    /// [`Error::BadArgument`] for `i >= n_blocks()`;
    /// [`Error::ChecksumMismatch`] naming the block for bytes of another
    /// length or checksum; [`Error::InFile`] for a malformed page list.
    pub fn block_from_bytes(&self, i: usize, bytes: Vec<u8>) -> Result<Block> {
        let Some(&entry) = self.index.get(i) else {
            return Err(Error::BadArgument {
                what: "block number",
                expected: "below the file's block count",
            });
        };
        let section = format!("block {i} (received, {} bytes)", bytes.len());
        self.checked_block(i, entry, bytes, section, false)
    }
}

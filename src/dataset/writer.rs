//! [`DatasetWriter`]: streams rows into pages and blocks, encoding pages in
//! parallel, and publishes the file atomically.

use std::path::Path;

use rayon::prelude::*;

use super::footer::{footer_and_trailer, header, Segment, HEADER_LEN};
use super::labels::{write_labels, LabelsForm};
use super::mix::MixStats;
use super::{BlockEntry, DatasetInfo, FILE_VERSION};
use crate::atomic::AtomicFile;
use crate::codec::{EncodeOptions, Encoder, SegmentModel};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::scale::{ColumnStats, ScaleKind};
use crate::sparse::SparseBatch;
use crate::wire::write_varint;

/// Pages encoded per parallel round: enough to keep every core busy,
/// few enough that the rows held in memory stay a small multiple of a
/// block.
const PAGES_PER_ROUND: usize = 32;

/// Decoded bytes of pending rows (12 per non-zero, 16 per row) that end a
/// round early, at the next page boundary: wide rows (images) would
/// otherwise hold `PAGES_PER_ROUND` pages of them, whatever their width.
const ROUND_BYTES: usize = 16 << 20;

/// Default rows per page: a fifth of the default 250-row mini-batch, so a
/// mini-batch spans five pages from different blocks and the loader's
/// [`Mode::Auto`](crate::loader::Mode::Auto) takes page mode (no
/// re-encoding). Measured in `docs/archive/RESULTS-HISTORY.md` (section 15): files are 1%
/// (mnist5k) to 52% (census) larger than with 250-row pages, and an epoch
/// is several times faster than exact mode's.
pub const DEFAULT_PAGE_ROWS: usize = 50;

/// Default target bytes per block: 2 KiB, so that a file has hundreds to
/// thousands of blocks (census_fertility's 230k rows: 735; flights3m's
/// 2.7M shuffled rows: 18,000) and a block holds a few hundred rows at
/// most. On label-sorted census, CorgiPile's 10% buffer then ends at
/// Shuffle Once's test accuracy, where 16 KiB blocks (98 of them, 2,300
/// rows each) left it swinging between 38% and 63% (`docs/archive/RESULTS-HISTORY.md`,
/// section 15). The price, on flights3m: the first epoch and streaming
/// epochs take about twice as long as with 16 KiB blocks (more, smaller
/// reads and hand-overs); resident epochs (the default) are unchanged.
pub const DEFAULT_BLOCK_BYTES: usize = 2 << 10;

/// Default rows per segment of a TOC_FULL file: the pages of a segment
/// share one dictionary (pairs, values and prefix-tree nodes learned from
/// the segment's rows; file version 6). Measured in `docs/archive/RESULTS-HISTORY.md`
/// (section 24): against 4,096 rows, 65,536 makes label-sorted flights3m's
/// file 29% smaller (19.1 to 13.6 MB) and its training's peak memory
/// 22% lower (162 to 126 MB: fewer, larger dictionaries repeat fewer
/// pairs and nodes), for 20 MB more while encoding.
pub const DEFAULT_SEGMENT_ROWS: usize = 65536;

/// Decoded bytes of a segment's rows that end it early (at a page
/// boundary): the writer holds one segment in memory.
const SEGMENT_BYTES: usize = 64 << 20;

/// Rows per target byte at which a block of page copies closes (version
/// 5): stored pages take at least a bit a row (a label id), so a block of
/// `block_bytes` holds at most this many rows a byte without copies.
const ROWS_PER_BLOCK_BYTE: u64 = 8;

/// How a dataset file is laid out.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct WriterOptions {
    /// Rows per page (default [`DEFAULT_PAGE_ROWS`]).
    pub page_rows: usize,
    /// Target bytes per block, the unit of random I/O (default
    /// [`DEFAULT_BLOCK_BYTES`]): a block closes with the first page that
    /// reaches it.
    pub block_bytes: usize,
    /// Format of every page (default TOC_FULL).
    pub format: FormatKind,
    /// The column schema to store with the data (e.g. a CSV schema's text
    /// form); empty for none.
    pub schema: String,
    /// Rows per segment (default [`DEFAULT_SEGMENT_ROWS`], rounded up to
    /// whole pages): a TOC_FULL file's pages of one segment are coded
    /// against a dictionary learned from the segment's rows, where that
    /// makes the page smaller (file version 6). 0: every page
    /// self-contained (version 2). Other formats ignore it.
    pub segment_rows: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            page_rows: DEFAULT_PAGE_ROWS,
            block_bytes: DEFAULT_BLOCK_BYTES,
            format: FormatKind::TocFull,
            schema: String::new(),
            segment_rows: DEFAULT_SEGMENT_ROWS,
        }
    }
}

/// Writes a dataset file. Rows go in with [`DatasetWriter::push`]; nothing
/// is visible at the target path until [`DatasetWriter::finish`] renames
/// the complete, fsynced temporary file into place. Dropping an unfinished
/// writer deletes the temporary file.
#[derive(Debug)]
pub struct DatasetWriter {
    file: AtomicFile,
    options: WriterOptions,
    pending: SparseBatch,
    pending_labels: Vec<f64>,
    /// How mixed the pages' labels are (the footer's label mix section).
    mix: MixStats,
    block: Vec<u8>,
    block_rows: u64,
    block_pages: u64,
    index: Vec<BlockEntry>,
    offset: u64,
    n_rows: u64,
    nnz: u64,
    n_pages: u64,
    payload_bytes: u64,
    scale: Option<(ScaleKind, ColumnStats)>,
    /// Rows per segment, whole pages; 0 without segments.
    segment_rows: usize,
    /// Segments written, and the blocks of the one being written.
    segments: Vec<Segment>,
    segment_blocks: u64,
    /// The bytes of the block's last page as stored in full (a page equal
    /// to it is written as a copy, version 5 and up); empty at a block's
    /// start.
    last_page: Vec<u8>,
    /// Copies of `last_page` not yet written (version 6 writes a run of
    /// them as one zero byte and their count when the run ends).
    copies_run: u64,
}

impl DatasetWriter {
    /// Starts a dataset of `n_cols` columns at `path` (written to a
    /// temporary file beside it until [`finish`](Self::finish)).
    ///
    /// # Errors
    /// [`Error::BadArgument`] for zero `page_rows` or `block_bytes`;
    /// [`Error::TooLarge`] for too many columns, or `page_rows` or
    /// `block_bytes` above `u32::MAX` (a reader's limits);
    /// [`Error::Io`] if the temporary file cannot be created.
    pub fn create(path: impl AsRef<Path>, n_cols: usize, options: WriterOptions) -> Result<Self> {
        if options.page_rows == 0 || options.block_bytes == 0 {
            return Err(Error::BadArgument {
                what: "page_rows and block_bytes",
                expected: "at least 1",
            });
        }
        // The largest values a reader accepts (the footer's limits).
        for (what, value) in [
            ("page_rows (rows per page)", options.page_rows),
            ("block_bytes (target block size)", options.block_bytes),
        ] {
            if value as u64 > u64::from(u32::MAX) {
                return Err(Error::TooLarge {
                    what,
                    value: value as u64,
                    max: u64::from(u32::MAX),
                });
            }
        }
        let pending = SparseBatch::with_cols(n_cols)?;
        let segment_rows = match options.format {
            FormatKind::TocFull => {
                options.segment_rows.div_ceil(options.page_rows) * options.page_rows
            }
            _ => 0,
        };
        let mut writer = DatasetWriter {
            file: AtomicFile::create(path.as_ref())?,
            pending,
            options,
            pending_labels: Vec::new(),
            mix: MixStats::new(),
            block: Vec::new(),
            block_rows: 0,
            block_pages: 0,
            index: Vec::new(),
            offset: 0,
            n_rows: 0,
            nnz: 0,
            n_pages: 0,
            payload_bytes: 0,
            scale: None,
            segment_rows,
            segments: Vec::new(),
            segment_blocks: 0,
            last_page: Vec::new(),
            copies_run: 0,
        };
        writer.write_raw(&header(writer.version()))?;
        debug_assert_eq!(writer.offset, HEADER_LEN);
        Ok(writer)
    }

    /// Fits a column scaling of `kind` on the rows as they are pushed
    /// (one pass, no extra read) and stores it in the footer's scaling
    /// section ([`crate::scale`]); `None` (the default) stores none. Call
    /// before the first [`push`](Self::push): rows pushed earlier are not
    /// counted.
    ///
    /// # Errors
    /// As [`ColumnStats::new`]: a file wider than the column limit of
    /// [`crate::limits`] gets no scaling unless the limit is raised (the
    /// writer is unchanged then).
    pub fn set_scaling(&mut self, kind: Option<ScaleKind>) -> Result<()> {
        self.scale = match kind {
            Some(k) => Some((k, ColumnStats::new(self.pending.n_cols())?)),
            None => None,
        };
        Ok(())
    }

    /// Appends rows and their labels.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `labels` does not hold one label per
    /// row or the column counts differ; [`Error::InvalidNumber`] for a
    /// label that is not finite (nothing of the call is written then); I/O
    /// and encoding errors.
    pub fn push(&mut self, batch: &SparseBatch, labels: &[f64]) -> Result<()> {
        if batch.n_cols() != self.pending.n_cols() {
            return Err(Error::LengthMismatch {
                what: "columns of the rows pushed (the dataset's column count)",
                expected: self.pending.n_cols() as u64,
                found: batch.n_cols() as u64,
            });
        }
        if labels.len() != batch.n_rows() {
            return Err(Error::LengthMismatch {
                what: "labels pushed (one per row)",
                expected: batch.n_rows() as u64,
                found: labels.len() as u64,
            });
        }
        // Readers reject NaN and infinite labels: never write one.
        if let Some(i) = labels.iter().position(|y| !y.is_finite()) {
            return Err(Error::InvalidNumber {
                what: format!("the label of row {i} pushed"),
                value: labels[i],
                expected: "a finite number",
            });
        }
        if let Some((_, stats)) = &mut self.scale {
            stats.add(batch)?;
        }
        // Rows go in one at a time so that a round closes at the first page
        // boundary past its limits: memory is bounded by the round, not by
        // the batch pushed.
        let page_rows = self.options.page_rows;
        for ((cols, vals), &label) in batch.rows().zip(labels) {
            self.pending.push_row(cols, vals)?;
            self.pending_labels.push(label);
            let rows = self.pending.n_rows();
            let bytes = 12 * self.pending.nnz() + 16 * rows;
            if self.segment_rows > 0 {
                if rows.is_multiple_of(page_rows)
                    && (rows >= self.segment_rows || bytes >= SEGMENT_BYTES)
                {
                    self.flush_segment(false)?;
                }
            } else if rows.is_multiple_of(page_rows)
                && (rows >= page_rows.saturating_mul(PAGES_PER_ROUND) || bytes >= ROUND_BYTES)
            {
                self.flush_pages(false)?;
            }
        }
        Ok(())
    }

    /// Encodes the pending rows into pages (in parallel), keeping a partial
    /// last page pending unless `all`.
    fn flush_pages(&mut self, all: bool) -> Result<()> {
        let rows = self.pending.n_rows();
        let page_rows = self.options.page_rows;
        let full = if all { rows } else { rows - rows % page_rows };
        if full == 0 {
            return Ok(());
        }
        let starts: Vec<usize> = (0..full).step_by(page_rows).collect();
        let format = self.options.format;
        let (pending, labels) = (&self.pending, &self.pending_labels);
        let pages: Vec<Result<(Vec<u8>, usize)>> = crate::parallel::install(|| {
            starts
                .par_iter()
                .map_init(
                    || {
                        format
                            .level()
                            .map(|level| Encoder::new(EncodeOptions::level(level)))
                    },
                    |encoder, &s| {
                        let e = (s + page_rows).min(full);
                        encode_page(
                            format,
                            encoder.as_mut(),
                            &pending.slice_rows(s..e),
                            &labels[s..e],
                        )
                    },
                )
                .collect()
        });
        for (page, &s) in pages.into_iter().zip(&starts) {
            let (page, payload) = page?;
            let n = (s + page_rows).min(full) - s;
            self.block.extend_from_slice(&page);
            self.mix.add_page(&self.pending_labels[s..s + n]);
            self.payload_bytes += payload as u64;
            self.block_rows += n as u64;
            self.block_pages += 1;
            self.n_pages += 1;
            if self.block.len() >= self.options.block_bytes {
                self.close_block()?;
            }
        }
        self.n_rows += full as u64;
        self.nnz += self.pending.offsets()[full] as u64;
        self.pending = self.pending.slice_rows(full..rows);
        self.pending_labels.drain(..full);
        Ok(())
    }

    /// The file version the writer writes: 8 (compact pages, runs of
    /// page copies, pages of row ids, grouped dictionaries) with
    /// segments.
    fn version(&self) -> u8 {
        if self.segment_rows > 0 {
            FILE_VERSION
        } else {
            2
        }
    }

    /// Writes the pending rows as one segment: learns its dictionary,
    /// encodes each page both self-contained and against the dictionary
    /// (in parallel) and keeps the smaller, then closes the segment's last
    /// block. The dictionary is stored only if a page uses it. Keeps a
    /// partial last page pending unless `all`.
    fn flush_segment(&mut self, all: bool) -> Result<()> {
        let rows = self.pending.n_rows();
        let page_rows = self.options.page_rows;
        let full = if all { rows } else { rows - rows % page_rows };
        if full == 0 {
            return Ok(());
        }
        let segment = self.pending.slice_rows(0..full);
        let model = Encoder::new(EncodeOptions::default()).learn_segment_in(&segment, true)?;
        let starts: Vec<usize> = (0..full).step_by(page_rows).collect();
        let labels = &self.pending_labels;
        let pages: Vec<Result<SegmentPage>> = crate::parallel::install(|| {
            starts
                .par_iter()
                .map_init(
                    || Encoder::new(EncodeOptions::default()),
                    |encoder, &s| {
                        let e = (s + page_rows).min(full);
                        encode_segment_page(
                            encoder,
                            model.as_ref(),
                            &segment.slice_rows(s..e),
                            &labels[s..e],
                        )
                    },
                )
                .collect()
        });
        let pages = pages.into_iter().collect::<Result<Vec<_>>>()?;
        // The dictionary pays when the pages it makes smaller save more
        // than its own bytes; otherwise every page is self-contained.
        let saved: usize = pages.iter().map(|p| p.own.len() - p.best().len()).sum();
        let used = match &model {
            Some(model) => saved > model.dict().as_bytes().len(),
            None => false,
        };
        for (page, &s) in pages.iter().zip(&starts) {
            let n = (s + page_rows).min(full) - s;
            let payload = if used { page.best() } else { &page.own };
            let labels = self.pending_labels[s..s + n].to_vec();
            let mut out = page.head.clone();
            write_varint(&mut out, payload.len() as u64);
            out.extend_from_slice(payload);
            self.append_page(&out, payload.len(), &labels)?;
        }
        self.close_block()?;
        if self.segment_blocks > 0 {
            let dict = match (&model, used) {
                (Some(model), true) => model.dict().as_bytes().to_vec(),
                _ => Vec::new(),
            };
            self.segments.push(Segment {
                blocks: self.segment_blocks,
                dict,
            });
            self.segment_blocks = 0;
        }
        self.n_rows += full as u64;
        self.nnz += self.pending.offsets()[full] as u64;
        self.pending = self.pending.slice_rows(full..rows);
        self.pending_labels.drain(..full);
        Ok(())
    }

    /// Appends one encoded page (of `labels.len()` rows) to the block,
    /// closing the block when it reaches its size. In version 5 a page
    /// equal to the block's previous page, byte for byte (rows, labels
    /// and payload), is written as a copy: one zero byte; in version 6 a
    /// run of copies is one zero byte and their count. Such a block
    /// also closes at [`ROWS_PER_BLOCK_BYTE`] rows per target byte, so that
    /// its rows are never more than stored pages could have put there
    /// (the block is the loader's unit of shuffling).
    fn append_page(&mut self, page: &[u8], payload: usize, labels: &[f64]) -> Result<()> {
        let copies = self.version() >= super::COPIES_VERSION;
        if copies && self.block_pages > 0 && page == self.last_page.as_slice() {
            if self.version() >= super::RUNS_VERSION {
                self.copies_run += 1;
            } else {
                self.block.push(0);
            }
        } else {
            self.end_copies_run();
            self.block.extend_from_slice(page);
            self.payload_bytes += payload as u64;
            if copies {
                self.last_page.clear();
                self.last_page.extend_from_slice(page);
            }
        }
        self.mix.add_page(labels);
        self.block_rows += labels.len() as u64;
        self.block_pages += 1;
        self.n_pages += 1;
        let full_rows = copies
            && self.block_rows
                >= (self.options.block_bytes as u64).saturating_mul(ROWS_PER_BLOCK_BYTE);
        if self.block.len() >= self.options.block_bytes || full_rows {
            self.close_block()?;
        }
        Ok(())
    }

    /// Writes the pending run of page copies, if any: a zero byte and
    /// the number of copies (version 6).
    fn end_copies_run(&mut self) {
        if self.copies_run > 0 {
            self.block.push(0);
            write_varint(&mut self.block, self.copies_run);
            self.copies_run = 0;
        }
    }

    fn close_block(&mut self) -> Result<()> {
        if self.block_pages == 0 {
            return Ok(());
        }
        self.end_copies_run();
        self.segment_blocks += 1;
        let entry = BlockEntry {
            offset: self.offset,
            len: self.block.len() as u64,
            rows: self.block_rows,
            pages: self.block_pages,
            crc: crc32fast::hash(&self.block),
        };
        let block = std::mem::take(&mut self.block);
        self.write_raw(&block)?;
        self.block = block;
        self.block.clear();
        self.index.push(entry);
        self.last_page.clear();
        self.block_rows = 0;
        self.block_pages = 0;
        Ok(())
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Writes the last pages, the footer and the trailer, fsyncs, and
    /// renames the file into place.
    ///
    /// # Errors
    /// I/O and encoding errors; the target path is untouched on error.
    pub fn finish(mut self) -> Result<DatasetInfo> {
        if self.segment_rows > 0 {
            self.flush_segment(true)?;
        } else {
            self.flush_pages(true)?;
            self.close_block()?;
        }
        let info = DatasetInfo {
            version: self.version(),
            n_rows: self.n_rows,
            n_cols: self.pending.n_cols(),
            nnz: self.nnz,
            format: self.options.format,
            page_rows: self.options.page_rows,
            block_bytes: self.options.block_bytes,
            n_blocks: self.index.len(),
            n_pages: self.n_pages,
            file_bytes: 0,
            payload_bytes: self.payload_bytes,
            schema: self.options.schema.clone(),
            scaling: self.scale.as_ref().map(|(k, stats)| stats.scaling(*k)),
            label_mix: self.mix.finish(),
        };
        let tail = footer_and_trailer(&info, &self.index, &self.segments, self.offset);
        self.write_raw(&tail)?;
        self.file.commit()?;
        Ok(DatasetInfo {
            file_bytes: self.offset,
            ..info
        })
    }
}

/// One page of a segment, encoded both ways.
struct SegmentPage {
    /// Rows and labels, as the page starts.
    head: Vec<u8>,
    /// The page self-contained.
    own: Vec<u8>,
    /// The page coded against the segment's dictionary.
    shared: Option<Vec<u8>>,
}

impl SegmentPage {
    /// The smaller payload.
    fn best(&self) -> &[u8] {
        match &self.shared {
            Some(shared) if shared.len() < self.own.len() => shared,
            _ => &self.own,
        }
    }
}

/// One page of a segment, self-contained and (with a dictionary) coded
/// against the segment's dictionary.
fn encode_segment_page(
    encoder: &mut Encoder,
    model: Option<&SegmentModel>,
    batch: &SparseBatch,
    labels: &[f64],
) -> Result<SegmentPage> {
    let mut own = Vec::new();
    encoder.encode_into(batch, &mut own)?;
    let shared = match model {
        Some(model) => Some(encoder.encode_shared(batch, model)?.into_bytes()),
        None => None,
    };
    let mut head = Vec::new();
    write_varint(&mut head, batch.n_rows() as u64);
    write_labels(labels, LabelsForm::of_version(FILE_VERSION), &mut head)?;
    Ok(SegmentPage { head, own, shared })
}

/// One page: `rows labels payload_len payload`; returns the bytes and the
/// payload's length. TOC pages use the thread's reused `encoder`; other
/// formats encode through [`FormatKind::encode`].
fn encode_page(
    format: FormatKind,
    encoder: Option<&mut Encoder>,
    batch: &SparseBatch,
    labels: &[f64],
) -> Result<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    write_varint(&mut out, batch.n_rows() as u64);
    // A file without segments is written as version 2.
    write_labels(labels, LabelsForm::of_version(2), &mut out)?;
    let mut payload = Vec::new();
    match encoder {
        Some(encoder) => encoder.encode_into(batch, &mut payload)?,
        None => format.encode(batch)?.write_bytes(&mut payload),
    }
    write_varint(&mut out, payload.len() as u64);
    out.extend_from_slice(&payload);
    Ok((out, payload.len()))
}

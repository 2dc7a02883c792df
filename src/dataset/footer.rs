//! The frame of a dataset file, both directions: the 8-byte header, the
//! footer (the block index and what [`DatasetInfo`] says) and the 16-byte
//! trailer that locates and checksums the footer. The grammar is in
//! `docs/FORMAT.md` ("Dataset file").
//!
//! ```text
//! header  = "TOCD" version 0 0 0
//! footer  = "TOCF" n_cols n_rows nnz format page_rows block_bytes n_pages
//!           payload_bytes schema_len schema n_blocks entry* section*
//! section = scaling (crate::scale: "SCAL" version kind n_cols factor*)
//!         | label mix (mix.rs: "LMIX" version pages ratio)
//!         | shared dictionaries (version 3: "SHRD" version n (blocks len dict)*)
//! trailer = footer_offset:u64le footer_crc32:u32le "TOCD"
//! ```

use super::{BlockEntry, DatasetInfo, LabelMix, FILE_MAGIC, FILE_VERSION};
use crate::error::{Error, Result};
use crate::formats::FormatKind;
use crate::scale::Scaling;
use crate::sparse::MAX_COLS;
use crate::wire::{write_u32, write_u64, write_varint, Reader};

/// Header bytes before the first block.
pub(super) const HEADER_LEN: u64 = 8;
/// Trailer bytes after the footer: footer offset (u64), footer CRC (u32),
/// magic.
pub(super) const TRAILER_LEN: u64 = 16;
/// First bytes of the footer.
const FOOTER_MAGIC: [u8; 4] = *b"TOCF";

/// The header: magic, version, three reserved zero bytes.
pub(super) fn header(version: u8) -> [u8; HEADER_LEN as usize] {
    let mut out = [0; HEADER_LEN as usize];
    out[..4].copy_from_slice(&FILE_MAGIC);
    out[4] = version;
    out
}

/// Checks the header's magic, version (1 to [`FILE_VERSION`]) and
/// reserved bytes; returns the version.
pub(super) fn check_header(header: &[u8]) -> Result<u8> {
    let mut r = Reader::new(header);
    r.magic(&FILE_MAGIC)?;
    let version = r.u8("version")?;
    if version == 0 || version > FILE_VERSION {
        return Err(Error::UnsupportedVersion {
            what: "dataset file format",
            found: version,
            supported: FILE_VERSION,
        });
    }
    let reserved = r.bytes(3, "reserved bytes")?;
    if reserved != [0, 0, 0] {
        return Err(Error::UnknownFlags {
            offset: 5,
            flags: reserved.iter().fold(0, |a, &b| a | b),
        });
    }
    Ok(version)
}

/// The footer for `info` and `index` followed by the trailer, the footer
/// starting at byte `footer_at` of the file.
pub(super) fn footer_and_trailer(
    info: &DatasetInfo,
    index: &[BlockEntry],
    segments: &[Segment],
    footer_at: u64,
) -> Vec<u8> {
    let mut out = footer(info, index, segments);
    let crc = crc32fast::hash(&out);
    write_u64(&mut out, footer_at);
    write_u32(&mut out, crc);
    out.extend_from_slice(&FILE_MAGIC);
    out
}

/// The footer grammar (see `docs/FORMAT.md`).
fn footer(info: &DatasetInfo, index: &[BlockEntry], segments: &[Segment]) -> Vec<u8> {
    let mut out = FOOTER_MAGIC.to_vec();
    for v in [info.n_cols as u64, info.n_rows, info.nnz] {
        write_varint(&mut out, v);
    }
    out.push(info.format.code());
    for v in [
        info.page_rows as u64,
        info.block_bytes as u64,
        info.n_pages,
        info.payload_bytes,
    ] {
        write_varint(&mut out, v);
    }
    write_varint(&mut out, info.schema.len() as u64);
    out.extend_from_slice(info.schema.as_bytes());
    write_varint(&mut out, index.len() as u64);
    for e in index {
        for v in [e.len, e.rows, e.pages] {
            write_varint(&mut out, v);
        }
        write_u32(&mut out, e.crc);
    }
    // Optional sections follow the index; a file without any is byte for
    // byte what earlier versions wrote, and still reads.
    if let Some(scaling) = &info.scaling {
        scaling.write(&mut out);
    }
    if let Some(mix) = &info.label_mix {
        mix.write(&mut out);
    }
    if !segments.is_empty() {
        out.extend_from_slice(SEGMENTS_MAGIC);
        out.push(SEGMENTS_VERSION);
        write_varint(&mut out, segments.len() as u64);
        for s in segments {
            write_varint(&mut out, s.blocks);
            write_varint(&mut out, s.dict.len() as u64);
            out.extend_from_slice(&s.dict);
        }
    }
    out
}

/// Tag of the footer's shared-dictionary section (file version 3).
const SEGMENTS_MAGIC: &[u8; 4] = b"SHRD";
/// Its version.
const SEGMENTS_VERSION: u8 = 1;

/// A segment of a version-3 file: a run of consecutive blocks and the
/// shared dictionary its version-3 pages are coded against (empty when
/// none of its pages uses one).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Segment {
    pub(crate) blocks: u64,
    pub(crate) dict: Vec<u8>,
}

/// Reads the shared-dictionary section: its segments cover the
/// `n_blocks` blocks exactly. Each dictionary's bytes are bounded by the
/// footer; their contents are checked by the reader.
fn read_segments(r: &mut Reader<'_>, n_blocks: u64) -> Result<Vec<Segment>> {
    r.magic(SEGMENTS_MAGIC)?;
    let version = r.u8("shared dictionaries version")?;
    if version != SEGMENTS_VERSION {
        return Err(Error::UnsupportedVersion {
            what: "shared-dictionary section (SHRD)",
            found: version,
            supported: SEGMENTS_VERSION,
        });
    }
    // Every segment takes at least 2 bytes and holds at least one block.
    let max = (r.remaining() as u64 / 2).min(n_blocks);
    let n = r.varint_max("segment count (at most one per block)", max)?;
    let mut segments = Vec::with_capacity(n as usize);
    let mut covered = 0u64;
    for _ in 0..n {
        let blocks = r.varint_nonzero("blocks of a segment", n_blocks - covered)?;
        covered += blocks;
        let len = r.varint("shared dictionary length")?;
        let dict = r.bytes(len, "shared dictionary")?.to_vec();
        segments.push(Segment { blocks, dict });
    }
    if covered != n_blocks {
        return Err(Error::LengthMismatch {
            what: "blocks of all segments (the file's blocks)",
            expected: n_blocks,
            found: covered,
        });
    }
    Ok(segments)
}

/// The footer's offset and checksum, checked to lie between the header and
/// the trailer (which starts at `trailer_at`).
pub(super) fn check_trailer(trailer: &[u8], trailer_at: u64) -> Result<(u64, u32)> {
    let mut r = Reader::new(trailer);
    let footer_at = r.u64("footer offset")?;
    let crc = r.u32("footer checksum")?;
    r.magic(&FILE_MAGIC)?;
    if footer_at < HEADER_LEN || footer_at > trailer_at {
        return Err(Error::FieldOutOfRange {
            what: "footer offset",
            offset: 0,
            value: footer_at,
            max: trailer_at,
        });
    }
    Ok((footer_at, crc))
}

/// Parses and checks the footer that starts at byte `footer_at`: every
/// count bounded by the bytes that remain before anything is allocated,
/// block lengths adding up to the footer offset, and block rows and pages
/// to the totals. `file_bytes` is left 0 for the caller.
/// `version` is the header's: from version 5 on, a block's page copies
/// repeat rows for a byte each, so its rows are bounded by the decode
/// limit rather than by its bytes.
pub(super) fn parse_footer(
    footer: &[u8],
    footer_at: u64,
    version: u8,
) -> Result<(DatasetInfo, Vec<BlockEntry>, Vec<Segment>)> {
    let mut r = Reader::new(footer);
    r.magic(&FOOTER_MAGIC)?;
    let n_cols = r.varint_max("n_cols", MAX_COLS as u64)? as usize;
    let n_rows = r.varint("n_rows")?;
    let nnz = r.varint("nnz")?;
    let format_at = r.offset();
    let code = r.u8("page format")?;
    let format = FormatKind::from_code(code).ok_or(Error::FieldOutOfRange {
        what: "page format (a format code)",
        offset: format_at,
        value: code.into(),
        max: FormatKind::ALL
            .iter()
            .map(|k| k.code())
            .max()
            .unwrap_or(0)
            .into(),
    })?;
    let page_rows_at = r.offset();
    let page_rows = r.varint_max("page_rows", u32::MAX as u64)? as usize;
    let block_bytes_at = r.offset();
    let block_bytes = r.varint_max("block_bytes", u32::MAX as u64)? as usize;
    // The writer's options, at least 1 each (a copy written with them,
    // Shuffle Once's, needs them).
    for (what, offset, value) in [
        ("page_rows (rows per page)", page_rows_at, page_rows),
        (
            "block_bytes (target block size)",
            block_bytes_at,
            block_bytes,
        ),
    ] {
        if value == 0 {
            return Err(Error::FieldBelowMinimum {
                what,
                offset,
                value: 0,
                min: 1,
            });
        }
    }
    let n_pages = r.varint("n_pages")?;
    let payload_bytes = r.varint("payload bytes")?;
    let schema_len = r.varint("schema length")?;
    let schema_at = r.offset();
    let schema =
        String::from_utf8(r.bytes(schema_len, "schema")?.to_vec()).map_err(|e| Error::NotUtf8 {
            what: "the schema",
            offset: schema_at,
            len: schema_len,
            invalid_at: schema_at + e.utf8_error().valid_up_to(),
        })?;
    // Every entry takes at least 7 bytes: bound the count before allocating.
    let n_blocks = r.varint_max("block count", r.remaining() as u64 / 7)? as usize;
    let mut index = Vec::with_capacity(n_blocks);
    let (mut offset, mut rows, mut pages) = (HEADER_LEN, 0u64, 0u64);
    for _ in 0..n_blocks {
        let len = r.varint_max("block length", footer_at - offset)?;
        // Every stored row takes at least one bit of the block (its label
        // id): a footer cannot claim more rows than its blocks' bytes
        // hold. Version 5's page copies repeat a page's rows for one byte,
        // so beyond that a block's rows (the labels read with it) are held
        // to the decode limit, as the non-zeros they decode to are.
        let block_rows = if version >= super::COPIES_VERSION {
            let rows = r.varint("block rows")?;
            if rows > len * 8 {
                crate::limits::check_block_rows(rows)?;
            }
            rows
        } else {
            r.varint_max("block rows (8 per byte of the block)", len * 8)?
        };
        // A stored page takes a byte or more, and so did a version-5
        // copy; a version-6 run of copies takes a few bytes for any number
        // of pages, each of at least one row: pages are held to the rows.
        let block_pages = if version >= super::RUNS_VERSION {
            let pages = r.varint_max("block pages (one row or more each)", block_rows.max(len))?;
            if pages > len {
                crate::limits::check_block_pages(pages)?;
            }
            pages
        } else {
            r.varint_max("block pages", len)?
        };
        let crc = r.u32("block checksum")?;
        index.push(BlockEntry {
            offset,
            len,
            rows: block_rows,
            pages: block_pages,
            crc,
        });
        offset += len;
        rows = rows.saturating_add(block_rows);
        pages += block_pages;
    }
    // A section is known by its magic: bytes after the index that do not
    // start one are trailing bytes (e.g. a trailer, when a file cut short
    // is read for where it ends).
    let at = |r: &Reader<'_>, magic: &[u8]| r.blob()[r.offset()..].starts_with(magic);
    let scaling = if at(&r, Scaling::SECTION_MAGIC) {
        Some(Scaling::read(&mut r, n_cols)?)
    } else {
        None
    };
    let label_mix = if at(&r, LabelMix::SECTION_MAGIC) {
        Some(LabelMix::read(&mut r, n_pages, n_rows)?)
    } else {
        None
    };
    let segments = if at(&r, SEGMENTS_MAGIC) {
        read_segments(&mut r, n_blocks as u64)?
    } else {
        Vec::new()
    };
    if r.remaining() > 0 {
        return Err(Error::TrailingBytes {
            what: "the footer's last section",
            offset: r.offset(),
            len: r.remaining(),
        });
    }
    for (what, expected, found) in [
        ("bytes of all blocks (up to the footer)", footer_at, offset),
        ("rows of all blocks", n_rows, rows),
        ("pages of all blocks", n_pages, pages),
    ] {
        if expected != found {
            return Err(Error::LengthMismatch {
                what,
                expected,
                found,
            });
        }
    }
    check_totals(n_rows, n_cols, nnz, n_pages, payload_bytes, footer_at)?;
    let info = DatasetInfo {
        // The header's, set by the reader.
        version: FILE_VERSION,
        n_rows,
        n_cols,
        nnz,
        format,
        page_rows,
        block_bytes,
        n_blocks,
        n_pages,
        file_bytes: 0,
        payload_bytes,
        schema,
        scaling,
        label_mix,
    };
    Ok((info, index, segments))
}

/// The footer totals nothing else bounds, against what the file can hold:
/// non-zeros at most one per cell and at most the page limit per page
/// (they size the decoded rows of a shuffle), payload bytes within the
/// blocks. Rows and pages are bounded by the blocks' bytes already.
fn check_totals(
    n_rows: u64,
    n_cols: usize,
    nnz: u64,
    n_pages: u64,
    payload_bytes: u64,
    footer_at: u64,
) -> Result<()> {
    let cells = n_rows.saturating_mul(n_cols as u64);
    for (what, value, max) in [
        ("footer non-zeros (at most rows x columns)", nnz, cells),
        (
            "footer payload bytes (at most the blocks' bytes)",
            payload_bytes,
            footer_at,
        ),
    ] {
        if value > max {
            return Err(Error::TooLarge { what, value, max });
        }
    }
    crate::limits::check_footer_nnz(nnz, n_pages)
}

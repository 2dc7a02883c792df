//! Pages of row ids (dataset file version 7, `docs/FORMAT.md`, "Pages of
//! row ids"): a compact page that stores each distinct row of the page
//! once, as a compact page stores rows (their lengths, then their codes),
//! and then one id per row of the page naming which.
//!
//! Where a page's rows repeat (wvs_bribe: about one distinct feature
//! vector in a 50-row page, each row one code of its segment's
//! dictionary), the codes were most of a page's bytes; an id of zero bits
//! replaces them. A page of row ids means exactly the compact page that
//! spells every row out: the rows' codes are the ids' distinct rows'
//! codes, in the page's row order, and every rule of a compact page
//! (codes in range as Algorithm 2 creates the page's nodes, columns
//! ascending) applies to those. So the page is expanded when its rows are
//! loaded (`load_row_ids`) and nothing after that changes: the checked
//! build, the trusted decode, the code rows and the kernels all see the
//! rows they saw before.
//!
//! A few bytes of ids can repeat a long distinct row many times: before
//! anything is allocated, the codes the rows add up to are counted in
//! place and held to the page limit (each code decodes to at least one
//! non-zero, so an honest page is within it).

use hashbrown::HashMap;

use super::encoder::Encoder;
use super::layout::{
    check_compact_rows, read_rows, shared_layout, Layout, RowIds, ROW_IDS_VERSION,
};
use super::layout::{FLAG_SHARED, FLAG_TREE, ROW_IDS_PAGE};
use super::tree::DecodeTree;
use crate::error::{Error, Result};
use crate::limits::try_reserve;
use crate::wire::{packed_get, payload_len, read_packed_of, unpack_into, varint_len};
use crate::wire::{write_packed_payload, write_varint, Reader, MAX_COUNT};

/// The rows of a page of row ids, decoded.
const ROWS: &str = "the rows of a page of row ids";

/// The layout of a page of row ids of `rows` rows (the page header's
/// count) whose dictionary has `n_cols` columns: its form byte, the count
/// of distinct rows, their lengths and codes, the row ids. Checks the
/// structure and each id, and counts the codes the rows add up to;
/// allocates nothing.
pub(super) fn parse_row_ids(blob: &[u8], rows: u64, n_cols: usize) -> Result<Layout> {
    let mut r = Reader::new(blob);
    // The form byte: `super::compact_layout` calls this for 2 only.
    r.u8("page form")?;
    check_compact_rows(rows)?;
    // At least one, at most one a row (a page of no rows has none).
    let distinct = r.varint_nonzero("distinct rows of a page of row ids", rows)?;
    let (lengths, codes) = read_rows(&mut r, blob, distinct, "row lengths (one per distinct row)")?;
    let ids = read_packed_of(&mut r, "row ids (one per row of the page)", rows, true)?;
    let (lens, id_bytes) = (lengths.payload(blob), ids.payload(blob));
    let mut total = 0u64;
    if ids.width == 0 {
        // Every row is distinct row 0 (the usual page of one distinct
        // row): no id to read.
        total = rows * u64::from(packed_get(lens, lengths.width, 0));
    }
    for row in (0..ids.count).filter(|_| ids.width > 0) {
        let id = packed_get(id_bytes, ids.width, row);
        if u64::from(id) >= distinct {
            return Err(Error::FieldOutOfRange {
                what: "row id (below the page's distinct rows)",
                offset: ids.start + row * ids.width as usize / 8,
                value: u64::from(id),
                max: distinct - 1,
            });
        }
        total += u64::from(packed_get(lens, lengths.width, id as usize));
    }
    if total > MAX_COUNT {
        return Err(Error::TooLarge {
            what: "codes of a page of row ids (its rows' lengths added up)",
            value: total,
            max: MAX_COUNT,
        });
    }
    crate::limits::check_page_codes(total)?;
    let mut layout = shared_layout(
        &r,
        ROW_IDS_VERSION,
        FLAG_TREE | FLAG_SHARED,
        n_cols,
        lengths,
        codes,
    )?;
    layout.row_ids = Some(RowIds {
        ids,
        codes: total as usize,
    });
    Ok(layout)
}

impl DecodeTree {
    /// [`load_rows`](DecodeTree::load_rows) for a page of row ids: each
    /// row's start and codes as the compact page that spells the rows out
    /// has them.
    pub(super) fn load_row_ids(
        &mut self,
        blob: &[u8],
        layout: &Layout,
        row_ids: RowIds,
    ) -> Result<()> {
        let (lens, ids) = (&layout.row_lengths, &row_ids.ids);
        let Some(codes) = layout.codes else {
            return Err(Error::WrongFormat {
                expected: "a page of row ids with its distinct rows' codes",
                found: "none",
            });
        };
        // The distinct rows' starts in `scratch`, their codes at the front
        // of `codes` (bounded by the input: each length and code takes a
        // bit at least); the rows are then spelled out after them, and
        // the distinct rows' codes dropped, so that nothing is allocated
        // once the buffers have grown.
        unpack_into(
            lens.payload(blob),
            lens.width,
            lens.count,
            &mut self.scratch,
        );
        unpack_into(
            codes.payload(blob),
            codes.width,
            codes.count,
            &mut self.codes,
        );
        let mut at = 0u32;
        for s in self.scratch.iter_mut() {
            (*s, at) = (at, at.saturating_add(*s));
        }
        self.scratch.push(at);
        let table = self.codes.len();
        if at as usize != table {
            return Err(Error::LengthMismatch {
                what: "sum of the distinct rows' lengths (number of codes)",
                expected: table as u64,
                found: u64::from(at),
            });
        }
        // The rows' codes: counted and held to the page limit when the
        // page was parsed.
        self.row_starts.clear();
        try_reserve(&mut self.row_starts, ids.count + 1, ROWS)?;
        try_reserve(&mut self.codes, row_ids.codes, ROWS)?;
        self.row_starts.push(0);
        if ids.width == 0 {
            // Every row is distinct row 0.
            let len = self.scratch.get(1).copied().unwrap_or(0) as usize;
            self.row_starts
                .extend((1..=ids.count).map(|r| (r * len) as u32));
            match len {
                1 => {
                    let c = self.codes[0];
                    self.codes.resize(table + ids.count, c);
                }
                _ => (0..ids.count).for_each(|_| self.codes.extend_from_within(0..len)),
            }
        }
        let id_bytes = ids.payload(blob);
        for row in (0..ids.count).filter(|_| ids.width > 0) {
            let id = packed_get(id_bytes, ids.width, row) as usize;
            let (Some(&from), Some(&to)) = (self.scratch.get(id), self.scratch.get(id + 1)) else {
                return Err(Error::FieldOutOfRange {
                    what: "row id (below the page's distinct rows)",
                    offset: ids.start + row * ids.width as usize / 8,
                    value: id as u64,
                    max: lens.count.saturating_sub(1) as u64,
                });
            };
            self.codes.extend_from_within(from as usize..to as usize);
            self.row_starts.push((self.codes.len() - table) as u32);
        }
        self.codes.drain(..table);
        if self.codes.len() != row_ids.codes {
            return Err(Error::LengthMismatch {
                what: "codes of a page of row ids",
                expected: row_ids.codes as u64,
                found: self.codes.len() as u64,
            });
        }
        Ok(())
    }
}

impl Encoder {
    /// Writes the page's rows (each row's code count in `self.row_lens`,
    /// their codes in `self.codes`) to `out` as a page of row ids, if that
    /// is smaller than the compact page of the widths `lens_width` and
    /// `codes_width`; whether it did. Distinct rows are numbered in order
    /// of first appearance.
    pub(super) fn write_row_ids(&self, lens_width: u8, codes_width: u8, out: &mut Vec<u8>) -> bool {
        let rows = self.row_lens.len();
        let mut seen: HashMap<&[u32], u32> = HashMap::new();
        let (mut ids, mut lens, mut codes) = (Vec::with_capacity(rows), Vec::new(), Vec::new());
        let mut from = 0usize;
        for &len in &self.row_lens {
            let row = &self.codes[from..from + len as usize];
            from += len as usize;
            let next = seen.len() as u32;
            let id = *seen.entry(row).or_insert_with(|| {
                lens.push(len);
                codes.extend_from_slice(row);
                next
            });
            ids.push(id);
        }
        if lens.len() == rows {
            return false;
        }
        let bytes = |count: usize, width: u8| 1 + payload_len(count as u64, width) as usize;
        let compact = 1 + bytes(rows, lens_width) + bytes(self.codes.len(), codes_width);
        let (lw, cw, iw) = (
            self.width_of(&lens, 1),
            self.width_of(&codes, 1),
            self.width_of(&ids, 0),
        );
        let with_ids = 1
            + varint_len(lens.len() as u64)
            + bytes(lens.len(), lw)
            + bytes(codes.len(), cw)
            + bytes(rows, iw);
        if with_ids >= compact {
            return false;
        }
        out.push(ROW_IDS_PAGE);
        write_varint(out, lens.len() as u64);
        write_packed_payload(out, &lens, lw);
        write_packed_payload(out, &codes, cw);
        write_packed_payload(out, &ids, iw);
        true
    }
}

//! What the loader's buffer holds and shuffles: whole encoded pages (page
//! mode) or decoded rows (exact mode), and how a run of them becomes a
//! mini-batch.
//!
//! Exact mode decodes each block once into one shared [`DecodedRows`], and
//! a row unit is that block and a row index: no allocation per row. A
//! mini-batch gathers its rows straight into CSR arrays, which become its
//! page without an encode: one kernel pass over a batch can never repay
//! encoding it, and encoding every mini-batch every epoch in the file's
//! format (TOC) made exact mode 9 to 10 times the cost of page mode
//! (`docs/RESULTS.md`, section 15). A format asked for explicitly
//! ([`LoaderOptions::format`](super::LoaderOptions::format)) is still
//! encoded. Sliding-Window and MRS hold single rows for a long time, so
//! there a row is copied out on its own ([`RowUnit`]) rather than keeping
//! its whole block alive.

use std::collections::VecDeque;
use std::sync::Arc;

use rayon::prelude::*;

use super::{MiniBatch, Mode, Plan, Strategy};
use crate::error::{Error, Result};
use crate::formats::{Batch, Csr, FormatKind};
use crate::page::Page;
use crate::sparse::SparseBatch;

/// One page, loaded (validated, TOC tree built) and ready for kernels.
#[derive(Debug)]
pub(crate) struct PageUnit {
    pub(crate) page: Page,
    /// Global index (in file order) of the page's first row.
    pub(crate) first_row: u64,
    /// The page is held by the loader's resident cache, which counts its
    /// memory; the unit then costs only itself.
    pub(crate) resident: bool,
}

/// One decoded row with a copy of its own (Sliding-Window and MRS, and
/// rows left over in the buffer whose block is otherwise used up).
#[derive(Debug)]
pub(crate) struct RowUnit {
    pub(crate) cols: Box<[u32]>,
    pub(crate) values: Box<[f64]>,
    pub(crate) label: f64,
    /// Global index of the row in file order.
    pub(crate) row: u64,
}

/// A block's rows, decoded once into one set of arrays and shared by the
/// row units pointing into it; freed when the last of them is gathered
/// into a mini-batch.
#[derive(Debug)]
pub(crate) struct DecodedRows {
    /// Every row's columns and values, one row after the other (no zeros).
    cols: Vec<u32>,
    values: Vec<f64>,
    labels: Vec<f64>,
    /// Global index of the block's first row.
    first_row: u64,
    /// Heap bytes of the whole structure, its shared allocation included,
    /// as each row's share: `share` bytes, and one more for the first
    /// `extra` rows.
    share: usize,
    extra: usize,
}

/// Row `index` of a [`DecodedRows`], whose entries are `start..start +
/// len` of its arrays. The unit carries where its entries are, so
/// gathering a mini-batch's rows reads only their data: independent loads
/// the processor overlaps, not a chain of lookups per row.
#[derive(Debug, Clone)]
pub(crate) struct SharedRow {
    rows: Arc<DecodedRows>,
    index: u32,
    start: u32,
    len: u32,
}

impl SharedRow {
    fn get(&self) -> (&[u32], &[f64]) {
        let (s, e) = (self.start as usize, (self.start + self.len) as usize);
        (&self.rows.cols[s..e], &self.rows.values[s..e])
    }

    /// The row's share of its block's bytes: the shares of all of a
    /// block's rows add up to the block's bytes exactly, so a buffer
    /// holding whole blocks counts what it holds.
    fn bytes(&self) -> usize {
        self.rows.share + usize::from((self.index as usize) < self.rows.extra)
    }
}

thread_local! {
    /// A page's rows as decoded last on this thread, reused.
    static SCRATCH: std::cell::RefCell<SparseBatch> = std::cell::RefCell::new(SparseBatch::default());
}

const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();

/// A buffered unit. Clones share (`Arc`) so MRS can replay reservoir
/// units without copying them.
#[derive(Debug, Clone)]
pub(crate) enum Unit {
    Page(Arc<PageUnit>),
    /// A row of a block decoded for the buffer.
    Shared(SharedRow),
    /// A row with its own copy.
    Row(Arc<RowUnit>),
}

/// A row unit's stored entries and global row number (`None` for a
/// page), without reading the row's data.
fn row_info(unit: &Unit) -> Option<(usize, u64)> {
    match unit {
        Unit::Page(_) => None,
        Unit::Shared(s) => Some((s.len as usize, s.rows.first_row + u64::from(s.index))),
        Unit::Row(r) => Some((r.cols.len(), r.row)),
    }
}

/// The parts of a row unit a mini-batch needs: columns, values, label and
/// global row number.
fn row_parts(unit: &Unit) -> Option<(&[u32], &[f64], f64, u64)> {
    match unit {
        Unit::Page(_) => None,
        Unit::Shared(s) => {
            let (cols, values) = s.get();
            let (label, row) = (s.rows.labels[s.index as usize], s.rows.first_row);
            Some((cols, values, label, row + u64::from(s.index)))
        }
        Unit::Row(r) => Some((&r.cols, &r.values, r.label, r.row)),
    }
}

impl Unit {
    /// Rows the unit holds.
    pub(crate) fn n_rows(&self) -> usize {
        match self {
            Unit::Page(p) => p.page.n_rows(),
            Unit::Shared(_) | Unit::Row(_) => 1,
        }
    }

    /// Heap bytes the unit keeps alive, for the loader's memory report:
    /// its own shared allocation, and a page's heap bytes (for TOC the
    /// decode tree, not only the encoded bytes) unless the resident cache
    /// holds the page; a row's slot in the buffer and its share of its
    /// decoded block (see [`detach_partial_blocks`] for why the shares
    /// stay true) or its own copy.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Unit::Page(p) => {
                let own = ARC_COUNTS + std::mem::size_of::<PageUnit>();
                own + if p.resident { 0 } else { p.page.heap_bytes() }
            }
            // A row's slot in the buffer is a good share of its memory.
            Unit::Shared(s) => std::mem::size_of::<Unit>() + s.bytes(),
            Unit::Row(r) => {
                std::mem::size_of::<Unit>()
                    + ARC_COUNTS
                    + std::mem::size_of::<RowUnit>()
                    + 4 * r.cols.len()
                    + 8 * r.values.len()
            }
        }
    }

    /// A unit of the same row with a copy of its own.
    fn detached(&self) -> Unit {
        match row_parts(self) {
            Some((cols, values, label, row)) => Unit::Row(Arc::new(RowUnit {
                cols: cols.into(),
                values: values.into(),
                label,
                row,
            })),
            None => self.clone(),
        }
    }
}

/// A row count or index as `u32`.
fn narrow(n: usize, what: &'static str) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        what,
        value: n as u64,
        max: u32::MAX as u64,
    })
}

/// Turns a block's loaded pages into units: the pages themselves (shared,
/// not copied), or in exact mode their decoded rows (pointing into one
/// decoded copy of the block, or for Sliding-Window and MRS each copied
/// out). `first_row` is the global index of the block's first row.
pub(crate) fn block_units(
    pages: &[Page],
    first_row: u64,
    plan: &Plan,
    resident: bool,
) -> Result<Vec<Unit>> {
    if plan.mode == Mode::Page {
        let mut row = first_row;
        let mut units = Vec::with_capacity(pages.len());
        for page in pages {
            units.push(Unit::Page(Arc::new(PageUnit {
                page: page.clone(),
                first_row: row,
                resident,
            })));
            row += page.n_rows() as u64;
        }
        return Ok(units);
    }
    let n_rows: usize = pages.iter().map(Page::n_rows).sum();
    // The block's arrays at their exact size (TOC knows its decoded
    // count before decoding), each page decoded into a buffer kept by the
    // thread (no allocation per page) and appended.
    let nnz: Option<usize> = pages
        .iter()
        .map(|p| Some(p.batch().as_toc()?.tree().decoded_nnz() as usize))
        .sum();
    let mut labels = Vec::with_capacity(n_rows);
    let mut cols = Vec::with_capacity(nnz.unwrap_or(0));
    let mut values = Vec::with_capacity(nnz.unwrap_or(0));
    // Where each row's entries start, and one past the last row's.
    let mut starts = Vec::with_capacity(n_rows + 1);
    SCRATCH.with_borrow_mut(|rows| {
        for page in pages {
            match page.batch().as_toc() {
                Some(toc) => toc.tree().decode_into(rows),
                None => *rows = page.batch().decode(),
            }
            labels.extend_from_slice(page.labels());
            let base = cols.len();
            starts.extend(rows.offsets()[..rows.n_rows()].iter().map(|&o| base + o));
            cols.extend_from_slice(rows.cols());
            values.extend_from_slice(rows.values());
        }
    });
    if nnz.is_none() {
        cols.shrink_to_fit();
        values.shrink_to_fit();
    }
    starts.push(cols.len());
    narrow(n_rows, "rows of a block (exact mode)")?;
    narrow(cols.len(), "stored entries of a block (exact mode)")?;
    let bytes = ARC_COUNTS
        + std::mem::size_of::<DecodedRows>()
        + 4 * cols.capacity()
        + 8 * values.capacity()
        + 8 * labels.capacity();
    let rows = Arc::new(DecodedRows {
        cols,
        values,
        share: bytes / n_rows.max(1),
        extra: bytes % n_rows.max(1),
        labels,
        first_row,
    });
    let units: Vec<Unit> = starts
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            Unit::Shared(SharedRow {
                rows: Arc::clone(&rows),
                index: i as u32,
                start: w[0] as u32,
                len: (w[1] - w[0]) as u32,
            })
        })
        .collect();
    if matches!(plan.strategy, Strategy::SlidingWindow | Strategy::Mrs) {
        // A window or reservoir keeps single rows for a long time, and a
        // shared block lives as long as any of its rows: copied out.
        return Ok(units.iter().map(Unit::detached).collect());
    }
    Ok(units)
}

/// Copies out the rows in `pending` whose decoded block is not wholly
/// there (its other rows are being gathered into mini-batches) and
/// returns the bytes `pending` then holds and the bytes of the copies.
/// After this every decoded block that outlives the mini-batches being
/// made is held by `pending` with all its rows, so the rows' shares
/// ([`Unit::bytes`]) add up to exactly what is held. Called once the
/// batches are cut, so the rows copied are fewer than a mini-batch.
pub(crate) fn detach_partial_blocks(pending: &mut VecDeque<Unit>) -> (usize, usize) {
    let mut held: hashbrown::HashMap<*const DecodedRows, usize> = hashbrown::HashMap::new();
    for unit in pending.iter() {
        if let Unit::Shared(s) = unit {
            *held.entry(Arc::as_ptr(&s.rows)).or_default() += 1;
        }
    }
    let mut copied = 0;
    for unit in pending.iter_mut() {
        if let Unit::Shared(s) = unit {
            if held[&Arc::as_ptr(&s.rows)] < s.rows.labels.len() {
                *unit = unit.detached();
                copied += unit.bytes();
            }
        }
    }
    (pending.iter().map(Unit::bytes).sum(), copied)
}

/// Builds mini-batches from runs of units, exact-mode batches in parallel
/// (rayon).
pub(crate) fn make_batches(
    runs: Vec<Vec<Unit>>,
    plan: &Plan,
    replay: bool,
) -> Result<Vec<MiniBatch>> {
    if plan.mode == Mode::Page {
        // Nothing to gather: handing runs to rayon threads cost more than
        // collecting a few page handles, and took a core from the trainer.
        return runs
            .into_iter()
            .map(|run| make_batch(run, plan, replay))
            .collect();
    }
    runs.into_par_iter()
        .map(|run| make_batch(run, plan, replay))
        .collect()
}

fn make_batch(run: Vec<Unit>, plan: &Plan, replay: bool) -> Result<MiniBatch> {
    let trace = plan.trace;
    let mut rows = Vec::new();
    let mut pages = Vec::with_capacity(run.len());
    let mut owned = 0;
    let (mut n_exact, mut nnz) = (0, 0);
    for unit in &run {
        match unit {
            Unit::Page(p) => {
                if trace {
                    rows.extend(p.first_row..p.first_row + p.page.n_rows() as u64);
                }
                if !p.resident {
                    owned += p.page.heap_bytes();
                }
                pages.push(p.page.clone());
            }
            row => {
                let (len, r) = row_info(row).expect("a row unit");
                if trace {
                    rows.push(r);
                }
                n_exact += 1;
                nnz += len;
            }
        }
    }
    if n_exact > 0 {
        let page = gather(&run, n_exact, nnz, plan)?;
        owned += page.heap_bytes();
        pages.push(page);
    }
    drop(run);
    if let Some(origin) = &plan.row_origin {
        rows.iter_mut().for_each(|r| *r = origin[*r as usize]);
    }
    let mut batch = MiniBatch {
        pages,
        replay,
        rows: trace.then_some(rows),
        owned_bytes: 0,
    };
    batch.owned_bytes = owned + batch.own_bytes();
    Ok(batch)
}

/// The `n` row units of `run` (`nnz` entries) as one page: their columns
/// and values copied straight into CSR arrays, which a CSR page takes as
/// they are; any other format encodes them.
fn gather(run: &[Unit], n: usize, nnz: usize, plan: &Plan) -> Result<Page> {
    narrow(nnz, "stored entries of a mini-batch (u32 row offsets)")?;
    let mut offsets = Vec::with_capacity(n + 1);
    let mut cols = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    let mut labels = Vec::with_capacity(n);
    offsets.push(0u32);
    for (c, v, label, _) in run.iter().filter_map(row_parts) {
        cols.extend_from_slice(c);
        values.extend_from_slice(v);
        offsets.push(cols.len() as u32);
        labels.push(label);
    }
    let batch = match plan.format {
        FormatKind::Csr => Batch::Csr(Csr::from_valid_parts(plan.n_cols, offsets, cols, values)?),
        format => {
            let offsets = offsets.into_iter().map(|o| o as usize).collect();
            let rows = SparseBatch::from_parts_unchecked(plan.n_cols, offsets, cols, values);
            format.encode(&rows)?
        }
    };
    Page::new(batch, labels)
}

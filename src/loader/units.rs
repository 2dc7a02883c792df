//! What the unit-by-unit strategies hold and shuffle: whole pages (page
//! mode, every strategy) or single rows with a copy of their own
//! (Sliding-Window and MRS in row mode, whose window or reservoir keeps
//! rows for a long time), and how a run of them becomes a mini-batch.
//! The row-shuffling strategies in row mode take the row pipeline
//! (`rows.rs`) instead, which never holds a row on its own.

use std::sync::Arc;

use super::{MiniBatch, Mode, Plan};
use crate::dataset::{PackedBlock, PageDecoder};
use crate::error::Result;
use crate::formats::{Batch, Csr, FormatKind};
use crate::page::Page;
use crate::sparse::SparseBatch;

/// One page, loaded (validated, TOC tree built) and ready for kernels.
#[derive(Debug)]
pub(crate) struct PageUnit {
    pub(crate) page: Page,
    /// Global index (in file order) of the page's first row.
    pub(crate) first_row: u64,
}

/// One decoded row with a copy of its own.
#[derive(Debug)]
pub(crate) struct RowUnit {
    pub(crate) cols: Box<[u32]>,
    pub(crate) values: Box<[f64]>,
    pub(crate) label: f64,
    /// Global index of the row in file order.
    pub(crate) row: u64,
}

const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();

/// A buffered unit. Clones share (`Arc`) so MRS can replay reservoir
/// units without copying them.
#[derive(Debug, Clone)]
pub(crate) enum Unit {
    Page(Arc<PageUnit>),
    Row(Arc<RowUnit>),
}

impl Unit {
    /// Rows the unit holds.
    pub(crate) fn n_rows(&self) -> usize {
        match self {
            Unit::Page(p) => p.page.n_rows(),
            Unit::Row(_) => 1,
        }
    }

    /// Heap bytes the unit keeps alive, for the loader's memory report:
    /// its shared allocation, and a page's heap bytes (for TOC the decode
    /// tree as well as the bytes) or a row's copy.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Unit::Page(p) => ARC_COUNTS + std::mem::size_of::<PageUnit>() + p.page.heap_bytes(),
            Unit::Row(r) => {
                std::mem::size_of::<Unit>()
                    + ARC_COUNTS
                    + std::mem::size_of::<RowUnit>()
                    + 4 * r.cols.len()
                    + 8 * r.values.len()
            }
        }
    }
}

/// Turns a block into units: its pages (page mode, decode trees built
/// now), or in row mode its rows, each copied out. `first_row` is the
/// global index of the block's first row.
pub(crate) fn block_units(
    block: &PackedBlock,
    first_row: u64,
    plan: &Plan,
    decoder: &mut PageDecoder,
) -> Result<Vec<Unit>> {
    let mut row = first_row;
    if plan.mode == Mode::Page {
        let mut units = Vec::with_capacity(block.n_pages());
        for j in 0..block.n_pages() {
            let page = block.page(j)?;
            let n = page.n_rows() as u64;
            units.push(Unit::Page(Arc::new(PageUnit {
                page,
                first_row: row,
            })));
            row += n;
        }
        return Ok(units);
    }
    let mut units = Vec::with_capacity(block.n_rows());
    for j in 0..block.n_pages() {
        block.decode_page(j, decoder)?;
        for i in 0..decoder.n_rows() {
            let (s, e) = decoder.row_range(i);
            units.push(Unit::Row(Arc::new(RowUnit {
                cols: decoder.cols()[s..e].into(),
                values: decoder.vals()[s..e].into(),
                label: decoder.label(i),
                row,
            })));
            row += 1;
        }
    }
    Ok(units)
}

/// Builds a mini-batch from a run of units: the pages as they are (page
/// mode) or the rows gathered into one page (CSR unless
/// [`LoaderOptions::format`](super::LoaderOptions::format) asks for
/// another format).
pub(crate) fn make_batch(run: Vec<Unit>, plan: &Plan, replay: bool) -> Result<MiniBatch> {
    let trace = plan.trace;
    let mut rows = Vec::new();
    let mut pages = Vec::with_capacity(run.len());
    let mut owned = 0;
    let mut gathered = RowGather::default();
    for unit in &run {
        match unit {
            Unit::Page(p) => {
                if trace {
                    rows.extend(p.first_row..p.first_row + p.page.n_rows() as u64);
                }
                owned += p.page.heap_bytes();
                pages.push(p.page.clone());
            }
            Unit::Row(r) => {
                if trace {
                    rows.push(r.row);
                }
                gathered.push(&r.cols, &r.values, r.label);
            }
        }
    }
    if gathered.n_rows() > 0 {
        let page = gathered.finish(plan.n_cols, plan.format)?;
        owned += page.heap_bytes();
        pages.push(page);
    }
    drop(run);
    if let Some(origin) = &plan.row_origin {
        rows.iter_mut().for_each(|r| *r = origin[*r as usize]);
    }
    Ok(MiniBatch::new(pages, replay, trace.then_some(rows), owned))
}

/// Rows gathered into the arrays of one CSR page, which a CSR page takes
/// as they are (no encode); any other format encodes them.
#[derive(Debug, Default)]
pub(crate) struct RowGather {
    pub(crate) offsets: Vec<u32>,
    pub(crate) cols: Vec<u32>,
    pub(crate) values: Vec<f64>,
    pub(crate) labels: Vec<f64>,
}

impl RowGather {
    pub(crate) fn n_rows(&self) -> usize {
        self.labels.len()
    }

    fn push(&mut self, cols: &[u32], values: &[f64], label: f64) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.cols.extend_from_slice(cols);
        self.values.extend_from_slice(values);
        self.offsets.push(self.cols.len() as u32);
        self.labels.push(label);
    }

    /// The page of the rows gathered.
    ///
    /// # Errors
    /// [`Error::TooLarge`](crate::Error::TooLarge) for more entries than
    /// `u32` offsets address; encoding errors of another format.
    pub(crate) fn finish(mut self, n_cols: usize, format: FormatKind) -> Result<Page> {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        if u32::try_from(self.cols.len()).is_err() {
            return Err(crate::Error::TooLarge {
                what: "stored entries of a mini-batch (u32 row offsets)",
                value: self.cols.len() as u64,
                max: u32::MAX as u64,
            });
        }
        let batch = match format {
            FormatKind::Csr => Batch::Csr(Csr::from_valid_parts(
                n_cols,
                self.offsets,
                self.cols,
                self.values,
            )?),
            format => {
                let offsets = self.offsets.into_iter().map(|o| o as usize).collect();
                let rows =
                    SparseBatch::from_parts_unchecked(n_cols, offsets, self.cols, self.values);
                format.encode(&rows)?
            }
        };
        Page::new(batch, self.labels)
    }

    /// Heap bytes of the arrays.
    pub(crate) fn heap_bytes(&self) -> usize {
        4 * (self.offsets.capacity() + self.cols.capacity())
            + 8 * (self.values.capacity() + self.labels.capacity())
    }
}

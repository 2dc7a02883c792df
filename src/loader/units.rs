//! What the loader's buffer holds and shuffles: whole encoded pages (page
//! mode) or decoded rows (exact mode), and how a run of them becomes a
//! mini-batch.

use std::sync::Arc;

use rayon::prelude::*;

use super::{MiniBatch, Mode, Plan};
use crate::error::Result;
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

/// One decoded row.
#[derive(Debug)]
pub(crate) struct RowUnit {
    pub(crate) cols: Box<[u32]>,
    pub(crate) values: Box<[f64]>,
    pub(crate) label: f64,
    /// Global index of the row in file order.
    pub(crate) row: u64,
}

/// A buffered unit. Shared (`Arc`) so MRS can replay reservoir units
/// without copying them.
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
    /// its own shared allocation, and a page's heap bytes (for TOC the
    /// decode tree, not only the encoded bytes) unless the resident cache
    /// holds the page, or a row's columns and values.
    pub(crate) fn bytes(&self) -> usize {
        const ARC_COUNTS: usize = 2 * std::mem::size_of::<usize>();
        match self {
            Unit::Page(p) => {
                let own = ARC_COUNTS + std::mem::size_of::<PageUnit>();
                own + if p.resident { 0 } else { p.page.heap_bytes() }
            }
            Unit::Row(r) => {
                ARC_COUNTS + std::mem::size_of::<RowUnit>() + 4 * r.cols.len() + 8 * r.values.len()
            }
        }
    }
}

/// Turns a block's loaded pages into units: the pages themselves (shared,
/// not copied), or in exact mode their decoded rows. `first_row` is the
/// global index of the block's first row.
pub(crate) fn block_units(
    pages: &[Page],
    first_row: u64,
    mode: Mode,
    resident: bool,
) -> Result<Vec<Unit>> {
    let mut units = Vec::with_capacity(pages.len());
    let mut row = first_row;
    for page in pages {
        let n = page.n_rows() as u64;
        match mode {
            Mode::Page => units.push(Unit::Page(Arc::new(PageUnit {
                page: page.clone(),
                first_row: row,
                resident,
            }))),
            Mode::Exact | Mode::Auto => {
                let decoded = page.batch().decode();
                for (i, (cols, values)) in decoded.rows().enumerate() {
                    units.push(Unit::Row(Arc::new(RowUnit {
                        cols: cols.into(),
                        values: values.into(),
                        label: page.labels()[i],
                        row: row + i as u64,
                    })));
                }
            }
        }
        row += n;
    }
    Ok(units)
}

/// Builds mini-batches from runs of units, encoding exact-mode batches in
/// parallel (rayon) in the given format.
pub(crate) fn make_batches(
    runs: Vec<Vec<Unit>>,
    plan: &Plan,
    replay: bool,
) -> Result<Vec<MiniBatch>> {
    if plan.mode == Mode::Page {
        // Nothing to encode: handing runs to rayon threads cost more than
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
    let (n_cols, format, trace) = (plan.n_cols, plan.format, plan.trace);
    let mut rows = Vec::new();
    let mut pages = Vec::with_capacity(run.len());
    let mut owned = 0;
    let mut sparse: Option<(SparseBatch, Vec<f64>)> = None;
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
            Unit::Row(r) => {
                if trace {
                    rows.push(r.row);
                }
                if sparse.is_none() {
                    sparse = Some((SparseBatch::with_cols(n_cols)?, Vec::new()));
                }
                let (batch, labels) = sparse.as_mut().expect("just set");
                batch.push_row(&r.cols, &r.values)?;
                labels.push(r.label);
            }
        }
    }
    if let Some((batch, labels)) = sparse {
        let page = Page::encode(format, &batch, &labels)?;
        owned += page.heap_bytes();
        pages.push(page);
    }
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

//! A table to train on or evaluate: an ordinary table (label and feature
//! columns, [`Columns`]) or a TOC page table (`tocpile.encode_table`),
//! opened, checked and read block by block.

use pgrx::pg_sys;
use pgrx::PgRelation;
use tocpile_lib::scale::{ColumnStats, ScaleKind, Scaling};
use tocpile_lib::train::LabelSummary;

use crate::access::{check_readable, sql_name};
use crate::columns::Columns;
use crate::failure::{Failure, Result};
use crate::heap::BlockScan;
use crate::pages::{self, PageColumns, PageFormat, RawPage, TocMeta};
use crate::rows::RowBuffer;

/// What a table holds.
#[derive(Debug, Clone)]
pub enum Kind {
    /// Rows of label and feature columns.
    Rows(Columns),
    /// Pages made by `tocpile.encode_table`.
    Pages {
        /// Its metadata.
        meta: TocMeta,
        /// Where its bytea columns are.
        columns: PageColumns,
        /// How its pages load.
        format: PageFormat,
    },
}

/// An open table and what it holds.
pub struct Table {
    rel: PgRelation,
    name: String,
    kind: Kind,
}

impl Table {
    /// Opens `rel` for reading: a page table if `tocpile.toc_tables`
    /// lists it (then `label` and `features`, if given, must be the
    /// source's), else an ordinary table whose label column `label` must
    /// be given. Array feature columns get their width from the first row
    /// that has them.
    pub fn open(
        rel: PgRelation,
        label: Option<&str>,
        features: Option<&[String]>,
    ) -> Result<Table> {
        check_readable(&rel)?;
        let name = sql_name(rel.oid())?;
        let kind = match pages::lookup(&rel, &name)? {
            Some((meta, columns)) => {
                let same = label.is_none_or(|l| l == meta.label)
                    && features.is_none_or(|f| f == meta.features.as_slice());
                if !same {
                    return Err(Failure::argument(format!(
                        "{name} is a page table of label {} and features {:?}: give no label \
                         and features, or those",
                        meta.label, meta.features
                    )));
                }
                let format = PageFormat {
                    format: meta.format,
                    n_cols: meta.n_cols,
                    table: name.clone(),
                };
                Kind::Pages {
                    meta,
                    columns,
                    format,
                }
            }
            None => {
                let label = label.ok_or_else(|| {
                    Failure::argument(format!(
                        "{name} is not a page table: give its label column (label => 'name')"
                    ))
                })?;
                // SAFETY: `rel` is open.
                let mut columns = unsafe { Columns::resolve(rel.as_ptr(), label, features)? };
                probe_array_widths(&rel, &name, &mut columns)?;
                Kind::Rows(columns)
            }
        };
        Ok(Table { rel, name, kind })
    }

    /// The table under another name in messages (Shuffle Once's copy is
    /// named after the table it copies, not its temporary name).
    pub fn shown_as(mut self, name: String) -> Table {
        self.name = name;
        self
    }

    /// The table's name as SQL writes it (or as [`shown_as`](Self::shown_as) set).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's OID.
    pub fn oid(&self) -> pg_sys::Oid {
        self.rel.oid()
    }

    /// What it holds.
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Features per row.
    pub fn n_cols(&self) -> usize {
        match &self.kind {
            Kind::Rows(c) => c.n_cols(),
            Kind::Pages { meta, .. } => meta.n_cols,
        }
    }

    /// A scan of the table in blocks of `block_pages` pages: heap pages
    /// of an ordinary table, stored pages (tuples) of a page table.
    pub fn scan(&self, block_pages: u32) -> Result<BlockScan> {
        // SAFETY: the relation is open for as long as `self`, which the
        // callers keep beyond the scan.
        let scan = unsafe { BlockScan::open(self.rel.as_ptr(), block_pages) };
        match &self.kind {
            Kind::Rows(_) => Ok(scan),
            Kind::Pages { columns, .. } => scan.by_tuples(block_pages as usize, |slot, at| {
                // SAFETY: the slots are the scan's, of this relation.
                unsafe { columns.is_meta(slot, at) }.map(|meta| !meta)
            }),
        }
    }

    /// A scan of the table one heap page at a time (for reading it in
    /// order).
    pub fn scan_in_order(&self) -> BlockScan {
        // SAFETY: the relation is open for as long as `self`, which the
        // callers keep beyond the scan.
        unsafe { BlockScan::open(self.rel.as_ptr(), 1) }
    }

    /// Appends the rows of block `block` to `out` (ordinary tables).
    pub fn read_rows(
        &self,
        scan: &mut BlockScan,
        block: usize,
        out: &mut RowBuffer,
    ) -> Result<usize> {
        let Kind::Rows(columns) = &self.kind else {
            return Err(Failure::argument("rows asked of a page table"));
        };
        // SAFETY: the slots are the scan's, of this relation.
        scan.read_block(block, |slot, at| unsafe {
            columns.read(slot, at, out).map_err(|e| self.in_table(e))
        })
    }

    /// Appends the pages of block `block` to `out` (page tables).
    pub fn read_pages(
        &self,
        scan: &mut BlockScan,
        block: usize,
        out: &mut Vec<RawPage>,
    ) -> Result<usize> {
        let Kind::Pages { columns, .. } = &self.kind else {
            return Err(Failure::argument("pages asked of an ordinary table"));
        };
        // SAFETY: the slots are the scan's, of this relation.
        scan.read_block(block, |slot, at| unsafe {
            if let Some(page) = columns.read(slot, at).map_err(|e| self.in_table(e))? {
                crate::failure::reserve(out, 1, "the pages of the buffer")?;
                out.push(page);
            }
            Ok(())
        })
    }

    fn in_table(&self, e: Failure) -> Failure {
        Failure::data(format!("table {}: {}", self.name, e.message()))
    }

    /// One pass over every row, in table order: the column statistics
    /// (for a scaling of `scale`, if any) and what the trainer learns
    /// from the labels. Page tables read only their labels.
    pub fn statistics(&self, scale: Option<ScaleKind>) -> Result<Statistics> {
        let mut scan = self.scan_in_order();
        let mut stats = match scale {
            Some(_) => Some(ColumnStats::new(self.n_cols())?),
            None => None,
        };
        let mut labels = LabelSummary::new();
        let mut max_label = f64::NEG_INFINITY;
        let mut integers = true;
        let mut take = |ys: &[f64]| {
            labels.add(ys);
            max_label = ys.iter().copied().fold(max_label, f64::max);
            integers &= ys.iter().all(|y| y.fract() == 0.0);
        };
        let mut buffer = RowBuffer::new(self.n_cols());
        let mut raw = Vec::new();
        for block in 0..scan.n_blocks() {
            match &self.kind {
                Kind::Rows(_) => {
                    buffer.clear();
                    self.read_rows(&mut scan, block, &mut buffer)?;
                    if let Some(s) = &mut stats {
                        s.add(&buffer.batch(0, buffer.n_rows())?)?;
                    }
                    take(buffer.labels());
                }
                Kind::Pages { format, .. } => {
                    raw.clear();
                    self.read_pages(&mut scan, block, &mut raw)?;
                    for r in &raw {
                        take(format.load(r)?.labels());
                    }
                }
            }
        }
        Ok(Statistics {
            scaling: stats.map(|s| s.scaling(scale.expect("stats only with a scale"))),
            labels,
            max_label,
            integers,
        })
    }
}

/// What [`Table::statistics`] found.
#[derive(Debug, Clone)]
pub struct Statistics {
    /// The scaling fitted, if one was asked for.
    pub scaling: Option<Scaling>,
    /// The labels' summary (rows, distinct values, moments).
    pub labels: LabelSummary,
    /// The largest label (-inf for no rows).
    pub max_label: f64,
    /// Whether every label is an integer.
    pub integers: bool,
}

/// Sets the width of `columns`' array columns from the first row where
/// each is not NULL (a table without such a row has none to train on).
fn probe_array_widths(rel: &PgRelation, name: &str, columns: &mut Columns) -> Result<()> {
    let arrays = columns.array_columns();
    if arrays.is_empty() {
        return Ok(());
    }
    let mut widths: Vec<Option<usize>> = vec![None; arrays.len()];
    // SAFETY: `rel` is open beyond the scan.
    let mut scan = unsafe { BlockScan::open(rel.as_ptr(), 1) };
    for block in 0..scan.n_blocks() {
        scan.read_block(block, |slot, _| {
            // SAFETY: the slot is the scan's, of this relation.
            let found = unsafe { columns.array_lengths(slot) };
            for (w, f) in widths.iter_mut().zip(found) {
                if w.is_none() {
                    *w = f;
                }
            }
            Ok(())
        })?;
        if widths.iter().all(Option::is_some) {
            break;
        }
    }
    let widths = widths
        .into_iter()
        .zip(&arrays)
        .map(|(w, a)| {
            w.filter(|&w| w > 0).ok_or_else(|| {
                Failure::data(format!(
                    "table {name}: array column \"{a}\" has no non-empty value to take its width from"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    columns.set_array_widths(&widths);
    Ok(())
}

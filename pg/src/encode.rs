//! `tocpile.encode_table`: a table's rows encoded into a TOC page table,
//! as `tocpile encode` writes a dataset file: rows in table order cut into
//! pages of `page_rows` rows, each page encoded (TOC by default), and a
//! column scaling fitted on the way (max-abs by default, as the library's
//! writer does) and stored with the metadata in the table's own metadata
//! row (`page_no = -1`, see [`crate::pages`]).
//!
//! The page table is created by the call (it must not exist) and filled
//! by direct heap inserts, one tuple per page, with each page's memory
//! freed as it is stored: the call holds one block of source rows and
//! one page at a time, whatever the table's size. It is all one
//! transaction: an error leaves nothing behind.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgMemoryContexts;
use pgrx::PgRelation;
use serde_json::json;
use tocpile_lib::formats::FormatKind;
use tocpile_lib::scale::{ColumnStats, ScaleKind};

use crate::failure::{Context, Failure, Result};
use crate::pages::{encode_labels, TocMeta, META_PAGE_NO};
use crate::rows::RowBuffer;
use crate::source::{Kind, Table};

/// What to encode and how.
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// Rows per page.
    pub page_rows: usize,
    /// Page format.
    pub format: FormatKind,
    /// Scaling to fit, if any.
    pub scale: Option<ScaleKind>,
}

/// Encodes the rows of `source` (an ordinary table) into the new page
/// table `target` (a name as SQL writes it, optionally qualified);
/// returns a summary.
pub fn encode_table(
    source: &Table,
    target: &str,
    options: &EncodeOptions,
) -> Result<serde_json::Value> {
    crate::threads::start_pool();
    let Kind::Rows(columns) = source.kind() else {
        return Err(Failure::argument(format!(
            "{} is already a page table",
            source.name()
        )));
    };
    let spi = |e: pgrx::spi::SpiError| Failure::argument(format!("creating {target}: {e}"));
    let quoted = Spi::get_one_with_args::<String>(
        "SELECT string_agg(quote_ident(part), '.') FROM unnest(parse_ident($1)) AS part",
        &[target.into()],
    )
    .map_err(spi)?
    .ok_or_else(|| Failure::argument(format!("\"{target}\" is not a table name")))?;
    Spi::run(&format!(
        "CREATE TABLE {quoted} (page_no bigint NOT NULL, labels bytea NOT NULL, \
         page bytea NOT NULL); \
         ALTER TABLE {quoted} ALTER COLUMN labels SET STORAGE MAIN, \
         ALTER COLUMN page SET STORAGE MAIN"
    ))
    .map_err(spi)?;
    let oid = Spi::get_one::<pg_sys::Oid>(&format!(
        "SELECT {}::regclass::oid",
        pgrx::spi::quote_literal(&quoted)
    ))
    .map_err(spi)?
    .ok_or_else(|| Failure::argument(format!("{target} vanished")))?;
    let n_cols = source.n_cols();
    let mut stats = match options.scale {
        Some(_) => Some(ColumnStats::new(n_cols)?),
        None => None,
    };
    // SAFETY: the table was created above by this transaction; it is
    // opened, filled and closed here.
    let target_rel = unsafe { PgRelation::with_lock(oid, pg_sys::RowExclusiveLock as _) };
    let mut sink = PageSink::new(&target_rel);
    let mut scan = source.scan_in_order();
    let mut rows = RowBuffer::new(n_cols);
    let (mut n_rows, mut nnz) = (0u64, 0u64);
    for block in 0..scan.n_blocks() {
        source.read_rows(&mut scan, block, &mut rows)?;
        let full = rows.n_rows() - rows.n_rows() % options.page_rows;
        let mut start = 0;
        while start < full {
            let end = start + options.page_rows;
            sink.put(&rows, start, end, options.format, stats.as_mut())?;
            start = end;
        }
        if full > 0 {
            n_rows += full as u64;
            let mut rest = RowBuffer::new(n_cols);
            let tail = rows.batch(full, rows.n_rows())?;
            for (i, (cols, values)) in tail.rows().enumerate() {
                for (&c, &v) in cols.iter().zip(values) {
                    rest.push_entry(c, v)?;
                }
                rest.finish_row(rows.labels()[full + i])?;
            }
            nnz += (rows.nnz() - rest.nnz()) as u64;
            rows = rest;
        }
    }
    if rows.n_rows() > 0 {
        sink.put(&rows, 0, rows.n_rows(), options.format, stats.as_mut())?;
        n_rows += rows.n_rows() as u64;
        nnz += rows.nnz() as u64;
    }
    drop(scan);
    let (pages, stored) = (sink.pages, sink.bytes);
    let scaling = match (&stats, options.scale) {
        (Some(s), Some(kind)) => Some(s.scaling(kind)),
        _ => None,
    };
    let created = Spi::get_one::<String>("SELECT to_json(now()) #>> '{}'")
        .map_err(spi)?
        .unwrap_or_default();
    let meta = TocMeta {
        n_cols,
        n_rows,
        n_pages: pages,
        page_rows: options.page_rows as u64,
        format: options.format,
        scaling,
        source: source.name().to_string(),
        label: columns.label_name().to_string(),
        features: columns.feature_names(),
        stored_bytes: stored,
        created,
    };
    let scale_name = meta.scaling.as_ref().map_or("none", |s| s.kind().name());
    // The metadata row, last: its place does not matter (readers find it
    // by its page_no and skip it).
    let json = serde_json::to_vec(&meta.to_json())
        .map_err(|e| Failure::data(format!("recording {target}: {e}")))?;
    sink.insert(META_PAGE_NO, &[], &json);
    drop(sink);
    drop(target_rel);
    let dense = n_rows as f64 * n_cols as f64 * 8.0;
    Ok(json!({
        "table": quoted, "source": source.name(), "rows": n_rows, "columns": n_cols,
        "nnz": nnz, "pages": pages, "page_rows": options.page_rows,
        "format": options.format.name(), "scale": scale_name, "stored_bytes": stored,
        "ratio_vs_dense": if stored > 0 { dense / stored as f64 } else { 0.0 },
    }))
}

/// Stores pages into the page table by direct heap inserts.
struct PageSink {
    rel: pg_sys::Relation,
    memory: PgMemoryContexts,
    pages: u64,
    bytes: u64,
}

impl PageSink {
    fn new(rel: &PgRelation) -> PageSink {
        PageSink {
            rel: rel.as_ptr(),
            memory: PgMemoryContexts::new("tocpile pages"),
            pages: 0,
            bytes: 0,
        }
    }

    /// Encodes rows `start..end` of `rows` as the next page and stores it.
    fn put(
        &mut self,
        rows: &RowBuffer,
        start: usize,
        end: usize,
        format: FormatKind,
        stats: Option<&mut ColumnStats>,
    ) -> Result<()> {
        let batch = rows.batch(start, end)?;
        if let Some(s) = stats {
            s.add(&batch)?;
        }
        let mut page = Vec::new();
        format
            .encode(&batch)
            .context(|| format!("encoding page {}", self.pages))?
            .write_bytes(&mut page);
        let labels = encode_labels(&rows.labels()[start..end])?;
        self.bytes += (page.len() + labels.len()) as u64;
        self.insert(self.pages as i64, &labels, &page);
        self.pages += 1;
        Ok(())
    }

    /// Stores the tuple `(page_no, labels, page)`.
    fn insert(&mut self, page_no: i64, labels: &[u8], page: &[u8]) {
        let rel = self.rel;
        // SAFETY: the relation is open with RowExclusiveLock; the tuple
        // and its values live in our context, reset after the insert.
        unsafe {
            self.memory.reset();
            self.memory.switch_to(|_| {
                let mut values = [
                    page_no.into_datum().expect("an int8"),
                    labels.into_datum().expect("a bytea"),
                    page.into_datum().expect("a bytea"),
                ];
                let mut nulls = [false; 3];
                let tuple =
                    pg_sys::heap_form_tuple((*rel).rd_att, values.as_mut_ptr(), nulls.as_mut_ptr());
                pg_sys::simple_heap_insert(rel, tuple);
            });
        }
    }
}

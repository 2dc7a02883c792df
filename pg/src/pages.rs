//! TOC page tables: a table whose tuples are the pages of a dataset file
//! (`page_no bigint, labels bytea, page bytea`), made by
//! `tocpile.encode_table`, with the file footer's metadata (columns, page
//! format, the fitted scaling) in a row of its own: `page_no = -1`, the
//! metadata as JSON in `page` ([`TocMeta`]).
//!
//! The metadata lives with the pages so that it has their privileges
//! exactly: whoever may read the page table may read it, whoever may
//! write the pages may write it, no one else may do either, and it goes
//! when the table is dropped (and with the table in a dump). A table
//! shared by every page table (tocpile 0.1.0's `tocpile.toc_tables`)
//! let any role read and rewrite every page table's scaling.
//!
//! `page` is one encoded batch (for TOC, the `TocBatch` blob of
//! `docs/FORMAT.md`); `labels` is the page's labels as a one-column TOC
//! batch, which value-indexes and bit-packs them (a 0/1 label costs a bit
//! or two a row, as in the file's label section).
//!
//! Stored bytes are hostile: anyone who can update the table can write
//! any bytes in a page or in its metadata row. Every page goes through the
//! library's validating decoder ([`FormatKind::load`], which bounds its
//! memory by the bytes and the resource limits of `tocpile::limits`),
//! its column count is checked against the metadata's, and the metadata
//! is checked before use. Every violation is an ERROR naming the table
//! and the page's `ctid`.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgRelation;
use tocpile_lib::formats::FormatKind;
use tocpile_lib::scale::{ScaleKind, Scaling};
use tocpile_lib::{Page, SparseBatch};

use crate::failure::{try_vec, Context, Failure, Result};
use crate::heap::{attribute, deform, Tid};

/// One page as stored, copied out of its tuple.
#[derive(Debug, Clone)]
pub struct RawPage {
    /// Where the tuple is.
    pub tid: Tid,
    /// The labels section (a one-column batch).
    pub labels: Vec<u8>,
    /// The encoded rows.
    pub page: Vec<u8>,
}

/// How a page table's pages are loaded.
#[derive(Debug, Clone)]
pub struct PageFormat {
    /// The pages' format.
    pub format: FormatKind,
    /// Columns every page must have.
    pub n_cols: usize,
    /// The table, for error messages.
    pub table: String,
}

impl PageFormat {
    /// Validates `raw` and loads it as a page with its labels.
    pub fn load(&self, raw: &RawPage) -> Result<Page> {
        let at = || format!("table {}, page at {}", self.table, raw.tid);
        let batch = self.format.load(&raw.page).context(at)?;
        if batch.n_cols() != self.n_cols {
            return Err(Failure::corrupt(format!(
                "{}: the page has {} columns, the table's metadata {}",
                at(),
                batch.n_cols(),
                self.n_cols
            )));
        }
        let labels = decode_labels(&raw.labels, batch.n_rows())
            .map_err(|e| Failure::corrupt(format!("{}, labels: {}", at(), e.message())))?;
        Page::new(batch, labels).context(at)
    }
}

/// The labels section of a page: a one-column TOC batch of the labels.
pub fn encode_labels(labels: &[f64]) -> Result<Vec<u8>> {
    let mut column = SparseBatch::with_cols(1)?;
    for &y in labels {
        column.push_row(&[0], &[y])?;
    }
    let mut out = Vec::new();
    FormatKind::TocFull.encode(&column)?.write_bytes(&mut out);
    Ok(out)
}

/// The labels of a labels section of `rows` rows (validated as any page).
pub fn decode_labels(bytes: &[u8], rows: usize) -> Result<Vec<f64>> {
    let batch = FormatKind::TocFull.load(bytes)?;
    if batch.n_cols() != 1 || batch.n_rows() != rows {
        return Err(Failure::corrupt(format!(
            "{} rows x {} columns where {rows} x 1 (one label per row of the page) was expected",
            batch.n_rows(),
            batch.n_cols()
        )));
    }
    let column = batch.decode();
    let mut labels = try_vec(rows, "the labels of a page")?;
    labels.extend(
        column
            .rows()
            .map(|(_, v)| v.first().copied().unwrap_or(0.0)),
    );
    Ok(labels)
}

/// `page_no` of a page table's metadata row.
pub const META_PAGE_NO: i64 = -1;

/// The key that marks a metadata row's JSON (its value: the layout's
/// version).
const META_KEY: &str = "tocpile_page_table";

/// What a page table's metadata row says: what a dataset file's footer
/// holds.
#[derive(Debug, Clone)]
pub struct TocMeta {
    /// Columns of the rows.
    pub n_cols: usize,
    /// Rows encoded.
    pub n_rows: u64,
    /// Pages stored.
    pub n_pages: u64,
    /// Rows per page (the last may hold fewer).
    pub page_rows: u64,
    /// The pages' format.
    pub format: FormatKind,
    /// The scaling fitted when the table was encoded.
    pub scaling: Option<Scaling>,
    /// The table encoded.
    pub source: String,
    /// The source's label column.
    pub label: String,
    /// The source's feature columns.
    pub features: Vec<String>,
    /// Bytes of the stored pages and labels.
    pub stored_bytes: u64,
    /// When it was encoded (ISO 8601).
    pub created: String,
}

impl TocMeta {
    /// The metadata as the JSON its row stores.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            META_KEY: 1,
            "source": self.source, "label": self.label, "features": self.features,
            "n_cols": self.n_cols, "n_rows": self.n_rows, "n_pages": self.n_pages,
            "page_rows": self.page_rows, "format": self.format.name(),
            "scale": self.scaling.as_ref().map_or("none", |s| s.kind().name()),
            "factors": self.scaling.as_ref().map(|s| s.factors()),
            "stored_bytes": self.stored_bytes, "created": self.created,
        })
    }

    /// The metadata in the bytes of a metadata row of `table`,
    /// validated: stored bytes are hostile, whoever may update the table
    /// may write any.
    pub fn from_bytes(bytes: &[u8], table: &str) -> Result<TocMeta> {
        let bad =
            |what: String| Failure::corrupt(format!("page table {table}, metadata row: {what}"));
        let json: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON ({e})")))?;
        if json.get(META_KEY).and_then(serde_json::Value::as_u64) != Some(1) {
            return Err(bad(format!("no \"{META_KEY}\": 1")));
        }
        let text = |key: &str| -> Result<String> {
            json.get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(format!("\"{key}\" is not a string")))
        };
        let count = |key: &str| -> Result<u64> {
            json.get(key)
                .and_then(serde_json::Value::as_u64)
                .ok_or_else(|| bad(format!("\"{key}\" is not a count")))
        };
        let n_cols = count("n_cols")?;
        if n_cols == 0 {
            return Err(bad("n_cols 0 (at least 1 expected)".into()));
        }
        let n_cols = usize::try_from(n_cols).map_err(|_| bad(format!("n_cols {n_cols}")))?;
        tocpile_lib::limits::check_cols(n_cols, "columns of a page table")
            .context(|| format!("page table {table}"))?;
        let format = text("format")?;
        let format = FormatKind::from_name(&format)
            .ok_or_else(|| bad(format!("format \"{format}\" is not a page format")))?;
        let scale = text("scale")?;
        let factors = json.get("factors").filter(|f| !f.is_null());
        let scaling = match (scale.as_str(), factors) {
            ("none", _) => None,
            (name, Some(factors)) => {
                let kind = ScaleKind::from_name(name).ok_or_else(|| {
                    bad(format!("scale \"{name}\" is not none, maxabs or standard"))
                })?;
                let factors = factors
                    .as_array()
                    .ok_or_else(|| bad("\"factors\" is not an array".into()))?;
                if factors.len() != n_cols {
                    return Err(bad(format!(
                        "{} scaling factors for {n_cols} columns",
                        factors.len()
                    )));
                }
                let factors = factors
                    .iter()
                    .map(|f| f.as_f64().ok_or_else(|| bad(format!("scaling factor {f}"))))
                    .collect::<Result<Vec<f64>>>()?;
                Some(Scaling::new(kind, factors).map_err(|e| bad(e.to_string()))?)
            }
            (name, None) => return Err(bad(format!("scale \"{name}\" without factors"))),
        };
        let features = json
            .get("features")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| bad("\"features\" is not an array".into()))?
            .iter()
            .map(|f| {
                f.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("feature name {f}")))
            })
            .collect::<Result<Vec<String>>>()?;
        Ok(TocMeta {
            n_cols,
            n_rows: count("n_rows")?,
            n_pages: count("n_pages")?,
            page_rows: count("page_rows")?,
            format,
            scaling,
            source: text("source")?,
            label: text("label")?,
            features,
            stored_bytes: count("stored_bytes")?,
            created: text("created")?,
        })
    }
}

/// The metadata of `rel` (named `table`) if it is a page table: a table
/// of the columns `page_no bigint, labels bytea, page bytea` whose row
/// `page_no = -1` holds the metadata. `None` for a table of other
/// columns; an error for a page table without (or with two) metadata
/// rows, or with metadata that is not valid.
pub fn lookup(rel: &PgRelation, table: &str) -> Result<Option<(TocMeta, PageColumns)>> {
    // SAFETY: `rel` is open.
    let Some(columns) = (unsafe { PageColumns::of(rel.as_ptr()) }) else {
        return Ok(None);
    };
    let rows = Spi::connect(|client| {
        let rows = client.select(
            &format!("SELECT page FROM ONLY {table} WHERE page_no = {META_PAGE_NO} LIMIT 2"),
            None,
            &[],
        )?;
        rows.map(|row| row.get::<Vec<u8>>(1))
            .collect::<std::result::Result<Vec<_>, _>>()
    })
    .map_err(|e| Failure::corrupt(format!("reading the metadata of {table}: {e}")))?;
    match &rows[..] {
        [Some(bytes)] => Ok(Some((TocMeta::from_bytes(bytes, table)?, columns))),
        [None] => Err(Failure::corrupt(format!(
            "page table {table}: the metadata row (page_no = {META_PAGE_NO}) has a NULL page"
        ))),
        [] => Err(Failure::corrupt(format!(
            "table {table} has the columns of a page table (page_no, labels, page) but no \
             metadata row (page_no = {META_PAGE_NO}): page tables are made by \
             tocpile.encode_table (a table made by tocpile 0.1.0 gets its row with ALTER \
             EXTENSION tocpile UPDATE)"
        ))),
        _ => Err(Failure::corrupt(format!(
            "page table {table} has more than one metadata row (page_no = {META_PAGE_NO})"
        ))),
    }
}

/// Attribute indices of `page_no`, `labels` and `page` in a page table.
#[derive(Debug, Clone, Copy)]
pub struct PageColumns {
    page_no: usize,
    labels: usize,
    page: usize,
    deform: usize,
}

impl PageColumns {
    /// The page columns of `rel`, if it has exactly those three (any
    /// order).
    ///
    /// # Safety
    /// `rel` is an open relation.
    pub unsafe fn of(rel: pg_sys::Relation) -> Option<PageColumns> {
        let desc = (*rel).rd_att;
        let (mut page_no, mut labels, mut page, mut others) = (None, None, None, 0);
        for i in 0..(*desc).natts as usize {
            let att = &*(*desc).attrs.as_ptr().add(i);
            if att.attisdropped {
                continue;
            }
            match (pgrx::name_data_to_str(&att.attname), att.atttypid) {
                ("page_no", pg_sys::INT8OID) => page_no = Some(i),
                ("labels", pg_sys::BYTEAOID) => labels = Some(i),
                ("page", pg_sys::BYTEAOID) => page = Some(i),
                _ => others += 1,
            }
        }
        let (page_no, labels, page) = (page_no?, labels?, page?);
        (others == 0).then(|| PageColumns {
            page_no,
            labels,
            page,
            deform: page_no.max(labels).max(page) + 1,
        })
    }

    /// Whether the tuple in `slot` (at `at`) is the metadata row.
    ///
    /// # Safety
    /// `slot` holds a tuple of the table the columns were found in.
    pub unsafe fn is_meta(&self, slot: *mut pg_sys::TupleTableSlot, at: Tid) -> Result<bool> {
        deform(slot, self.deform);
        let page_no = attribute(slot, self.page_no)
            .ok_or_else(|| Failure::corrupt(format!("page at {at}: page_no is NULL")))?;
        Ok(i64::from_datum(page_no, false) == Some(META_PAGE_NO))
    }

    /// Copies the page in `slot` (at `at`) out of its tuple; `None` for
    /// the metadata row.
    ///
    /// # Safety
    /// `slot` holds a tuple of the table the columns were found in.
    pub unsafe fn read(
        &self,
        slot: *mut pg_sys::TupleTableSlot,
        at: Tid,
    ) -> Result<Option<RawPage>> {
        if self.is_meta(slot, at)? {
            return Ok(None);
        }
        let bytes = |index: usize, what: &str| -> Result<Vec<u8>> {
            let datum = attribute(slot, index)
                .ok_or_else(|| Failure::corrupt(format!("page at {at}: {what} is NULL")))?;
            let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            let data = pgrx::varlena::varlena_to_byte_slice(v);
            let mut out = try_vec(data.len(), "a stored page")?;
            out.extend_from_slice(data);
            Ok(out)
        };
        Ok(Some(RawPage {
            tid: at,
            labels: bytes(self.labels, "labels")?,
            page: bytes(self.page, "page")?,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_compactly() {
        let labels: Vec<f64> = (0..50).map(|i| f64::from(i % 3 == 0)).collect();
        let bytes = encode_labels(&labels).unwrap();
        assert!(
            bytes.len() < 50,
            "{} bytes for 50 binary labels",
            bytes.len()
        );
        assert_eq!(decode_labels(&bytes, 50).unwrap(), labels);
        let regression = [0.5, -2.0, 0.0, 1e9];
        let bytes = encode_labels(&regression).unwrap();
        assert_eq!(decode_labels(&bytes, 4).unwrap(), regression);
    }

    #[test]
    fn labels_of_another_count_or_width_are_refused() {
        let bytes = encode_labels(&[1.0, 0.0, 1.0]).unwrap();
        assert!(decode_labels(&bytes, 4).is_err());
        let mut wide = Vec::new();
        let two = SparseBatch::from_dense_rows(2, &[[1.0, 2.0]]).unwrap();
        FormatKind::TocFull
            .encode(&two)
            .unwrap()
            .write_bytes(&mut wide);
        assert!(decode_labels(&wide, 1).is_err());
        for cut in 0..bytes.len() {
            assert!(decode_labels(&bytes[..cut], 3).is_err(), "cut at {cut}");
        }
    }
}

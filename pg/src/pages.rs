//! TOC page tables: a table whose tuples are the pages of a dataset file
//! (`page_no bigint, labels bytea, page bytea`), made by
//! `tocpile.encode_table`, with the file footer's metadata (columns, page
//! format, the fitted scaling) in the row of `tocpile.toc_tables` that
//! names it.
//!
//! `page` is one encoded batch (for TOC, the `TocBatch` blob of
//! `docs/FORMAT.md`); `labels` is the page's labels as a one-column TOC
//! batch, which value-indexes and bit-packs them (a 0/1 label costs a bit
//! or two a row, as in the file's label section).
//!
//! Stored bytes are hostile: anyone who can update the table can write
//! any bytes in a page or in the metadata. Every page goes through the
//! library's validating decoder ([`FormatKind::load`], which bounds its
//! memory by the bytes and the resource limits of `tocpile::limits`),
//! its column count is checked against the metadata's, and the metadata
//! is checked before use. Every violation is an ERROR naming the table
//! and the page's `ctid`.

use pgrx::pg_sys;
use pgrx::prelude::*;
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

/// What `tocpile.toc_tables` says about a page table.
#[derive(Debug, Clone)]
pub struct TocMeta {
    /// Columns of the rows.
    pub n_cols: usize,
    /// Rows encoded.
    pub n_rows: i64,
    /// The pages' format.
    pub format: FormatKind,
    /// The scaling fitted when the table was encoded.
    pub scaling: Option<Scaling>,
    /// The source's label column.
    pub label: String,
    /// The source's feature columns.
    pub features: Vec<String>,
}

/// The metadata of the page table `relid`, or `None` if it is not one.
pub fn lookup(relid: pg_sys::Oid, table: &str) -> Result<Option<TocMeta>> {
    let row = Spi::connect(|client| {
        let rows = client.select(
            "SELECT n_cols, n_rows, format, scale, factors, label, features \
             FROM tocpile.toc_tables WHERE relid::oid = $1",
            Some(1),
            &[relid.into()],
        )?;
        if rows.is_empty() {
            return Ok::<_, pgrx::spi::SpiError>(None);
        }
        let row = rows.first();
        Ok(Some((
            row.get::<i32>(1)?,
            row.get::<i64>(2)?,
            row.get::<String>(3)?,
            row.get::<String>(4)?,
            row.get::<Vec<Option<f64>>>(5)?,
            row.get::<String>(6)?,
            row.get::<Vec<Option<String>>>(7)?,
        )))
    })
    .map_err(|e| Failure::corrupt(format!("reading tocpile.toc_tables: {e}")))?;
    let Some((n_cols, n_rows, format, scale, factors, label, features)) = row else {
        return Ok(None);
    };
    let bad = |what: String| Failure::corrupt(format!("tocpile.toc_tables, table {table}: {what}"));
    let n_cols = match n_cols {
        Some(n) if n >= 1 => n as usize,
        other => return Err(bad(format!("n_cols {other:?} (at least 1 expected)"))),
    };
    tocpile_lib::limits::check_cols(n_cols, "columns of a page table")
        .context(|| format!("page table {table}"))?;
    let format = format.unwrap_or_default();
    let format = FormatKind::from_name(&format)
        .ok_or_else(|| bad(format!("format \"{format}\" is not a page format")))?;
    let scale = scale.unwrap_or_default();
    let scaling = match (scale.as_str(), factors) {
        ("none", _) => None,
        (name, Some(factors)) => {
            let kind = ScaleKind::from_name(name)
                .ok_or_else(|| bad(format!("scale \"{name}\" is not none, maxabs or standard")))?;
            if factors.len() != n_cols {
                return Err(bad(format!(
                    "{} scaling factors for {n_cols} columns",
                    factors.len()
                )));
            }
            let factors = factors
                .into_iter()
                .map(|f| f.ok_or_else(|| bad("a NULL scaling factor".into())))
                .collect::<Result<Vec<f64>>>()?;
            Some(Scaling::new(kind, factors).map_err(|e| bad(e.to_string()))?)
        }
        (name, None) => return Err(bad(format!("scale \"{name}\" without factors"))),
    };
    Ok(Some(TocMeta {
        n_cols,
        n_rows: n_rows.unwrap_or(0),
        format,
        scaling,
        label: label.unwrap_or_default(),
        features: features
            .unwrap_or_default()
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect(),
    }))
}

/// Attribute indices of `labels` and `page` in a page table.
#[derive(Debug, Clone, Copy)]
pub struct PageColumns {
    labels: usize,
    page: usize,
    deform: usize,
}

impl PageColumns {
    /// Finds the `labels` and `page` bytea columns of `rel`.
    ///
    /// # Safety
    /// `rel` is an open relation.
    pub unsafe fn of(rel: pg_sys::Relation, table: &str) -> Result<PageColumns> {
        let desc = (*rel).rd_att;
        let find = |name: &str| -> Result<usize> {
            for i in 0..(*desc).natts as usize {
                let att = &*(*desc).attrs.as_ptr().add(i);
                if !att.attisdropped && pgrx::name_data_to_str(&att.attname) == name {
                    if att.atttypid != pg_sys::BYTEAOID {
                        break;
                    }
                    return Ok(i);
                }
            }
            Err(Failure::corrupt(format!(
                "table {table} is listed in tocpile.toc_tables but has no bytea column \
                 \"{name}\": not a page table made by tocpile.encode_table"
            )))
        };
        let (labels, page) = (find("labels")?, find("page")?);
        Ok(PageColumns {
            labels,
            page,
            deform: labels.max(page) + 1,
        })
    }

    /// Copies the page in `slot` (at `at`) out of its tuple.
    ///
    /// # Safety
    /// `slot` holds a tuple of the table the columns were found in.
    pub unsafe fn read(&self, slot: *mut pg_sys::TupleTableSlot, at: Tid) -> Result<RawPage> {
        deform(slot, self.deform);
        let bytes = |index: usize, what: &str| -> Result<Vec<u8>> {
            let datum = attribute(slot, index)
                .ok_or_else(|| Failure::corrupt(format!("page at {at}: {what} is NULL")))?;
            let v = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            let data = pgrx::varlena::varlena_to_byte_slice(v);
            let mut out = try_vec(data.len(), "a stored page")?;
            out.extend_from_slice(data);
            Ok(out)
        };
        Ok(RawPage {
            tid: at,
            labels: bytes(self.labels, "labels")?,
            page: bytes(self.page, "page")?,
        })
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

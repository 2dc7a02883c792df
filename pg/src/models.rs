//! Models in SQL: the `tocpile.model` domain (over `bytea`) holds the
//! library's model file bytes exactly (`docs/FORMAT.md`, "Model files"),
//! so a model saved by `tocpile train --save` loads with
//! `tocpile.model_from_bytes(pg_read_binary_file(...))` and a model
//! trained in SQL is a valid model file byte for byte.
//!
//! The bytes of a model value are hostile like any stored bytes (a domain
//! without a check is any bytea): every function validates them with the
//! library's decoder before use. A backend keeps the last model it
//! decoded, so `predict` over many rows decodes one model once.

use std::cell::RefCell;

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pg_sys;
use pgrx::prelude::*;
use tocpile_lib::formats::FormatKind;
use tocpile_lib::model::{Evaluation, EvaluationReport, Model};
use tocpile_lib::{Page, SparseBatch};

use crate::failure::{Context, Failure, Result};
use crate::rows::RowBuffer;
use crate::source::{Kind, Table};

/// A `tocpile.model` value: a model file's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelBytes(pub Vec<u8>);

impl FromDatum for ModelBytes {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        typoid: pg_sys::Oid,
    ) -> Option<ModelBytes> {
        Vec::<u8>::from_polymorphic_datum(datum, is_null, typoid).map(ModelBytes)
    }
}

impl IntoDatum for ModelBytes {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        self.0.into_datum()
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::BYTEAOID
    }
}

unsafe impl<'fcx> ArgAbi<'fcx> for ModelBytes {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        arg.unbox_arg_using_from_datum()
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }
}

unsafe impl BoxRet for ModelBytes {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.into_datum() {
            Some(datum) => fcinfo.return_raw_datum(datum),
            None => fcinfo.return_null(),
        }
    }
}

/// The SQL type of [`ModelBytes`] (in a module of its own: the macro
/// names `Result` unqualified, and the crate's `Result` has one argument).
mod sql_type {
    use super::ModelBytes;
    pgrx::impl_sql_translatable!(ModelBytes, "tocpile.model");
}

thread_local! {
    /// The model decoded last in this backend, and its bytes.
    static LAST: RefCell<Option<(Vec<u8>, Model)>> = const { RefCell::new(None) };
}

impl ModelBytes {
    /// Runs `f` on the model, validated; the backend keeps the last model
    /// it decoded, so a model used row after row is decoded once.
    pub fn with<R>(&self, f: impl FnOnce(&Model) -> Result<R>) -> Result<R> {
        let hit = LAST.with(|last| matches!(&*last.borrow(), Some((bytes, _)) if *bytes == self.0));
        if !hit {
            crate::access::apply_limits();
            let model = Model::from_bytes(&self.0)
                .map_err(|e| Failure::corrupt(format!("not a valid tocpile model: {e}")))?;
            LAST.with(|last| *last.borrow_mut() = Some((self.0.clone(), model)));
        }
        LAST.with(|last| match &*last.borrow() {
            Some((_, model)) => f(model),
            None => Err(Failure::data("the decoded model vanished")),
        })
    }

    /// A model's bytes.
    pub fn of(model: &Model) -> ModelBytes {
        ModelBytes(model.to_bytes())
    }
}

/// The scores of one row of features under `model`, through the
/// library's prediction code (a one-row CSR page).
pub fn predict_row(
    model: &Model,
    features: &[Option<f64>],
) -> Result<tocpile_lib::model::Predictions> {
    if features.len() != model.n_cols() {
        return Err(Failure::data(format!(
            "{} features given to a model of {} columns",
            features.len(),
            model.n_cols()
        )));
    }
    let mut cols = Vec::new();
    let mut values = Vec::new();
    for (j, v) in features.iter().enumerate() {
        let v = v.ok_or_else(|| Failure::data(format!("feature {} is NULL", j + 1)))?;
        if !v.is_finite() {
            return Err(Failure::data(format!("feature {} is {v}", j + 1)));
        }
        if v != 0.0 {
            cols.push(j as u32);
            values.push(v);
        }
    }
    let mut row = SparseBatch::with_cols(model.n_cols())?;
    row.push_row(&cols, &values)?;
    let page = Page::encode(FormatKind::Csr, &row, &[0.0])?;
    model.predict(&[page]).context(|| "predicting".into())
}

/// Every figure of the library's evaluation of `model` on every row of
/// `table`, read in order: rows in 250-row pages, a page table's pages as
/// stored.
pub fn evaluate(model: &Model, table: &Table) -> Result<EvaluationReport> {
    crate::threads::start_pool();
    if table.n_cols() != model.n_cols() {
        return Err(Failure::data(format!(
            "table {} has {} feature columns, the model {}",
            table.name(),
            table.n_cols(),
            model.n_cols()
        )));
    }
    let mut evaluation = Evaluation::new(model.kind());
    let mut scan = table.scan_in_order();
    let mut rows = RowBuffer::new(table.n_cols());
    let mut raw = Vec::new();
    let add = |pages: &[Page], evaluation: &mut Evaluation| -> Result<()> {
        let predictions = model.predict(pages).context(|| "predicting".into())?;
        let labels: Vec<f64> = pages
            .iter()
            .flat_map(|p| p.labels().iter().copied())
            .collect();
        // A binary model of labels other than 0 and 1 counts in classes.
        evaluation
            .add(&predictions, &model.class_indices(&labels))
            .context(|| format!("table {}", table.name()))
    };
    for block in 0..scan.n_blocks() {
        match table.kind() {
            Kind::Rows(_) => {
                table.read_rows(&mut scan, block, &mut rows)?;
                if rows.n_rows() >= 250 {
                    let all: Vec<u32> = (0..rows.n_rows() as u32).collect();
                    let pages = all
                        .chunks(250)
                        .map(|ids| rows.gather(ids))
                        .collect::<Result<Vec<_>>>()?;
                    add(&pages, &mut evaluation)?;
                    rows.clear();
                }
            }
            Kind::Pages { format, .. } => {
                raw.clear();
                table.read_pages(&mut scan, block, &mut raw)?;
                let pages = raw
                    .iter()
                    .map(|r| format.load(r))
                    .collect::<Result<Vec<_>>>()?;
                add(&pages, &mut evaluation)?;
            }
        }
    }
    if rows.n_rows() > 0 {
        let all: Vec<u32> = (0..rows.n_rows() as u32).collect();
        add(&[rows.gather(&all)?], &mut evaluation)?;
    }
    Ok(evaluation.report())
}

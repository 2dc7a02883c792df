//! tocpile inside PostgreSQL: the CorgiPile paper's in-database system
//! (Xu et al., "CorgiPile: SGD without full data shuffle", sections 4 to
//! 6) as an extension, on the tocpile library's TOC pages, models and
//! optimizers.
//!
//! | SQL | what |
//! |---|---|
//! | `tocpile.train(relation, label, features, model, shuffle, ...)` | mini-batch SGD over a table or a page table: CorgiPile (block shuffle over heap pages, buffer, tuple shuffle), No Shuffle or Shuffle Once |
//! | `tocpile.encode_table(source, label, features, target, page_rows)` | the table's rows as a TOC page table, with its metadata in `tocpile.toc_tables` |
//! | `tocpile.predict(model, features)`, `tocpile.predict_proba(...)` | one row's prediction |
//! | `tocpile.evaluate(model, relation, label, features)` | loss, accuracy, AUC, R^2 over a table (jsonb) |
//! | `tocpile.model_from_bytes(bytea)`, `tocpile.model_bytes(model)`, `tocpile.model_info(model)` | model files in and out |
//! | `tocpile.last_train_report()` | the figures of the backend's last `train` (jsonb) |
//!
//! Module map: [`heap`] (BlockShuffle: TID range scans over blocks of
//! heap pages), [`order`] (block and tuple orders), [`rows`] and
//! [`pages`] (the TupleShuffle buffer's units), [`sgd`] (the SGD
//! operator: the only module that steps the library's model), [`train`],
//! [`encode`], [`models`]; [`access`] and [`failure`] hold the checks and
//! the errors.

use std::cell::RefCell;
use std::time::Instant;

use pgrx::prelude::*;
use pgrx::JsonB;
use pgrx::PgRelation;

pub mod access;
pub mod columns;
pub mod encode;
pub mod failure;
pub mod heap;
pub mod models;
pub mod order;
pub mod pages;
pub mod rows;
pub mod sgd;
pub mod source;
pub mod threads;
pub mod train;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

use failure::{Failure, OrRaise, Result};
use models::ModelBytes;
use source::Table;

::pgrx::pg_module_magic!();

extension_sql!(
    r#"
-- A model: the bytes of a tocpile model file (docs/FORMAT.md, "Model
-- files"). Every function validates them before use.
CREATE DOMAIN model AS bytea;

-- One row per TOC page table made by encode_table: what a dataset
-- file's footer holds.
CREATE TABLE toc_tables (
    relid regclass PRIMARY KEY,
    source text NOT NULL,
    label text NOT NULL,
    features text[] NOT NULL,
    n_cols integer NOT NULL,
    n_rows bigint NOT NULL,
    n_pages bigint NOT NULL,
    page_rows integer NOT NULL,
    format text NOT NULL,
    scale text NOT NULL,
    factors double precision[],
    stored_bytes bigint NOT NULL,
    created timestamptz NOT NULL DEFAULT now()
);
-- Creating the extension takes a superuser; using it does not.
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;
GRANT SELECT, INSERT, DELETE ON toc_tables TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('toc_tables', '');
"#,
    name = "bootstrap",
    bootstrap
);

#[allow(non_snake_case)]
#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    access::define_settings();
}

thread_local! {
    static LAST_REPORT: RefCell<Option<serde_json::Value>> = const { RefCell::new(None) };
}

/// Text array argument without NULL elements.
fn names(list: Option<Vec<Option<String>>>, what: &str) -> Result<Option<Vec<String>>> {
    list.map(|l| {
        l.into_iter()
            .map(|n| n.ok_or_else(|| Failure::argument(format!("{what} contains a NULL"))))
            .collect()
    })
    .transpose()
}

/// Trains a model on a table (label and feature columns) or a TOC page
/// table; see the crate docs and README.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe)]
fn train(
    relation: PgRelation,
    label: default!(Option<&str>, "NULL"),
    features: default!(Option<Vec<Option<String>>>, "NULL"),
    model: default!(&str, "'lr'"),
    shuffle: default!(&str, "'corgipile'"),
    epochs: default!(i32, 10),
    batch_size: default!(i32, 250),
    buffer: default!(f64, 0.1),
    lr: default!(Option<f64>, "NULL"),
    seed: default!(i64, 0),
    optimizer: default!(&str, "'adam'"),
    decay: default!(f64, 0.95),
    l2: default!(f64, 0.0),
    scale: default!(&str, "'auto'"),
    block_pages: default!(i32, 1),
    classes: default!(Option<i32>, "NULL"),
    double_buffer: default!(bool, true),
) -> ModelBytes {
    let start = Instant::now();
    let result = (|| -> Result<ModelBytes> {
        access::apply_limits();
        let options = train::Options::parse(
            model,
            shuffle,
            epochs,
            batch_size,
            buffer,
            lr,
            seed,
            optimizer,
            decay,
            l2,
            scale,
            block_pages,
            classes,
            double_buffer,
        )?;
        let features = names(features, "features")?;
        let table = Table::open(relation, label, features.as_deref())?;
        let (model, mut report, shuffle_seconds) = if options.shuffle == order::Shuffle::Once {
            if matches!(table.kind(), source::Kind::Pages { .. }) {
                return Err(Failure::argument(
                    "shuffle => 'once' shuffles rows, and a page table's rows are encoded in \
                     pages: encode a copy made with ORDER BY random() instead",
                ));
            }
            let copy_start = Instant::now();
            let (copy, oid) = train::OnceCopy::create(table.name(), options.seed)?;
            // SAFETY: the copy was just made by this transaction.
            let copy_rel = unsafe { PgRelation::with_lock(oid, pg_sys::AccessShareLock as _) };
            let copied = Table::open(copy_rel, label, features.as_deref())?;
            let shuffle_seconds = copy_start.elapsed().as_secs_f64();
            let (model, report) = train::run(&copied, &options, Instant::now())?;
            drop(copied);
            copy.drop_table()?;
            (model, report, shuffle_seconds)
        } else {
            let (model, report) = train::run(&table, &options, start)?;
            (model, report, 0.0)
        };
        report["shuffle_seconds"] = shuffle_seconds.into();
        report["total_seconds"] = start.elapsed().as_secs_f64().into();
        if options.shuffle == order::Shuffle::Once {
            report["table"] = table.name().into();
        }
        LAST_REPORT.with(|r| *r.borrow_mut() = Some(report));
        Ok(ModelBytes::of(&model))
    })();
    result.or_raise()
}

/// `tocpile.train` with one feature column named as text (an array
/// column, say): `train('t', 'label', 'x')`.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "train", volatile, parallel_unsafe)]
fn train_column(
    relation: PgRelation,
    label: Option<&str>,
    features: Option<&str>,
    model: default!(&str, "'lr'"),
    shuffle: default!(&str, "'corgipile'"),
    epochs: default!(i32, 10),
    batch_size: default!(i32, 250),
    buffer: default!(f64, 0.1),
    lr: default!(Option<f64>, "NULL"),
    seed: default!(i64, 0),
    optimizer: default!(&str, "'adam'"),
    decay: default!(f64, 0.95),
    l2: default!(f64, 0.0),
    scale: default!(&str, "'auto'"),
    block_pages: default!(i32, 1),
    classes: default!(Option<i32>, "NULL"),
    double_buffer: default!(bool, true),
) -> ModelBytes {
    train(
        relation,
        label,
        one(features),
        model,
        shuffle,
        epochs,
        batch_size,
        buffer,
        lr,
        seed,
        optimizer,
        decay,
        l2,
        scale,
        block_pages,
        classes,
        double_buffer,
    )
}

/// A single column name as the list the array forms take.
fn one(column: Option<&str>) -> Option<Vec<Option<String>>> {
    column.map(|c| vec![Some(c.to_string())])
}

/// The figures of the last `tocpile.train` of this session: per-epoch
/// time (and the part spent reading), loss and accuracy, setup and
/// shuffle time, the block layout.
#[pg_extern(volatile, parallel_unsafe)]
fn last_train_report() -> Option<JsonB> {
    LAST_REPORT.with(|r| r.borrow().clone().map(JsonB))
}

/// Encodes the rows of `source` into a new TOC page table `target`.
#[pg_extern(volatile, parallel_unsafe)]
fn encode_table(
    source: PgRelation,
    label: &str,
    features: Option<Vec<Option<String>>>,
    target: &str,
    page_rows: default!(i32, 50),
    format: default!(&str, "'toc'"),
    scale: default!(&str, "'maxabs'"),
) -> JsonB {
    let result = (|| -> Result<JsonB> {
        access::apply_limits();
        let page_rows = usize::try_from(page_rows)
            .ok()
            .filter(|&n| (1..=u32::MAX as usize).contains(&n))
            .ok_or_else(|| {
                Failure::argument(format!("page_rows must be at least 1 ({page_rows} given)"))
            })?;
        let format = tocpile_lib::formats::FormatKind::from_name(format).ok_or_else(|| {
            Failure::argument(format!(
                "format \"{format}\" is not a page format (toc, csr, ...)"
            ))
        })?;
        let scale = match scale.to_ascii_lowercase().as_str() {
            "none" => None,
            name => Some(
                tocpile_lib::scale::ScaleKind::from_name(name).ok_or_else(|| {
                    Failure::argument(format!(
                        "scale \"{name}\" is not one of maxabs, standard, none"
                    ))
                })?,
            ),
        };
        let features = names(features, "features")?;
        let table = Table::open(source, Some(label), features.as_deref())?;
        let options = encode::EncodeOptions {
            page_rows,
            format,
            scale,
        };
        encode::encode_table(&table, target, &options).map(JsonB)
    })();
    result.or_raise()
}

/// `tocpile.encode_table` with one feature column named as text.
#[pg_extern(name = "encode_table", volatile, parallel_unsafe)]
fn encode_table_column(
    source: PgRelation,
    label: &str,
    features: Option<&str>,
    target: &str,
    page_rows: default!(i32, 50),
    format: default!(&str, "'toc'"),
    scale: default!(&str, "'maxabs'"),
) -> JsonB {
    encode_table(
        source,
        label,
        one(features),
        target,
        page_rows,
        format,
        scale,
    )
}

/// The model in a model file's bytes (a file written by `tocpile train
/// --save`, read with `pg_read_binary_file`), validated.
#[pg_extern(immutable, parallel_safe)]
fn model_from_bytes(bytes: Vec<u8>) -> ModelBytes {
    let model = ModelBytes(bytes);
    model.with(|_| Ok(())).or_raise();
    model
}

/// The model file bytes of a model (what `tocpile train --save` writes).
#[pg_extern(immutable, parallel_safe)]
fn model_bytes(model: ModelBytes) -> Vec<u8> {
    model.with(|_| Ok(())).or_raise();
    model.0
}

/// A model's kind, columns, parameter count and scaling.
#[pg_extern(immutable, parallel_safe)]
fn model_info(model: ModelBytes) -> JsonB {
    model
        .with(|m| {
            Ok(JsonB(serde_json::json!({
                "kind": m.kind().name(), "description": m.kind().to_string(),
                "columns": m.n_cols(), "parameters": m.n_params(),
                "scaling": m.scaling().map(|s| s.kind().name()),
                "bytes": model.0.len(),
            })))
        })
        .or_raise()
}

/// The model's prediction for one row of features: the class (0 or 1
/// for binary models, the class index for multi-class ones) or, for
/// linear regression, the value.
#[pg_extern(immutable, parallel_safe)]
fn predict(model: ModelBytes, features: Vec<Option<f64>>) -> f64 {
    crate::threads::start_pool();
    model
        .with(|m| {
            let p = models::predict_row(m, &features)?;
            Ok(match p.class(0) {
                Some(c) => c as f64,
                None => p.scores(0)[0],
            })
        })
        .or_raise()
}

/// The model's probabilities for one row: of the positive class for
/// logistic regression and binary networks, of each class for softmax
/// and multi-class networks; NULL for SVM and linear regression.
#[pg_extern(immutable, parallel_safe)]
fn predict_proba(model: ModelBytes, features: Vec<Option<f64>>) -> Option<Vec<f64>> {
    crate::threads::start_pool();
    model
        .with(|m| Ok(models::predict_row(m, &features)?.probabilities(0)))
        .or_raise()
}

/// Loss, accuracy, AUC (binary), confusion matrix and R^2 (regression) of
/// the model on every row of a table or page table.
#[pg_extern(volatile, parallel_unsafe)]
fn evaluate(
    model: ModelBytes,
    relation: PgRelation,
    label: default!(Option<&str>, "NULL"),
    features: default!(Option<Vec<Option<String>>>, "NULL"),
) -> JsonB {
    let result = (|| -> Result<JsonB> {
        access::apply_limits();
        let features = names(features, "features")?;
        let table = Table::open(relation, label, features.as_deref())?;
        let r = model.with(|m| models::evaluate(m, &table))?;
        Ok(JsonB(serde_json::json!({
            "rows": r.rows, "loss": r.loss, "accuracy": r.accuracy, "auc": r.auc,
            "r2": r.r2, "confusion": r.confusion,
        })))
    })();
    result.or_raise()
}

/// `tocpile.evaluate` with one feature column named as text.
#[pg_extern(name = "evaluate", volatile, parallel_unsafe)]
fn evaluate_column(
    model: ModelBytes,
    relation: PgRelation,
    label: Option<&str>,
    features: Option<&str>,
) -> JsonB {
    evaluate(model, relation, label, one(features))
}

/// Reads every tuple of a table through the block reader, in CorgiPile's
/// block order (`shuffled`) or in table order, without converting them:
/// the cost of block-level random access alone, to set against `SELECT
/// count(*)`. Returns the tuples read.
#[pg_extern(volatile, parallel_unsafe)]
fn scan_blocks(
    relation: PgRelation,
    shuffled: default!(bool, true),
    block_pages: default!(i32, 1),
) -> i64 {
    let result = (|| -> Result<i64> {
        access::check_readable(&relation)?;
        let block_pages = u32::try_from(block_pages)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| Failure::argument("block_pages must be at least 1"))?;
        // SAFETY: the relation is open for the scan's life.
        let mut scan = unsafe { heap::BlockScan::open(relation.as_ptr(), block_pages) };
        let strategy = if shuffled {
            order::Shuffle::CorgiPile
        } else {
            order::Shuffle::None
        };
        let mut n = 0i64;
        for b in order::block_order(strategy, scan.n_blocks(), 0, 0) {
            n += scan.read_block(b, |_, _| Ok(()))? as i64;
        }
        Ok(n)
    })();
    result.or_raise()
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    /// One-off setup of the test cluster.
    pub fn setup(_options: Vec<&str>) {}

    /// Settings of the test cluster.
    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}

//! tocpile inside PostgreSQL: the CorgiPile paper's in-database system
//! (Xu et al., "CorgiPile: SGD without full data shuffle", sections 4 to
//! 6) as an extension, on the tocpile library's TOC pages, models and
//! trainer.
//!
//! | SQL | what |
//! |---|---|
//! | `tocpile.train(relation, label, features, model, shuffle, ...)` | mini-batch SGD over a table or a page table: CorgiPile (block shuffle over heap pages, buffer, tuple shuffle), No Shuffle or Shuffle Once |
//! | `tocpile.encode_table(source, label, features, target, page_rows)` | the table's rows as a TOC page table, its metadata in a row of its own |
//! | `tocpile.page_table_info(relation)` | a page table's metadata (jsonb) |
//! | `tocpile.load_libsvm(path, target)` | a LIBSVM file on the server as a table (superusers, `pg_read_server_files`) |
//! | `tocpile.predict(model, features)`, `tocpile.predict_proba(...)` | one row's prediction |
//! | `tocpile.evaluate(model, relation, label, features)` | loss, accuracy, AUC, R^2 over a table (jsonb) |
//! | `tocpile.model_from_bytes(bytea)`, `tocpile.model_bytes(model)`, `tocpile.model_info(model)` | model files in and out |
//! | `tocpile.last_train_report()` | the figures of the backend's last `train` (jsonb) |
//!
//! Module map: [`heap`] (BlockShuffle: TID range scans over blocks of
//! heap pages), [`order`] (block and tuple orders), [`rows`] and
//! [`pages`] (the TupleShuffle buffer's units), [`feed`] (buffers cut
//! into mini-batches for the library's trainer, which alone steps the
//! model), [`handoff`] (double buffering that a cancel interrupts),
//! [`train`], [`encode`], [`load`], [`models`]; [`access`] and
//! [`failure`] hold the checks and the errors.

use std::cell::RefCell;
use std::time::Instant;

use pgrx::prelude::*;
use pgrx::JsonB;
use pgrx::PgRelation;

pub mod access;
pub mod columns;
pub mod encode;
pub mod failure;
pub mod feed;
pub mod handoff;
pub mod heap;
pub mod load;
pub mod models;
pub mod order;
pub mod pages;
pub mod rows;
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
-- Creating the extension takes a superuser; using it does not. A page
-- table's metadata is a row of the page table itself (page_no = -1):
-- it has the table's privileges, and no table is shared between users.
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;
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

/// The value of argument `name` of `function`, or the error naming it
/// when it is NULL (every argument of the extension's functions is taken
/// as nullable so that a NULL is this error, not a crash or an argument
/// number).
fn required<T>(value: Option<T>, function: &str, name: &str) -> Result<T> {
    value.ok_or_else(|| Failure::null_argument(function, name))
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

/// The arguments of `tocpile.train`, as SQL gives them.
struct TrainArgs<'a> {
    relation: Option<PgRelation>,
    label: Option<&'a str>,
    features: Option<Vec<Option<String>>>,
    model: Option<&'a str>,
    shuffle: Option<&'a str>,
    epochs: Option<i32>,
    batch_size: Option<i32>,
    buffer: Option<f64>,
    lr: Option<f64>,
    seed: Option<i64>,
    optimizer: Option<&'a str>,
    decay: Option<f64>,
    l2: Option<f64>,
    scale: Option<&'a str>,
    block_pages: Option<i32>,
    classes: Option<i32>,
    double_buffer: Option<bool>,
}

impl TrainArgs<'_> {
    fn run(self) -> Result<ModelBytes> {
        const F: &str = "tocpile.train";
        let start = Instant::now();
        access::apply_limits();
        let options = train::Options::parse(
            required(self.model, F, "model")?,
            required(self.shuffle, F, "shuffle")?,
            required(self.epochs, F, "epochs")?,
            required(self.batch_size, F, "batch_size")?,
            required(self.buffer, F, "buffer")?,
            self.lr,
            required(self.seed, F, "seed")?,
            required(self.optimizer, F, "optimizer")?,
            required(self.decay, F, "decay")?,
            required(self.l2, F, "l2")?,
            required(self.scale, F, "scale")?,
            required(self.block_pages, F, "block_pages")?,
            self.classes,
            required(self.double_buffer, F, "double_buffer")?,
        )?;
        let relation = required(self.relation, F, "relation")?;
        let features = names(self.features, "features")?;
        let table = Table::open(relation, self.label, features.as_deref())?;
        if options.shuffle == order::Shuffle::Once
            && matches!(table.kind(), source::Kind::Pages { .. })
        {
            return Err(Failure::argument(
                "shuffle => 'once' shuffles rows, and a page table's rows are encoded in \
                 pages: encode a copy made with ORDER BY random() instead",
            ));
        }
        // The pass over the table itself (for Shuffle Once too: its
        // errors name the table's rows, not the copy's).
        let prepared = train::prepare(&table, &options, start)?;
        let (model, mut report, shuffle_seconds) = if options.shuffle == order::Shuffle::Once {
            let copy_start = Instant::now();
            let (copy, oid) = train::OnceCopy::create(table.name(), options.seed)?;
            // SAFETY: the copy was just made by this transaction.
            let copy_rel = unsafe { PgRelation::with_lock(oid, pg_sys::AccessShareLock as _) };
            let copied = Table::open(copy_rel, self.label, features.as_deref())?
                .shown_as(format!("{} (Shuffle Once's copy)", table.name()));
            let shuffle_seconds = copy_start.elapsed().as_secs_f64();
            let (model, report) = train::run(&copied, prepared, &options)?;
            drop(copied);
            copy.drop_table()?;
            (model, report, shuffle_seconds)
        } else {
            let (model, report) = train::run(&table, prepared, &options)?;
            (model, report, 0.0)
        };
        report["table"] = table.name().into();
        report["shuffle_seconds"] = shuffle_seconds.into();
        report["total_seconds"] = start.elapsed().as_secs_f64().into();
        LAST_REPORT.with(|r| *r.borrow_mut() = Some(report));
        Ok(ModelBytes::of(&model))
    }
}

/// Trains a model on a table (label and feature columns) or a TOC page
/// table; see the crate docs and README.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe)]
fn train(
    relation: Option<PgRelation>,
    label: default!(Option<&str>, "NULL"),
    features: default!(Option<Vec<Option<String>>>, "NULL"),
    model: default!(Option<&str>, "'lr'"),
    shuffle: default!(Option<&str>, "'corgipile'"),
    epochs: default!(Option<i32>, 10),
    batch_size: default!(Option<i32>, 250),
    buffer: default!(Option<f64>, 0.1),
    lr: default!(Option<f64>, "NULL"),
    seed: default!(Option<i64>, 0),
    optimizer: default!(Option<&str>, "'adam'"),
    decay: default!(Option<f64>, 0.95),
    l2: default!(Option<f64>, 0.0),
    scale: default!(Option<&str>, "'auto'"),
    block_pages: default!(Option<i32>, 1),
    classes: default!(Option<i32>, "NULL"),
    double_buffer: default!(Option<bool>, true),
) -> ModelBytes {
    TrainArgs {
        relation,
        label,
        features,
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
    }
    .run()
    .or_raise()
}

/// `tocpile.train` with one feature column named as text (an array
/// column, say): `train('t', 'label', 'x')`.
#[allow(clippy::too_many_arguments)]
#[pg_extern(name = "train", volatile, parallel_unsafe)]
fn train_column(
    relation: Option<PgRelation>,
    label: Option<&str>,
    features: Option<&str>,
    model: default!(Option<&str>, "'lr'"),
    shuffle: default!(Option<&str>, "'corgipile'"),
    epochs: default!(Option<i32>, 10),
    batch_size: default!(Option<i32>, 250),
    buffer: default!(Option<f64>, 0.1),
    lr: default!(Option<f64>, "NULL"),
    seed: default!(Option<i64>, 0),
    optimizer: default!(Option<&str>, "'adam'"),
    decay: default!(Option<f64>, 0.95),
    l2: default!(Option<f64>, 0.0),
    scale: default!(Option<&str>, "'auto'"),
    block_pages: default!(Option<i32>, 1),
    classes: default!(Option<i32>, "NULL"),
    double_buffer: default!(Option<bool>, true),
) -> ModelBytes {
    TrainArgs {
        relation,
        label,
        features: one(features),
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
    }
    .run()
    .or_raise()
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
fn encode(
    source: Option<PgRelation>,
    label: Option<&str>,
    features: Option<Vec<Option<String>>>,
    target: Option<&str>,
    page_rows: Option<i32>,
    format: Option<&str>,
    scale: Option<&str>,
) -> Result<JsonB> {
    const F: &str = "tocpile.encode_table";
    access::apply_limits();
    let page_rows = required(page_rows, F, "page_rows")?;
    let page_rows = usize::try_from(page_rows)
        .ok()
        .filter(|&n| (1..=u32::MAX as usize).contains(&n))
        .ok_or_else(|| {
            Failure::argument(format!("page_rows must be at least 1 ({page_rows} given)"))
        })?;
    let format = required(format, F, "format")?;
    let format = tocpile_lib::formats::FormatKind::from_name(format).ok_or_else(|| {
        Failure::argument(format!(
            "format \"{format}\" is not a page format (toc, csr, ...)"
        ))
    })?;
    let scale = match required(scale, F, "scale")?.to_ascii_lowercase().as_str() {
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
    let label = required(label, F, "label")?;
    let target = required(target, F, "target")?;
    let table = Table::open(
        required(source, F, "source")?,
        Some(label),
        features.as_deref(),
    )?;
    let options = encode::EncodeOptions {
        page_rows,
        format,
        scale,
    };
    encode::encode_table(&table, target, &options).map(JsonB)
}

/// Encodes the rows of `source` into a new TOC page table `target`.
#[pg_extern(volatile, parallel_unsafe)]
fn encode_table(
    source: Option<PgRelation>,
    label: Option<&str>,
    features: Option<Vec<Option<String>>>,
    target: Option<&str>,
    page_rows: default!(Option<i32>, 50),
    format: default!(Option<&str>, "'toc'"),
    scale: default!(Option<&str>, "'maxabs'"),
) -> JsonB {
    encode(source, label, features, target, page_rows, format, scale).or_raise()
}

/// `tocpile.encode_table` with one feature column named as text.
#[pg_extern(name = "encode_table", volatile, parallel_unsafe)]
fn encode_table_column(
    source: Option<PgRelation>,
    label: Option<&str>,
    features: Option<&str>,
    target: Option<&str>,
    page_rows: default!(Option<i32>, 50),
    format: default!(Option<&str>, "'toc'"),
    scale: default!(Option<&str>, "'maxabs'"),
) -> JsonB {
    encode(
        source,
        label,
        one(features),
        target,
        page_rows,
        format,
        scale,
    )
    .or_raise()
}

/// The metadata of a page table (what `tocpile.encode_table` recorded:
/// its source, label and features, columns, rows, pages, format, the
/// scaling fitted), to whoever may read the table.
#[pg_extern(stable, parallel_safe)]
fn page_table_info(relation: Option<PgRelation>) -> JsonB {
    (|| -> Result<JsonB> {
        access::apply_limits();
        let rel = required(relation, "tocpile.page_table_info", "relation")?;
        access::check_readable(&rel)?;
        let name = access::sql_name(rel.oid())?;
        match pages::lookup(&rel, &name)? {
            Some((meta, _)) => {
                let mut json = meta.to_json();
                json["table"] = name.into();
                Ok(JsonB(json))
            }
            None => Err(Failure::argument(format!(
                "{name} is not a page table (made by tocpile.encode_table)"
            ))),
        }
    })()
    .or_raise()
}

/// Loads a LIBSVM file on the server into a new table `(label float8,
/// features float8[])` (superusers and members of `pg_read_server_files`).
#[pg_extern(volatile, parallel_unsafe)]
fn load_libsvm(
    path: Option<&str>,
    target: Option<&str>,
    n_cols: default!(Option<i32>, "NULL"),
) -> JsonB {
    (|| -> Result<JsonB> {
        const F: &str = "tocpile.load_libsvm";
        access::apply_limits();
        let n_cols = match n_cols {
            None => None,
            Some(n) => Some(usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| {
                Failure::argument(format!("n_cols must be at least 1 ({n} given)"))
            })?),
        };
        let path = required(path, F, "path")?;
        let target = required(target, F, "target")?;
        load::load_libsvm(path, target, n_cols).map(JsonB)
    })()
    .or_raise()
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

/// The model's prediction for one row of features: the class's label (0
/// or 1 for binary models, or the two labels they were trained on, such
/// as 1 and 2; the class index for multi-class ones) or, for linear
/// regression, the value.
#[pg_extern(immutable, parallel_safe)]
fn predict(model: ModelBytes, features: Vec<Option<f64>>) -> f64 {
    crate::threads::start_pool();
    model
        .with(|m| {
            // The class's label: 0 or 1, the class index, a binary
            // model's own two labels (1 or 2, say), or the value.
            Ok(models::predict_row(m, &features)?.label(0))
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
/// the model on every row of a table or page table (NULL figures for a
/// table without rows).
#[pg_extern(volatile, parallel_unsafe)]
fn evaluate(
    model: Option<ModelBytes>,
    relation: Option<PgRelation>,
    label: default!(Option<&str>, "NULL"),
    features: default!(Option<Vec<Option<String>>>, "NULL"),
) -> JsonB {
    evaluate_table(model, relation, label, features).or_raise()
}

fn evaluate_table(
    model: Option<ModelBytes>,
    relation: Option<PgRelation>,
    label: Option<&str>,
    features: Option<Vec<Option<String>>>,
) -> Result<JsonB> {
    const F: &str = "tocpile.evaluate";
    access::apply_limits();
    let model = required(model, F, "model")?;
    let relation = required(relation, F, "relation")?;
    let features = names(features, "features")?;
    let table = Table::open(relation, label, features.as_deref())?;
    let r = model.with(|m| models::evaluate(m, &table))?;
    // No rows: no loss or accuracy (the library's sums over nothing are 0).
    let figure = |v: Option<f64>| if r.rows == 0 { None } else { v };
    Ok(JsonB(serde_json::json!({
        "rows": r.rows, "loss": figure(Some(r.loss)), "accuracy": figure(r.accuracy),
        "auc": figure(r.auc), "r2": figure(r.r2), "confusion": r.confusion,
    })))
}

/// `tocpile.evaluate` with one feature column named as text.
#[pg_extern(name = "evaluate", volatile, parallel_unsafe)]
fn evaluate_column(
    model: Option<ModelBytes>,
    relation: Option<PgRelation>,
    label: Option<&str>,
    features: Option<&str>,
) -> JsonB {
    evaluate_table(model, relation, label, one(features)).or_raise()
}

/// Reads every tuple of a table through the block reader, in CorgiPile's
/// block order (`shuffled`) or in table order, without converting them:
/// the cost of block-level random access alone, to set against `SELECT
/// count(*)`. Returns the tuples read.
#[pg_extern(volatile, parallel_unsafe)]
fn scan_blocks(
    relation: Option<PgRelation>,
    shuffled: default!(Option<bool>, true),
    block_pages: default!(Option<i32>, 1),
) -> i64 {
    let result = (|| -> Result<i64> {
        const F: &str = "tocpile.scan_blocks";
        let relation = required(relation, F, "relation")?;
        let shuffled = required(shuffled, F, "shuffled")?;
        let block_pages = required(block_pages, F, "block_pages")?;
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

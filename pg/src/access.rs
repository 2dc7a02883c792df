//! What may be read, and the settings that bound what is allocated.
//!
//! The extension reads heaps below the executor, so it makes the checks
//! the executor would: SELECT privilege on the table, no row-level
//! security in force for the user (a direct heap scan cannot apply
//! policies, so such tables are refused), no inheritance children (a
//! query reads theirs too, a heap scan does not, so a parent is refused),
//! and a table whose access method supports TID range scans (a NULL
//! callback would crash the backend).

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgRelation;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::ffi::CStr;

use crate::failure::{Failure, Result};

/// `tocpile.max_page_nnz`: the library's ceiling on the non-zeros one
/// page may decode to.
pub static MAX_PAGE_NNZ: GucSetting<i32> =
    GucSetting::<i32>::new(tocpile_lib::limits::DEFAULT_MAX_PAGE_NNZ as i32);
/// `tocpile.max_decode_nnz`: the library's ceiling on the non-zeros
/// decoded at once from many pages.
pub static MAX_DECODE_NNZ: GucSetting<i32> =
    GucSetting::<i32>::new(tocpile_lib::limits::DEFAULT_MAX_DECODE_NNZ as i32);
/// `tocpile.max_cols`: the library's ceiling on the columns a model or a
/// page may have.
pub static MAX_COLS: GucSetting<i32> =
    GucSetting::<i32>::new(tocpile_lib::limits::DEFAULT_MAX_COLS as i32);
/// `tocpile.max_params`: the library's ceiling on the parameters of a
/// model built for training.
pub static MAX_PARAMS: GucSetting<i32> =
    GucSetting::<i32>::new(tocpile_lib::limits::DEFAULT_MAX_PARAMS as i32);

/// Each limit of the library's resource policy: its setting, the
/// command-line option the library's errors name (how its error is
/// recognised), and the setting's descriptions.
type Setting = (
    &'static GucSetting<i32>,
    &'static CStr,
    &'static str,
    &'static CStr,
    &'static CStr,
);

const SETTINGS: [Setting; 4] = [
    (
        &MAX_PAGE_NNZ,
        c"tocpile.max_page_nnz",
        "--max-page-nnz",
        c"Most non-zeros one stored page may decode to.",
        c"The resource limit of tocpile's page decoders: a page claiming more is an error.",
    ),
    (
        &MAX_DECODE_NNZ,
        c"tocpile.max_decode_nnz",
        "--max-decode-nnz",
        c"Most non-zeros decoded at once from the pages of a block or buffer.",
        c"The resource limit of tocpile's decoders over many pages.",
    ),
    (
        &MAX_COLS,
        c"tocpile.max_cols",
        "--max-cols",
        c"Most columns a model or a stored page may have.",
        c"The resource limit of tocpile's models and decoders.",
    ),
    (
        &MAX_PARAMS,
        c"tocpile.max_params",
        "--max-params",
        c"Most parameters (weights and biases) a model trained here may have.",
        c"The resource limit of tocpile's models built for training.",
    ),
];

/// Registers the settings (at library load).
pub fn define_settings() {
    for (setting, name, _, short, long) in SETTINGS {
        GucRegistry::define_int_guc(
            name,
            short,
            long,
            setting,
            1,
            i32::MAX,
            GucContext::Userset,
            GucFlags::default(),
        );
    }
}

/// Applies the settings to the library's limits (before any decoding).
pub fn apply_limits() {
    let get = |s: &GucSetting<i32>| s.get().max(1) as u64;
    let mut limits = tocpile_lib::limits::limits();
    limits.max_page_nnz = get(&MAX_PAGE_NNZ);
    limits.max_decode_nnz = get(&MAX_DECODE_NNZ);
    limits.max_cols = get(&MAX_COLS);
    limits.max_params = get(&MAX_PARAMS);
    tocpile_lib::limits::set_limits(limits);
}

/// How to raise the limit whose library error says `raise` (the
/// command-line option and the library call): the setting, as SQL.
pub fn setting_for_limit(raise: &str) -> String {
    SETTINGS
        .iter()
        .find(|(_, _, option, ..)| {
            raise
                .split(|c: char| c.is_whitespace() || c == ',')
                .any(|word| word == *option)
        })
        .map_or_else(
            || "the settings tocpile.max_page_nnz, tocpile.max_decode_nnz, tocpile.max_cols and tocpile.max_params".into(),
            |(_, name, ..)| format!("SET {} = N", name.to_string_lossy()),
        )
}

/// Checks that the current user may read all of `rel` through a direct
/// heap scan.
pub fn check_readable(rel: &PgRelation) -> Result<()> {
    let relid = rel.oid();
    let name = rel.name().to_string();
    // SAFETY: plain catalog lookups on an open relation.
    unsafe {
        let acl = pg_sys::pg_class_aclcheck(relid, pg_sys::GetUserId(), pg_sys::ACL_SELECT as _);
        if acl != pg_sys::AclResult::ACLCHECK_OK {
            return Err(Failure::privilege(format!(
                "permission denied for table {name}"
            )));
        }
        if pg_sys::check_enable_rls(relid, pg_sys::InvalidOid, true) as u32
            == pg_sys::CheckEnableRlsResult::RLS_ENABLED
        {
            return Err(Failure::privilege(format!(
                "table {name} has row-level security in force for this user: tocpile reads \
                 heap pages directly and cannot apply policies (train on a view's copy instead)"
            )));
        }
        let kind = (*rel.rd_rel).relkind as u8;
        if kind != pg_sys::RELKIND_RELATION && kind != pg_sys::RELKIND_MATVIEW {
            return Err(Failure::argument(format!(
                "{name} is not a table or materialized view with storage (partitioned \
                 tables, views and foreign tables cannot be read by blocks)"
            )));
        }
        // A query on an inheritance parent reads its children's rows too;
        // a heap scan reads the parent's own pages. Training on part of
        // what SELECT shows would differ by strategy (Shuffle Once's copy
        // is a query), so a parent is refused.
        let children = Spi::get_one_with_args::<i64>(
            "SELECT count(*) FROM pg_catalog.pg_inherits WHERE inhparent = $1",
            &[relid.into()],
        )
        .map_err(|e| Failure::argument(format!("table {name}: {e}")))?
        .unwrap_or(0);
        if children > 0 {
            return Err(Failure::argument(format!(
                "table {name} has {children} inheritance {}: a query on it reads their rows \
                 too, while tocpile reads a table's own heap pages, so it refuses a parent \
                 rather than train on part of its rows; use a copy of every row (CREATE TABLE \
                 ... AS SELECT * FROM {name}) or each child",
                if children == 1 { "child" } else { "children" }
            )));
        }
        let am = rel.rd_tableam;
        if am.is_null()
            || (*am).scan_set_tidrange.is_none()
            || (*am).scan_getnextslot_tidrange.is_none()
        {
            return Err(Failure::argument(format!(
                "the access method of table {name} has no TID range scans"
            )));
        }
    }
    Ok(())
}

/// The name of `relid` as SQL writes it (quoted and qualified as needed).
pub fn sql_name(relid: pg_sys::Oid) -> Result<String> {
    Spi::get_one_with_args::<String>("SELECT $1::regclass::text", &[relid.into()])
        .map_err(|e| Failure::argument(format!("relation {relid:?}: {e}")))?
        .ok_or_else(|| Failure::argument(format!("relation {relid:?} does not exist")))
}

//! What may be read, and the settings that bound what is allocated.
//!
//! The extension reads heaps below the executor, so it makes the checks
//! the executor would: SELECT privilege on the table, no row-level
//! security in force for the user (a direct heap scan cannot apply
//! policies, so such tables are refused), and a table whose access
//! method supports TID range scans (a NULL callback would crash the
//! backend).

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgRelation;
use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

use crate::failure::{Failure, Result};

/// `tocpile.max_page_nnz`: the library's ceiling on the non-zeros one
/// page may decode to.
pub static MAX_PAGE_NNZ: GucSetting<i32> =
    GucSetting::<i32>::new(tocpile_lib::limits::DEFAULT_MAX_PAGE_NNZ as i32);
/// `tocpile.max_cols`: the library's ceiling on the columns a model or a
/// page may have.
pub static MAX_COLS: GucSetting<i32> =
    GucSetting::<i32>::new(tocpile_lib::limits::DEFAULT_MAX_COLS as i32);

/// Registers the settings (at library load).
pub fn define_settings() {
    GucRegistry::define_int_guc(
        c"tocpile.max_page_nnz",
        c"Most non-zeros one stored page may decode to.",
        c"The resource limit of tocpile's page decoders: a page claiming more is an error.",
        &MAX_PAGE_NNZ,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"tocpile.max_cols",
        c"Most columns a model or a stored page may have.",
        c"The resource limit of tocpile's models and decoders.",
        &MAX_COLS,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// Applies the settings to the library's limits (before any decoding).
pub fn apply_limits() {
    // The limits without a setting of their own keep the library's.
    let current = tocpile_lib::limits::limits();
    tocpile_lib::limits::set_limits(tocpile_lib::limits::Limits {
        max_page_nnz: MAX_PAGE_NNZ.get().max(1) as u64,
        max_cols: MAX_COLS.get().max(1) as u64,
        ..current
    });
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

//! `tocpile.load_libsvm`: a LIBSVM file on the server (plain or gzip, as
//! `tocpile encode` reads it, through the library's reader) loaded into a
//! new table `(label float8, features float8[])`, rows in file order,
//! each row's features dense. What the table then trains on is what the
//! command line trains on from the same file.
//!
//! Reading a server file is what `COPY ... FROM 'file'` allows superusers
//! and members of `pg_read_server_files` only; this function checks the
//! same. The file is read in chunks of [`CHUNK_ROWS`] rows (the memory
//! held is a chunk's, whatever the file's size), each row stored by a
//! direct heap insert; it is one transaction, so an error (a bad line,
//! named by the library's reader with its line and column) leaves
//! nothing behind.

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgMemoryContexts;
use pgrx::PgRelation;
use serde_json::json;
use tocpile_lib::ingest::libsvm::{LibsvmOptions, LibsvmReader};

use crate::failure::{Context, Failure, Result};

/// Rows read and stored at a time.
pub const CHUNK_ROWS: usize = 10_000;

/// Loads the LIBSVM file `path` (on the server) into the new table
/// `target` (a name as SQL writes it, optionally qualified) of
/// `n_cols` feature columns (`None`: the largest index in the file, which
/// reads it twice); returns a summary.
pub fn load_libsvm(path: &str, target: &str, n_cols: Option<usize>) -> Result<serde_json::Value> {
    // SAFETY: a catalog lookup of the current user's roles.
    let allowed = unsafe {
        pg_sys::has_privs_of_role(
            pg_sys::GetUserId(),
            pg_sys::Oid::from(pg_sys::ROLE_PG_READ_SERVER_FILES),
        )
    };
    if !allowed {
        return Err(Failure::privilege(format!(
            "tocpile.load_libsvm reads a file on the server ({path}): only superusers and \
             members of pg_read_server_files may (as for COPY FROM a file); a client can \
             load a CSV of the rows with \\copy instead"
        )));
    }
    crate::threads::start_pool();
    let options = LibsvmOptions::default().with_n_cols(n_cols);
    let mut reader = LibsvmReader::open(path, options).context(|| "tocpile.load_libsvm".into())?;
    let n_cols = reader.n_cols();
    tocpile_lib::limits::check_cols(n_cols, "feature columns of a loaded table")
        .context(|| format!("loading {path}"))?;
    let spi = |e: pgrx::spi::SpiError| Failure::argument(format!("creating {target}: {e}"));
    let quoted = Spi::get_one_with_args::<String>(
        "SELECT string_agg(quote_ident(part), '.') FROM unnest(parse_ident($1)) AS part",
        &[target.into()],
    )
    .map_err(spi)?
    .ok_or_else(|| Failure::argument(format!("\"{target}\" is not a table name")))?;
    Spi::run(&format!(
        "CREATE TABLE {quoted} (label float8 NOT NULL, features float8[] NOT NULL)"
    ))
    .map_err(spi)?;
    let oid = Spi::get_one::<pg_sys::Oid>(&format!(
        "SELECT {}::regclass::oid",
        pgrx::spi::quote_literal(&quoted)
    ))
    .map_err(spi)?
    .ok_or_else(|| Failure::argument(format!("{target} vanished")))?;
    // SAFETY: the table was created above by this transaction; it is
    // opened, filled and closed here.
    let rel = unsafe { PgRelation::with_lock(oid, pg_sys::RowExclusiveLock as _) };
    let mut memory = PgMemoryContexts::new("tocpile load");
    let mut dense = vec![0.0f64; n_cols];
    let mut rows = 0u64;
    while let Some(chunk) = reader
        .next_chunk(CHUNK_ROWS)
        .context(|| "tocpile.load_libsvm".into())?
    {
        check_for_interrupts!();
        for (i, (cols, values)) in chunk.batch.rows().enumerate() {
            dense.fill(0.0);
            for (&c, &v) in cols.iter().zip(values) {
                dense[c as usize] = v;
            }
            let label = chunk.labels[i];
            let r = rel.as_ptr();
            // SAFETY: the relation is open with RowExclusiveLock; the
            // tuple and its values live in our context, reset per row.
            unsafe {
                memory.reset();
                memory.switch_to(|_| {
                    let mut values = [
                        label.into_datum().expect("a float8"),
                        dense.as_slice().into_datum().expect("a float8[]"),
                    ];
                    let mut nulls = [false; 2];
                    let tuple = pg_sys::heap_form_tuple(
                        (*r).rd_att,
                        values.as_mut_ptr(),
                        nulls.as_mut_ptr(),
                    );
                    pg_sys::simple_heap_insert(r, tuple);
                });
            }
            rows += 1;
        }
    }
    drop(rel);
    Ok(json!({"table": quoted, "file": path, "rows": rows, "columns": n_cols}))
}

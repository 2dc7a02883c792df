//! The extension's tests, run inside a real PostgreSQL by `cargo pgrx
//! test` (each `#[pg_test]` in a transaction that is rolled back), and
//! the helpers they share: synthetic tables, a way to catch an ERROR (in
//! a subtransaction, as a client would see it), and an independent
//! reference of the epoch loop.

mod cancel;
mod cli;
mod corrupt;
mod inputs;
mod reference;
mod security;
mod train;

use pgrx::prelude::*;
use tocpile_lib::rng::Rng;

/// Runs `sql`; returns `None` if it succeeded, else `SQLSTATE: message`
/// of the ERROR it raised (caught in a subtransaction, so the test's
/// transaction goes on). A crashed backend fails the test.
pub fn error_of(sql: &str) -> Option<String> {
    // Made once per session (by whichever role runs first: any role may
    // call it, only its maker could replace it).
    Spi::run(
        "DO $$ BEGIN IF to_regprocedure('pg_temp.error_of(text)') IS NULL THEN \
         CREATE FUNCTION pg_temp.error_of(q text) RETURNS text AS $f$ \
         BEGIN EXECUTE q; RETURN NULL; \
         EXCEPTION WHEN OTHERS OR query_canceled THEN RETURN SQLSTATE || ': ' || SQLERRM; END $f$ \
         LANGUAGE plpgsql; END IF; END $$",
    )
    .expect("the helper");
    Spi::get_one_with_args::<String>("SELECT pg_temp.error_of($1)", &[sql.into()])
        .expect("the helper runs")
}

/// `sql` must fail with an error whose text contains `needle`.
pub fn assert_error(sql: &str, needle: &str) {
    match error_of(sql) {
        None => panic!("no error from {sql}"),
        Some(e) => assert!(e.contains(needle), "{sql}: error {e:?} lacks {needle:?}"),
    }
}

/// Synthetic rows: `n` rows of 3 features in [-1, 1] and the label
/// `x1 + 0.5 x2 - x3 > 0.1` (1 or 0), some features zero (sparse),
/// optionally sorted by label (the clustered order).
pub fn rows(n: usize, seed: u64, sorted: bool) -> Vec<([f64; 3], f64)> {
    noisy_rows(n, seed, sorted, 0.0, 0.1)
}

/// [`rows`] whose labels are `x1 + 0.5 x2 - x3 + noise > threshold`, the
/// noise uniform in `[-noise, noise]`: with much noise and a high
/// threshold, classes that overlap and a majority class, as in census
/// data, where the order of the rows decides where SGD ends.
pub fn noisy_rows(
    n: usize,
    seed: u64,
    sorted: bool,
    noise: f64,
    threshold: f64,
) -> Vec<([f64; 3], f64)> {
    let mut rng = Rng::new(seed);
    let mut rows: Vec<([f64; 3], f64)> = (0..n)
        .map(|_| {
            let mut x = [0.0; 3];
            for v in &mut x {
                let u = rng.unit();
                // A fifth of the values are zero; the rest two decimals.
                *v = if u < 0.2 {
                    0.0
                } else {
                    ((2.0 * rng.unit() - 1.0) * 100.0).round() / 100.0
                };
            }
            let e = noise * (2.0 * rng.unit() - 1.0);
            let y = f64::from(x[0] + 0.5 * x[1] - x[2] + e > threshold);
            (x, y)
        })
        .collect();
    if sorted {
        rows.sort_by(|a, b| a.1.total_cmp(&b.1));
    }
    rows
}

/// Creates table `name (x1 float8, x2 float8, x3 float8, label float8)`
/// holding `rows` in order (a fresh heap keeps insertion order).
pub fn table(name: &str, rows: &[([f64; 3], f64)]) {
    Spi::run(&format!(
        "CREATE TABLE {name} (x1 float8, x2 float8, x3 float8, label float8)"
    ))
    .unwrap();
    insert(name, rows);
}

/// Inserts `rows` into a table of columns x1, x2, x3, label.
pub fn insert(name: &str, rows: &[([f64; 3], f64)]) {
    for chunk in rows.chunks(1000) {
        let values: Vec<String> = chunk
            .iter()
            .map(|(x, y)| format!("({},{},{},{})", x[0], x[1], x[2], y))
            .collect();
        Spi::run(&format!(
            "INSERT INTO {name} (x1, x2, x3, label) VALUES {}",
            values.join(",")
        ))
        .unwrap();
    }
}

/// A jsonb figure of a query returning jsonb.
pub fn json_f64(sql: &str, key: &str) -> f64 {
    let v = Spi::get_one::<pgrx::JsonB>(sql)
        .unwrap()
        .expect("a jsonb")
        .0;
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

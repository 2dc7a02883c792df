//! A page table's metadata has the page table's privileges: two roles
//! in one database, the owner and one with no privilege on anything,
//! who must neither read nor change it (tocpile 0.1.0 kept it in a
//! table every role could read and rewrite: its scaling factors leak
//! each column's largest absolute value, and rewriting them made the
//! owner's next model useless). And the upgrade from 0.1.0 moves that
//! table's rows into the page tables.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{assert_error, error_of, json_f64};

    /// Runs `sql` as `role` (in this transaction), then back.
    fn as_role(role: &str, sql: &str) -> Option<String> {
        Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
        let result = error_of(sql);
        Spi::run("RESET ROLE").unwrap();
        result
    }

    fn alice_model_accuracy() -> f64 {
        Spi::run("SET LOCAL ROLE tocpile_alice").unwrap();
        let accuracy = json_f64(
            "SELECT tocpile.evaluate(tocpile.train('demo_toc', epochs => 3, seed => 1), 'demo_toc')",
            "accuracy",
        );
        Spi::run("RESET ROLE").unwrap();
        accuracy
    }

    #[pg_test]
    fn another_role_can_neither_read_nor_change_a_page_tables_metadata() {
        for role in ["tocpile_alice", "tocpile_bob", "tocpile_mallory"] {
            Spi::run(&format!("CREATE ROLE {role}")).unwrap();
        }
        Spi::run("GRANT USAGE, CREATE ON SCHEMA tests, public TO tocpile_alice, tocpile_bob")
            .unwrap();
        Spi::run("GRANT USAGE ON SCHEMA tests TO tocpile_mallory").unwrap();
        // The demo, as alice.
        Spi::run("SET LOCAL ROLE tocpile_alice").unwrap();
        Spi::run(
            "CREATE TABLE demo AS SELECT (sin(i) > 0.1)::int::float8 AS label, 100 * sin(i) AS c1, \
             cos(i) AS c2 FROM generate_series(1, 20000) i",
        )
        .unwrap();
        Spi::run("SELECT tocpile.encode_table('demo', 'label', NULL, 'demo_toc')").unwrap();
        Spi::run("RESET ROLE").unwrap();
        let before = alice_model_accuracy();
        assert!(before > 0.95, "{before}");

        // Mallory: no shared table to read or rewrite (the attack)...
        assert_error(
            "SELECT * FROM tocpile.toc_tables",
            "relation \"tocpile.toc_tables\" does not exist",
        );
        let attack = "WITH o AS (DELETE FROM tocpile.toc_tables WHERE source = 'demo' RETURNING *) \
                      INSERT INTO tocpile.toc_tables SELECT relid, source, label, features, n_cols, \
                      n_rows, n_pages, page_rows, format, scale, ARRAY[1e-6, 1e6], stored_bytes, \
                      created FROM o";
        assert!(as_role("tocpile_mallory", attack).is_some());
        // ...and the metadata row is the page table's: not readable,
        // not writable, not through the extension either.
        for sql in [
            "SELECT page FROM demo_toc WHERE page_no = -1",
            "SELECT tocpile.page_table_info('demo_toc')",
            "SELECT tocpile.train('demo_toc')",
            "UPDATE demo_toc SET page = convert_to('{}', 'UTF8') WHERE page_no = -1",
            "DELETE FROM demo_toc WHERE page_no = -1",
            "INSERT INTO demo_toc VALUES (-1, '', '')",
        ] {
            let e = as_role("tocpile_mallory", sql).unwrap_or_else(|| panic!("{sql} succeeded"));
            assert!(e.starts_with("42501"), "{sql}: {e}");
        }
        // Nor can mallory make bob's ordinary table look like a page
        // table, or hand bob forged metadata: there is nothing shared to
        // insert into, and bob's table is bob's.
        Spi::run("SET LOCAL ROLE tocpile_bob").unwrap();
        Spi::run("CREATE TABLE plain AS SELECT label, c1, c2 FROM (SELECT (i % 2)::float8 AS label, i::float8 AS c1, (i % 7)::float8 AS c2 FROM generate_series(1, 2000) i) t").unwrap();
        Spi::run("RESET ROLE").unwrap();
        for sql in [
            "INSERT INTO tocpile.toc_tables (relid) VALUES ('plain'::regclass)",
            "INSERT INTO plain VALUES (1, 2, 3)",
            "ALTER TABLE plain ADD COLUMN page_no bigint",
            "COMMENT ON TABLE plain IS 'tocpile page table'",
        ] {
            assert!(as_role("tocpile_mallory", sql).is_some(), "{sql} succeeded");
        }
        assert_eq!(
            as_role(
                "tocpile_bob",
                "SELECT tocpile.train('plain', 'label', epochs => 1)"
            ),
            None
        );
        // Alice's next training is what it was.
        assert_eq!(alice_model_accuracy(), before);

        // A role alice grants SELECT may read the metadata and train.
        Spi::run("SET LOCAL ROLE tocpile_alice").unwrap();
        Spi::run("GRANT SELECT ON demo_toc TO tocpile_bob").unwrap();
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(
            as_role(
                "tocpile_bob",
                "SELECT tocpile.train('demo_toc', epochs => 1)"
            ),
            None
        );
        assert_eq!(
            as_role("tocpile_bob", "SELECT tocpile.page_table_info('demo_toc')"),
            None
        );
        // Bob may read, not write.
        assert!(as_role(
            "tocpile_bob",
            "UPDATE demo_toc SET page = '' WHERE page_no = -1"
        )
        .is_some_and(|e| e.starts_with("42501")));

        // Dropping the page table leaves nothing behind: the extension
        // owns no table at all.
        Spi::run("SET LOCAL ROLE tocpile_alice").unwrap();
        Spi::run("DROP TABLE demo_toc").unwrap();
        Spi::run("RESET ROLE").unwrap();
        let tables = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_depend d JOIN pg_class c ON c.oid = d.objid \
             WHERE d.refclassid = 'pg_extension'::regclass AND d.classid = 'pg_class'::regclass \
             AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'tocpile')",
        )
        .unwrap();
        assert_eq!(tables, Some(0));
    }

    /// The upgrade script from 0.1.0 (`sql/tocpile--0.1.0--0.2.0.sql`):
    /// its migration, run on 0.1.0's layout (`tocpile.toc_tables`, page
    /// tables without metadata rows), gives each page table its row and
    /// drops the shared table; the page table trains as a new one.
    #[pg_test]
    fn the_upgrade_from_0_1_0_moves_the_metadata_into_the_page_tables() {
        crate::tests::table("up_src", &crate::tests::rows(3000, 2, true));
        Spi::run("SELECT tocpile.encode_table('up_src', 'label', NULL, 'up_toc', page_rows => 30)")
            .unwrap();
        let model = "SELECT tocpile.model_bytes(tocpile.train('up_toc', epochs => 2, seed => 3))";
        let expected = Spi::get_one::<Vec<u8>>(model).unwrap();
        // 0.1.0's layout: the shared table, as 0.1.0 made it, holding the
        // page table's row; the page table without its own.
        Spi::run(
            "CREATE TABLE tocpile.toc_tables (relid regclass PRIMARY KEY, source text NOT NULL, \
             label text NOT NULL, features text[] NOT NULL, n_cols integer NOT NULL, \
             n_rows bigint NOT NULL, n_pages bigint NOT NULL, page_rows integer NOT NULL, \
             format text NOT NULL, scale text NOT NULL, factors double precision[], \
             stored_bytes bigint NOT NULL, created timestamptz NOT NULL DEFAULT now())",
        )
        .unwrap();
        Spi::run(
            "INSERT INTO tocpile.toc_tables SELECT 'up_toc'::regclass, i->>'source', i->>'label', \
             ARRAY(SELECT jsonb_array_elements_text(i->'features')), (i->>'n_cols')::int, \
             (i->>'n_rows')::int8, (i->>'n_pages')::int8, (i->>'page_rows')::int, i->>'format', \
             i->>'scale', ARRAY(SELECT jsonb_array_elements(i->'factors')::float8), \
             (i->>'stored_bytes')::int8, (i->>'created')::timestamptz \
             FROM tocpile.page_table_info('up_toc') i",
        )
        .unwrap();
        // A row of a table dropped since (0.1.0 left those behind).
        Spi::run("CREATE TABLE gone (page_no bigint, labels bytea, page bytea)").unwrap();
        Spi::run(
            "INSERT INTO tocpile.toc_tables (relid, source, label, features, n_cols, n_rows, \
             n_pages, page_rows, format, scale, stored_bytes) \
             VALUES ('gone', 's', 'l', '{}', 3, 0, 0, 50, 'TOC_FULL', 'none', 0)",
        )
        .unwrap();
        Spi::run("DROP TABLE gone").unwrap();
        Spi::run("DELETE FROM up_toc WHERE page_no = -1").unwrap();
        assert_error(model, "no metadata row");

        let script = include_str!("../../sql/tocpile--0.1.0--0.2.0.sql");
        let start = script
            .find("-- Migration: begin")
            .expect("the migration's begin marker");
        let end = script
            .find("-- Migration: end")
            .expect("the migration's end marker");
        Spi::run(&script[start..end]).unwrap();

        assert_eq!(Spi::get_one::<Vec<u8>>(model).unwrap(), expected);
        assert_eq!(
            Spi::get_one::<bool>("SELECT to_regclass('tocpile.toc_tables') IS NULL").unwrap(),
            Some(true)
        );
    }
}

//! Odd inputs: inheritance parents (one meaning for every strategy: a
//! refusal), tables without rows, labels a binary model cannot tell
//! apart, NULL arguments, limits; and loading a LIBSVM file.

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;

    use crate::tests::{assert_error, error_of, insert, rows, table};

    fn report() -> serde_json::Value {
        Spi::get_one::<pgrx::JsonB>("SELECT tocpile.last_train_report()")
            .unwrap()
            .unwrap()
            .0
    }

    #[pg_test]
    fn an_inheritance_parent_is_refused_by_every_strategy_and_function() {
        table("parent", &rows(1_000, 1, false));
        Spi::run("CREATE TABLE child () INHERITS (parent)").unwrap();
        insert("child", &rows(19_000, 2, false));
        let every_row = Spi::get_one::<i64>("SELECT count(*) FROM parent").unwrap();
        assert_eq!(every_row, Some(20_000));
        for sql in [
            "tocpile.train('parent', 'label')",
            "tocpile.train('parent', 'label', shuffle => 'none')",
            "tocpile.train('parent', 'label', shuffle => 'once')",
            "tocpile.train('parent', 'label', double_buffer => false)",
            "tocpile.evaluate(tocpile.train('child', 'label', epochs => 1), 'parent', 'label')",
            "tocpile.encode_table('parent', 'label', NULL, 'parent_toc')",
            "tocpile.scan_blocks('parent')",
        ] {
            assert_error(
                &format!("SELECT {sql}"),
                "table parent has 1 inheritance child: a query on it reads their rows too",
            );
        }
        // A child without children of its own is a table like any other,
        // and so is the parent once it has none.
        assert_eq!(
            error_of("SELECT tocpile.train('child', 'label', epochs => 1)"),
            None
        );
        Spi::run("DROP TABLE child").unwrap();
        assert_eq!(
            error_of("SELECT tocpile.train('parent', 'label', shuffle => 'once', epochs => 1)"),
            None
        );
        assert_eq!(report()["epochs"][0]["rows"], 1_000);
    }

    #[pg_test]
    fn tables_without_rows_are_errors_to_train_on_and_have_no_figures() {
        Spi::run("CREATE TABLE nothing (x1 float8, x2 float8, label float8)").unwrap();
        Spi::run("SELECT tocpile.encode_table('nothing', 'label', NULL, 'nothing_toc')").unwrap();
        for sql in [
            "tocpile.train('nothing', 'label')",
            "tocpile.train('nothing', 'label', scale => 'none')",
            "tocpile.train('nothing', 'label', scale => 'none', shuffle => 'none')",
            "tocpile.train('nothing', 'label', model => 'softmax', classes => 3, scale => 'none')",
            "tocpile.train('nothing_toc')",
            "tocpile.train('nothing_toc', scale => 'none')",
        ] {
            assert_error(&format!("SELECT {sql}"), "has no rows to train on");
        }
        // Shuffle Once's error names the table, not its temporary copy.
        let once = error_of("SELECT tocpile.train('nothing', 'label', shuffle => 'once')").unwrap();
        assert!(once.contains("table nothing has no rows"), "{once}");
        assert!(!once.contains("tocpile_once"), "{once}");
        // Figures of no rows are NULL, not 0.
        table("few", &rows(500, 3, false));
        Spi::run("ALTER TABLE few DROP COLUMN x3").unwrap();
        for relation in ["'nothing', 'label'", "'nothing_toc'"] {
            let figures = Spi::get_one::<pgrx::JsonB>(&format!(
                "SELECT tocpile.evaluate(tocpile.train('few', 'label', epochs => 1), {relation})"
            ))
            .unwrap()
            .unwrap()
            .0;
            assert_eq!(figures["rows"], 0, "{figures}");
            for key in ["loss", "accuracy", "auc"] {
                assert!(figures[key].is_null(), "{key} of no rows: {figures}");
            }
        }
    }

    #[pg_test]
    fn a_binary_model_meeting_three_labels_warns_and_two_other_labels_are_its_classes() {
        Spi::run(
            "CREATE TABLE three AS SELECT i::float8 AS x, (i % 3)::float8 AS label \
             FROM generate_series(1, 900) i",
        )
        .unwrap();
        for model in ["lr", "svm"] {
            assert_eq!(
                error_of(&format!(
                    "SELECT tocpile.train('three', 'label', model => '{model}', epochs => 1)"
                )),
                None
            );
            let warnings = report()["warnings"].to_string();
            assert!(
                warnings.contains("more than two distinct labels (1, 2, 0, ...)")
                    && warnings.contains(&format!("{model} is a binary model")),
                "{warnings}"
            );
        }
        Spi::run("SELECT tocpile.train('three', 'label', model => 'softmax', epochs => 1)")
            .unwrap();
        assert_eq!(report()["warnings"], serde_json::json!([]));
        Spi::run("UPDATE three SET label = label + 0.5").unwrap();
        Spi::run("SELECT tocpile.train('three', 'label', epochs => 1)").unwrap();
        assert!(report()["warnings"]
            .to_string()
            .contains("model => 'linreg'"));
        // Two labels other than 0 and 1 are the model's two classes (the
        // command line's rule): 1 and 2 do not all count as positive.
        Spi::run("DELETE FROM three WHERE label > 2").unwrap();
        Spi::run("UPDATE three SET label = CASE WHEN x > 450 THEN 2 ELSE 1 END").unwrap();
        let accuracy = crate::tests::json_f64(
            "SELECT tocpile.evaluate(tocpile.train('three', 'label', epochs => 20, batch_size => 20), \
             'three', 'label')",
            "accuracy",
        );
        assert!(accuracy > 0.9, "{accuracy}");
        assert_eq!(report()["warnings"], serde_json::json!([]));
    }

    #[pg_test]
    fn a_null_argument_is_an_error_naming_it() {
        table("t", &rows(100, 1, false));
        let m = "tocpile.train('t', 'label', epochs => 1)";
        for (sql, name) in [
            (
                "tocpile.train(NULL)".to_string(),
                "tocpile.train: argument relation",
            ),
            (
                "tocpile.train(NULL, 'label')".into(),
                "tocpile.train: argument relation",
            ),
            (
                "tocpile.train('t', 'label', epochs => NULL)".into(),
                "argument epochs",
            ),
            (
                "tocpile.train('t', 'label', model => NULL)".into(),
                "argument model",
            ),
            (
                "tocpile.train('t', 'label', seed => NULL)".into(),
                "argument seed",
            ),
            (
                "tocpile.train('t', 'label', 'x1', double_buffer => NULL)".into(),
                "argument double_buffer",
            ),
            (
                "tocpile.evaluate(NULL, 't', 'label')".to_string(),
                "tocpile.evaluate: argument model",
            ),
            (
                format!("tocpile.evaluate({m}, NULL, 'label')"),
                "argument relation",
            ),
            (
                "tocpile.encode_table(NULL, 'label', NULL, 'x')".into(),
                "argument source",
            ),
            (
                "tocpile.encode_table('t', NULL, NULL, 'x')".into(),
                "argument label",
            ),
            (
                "tocpile.encode_table('t', 'label', NULL, NULL)".into(),
                "argument target",
            ),
            (
                "tocpile.encode_table('t', 'label', NULL, 'x', page_rows => NULL)".into(),
                "argument page_rows",
            ),
            (
                "tocpile.scan_blocks(NULL)".into(),
                "tocpile.scan_blocks: argument relation",
            ),
            ("tocpile.page_table_info(NULL)".into(), "argument relation"),
            (
                "tocpile.load_libsvm(NULL, 'x')".into(),
                "tocpile.load_libsvm: argument path",
            ),
        ] {
            let e = error_of(&format!("SELECT {sql}")).unwrap_or_else(|| panic!("{sql} ran"));
            assert!(
                e.starts_with("22004") && e.contains(&format!("{name} must not be NULL")),
                "{sql}: {e}"
            );
        }
        // One row's functions are strict: NULL in, NULL out.
        let null = Spi::get_one::<f64>("SELECT tocpile.predict(NULL, ARRAY[1, 2, 3]::float8[])");
        assert_eq!(null.unwrap(), None);
    }

    #[pg_test]
    fn a_limit_names_its_own_setting() {
        table("wide", &rows(300, 1, false));
        for (set, sql, setting) in [
            (
                "max_params = 100",
                "tocpile.train('wide', 'label', model => 'mlp')",
                "max_params",
            ),
            ("max_cols = 2", "tocpile.train('wide', 'label')", "max_cols"),
        ] {
            Spi::run(&format!("SET LOCAL tocpile.{set}")).unwrap();
            let e = error_of(&format!("SELECT {sql}")).unwrap();
            assert!(
                e.starts_with("54000")
                    && e.contains(&format!("raise the limit with SET tocpile.{setting} = N")),
                "{e}"
            );
            assert!(!e.contains("--max"), "{e}");
            Spi::run(&format!("RESET tocpile.{}", setting)).unwrap();
        }
        Spi::run("SELECT tocpile.encode_table('wide', 'label', NULL, 'wide_toc')").unwrap();
        Spi::run("SET LOCAL tocpile.max_page_nnz = 10").unwrap();
        let e = error_of("SELECT tocpile.train('wide_toc')").unwrap();
        assert!(
            e.contains("SET tocpile.max_page_nnz = N") && !e.contains("--max"),
            "{e}"
        );
    }

    #[pg_test]
    fn a_libsvm_file_loads_into_a_table_that_trains() {
        let path =
            std::env::temp_dir().join(format!("tocpile-pg-load-{}.libsvm", std::process::id()));
        let data = rows(1_200, 4, false);
        let mut text = String::from("# a comment line\n");
        for (x, y) in &data {
            text.push_str(&format!("{y}"));
            for (j, v) in x.iter().enumerate() {
                if *v != 0.0 {
                    text.push_str(&format!(" {}:{v}", j + 1));
                }
            }
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let path_sql = pgrx::spi::quote_literal(path.display().to_string());
        let summary = Spi::get_one::<pgrx::JsonB>(&format!(
            "SELECT tocpile.load_libsvm({path_sql}, 'loaded')"
        ))
        .unwrap()
        .unwrap()
        .0;
        assert_eq!(
            (summary["rows"].clone(), summary["columns"].clone()),
            (1_200.into(), 3.into())
        );
        // The rows in file order, dense.
        let first =
            Spi::get_two::<f64, Vec<f64>>("SELECT label, features FROM loaded LIMIT 1").unwrap();
        assert_eq!(first.0, Some(data[0].1));
        assert_eq!(first.1, Some(data[0].0.to_vec()));
        // It trains as the same rows in columns do (No Shuffle: the same
        // rows in the same order, whatever the heap pages).
        table("same", &data);
        let model = |relation: &str| {
            Spi::get_one::<Vec<u8>>(&format!(
                "SELECT tocpile.model_bytes(tocpile.train({relation}, 'label', shuffle => 'none', epochs => 2))"
            ))
            .unwrap()
            .unwrap()
        };
        assert!(model("'loaded'") == model("'same'"));
        // More columns asked for: zeros; fewer than an index: an error
        // naming the line, and no table.
        Spi::run(&format!(
            "SELECT tocpile.load_libsvm({path_sql}, 'wider', n_cols => 5)"
        ))
        .unwrap();
        let width =
            Spi::get_one::<i32>("SELECT array_length(features, 1) FROM wider LIMIT 1").unwrap();
        assert_eq!(width, Some(5));
        let e = error_of(&format!(
            "SELECT tocpile.load_libsvm({path_sql}, 'narrow', n_cols => 2)"
        ))
        .unwrap();
        assert!(e.contains(":2:") || e.contains("line"), "{e}");
        assert_eq!(
            Spi::get_one::<bool>("SELECT to_regclass('narrow') IS NULL").unwrap(),
            Some(true)
        );
        std::fs::write(&path, "1 1:0.5\n0 2:x\n").unwrap();
        let e = error_of(&format!("SELECT tocpile.load_libsvm({path_sql}, 'bad')")).unwrap();
        assert!(e.contains(&format!("{}:2:", path.display())), "{e}");
        // Reading a server file is a superuser's, or pg_read_server_files'.
        Spi::run("CREATE ROLE tocpile_loader").unwrap();
        Spi::run("GRANT USAGE, CREATE ON SCHEMA tests, public TO tocpile_loader").unwrap();
        Spi::run("SET LOCAL ROLE tocpile_loader").unwrap();
        let e = error_of(&format!("SELECT tocpile.load_libsvm({path_sql}, 'mine')")).unwrap();
        Spi::run("RESET ROLE").unwrap();
        assert!(
            e.starts_with("42501") && e.contains("pg_read_server_files"),
            "{e}"
        );
        std::fs::remove_file(&path).ok();
    }
}

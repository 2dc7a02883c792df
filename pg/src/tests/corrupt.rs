//! Hostile bytes: corrupted pages, labels, metadata and models must each
//! be an ERROR (caught here in a subtransaction), never a crashed backend
//! (which would fail the test's connection).

#[pgrx::pg_schema]
mod tests {
    use pgrx::prelude::*;
    use tocpile_lib::formats::FormatKind;
    use tocpile_lib::model::{Model, ModelKind};
    use tocpile_lib::rng::Rng;
    use tocpile_lib::SparseBatch;

    use crate::tests::{assert_error, error_of, rows, table};

    /// A page table `c_toc` of 600 rows in 50-row pages.
    fn page_table() {
        table("c_src", &rows(600, 3, false));
        Spi::run("SELECT tocpile.encode_table('c_src', 'label', NULL, 'c_toc')").unwrap();
    }

    fn column(page_no: i64, column: &str) -> Vec<u8> {
        Spi::get_one::<Vec<u8>>(&format!(
            "SELECT {column} FROM c_toc WHERE page_no = {page_no}"
        ))
        .unwrap()
        .unwrap()
    }

    fn set(page_no: i64, column: &str, bytes: &[u8]) {
        Spi::run_with_args(
            &format!("UPDATE c_toc SET {column} = $1 WHERE page_no = {page_no}"),
            &[bytes.into()],
        )
        .unwrap();
    }

    const TRAIN: &str = "SELECT tocpile.train('c_toc', epochs => 1)";
    const EVALUATE: &str =
        "SELECT tocpile.evaluate(tocpile.train('c_src', 'label', epochs => 1), 'c_toc')";

    #[pg_test]
    fn truncated_and_foreign_pages_are_errors_naming_the_page() {
        page_table();
        assert_eq!(error_of(TRAIN), None);
        let page = column(3, "page");
        for cut in [0, 1, page.len() / 2, page.len() - 1] {
            set(3, "page", &page[..cut]);
            assert_error(TRAIN, "page at (");
            assert_error(EVALUATE, "page at (");
        }
        // A valid page of another width.
        let wide = SparseBatch::from_dense_rows(5, &[[1.0; 5]; 50]).unwrap();
        let mut bytes = Vec::new();
        FormatKind::TocFull
            .encode(&wide)
            .unwrap()
            .write_bytes(&mut bytes);
        set(3, "page", &bytes);
        assert_error(TRAIN, "the page has 5 columns, the table's metadata 3");
        // Trailing bytes.
        let mut longer = page.clone();
        longer.extend_from_slice(&[0, 1, 2]);
        set(3, "page", &longer);
        assert_error(TRAIN, "page at (");
        set(3, "page", &page);
        // Labels of another count, and cut labels.
        let labels = column(3, "labels");
        set(3, "labels", &column(11, "labels")); // the last page: 50 rows too? 600 = 12 x 50
        assert_eq!(error_of(TRAIN), None);
        let short = crate::pages::encode_labels(&[1.0; 49]).unwrap();
        set(3, "labels", &short);
        assert_error(TRAIN, "labels");
        set(3, "labels", &labels[..labels.len() - 1]);
        assert_error(TRAIN, "labels");
        set(3, "labels", &labels);
        // A NULL page (its NOT NULL constraint dropped by the user).
        Spi::run("ALTER TABLE c_toc ALTER COLUMN page DROP NOT NULL").unwrap();
        Spi::run("UPDATE c_toc SET page = NULL WHERE page_no = 5").unwrap();
        assert_error(TRAIN, "page is NULL");
    }

    #[pg_test]
    fn random_mutations_of_pages_never_crash() {
        page_table();
        let model = Spi::get_one::<Vec<u8>>(
            "SELECT tocpile.model_bytes(tocpile.train('c_src', 'label', epochs => 1))",
        )
        .unwrap()
        .unwrap();
        let pages: Vec<Vec<u8>> = (0..12).map(|p| column(p, "page")).collect();
        let mut rng = Rng::new(2024);
        let mut errors = 0;
        for round in 0..120 {
            let p = rng.below(12) as usize;
            let mut bytes = pages[p].clone();
            match round % 3 {
                0 => {
                    // Flip a few bits.
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(bytes.len() as u64) as usize;
                        bytes[i] ^= 1 << rng.below(8);
                    }
                }
                1 => {
                    // Overwrite a byte with an extreme value.
                    let i = rng.below(bytes.len() as u64) as usize;
                    bytes[i] = [0x00, 0xff, 0x7f, 0x80][rng.below(4) as usize];
                }
                _ => {
                    // Splice a piece of another page in.
                    let other = &pages[rng.below(12) as usize];
                    let at = rng.below(bytes.len() as u64) as usize;
                    let len = (rng.below(16) as usize)
                        .min(other.len())
                        .min(bytes.len() - at);
                    bytes[at..at + len].copy_from_slice(&other[..len]);
                }
            }
            set(p as i64, "page", &bytes);
            let train = error_of(TRAIN);
            let evaluate = Spi::get_one_with_args::<String>(
                "SELECT pg_temp.error_of(format('SELECT tocpile.evaluate(%L::bytea::tocpile.model, ''c_toc'')', $1::bytea))",
                &[model.clone().into()],
            )
            .unwrap();
            errors += usize::from(train.is_some()) + usize::from(evaluate.is_some());
            for e in train.iter().chain(evaluate.iter()) {
                assert!(
                    e.starts_with("XX001") || e.starts_with("22") || e.starts_with("54"),
                    "{e}"
                );
            }
            set(p as i64, "page", &pages[p]);
        }
        assert!(
            errors > 40,
            "only {errors} of 240 reads of mutated pages failed"
        );
    }

    #[pg_test]
    fn corrupt_metadata_is_an_error() {
        page_table();
        let original = column(-1, "page");
        let set_key = |key: &str, value: &str| {
            Spi::run(&format!(
                "UPDATE c_toc SET page = convert_to(jsonb_set(convert_from(page, 'UTF8')::jsonb, \
                 '{{{key}}}', '{value}')::text, 'UTF8') WHERE page_no = -1"
            ))
            .unwrap();
        };
        let cases = [
            ("n_cols", "0", "n_cols 0"),
            ("n_cols", "1000000000", "tocpile.max_cols"),
            ("n_cols", "4", "factors for 4 columns"),
            ("n_cols", "\"3\"", "\"n_cols\" is not a count"),
            ("factors", "[1, -1, 1]", "scaling"),
            ("factors", "[1, \"NaN\", 1]", "scaling factor"),
            ("factors", "[1, null, 1]", "scaling factor"),
            ("factors", "null", "without factors"),
            ("factors", "{}", "not an array"),
            ("format", "\"pdf\"", "not a page format"),
            ("scale", "\"log\"", "not none, maxabs or standard"),
            ("format", "\"csr\"", "page at ("),
            ("features", "[1]", "feature name"),
            ("tocpile_page_table", "2", "no \"tocpile_page_table\": 1"),
        ];
        for (key, value, needle) in cases {
            set_key(key, value);
            assert_error(TRAIN, needle);
            set(-1, "page", &original);
        }
        assert_eq!(error_of(TRAIN), None);
        for bytes in [&b""[..], b"{", b"\xff\xfe", b"[]"] {
            set(-1, "page", bytes);
            assert_error(TRAIN, "metadata row");
        }
        set(-1, "page", &original);
        // No metadata row, two of them, a NULL one, a NULL page_no.
        Spi::run("UPDATE c_toc SET page_no = -2 WHERE page_no = -1").unwrap();
        assert_error(TRAIN, "no metadata row (page_no = -1)");
        Spi::run("UPDATE c_toc SET page_no = -1 WHERE page_no = -2").unwrap();
        Spi::run("INSERT INTO c_toc SELECT * FROM c_toc WHERE page_no = -1").unwrap();
        assert_error(TRAIN, "more than one metadata row");
        Spi::run("DELETE FROM c_toc WHERE page_no = -1 AND ctid <> (SELECT min(ctid) FROM c_toc WHERE page_no = -1)").unwrap();
        assert_eq!(error_of(TRAIN), None);
        Spi::run(
            "ALTER TABLE c_toc ALTER COLUMN page DROP NOT NULL, ALTER COLUMN page_no DROP NOT NULL",
        )
        .unwrap();
        Spi::run("UPDATE c_toc SET page = NULL WHERE page_no = -1").unwrap();
        assert_error(TRAIN, "has a NULL page");
        set(-1, "page", &original);
        Spi::run("UPDATE c_toc SET page_no = NULL WHERE page_no = 4").unwrap();
        assert_error(TRAIN, "page_no is NULL");
        // A table of a page table's columns that encode_table did not make.
        Spi::run("CREATE TABLE not_pages (page_no bigint, labels bytea, page bytea)").unwrap();
        assert_error("SELECT tocpile.train('not_pages')", "no metadata row");
    }

    #[pg_test]
    fn corrupt_models_are_errors() {
        let mut model = Model::new(ModelKind::Logistic, 3, 0).unwrap();
        model.set_params(&[0.5, -1.0, 2.0, 0.25]).unwrap();
        let bytes = model.to_bytes();
        let load = |b: &[u8]| {
            Spi::get_one_with_args::<String>(
                "SELECT pg_temp.error_of(format('SELECT tocpile.model_from_bytes(%L::bytea)', $1::bytea))",
                &[b.to_vec().into()],
            )
            .unwrap()
        };
        error_of("SELECT 1"); // creates the helper
        assert_eq!(load(&bytes), None);
        for cut in 0..bytes.len() {
            let e = load(&bytes[..cut]).unwrap_or_else(|| panic!("a model cut at {cut} loaded"));
            assert!(e.contains("not a valid tocpile model"), "{e}");
        }
        let mut rng = Rng::new(5);
        for _ in 0..50 {
            let mut b = bytes.clone();
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
            // Any flip breaks the checksum (or what it covers).
            assert!(load(&b).is_some());
        }
        assert_error(
            "SELECT tocpile.predict('\\x0102'::bytea::tocpile.model, ARRAY[1,2,3]::float8[])",
            "not a valid tocpile model",
        );
    }
}

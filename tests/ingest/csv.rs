//! CSV round trips: random numeric and categorical columns (values with
//! delimiters, quotes, line breaks and spaces, quoted when needed or at
//! random; missing numbers empty or as markers, with or without indicator
//! columns), plain or gzip, read back in random chunk sizes; schema
//! inference, the schema text form, and reading with a given schema.

use std::io::Cursor;

use proptest::prelude::*;

use super::{bits, read_all, TempFile};
use tocpile::ingest::csv::{Column, CsvOptions, CsvReader, Schema};
use tocpile::SparseBatch;

/// Category values: none looks like a number.
const LEVELS: &[&str] = &[
    "JFK",
    "a,b",
    "say \"hi\"",
    " padded ",
    "two\nlines",
    "",
    "x;y",
    "\u{e9}t\u{e9}",
    "1a",
];

/// Header names (the first is the label).
const NAMES: &[&str] = &[
    "label",
    "dep delay",
    "origin, city",
    "\"q\"",
    "n2",
    "c2",
    "n3",
    "c3",
];

/// How row `i` writes a missing number: empty or one of the default
/// markers (spaces around it are trimmed).
const MISSING: &[&str] = &["", "NA", " ? ", "NULL", "#N/A"];

fn number() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        1 => Just(None), // missing
        3 => (-5i64..6).prop_map(|i| Some(i as f64)),
        1 => Just(Some(-0.0)),
        3 => any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(Some),
    ]
}

#[derive(Debug, Clone)]
enum Field {
    Num(Option<f64>),
    Cat(usize),
}

/// A table: per source column (label first) whether it is categorical,
/// then rows of (label, fields).
fn table() -> impl Strategy<Value = (Vec<bool>, Vec<(f64, Vec<Field>)>)> {
    prop::collection::vec(any::<bool>(), 0..NAMES.len()).prop_flat_map(|kinds| {
        let fields: Vec<BoxedStrategy<Field>> = kinds
            .iter()
            .map(|&cat| {
                if cat {
                    (0..LEVELS.len()).prop_map(Field::Cat).boxed()
                } else {
                    number().prop_map(Field::Num).boxed()
                }
            })
            .collect();
        let label = (-3i64..3).prop_map(|i| i as f64 / 2.0);
        (Just(kinds), prop::collection::vec((label, fields), 0..40))
    })
}

fn quote(field: &str, always: bool) -> String {
    if always || field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// The CSV text: the label goes to column `label_at` of the file.
fn write_csv(kinds: &[bool], rows: &[(f64, Vec<Field>)], label_at: usize, crlf: bool) -> String {
    let end = if crlf { "\r\n" } else { "\n" };
    let mut names: Vec<String> = NAMES[1..=kinds.len()]
        .iter()
        .map(|n| quote(n, false))
        .collect();
    names.insert(label_at, "label".to_string());
    let mut text = names.join(",") + end;
    for (i, (label, fields)) in rows.iter().enumerate() {
        let mut cells: Vec<String> = fields
            .iter()
            .map(|f| match f {
                Field::Num(None) => MISSING[i % MISSING.len()].to_string(),
                Field::Num(Some(v)) if i % 3 == 0 => format!(" {v:?}"),
                Field::Num(Some(v)) => quote(&format!("{v:?}"), i % 5 == 1),
                Field::Cat(l) => quote(LEVELS[*l], i % 4 == 2),
            })
            .collect();
        cells.insert(label_at, format!("{label:?}"));
        text += &(cells.join(",") + end);
        if i % 7 == 3 {
            text += end; // blank line
        }
    }
    text
}

/// The schema inference must find, and the rows it must give (with
/// missing indicators if `indicators`).
fn expected(
    kinds: &[bool],
    rows: &[(f64, Vec<Field>)],
    indicators: bool,
) -> (Schema, SparseBatch, Vec<f64>) {
    let numeric = |name: String, k: usize| {
        let missing = rows.iter().any(|(_, f)| match f[k] {
            Field::Num(v) => v.is_none(),
            Field::Cat(l) => LEVELS[l].is_empty(),
        });
        if indicators && missing {
            Column::NumericWithIndicator { name }
        } else {
            Column::Numeric { name }
        }
    };
    let mut columns = Vec::new();
    for (k, &cat) in kinds.iter().enumerate() {
        let name = NAMES[k + 1].to_string();
        if !cat {
            columns.push(numeric(name, k));
            continue;
        }
        let mut levels: Vec<String> = rows
            .iter()
            .map(|(_, f)| match f[k] {
                Field::Cat(l) => LEVELS[l].to_string(),
                Field::Num(_) => unreachable!(),
            })
            .collect();
        levels.sort();
        levels.dedup();
        // A categorical column whose fields are all empty looks numeric
        // (every value missing).
        if levels.iter().all(|l| l.is_empty()) {
            columns.push(numeric(name, k));
        } else {
            columns.push(Column::Categorical { name, levels });
        }
    }
    let schema = Schema::new(columns).unwrap();
    let mut batch = SparseBatch::with_cols(schema.n_cols()).unwrap();
    for (_, fields) in rows {
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        let mut base = 0u32;
        for (field, column) in fields.iter().zip(schema.columns()) {
            let indicator = matches!(column, Column::NumericWithIndicator { .. });
            match (field, column) {
                (Field::Num(Some(v)), _) => {
                    cols.push(base);
                    vals.push(*v);
                }
                (Field::Num(None), _) if indicator => {
                    cols.push(base + 1);
                    vals.push(1.0);
                }
                (Field::Num(None), _) => {}
                (Field::Cat(l), Column::Categorical { levels, .. }) => {
                    let i = levels.iter().position(|x| x == LEVELS[*l]).unwrap();
                    cols.push(base + i as u32);
                    vals.push(1.0);
                }
                // An all-empty column read as numeric: missing.
                (Field::Cat(_), _) if indicator => {
                    cols.push(base + 1);
                    vals.push(1.0);
                }
                (Field::Cat(_), _) => {}
            }
            base += column.width() as u32;
        }
        batch.push_row(&cols, &vals).unwrap();
    }
    (schema, batch, rows.iter().map(|r| r.0).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_csv_reads_back_exactly(
        (kinds, rows) in table(),
        label_pick in any::<prop::sample::Index>(),
        gzip in any::<bool>(),
        crlf in any::<bool>(),
        sizes in prop::collection::vec(1usize..15, 1..4),
        indicators in any::<bool>(),
    ) {
        let label_at = label_pick.index(kinds.len() + 1);
        let text = write_csv(&kinds, &rows, label_at, crlf);
        let file = TempFile::new("round.csv", text.as_bytes(), gzip);
        let (schema, want, want_labels) = expected(&kinds, &rows, indicators);

        let options = CsvOptions::default().with_missing_indicators(indicators);
        let mut reader = CsvReader::open(file.path(), options).unwrap();
        prop_assert_eq!(reader.schema(), &schema);
        let (batch, labels, _) =
            read_all(schema.n_cols(), &sizes, |m| reader.next_chunk(m)).unwrap();
        prop_assert_eq!(&batch, &want);
        prop_assert_eq!(bits(&labels), bits(&want_labels));
        prop_assert_eq!(reader.unseen_levels(), 0);

        // The schema's text form reads back, and a stream read with it
        // gives the same rows.
        let again = Schema::from_text(&schema.to_text()).unwrap();
        prop_assert_eq!(&again, &schema);
        let options = CsvOptions::default().with_schema(Some(again));
        let mut reader = CsvReader::from_reader(Cursor::new(text), "stream", options).unwrap();
        let (batch, labels, _) =
            read_all(schema.n_cols(), &[5], |m| reader.next_chunk(m)).unwrap();
        prop_assert_eq!(&batch, &want);
        prop_assert_eq!(bits(&labels), bits(&want_labels));
    }
}

#[test]
fn first_lines_count_header_blank_and_multiline_records() {
    let text = "label,c\n1,a\n\n2,\"b\nb\"\n3,c\n";
    let file = TempFile::new("lines.csv", text.as_bytes(), false);
    let mut reader = CsvReader::open(file.path(), CsvOptions::default()).unwrap();
    let lines: Vec<u64> = std::iter::from_fn(|| reader.next_chunk(1).unwrap())
        .map(|c| c.first_line)
        .collect();
    assert_eq!(lines, [2, 4, 6]);
}

#[test]
fn schema_names_and_text_form() {
    let schema = Schema::new(vec![
        Column::Numeric {
            name: "dep\\delay".into(),
        },
        Column::Categorical {
            name: "origin".into(),
            levels: vec!["LGA".into(), "EWR".into(), "a\nb".into()],
        },
    ])
    .unwrap();
    assert_eq!(schema.n_cols(), 4);
    assert_eq!(
        schema.column_names(),
        ["dep\\delay", "origin=EWR", "origin=LGA", "origin=a\nb"]
    );
    let text = schema.to_text();
    assert_eq!(
        text,
        "tocpile-schema 2\nmissing NA\nmissing N/A\nmissing n/a\nmissing #N/A\n\
         missing NULL\nmissing null\nmissing None\nmissing ?\n\
         numeric dep\\\\delay\ncategorical 3 origin\n\
         level EWR\nlevel LGA\nlevel a\\nb\n"
    );
    assert_eq!(Schema::from_text(&text).unwrap(), schema);
    // Without markers (as a version 1 schema reads), version 1 is written.
    let old = schema.with_missing_markers(vec![]).unwrap();
    let text = old.to_text();
    assert_eq!(
        text,
        "tocpile-schema 1\nnumeric dep\\\\delay\ncategorical 3 origin\n\
         level EWR\nlevel LGA\nlevel a\\nb\n"
    );
    assert_eq!(Schema::from_text(&text).unwrap(), old);
}

/// A column that looks numeric for more than 256 distinct values before
/// its first text has its levels read in a second pass.
#[test]
fn late_text_in_a_numeric_looking_column() {
    let mut text = String::from("label,code\n");
    for i in 0..600 {
        text += &format!("0,{}\n", i % 300);
    }
    text += "1,unknown\n";
    let file = TempFile::new("late.csv", text.as_bytes(), true);
    let schema = Schema::infer(file.path(), &CsvOptions::default()).unwrap();
    let Column::Categorical { levels, .. } = &schema.columns()[0] else {
        panic!("categorical expected: {schema:?}");
    };
    assert_eq!(levels.len(), 301);
    assert_eq!(levels[0], "0");
    assert_eq!(levels[300], "unknown");
}

#[test]
fn a_saved_schema_reads_back_and_leaves_no_temporary() {
    let schema = Schema::new(vec![
        Column::Numeric {
            name: "dep delay".into(),
        },
        Column::Categorical {
            name: "origin, city".into(),
            levels: vec!["EWR".into(), "JFK".into(), "two\nlines".into()],
        },
    ])
    .unwrap();
    let path = crate::support::temp_path("schema");
    schema.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(Schema::from_text(&text).unwrap(), schema);
    let dir = path.parent().unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let leftovers = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains(&format!("{name}.tmp-"))
        })
        .count();
    assert_eq!(leftovers, 0);
    std::fs::remove_file(&path).unwrap();
}

/// Issue 23, 7: a header of 100,000 columns took a minute to check (each
/// name looked up by a scan of the others); it reads, every column
/// numeric and in place.
#[test]
fn a_header_of_100_000_columns_reads() {
    let n = 100_000;
    let mut text = String::from("label");
    for c in 0..n {
        text.push_str(&format!(",c{c}"));
    }
    text.push('\n');
    for r in 0..2u32 {
        text.push_str(&r.to_string());
        for c in 0..n {
            text.push_str(if c % 7 == r as usize { ",2" } else { ",0" });
        }
        text.push('\n');
    }
    let file = TempFile::new("wide-header.csv", text.as_bytes(), false);
    let mut reader = CsvReader::open(file.path(), CsvOptions::default()).unwrap();
    assert_eq!(reader.n_cols(), n);
    let names = reader.schema().columns();
    assert_eq!((names[0].name(), names[n - 1].name()), ("c0", "c99999"));
    let chunk = reader.next_chunk(10).unwrap().unwrap();
    assert_eq!(chunk.labels, [0.0, 1.0]);
    assert_eq!(chunk.batch.row(1).0[..2], [1, 8]);
    // A repeated name is still found, at its place.
    let repeated = text.replacen("c99999", "c5", 1);
    let file = TempFile::new("repeated-header.csv", repeated.as_bytes(), false);
    let e = CsvReader::open(file.path(), CsvOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("a column name not used before in the header"),
        "{e}"
    );
}

/// Issue 23, 7: a UTF-8 byte order mark before the header was kept as part
/// of the first column's name ("\u{feff}label": "the header has no column
/// named \"label\""). It is skipped, as the LIBSVM reader skips it, in
/// files, gzip'd files and streams; a lone BOM-like prefix is kept.
#[test]
fn a_byte_order_mark_before_the_header_is_skipped() {
    let text = "\u{feff}label,x,colour\n1,2.5,red\n0,1,blue\n";
    for gzip in [false, true] {
        let file = TempFile::new("bom.csv", text.as_bytes(), gzip);
        let mut reader = CsvReader::open(file.path(), CsvOptions::default()).unwrap();
        let names: Vec<&str> = reader.schema().columns().iter().map(Column::name).collect();
        assert_eq!(names, ["x", "colour"], "gzip {gzip}");
        let chunk = reader.next_chunk(10).unwrap().unwrap();
        assert_eq!(chunk.labels, [1.0, 0.0]);
        // The BOM before a first column that is not the label.
        let file = TempFile::new("bom-x.csv", b"\xef\xbb\xbfx,label\n3,1\n", gzip);
        let reader = CsvReader::open(file.path(), CsvOptions::default()).unwrap();
        assert_eq!(reader.schema().columns()[0].name(), "x");
    }
    let schema = Schema::new(vec![
        Column::Numeric { name: "x".into() },
        Column::Categorical {
            name: "colour".into(),
            levels: vec!["blue".into(), "red".into()],
        },
    ])
    .unwrap();
    let options = CsvOptions::default().with_schema(Some(schema));
    let mut reader =
        CsvReader::from_reader(Cursor::new(text.as_bytes().to_vec()), "stdin", options).unwrap();
    assert_eq!(reader.next_chunk(10).unwrap().unwrap().labels, [1.0, 0.0]);
    // Two bytes of a BOM and then text: a name that starts with them.
    let file = TempFile::new("half-bom.csv", b"\xef\xbbx,label\n3,1\n", false);
    let e = CsvReader::open(file.path(), CsvOptions::default()).unwrap_err();
    assert!(e.to_string().contains("UTF-8"), "{e}");
}

//! Arrow record batches (feature `arrow`): every supported type, nulls and
//! indicators, dictionaries, batches split and reordered, one test per
//! error, and random tables read through Arrow and through CSV giving the
//! same schema and rows.

use std::sync::Arc;

use proptest::prelude::*;
use tocpile::ingest::arrow::arrow_array::types::{Int16Type, Int32Type, Int8Type, UInt16Type};
use tocpile::ingest::arrow::arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array,
    Float64Array, Int64Array, LargeStringArray, NullArray, RecordBatch, StringArray,
    StringViewArray, UInt8Array,
};
use tocpile::ingest::arrow::arrow_schema::DataType;
use tocpile::ingest::arrow::{infer_schema, ArrowEncoder, ArrowOptions, SchemaInference};
use tocpile::ingest::csv::{Column, CsvOptions, CsvReader, Schema};
use tocpile::{Error, SparseBatch};

use super::{bits, read_all, TempFile};

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn arc<A: tocpile::ingest::arrow::arrow_array::Array + 'static>(a: A) -> ArrayRef {
    Arc::new(a)
}

fn options(indicators: bool) -> ArrowOptions {
    ArrowOptions {
        label: "y".into(),
        missing_indicators: indicators,
    }
}

/// Infers the schema of `batches` and encodes them all into one batch.
fn encode_all(batches: &[RecordBatch], options: &ArrowOptions) -> (Schema, SparseBatch, Vec<f64>) {
    let fields = batches[0].schema();
    let schema = infer_schema("t", &fields, batches, options).unwrap();
    let mut encoder = ArrowEncoder::new("t", &fields, schema.clone(), options).unwrap();
    let mut all = SparseBatch::with_cols(schema.n_cols()).unwrap();
    let mut labels = Vec::new();
    for b in batches {
        let first = encoder.rows() + 1;
        let chunk = encoder.encode(b).unwrap();
        assert_eq!(chunk.first_line, first);
        for (c, v) in chunk.batch.rows() {
            all.push_row(c, v).unwrap();
        }
        labels.extend_from_slice(&chunk.labels);
    }
    (schema, all, labels)
}

#[test]
fn every_number_type_and_booleans() {
    let b = batch(vec![
        ("y", arc(BooleanArray::from(vec![true, false, true]))),
        ("f64", arc(Float64Array::from(vec![1.5, 0.0, -2.0]))),
        ("f32", arc(Float32Array::from(vec![0.25, 3.0, 0.0]))),
        ("i64", arc(Int64Array::from(vec![-7, 1 << 40, 0]))),
        ("u8", arc(UInt8Array::from(vec![255, 0, 1]))),
        (
            "dec",
            arc(Decimal128Array::from(vec![12345, -5, 0])
                .with_precision_and_scale(10, 2)
                .unwrap()),
        ),
        ("flag", arc(BooleanArray::from(vec![false, true, true]))),
    ]);
    let (schema, rows, labels) = encode_all(&[b], &options(false));
    assert_eq!(
        schema.column_names(),
        ["f64", "f32", "i64", "u8", "dec", "flag"]
    );
    assert_eq!(labels, [1.0, 0.0, 1.0]);
    let want = SparseBatch::from_dense_rows(
        6,
        &[
            [1.5, 0.25, -7.0, 255.0, 123.45, 0.0],
            [0.0, 3.0, (1u64 << 40) as f64, 0.0, -0.05, 1.0],
            [-2.0, 0.0, 0.0, 1.0, 0.0, 1.0],
        ],
    )
    .unwrap();
    assert_eq!(rows, want);
}

#[test]
fn nulls_are_missing_numbers_and_empty_strings() {
    let b = batch(vec![
        (
            "x",
            arc(Float64Array::from(vec![Some(2.0), None, Some(3.0)])),
        ),
        (
            "b",
            arc(BooleanArray::from(vec![None, Some(true), Some(false)])),
        ),
        ("full", arc(Int64Array::from(vec![1, 2, 3]))),
        ("s", arc(StringArray::from(vec![Some("a"), None, Some("")]))),
        ("nothing", arc(NullArray::new(3))),
        ("y", arc(Int64Array::from(vec![0, 1, 0]))),
    ]);
    let (schema, rows, _) = encode_all(std::slice::from_ref(&b), &options(false));
    assert_eq!(
        schema.column_names(),
        ["x", "b", "full", "s=", "s=a", "nothing"]
    );
    let want = SparseBatch::from_dense_rows(
        6,
        &[
            [2.0, 0.0, 1.0, 0.0, 1.0, 0.0],
            [0.0, 1.0, 2.0, 1.0, 0.0, 0.0],
            [3.0, 0.0, 3.0, 1.0, 0.0, 0.0],
        ],
    )
    .unwrap();
    assert_eq!(rows, want);

    let (schema, rows, _) = encode_all(&[b], &options(true));
    assert_eq!(
        schema.column_names(),
        [
            "x",
            "x:missing",
            "b",
            "b:missing",
            "full",
            "s=",
            "s=a",
            "nothing",
            "nothing:missing"
        ]
    );
    let want = SparseBatch::from_dense_rows(
        9,
        &[
            [2.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0],
            [0.0, 1.0, 1.0, 0.0, 2.0, 1.0, 0.0, 0.0, 1.0],
            [3.0, 0.0, 0.0, 0.0, 3.0, 1.0, 0.0, 0.0, 1.0],
        ],
    )
    .unwrap();
    assert_eq!(rows, want);
}

/// Plain, large and view strings and dictionaries with several key types
/// (null keys, a null value, unused values) give the same levels and rows.
#[test]
fn every_string_layout_reads_the_same() {
    let values = [Some("b"), None, Some("a"), Some("b"), Some("c")];
    let dict_values =
        StringArray::from(vec![Some("c"), Some("a"), Some("unused"), None, Some("b")]);
    let keys8 = vec![Some(4i8), None, Some(1), Some(4), Some(0)];
    let keys16 = vec![Some(4i16), Some(3), Some(1), Some(4), Some(0)]; // key 3: a null value
    let keysu16 = vec![Some(4u16), None, Some(1), Some(4), Some(0)];
    let keys32 = vec![Some(4i32), None, Some(1), Some(4), Some(0)];
    let layouts: Vec<ArrayRef> = vec![
        arc(StringArray::from(values.to_vec())),
        arc(LargeStringArray::from(values.to_vec())),
        arc(StringViewArray::from(values.to_vec())),
        arc(DictionaryArray::<Int8Type>::try_new(keys8.into(), arc(dict_values.clone())).unwrap()),
        arc(
            DictionaryArray::<Int16Type>::try_new(keys16.into(), arc(dict_values.clone())).unwrap(),
        ),
        arc(
            DictionaryArray::<UInt16Type>::try_new(keysu16.into(), arc(dict_values.clone()))
                .unwrap(),
        ),
        arc(DictionaryArray::<Int32Type>::try_new(
            keys32.into(),
            arc(StringViewArray::from(vec![
                Some("c"),
                Some("a"),
                Some("unused"),
                None,
                Some("b"),
            ])),
        )
        .unwrap()),
    ];
    for (i, column) in layouts.into_iter().enumerate() {
        let b = batch(vec![
            ("s", column),
            ("y", arc(Float64Array::from(vec![1.0; 5]))),
        ]);
        let (schema, rows, _) = encode_all(&[b], &options(false));
        assert_eq!(
            schema.column_names(),
            ["s=", "s=a", "s=b", "s=c"],
            "layout {i}"
        );
        let want = SparseBatch::from_triplets(
            5,
            4,
            &[
                (0, 2, 1.0),
                (1, 0, 1.0),
                (2, 1, 1.0),
                (3, 2, 1.0),
                (4, 3, 1.0),
            ],
        )
        .unwrap();
        assert_eq!(rows, want, "layout {i}");
    }
}

#[test]
fn batches_may_reorder_columns_and_be_slices() {
    let first = batch(vec![
        ("y", arc(Float64Array::from(vec![1.0, 0.0, 1.0, 0.0]))),
        ("x", arc(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0]))),
        ("s", arc(StringArray::from(vec!["p", "q", "p", "r"]))),
    ]);
    let second = batch(vec![
        ("s", arc(StringArray::from(vec!["q", "zz"]))),
        ("x", arc(Float64Array::from(vec![5.0, 6.0]))),
        ("y", arc(Float64Array::from(vec![1.0, 1.0]))),
    ]);
    let options = options(false);
    let schema = infer_schema("t", &first.schema(), [&first], &options).unwrap();
    let mut encoder = ArrowEncoder::new("t", &first.schema(), schema, &options).unwrap();
    let a = encoder.encode(&first.slice(1, 3)).unwrap();
    assert_eq!(a.labels, [0.0, 1.0, 0.0]);
    assert_eq!(a.batch.row(0), (&[0u32, 2][..], &[2.0, 1.0][..]));
    let b = encoder.encode(&second).unwrap();
    assert_eq!(b.first_line, 4);
    assert_eq!(b.batch.row(0), (&[0u32, 2][..], &[5.0, 1.0][..]));
    assert_eq!(b.batch.row(1), (&[0u32][..], &[6.0][..])); // "zz": unseen
    assert_eq!(encoder.unseen_levels(), 1);
    assert_eq!(encoder.rows(), 5);
}

/// Inference reads only the columns it needs.
#[test]
fn inference_needs_only_string_columns() {
    let b = batch(vec![
        ("y", arc(Float64Array::from(vec![1.0, 0.0]))),
        ("x", arc(Float64Array::from(vec![Some(1.0), None]))),
        ("s", arc(StringArray::from(vec!["p", "q"]))),
    ]);
    let mut plain = SchemaInference::new("t", &b.schema(), &options(false)).unwrap();
    assert_eq!(plain.columns_to_read(), ["s"]);
    plain.update(&b.project(&[2]).unwrap()).unwrap();
    let schema = plain.finish().unwrap();
    assert_eq!(schema.column_names(), ["x", "s=p", "s=q"]);
    let mut with = SchemaInference::new("t", &b.schema(), &options(true)).unwrap();
    assert_eq!(with.columns_to_read(), ["x", "s"]);
    with.update(&b.project(&[1, 2]).unwrap()).unwrap();
    assert_eq!(
        with.finish().unwrap().column_names(),
        ["x", "x:missing", "s=p", "s=q"]
    );
}

fn encode_error(b: &RecordBatch, schema: Schema) -> Error {
    let mut encoder = ArrowEncoder::new("f.parquet", &b.schema(), schema, &options(false)).unwrap();
    // A good batch first, so rows count across batches.
    let good = b.slice(0, 1);
    encoder.encode(&good).unwrap();
    encoder.encode(b).unwrap_err()
}

#[test]
fn bad_values_name_the_row_and_column() {
    let numeric = Schema::new(vec![Column::Numeric { name: "x".into() }]).unwrap();
    let b = batch(vec![
        (
            "y",
            arc(Float64Array::from(vec![Some(1.0), Some(0.0), None])),
        ),
        ("x", arc(Float64Array::from(vec![1.0, 2.0, 3.0]))),
    ]);
    let e = encode_error(&b, numeric.clone());
    assert_eq!(
        e,
        Error::BadValue {
            path: "f.parquet".into(),
            row: 3,
            column: "y".into(),
            expected: "a label (a finite number)",
            found: "null".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "f.parquet: row 3 (0-based), column \"y\": expected a label (a finite number), found null"
    );
    // The first bad row of the batch, whichever column holds it.
    let b = batch(vec![
        (
            "y",
            arc(Float64Array::from(vec![1.0, 0.0, 1.0, f64::INFINITY])),
        ),
        ("x", arc(Float64Array::from(vec![1.0, 2.0, f64::NAN, 0.0]))),
    ]);
    let e = encode_error(&b, numeric);
    assert!(
        matches!(&e, Error::BadValue { row: 3, column, found, .. } if column == "x" && found == "NaN"),
        "{e:?}"
    );
}

#[test]
fn bad_columns_name_the_column_and_type() {
    let fields = |columns: Vec<(&str, ArrayRef)>| batch(columns).schema();
    let y = || arc(Float64Array::from(vec![1.0]));
    let numeric = || Schema::new(vec![Column::Numeric { name: "x".into() }]).unwrap();
    let check = |e: Error, column: &str, found: &str, expected: &str| match &e {
        Error::BadColumn {
            path,
            column: c,
            found: f,
            expected: x,
        } => {
            assert_eq!(
                (path.as_str(), c.as_str(), f.as_str()),
                ("t", column, found),
                "{e}"
            );
            assert!(x.contains(expected), "{e}");
        }
        _ => panic!("{e:?}"),
    };
    // A type tocpile does not read, in inference and encoding.
    let dates = fields(vec![("y", y()), ("x", arc(Date32Array::from(vec![1])))]);
    let e = SchemaInference::new("t", &dates, &options(false)).unwrap_err();
    check(
        e,
        "x",
        "Date32",
        "an integer, float, decimal, boolean, string",
    );
    let e = ArrowEncoder::new("t", &dates, numeric(), &options(false)).unwrap_err();
    check(e, "x", "Date32", "string");
    // A string where the schema says numeric, and the other way round.
    let strings = fields(vec![("y", y()), ("x", arc(StringArray::from(vec!["a"])))]);
    let e = ArrowEncoder::new("t", &strings, numeric(), &options(false)).unwrap_err();
    check(e, "x", "Utf8", "numeric in the schema");
    let categorical = Schema::new(vec![Column::Categorical {
        name: "x".into(),
        levels: vec!["a".into()],
    }])
    .unwrap();
    let numbers = fields(vec![("y", y()), ("x", arc(Int64Array::from(vec![1])))]);
    let e = ArrowEncoder::new("t", &numbers, categorical, &options(false)).unwrap_err();
    check(e, "x", "Int64", "categorical in the schema");
    // A string label; a column that is neither label nor in the schema.
    let text_label = fields(vec![("y", arc(StringArray::from(vec!["a"]))), ("x", y())]);
    let e = ArrowEncoder::new("t", &text_label, numeric(), &options(false)).unwrap_err();
    check(e, "y", "Utf8", "the label");
    let e = SchemaInference::new("t", &text_label, &options(false)).unwrap_err();
    check(e, "y", "Utf8", "the label");
    let extra = fields(vec![("y", y()), ("x", y()), ("z", y())]);
    let e = ArrowEncoder::new("t", &extra, numeric(), &options(false)).unwrap_err();
    check(
        e,
        "z",
        "Float64",
        "a column named in the schema, or the label",
    );
    // Two columns of one name.
    let twice = tocpile::ingest::arrow::arrow_schema::Schema::new(vec![
        tocpile::ingest::arrow::arrow_schema::Field::new("y", DataType::Float64, false),
        tocpile::ingest::arrow::arrow_schema::Field::new("x", DataType::Float64, true),
        tocpile::ingest::arrow::arrow_schema::Field::new("x", DataType::Int64, true),
    ]);
    let e = SchemaInference::new("t", &twice, &options(false)).unwrap_err();
    check(e, "x", "Int64", "a column name not used before");
    let e = ArrowEncoder::new("t", &twice, numeric(), &options(false)).unwrap_err();
    check(e, "x", "Int64", "a column name not used before");
    // No label.
    let e = SchemaInference::new("t", &fields(vec![("x", y())]), &options(false)).unwrap_err();
    assert!(
        matches!(&e, Error::MissingColumn { name, .. } if name == "y"),
        "{e:?}"
    );
    // A batch that lacks a column the encoder was built for.
    let mut encoder = ArrowEncoder::new(
        "t",
        &fields(vec![("y", y()), ("x", y())]),
        numeric(),
        &options(false),
    )
    .unwrap();
    let e = encoder.encode(&batch(vec![("y", y())])).unwrap_err();
    assert!(
        matches!(&e, Error::MissingColumn { name, .. } if name == "x"),
        "{e:?}"
    );
    assert_eq!(encoder.rows(), 0);
}

#[test]
fn too_many_strings_name_the_first_over() {
    let strings: Vec<String> = (0..65_537).map(|i| format!("v{i}")).collect();
    let b = batch(vec![
        ("y", arc(Float64Array::from(vec![0.0; strings.len()]))),
        ("s", arc(StringArray::from(strings))),
    ]);
    let e = infer_schema("t", &b.schema(), [&b], &options(false)).unwrap_err();
    assert!(
        matches!(&e, Error::BadValue { row: 65_536, column, found, .. }
            if column == "s" && found == "\"v65536\""),
        "{e:?}"
    );
}

/// Category values that are not numbers and not missing markers, some
/// needing CSV quoting.
const LEVELS: &[&str] = &[
    "JFK",
    "a,b",
    "say \"hi\"",
    " padded ",
    "two\nlines",
    "\u{e9}t\u{e9}",
];

fn cell() -> impl Strategy<Value = (Option<f64>, usize)> {
    let number = prop_oneof![
        1 => Just(None),
        3 => (-5i64..6).prop_map(|i| Some(i as f64)),
        2 => any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(Some),
    ];
    (number, 0..LEVELS.len())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A random table read through Arrow (in random batches) and through
    /// CSV (nulls written as empty fields) gives the same schema and rows.
    #[test]
    fn arrow_and_csv_agree(
        kinds in prop::collection::vec(any::<bool>(), 1..5),
        cells in prop::collection::vec(prop::collection::vec(cell(), 5), 1..40),
        cut in any::<prop::sample::Index>(),
        indicators in any::<bool>(),
    ) {
        let n = cells.len();
        let labels: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
        let mut columns: Vec<(String, ArrayRef)> =
            vec![("y".into(), arc(Float64Array::from(labels.clone())))];
        let mut csv = String::from("y");
        for (k, &text) in kinds.iter().enumerate() {
            csv += &format!(",c{k}");
            let array: ArrayRef = if text {
                arc(StringArray::from_iter_values(cells.iter().map(|r| LEVELS[r[k].1])))
            } else {
                arc(Float64Array::from(cells.iter().map(|r| r[k].0).collect::<Vec<_>>()))
            };
            columns.push((format!("c{k}"), array));
        }
        csv += "\n";
        for (i, row) in cells.iter().enumerate() {
            csv += &format!("{:?}", labels[i]);
            for (k, &text) in kinds.iter().enumerate() {
                let field = match (text, row[k].0) {
                    (true, _) => format!("\"{}\"", LEVELS[row[k].1].replace('"', "\"\"")),
                    (false, Some(v)) => format!("{v:?}"),
                    (false, None) => String::new(),
                };
                csv += &format!(",{field}");
            }
            csv += "\n";
        }
        let whole = RecordBatch::try_from_iter(columns).unwrap();
        let at = cut.index(n + 1);
        let parts = [whole.slice(0, at), whole.slice(at, n - at)];
        let options = ArrowOptions { label: "y".into(), missing_indicators: indicators };
        let (schema, rows, arrow_labels) = encode_all(&parts, &options);

        let file = TempFile::new("agree.csv", csv.as_bytes(), false);
        let csv_options = CsvOptions::default().with_label("y".into()).with_missing_indicators(indicators);
        let mut reader = CsvReader::open(file.path(), csv_options).unwrap();
        prop_assert_eq!(reader.schema(), &schema);
        let (csv_rows, csv_labels, _) =
            read_all(schema.n_cols(), &[7], |m| reader.next_chunk(m)).unwrap();
        prop_assert_eq!(&rows, &csv_rows);
        prop_assert_eq!(bits(&arrow_labels), bits(&csv_labels));
    }
}

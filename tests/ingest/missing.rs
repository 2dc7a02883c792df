//! The missing-value rule of CSV numeric columns (`tocpile::ingest::missing`):
//! markers keep a column numeric, one other text makes it categorical,
//! indicator columns, custom markers, and version 1 schemas.

use std::io::Cursor;

use super::{read_all, TempFile};
use tocpile::ingest::csv::{Column, CsvOptions, CsvReader, Schema};
use tocpile::ingest::missing::DEFAULT_MISSING_MARKERS;
use tocpile::{Error, SparseBatch};

fn infer(text: &str, options: &CsvOptions) -> Schema {
    let file = TempFile::new("missing.csv", text.as_bytes(), false);
    Schema::infer(file.path(), options).unwrap()
}

fn rows(text: &str, options: CsvOptions) -> (Schema, SparseBatch) {
    let file = TempFile::new("missing.csv", text.as_bytes(), false);
    let mut reader = CsvReader::open(file.path(), options).unwrap();
    let schema = reader.schema().clone();
    let (batch, _, _) = read_all(schema.n_cols(), &[100], |m| reader.next_chunk(m)).unwrap();
    (schema, batch)
}

fn numeric(name: &str) -> Column {
    Column::Numeric { name: name.into() }
}

fn indicated(name: &str) -> Column {
    Column::NumericWithIndicator { name: name.into() }
}

/// The case: a numeric column with a few `NA` and empty cells
/// stays numeric instead of going one-hot over every distinct number.
#[test]
fn markers_keep_a_column_numeric() {
    let text = "label,x\n1,2.5\n0,NA\n1,\n0,  ?  \n1,-4\n0,NULL\n";
    let (schema, batch) = rows(text, CsvOptions::default());
    assert_eq!(schema.columns(), [numeric("x")]);
    assert_eq!(schema.missing_markers(), DEFAULT_MISSING_MARKERS);
    let want =
        SparseBatch::from_dense_rows(1, &[[2.5], [0.0], [0.0], [0.0], [-4.0], [0.0]]).unwrap();
    assert_eq!(batch, want);
}

#[test]
fn indicators_mark_the_missing_cells() {
    let text = "label,x,y,c\n1,2.5,1,a\n0,NA,2,NA\n1,,3,b\n";
    let options = CsvOptions::default().with_missing_indicators(true);
    let (schema, batch) = rows(text, options);
    // y has no missing cell: no indicator. c is categorical: NA a level.
    assert_eq!(
        schema.column_names(),
        ["x", "x:missing", "y", "c=NA", "c=a", "c=b"]
    );
    assert_eq!(schema.columns()[0], indicated("x"));
    let want = SparseBatch::from_dense_rows(
        6,
        &[
            [2.5, 0.0, 1.0, 0.0, 1.0, 0.0],
            [0.0, 1.0, 2.0, 1.0, 0.0, 0.0],
            [0.0, 1.0, 3.0, 0.0, 0.0, 1.0],
        ],
    )
    .unwrap();
    assert_eq!(batch, want);
    // The text form keeps the indicator, and a test file read with it
    // marks its own missing cells.
    let again = Schema::from_text(&schema.to_text()).unwrap();
    assert_eq!(again, schema);
    let test = "c,label,y,x\nb,0,,7\nz,1,n/a,None\n";
    let options = CsvOptions::default().with_schema(Some(again));
    let mut reader = CsvReader::from_reader(Cursor::new(test), "test", options).unwrap();
    let chunk = reader.next_chunk(10).unwrap().unwrap();
    assert_eq!(chunk.batch.row(0), (&[0u32, 5][..], &[7.0, 1.0][..]));
    assert_eq!(chunk.batch.row(1), (&[1u32][..], &[1.0][..]));
    assert_eq!(reader.unseen_levels(), 1);
}

#[test]
fn one_other_text_makes_a_column_categorical() {
    let schema = infer("label,x\n1,1\n0,NA\n1,unknown\n", &CsvOptions::default());
    let Column::Categorical { levels, .. } = &schema.columns()[0] else {
        panic!("categorical expected: {schema:?}");
    };
    assert_eq!(levels, &["1", "NA", "unknown"]);
}

#[test]
fn an_all_missing_column_is_numeric() {
    let options = CsvOptions::default().with_missing_indicators(true);
    let (schema, batch) = rows("label,x\n1,NA\n0,\n", options);
    assert_eq!(schema.columns(), [indicated("x")]);
    assert_eq!(
        batch,
        SparseBatch::from_dense_rows(2, &[[0.0, 1.0], [0.0, 1.0]]).unwrap()
    );
}

#[test]
fn markers_come_from_the_options() {
    let text = "label,x\n1,-\n0,3\n1,NA\n";
    let options = CsvOptions::default().with_missing_markers(vec!["-".into()]);
    let schema = infer(text, &options);
    // NA is no longer a marker: the column is categorical.
    assert!(matches!(schema.columns()[0], Column::Categorical { .. }));
    let options = CsvOptions::default().with_missing_markers(vec!["-".into(), "NA".into()]);
    let (schema, batch) = rows(text, options);
    assert_eq!(schema.columns(), [numeric("x")]);
    assert_eq!(schema.missing_markers(), ["-", "NA"]);
    assert_eq!(
        batch,
        SparseBatch::from_dense_rows(1, &[[0.0], [3.0], [0.0]]).unwrap()
    );
    for bad in [
        vec!["1e3".to_string()],
        vec!["nan".into()],
        vec![" x".into()],
    ] {
        let options = CsvOptions::default().with_missing_markers(bad.clone());
        let file = TempFile::new("markers.csv", b"label,x\n1,2\n", false);
        let e = Schema::infer(file.path(), &options).unwrap_err();
        assert!(matches!(e, Error::InvalidSchema { .. }), "{bad:?}: {e:?}");
    }
}

/// NaN stays an error at its line: it is not a missing marker.
#[test]
fn nan_is_still_an_error() {
    let file = TempFile::new("nan.csv", b"label,x\n1,NA\n0,NaN\n", false);
    let e = CsvReader::open(file.path(), CsvOptions::default())
        .and_then(|mut r| r.next_chunk(10))
        .unwrap_err();
    assert!(
        matches!(&e, Error::Parse { line: 3, column: 3, found, .. } if found == "NaN"),
        "{e:?}"
    );
}

/// A schema saved by an earlier release (version 1) still loads, with no
/// markers: an empty field is missing, `NA` in a numeric column an error.
#[test]
fn version_1_schemas_keep_their_rule() {
    let old = Schema::from_text("tocpile-schema 1\nnumeric x\n").unwrap();
    assert!(old.missing_markers().is_empty());
    assert_eq!(old.to_text(), "tocpile-schema 1\nnumeric x\n");
    let options = || CsvOptions::default().with_schema(Some(old.clone()));
    let mut reader = CsvReader::from_reader(Cursor::new("label,x\n1,\n"), "t", options()).unwrap();
    assert_eq!(reader.next_chunk(5).unwrap().unwrap().batch.nnz(), 0);
    let mut reader =
        CsvReader::from_reader(Cursor::new("label,x\n1,NA\n"), "t", options()).unwrap();
    let e = reader.next_chunk(5).unwrap_err();
    assert!(matches!(e, Error::Parse { line: 2, .. }), "{e:?}");
    // Version 2 lines are not version 1.
    for text in [
        "tocpile-schema 1\nmissing NA\n",
        "tocpile-schema 1\nnumeric-with-indicator x\n",
    ] {
        let e = Schema::from_text(text).unwrap_err();
        assert!(matches!(e, Error::Parse { line: 2, .. }), "{text:?}: {e:?}");
    }
}

#[test]
fn version_2_text_errors_name_the_line() {
    for (text, line) in [
        ("tocpile-schema 2\nmissing 12\n", 2),
        ("tocpile-schema 2\nmissing NA\nmissing NA\n", 3),
        ("tocpile-schema 2\nmissing \n", 2),
        ("tocpile-schema 2\nnumeric x\nnumeric-with-indicator x\n", 3),
        ("tocpile-schema 2\nindicator x\n", 2),
    ] {
        let e = Schema::from_text(text).unwrap_err();
        assert!(
            matches!(e, Error::Parse { line: l, .. } if l == line),
            "{text:?}: {e:?}"
        );
    }
    let text = "tocpile-schema 2\nmissing -\nnumeric-with-indicator a\\nb\n";
    let schema = Schema::from_text(text).unwrap();
    assert_eq!(schema.missing_markers(), ["-"]);
    assert_eq!(schema.column_names(), ["a\nb", "a\nb:missing"]);
    assert_eq!(schema.to_text(), text);
}

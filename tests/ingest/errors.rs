//! One test per input error, asserting the exact `Error` (file, line,
//! column, expected, found).

use std::io::{Cursor, ErrorKind};

use super::{gzip_bytes, TempFile};
use tocpile::ingest::csv::{Column, CsvOptions, CsvReader, Schema};
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::Error;

/// The first error reading `text` as LIBSVM with `n_cols` columns, in
/// chunks of 1000 rows.
fn libsvm_error(text: &str, n_cols: Option<usize>) -> Error {
    let file = TempFile::new("bad.svm", text.as_bytes(), false);
    let options = LibsvmOptions::default().with_n_cols(n_cols);
    let mut reader = LibsvmReader::open(file.path(), options).unwrap();
    let error = loop {
        match reader.next_chunk(1000) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("no error in {text:?}"),
            Err(e) => break e,
        }
    };
    // A failed reader keeps failing the same way.
    assert_eq!(reader.next_chunk(1000), Err(error.clone()));
    match error {
        Error::Parse {
            path,
            line,
            column,
            expected,
            found,
        } => {
            assert_eq!(path, file.name());
            Error::Parse {
                path: "F".into(),
                line,
                column,
                expected,
                found,
            }
        }
        other => other,
    }
}

fn parse(line: u64, column: usize, expected: &'static str, found: &str) -> Error {
    Error::Parse {
        path: "F".into(),
        line,
        column,
        expected,
        found: found.into(),
    }
}

#[test]
fn libsvm_non_numeric_value() {
    let e = libsvm_error("1 1:1\n# c\n0 2:1 3:abc 4:1\n", None);
    assert_eq!(e, parse(3, 9, "a value (a finite number)", "abc"));
}

#[test]
fn libsvm_missing_colon() {
    let e = libsvm_error("1 1:1\n0 2:1 3\n", Some(5));
    assert_eq!(e, parse(2, 7, "index:value", "3"));
}

#[test]
fn libsvm_index_zero_in_one_based_mode() {
    let e = libsvm_error("1 0:1 2:1\n", Some(5));
    assert_eq!(
        e,
        parse(1, 3, "an index of at least 1 (indices are 1-based)", "0")
    );
}

#[test]
fn libsvm_repeated_index() {
    let e = libsvm_error("1 1:1\n\n1 2:1  2:5\n", None);
    assert_eq!(
        e,
        parse(
            3,
            8,
            "an index above the previous one (strictly ascending)",
            "2"
        )
    );
}

#[test]
fn libsvm_descending_index() {
    let e = libsvm_error("-1\t3:1\t10:1\t4:1\n", Some(20));
    assert_eq!(
        e,
        parse(
            1,
            13,
            "an index above the previous one (strictly ascending)",
            "4"
        )
    );
}

#[test]
fn libsvm_nan_label() {
    let e = libsvm_error("1 1:1\nNaN 1:1\n", None);
    assert_eq!(e, parse(2, 1, "a label (a finite number)", "NaN"));
    let e = libsvm_error("  yes 1:1\n", None);
    assert_eq!(e, parse(1, 3, "a label (a finite number)", "yes"));
}

#[test]
fn libsvm_nan_or_infinite_value() {
    let e = libsvm_error("1 1:nan\n", Some(3));
    assert_eq!(e, parse(1, 5, "a value (a finite number)", "nan"));
    let e = libsvm_error("1 1:1e999\n", Some(3));
    assert_eq!(e, parse(1, 5, "a value (a finite number)", "1e999"));
}

#[test]
fn libsvm_index_beyond_n_cols() {
    let e = libsvm_error("1 784:1\n1 785:1\n", Some(784));
    assert_eq!(
        e,
        parse(2, 3, "an index within the column count (n_cols)", "785")
    );
}

#[test]
fn libsvm_qid_elsewhere_and_long_tokens() {
    let e = libsvm_error("1 1:1 qid:3\n", Some(3));
    assert_eq!(e, parse(1, 7, "an index (an unsigned integer)", "qid"));
    let long = "9".repeat(60);
    let e = libsvm_error(&format!("1 1:{long}x\n"), Some(3));
    let found = format!("{}...", "9".repeat(40));
    assert_eq!(e, parse(1, 5, "a value (a finite number)", &found));
}

/// Errors are reported in file order, whichever parallel task finds them
/// (a chunk of 1000 rows is parsed in tasks of at least 64 rows).
#[test]
fn libsvm_first_error_in_file_order() {
    let mut text = String::new();
    for i in 1..=5000 {
        match i {
            301 => text.push_str("1 2:x\n"),
            950 | 3000 => text.push_str("1 1\n"),
            _ => text.push_str("1 1:1\n"),
        }
    }
    let e = libsvm_error(&text, None);
    assert_eq!(e, parse(301, 5, "a value (a finite number)", "x"));
}

#[test]
fn libsvm_truncated_gzip() {
    let mut text = String::new();
    for i in 0..20_000 {
        text += &format!("{} 1:{} 7:{}\n", i % 2, i, i * 31 % 1000);
    }
    let gz = gzip_bytes(text.as_bytes());
    for cut in [gz.len() / 2, gz.len() - 4] {
        let file = TempFile::new("cut.svm.gz", &gz[..cut], false);
        for n_cols in [None, Some(7)] {
            let options = LibsvmOptions::default().with_n_cols(n_cols);
            let mut result = LibsvmReader::open(file.path(), options);
            let mut rows = 0;
            while let Ok(reader) = &mut result {
                match reader.next_chunk(1000) {
                    Ok(Some(chunk)) => rows += chunk.labels.len(),
                    Ok(None) => panic!("cut at {cut}: silent end after {rows} rows"),
                    Err(e) => result = Err(e),
                }
            }
            match result {
                Err(
                    ref e @ Error::Io {
                        ref path,
                        kind,
                        ref message,
                        ref source,
                    },
                ) => {
                    assert_eq!(*path, file.name());
                    assert_eq!(kind, ErrorKind::UnexpectedEof, "{message}");
                    // The underlying error is kept, as the error's source.
                    assert_eq!(source.get().kind(), kind);
                    let chained = std::error::Error::source(e).expect("a source");
                    assert!(message.starts_with(&chained.to_string()), "{message}");
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }
}

#[test]
fn libsvm_stream_needs_n_cols_and_missing_file_is_io() {
    let e = LibsvmReader::from_reader(Cursor::new("1 1:1\n"), "s", LibsvmOptions::default());
    assert!(matches!(
        e,
        Err(Error::BadArgument {
            what: "the column count of LIBSVM input (LibsvmOptions::n_cols)",
            ..
        })
    ));
    let e = LibsvmReader::open("/nonexistent/x.svm", LibsvmOptions::default()).unwrap_err();
    assert!(
        matches!(e, Error::Io { kind: ErrorKind::NotFound, ref path, .. } if path == "/nonexistent/x.svm")
    );
}

#[test]
fn display_is_one_line_naming_everything() {
    let e = Error::Parse {
        path: "train.svm".into(),
        line: 12,
        column: 9,
        expected: "a value (a finite number)",
        found: "x\"y".into(),
    };
    assert_eq!(
        e.to_string(),
        "train.svm:12:9: expected a value (a finite number), found \"x\\\"y\""
    );
}

/// The first error reading `text` as CSV with `options`, with the path
/// replaced by "F".
fn csv_error(text: &str, options: CsvOptions) -> Error {
    let file = TempFile::new("bad.csv", text.as_bytes(), false);
    let result = CsvReader::open(file.path(), options).and_then(|mut reader| {
        while reader.next_chunk(1000)?.is_some() {}
        Ok(())
    });
    match result.expect_err("an error") {
        Error::Parse {
            path,
            line,
            column,
            expected,
            found,
        } => {
            assert_eq!(path, file.name());
            Error::Parse {
                path: "F".into(),
                line,
                column,
                expected,
                found,
            }
        }
        Error::MissingColumn { path, name, header } => {
            assert_eq!(path, file.name());
            Error::MissingColumn {
                path: "F".into(),
                name,
                header,
            }
        }
        other => other,
    }
}

#[test]
fn csv_wrong_field_count() {
    let text = "label,a,b\n1,2,3\n\n1,\"x,\ny\",3,4\n";
    let e = csv_error(text, CsvOptions::default());
    assert_eq!(
        e,
        parse(
            5,
            6,
            "as many fields as the header has",
            "4 fields (the header has 3)"
        )
    );
    let e = csv_error("label,a,b\r\n1,2,3\r\n1,2\r\n", CsvOptions::default());
    assert_eq!(
        e,
        parse(
            3,
            4,
            "as many fields as the header has",
            "2 fields (the header has 3)"
        )
    );
}

#[test]
fn csv_unknown_label_column() {
    let options = CsvOptions::default().with_label("delayed".into());
    let e = csv_error("origin,\"dep delay\",late\nJFK,1,0\n", options);
    assert_eq!(
        e,
        Error::MissingColumn {
            path: "F".into(),
            name: "delayed".into(),
            header: "\"origin\", \"dep delay\", \"late\"".into(),
        }
    );
    assert!(e.to_string().contains("no column named \"delayed\""));
}

#[test]
fn csv_bad_numbers_and_labels() {
    let e = csv_error("a,label\n1,1\n\"NaN\",0\n", CsvOptions::default());
    assert_eq!(
        e,
        parse(
            3,
            1,
            "a finite number, an empty field or a missing marker (numeric column)",
            "NaN"
        )
    );
    let e = csv_error("a,label\n1,1\n2,\n", CsvOptions::default());
    assert_eq!(e, parse(3, 3, "a label (a finite number)", ""));
    let e = csv_error("a,label\n\"x\ny\",1\n2,yes\n", CsvOptions::default());
    assert_eq!(e, parse(4, 3, "a label (a finite number)", "yes"));
}

#[test]
fn csv_header_problems() {
    let e = csv_error("a,label,a\n1,1,1\n", CsvOptions::default());
    assert_eq!(
        e,
        parse(1, 9, "a column name not used before in the header", "a")
    );
    let schema = Schema::new(vec![Column::Numeric { name: "a".into() }]).unwrap();
    let options = CsvOptions::default().with_schema(Some(schema));
    let e = csv_error("a,label,extra\n1,1,1\n", options);
    assert_eq!(
        e,
        parse(1, 9, "a column named in the schema, or the label", "extra")
    );
    let schema = Schema::new(vec![Column::Numeric { name: "a".into() }]).unwrap();
    let options = CsvOptions::default()
        .with_label("a".into())
        .with_schema(Some(schema));
    let e = csv_error("a,b\n1,1\n", options);
    assert!(matches!(e, Error::InvalidSchema { .. }), "{e:?}");
}

#[test]
fn csv_unseen_levels_are_counted() {
    let schema = Schema::new(vec![
        Column::Categorical {
            name: "origin".into(),
            levels: vec!["EWR".into(), "JFK".into()],
        },
        Column::Numeric { name: "d".into() },
    ])
    .unwrap();
    let text = "d,label,origin\n1,0,JFK\n2,1,LGA\n3,0,\n4,1,EWR\n";
    let options = CsvOptions::default().with_schema(Some(schema));
    let mut reader = CsvReader::from_reader(Cursor::new(text), "test", options).unwrap();
    let chunk = reader.next_chunk(10).unwrap().unwrap();
    assert_eq!(reader.unseen_levels(), 2);
    let rows: Vec<_> = chunk
        .batch
        .rows()
        .map(|(c, v)| (c.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(
        rows,
        [
            (vec![1, 2], vec![1.0, 1.0]),
            (vec![2], vec![2.0]),
            (vec![2], vec![3.0]),
            (vec![0, 2], vec![1.0, 4.0]),
        ]
    );
}

#[test]
fn schema_text_errors_name_the_line() {
    let e = Schema::from_text("tocpile-schema 3\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 1, .. }), "{e:?}");
    let e = Schema::from_text("tocpile-schema 1\nnumeric a\ncategorical 2 b\nlevel y\nlevel x\n")
        .unwrap_err();
    assert_eq!(
        e,
        Error::Parse {
            path: "<schema>".into(),
            line: 5,
            column: 7,
            expected: "a level above the previous one (sorted, unique)",
            found: "x".into(),
        }
    );
    let e = Schema::from_text("tocpile-schema 1\nnumeric a\nnumeric a\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 3, .. }), "{e:?}");
    let e = Schema::from_text("tocpile-schema 1\ncategorical 2 b\nlevel y\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 4, .. }), "{e:?}");
    let e = Schema::new(vec![
        Column::Numeric { name: "a".into() },
        Column::Categorical {
            name: "a".into(),
            levels: vec![],
        },
    ])
    .unwrap_err();
    assert!(matches!(e, Error::InvalidSchema { .. }), "{e:?}");
}

#[test]
fn too_many_levels() {
    let mut text = String::from("label,id\n");
    for i in 0..=tocpile::ingest::csv::MAX_LEVELS {
        text += &format!("0,id{i}\n");
    }
    let file = TempFile::new("levels.csv", text.as_bytes(), false);
    let e = Schema::infer(file.path(), &CsvOptions::default()).unwrap_err();
    assert_eq!(
        e,
        Error::TooManyLevels {
            path: file.name(),
            column: "id".into(),
            max: 65_536,
            line: 2,
            found: "id0".into(),
        }
    );
}

//! `tocpile encode` from Parquet (feature `parquet`): Parquet copies of
//! shared datasets (one-hot columns turned back into string columns, some
//! numeric cells null) encode to the same rows as their CSV and LIBSVM
//! copies; a test file read with the training schema; errors that name
//! the row group, row and column.

#![cfg(feature = "parquet")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::parquet_gen::{convert, Options};
use common::{json, ok, runtime_error};
use parquet::arrow::ArrowWriter;
use tocpile::dataset::Dataset;
use tocpile::ingest::arrow::arrow_array::{
    ArrayRef, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use tocpile::SparseBatch;

/// `NAME.*` in the shared data directory (`../shared/data` beside the
/// checkout: `tocpile_bench_data::shared_data_dir`; mushrooms: the copy
/// in `data/` if shared is missing).
fn shared(name: &str, ext: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = tocpile_bench_data::shared_data_dir().join(format!("{name}.{ext}"));
    if path.exists() {
        return path;
    }
    root.join("data").join(format!("{name}.{ext}"))
}

/// Every row and label of a dataset file.
fn rows(path: &Path) -> (SparseBatch, Vec<f64>, String) {
    let dataset = Dataset::open(path).unwrap();
    let info = dataset.info();
    let mut batch = SparseBatch::with_cols(info.n_cols).unwrap();
    let mut labels = Vec::new();
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b).unwrap();
        for p in 0..block.n_pages() {
            let page = block.page(p).unwrap();
            for (c, v) in page.batch().decode().rows() {
                batch.push_row(c, v).unwrap();
            }
            labels.extend_from_slice(page.labels());
        }
    }
    (batch, labels, info.schema.clone())
}

fn encode(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["encode"];
    all.extend_from_slice(args);
    all.push("--json");
    json(&all, dir)
}

/// The check: Parquet, CSV and LIBSVM copies of a dataset encode
/// to the same rows (and the Parquet and CSV files to the same schema).
fn same_rows_three_ways(name: &str, options: &Options, n_cols: usize) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows_written = convert(
        &shared(name, "libsvm.gz"),
        &shared(name, "cols.txt"),
        &d.join("t.parquet"),
        Some(&d.join("t.csv")),
        Some(&d.join("t.svm")),
        options,
    );
    let cols = n_cols.to_string();
    let parquet = encode(d, &["t.parquet", "-o", "p.toc"]);
    encode(d, &["t.csv", "-o", "c.toc"]);
    encode(d, &["t.svm", "--cols", &cols, "-o", "s.toc"]);
    assert_eq!(parquet["rows"], rows_written);
    assert_eq!(parquet["cols"], n_cols);
    assert_eq!(parquet["unseen_levels"], 0);
    let (p, p_labels, p_schema) = rows(&d.join("p.toc"));
    let (c, c_labels, c_schema) = rows(&d.join("c.toc"));
    let (s, s_labels, _) = rows(&d.join("s.toc"));
    assert_eq!(p, s, "{name}: Parquet and LIBSVM rows differ");
    assert_eq!(p, c, "{name}: Parquet and CSV rows differ");
    assert_eq!(p_labels, s_labels);
    assert_eq!(p_labels, c_labels);
    assert_eq!(p_schema, c_schema);
    // Without nulls, the LIBSVM copy is the shared file itself.
    if options.null_every.is_none() {
        let shared_file = shared(name, "libsvm.gz");
        let shared_file = shared_file.to_str().unwrap();
        encode(d, &[shared_file, "--cols", &cols, "-o", "shared.toc"]);
        let (all, labels, _) = rows(&d.join("shared.toc"));
        let n = p.n_rows();
        let mut head = SparseBatch::with_cols(all.n_cols()).unwrap();
        for (c, v) in all.rows().take(n) {
            head.push_row(c, v).unwrap();
        }
        assert_eq!(p, head, "{name}: Parquet and the shared LIBSVM file differ");
        assert_eq!(p_labels, labels[..n]);
    }
}

#[test]
fn mushrooms_parquet_csv_libsvm_agree() {
    let options = Options {
        row_group_rows: 1000,
        ..Options::default()
    };
    same_rows_three_ways("mushrooms", &options, 98);
}

/// census_fertility: numeric columns as Int64, some of them null (NA in
/// the CSV copy, absent in the LIBSVM copy).
#[test]
fn census_with_nulls_parquet_csv_libsvm_agree() {
    let options = Options {
        max_rows: 20_000,
        null_every: Some(11),
        integers: true,
        row_group_rows: 7_000,
    };
    same_rows_three_ways("census_fertility", &options, 12);
}

/// With indicators, Parquet nulls and CSV `NA`s mark the same cells; a
/// test file read with the training file's schema gets its columns.
#[test]
fn indicators_and_a_saved_schema() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let options = Options {
        max_rows: 4_000,
        null_every: Some(5),
        integers: true,
        row_group_rows: 1_000,
    };
    convert(
        &shared("census_fertility", "libsvm.gz"),
        &shared("census_fertility", "cols.txt"),
        &d.join("t.parquet"),
        Some(&d.join("t.csv")),
        None,
        &options,
    );
    let p = encode(d, &["t.parquet", "--missing-indicators", "-o", "p.toc"]);
    encode(d, &["t.csv", "--missing-indicators", "-o", "c.toc"]);
    assert_eq!(p["cols"], 14); // age and work get an indicator each
    let (p_rows, _, p_schema) = rows(&d.join("p.toc"));
    let (c_rows, _, c_schema) = rows(&d.join("c.toc"));
    assert_eq!(p_rows, c_rows);
    assert_eq!(p_schema, c_schema);
    assert!(
        p_schema.contains("numeric-with-indicator age\n"),
        "{p_schema}"
    );

    // A training file of the first 300 rows and a test file of all
    // rows, in both formats; the test files read with either training
    // file's schema give the training columns and the same rows.
    let mushrooms = |rows: usize, stem: &str| {
        let options = Options {
            max_rows: rows,
            ..Options::default()
        };
        convert(
            &shared("mushrooms", "libsvm.gz"),
            &shared("mushrooms", "cols.txt"),
            &d.join(format!("{stem}.parquet")),
            Some(&d.join(format!("{stem}.csv"))),
            None,
            &options,
        );
    };
    mushrooms(300, "train");
    mushrooms(usize::MAX, "test");
    let train = encode(d, &["train.parquet", "-o", "train-p.toc"]);
    encode(d, &["train.csv", "-o", "train-c.toc"]);
    let schema = ok(&["inspect", "train-p.toc", "--schema"], d);
    std::fs::write(d.join("train.schema"), &schema).unwrap();
    let cols = train["cols"].as_u64().unwrap();
    assert!(cols < 98, "the first 300 rows miss some levels: {cols}");
    let mut encoded = Vec::new();
    for (input, saved) in [
        ("test.parquet", "train-c.toc"),
        ("test.parquet", "train.schema"),
        ("test.csv", "train-p.toc"),
    ] {
        let info = encode(d, &[input, "--schema", saved, "-o", "test.toc"]);
        assert_eq!(info["cols"], cols, "{input} with {saved}");
        assert!(info["unseen_levels"].as_u64().unwrap() > 0, "{info}");
        encoded.push(rows(&d.join("test.toc")).0);
    }
    assert_eq!(encoded[0], encoded[1]);
    assert_eq!(encoded[0], encoded[2]);
    // The census schema does not fit the mushrooms file.
    runtime_error(
        &["encode", "test.parquet", "--schema", "p.toc", "-o", "x.toc"],
        d,
        &["test.parquet", "\"gender1\""],
    );
}

fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>, row_group_rows: usize) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[test]
fn errors_name_the_row_group_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 100;
    let mut x: Vec<f64> = (0..n).map(f64::from).collect();
    x[73] = f64::NAN;
    write_parquet(
        &d.join("nan.parquet"),
        vec![
            (
                "label",
                Arc::new(Int64Array::from(vec![1; n as usize])) as ArrayRef,
            ),
            ("x", Arc::new(Float64Array::from(x))),
        ],
        30,
    );
    let err = runtime_error(
        &["encode", "nan.parquet", "-o", "x.toc"],
        d,
        &[
            "nan.parquet: row 73 (0-based), column \"x\"",
            "expected a finite number or null, found NaN",
            "row group 2, its row 13",
        ],
    );
    assert!(!d.join("x.toc").exists(), "{err}");

    write_parquet(
        &d.join("date.parquet"),
        vec![
            ("label", Arc::new(Int64Array::from(vec![1, 0])) as ArrayRef),
            ("day", Arc::new(Date32Array::from(vec![1, 2]))),
        ],
        10,
    );
    runtime_error(
        &["encode", "date.parquet", "-o", "x.toc"],
        d,
        &["date.parquet: column \"day\" (Date32)", "string"],
    );
    write_parquet(
        &d.join("text.parquet"),
        vec![("y", Arc::new(StringArray::from(vec!["a"])) as ArrayRef)],
        10,
    );
    runtime_error(
        &["encode", "text.parquet", "-o", "x.toc"],
        d,
        &["text.parquet", "no column named \"label\""],
    );
    runtime_error(
        &[
            "encode",
            "text.parquet",
            "--label-column",
            "y",
            "-o",
            "x.toc",
        ],
        d,
        &["column \"y\" (Utf8): expected a number or boolean column (the label)"],
    );
    // A cut file and a file that is not Parquet at all.
    let bytes = std::fs::read(d.join("nan.parquet")).unwrap();
    std::fs::write(d.join("cut.parquet"), &bytes[..bytes.len() - 100]).unwrap();
    runtime_error(
        &["encode", "cut.parquet", "-o", "x.toc"],
        d,
        &["cut.parquet: not a readable Parquet file"],
    );
    // Damaged data pages: the first bytes after the magic number.
    let mut damaged = bytes.clone();
    for b in &mut damaged[4..200] {
        *b ^= 0x5a;
    }
    std::fs::write(d.join("damaged.parquet"), &damaged).unwrap();
    runtime_error(
        &["encode", "damaged.parquet", "-o", "x.toc"],
        d,
        &["damaged.parquet: row group 0"],
    );
}

/// `ratio` and the other readers of InputArgs take Parquet too.
#[test]
fn ratio_reads_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    convert(
        &shared("mushrooms", "libsvm.gz"),
        &shared("mushrooms", "cols.txt"),
        &d.join("m.pq"),
        None,
        None,
        &Options::default(),
    );
    let info = json(&["ratio", "m.pq", "--json", "--max-rows", "5000"], d);
    assert_eq!(info["datasets"][0]["rows"], 5_000);
    assert_eq!(info["datasets"][0]["cols"], 98);
}

/// In a build with the `parquet` feature, the file-level figure of
/// `ratio` has a Parquet (zstd) size beside the compressed text.
#[test]
fn file_figure_has_parquet_in_a_parquet_build() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rows: String = (0..60)
        .map(|i| format!("{} 1:{} 3:1.5 {}:1\n", i % 2, i % 7 + 1, 4 + i % 3))
        .collect();
    std::fs::write(d.join("s.libsvm"), rows).unwrap();
    let v = json(
        &[
            "ratio",
            "s.libsvm",
            "--batch-rows",
            "20",
            "--no-large",
            "--json",
        ],
        d,
    );
    let file = &v["datasets"][0]["file"];
    let parquet = file["compressed_bytes"]["parquet_zstd"].as_u64().unwrap();
    // At least the two "PAR1" magics and a footer.
    assert!(parquet > 12, "{file}");
    let toc = file["toc_bytes"].as_f64().unwrap();
    let over = file["toc_over"]["parquet_zstd"].as_f64().unwrap();
    assert!((over - toc / parquet as f64).abs() < 1e-12);
    let out = ok(
        &["ratio", "s.libsvm", "--batch-rows", "20", "--no-large"],
        d,
    );
    assert!(out.contains("Parquet (zstd)"), "{out}");
}

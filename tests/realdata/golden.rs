//! Golden files with scaling sections, committed once under
//! `tests/golden/scaling/` and never regenerated: a dataset file per
//! scaler (the footer's optional scaling section) and model files of
//! version 2 (scaling and schema fingerprint). Every later build must read
//! them back exactly. Files without the sections (`tests/golden/v1`) keep
//! reading as before, with no scaling.
//!
//! With `TOCPILE_GOLDEN_OUT` set to a directory, the generator writes
//! there (for files to be committed by hand); otherwise it writes to a
//! temporary directory and checks what it wrote.

use std::path::{Path, PathBuf};

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::model::{Model, ModelKind};
use tocpile::scale::{ColumnStats, ScaleKind};

use super::wide_scales;

const COLS: usize = 5;
const SCHEMA: &str = "tocpile-schema 1\nnumeric golden\n";

fn rows() -> tocpile::SparseBatch {
    wide_scales(9, 30, COLS)
}

fn scaled_model(kind: ModelKind, scale: ScaleKind) -> Model {
    let mut stats = ColumnStats::new(COLS).unwrap();
    stats.add(&rows()).unwrap();
    let mut model = Model::new(kind, COLS, 4).unwrap();
    let params: Vec<f64> = (0..model.n_params())
        .map(|i| i as f64 * 0.25 - 1.0)
        .collect();
    model.set_params(&params).unwrap();
    model.set_scaling(Some(stats.scaling(scale))).unwrap();
    model.set_schema(SCHEMA);
    model
}

fn models() -> Vec<(&'static str, Model)> {
    vec![
        (
            "lr.model",
            scaled_model(ModelKind::Logistic, ScaleKind::MaxAbs),
        ),
        (
            "mlp.model",
            scaled_model(
                ModelKind::Mlp {
                    hidden: vec![3],
                    outputs: 2 + 1,
                },
                ScaleKind::Standard,
            ),
        ),
    ]
}

/// Rows of one-hot columns and one numeric column (12): max-abs factors
/// are 1 but for column 12 and the never-seen columns 13..=15 (1 too), so
/// the footer stores the sparse scaling section (version 2).
fn one_hot_rows() -> (tocpile::SparseBatch, Vec<f64>) {
    let mut batch = tocpile::SparseBatch::with_cols(ONE_HOT_COLS).unwrap();
    let mut labels = Vec::new();
    for i in 0..20u32 {
        batch
            .push_row(&[i % 4, 4 + i % 8, 12], &[1.0, 1.0, 0.5 * f64::from(i)])
            .unwrap();
        labels.push(f64::from(i % 3));
    }
    (batch, labels)
}

const ONE_HOT_COLS: usize = 16;
const ONE_HOT_FILE: &str = "onehot_maxabs.toc";

fn generate(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let options = WriterOptions::default()
        .with_page_rows(8)
        .with_block_bytes(100);
    let mut w = DatasetWriter::create(dir.join(ONE_HOT_FILE), ONE_HOT_COLS, options).unwrap();
    w.set_scaling(Some(ScaleKind::MaxAbs)).unwrap();
    let (one_hot, labels) = one_hot_rows();
    w.push(&one_hot, &labels).unwrap();
    w.finish().unwrap();
    for scale in [ScaleKind::MaxAbs, ScaleKind::Standard] {
        let options = WriterOptions::default()
            .with_page_rows(8)
            .with_block_bytes(100)
            .with_schema(SCHEMA.into());
        let path = dir.join(format!("{scale}.toc"));
        let mut w = DatasetWriter::create(&path, COLS, options).unwrap();
        w.set_scaling(Some(scale)).unwrap();
        let labels: Vec<f64> = (0..30).map(|i| f64::from(i % 2)).collect();
        w.push(&rows(), &labels).unwrap();
        w.finish().unwrap();
    }
    for (name, model) in models() {
        model.save(dir.join(name)).unwrap();
    }
}

fn check(dir: &Path) {
    let path = dir.join(ONE_HOT_FILE);
    let ds = Dataset::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let stored = ds.info().scaling.clone().expect("a scaling section");
    let mut expected = [1.0; ONE_HOT_COLS];
    expected[12] = 1.0 / 9.5;
    assert_eq!(stored.factors(), &expected[..]);
    let bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(4)
        .rposition(|w| w == b"SCAL")
        .expect("the section");
    assert_eq!(bytes[at + 4], 2, "the sparse scaling section");
    for scale in [ScaleKind::MaxAbs, ScaleKind::Standard] {
        let path = dir.join(format!("{scale}.toc"));
        let ds = Dataset::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut stats = ColumnStats::new(COLS).unwrap();
        stats.add(&rows()).unwrap();
        let stored = ds.info().scaling.clone().expect("a scaling section");
        let expected = stats.scaling(scale);
        assert_eq!(stored.kind(), scale);
        let bits = |f: &[f64]| f.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(stored.factors()), bits(expected.factors()), "{scale}");
        assert_eq!(ds.info().n_rows, 30);
        assert_eq!(ds.info().schema, SCHEMA);
    }
    for (name, model) in models() {
        let path = dir.join(name);
        let read = Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(read, model, "{name}");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[4], 2, "{name}: version 2");
        // Written again, the scaling section may take the sparse form
        // (section version 2) where the committed file has every factor.
        let again = Model::from_bytes(&read.to_bytes()).unwrap();
        assert_eq!(again, read, "{name}: written again");
        assert!(read
            .check_schema(COLS, "tocpile-schema 1\nnumeric other\n")
            .is_err());
    }
}

#[test]
fn golden_scaled_files_still_load() {
    check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/scaling"));
}

#[test]
fn golden_scaling_generator_reads_back() {
    let dir = match std::env::var_os("TOCPILE_GOLDEN_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => crate::support::temp_path("golden-scaling"),
    };
    generate(&dir);
    check(&dir);
    if std::env::var_os("TOCPILE_GOLDEN_OUT").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn files_without_sections_read_with_no_scaling() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1");
    let ds = Dataset::open(root.join("dataset/toc_full.toc")).unwrap();
    assert_eq!(ds.info().scaling, None);
    // The committed model's last parameter is a NaN payload, which loads
    // now reject (tests/model/golden.rs): made finite, checksum fixed.
    let mut bytes = std::fs::read(root.join("model/lr.model")).unwrap();
    let n = bytes.len();
    bytes[n - 12..n - 4].copy_from_slice(&1.0f64.to_le_bytes());
    let crc = crate::support::forge::crc32(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let model = Model::from_bytes(&bytes).unwrap();
    assert!(model.scaling().is_none());
    // A model without scaling or schema is still written as version 1.
    assert_eq!(model.to_bytes()[4], 1);
}

#[test]
fn damaged_scaling_sections_are_errors() {
    let (_, mut model) = models().remove(0);
    // Factors other than 1 everywhere: the dense section, factors last.
    let dense = tocpile::scale::Scaling::new(ScaleKind::MaxAbs, vec![0.5; COLS]).unwrap();
    model.set_scaling(Some(dense)).unwrap();
    let bytes = model.to_bytes();
    // A scaling factor of 0 (bytes after the section header), CRC fixed.
    let mut bad = bytes.clone();
    let at = bytes.len() - 4 - 8 * COLS;
    bad[at..at + 8].copy_from_slice(&0f64.to_le_bytes());
    let n = bad.len() - 4;
    let crc = crate::support::forge::crc32(&bad[..n]);
    bad[n..].copy_from_slice(&crc.to_le_bytes());
    let e = Model::from_bytes(&bad).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("scaling factor 0 (column 0, at byte {at})"))
            && text.ends_with("is 0, expected a positive finite number"),
        "{e}"
    );
    // Issue 23, 11: a NaN factor was shown as its raw bits ("is
    // 9221120237041090560").
    bad[at..at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    let crc = crate::support::forge::crc32(&bad[..n]);
    bad[n..].copy_from_slice(&crc.to_le_bytes());
    let text = Model::from_bytes(&bad).unwrap_err().to_string();
    assert!(
        text.ends_with("is NaN, expected a positive finite number"),
        "{text}"
    );
    // Version 2 with neither schema nor scaling: not how such a model is
    // written (version 1), so not accepted (one encoding per model).
    let plain = Model::new(ModelKind::Logistic, COLS, 0).unwrap().to_bytes();
    let mut v2 = plain[..plain.len() - 4].to_vec();
    v2[4] = 2;
    v2.extend_from_slice(&[0, 0, 0, 0, 0]);
    let crc = crate::support::forge::crc32(&v2);
    v2.extend_from_slice(&crc.to_le_bytes());
    let e = Model::from_bytes(&v2).unwrap_err();
    assert!(
        e.to_string().contains("version-2 file without a schema"),
        "{e}"
    );
    // Truncated inside the section.
    for cut in [bytes.len() - 5, bytes.len() - 30] {
        assert!(Model::from_bytes(&bytes[..cut]).is_err());
    }
}

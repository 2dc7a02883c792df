//! Golden model files of format version 1, one per model kind, committed
//! once under `tests/golden/v1/model/` and never regenerated: every later
//! build must load them to exactly these kinds, dimensions and parameter
//! bits. The kind byte is the kind's fixed code, so they also pin the
//! codes.
//!
//! Each file's last parameter is a NaN payload, which builds since issue
//! 23 reject by name and offset (a model's parameters must be finite):
//! the test checks that rejection, then loads the file with that one
//! parameter replaced by a finite value (checksum fixed), every other
//! byte as committed. The generator writes the finite value.
//!
//! `golden_generator_reads_back` runs the generator into a temporary
//! directory; only with `TOCPILE_GOLDEN_OUT` set to a directory does it
//! write there, for a new format version to be committed by hand.

use std::path::{Path, PathBuf};

use tocpile::model::{Model, ModelKind};

const N_COLS: usize = 3;

/// Every kind, with its code.
fn kinds() -> Vec<(ModelKind, u8)> {
    vec![
        (ModelKind::Logistic, 0),
        (ModelKind::Svm, 1),
        (ModelKind::LinearRegression, 2),
        (ModelKind::Softmax { classes: 3 }, 3),
        (
            ModelKind::Mlp {
                hidden: vec![4, 2],
                outputs: 3,
            },
            4,
        ),
    ]
}

/// The last parameter of the committed files: a NaN payload.
const NAN_PAYLOAD: u64 = 0x7ff8_0000_dead_beef;
/// What the generator writes (and the test puts) in its place.
const FINITE_LAST: f64 = -1.5e300;

/// The parameters of a model with `n` of them: a ramp, with a negative
/// zero, a subnormal and a huge last value.
fn params(n: usize) -> Vec<f64> {
    let mut p: Vec<f64> = (0..n).map(|i| (i as f64 - 3.0) * 0.375).collect();
    p[0] = -0.0;
    p[1] = f64::from_bits(1);
    p[n - 1] = FINITE_LAST;
    p
}

/// CRC-32 (IEEE), as the model file's trailer.
fn crc32(bytes: &[u8]) -> u32 {
    crate::support::forge::crc32(bytes)
}

/// `bytes` of a committed file with its last parameter (the NaN payload,
/// just before the checksum of a version-1 file) made [`FINITE_LAST`],
/// after checking that loading the file as committed names that
/// parameter.
fn without_nan(path: &Path, bytes: &[u8], n_params: usize) -> Vec<u8> {
    let n = bytes.len();
    let at = n - 12;
    assert_eq!(
        u64::from_le_bytes(bytes[at..n - 4].try_into().unwrap()),
        NAN_PAYLOAD,
        "{}: the committed last parameter",
        path.display()
    );
    let e = Model::load(path).unwrap_err();
    let text = e.to_string();
    let want = format!(
        "parameter {} (at byte {at}) is NaN, expected a finite number",
        n_params - 1
    );
    assert!(
        text.contains(&want) && text.contains(&path.display().to_string()),
        "{text}"
    );
    let mut fixed = bytes.to_vec();
    fixed[at..n - 4].copy_from_slice(&FINITE_LAST.to_le_bytes());
    let crc = crc32(&fixed[..n - 4]);
    fixed[n - 4..].copy_from_slice(&crc.to_le_bytes());
    fixed
}

fn file_name(kind: &ModelKind) -> String {
    format!("{}.model", kind.name())
}

fn generate(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (kind, _) in kinds() {
        let mut model = Model::new(kind.clone(), N_COLS, 0).unwrap();
        model.set_params(&params(model.n_params())).unwrap();
        model.save(dir.join(file_name(&kind))).unwrap();
    }
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Loads `kind`'s file from `dir` and checks its contents exactly; a
/// committed file (`committed`) with its NaN payload replaced.
fn check(dir: &Path, kind: &ModelKind, code: u8, committed: bool) {
    let path = dir.join(file_name(kind));
    let mut bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[5], code, "{kind}: kind byte");
    let n_params = Model::new(kind.clone(), N_COLS, 0).unwrap().n_params();
    if committed {
        bytes = without_nan(&path, &bytes, n_params);
    }
    let model = Model::from_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(model.kind(), kind);
    assert_eq!(model.n_cols(), N_COLS);
    assert_eq!(
        bits(&model.params()),
        bits(&params(model.n_params())),
        "{kind}"
    );
    // Version 1 is what this build writes: the bytes re-serialise equal.
    assert!(model.to_bytes() == bytes, "{kind}: bytes");
}

#[test]
fn golden_v1_model_files_still_load() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1/model");
    for (kind, code) in kinds() {
        assert_eq!(kind.code(), code);
        check(&dir, &kind, code, true);
    }
}

#[test]
fn kind_codes_are_fixed_and_read_back() {
    for (kind, code) in kinds() {
        let widths: Vec<usize> = match &kind {
            ModelKind::Softmax { classes } => vec![*classes],
            ModelKind::Mlp { hidden, outputs } => {
                hidden.iter().copied().chain([*outputs]).collect()
            }
            _ => vec![1],
        };
        assert_eq!(ModelKind::from_code(code, &widths), Some(kind.clone()));
    }
    assert_eq!(ModelKind::from_code(0, &[2]), None);
    assert_eq!(ModelKind::from_code(3, &[2, 2]), None);
    assert_eq!(ModelKind::from_code(4, &[]), None);
    assert_eq!(ModelKind::from_code(5, &[1]), None);
}

#[test]
fn golden_generator_reads_back() {
    let dir = match std::env::var_os("TOCPILE_GOLDEN_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => crate::support::temp_path("golden-models"),
    };
    generate(&dir);
    for (kind, code) in kinds() {
        check(&dir, &kind, code, false);
    }
    if std::env::var_os("TOCPILE_GOLDEN_OUT").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

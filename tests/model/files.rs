//! Model files: round trips, damage, atomic save.

use std::path::PathBuf;

use tocpile::model::{Model, ModelKind};
use tocpile::Error;

use crate::support::numbers;

/// A directory of this test's own: tests run in parallel and each removes
/// its directory at the end (one directory shared by all, removed by one
/// test, was emptied under the others).
fn dir(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("tocpile-model-test-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn every_kind() -> Vec<ModelKind> {
    vec![
        ModelKind::Logistic,
        ModelKind::Svm,
        ModelKind::LinearRegression,
        ModelKind::Softmax { classes: 4 },
        ModelKind::Mlp {
            hidden: vec![3, 2],
            outputs: 1,
        },
        ModelKind::mlp(10),
    ]
}

/// A model with non-trivial parameters, special values included.
fn model(kind: ModelKind, n_cols: usize) -> Model {
    let mut m = Model::new(kind, n_cols, 9).unwrap();
    let mut p = numbers(4, m.n_params());
    p[0] = -0.0;
    let n = p.len();
    p[n - 1] = -f64::MAX;
    if n > 2 {
        p[1] = 5e-324;
    }
    m.set_params(&p).unwrap();
    m
}

#[test]
fn round_trip_is_bit_exact() {
    let dir = dir("round-trip");
    for (i, kind) in every_kind().into_iter().enumerate() {
        let m = model(kind.clone(), 7);
        let path = dir.join(format!("m{i}.model"));
        m.save(&path).unwrap();
        let back = Model::load(&path).unwrap();
        assert_eq!(back.kind(), m.kind());
        assert_eq!(back.n_cols(), 7);
        let bits = |m: &Model| m.params().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&m), "{kind}");
        assert_eq!(back.to_bytes(), m.to_bytes());
        assert_eq!(std::fs::read(&path).unwrap(), m.to_bytes());
        // Saving again replaces the file and leaves no temporary behind.
        Model::new(kind, 7, 0).unwrap().save(&path).unwrap();
        assert_ne!(std::fs::read(&path).unwrap(), m.to_bytes());
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_byte_flip_and_truncation_is_an_error() {
    for kind in [
        ModelKind::Logistic,
        ModelKind::Softmax { classes: 2 },
        ModelKind::Mlp {
            hidden: vec![2],
            outputs: 1,
        },
    ] {
        let bytes = model(kind.clone(), 3).to_bytes();
        for at in 0..bytes.len() {
            for mask in 1..=255u8 {
                let mut bad = bytes.clone();
                bad[at] ^= mask;
                assert!(
                    Model::from_bytes(&bad).is_err(),
                    "{kind}: byte {at} ^ {mask:#x} accepted"
                );
            }
        }
        for len in 0..bytes.len() {
            assert!(
                Model::from_bytes(&bytes[..len]).is_err(),
                "{kind}: {len} bytes"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            Model::from_bytes(&longer),
            Err(Error::TrailingBytes { .. })
        ));
    }
}

#[test]
fn errors_name_the_field_and_the_file() {
    let m = model(ModelKind::Softmax { classes: 3 }, 5);
    let bytes = m.to_bytes();
    // A huge parameter count is rejected before anything is allocated.
    let mut bad = bytes.clone();
    bad[8..16].copy_from_slice(&(1u64 << 32).to_le_bytes()); // n_cols
    assert!(matches!(
        Model::from_bytes(&bad),
        Err(Error::LengthMismatch { .. })
    ));
    let n_params = (1u64 << 32) * 3 + 3;
    bad[28..36].copy_from_slice(&n_params.to_le_bytes());
    assert!(matches!(
        Model::from_bytes(&bad),
        Err(Error::Truncated { offset: 36, .. })
    ));
    let mut bad = bytes.clone();
    bad[16..20].copy_from_slice(&u32::MAX.to_le_bytes()); // n_layers
    assert!(matches!(
        Model::from_bytes(&bad),
        Err(Error::Truncated { offset: 20, .. })
    ));
    let mut bad = bytes.clone();
    bad[5] = 9;
    assert!(matches!(
        Model::from_bytes(&bad),
        Err(Error::FieldOutOfRange { offset: 5, .. })
    ));
    let mut bad = bytes.clone();
    bad[40] ^= 1; // a parameter
    assert!(matches!(
        Model::from_bytes(&bad),
        Err(Error::ChecksumMismatch { .. })
    ));
    assert!(matches!(
        Model::from_bytes(b"TOCB\x01"),
        Err(Error::BadMagic { .. })
    ));

    let dir = dir("named");
    let path = dir.join("bad.model");
    std::fs::write(&path, &bytes[..30]).unwrap();
    let err = Model::load(&path).unwrap_err();
    assert!(matches!(err, Error::InFile { .. }), "{err:?}");
    assert!(err.to_string().contains("bad.model"), "{err}");
    let mut flipped = bytes.clone();
    flipped[40] ^= 1;
    std::fs::write(&path, &flipped).unwrap();
    let err = Model::load(&path).unwrap_err();
    assert!(
        matches!(&err, Error::ChecksumMismatch { path: p, .. } if p.contains("bad.model")),
        "{err:?}"
    );
    let missing = Model::load(dir.join("missing.model")).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 23, 2: a model file with one NaN weight loaded, then `evaluate`
/// never ended and `predict` answered class 0 for every row. Loading
/// names the parameter, its byte and the file; saving refuses to write
/// what loading would reject.
#[test]
fn a_parameter_that_is_not_finite_is_rejected_at_load_and_save() {
    let m = model(ModelKind::Logistic, 3);
    let mut bytes = m.to_bytes();
    let n = bytes.len();
    // Version 1: the 4 parameters end right before the checksum.
    for (bad, shown) in [(f64::NAN, "NaN"), (f64::NEG_INFINITY, "-inf")] {
        let at = n - 4 - 16;
        bytes[at..at + 8].copy_from_slice(&bad.to_le_bytes());
        let crc = crate::support::forge::crc32(&bytes[..n - 4]);
        bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
        let e = Model::from_bytes(&bytes).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("parameter 2 (at byte {at}) is {shown}, expected a finite number")
        );
        let dir = dir("nan");
        let path = dir.join("nan.model");
        std::fs::write(&path, &bytes).unwrap();
        let text = Model::load(&path).unwrap_err().to_string();
        assert!(text.starts_with(&path.display().to_string()), "{text}");
        assert!(text.contains("parameter 2"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let mut params = m.params();
    params[1] = f64::INFINITY;
    let mut inf = m.clone();
    inf.set_params(&params).unwrap();
    let dir = dir("save-nan");
    let e = inf.save(dir.join("inf.model")).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidNumber { what, .. } if what.contains("parameter 1")),
        "{e:?}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 23, 11: a dataset file (or an empty file) given as a model said
/// "unknown magic bytes [54, 4f, 43, 44]: not a TOC batch".
#[test]
fn a_dataset_or_empty_file_given_as_a_model_says_what_it_is() {
    let dir = dir("not-a-model");
    let path = dir.join("data.toc");
    std::fs::write(
        &path,
        b"TOCD\x01\x00\x00\x00 and the rest of a dataset file",
    )
    .unwrap();
    let text = Model::load(&path).unwrap_err().to_string();
    assert_eq!(
        text,
        format!(
            "{}: this is a tocpile dataset file (magic \"TOCD\"), not a tocpile model file (magic \"TOCM\")",
            path.display()
        )
    );
    std::fs::write(&path, b"").unwrap();
    let text = Model::load(&path).unwrap_err().to_string();
    assert!(
        text.contains("the input is empty; expected a tocpile model file"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

//! Model files: round trips, damage, atomic save.

use std::path::PathBuf;

use tocpile::model::{Model, ModelKind};
use tocpile::Error;

use crate::support::numbers;

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tocpile-model-test-{}", std::process::id()));
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
    p[n - 1] = f64::from_bits(0x7ff8_0000_dead_beef); // a NaN payload
    if n > 2 {
        p[1] = 5e-324;
    }
    m.set_params(&p).unwrap();
    m
}

#[test]
fn round_trip_is_bit_exact() {
    let dir = dir();
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

    let dir = dir().join("named");
    std::fs::create_dir_all(&dir).unwrap();
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

//! The reproductions of issue 23 ("Reliability round 3") from the command
//! line, one test per item: NaN in models and data, writers given special
//! paths, stale temporaries, `--ranks`, model memory, wide CSV headers,
//! long lines, outputs checked before training, messages. No wall-clock
//! thresholds: a time limit only stops a run that would never end.

mod common;
#[path = "../../tests/support/forge.rs"]
mod forge;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use forge::{crc32, dataset_labelled, valued_batch, Claims, TOC_FULL};

/// Runs tocpile in `dir`; a run still going after two minutes (a hang, as
/// `evaluate` on a NaN score was) is killed and fails the test.
fn bounded(args: &[&str], dir: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tocpile");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("tocpile {args:?} did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Exit code 1 and an error line mentioning each of `mentions`; returns
/// the error line.
fn fails(args: &[&str], dir: &Path, mentions: &[&str]) -> String {
    let o = bounded(args, dir);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    let last = err.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("tocpile: "), "{args:?}: {err}");
    for m in mentions {
        assert!(last.contains(m), "{args:?}: {last} lacks {m:?}");
    }
    last
}

/// `bytes` of a model file with parameter `i` (of a version-1 file with
/// `n_params` parameters) set to `value`, the checksum fixed.
fn with_param(bytes: &[u8], n_params: usize, i: usize, value: f64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let n = out.len();
    let at = n - 4 - 8 * (n_params - i);
    out[at..at + 8].copy_from_slice(&value.to_le_bytes());
    let crc = crc32(&out[..n - 4]);
    out[n - 4..].copy_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn item2_nan_in_a_model_or_in_data_is_an_error_never_a_hang() {
    let (_guard, dir) = fixture();
    ok(
        &["encode", "small.libsvm", "-o", "s.toc", "--scale", "none"],
        &dir,
    );
    ok(
        &["train", "s.toc", "--epochs", "1", "--save", "m.model"],
        &dir,
    );
    // Logistic regression over 6 columns: 7 parameters.
    let model = std::fs::read(dir.join("m.model")).unwrap();
    std::fs::write(dir.join("nan.model"), with_param(&model, 7, 0, f64::NAN)).unwrap();
    for command in ["evaluate", "predict"] {
        fails(
            &[command, "nan.model", "s.toc"],
            &dir,
            &[
                "nan.model",
                "parameter 0 (at byte ",
                "is NaN, expected a finite number",
            ],
        );
    }
    // A checksum-valid dataset file whose value dictionary holds a NaN,
    // and one whose label dictionary does.
    let claims = Claims {
        n_cols: 6,
        n_rows: 6,
        nnz: 6,
    };
    let value = dataset_labelled(
        TOC_FULL,
        &[(6, valued_batch(6, 6, f64::NAN))],
        1,
        claims,
        1.0,
    );
    std::fs::write(dir.join("nan.toc"), value).unwrap();
    let label = dataset_labelled(
        TOC_FULL,
        &[(6, valued_batch(6, 6, 1.0))],
        1,
        claims,
        f64::NAN,
    );
    std::fs::write(dir.join("nan-label.toc"), label).unwrap();
    for (file, what) in [
        ("nan.toc", "dictionary value 0"),
        ("nan-label.toc", "label dictionary entry 0"),
    ] {
        for args in [
            vec!["inspect", file],
            vec!["evaluate", "m.model", file],
            vec!["predict", "m.model", file],
            vec!["train", file, "--epochs", "1"],
        ] {
            fails(
                &args,
                &dir,
                &[file, what, "is NaN, expected a finite number"],
            );
        }
    }
}


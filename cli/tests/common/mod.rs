//! Helpers shared by the command-line tests: run the built binary in a
//! directory, check its exit code, parse its JSON, write small inputs.

#![allow(dead_code)]

#[cfg(feature = "parquet")]
pub mod parquet_gen;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn tocpile(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tocpile")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs and asserts success; returns stdout.
pub fn ok(args: &[&str], dir: &Path) -> String {
    let o = tocpile(args, dir);
    assert!(
        o.status.success(),
        "tocpile {args:?} failed ({:?}):\n{}",
        o.status.code(),
        stderr(&o)
    );
    stdout(&o)
}

pub fn json(args: &[&str], dir: &Path) -> Value {
    let out = ok(args, dir);
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("tocpile {args:?}: not JSON ({e}):\n{out}"))
}

/// A temporary directory holding a small LIBSVM file (`small.libsvm`, 40
/// rows x 6 columns with repeats) and a small CSV file (`small.csv`).
pub fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut svm = String::new();
    let mut csv = String::from("colour,label,size\n");
    for i in 0..40 {
        svm.push_str(&format!(
            "{} 1:1 {}:{} 6:{}\n",
            i % 2,
            2 + i % 3,
            1 + i % 4,
            0.5 * f64::from(i % 5)
        ));
        let colour = ["red", "green", "blue"][i as usize % 3];
        csv.push_str(&format!("{colour},{},{}\n", i % 2, i % 7));
    }
    std::fs::write(dir.path().join("small.libsvm"), svm).unwrap();
    std::fs::write(dir.path().join("small.csv"), csv).unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}

/// Exit code 2 and a usage message.
pub fn usage_error(args: &[&str], dir: &Path, mention: &str) {
    let o = tocpile(args, dir);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("tocpile: "), "{err}");
    assert!(err.contains(mention), "{args:?}: {err}");
    assert!(o.stdout.is_empty());
}

/// Exit code 1 and one line `tocpile: ...` mentioning each of `mentions`.
pub fn runtime_error(args: &[&str], dir: &Path, mentions: &[&str]) -> String {
    let o = tocpile(args, dir);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("tocpile: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for m in mentions {
        assert!(err.contains(m), "{args:?}: {err} lacks {m}");
    }
    err
}

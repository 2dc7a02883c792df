//! Real workflows end to end: `encode --scale`, `train --holdout`, the
//! scaling stored in the file and in the model, `evaluate` and `predict`
//! (text, JSON Lines, a file), and data of other columns or schema. No
//! wall-clock thresholds.

mod common;

use std::path::Path;

use common::*;

/// A CSV file with raw numeric columns of very different scales (what
/// trains to chance without scaling at a fixed learning rate): the label
/// is 1 when `income / 1000 + age > 90`.
fn wages(dir: &Path, name: &str, rows: usize, seed: u64) {
    let mut text = String::from("age,income,region,late\n");
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for _ in 0..rows {
        let age = 18.0 + (next() * 60.0).floor();
        let income = (next() * 80_000.0).round();
        let region = ["north", "south", "east"][(next() * 3.0) as usize % 3];
        let label = u8::from(income / 1000.0 + age > 90.0);
        text.push_str(&format!("{age},{income},{region},{label}\n"));
    }
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn csv_to_a_scaled_trained_evaluated_model_and_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    wages(dir, "wages.csv", 3000, 1);
    wages(dir, "new.csv", 500, 2);
    let enc = ok(
        &[
            "encode",
            "wages.csv",
            "--label-column",
            "late",
            "-o",
            "wages.toc",
            "--page-rows",
            "50",
            "--block-bytes",
            "2048",
        ],
        dir,
    );
    assert!(enc.contains("wrote wages.toc"), "{enc}");
    // The default scaling is max-abs, stored in the file.
    let info = json(&["inspect", "wages.toc", "--json"], dir);
    assert_eq!(info["rows"], 3000);
    assert_eq!(info["scaling"], "maxabs");
    ok(
        &[
            "encode",
            "new.csv",
            "--label-column",
            "late",
            "--schema",
            "wages.toc",
            "-o",
            "new.toc",
        ],
        dir,
    );
    let v = json(
        &[
            "train",
            "wages.toc",
            "--holdout",
            "0.1",
            "--save",
            "w.model",
            "--json",
        ],
        dir,
    );
    assert_eq!(v["scaling"], "maxabs");
    assert_eq!(v["optimizer"], "adam");
    assert_eq!(v["holdout"], 0.1);
    let held = v["final_eval"]["accuracy"].as_f64().unwrap();
    assert!(held > 0.9, "held-out accuracy {held}: {v}");
    // Without scaling, plain SGD at the old default learning rate does
    // far worse on these raw columns.
    let raw = json(
        &[
            "train",
            "wages.toc",
            "--holdout",
            "0.1",
            "--scale",
            "none",
            "--optimizer",
            "sgd",
            "--json",
        ],
        dir,
    );
    let raw_acc = raw["final_eval"]["accuracy"].as_f64().unwrap();
    assert!(raw_acc < held - 0.1, "unscaled {raw_acc} vs scaled {held}");
    // The summary shows the held-out figure first and labels the running one.
    let text = ok(
        &["train", "wages.toc", "--holdout", "0.1", "--epochs", "2"],
        dir,
    );
    assert!(text.contains("rows held out by --holdout 0.1"), "{text}");
    let last = text.lines().find(|l| l.starts_with("final (")).unwrap();
    assert!(
        last.starts_with("final (corgipile): held-out accuracy"),
        "{last}"
    );
    assert!(last.contains("running training accuracy"), "{last}");
    // evaluate on new rows: loss, accuracy, AUC and a confusion matrix.
    let e = json(&["evaluate", "w.model", "new.toc", "--json"], dir);
    assert_eq!(e["rows"], 500);
    assert!(e["accuracy"].as_f64().unwrap() > 0.9, "{e}");
    assert!(e["auc"].as_f64().unwrap() > 0.95, "{e}");
    let confusion = e["confusion"].as_array().unwrap();
    let total: u64 = confusion
        .iter()
        .flat_map(|r| r.as_array().unwrap())
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(total, 500);
    let text = ok(&["evaluate", "w.model", "new.toc"], dir);
    assert!(
        text.contains("AUC") && text.contains("confusion matrix"),
        "{text}"
    );
    // predict: a class per line, agreeing with evaluate's accuracy.
    let classes = ok(&["predict", "w.model", "new.toc"], dir);
    assert_eq!(classes.lines().count(), 500);
    let csv = std::fs::read_to_string(dir.join("new.csv")).unwrap();
    let labels: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap())
        .collect();
    let correct = classes
        .lines()
        .zip(&labels)
        .filter(|(a, b)| a == *b)
        .count();
    assert_eq!(correct as f64 / 500.0, e["accuracy"].as_f64().unwrap());
    // JSON Lines with probabilities; scores to a file.
    let lines = ok(&["predict", "w.model", "new.toc", "--json"], dir);
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["row"], 0);
    let p = first["probabilities"][0].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p));
    ok(
        &[
            "predict",
            "w.model",
            "new.toc",
            "--scores",
            "-o",
            "scores.txt",
        ],
        dir,
    );
    let scores = std::fs::read_to_string(dir.join("scores.txt")).unwrap();
    assert_eq!(scores.lines().count(), 500);
    for (s, c) in scores.lines().zip(classes.lines()) {
        let s: f64 = s.parse().unwrap();
        assert_eq!(u8::from(s > 0.0).to_string(), c);
    }
}

#[test]
fn other_columns_or_schema_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    wages(dir, "wages.csv", 400, 3);
    ok(
        &[
            "encode",
            "wages.csv",
            "--label-column",
            "late",
            "-o",
            "w.toc",
        ],
        dir,
    );
    ok(
        &["train", "w.toc", "--epochs", "1", "--save", "w.model"],
        dir,
    );
    // Another column count.
    let (_guard, fx) = fixture();
    ok(&["encode", "small.libsvm", "-o", "small.toc"], &fx);
    let small = fx.join("small.toc");
    let err = runtime_error(
        &["evaluate", "w.model", small.to_str().unwrap()],
        dir,
        &["small.toc", "w.model", "expected 5, found 6"],
    );
    assert!(err.contains("columns"), "{err}");
    runtime_error(
        &["predict", "w.model", small.to_str().unwrap()],
        dir,
        &["small.toc", "columns"],
    );
    // Same column count, another schema (columns renamed).
    let text = std::fs::read_to_string(dir.join("wages.csv")).unwrap();
    std::fs::write(
        dir.join("other.csv"),
        text.replacen("age,income", "years,salary", 1),
    )
    .unwrap();
    ok(
        &[
            "encode",
            "other.csv",
            "--label-column",
            "late",
            "-o",
            "o.toc",
        ],
        dir,
    );
    runtime_error(&["evaluate", "w.model", "o.toc"], dir, &["o.toc", "schema"]);
    // --holdout out of range and with --eval are usage errors.
    usage_error(&["train", "w.toc", "--holdout", "1"], dir, "(0, 1)");
    usage_error(
        &["train", "w.toc", "--holdout", "0.1", "--eval", "w.toc"],
        dir,
        "--eval",
    );
}

#[test]
fn scale_options_of_encode_and_train() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    wages(dir, "wages.csv", 600, 4);
    ok(
        &[
            "encode",
            "wages.csv",
            "--label-column",
            "late",
            "-o",
            "none.toc",
            "--scale",
            "none",
        ],
        dir,
    );
    ok(
        &[
            "encode",
            "wages.csv",
            "--label-column",
            "late",
            "-o",
            "std.toc",
            "--scale",
            "standard",
        ],
        dir,
    );
    let none = json(&["train", "none.toc", "--epochs", "1", "--json"], dir);
    assert_eq!(none["scaling"], "none");
    // A pass over the file fits a scaling it does not store.
    let fitted = json(
        &[
            "train", "none.toc", "--epochs", "1", "--scale", "maxabs", "--json",
        ],
        dir,
    );
    assert_eq!(fitted["scaling"], "maxabs");
    let stored = json(&["train", "std.toc", "--epochs", "1", "--json"], dir);
    assert_eq!(stored["scaling"], "standard");
    // Scaling leaves the pages alone: the same payload either way.
    let a = json(&["inspect", "none.toc", "--json"], dir);
    let b = json(&["inspect", "std.toc", "--json"], dir);
    assert_eq!(a["payload_bytes"], b["payload_bytes"]);
    usage_error(
        &["encode", "wages.csv", "-o", "x.toc", "--scale", "minmax"],
        dir,
        "minmax",
    );
}

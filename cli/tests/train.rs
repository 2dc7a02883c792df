//! `tocpile train` end to end: JSON fields, saved models, evaluation,
//! strategy comparisons with a plot, bad arguments, corrupt files and
//! divergence. No wall-clock thresholds.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// Encodes the built-in mushrooms data (5,644 rows x 98 columns) into
/// `name` in `dir`: 50-row pages in blocks of about 1 KiB (57 blocks, so
/// that CorgiPile's 10% buffer holds six and no warning is printed).
fn mushrooms(dir: &Path, name: &str) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    ok(
        &[
            "encode",
            data,
            "-o",
            name,
            "--cols",
            "98",
            "--page-rows",
            "50",
            "--block-bytes",
            "1024",
        ],
        dir,
    );
}

fn number(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {v}"))
}

#[test]
fn train_json_has_the_documented_fields_and_saves_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc");
    let v = json(
        &[
            "train", "m.toc", "--epochs", "3", "--lr", "0.5", "--seed", "7", "--json", "--save",
            "lr.model",
        ],
        dir,
    );
    let epochs = v["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 3);
    for (i, e) in epochs.iter().enumerate() {
        assert_eq!(e["epoch"], i);
        for field in ["loss", "accuracy", "seconds", "wait_seconds"] {
            assert!(number(e, field) >= 0.0, "{field}: {e}");
        }
        assert!(e.get("eval").is_none(), "{e}");
    }
    assert!(number(&epochs[2], "accuracy") > number(&epochs[0], "accuracy") - 0.01);
    let last = &epochs[2];
    assert_eq!(v["final"]["loss"], last["loss"]);
    assert_eq!(v["final"]["accuracy"], last["accuracy"]);
    assert!(number(&v["final"], "accuracy") > 0.9, "{v}");
    assert!(v.get("final_eval").is_none());
    assert_eq!(v["strategy"], "corgipile");
    assert_eq!(v["model"], "lr");
    assert_eq!(v["learning_rate"], 0.5);
    // The saved model reads back.
    let model = tocpile::model::Model::load(dir.join("lr.model")).unwrap();
    assert_eq!(model.kind(), &tocpile::model::ModelKind::Logistic);
    assert_eq!(model.n_cols(), 98);
    // The same seed gives the same figures.
    let again = json(
        &[
            "train", "m.toc", "--epochs", "3", "--lr", "0.5", "--seed", "7", "--json",
        ],
        dir,
    );
    assert_eq!(again["final"], v["final"]);
}

#[test]
fn train_eval_adds_eval_figures_and_text_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc");
    // The same rows with another layout serve as the evaluation file.
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    ok(&["encode", data, "-o", "test.toc", "--cols", "98"], dir);
    let v = json(
        &[
            "train", "m.toc", "--epochs", "2", "--lr", "0.5", "--eval", "test.toc", "--model",
            "svm", "--mode", "page", "--json",
        ],
        dir,
    );
    for e in v["epochs"].as_array().unwrap() {
        assert!(number(&e["eval"], "loss") >= 0.0, "{e}");
        assert!(number(&e["eval"], "accuracy") > 0.5, "{e}");
    }
    assert_eq!(v["final_eval"], v["epochs"][1]["eval"]);
    assert_eq!(v["model"], "svm");
    assert_eq!(v["mode"], "page");
    let text = ok(
        &[
            "train", "m.toc", "--epochs", "2", "--eval", "test.toc", "--model", "softmax",
        ],
        dir,
    );
    assert!(text.contains("softmax (2 classes)"), "{text}");
    assert!(
        text.contains(
            "| epoch | loss | accuracy | seconds | wait share | eval loss | eval accuracy |"
        ),
        "{text}"
    );
    assert!(text.contains("\n| 1 | "), "{text}");
    assert!(text.contains("final (corgipile): eval accuracy"), "{text}");
    assert!(text.contains("running training accuracy"), "{text}");
    // Linear regression reports R^2.
    let v = json(
        &[
            "train", "m.toc", "--epochs", "2", "--model", "linreg", "--json",
        ],
        dir,
    );
    assert_eq!(v["metric"], "r2");
    assert!(number(&v["final"], "accuracy") <= 1.0);
}

#[test]
fn the_plot_draws_the_held_out_figures_below_the_training_ones() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc");
    ok(
        &[
            "train",
            "m.toc",
            "--epochs",
            "2",
            "--shuffle",
            "corgipile,none",
            "--holdout",
            "0.2",
            "--plot",
            "held.svg",
        ],
        dir,
    );
    let svg = std::fs::read_to_string(dir.join("held.svg")).unwrap();
    for caption in [
        "training loss per epoch",
        "training accuracy per epoch",
        "held-out loss per epoch",
        "held-out accuracy per epoch",
    ] {
        assert!(svg.contains(caption), "{caption}");
    }
    // Two rows of charts: twice the height of a plot without held-out rows.
    assert!(svg.contains(r#"height="840""#), "{}", &svg[..200]);
}

#[test]
fn train_compares_strategies_in_one_plot() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc");
    let v = json(
        &[
            "train",
            "m.toc",
            "--epochs",
            "2",
            "--shuffle",
            "corgipile,none,once",
            "--plot",
            "shuffles.svg",
            "--json",
        ],
        dir,
    );
    let runs = v["runs"].as_array().unwrap();
    let names: Vec<&str> = runs
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["corgipile", "none", "once"]);
    for r in runs {
        assert_eq!(r["epochs"].as_array().unwrap().len(), 2);
        assert!(number(&r["final"], "loss") > 0.0);
    }
    let svg = std::fs::read_to_string(dir.join("shuffles.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    for name in ["corgipile", "none", "once", "loss", "accuracy"] {
        assert!(svg.contains(name), "{name}");
    }
    assert!(
        !svg.contains("held-out"),
        "no held-out rows, no held-out chart"
    );
    // Shuffle Once's scratch copy is gone.
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("shuffled"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Text: one row per epoch per strategy.
    let text = ok(
        &[
            "train",
            "m.toc",
            "--epochs",
            "2",
            "--shuffle",
            "block,epoch",
        ],
        dir,
    );
    for row in [
        "| block | 0 |",
        "| block | 1 |",
        "| epoch | 0 |",
        "| epoch | 1 |",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
}

#[test]
fn train_rejects_bad_arguments() {
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    usage_error(
        &["train", "s.toc", "--model", "nope"],
        &dir,
        "unknown model \"nope\"",
    );
    usage_error(&["train", "s.toc", "--buffer", "0"], &dir, "--buffer");
    usage_error(&["train", "s.toc", "--buffer", "1.5"], &dir, "(0, 1]");
    usage_error(&["train", "s.toc", "--lr", "-1"], &dir, "positive");
    usage_error(&["train", "s.toc", "--decay", "0"], &dir, "--decay");
    usage_error(&["train", "s.toc", "--epochs", "0"], &dir, "--epochs");
    usage_error(
        &["train", "s.toc", "--shuffle", "corgipile,bogus"],
        &dir,
        "unknown shuffling strategy \"bogus\"",
    );
    usage_error(&["train"], &dir, "FILE.toc");
    runtime_error(&["train", "missing.toc"], &dir, &["missing.toc"]);
    runtime_error(&["train", "small.libsvm"], &dir, &["small.libsvm"]);
    runtime_error(
        &[
            "train",
            "s.toc",
            "--shuffle",
            "none,once",
            "--save",
            "m.model",
        ],
        &dir,
        &["--save", "single"],
    );
    assert!(!dir.join("m.model").exists());
    // Softmax needs class indices.
    std::fs::write(dir.join("half.svm"), "0.5 1:1\n1 2:1\n").unwrap();
    ok(&["encode", "half.svm", "-o", "half.toc"], &dir);
    runtime_error(
        &[
            "train",
            "half.toc",
            "--model",
            "softmax",
            "--shuffle",
            "none",
        ],
        &dir,
        &["half.toc", "row 0", "label 0.5", "class index"],
    );
}

#[test]
fn train_on_a_corrupt_file_names_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "c.toc");
    let path = dir.join("c.toc");
    let mut bytes = std::fs::read(&path).unwrap();
    // The header is 8 bytes; byte 12 lies in block 0.
    bytes[12] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    runtime_error(
        &["train", "c.toc", "--epochs", "1"],
        dir,
        &["c.toc", "block 0", "checksum"],
    );
}

#[test]
fn train_divergence_exits_1_naming_the_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc");
    let err = runtime_error(
        &[
            "train",
            "m.toc",
            "--model",
            "linreg",
            "--lr",
            "1e6",
            "--optimizer",
            "sgd",
            "--json",
        ],
        dir,
        &["diverged", "epoch 0", "learning rate"],
    );
    assert!(err.contains("lower the learning rate"), "{err}");
}

/// The lines of a gzip-compressed text file in a fixed pseudo-random order.
fn shuffled_lines(gz: &str) -> String {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..lines.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        lines.swap(i, (state % (i as u64 + 1)) as usize);
    }
    lines.join("\n") + "\n"
}

#[test]
fn the_header_names_the_mode_the_loader_uses() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc"); // 50-row pages
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    ok(
        &[
            "encode",
            data,
            "-o",
            "big.toc",
            "--cols",
            "98",
            "--page-rows",
            "250",
        ],
        dir,
    );
    // The file as it comes is sorted by label (label mix about 27): rows
    // are shuffled whatever the page size.
    ok(&["encode", data, "-o", "default.toc", "--cols", "98"], dir);
    // The same rows in a random order: pages as mixed as random rows, and
    // rows are shuffled all the same (faster than whole pages).
    let shuffled = dir.join("shuffled.libsvm");
    std::fs::write(&shuffled, shuffled_lines(data)).unwrap();
    ok(
        &[
            "encode",
            shuffled.to_str().unwrap(),
            "-o",
            "mixed.toc",
            "--cols",
            "98",
        ],
        dir,
    );
    for (file, extra, header, json_mode) in [
        (
            "default.toc",
            &[][..],
            "exact (auto: pages hold clustered labels",
            "exact",
        ),
        (
            "m.toc",
            &[][..],
            "exact (auto: pages hold clustered labels",
            "exact",
        ),
        ("big.toc", &[][..], "exact (auto: ", "exact"),
        (
            "mixed.toc",
            &[][..],
            "exact (auto: pages as mixed as random rows",
            "exact",
        ),
        (
            "mixed.toc",
            &["--batch-size", "40"][..],
            "exact (auto: a mini-batch spans 0",
            "exact",
        ),
        ("mixed.toc", &["--mode", "page"][..], "; page mode", "page"),
        ("m.toc", &["--mode", "exact"][..], "; exact mode", "exact"),
    ] {
        let mut args = vec!["train", file, "--epochs", "1"];
        args.extend_from_slice(extra);
        let text = ok(&args, dir);
        assert!(text.contains(header), "{args:?}: {text}");
        args.push("--json");
        let v = json(&args, dir);
        assert_eq!(v["mode"], json_mode, "{args:?}");
    }
}

#[test]
fn a_small_files_buffer_holds_four_blocks_and_warns_of_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    // One block: the buffer holds all of it, a full shuffle: no warning.
    ok(
        &[
            "encode",
            data,
            "-o",
            "one.toc",
            "--cols",
            "98",
            "--block-bytes",
            "100000000",
        ],
        dir,
    );
    let out = tocpile(&["train", "one.toc", "--epochs", "1"], dir);
    assert!(out.status.success());
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    // A few blocks, whose 10% would be one: the buffer holds four of
    // them instead, so nothing to warn about.
    ok(
        &[
            "encode",
            data,
            "-o",
            "few.toc",
            "--cols",
            "98",
            "--block-bytes",
            "20000",
        ],
        dir,
    );
    let out = tocpile(&["train", "few.toc", "--epochs", "1"], dir);
    assert!(out.status.success());
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("warning"));
}

#[test]
fn bench_train_reports_every_setting_against_the_in_memory_loop() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    mushrooms(dir, "m.toc");
    let v = json(&["bench", "train", "m.toc", "--epochs", "1", "--json"], dir);
    let names: Vec<&str> = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "toc-stream",
            "toc-resident",
            "toc-code-rows",
            "toc-pair-codes",
            "toc-values",
            "toc-pages",
            "csr-stream",
            "csr-resident",
            "memory-toc-pages",
            "memory-csr-pages",
            "memory-pair-codes",
            "memory-csr"
        ]
    );
    assert_eq!(v["rows"], 5644);
    for s in v["settings"].as_array().unwrap() {
        for field in [
            "epoch_seconds",
            "examples_per_second",
            "speed_vs_memory_csr",
        ] {
            assert!(s[field].as_f64().unwrap() > 0.0, "{field}: {s}");
        }
        assert!(s["peak_bytes"].as_u64().unwrap() > 0, "{s}");
    }
    let last = &v["settings"][11];
    assert_eq!(last["name"], "memory-csr");
    assert_eq!(last["speed_vs_memory_csr"], 1.0);
    // The resident setting holds every block: its peak is at least the
    // file's payload. (Streaming's peak is not compared: on a file this
    // small, the decoded buffer dominates both, and the read-ahead holds a
    // share of the file that varies with timing.)
    let info = json(&["inspect", "m.toc", "--json"], dir);
    let payload = info["payload_bytes"].as_u64().unwrap();
    let resident = v["settings"][1]["peak_bytes"].as_u64().unwrap();
    assert!(
        resident >= payload,
        "resident peak {resident} against a payload of {payload}"
    );
    // The CSR copy beside the file is removed.
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("bench-csr"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let text = ok(&["bench", "train", "m.toc", "--epochs", "1"], dir);
    assert!(text.contains("| memory-csr | memory |"), "{text}");
}

/// Writes `p.libsvm` in `dir` and encodes it as `p.toc`: 2,000 rows of
/// three columns and an integer price-like label (`4000 + 3000 x.d` plus
/// noise, rounded: about 1,900 distinct values, as ggplot2's diamonds).
fn prices(dir: &Path) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut unit = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    };
    let mut text = String::new();
    for _ in 0..2000 {
        let x = [unit(), unit(), unit()];
        let y = 4000.0 + 3000.0 * (0.5 * x[0] - 0.3 * x[1] + 0.2 * x[2]) + 20.0 * unit();
        text.push_str(&format!(
            "{} 1:{} 2:{} 3:{}\n",
            y.round(),
            10.0 * x[0],
            1000.0 * x[1],
            x[2]
        ));
    }
    std::fs::write(dir.join("p.libsvm"), text).unwrap();
    ok(&["encode", "p.libsvm", "-o", "p.toc"], dir);
}

/// Regression: a price label (thousands of distinct integers) trained
/// with the default model (lr) got the advice "softmax or mlp" and a
/// meaningless accuracy; linear regression with the defaults ended far
/// below 0 (its steps were 0.03 on a target in the thousands).
#[test]
fn a_regression_target_gets_linreg_advice_and_trains_with_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    prices(dir);
    let o = tocpile(&["train", "p.toc", "--epochs", "1"], dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("look like a regression target"), "{err}");
    assert!(err.contains("--model linreg"), "{err}");
    assert!(!err.contains("softmax or mlp"), "{err}");
    let o = tocpile(
        &["train", "p.toc", "--model", "softmax", "--epochs", "1"],
        dir,
    );
    assert!(stderr(&o).contains("--model linreg"), "{}", stderr(&o));
    // Linear regression with the defaults: no warning, R^2 near 1, the
    // loss in the labels' units.
    let o = tocpile(
        &[
            "train", "p.toc", "--model", "linreg", "--eval", "p.toc", "--json",
        ],
        dir,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(number(&v["final_eval"], "accuracy") > 0.95, "{v}");
    assert!(number(&v["final_eval"], "loss") > 10.0, "{v}");
    // Without --eval: the running training figures make sense too.
    let v = json(&["train", "p.toc", "--model", "linreg", "--json"], dir);
    assert!(number(&v["final"], "accuracy") > 0.9, "{v}");
}

#[test]
fn a_negative_r2_at_the_end_says_what_to_try() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    prices(dir);
    // Steps of 100 standard deviations: far worse than the mean.
    let o = tocpile(
        &[
            "train", "p.toc", "--model", "linreg", "--lr", "100", "--epochs", "1", "--eval",
            "p.toc",
        ],
        dir,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("final eval R^2"), "{err}");
    assert!(err.contains("below 0") && err.contains("--lr"), "{err}");
}

//! End to end: the built `tocpile` binary on small inputs written to a
//! temporary directory, and on the built-in dataset. Exit codes, JSON
//! fields, error messages. No wall-clock thresholds.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn tocpile(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tocpile")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs and asserts success; returns stdout.
fn ok(args: &[&str], dir: &Path) -> String {
    let o = tocpile(args, dir);
    assert!(
        o.status.success(),
        "tocpile {args:?} failed ({:?}):\n{}",
        o.status.code(),
        stderr(&o)
    );
    stdout(&o)
}

fn json(args: &[&str], dir: &Path) -> Value {
    let out = ok(args, dir);
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("tocpile {args:?}: not JSON ({e}):\n{out}"))
}

/// A temporary directory holding a small LIBSVM file (`small.libsvm`, 40
/// rows x 6 columns with repeats) and a small CSV file (`small.csv`).
fn fixture() -> (tempfile::TempDir, PathBuf) {
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

#[test]
fn demo_runs_and_every_batch_decodes() {
    let dir = tempfile::tempdir().unwrap();
    // From a directory far from the repository: the dataset is embedded.
    let out = ok(&["demo"], dir.path());
    assert!(out.contains("5644 rows x 98 columns"), "{out}");
    for format in ["DEN", "CSR", "gzip", "snappy", "TOC_FULL", "A.v"] {
        assert!(
            out.contains(&format!("| {format} |")) || out.contains(format),
            "{format}"
        );
    }
    assert!(!out.contains("MISMATCH"), "{out}");
    assert!(out.contains("decodes back exactly"), "{out}");
    // The training step: a table of five epochs, then the final accuracy.
    assert!(out.contains("Training: logistic regression"), "{out}");
    assert!(out.contains("CorgiPile"), "{out}");
    assert!(
        out.contains("| epoch | loss | accuracy | seconds | wait share |"),
        "{out}"
    );
    assert!(out.contains("\n| 4 | "), "{out}");
    assert!(
        out.contains("trained in 5 epochs: training accuracy"),
        "{out}"
    );
}

#[test]
fn encode_writes_a_file_inspect_reads() {
    let (_guard, dir) = fixture();
    let encoded = json(
        &[
            "encode",
            "small.libsvm",
            "-o",
            "small.toc",
            "--page-rows",
            "8",
            "--json",
        ],
        &dir,
    );
    assert_eq!(encoded["rows"], 40);
    assert_eq!(encoded["cols"], 6);
    assert_eq!(encoded["pages"], 5);
    assert_eq!(encoded["page_format"], "TOC_FULL");
    assert!(dir.join("small.toc").exists());
    let inspected = json(&["inspect", "small.toc", "--json"], &dir);
    for field in [
        "rows",
        "cols",
        "nnz",
        "page_format",
        "page_rows",
        "blocks",
        "pages",
        "file_bytes",
        "payload_bytes",
        "ratio_vs_dense",
        "ratio_vs_csr",
    ] {
        assert_eq!(inspected[field], encoded[field], "{field}");
    }
    assert_eq!(inspected["verified_blocks"], 1);
    let text = ok(&["inspect", "small.toc"], &dir);
    assert!(text.contains("rows 40, columns 6"), "{text}");
    assert!(text.contains("checksums match"), "{text}");
}

#[test]
fn encode_takes_options_and_other_page_formats() {
    let (_guard, dir) = fixture();
    let out = ok(
        &[
            "encode",
            "small.libsvm",
            "-o",
            "csr.toc",
            "--page-format",
            "csr",
            "--cols",
            "10",
            "--page-rows",
            "4",
            "--block-bytes",
            "100",
        ],
        &dir,
    );
    assert!(out.contains("wrote csr.toc"), "{out}");
    let info = json(&["inspect", "csr.toc", "--json"], &dir);
    assert_eq!(info["page_format"], "CSR");
    assert_eq!(info["cols"], 10);
    assert!(info["blocks"].as_u64().unwrap() > 1, "{info}");
    // Zero-based indices shift every column down by one.
    std::fs::write(dir.join("zero.svm"), "1 0:1 4:2\n0 5:1\n").unwrap();
    let info = json(
        &[
            "encode",
            "zero.svm",
            "--zero-based",
            "-o",
            "z.toc",
            "--json",
        ],
        &dir,
    );
    assert_eq!(info["cols"], 6);
}

#[test]
fn encode_csv_keeps_the_schema_for_reuse() {
    let (_guard, dir) = fixture();
    let info = json(&["encode", "small.csv", "-o", "train.toc", "--json"], &dir);
    assert_eq!(info["rows"], 40);
    assert_eq!(info["cols"], 4); // size + colour=blue, green, red
    assert_eq!(info["unseen_levels"], 0);
    let schema = ok(&["inspect", "train.toc", "--schema"], &dir);
    assert!(schema.starts_with("tocpile-schema 1\n"), "{schema}");
    std::fs::write(dir.join("train.schema"), &schema).unwrap();
    // A test file with an unseen colour, read with the training schema,
    // from the schema file and from the dataset file.
    std::fs::write(
        dir.join("test.csv.gz"),
        gzip(b"size,label,colour\n3,1,red\n4,0,purple\n"),
    )
    .unwrap();
    for saved in ["train.schema", "train.toc"] {
        let info = json(
            &[
                "encode",
                "test.csv.gz",
                "--schema",
                saved,
                "-o",
                "test.toc",
                "--json",
            ],
            &dir,
        );
        assert_eq!(info["cols"], 4, "{saved}");
        assert_eq!(info["unseen_levels"], 1, "{saved}");
    }
    // A label column by another name.
    std::fs::write(dir.join("y.csv"), "a,y\n1,0\n2,1\n").unwrap();
    let info = json(
        &[
            "encode",
            "y.csv",
            "--label-column",
            "y",
            "-o",
            "y.toc",
            "--json",
        ],
        &dir,
    );
    assert_eq!(info["rows"], 2);
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    // A stored (uncompressed) gzip member: header, one raw deflate block,
    // CRC-32 and length; enough for the readers' gzip detection.
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.push(1); // final block, stored
    let len = bytes.len() as u16;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(bytes);
    out.extend_from_slice(&crc32(bytes).to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn ratio_json_has_the_documented_shape() {
    let (_guard, dir) = fixture();
    let v = json(
        &[
            "ratio",
            "small.libsvm",
            "small.csv",
            "--batch-rows",
            "5,20",
            "--shares",
            "50,100",
            "--shuffle",
            "7",
            "--json",
            "--plot",
            "ratio.svg",
        ],
        &dir,
    );
    let datasets = v["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 2);
    assert_eq!(datasets[0]["path"], "small.libsvm");
    assert_eq!(datasets[0]["rows"], 40);
    assert_eq!(datasets[0]["cols"], 6);
    let batches = datasets[0]["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0]["batch_rows"], 5);
    assert_eq!(batches[1]["batch_rows"], 20);
    for b in batches {
        let ratios = b["ratios"].as_object().unwrap();
        for name in [
            "DEN",
            "CSR",
            "CVI",
            "DVI",
            "snappy",
            "gzip",
            "lz4",
            "TOC_SPARSE",
            "TOC_LOGICAL",
            "TOC_FULL",
        ] {
            assert!(ratios[name].as_f64().unwrap() > 0.0, "{name}");
        }
        assert_eq!(ratios["DEN"], 1.0);
    }
    let large = datasets[0]["large_batches"].as_array().unwrap();
    assert_eq!(large[0]["batch_rows"], 20);
    assert_eq!(large[1]["batch_rows"], 40);
    assert_eq!(large[1]["share_percent"], 100.0);
    let svg = std::fs::read_to_string(dir.join("ratio.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("TOC_FULL"));
}

#[test]
fn ratio_text_prints_the_three_figures() {
    let (_guard, dir) = fixture();
    let out = ok(&["ratio", "small.libsvm", "--batch-rows", "10"], &dir);
    assert!(out.contains("Figure 5"), "{out}");
    assert!(out.contains("Figure 6"), "{out}");
    assert!(out.contains("Figure 7"), "{out}");
    assert!(out.contains("rows in file order"), "{out}");
    // A dataset file is an input too.
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    let out = ok(
        &["ratio", "s.toc", "--batch-rows", "10", "--no-large"],
        &dir,
    );
    assert!(out.contains("40 rows x 6 columns"), "{out}");
    assert!(!out.contains("Figure 7"), "{out}");
}

#[test]
fn bench_kernels_json_has_the_documented_shape() {
    let (_guard, dir) = fixture();
    let v = json(
        &[
            "bench",
            "kernels",
            "small.libsvm",
            "--batch-rows",
            "10",
            "--formats",
            "toc,gzip",
            "--rounds",
            "1",
            "--min-time-ms",
            "0",
            "--json",
        ],
        &dir,
    );
    assert_eq!(v["dataset"], "small.libsvm");
    assert_eq!(v["batch_rows"], 10);
    let ops = v["ops"].as_object().unwrap();
    for op in ["A*c", "A.v", "v.A", "A.M", "M.A"] {
        for format in ["CSR", "gzip", "TOC_FULL"] {
            let cell = &ops[op][format];
            assert!(
                cell["seconds_per_batch"].as_f64().unwrap() >= 0.0,
                "{op} {format}"
            );
            assert!(cell["ratio_to_csr"].is_number(), "{op} {format}");
        }
        assert_eq!(ops[op]["CSR"]["ratio_to_csr"], 1.0);
    }
    let text = ok(
        &[
            "bench",
            "kernels",
            "small.libsvm",
            "--rounds",
            "1",
            "--min-time-ms",
            "0",
        ],
        &dir,
    );
    assert!(text.contains("| TOC_FULL |"), "{text}");
}

/// Exit code 2 and a usage message.
fn usage_error(args: &[&str], dir: &Path, mention: &str) {
    let o = tocpile(args, dir);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("tocpile: "), "{err}");
    assert!(err.contains(mention), "{args:?}: {err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_arguments_exit_2_with_usage() {
    let (_guard, dir) = fixture();
    usage_error(
        &["encode", "small.libsvm", "--bogus"],
        &dir,
        "Usage: tocpile encode",
    );
    usage_error(&["encode", "small.libsvm"], &dir, "--output");
    usage_error(
        &[
            "encode",
            "small.libsvm",
            "-o",
            "x.toc",
            "--page-format",
            "zip",
        ],
        &dir,
        "unknown format \"zip\"",
    );
    usage_error(
        &["encode", "small.libsvm", "-o", "x.toc", "--page-rows", "0"],
        &dir,
        "--page-rows",
    );
    usage_error(&["ratio"], &dir, "INPUT");
    usage_error(&["ratio", "small.libsvm", "--shares", "150"], &dir, "150");
    usage_error(&["frobnicate"], &dir, "Usage: tocpile");
    usage_error(&["bench"], &dir, "kernels");
    assert!(!dir.join("x.toc").exists());
}

#[test]
fn help_shows_examples() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        &["--help"][..],
        &["demo", "--help"],
        &["encode", "--help"],
        &["inspect", "--help"],
        &["ratio", "--help"],
        &["bench", "kernels", "--help"],
        &["train", "--help"],
    ] {
        let out = ok(cmd, dir.path());
        assert!(out.contains("Examples:"), "{cmd:?}: {out}");
        assert!(out.contains("tocpile "), "{cmd:?}");
    }
}

/// Exit code 1 and one line `tocpile: ...` mentioning each of `mentions`.
fn runtime_error(args: &[&str], dir: &Path, mentions: &[&str]) -> String {
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

#[test]
fn bad_input_names_file_and_line() {
    let (_guard, dir) = fixture();
    std::fs::write(dir.join("bad.svm"), "1 1:2 3:4\n\n0 2:x\n").unwrap();
    runtime_error(
        &["encode", "bad.svm", "-o", "bad.toc"],
        &dir,
        &["bad.svm:3:5", "\"x\""],
    );
    assert!(!dir.join("bad.toc").exists(), "no partial output");
    std::fs::write(dir.join("bad.csv"), "label,a\n1,2\n0,nan\n").unwrap();
    runtime_error(&["ratio", "bad.csv"], &dir, &["bad.csv:3:3"]);
    runtime_error(
        &["encode", "missing.libsvm", "-o", "m.toc"],
        &dir,
        &["missing.libsvm"],
    );
    runtime_error(&["inspect", "small.libsvm"], &dir, &["small.libsvm"]);
    runtime_error(
        &[
            "encode",
            "small.csv",
            "--label-column",
            "nope",
            "-o",
            "n.toc",
        ],
        &dir,
        &["small.csv", "nope"],
    );
}

#[test]
fn corrupt_dataset_names_the_block() {
    let (_guard, dir) = fixture();
    ok(
        &[
            "encode",
            "small.libsvm",
            "-o",
            "c.toc",
            "--page-rows",
            "4",
            "--block-bytes",
            "64",
        ],
        &dir,
    );
    let path = dir.join("c.toc");
    let mut bytes = std::fs::read(&path).unwrap();
    // The header is 8 bytes; byte 12 lies in block 0.
    bytes[12] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    // The footer still opens; reading block 0 fails its checksum.
    runtime_error(
        &["inspect", "c.toc"],
        &dir,
        &["c.toc", "block 0", "checksum"],
    );
    ok(&["inspect", "c.toc", "--footer-only"], &dir);
    runtime_error(&["ratio", "c.toc"], &dir, &["c.toc", "block 0", "checksum"]);
    // A damaged trailer.
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    runtime_error(
        &["inspect", "c.toc", "--footer-only"],
        &dir,
        &["c.toc", "trailer"],
    );
}

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
    assert!(text.contains("final (corgipile): loss"), "{text}");
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
            "train", "m.toc", "--model", "linreg", "--lr", "1e6", "--json",
        ],
        dir,
        &["diverged", "epoch 0", "learning rate"],
    );
    assert!(err.contains("lower the learning rate"), "{err}");
}

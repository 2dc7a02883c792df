//! End to end: the built `tocpile` binary on small inputs written to a
//! temporary directory, and on the built-in dataset. Exit codes, JSON
//! fields, error messages. No wall-clock thresholds.

mod common;
#[path = "../../tests/support/forge.rs"]
mod forge;

use common::*;
use forge::crc32;

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
    // The loader's default path: the whole (small) file, rows as codes,
    // and the count of mini-batches by the form the trainer got.
    assert!(out.contains("the whole file ("), "{out}");
    assert!(out.contains("of 115 mini-batches, "), "{out}");
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
    // Format version 8: one segment; its dictionary's bytes, if kept.
    let segments = &inspected["segments"];
    assert_eq!(segments["version"], 8, "{inspected}");
    assert_eq!(segments["count"], 1, "{inspected}");
    let kept = segments["with_dictionary"].as_u64().unwrap();
    let in_file = segments["dictionary_file_bytes"].as_u64().unwrap();
    let resident = segments["dictionary_resident_bytes"].as_u64().unwrap();
    assert!(kept <= 1 && (kept == 0) == (in_file == 0), "{inspected}");
    assert_eq!(in_file == 0, resident == 0, "{inspected}");
    let text = ok(&["inspect", "small.toc"], &dir);
    assert!(
        text.contains(&format!(
            "format version 8: 1 segment, {kept} with a shared dictionary ({in_file} bytes in \
             the file, {resident} resident"
        )),
        "{text}"
    );
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
    // Only TOC_FULL files are written with segments (version 8).
    assert_eq!(info["segments"]["count"], 0, "{info}");
    let text = ok(&["inspect", "csr.toc"], &dir);
    assert!(
        text.contains("no segments, no shared dictionaries"),
        "{text}"
    );
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
    assert!(schema.starts_with("tocpile-schema 2\n"), "{schema}");
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

/// A numeric column with `NA` and empty cells stays numeric; indicators
/// and markers are options, kept in the stored schema.
#[test]
fn encode_csv_missing_values() {
    let (_guard, dir) = fixture();
    let mut text = String::from("label,delay,origin\n");
    for i in 0..30 {
        let delay = match i % 10 {
            3 => "NA".to_string(),
            7 => String::new(),
            _ => format!("{}.5", i * 7),
        };
        text.push_str(&format!("{},{delay},{}\n", i % 2, ["JFK", "EWR"][i % 2]));
    }
    std::fs::write(dir.join("na.csv"), &text).unwrap();
    let info = json(&["encode", "na.csv", "-o", "na.toc", "--json"], &dir);
    assert_eq!(info["cols"], 3); // delay + origin=EWR, JFK
    let info = json(
        &[
            "encode",
            "na.csv",
            "--missing-indicators",
            "-o",
            "ind.toc",
            "--json",
        ],
        &dir,
    );
    assert_eq!(info["cols"], 4);
    let schema = ok(&["inspect", "ind.toc", "--schema"], &dir);
    assert!(
        schema.contains("\nnumeric-with-indicator delay\n"),
        "{schema}"
    );
    assert!(schema.contains("\nmissing NA\n"), "{schema}");
    // Without NA as a marker, the column is categorical.
    let info = json(
        &[
            "encode",
            "na.csv",
            "--missing-markers",
            "?,NULL",
            "-o",
            "cat.toc",
            "--json",
        ],
        &dir,
    );
    assert!(info["cols"].as_u64().unwrap() > 20, "{info}");
    usage_error(
        &[
            "encode",
            "na.csv",
            "--schema",
            "ind.toc",
            "--missing-indicators",
            "-o",
            "x.toc",
        ],
        &dir,
        "--missing-indicators",
    );
    runtime_error(
        &["encode", "na.csv", "--missing-markers", "1", "-o", "x.toc"],
        &dir,
        &["missing marker \"1\" is a number"],
    );
}

/// A build without the `parquet` feature says how to get one, whether the
/// file is named `.parquet` or only starts with Parquet's magic number.
#[cfg(not(feature = "parquet"))]
#[test]
fn parquet_needs_the_feature() {
    let (_guard, dir) = fixture();
    std::fs::write(dir.join("t.parquet"), b"PAR1 not really PAR1").unwrap();
    std::fs::write(dir.join("t.bin"), b"PAR1 not really PAR1").unwrap();
    for input in ["t.parquet", "t.bin"] {
        runtime_error(
            &["encode", input, "-o", "t.toc"],
            &dir,
            &[input, "built without Parquet support", "--features parquet"],
        );
    }
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
fn ratio_decimals_divide_the_numeric_columns() {
    let (_guard, dir) = fixture();
    let bytes = |extra: &[&str]| {
        let mut args = vec!["ratio", "small.libsvm", "--batch-rows", "40", "--no-large"];
        args.extend_from_slice(extra);
        args.push("--json");
        let v = json(&args, &dir);
        v["datasets"][0]["batches"][0]["bytes"].clone()
    };
    let (plain, cents) = (bytes(&[]), bytes(&["--decimals", "2"]));
    // The numeric columns changed (dense bytes compress differently) and
    // every format still decoded exactly (ratio checks it).
    assert_ne!(plain["gzip"], cents["gzip"]);
    assert_eq!(plain["DEN"], cents["DEN"]);
    usage_error(&["ratio", "small.libsvm", "--decimals", "23"], &dir, "23");
    let v = json(
        &[
            "bench",
            "kernels",
            "small.libsvm",
            "--decimals",
            "2",
            "--shuffle",
            "3",
            "--batch-rows",
            "10",
            "--batches",
            "2",
            "--max-rows",
            "40",
            "--formats",
            "toc",
            "--rounds",
            "1",
            "--min-time-ms",
            "1",
            "--json",
        ],
        &dir,
    );
    assert_eq!(v["n_batches"], 2);
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

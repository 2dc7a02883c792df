//! End to end: `tocpile bench codec` and `tocpile bench kernels --clock`
//! on a small input. Shapes, keys and error handling; no wall-clock
//! thresholds.

mod common;

use common::*;

#[test]
fn bench_codec_reports_every_layout_and_operation() {
    let (_guard, dir) = fixture();
    let v = json(
        &[
            "bench",
            "codec",
            "small.libsvm",
            "--shuffle",
            "7",
            "--reps",
            "1",
            "--batch-rows",
            "16,8",
            "--json",
        ],
        &dir,
    );
    assert_eq!(v["shuffle"], 7);
    let d = &v["datasets"][0];
    assert_eq!(d["rows"], 40);
    assert_eq!(d["batches"][0]["batch_rows"], 16);
    assert_eq!(d["batches"][0]["n_batches"], 3);
    assert_eq!(d["batches"][1]["n_batches"], 5);
    for key in [
        "csr",
        "cvi_bits",
        "gzip",
        "toc_paper",
        "toc_full_v1",
        "toc_full",
    ] {
        let bytes = d["batches"][0]["encoded_bytes"][key].as_u64().unwrap();
        assert!(bytes > 0, "{key}");
        assert!(d["batches"][0]["ratio"][key].as_f64().unwrap() > 0.0);
    }
    // TOC_FULL never exceeds CVI with bit packing.
    let bytes = &d["batches"][1]["encoded_bytes"];
    assert!(bytes["toc_full"].as_u64() <= bytes["cvi_bits"].as_u64());
    for op in [
        "toc_encode",
        "toc_decode",
        "gzip_compress",
        "snappy_decompress",
    ] {
        assert!(d["speed"]["secs"][op].as_f64().unwrap() > 0.0, "{op}");
    }
    let text = ok(&["bench", "codec", "small.libsvm", "--reps", "1"], &dir);
    assert!(text.contains("| TOC_FULL v1 | TOC_FULL |"), "{text}");
    assert!(text.contains("TOC enc / gzip comp"), "{text}");
}

#[test]
fn bench_kernels_times_by_cpu_clock_and_rejects_an_unknown_clock() {
    let (_guard, dir) = fixture();
    let args = [
        "bench",
        "kernels",
        "small.libsvm",
        "--formats",
        "toc",
        "--rounds",
        "1",
        "--min-time-ms",
        "1",
        "--clock",
        "cpu",
    ];
    let text = ok(&args, &dir);
    assert!(text.contains("CPU time per batch"), "{text}");
    assert!(text.contains("| TOC_FULL |"), "{text}");
    usage_error(
        &["bench", "kernels", "small.libsvm", "--clock", "sundial"],
        &dir,
        "sundial",
    );
}

#[test]
fn bench_codec_on_an_empty_input_is_an_error() {
    let (_guard, dir) = fixture();
    std::fs::write(dir.join("empty.libsvm"), "").unwrap();
    runtime_error(
        &["bench", "codec", "empty.libsvm", "--cols", "3"],
        &dir,
        &["empty.libsvm", "no rows"],
    );
}

#[test]
fn bench_pages_prints_a_row_per_mini_batch_shape() {
    let (_guard, dir) = fixture();
    let text = ok(&["bench", "pages", "small.libsvm", "--shuffle", "3"], &dir);
    assert!(text.starts_with("threads: "), "{text}");
    // 40 rows: 5 pages of 50 rows hold them all in one page; 10 of 100 too.
    for shape in ["| 5 x 50 |", "| 10 x 100 |"] {
        let row = text.lines().find(|l| l.contains(shape)).expect(shape);
        let cells: Vec<f64> = row
            .split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        assert_eq!(cells.len(), 2, "{row}");
        assert!(cells.iter().all(|r| r.is_finite() && *r > 0.0), "{row}");
    }
}

#[test]
fn bench_adaptive_reports_every_variant() {
    let (_guard, dir) = fixture();
    let text = ok(
        &["bench", "adaptive", "small.libsvm", "--batches", "1"],
        &dir,
    );
    assert!(
        text.contains("| version 1 | + flat pages | + gaps | + scaled dict | all (default) |"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("| small.libsvm |"))
        .expect("a row");
    // Five ratios, then "N of 1" flat pages.
    let ratios: Vec<f64> = row
        .split('|')
        .skip(2)
        .take(5)
        .map(|c| c.trim().parse().unwrap())
        .collect();
    assert!(ratios.iter().all(|r| *r > 0.0), "{row}");
    assert!(row.contains(" of 1 |"), "{row}");
}

/// `gzip -6`, `zstd -19` and `xz -9` of `text`, as the figure computes
/// them (flate2, the zstd library's streaming encoder, liblzma), each in
/// one piece.
fn compressed(text: &[u8]) -> [u64; 3] {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    gz.write_all(text).unwrap();
    let mut zstd = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
    zstd.write_all(text).unwrap();
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 9);
    xz.write_all(text).unwrap();
    [
        gz.finish().unwrap().len() as u64,
        zstd.finish().unwrap().len() as u64,
        xz.finish().unwrap().len() as u64,
    ]
}

#[test]
fn file_figure_is_the_default_encode_against_the_text_compressed() {
    let (_guard, dir) = fixture();
    let text = std::fs::read(dir.join("small.libsvm")).unwrap();
    ok(&["encode", "small.libsvm", "-o", "default.toc"], &dir);
    let toc = std::fs::metadata(dir.join("default.toc")).unwrap().len();
    // The same text gzipped: inflated before it is measured.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
    std::io::Write::write_all(&mut gz, &text).unwrap();
    std::fs::write(dir.join("small.libsvm.gz"), gz.finish().unwrap()).unwrap();
    let want = compressed(&text);
    for (args, input) in [
        (
            vec!["ratio", "--batch-rows", "10", "--no-large"],
            "small.libsvm",
        ),
        (vec!["bench", "codec", "--reps", "1"], "small.libsvm.gz"),
    ] {
        let mut args = args.clone();
        args.extend([input, "--json"]);
        let v = json(&args, &dir);
        let file = &v["datasets"][0]["file"];
        assert_eq!(file["text_bytes"], text.len() as u64, "{args:?}");
        assert_eq!(file["toc_bytes"], toc, "{args:?}");
        for (name, bytes) in ["gzip -6", "zstd -19", "xz -9"].iter().zip(want) {
            assert_eq!(file["compressed_bytes"][name], bytes, "{name} {args:?}");
            let over = file["toc_over"][name].as_f64().unwrap();
            assert!((over - toc as f64 / bytes as f64).abs() < 1e-12, "{name}");
        }
    }
    // Text output names every file; --no-file and a dataset input have none.
    let out = ok(
        &["ratio", "small.libsvm", "--batch-rows", "10", "--no-large"],
        &dir,
    );
    assert!(out.contains("| bytes |") && out.contains("xz -9"), "{out}");
    let v = json(
        &["ratio", "small.libsvm", "--no-large", "--no-file", "--json"],
        &dir,
    );
    assert!(v["datasets"][0]["file"].is_null());
    let v = json(&["ratio", "default.toc", "--no-large", "--json"], &dir);
    assert!(v["datasets"][0]["file"].is_null());
}

#[test]
fn bench_predict_compares_a_linear_model_with_the_csr_loop() {
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    ok(
        &[
            "train", "s.toc", "--model", "lr", "--epochs", "1", "--save", "lr.model",
        ],
        &dir,
    );
    let text = ok(
        &["bench", "predict", "lr.model", "s.toc", "--rounds", "1"],
        &dir,
    );
    assert!(text.contains("s.toc: 40 rows"), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    // The header and one line per thread setting, each with its ratios.
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[1].starts_with("| 1 |"), "{text}");
    for row in &rows[1..] {
        let cells: Vec<f64> = row
            .trim_matches(|c| c == '|' || c == ' ')
            .split('|')
            .map(|c| c.trim().parse().unwrap())
            .collect();
        assert_eq!(cells.len(), 6, "{row}");
        assert!(cells.iter().all(|&v| v.is_finite() && v >= 0.0), "{row}");
    }
    ok(
        &[
            "train",
            "s.toc",
            "--model",
            "mlp",
            "--epochs",
            "1",
            "--save",
            "mlp.model",
        ],
        &dir,
    );
    runtime_error(
        &["bench", "predict", "mlp.model", "s.toc"],
        &dir,
        &["linear models"],
    );
}

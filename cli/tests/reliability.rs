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

fn sh(script: &str, dir: &Path) -> bool {
    Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .unwrap()
        .success()
}

#[cfg(unix)]
#[test]
fn item3_writers_go_through_symlinks_and_stream_to_fifos_and_devices() {
    use std::os::unix::fs::{symlink, FileTypeExt};
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "plain.toc"], &dir);
    let plain = std::fs::read(dir.join("plain.toc")).unwrap();
    // A symlink: the file it names is replaced, the link stays.
    std::fs::write(dir.join("real.toc"), b"old").unwrap();
    symlink("real.toc", dir.join("link.toc")).unwrap();
    ok(&["encode", "small.libsvm", "-o", "link.toc"], &dir);
    assert!(std::fs::symlink_metadata(dir.join("link.toc"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(dir.join("real.toc")).unwrap(), plain);
    // A dangling symlink: the file it names is created.
    std::fs::create_dir(dir.join("sub")).unwrap();
    symlink("sub/model.bin", dir.join("model-link.bin")).unwrap();
    ok(
        &[
            "train",
            "plain.toc",
            "--epochs",
            "1",
            "--save",
            "model-link.bin",
        ],
        &dir,
    );
    let model = std::fs::read(dir.join("sub/model.bin")).unwrap();
    assert_eq!(&model[..4], b"TOCM");
    assert!(std::fs::symlink_metadata(dir.join("model-link.bin"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Predictions and a plot through a link.
    symlink("sub/pred.txt", dir.join("pred-link.txt")).unwrap();
    ok(
        &[
            "predict",
            "sub/model.bin",
            "plain.toc",
            "-o",
            "pred-link.txt",
        ],
        &dir,
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/pred.txt"))
            .unwrap()
            .lines()
            .count(),
        40
    );
    symlink("sub/plot.svg", dir.join("plot-link.svg")).unwrap();
    ok(
        &[
            "train",
            "plain.toc",
            "--epochs",
            "2",
            "--plot",
            "plot-link.svg",
        ],
        &dir,
    );
    assert!(std::fs::read_to_string(dir.join("sub/plot.svg"))
        .unwrap()
        .starts_with("<svg"));
    // A FIFO: streamed to, and still a FIFO.
    assert!(sh("mkfifo pipe", &dir));
    let reader = {
        let fifo = dir.join("pipe");
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    ok(&["encode", "small.libsvm", "-o", "pipe"], &dir);
    assert_eq!(reader.join().unwrap(), plain);
    assert!(std::fs::symlink_metadata(dir.join("pipe"))
        .unwrap()
        .file_type()
        .is_fifo());
    // A character device: /dev/null's numbers in a node of our own as
    // root (a regression must not replace the machine's /dev/null), else
    // /dev/null itself.
    let null = if sh("mknod null c 1 3 2>/dev/null", &dir) {
        dir.join("null")
    } else {
        std::path::PathBuf::from("/dev/null")
    };
    let null_arg = null.to_str().unwrap();
    ok(&["encode", "small.libsvm", "-o", null_arg], &dir);
    ok(
        &["train", "plain.toc", "--epochs", "1", "--save", null_arg],
        &dir,
    );
    ok(
        &["predict", "sub/model.bin", "plain.toc", "-o", null_arg],
        &dir,
    );
    assert!(std::fs::symlink_metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
    // /dev/stdout: the bytes reach standard output.
    let out = bounded(
        &["predict", "sub/model.bin", "plain.toc", "-o", "/dev/stdout"],
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 40);
    // No temporary file anywhere.
    let hidden: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .chain(std::fs::read_dir(dir.join("sub")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    // A directory is refused by name, before training.
    fails(
        &["train", "plain.toc", "--save", "sub"],
        &dir,
        &["sub", "is a directory"],
    );
}

/// A LIBSVM row of 60 columns.
fn wide_row(i: usize) -> String {
    let mut row = format!("{}", i % 2);
    for c in 1..=60 {
        row.push_str(&format!(" {c}:{}", (i * 7 + c) % 13 + 1));
    }
    row.push('\n');
    row
}

/// The names in `dir`.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Creates `path` and holds an exclusive lock on it, as a live run holds
/// its temporaries.
fn held(path: &Path) -> std::fs::File {
    let file = std::fs::File::create(path).unwrap();
    file.lock().unwrap();
    file
}

#[cfg(unix)]
#[test]
fn item4_a_killed_runs_bucket_temporaries_go_and_live_ones_stay_whatever_their_pid() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // 100,000 rows of 60 columns: more than 64 MiB decoded, so Shuffle
    // Once writes two bucket files.
    let rows: String = (0..100_000).map(wide_row).collect();
    std::fs::write(dir.join("big.libsvm"), rows).unwrap();
    ok(&["encode", "big.libsvm", "-o", "big.toc"], dir);
    let scratch = dir.join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    // A live run's files whose names carry a process id that is no live
    // process here (another PID namespace, another host): locked.
    let live_temp = ".tocpile-shuffled-8388608-0-0.toc.tmp-8388608-0";
    let live_bucket = "..tocpile-shuffled-8388608-0-0.toc.bucket-1";
    let _temp = held(&scratch.join(live_temp));
    std::fs::write(scratch.join(live_bucket), b"rows").unwrap();
    let _bucket = held(&scratch.join(format!("{live_bucket}.lock")));
    let train = [
        "train",
        "big.toc",
        "--shuffle",
        "once",
        "--scratch-dir",
        "scratch",
        "--epochs",
        "1",
    ];
    for _ in 0..2 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
            .args(train)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id().to_string();
        // Killed once its bucket files' temporaries exist.
        let start = Instant::now();
        while !names(&scratch)
            .iter()
            .any(|n| n.contains(".bucket-") && n.contains(&format!(".tmp-{pid}-")))
        {
            assert!(
                child.try_wait().unwrap().is_none(),
                "ended before its buckets"
            );
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "no bucket files"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(sh(&format!("kill -KILL {pid}"), dir));
        child.wait().unwrap();
        let left: Vec<String> = names(&scratch)
            .into_iter()
            .filter(|n| n.contains(&pid))
            .collect();
        assert!(
            left.iter()
                .any(|n| n.contains(".bucket-") && n.contains(".tmp-")),
            "{left:?}"
        );
    }
    // The next run removes every file of the killed ones and none of the
    // live one's, then leaves nothing of its own.
    ok(&train, dir);
    let mut want = vec![
        live_bucket.to_string(),
        format!("{live_bucket}.lock"),
        live_temp.to_string(),
    ];
    want.sort();
    assert_eq!(names(&scratch), want);
}

#[cfg(unix)]
#[test]
fn item9_outputs_written_at_the_end_are_checked_before_the_first_epoch() {
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    std::fs::create_dir(dir.join("a-directory")).unwrap();
    std::fs::create_dir(dir.join("read-only")).unwrap();
    // Root writes anywhere: a read-only directory is only tested as
    // another user.
    let root = sh("test \"$(id -u)\" = 0", &dir);
    assert!(sh("chmod 555 read-only", &dir));
    // Epochs enough for minutes of training: the check must come first.
    let long = ["train", "s.toc", "--epochs", "1000000"];
    let mut cases = vec![
        (
            "--save",
            "missing/m.model",
            "the directory missing does not exist",
        ),
        (
            "--plot",
            "missing/p.svg",
            "the directory missing does not exist",
        ),
        ("--save", "a-directory", "is a directory"),
        ("--plot", "a-directory", "is a directory"),
    ];
    if !root {
        cases.push((
            "--save",
            "read-only/m.model",
            "no permission to create files in read-only",
        ));
    }
    for (option, path, why) in cases {
        let args = [&long[..], &[option, path]].concat();
        let err = fails(&args, &dir, &[option, path, why]);
        assert!(!err.contains(".tmp-"), "{err}");
    }
    // With --ranks too, and for predict and ratio, whose outputs also
    // come last.
    fails(
        &[&long[..], &["--ranks", "2", "--save", "missing/m"]].concat(),
        &dir,
        &["missing/m"],
    );
    ok(
        &["train", "s.toc", "--epochs", "1", "--save", "m.model"],
        &dir,
    );
    fails(
        &["predict", "m.model", "s.toc", "-o", "a-directory"],
        &dir,
        &["a-directory", "is a directory"],
    );
    fails(
        &["ratio", "small.libsvm", "--plot", "missing/r.svg"],
        &dir,
        &["missing/r.svg", "does not exist"],
    );
    assert!(sh("chmod 755 read-only", &dir));
}

/// Runs tocpile through `sh` with `prefix` (a `ulimit`, variables) before
/// it; returns the exit code and stderr.
fn under(prefix: &str, args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("{prefix} exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run sh");
    (o.status.code(), stderr(&o))
}

#[cfg(unix)]
#[test]
fn item5_ranks_are_bounded_by_blocks_and_threads_that_cannot_start_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    // 27 blocks (self-contained pages).
    let out = ok(&["encode", data, "-o", "m.toc", "--segment-rows", "0"], dir);
    assert!(out.contains("blocks 27 "), "{out}");
    // More ranks than blocks: some would read nothing (1000 ranks trained
    // one step, silently).
    fails(
        &["train", "m.toc", "--ranks", "64", "--epochs", "1"],
        dir,
        &["m.toc", "64 ranks for 27 blocks", "at most 27 ranks"],
    );
    usage_error(&["train", "m.toc", "--ranks", "1000"], dir, "1..=256");
    // As many ranks as blocks: every rank reads.
    let out = ok(&["train", "m.toc", "--ranks", "27", "--epochs", "1"], dir);
    let per_rank = out
        .lines()
        .find(|l| l.contains("per rank in the last epoch"))
        .unwrap();
    assert!(
        !per_rank.contains(" 0,") && !per_rank.contains("[0"),
        "{per_rank}"
    );
    // A rank thread that cannot start (stacks of 100 MB each under a 1 GB
    // address space: a few ranks start, then the next fails) is an error,
    // the started ranks stopped; it panicked with exit code 101.
    let (code, err) = under(
        "ulimit -v 1000000 && RUST_MIN_STACK=100000000",
        &["train", "m.toc", "--ranks", "20", "--epochs", "1"],
        dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("could not start the thread of rank"), "{err}");
    assert!(err.contains("give fewer --ranks"), "{err}");
    // Not even the kernels' threads (2 GB stacks).
    let (code, err) = under(
        "ulimit -v 1000000 && RUST_MIN_STACK=2000000000",
        &["train", "m.toc", "--epochs", "1"],
        dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("could not start the worker threads"), "{err}");
}

#[cfg(unix)]
#[test]
fn item6_model_parameters_are_limited_and_allocated_fallibly() {
    let (_guard, dir) = fixture();
    // Two rows, column 500,000: 96 bytes without a scaling section.
    std::fs::write(dir.join("wide.libsvm"), "1 500000:1\n0 1:1\n").unwrap();
    ok(
        &["encode", "wide.libsvm", "-o", "wide.toc", "--scale", "none"],
        &dir,
    );
    assert!(std::fs::metadata(dir.join("wide.toc")).unwrap().len() < 120);
    // The TOC paper's network over 500,000 columns: 100,010,301
    // parameters (3.9 GB to train), refused by default, at once.
    let err = fails(
        &["train", "wide.toc", "--model", "mlp", "--epochs", "1"],
        &dir,
        &[
            "wide.toc",
            "model parameters",
            "100010301",
            "--max-params N",
        ],
    );
    assert!(err.contains("above the limit of 67108864"), "{err}");
    // Raised, under a 1 GB address space: an error naming the
    // allocation, never an abort.
    let (code, err) = under(
        "ulimit -v 1000000 &&",
        &[
            "train",
            "wide.toc",
            "--model",
            "mlp",
            "--epochs",
            "1",
            "--max-params",
            "200000000",
        ],
        &dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("could not allocate 800000000 bytes (762.9 MiB) for model weights"),
        "{err}"
    );
}

#[test]
fn item7_wide_csv_headers_and_a_byte_order_mark() {
    let (_guard, dir) = fixture();
    // 100,000 columns (a minute to encode before; no time is asserted).
    let n = 100_000;
    let mut text = String::from("label");
    (0..n).for_each(|c| text.push_str(&format!(",c{c}")));
    text.push('\n');
    for r in 0..3 {
        text.push_str(&format!("{}", r % 2));
        (0..n).for_each(|c| text.push_str(if (c + r) % 5 == 0 { ",1" } else { ",0" }));
        text.push('\n');
    }
    std::fs::write(dir.join("wide.csv"), &text).unwrap();
    let out = ok(&["encode", "wide.csv", "-o", "wide.toc"], &dir);
    assert!(out.contains("rows 3, columns 100000"), "{out}");
    // A BOM before the header: "label" is found.
    std::fs::write(dir.join("bom.csv"), "\u{feff}label,x\n1,2\n0,3\n").unwrap();
    let out = ok(&["encode", "bom.csv", "-o", "bom.toc"], &dir);
    assert!(out.contains("rows 2, columns 1"), "{out}");
}

/// Runs `script` (a pipeline ending in `tocpile ARGS`, the binary being
/// `$T`) through `sh` under a 1 GB address space; returns the exit code
/// and stderr.
fn pipeline_under_1_gb(script: &str, dir: &Path) -> (Option<i32>, String) {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v 1000000 && {script}"))
        .env("T", env!("CARGO_BIN_EXE_tocpile"))
        .current_dir(dir)
        .output()
        .expect("run sh");
    (o.status.code(), stderr(&o))
}

#[cfg(unix)]
#[test]
fn item8_a_huge_line_is_the_line_error_under_a_1_gb_address_space() {
    let (_guard, dir) = fixture();
    // 1.1 GB of digits and no line break, on standard input: the line
    // error (the line cap itself used to need 2 GiB and aborted).
    let (code, err) = pipeline_under_1_gb(
        "head -c 1100000000 /dev/zero | tr '\\0' 1 | \"$T\" encode - --cols 10 -o huge.toc",
        &dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("standard input:1:1: expected a line of at most 1 GiB (1073741824 bytes)"),
        "{err}"
    );
    assert!(!err.contains("MAX_LINE_BYTES"), "{err}");
    // A CSV record of 300 MB: an error naming the record's limit (the csv
    // crate's buffers had no limit).
    let (code, err) = pipeline_under_1_gb(
        "(printf 'label,x\\n1,'; head -c 300000000 /dev/zero | tr '\\0' 1) > long.csv && \
         \"$T\" encode long.csv -o long.toc",
        &dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("long.csv") && err.contains("a record (line) longer than 255 MiB"),
        "{err}"
    );
    std::fs::remove_file(dir.join("long.csv")).unwrap();
    assert!(!dir.join("huge.toc").exists() && !dir.join("long.toc").exists());
}

#[cfg(unix)]
#[test]
fn item8_a_column_of_6_000_000_makes_ratio_and_bench_kernels_work_or_fail_clearly() {
    let (_guard, dir) = fixture();
    std::fs::write(
        dir.join("col6m.libsvm"),
        "1 6000000:1\n0 1:1 2:3\n1 5:2\n0 6000000:2\n",
    )
    .unwrap();
    // ratio: the dense formats' 192 MB batches are skipped, with the
    // reason, where they would not fit; the others measured.
    let (code, err) = under("ulimit -v 1000000 &&", &["ratio", "col6m.libsvm"], &dir);
    assert_eq!(code, Some(0), "{err}");
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000 && exec \"$T\" ratio col6m.libsvm")
        .env("T", env!("CARGO_BIN_EXE_tocpile"))
        .current_dir(&dir)
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(out.contains("| 100% (4 rows) | 1 | - |"), "{out}");
    assert!(
        out.contains("lowered to") && out.contains("ulimit -v"),
        "{out}"
    );
    // bench kernels: the matrices of A.M and M.A (6,000,000 x 20) are
    // above the parameter limit; with the dense formats too big for the
    // address space, they are named first.
    let (code, err) = under(
        "ulimit -v 1000000 &&",
        &["bench", "kernels", "col6m.libsvm"],
        &dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("the dense formats (DEN, DVI, snappy, gzip, lz4)"),
        "{err}"
    );
    let (code, err) = under(
        "ulimit -v 1000000 &&",
        &["bench", "kernels", "col6m.libsvm", "--formats", "csr,toc"],
        &dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cells of the matrices of A.M and M.A") && err.contains("--max-params N"),
        "{err}"
    );
    // Raised: the allocation is refused, and said so.
    let (code, err) = under(
        "ulimit -v 1000000 &&",
        &[
            "bench",
            "kernels",
            "col6m.libsvm",
            "--formats",
            "csr,toc",
            "--max-params",
            "200000000",
        ],
        &dir,
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("could not allocate 960000000 bytes"), "{err}");
}

#[cfg(unix)]
#[test]
fn item11_messages_are_written_for_a_person() {
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    // A dataset file, or an empty file, given as a model.
    fails(
        &["evaluate", "s.toc", "s.toc"],
        &dir,
        &["s.toc: this is a tocpile dataset file (magic \"TOCD\"), not a tocpile model file (magic \"TOCM\")"],
    );
    std::fs::write(dir.join("empty.model"), b"").unwrap();
    fails(
        &["predict", "empty.model", "s.toc"],
        &dir,
        &["empty.model: the input is empty; expected a tocpile model file (magic \"TOCM\")"],
    );
    // A label of 1e300 is printed as such, not as 301 digits.
    std::fs::write(dir.join("big.libsvm"), "1e300 1:1\n0 1:2\n").unwrap();
    ok(&["encode", "big.libsvm", "-o", "big.toc"], &dir);
    let err = fails(
        &["train", "big.toc", "--model", "softmax"],
        &dir,
        &["label 1e300 is not a class index"],
    );
    assert!(!err.contains("000000000000"), "{err}");
    // A footer with page_rows 0 (which no writer writes): Shuffle Once
    // failed naming no file; the open now names it and the field.
    let mut bytes = std::fs::read(dir.join("s.toc")).unwrap();
    let n = bytes.len();
    let footer_at = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().unwrap()) as usize;
    let mut at = footer_at + 4;
    for _ in 0..3 {
        // n_cols, n_rows, nnz: varints.
        while bytes[at] & 0x80 != 0 {
            at += 1;
        }
        at += 1;
    }
    at += 1; // the format byte
    assert_eq!(bytes[at], 50, "page_rows of the default encode (one byte)");
    bytes[at] = 0;
    let crc = crc32(&bytes[footer_at..n - 16]);
    bytes[n - 8..n - 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(dir.join("pr0.toc"), &bytes).unwrap();
    for args in [
        vec!["train", "pr0.toc", "--shuffle", "once"],
        vec!["inspect", "pr0.toc"],
    ] {
        fails(
            &args,
            &dir,
            &[
                "pr0.toc",
                "page_rows (rows per page)",
                "is 0, at least 1 required",
            ],
        );
    }
    // --help to a reader that is gone: quiet, exit code 0 (it panicked on
    // the closed pipe, exit code 101). The reader closes its end at once;
    // tocpile writes a second later.
    let o = Command::new("sh")
        .arg("-c")
        .arg(
            "(sleep 1; \"$T\" bench kernels --help; echo \"status $?\" >&2) | \
             (exec 0<&-; sleep 2)",
        )
        .env("T", env!("CARGO_BIN_EXE_tocpile"))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        err.contains("status 0") && !err.contains("panicked"),
        "{err}"
    );
}

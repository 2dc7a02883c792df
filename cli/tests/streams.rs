//! Streams as input (`-`, `/dev/stdin`, FIFOs, gzip'd standard input),
//! interruption (SIGINT, SIGTERM) leaving no temporary file, stale
//! temporaries of dead processes, and misuse refused before anything is
//! written: each a reproduction of issue 12, through the binary.

#![cfg(unix)]

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Runs tocpile in `dir` with `input` on its standard input.
fn with_stdin(args: &[&str], dir: &Path, input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tocpile");
    let mut stdin = child.stdin.take().unwrap();
    let bytes = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// Names of the entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Hidden entries of `dir` (temporary and scratch files are hidden).
fn hidden(dir: &Path) -> Vec<String> {
    entries(dir)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// `inspect --json` figures that say two files hold the same rows.
fn summary(file: &str, dir: &Path) -> (u64, u64, u64) {
    let v = json(&["inspect", file, "--json"], dir);
    (
        v["rows"].as_u64().unwrap(),
        v["cols"].as_u64().unwrap(),
        v["nnz"].as_u64().unwrap(),
    )
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip");
    let mut stdin = child.stdin.take().unwrap();
    let bytes = bytes.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&bytes).unwrap());
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out.stdout
}

#[test]
fn pipe_to_encode_keeps_every_row() {
    // Issue 12, 4: `cat f | tocpile encode /dev/stdin` wrote 0 rows, exit 0.
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "file.toc"], &dir);
    let want = summary("file.toc", &dir);
    assert_eq!(want, (40, 6, 112));
    let text = std::fs::read(dir.join("small.libsvm")).unwrap();
    let runs: [(&[&str], Vec<u8>); 5] = [
        (&["encode", "-", "-o", "a.toc"], text.clone()),
        (&["encode", "/dev/stdin", "-o", "b.toc"], text.clone()),
        (&["encode", "-", "--cols", "6", "-o", "c.toc"], text.clone()),
        (&["encode", "-", "-o", "d.toc"], gzip(&text)),
        (&["encode", "-", "--cols", "6", "-o", "e.toc"], gzip(&text)),
    ];
    for (args, input) in runs {
        let o = with_stdin(args, &dir, &input);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = args[args.len() - 1];
        assert_eq!(summary(out, &dir), want, "{args:?}");
        assert_eq!(
            std::fs::read(dir.join(out)).unwrap(),
            std::fs::read(dir.join("file.toc")).unwrap(),
            "{args:?}"
        );
    }
    // The copy of standard input is gone.
    assert_eq!(hidden(&dir), Vec::<String>::new());
}

#[test]
fn a_stream_error_names_standard_input_and_its_line() {
    let (_guard, dir) = fixture();
    for extra in [&[][..], &["--cols", "6"][..]] {
        let mut args = vec!["encode", "-", "-o", "bad.toc"];
        args.extend_from_slice(extra);
        let o = with_stdin(&args, &dir, b"1 1:1\n0 2:x\n");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains("standard input:2:5"), "{args:?}: {err}");
        assert!(!dir.join("bad.toc").exists());
    }
    assert_eq!(hidden(&dir), Vec::<String>::new());
}

#[test]
fn a_fifo_is_read_once() {
    // Issue 12, 4: a FIFO hung (the second pass waited for a writer).
    let (_guard, dir) = fixture();
    let fifo = dir.join("rows.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let text = std::fs::read(dir.join("small.libsvm")).unwrap();
    for (k, extra) in [&[][..], &["--cols", "6"][..]].into_iter().enumerate() {
        let writer = {
            let (fifo, text) = (fifo.clone(), text.clone());
            std::thread::spawn(move || std::fs::write(fifo, text).unwrap())
        };
        let out = format!("fifo{k}.toc");
        let mut args = vec!["encode", "rows.fifo", "-o", &out];
        args.extend_from_slice(extra);
        ok(&args, &dir);
        writer.join().unwrap();
        assert_eq!(summary(&out, &dir), (40, 6, 112));
    }
}

#[test]
fn csv_from_a_pipe_with_and_without_a_schema() {
    // Issue 12, 4: CSV from a pipe gave a misleading error.
    let (_guard, dir) = fixture();
    ok(&["encode", "small.csv", "-o", "file.toc"], &dir);
    let want = std::fs::read(dir.join("file.toc")).unwrap();
    let text = std::fs::read(dir.join("small.csv")).unwrap();
    let runs: [(&[&str], Vec<u8>); 3] = [
        (
            &["encode", "-", "--input-format", "csv", "-o", "a.toc"],
            text.clone(),
        ),
        (
            &[
                "encode",
                "-",
                "--input-format",
                "csv",
                "--schema",
                "file.toc",
                "-o",
                "b.toc",
            ],
            text.clone(),
        ),
        (
            &["encode", "-", "--input-format", "csv", "-o", "c.toc"],
            gzip(&text),
        ),
    ];
    for (args, input) in runs {
        let o = with_stdin(args, &dir, &input);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let out = args[args.len() - 1];
        assert_eq!(std::fs::read(dir.join(out)).unwrap(), want, "{args:?}");
    }
    assert_eq!(hidden(&dir), Vec::<String>::new());
    // Without --input-format: a stream has no extension to tell CSV by.
    let o = with_stdin(&["encode", "-", "-o", "d.toc"], &dir, &text);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("standard input: the first line looks like a CSV header")
            && err.contains("--input-format csv"),
        "{err}"
    );
    assert!(!dir.join("d.toc").exists());
}

#[test]
fn the_copy_of_a_stream_goes_to_the_scratch_directory() {
    let (_guard, dir) = fixture();
    let text = std::fs::read(dir.join("small.libsvm")).unwrap();
    // A scratch directory that does not exist: the error names it and the
    // options that avoid the copy.
    let o = with_stdin(
        &["encode", "-", "--scratch-dir", "nowhere", "-o", "x.toc"],
        &dir,
        &text,
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("nowhere/.tocpile-stream-"), "{err}");
    assert!(
        err.contains("--scratch-dir") && err.contains("--cols"),
        "{err}"
    );
    // With --cols no copy is made at all.
    let o = with_stdin(
        &[
            "encode",
            "-",
            "--cols",
            "6",
            "--scratch-dir",
            "nowhere",
            "-o",
            "x.toc",
        ],
        &dir,
        &text,
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A LIBSVM row of 60 columns for the interruption tests.
fn wide_row(i: usize) -> String {
    let mut row = format!("{}", i % 2);
    for c in 1..=60 {
        row.push_str(&format!(" {c}:{}", (i * 7 + c) % 13 + 1));
    }
    row.push('\n');
    row
}

/// Waits until `dir` has a hidden entry (a temporary or scratch file),
/// failing after a minute (a broken build, not a slow machine).
fn wait_for_hidden(dir: &Path, child: &mut Child) {
    let start = Instant::now();
    while hidden(dir).is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("tocpile ended ({status}) before writing a temporary file");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no temporary file"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends SIG`signal` to `child` (through the shell's `kill` builtin: no
/// procps needed).
fn kill(child: &Child, signal: &str) {
    let status = Command::new("sh")
        .args(["-c", &format!("kill -{signal} {}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigint_and_sigterm_during_encode_leave_no_temporary_file() {
    // Issue 12, 5: killing encode left `.NAME.tmp-PID` files. Rows keep
    // coming on standard input until the process stops, so the signal
    // always lands mid-encode: with --cols the writer notices the flag at
    // its next chunk; without, the copy of the stream does.
    for (signal, code, extra) in [
        ("INT", 130, &["--cols", "60"][..]),
        ("TERM", 143, &["--cols", "60"][..]),
        ("INT", 130, &[][..]),
        ("TERM", 143, &[][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["encode", "-", "-o", "out.toc", "--block-bytes", "4096"];
        args.extend_from_slice(extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
            .args(&args)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let rows: String = (0..2000).map(wide_row).collect();
            // Ends when tocpile exits (a broken pipe).
            while stdin.write_all(rows.as_bytes()).is_ok() {}
        });
        wait_for_hidden(dir.path(), &mut child);
        kill(&child, signal);
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{signal} {extra:?}: {err}");
        assert!(
            err.contains(&format!("interrupted by SIG{signal}")),
            "{err}"
        );
        assert_eq!(
            entries(dir.path()),
            Vec::<String>::new(),
            "{signal} {extra:?}"
        );
    }
}

#[test]
fn a_signal_mid_encode_of_a_file_removes_the_temporary_file() {
    // A generated file of 60,000 wide rows (about 20 MB). The process is
    // frozen (SIGSTOP) as soon as its temporary file appears, signalled,
    // then resumed: the signal lands mid-encode however fast the machine.
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..60_000).map(wide_row).collect();
    std::fs::write(dir.path().join("big.libsvm"), rows).unwrap();
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
            .args(["encode", "big.libsvm", "-o", "big.toc"])
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_hidden(dir.path(), &mut child);
        kill(&child, "STOP");
        kill(&child, signal);
        kill(&child, "CONT");
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "SIG{signal}: {err}");
        assert!(
            err.contains(&format!("interrupted by SIG{signal}")),
            "{err}"
        );
        assert_eq!(entries(dir.path()), ["big.libsvm"], "SIG{signal}");
    }
}

#[test]
fn a_signal_while_blocked_on_a_read_still_cleans_up() {
    // Standard input stays open and silent: the process cannot notice the
    // flag by itself, so the handler removes the files and exits.
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args(["encode", "-", "--cols", "60", "-o", "out.toc"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(wide_row(0).as_bytes()).unwrap();
    wait_for_hidden(dir.path(), &mut child);
    kill(&child, "TERM");
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

#[test]
fn killing_train_shuffle_once_removes_its_scratch_copy() {
    // Issue 12, 5: killing `train --shuffle once` left a full-size hidden
    // copy beside the input. The copy goes to --scratch-dir, and a stale
    // one of a dead process there is removed by the next run.
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "small.toc"], &dir);
    std::fs::create_dir(dir.join("scratch")).unwrap();
    // No process has an id this large (Linux allows at most 2^22).
    let stale = dir.join("scratch/.tocpile-shuffled-99999999-0-0.toc");
    std::fs::write(&stale, b"left by a killed run").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args([
            "train",
            "small.toc",
            "--shuffle",
            "once",
            "--scratch-dir",
            "scratch",
            "--epochs",
            "1000000",
        ])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for this run's copy (the stale one goes first).
    let start = Instant::now();
    while !hidden(&dir.join("scratch"))
        .iter()
        .any(|n| n.starts_with(&format!(".tocpile-shuffled-{}-", child.id())))
    {
        assert!(start.elapsed() < Duration::from_secs(60), "no scratch copy");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!stale.exists());
    kill(&child, "INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(entries(&dir.join("scratch")), Vec::<String>::new());
    assert_eq!(hidden(&dir), Vec::<String>::new());
}

#[test]
fn stale_temporaries_of_dead_processes_are_removed() {
    // SIGKILL cannot be caught: the next encode of the same output removes
    // what a killed one left (its lock is free), and leaves a live
    // writer's file alone (locked), whatever process ids their names
    // carry (issue 23, 4).
    let (_guard, dir) = fixture();
    let dead = ".small.toc.tmp-99999999-0";
    let live = ".small.toc.tmp-99999998-0";
    std::fs::write(dir.join(dead), b"partial").unwrap();
    std::fs::write(dir.join(live), b"being written").unwrap();
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(live))
        .unwrap();
    held.lock().unwrap();
    ok(&["encode", "small.libsvm", "-o", "small.toc"], &dir);
    assert_eq!(hidden(&dir), [live]);
    drop(held);
    ok(&["encode", "small.libsvm", "-o", "small.toc"], &dir);
    assert_eq!(hidden(&dir), Vec::<String>::new());
}

#[test]
fn encode_refuses_to_overwrite_its_input() {
    // Issue 12, 6: `encode X -o X` replaced the source text.
    let (_guard, dir) = fixture();
    let before = std::fs::read(dir.join("small.libsvm")).unwrap();
    std::os::unix::fs::symlink("small.libsvm", dir.join("link.libsvm")).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    for output in [
        "small.libsvm",
        "./small.libsvm",
        "sub/../small.libsvm",
        "link.libsvm",
    ] {
        // A runtime error (exit 1) since issue 34, item 9, like every
        // other output that is an input (`outputs.rs`).
        runtime_error(
            &["encode", "small.libsvm", "-o", output],
            &dir,
            &["would replace the input"],
        );
    }
    assert_eq!(std::fs::read(dir.join("small.libsvm")).unwrap(), before);
}

#[test]
fn writer_options_beyond_the_readers_limits_are_usage_errors() {
    // Issue 12, 6: these wrote a file the reader then rejected.
    let (_guard, dir) = fixture();
    for (option, value) in [
        ("--page-rows", "4294967296"),
        ("--block-bytes", "5000000000"),
    ] {
        usage_error(
            &["encode", "small.libsvm", option, value, "-o", "x.toc"],
            &dir,
            "1..=4294967295",
        );
        assert!(!dir.join("x.toc").exists());
    }
    // The largest accepted values write a file that reads back.
    ok(
        &[
            "encode",
            "small.libsvm",
            "--page-rows",
            "4294967295",
            "--block-bytes",
            "4294967295",
            "-o",
            "x.toc",
        ],
        &dir,
    );
    assert_eq!(summary("x.toc", &dir), (40, 6, 112));
}

#[test]
fn an_eval_file_with_other_columns_fails_before_the_first_epoch() {
    // Issue 12, 6: it failed only after the first epoch, not naming the file.
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "train.toc"], &dir);
    ok(
        &["encode", "small.libsvm", "--cols", "9", "-o", "test.toc"],
        &dir,
    );
    let o = tocpile(&["train", "train.toc", "--eval", "test.toc"], &dir);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("test.toc: --eval file has 9 columns"), "{err}");
    assert!(err.contains("--cols 6"), "{err}");
    assert!(stdout(&o).is_empty(), "no epoch ran: {}", stdout(&o));
}

#[test]
fn binary_models_warn_about_more_than_two_labels() {
    // Issue 12, 6: lr/svm accepted multi-class labels without a word.
    let (_guard, dir) = fixture();
    let rows: String = (0..30)
        .map(|i| format!("{} 1:1 2:{}\n", i % 3, i % 5 + 1))
        .collect();
    std::fs::write(dir.join("three.libsvm"), rows).unwrap();
    ok(&["encode", "three.libsvm", "-o", "three.toc"], &dir);
    for model in ["lr", "svm"] {
        let o = tocpile(
            &["train", "three.toc", "--model", model, "--epochs", "1"],
            &dir,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("more than two distinct labels (0, 1, 2"),
            "{err}"
        );
    }
    ok(&["encode", "small.libsvm", "-o", "small.toc"], &dir);
    let o = tocpile(&["train", "small.toc", "--epochs", "1"], &dir);
    assert!(!stderr(&o).contains("distinct labels"), "{}", stderr(&o));
}

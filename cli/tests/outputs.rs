//! The rule every output of every command follows (issue 34, items 3 to
//! 5; `cli/src/output.rs`): an output that is an input is refused before
//! any work, an output on standard output gets the data alone (the human
//! text goes to standard error), and a read-only file is replaced only
//! with `--force`.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::*;

/// A dataset `s.toc` and a model `m.model` of the fixture's rows.
fn files(dir: &Path) {
    ok(&["encode", "small.libsvm", "-o", "s.toc"], dir);
    ok(
        &["train", "s.toc", "--epochs", "1", "--save", "m.model"],
        dir,
    );
}

/// Runs tocpile in `dir` with standard output going to `stdout`.
fn with_stdout(args: &[&str], dir: &Path, stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .stdout(stdout)
        .output()
        .expect("run tocpile")
}

/// Item 3: `predict M D -o D`, `-o M`, `train D --save D`, `--plot D`,
/// `ratio X --plot X` exited 0 and replaced their input (only `encode X
/// -o X` was refused, with exit code 2): every one is exit code 1 before
/// any work, however the path is spelled (a symbolic link, a hard link,
/// `./`), and the input is unchanged.
#[test]
fn item3_an_output_that_is_an_input_is_refused() {
    let (_guard, dir) = fixture();
    files(&dir);
    std::os::unix::fs::symlink("s.toc", dir.join("link.toc")).unwrap();
    std::fs::hard_link(dir.join("m.model"), dir.join("hard.model")).unwrap();
    let before: Vec<Vec<u8>> = ["s.toc", "m.model", "small.libsvm"]
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    let cases: [&[&str]; 9] = [
        &["predict", "m.model", "s.toc", "-o", "s.toc"],
        &["predict", "m.model", "s.toc", "-o", "m.model"],
        &["predict", "m.model", "s.toc", "-o", "link.toc"],
        &["predict", "m.model", "s.toc", "-o", "hard.model"],
        &["train", "s.toc", "--save", "s.toc"],
        &["train", "s.toc", "--plot", "./s.toc"],
        &["train", "s.toc", "--eval", "s.toc", "--save", "link.toc"],
        &["ratio", "small.libsvm", "--plot", "small.libsvm"],
        &["encode", "small.libsvm", "-o", "small.libsvm"],
    ];
    for args in cases {
        let err = runtime_error(args, &dir, &["would replace the input"]);
        assert!(err.contains(args[args.len() - 1]), "{err}");
    }
    // Two outputs in one file.
    runtime_error(
        &["train", "s.toc", "--save", "out.bin", "--plot", "out.bin"],
        &dir,
        &["--plot out.bin", "the same file as --save out.bin"],
    )
    .to_string();
    let after: Vec<Vec<u8>> = ["s.toc", "m.model", "small.libsvm"]
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    assert_eq!(before, after);
}

/// Item 4: `encode X -o /dev/stdout | cat > p.toc` gave the file's bytes
/// followed by the summary; `-o -` wrote a file named `-`. Standard
/// output now carries the file alone, complete (the same bytes as `-o
/// FILE`), and the summary goes to standard error, through a pipe, to a
/// file standard output was redirected to, and as `-`.
#[test]
fn item4_an_output_on_standard_output_gets_the_data_alone() {
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "want.toc"], &dir);
    let want = std::fs::read(dir.join("want.toc")).unwrap();
    for output in ["/dev/stdout", "-"] {
        let o = with_stdout(
            &["encode", "small.libsvm", "-o", output],
            &dir,
            Stdio::piped(),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(o.stdout, want, "-o {output} through a pipe");
        assert!(stderr(&o).contains("rows 40"), "{}", stderr(&o));
        assert!(!dir.join("-").exists());
    }
    // Standard output redirected to a file, given as -o too, or as -.
    for (name, output) in [("p.toc", "p.toc"), ("q.toc", "-"), ("r.toc", "/dev/stdout")] {
        let file = std::fs::File::create(dir.join(name)).unwrap();
        let o = with_stdout(&["encode", "small.libsvm", "-o", output], &dir, file.into());
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), want, "{name}");
        ok(&["inspect", name], &dir);
    }
    // Such a file followed by text (what `-o /dev/stdout | cat > p.toc`
    // gave) is said to be that, not "truncated at byte 2026 of at least
    // 1646".
    let mut appended = want.clone();
    appended.extend_from_slice(b"wrote /dev/stdout\nrows 40\n");
    std::fs::write(dir.join("appended.toc"), &appended).unwrap();
    runtime_error(
        &["inspect", "appended.toc"],
        &dir,
        &[&format!(
            "26 bytes follow the file's end at byte {}",
            want.len()
        )],
    );
    // The other outputs: predictions, a model, a chart.
    files(&dir);
    let o = with_stdout(
        &["predict", "m.model", "s.toc", "-o", "-"],
        &dir,
        Stdio::piped(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        o.stdout,
        ok(&["predict", "m.model", "s.toc"], &dir).as_bytes()
    );
    let o = with_stdout(
        &["train", "s.toc", "--epochs", "1", "--save", "-"],
        &dir,
        Stdio::piped(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.starts_with(b"TOCM"), "a model file");
    assert!(stderr(&o).contains("| epoch |"), "the table on stderr");
    std::fs::write(dir.join("piped.model"), &o.stdout).unwrap();
    ok(&["evaluate", "piped.model", "s.toc"], &dir);
    let o = with_stdout(
        &["ratio", "small.libsvm", "--plot", "-"],
        &dir,
        Stdio::piped(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("<svg"));
    // One standard output for two outputs is refused.
    runtime_error(
        &["train", "s.toc", "--save", "-", "--plot", "/dev/stdout"],
        &dir,
        &["--plot /dev/stdout", "standard output"],
    );
    // A failed encode writes nothing to standard output.
    std::fs::write(dir.join("bad.libsvm"), "1 1:1\n0 2:x\n").unwrap();
    let o = with_stdout(&["encode", "bad.libsvm", "-o", "-"], &dir, Stdio::piped());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let hidden: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
}

/// Item 5: a 0444 file in a writable directory was silently replaced by
/// `encode -o` (a rename ignores the file's mode): refused, naming the
/// file, unless `--force`.
#[test]
fn item5_a_read_only_output_is_replaced_only_with_force() {
    use std::os::unix::fs::PermissionsExt;
    let (_guard, dir) = fixture();
    files(&dir);
    let ro = dir.join("ro.out");
    for args in [
        vec!["encode", "small.libsvm", "-o", "ro.out"],
        vec!["predict", "m.model", "s.toc", "-o", "ro.out"],
        vec!["train", "s.toc", "--epochs", "1", "--save", "ro.out"],
        vec!["ratio", "small.libsvm", "--plot", "ro.out"],
    ] {
        std::fs::write(&ro, b"keep").unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
        runtime_error(&args, &dir, &["ro.out", "read-only", "--force"]);
        assert_eq!(std::fs::read(&ro).unwrap(), b"keep", "{args:?}");
        let mut forced = args.clone();
        forced.push("--force");
        ok(&forced, &dir);
        assert_ne!(std::fs::read(&ro).unwrap(), b"keep", "{forced:?}");
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

//! The resource policy from the command line: every forged file of the
//! reproductions (a decompression bomb, huge column ids, footers claiming
//! 2^40 rows or non-zeros) gives an error naming the limit and exit code
//! 1, also under a 512 MiB address-space limit where an abort (134) would
//! show any allocation the policy missed; and the messages for a
//! truncated file, text given where a dataset file belongs and compressed
//! input tocpile does not read.

mod common;
#[path = "../../tests/support/forge.rs"]
mod forge;

use std::path::Path;
use std::process::Command;

use common::*;
use forge::{bomb_file, lying_footer, Claims};

/// Exit code 1; the last line of stderr (train may warn first) is the
/// error and mentions each of `mentions`.
fn fails(args: &[&str], dir: &Path, mentions: &[&str]) -> String {
    let o = tocpile(args, dir);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    let last = err.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("tocpile: "), "{args:?}: {err}");
    for m in mentions {
        assert!(last.contains(m), "{args:?}: {last} lacks {m:?}");
    }
    last
}

/// The commands that read a dataset file, for `file`.
fn readers(file: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["inspect", file],
        vec!["train", file, "--mode", "exact", "--epochs", "1"],
        vec!["train", file, "--shuffle", "once", "--epochs", "1"],
        vec!["ratio", file],
        vec!["bench", "kernels", file],
    ]
}

/// The forged files of the reproductions, written to `dir`; returns their
/// names.
fn forge_all(dir: &Path) -> Vec<&'static str> {
    let truth = Claims {
        n_cols: 10,
        n_rows: 4,
        nnz: 4,
    };
    let files: [(&str, Vec<u8>); 4] = [
        ("bomb.toc", bomb_file(1 << 16, true)),
        ("bomb-lying.toc", bomb_file(1 << 16, false)),
        (
            "rows40.toc",
            lying_footer(
                4,
                Claims {
                    n_rows: 1 << 40,
                    ..truth
                },
            ),
        ),
        (
            "nnz40.toc",
            lying_footer(
                4,
                Claims {
                    nnz: 1 << 40,
                    ..truth
                },
            ),
        ),
    ];
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    std::fs::write(dir.join("h.libsvm"), "1 4294967296:1\n").unwrap();
    std::fs::write(dir.join("e8.libsvm"), "1 100000000:1\n0 3:1\n").unwrap();
    ok(&["encode", "h.libsvm", "-o", "h.toc"], dir);
    ok(&["encode", "e8.libsvm", "-o", "e8.toc"], dir);
    vec![
        "bomb.toc",
        "bomb-lying.toc",
        "rows40.toc",
        "nnz40.toc",
        "h.toc",
        "e8.toc",
    ]
}

/// Files in `dir` whose names start with a dot (temporaries, buckets).
fn hidden_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[test]
fn decompression_bomb_is_an_error_in_every_command() {
    let (_guard, dir) = fixture();
    forge_all(&dir);
    for args in readers("bomb.toc") {
        fails(
            &args,
            &dir,
            &["bomb.toc", "footer non-zeros", "--max-page-nnz"],
        );
    }
    for args in readers("bomb-lying.toc") {
        fails(
            &args,
            &dir,
            &[
                "bomb-lying.toc",
                "block 0, page 0",
                "decoded non-zeros of a page is 2147516416",
                "--max-page-nnz",
            ],
        );
    }
    assert!(hidden_files(&dir).is_empty(), "{:?}", hidden_files(&dir));
}

#[test]
fn huge_column_ids_are_an_error_naming_max_cols() {
    let (_guard, dir) = fixture();
    forge_all(&dir);
    for file in ["h.toc", "e8.toc"] {
        for model in ["lr", "softmax", "mlp"] {
            fails(
                &["train", file, "--model", model, "--classes", "2"],
                &dir,
                &[file, "model columns", "--max-cols"],
            );
        }
    }
    for file in ["h.libsvm", "e8.libsvm", "e8.toc"] {
        fails(&["ratio", file], &dir, &[file, "columns", "--max-cols"]);
        fails(
            &["bench", "kernels", file],
            &dir,
            &[file, "columns", "--max-cols"],
        );
    }
}

#[test]
fn footer_claiming_2_pow_40_rows_or_nonzeros_is_an_error() {
    let (_guard, dir) = fixture();
    forge_all(&dir);
    for args in readers("rows40.toc") {
        fails(&args, &dir, &["rows40.toc", "block rows", "1099511627776"]);
    }
    for args in readers("nnz40.toc") {
        fails(
            &args,
            &dir,
            &["nnz40.toc", "footer non-zeros", "1099511627776"],
        );
    }
    // A smaller lie passes the open; reading the pages finds it.
    let lie = lying_footer(
        4,
        Claims {
            n_cols: 10,
            n_rows: 4,
            nnz: 7,
        },
    );
    std::fs::write(dir.join("lie.toc"), lie).unwrap();
    fails(
        &["inspect", "lie.toc"],
        &dir,
        &[
            "lie.toc",
            "footer non-zeros (the pages decode to): expected 7, found 4",
        ],
    );
    fails(
        &["train", "lie.toc", "--shuffle", "once", "--epochs", "1"],
        &dir,
        &["lie.toc", "footer non-zeros"],
    );
    ok(&["inspect", "lie.toc", "--footer-only"], &dir);
    assert!(hidden_files(&dir).is_empty(), "{:?}", hidden_files(&dir));
}

#[test]
fn the_limits_are_raised_and_lowered_by_option() {
    let (_guard, dir) = fixture();
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    ok(&["inspect", "s.toc"], &dir);
    fails(
        &["inspect", "s.toc", "--max-page-nnz", "10"],
        &dir,
        &["s.toc", "above the limit of 10", "--max-page-nnz"],
    );
    fails(
        &["train", "s.toc", "--max-cols", "3"],
        &dir,
        // The sparse scaling section (mostly factors of 1) is checked
        // against the limit when the file opens, before the model is.
        &["is 6, above the limit of 3", "--max-cols"],
    );
    ok(
        &["train", "s.toc", "--max-cols", "6", "--epochs", "1"],
        &dir,
    );
    // The one-line file trains once the limit is raised past its width.
    std::fs::write(dir.join("w.libsvm"), "1 1000:1\n0 3:1\n").unwrap();
    ok(&["encode", "w.libsvm", "-o", "w.toc"], &dir);
    fails(
        &["train", "w.toc", "--max-cols", "999"],
        &dir,
        &["--max-cols"],
    );
    ok(
        &["train", "w.toc", "--max-cols", "1000", "--epochs", "1"],
        &dir,
    );
}

/// Runs the binary with its address space limited to 512 MiB (`ulimit -v`
/// in a shell, which then execs it); returns the exit code.
fn exit_code_under_512_mib(args: &[&str], dir: &Path) -> Option<i32> {
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 524288 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run sh");
    if o.status.code() != Some(1) {
        eprintln!("{args:?}: {}", stderr(&o));
    }
    o.status.code()
}

#[test]
fn forged_files_under_512_mib_exit_1_never_abort() {
    let (_guard, dir) = fixture();
    let files = forge_all(&dir);
    // The limit itself leaves room for a real run.
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    assert_eq!(
        exit_code_under_512_mib(&["train", "s.toc", "--epochs", "1"], &dir),
        Some(0)
    );
    for file in files {
        for args in readers(file) {
            // A file of huge column ids is valid: only allocating for its
            // columns is refused.
            let valid = args[0] == "inspect" && ["h.toc", "e8.toc"].contains(&file);
            let expected = if valid { 0 } else { 1 };
            assert_eq!(
                exit_code_under_512_mib(&args, &dir),
                Some(expected),
                "{args:?}"
            );
        }
    }
    assert!(hidden_files(&dir).is_empty(), "{:?}", hidden_files(&dir));
}

#[test]
fn a_truncated_file_says_where_it_was_cut() {
    let (_guard, dir) = fixture();
    ok(
        &[
            "encode",
            "small.libsvm",
            "-o",
            "s.toc",
            "--page-rows",
            "4",
            "--block-bytes",
            "64",
        ],
        &dir,
    );
    let bytes = std::fs::read(dir.join("s.toc")).unwrap();
    std::fs::write(dir.join("cut.toc"), &bytes[..bytes.len() / 2]).unwrap();
    let half = (bytes.len() / 2).to_string();
    for command in ["inspect", "train"] {
        let err = fails(
            &[command, "cut.toc"],
            &dir,
            &["cut.toc", "truncated at byte"],
        );
        assert!(err.contains(&format!("byte {half} of at least")), "{err}");
        assert!(!err.contains("magic"), "{err}");
    }
}

#[test]
fn text_where_a_dataset_belongs_says_to_encode_it() {
    let (_guard, dir) = fixture();
    for command in ["inspect", "train"] {
        fails(
            &[command, "small.libsvm"],
            &dir,
            &[
                "small.libsvm",
                "this looks like LIBSVM text",
                "tocpile encode",
            ],
        );
        fails(
            &[command, "small.csv"],
            &dir,
            &["small.csv", "this looks like CSV text", "tocpile encode"],
        );
    }
    ok(&["encode", "small.libsvm", "-o", "s.toc"], &dir);
    fails(
        &["train", "s.toc", "--eval", "small.libsvm"],
        &dir,
        &["small.libsvm", "this looks like LIBSVM text"],
    );
}

#[test]
fn compressed_input_tocpile_does_not_read_is_named() {
    let (_guard, dir) = fixture();
    let magics: [(&str, &[u8]); 3] = [
        ("bzip2", b"BZh91AY&SY"),
        ("xz", &[0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4]),
        ("zstd", &[0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x00]),
    ];
    for (name, magic) in magics {
        let file = format!("data.libsvm.{name}");
        std::fs::write(dir.join(&file), magic).unwrap();
        let what = format!("this is {name} data");
        fails(
            &["encode", &file, "-o", "x.toc"],
            &dir,
            &[&file, &what, "decompress it first"],
        );
        fails(&["ratio", &file], &dir, &[&file, &what]);
        fails(&["train", &file], &dir, &[&file, &what, "decompress"]);
    }
    assert!(!dir.join("x.toc").exists());
}

/// Regression (found when the default scaling met the column limit): a
/// file too wide for a scaling (three `f64`s a column, 2^32 columns here)
/// aborted `encode` while allocating the scaling's statistics; it is now
/// encoded without one, with a warning naming the limit.
#[test]
fn encoding_a_file_too_wide_for_a_scaling_warns_and_stores_none() {
    let (_guard, dir) = fixture();
    std::fs::write(dir.join("h.libsvm"), "1 4294967296:1\n").unwrap();
    let out = tocpile(&["encode", "h.libsvm", "-o", "h.toc"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no scaling stored") && err.contains("--max-cols"),
        "{err}"
    );
    let inspect = ok(&["inspect", "h.toc"], &dir);
    assert!(!inspect.contains("scaling"), "{inspect}");
}

/// Sixteen pages, each under the page limit (16,383 rows of a prefix-tree
/// bomb: 134M non-zeros, 2^27 less 8,192), together 2.1 billion non-zeros
/// in 1.5 MB: in one block, and in a block each.
fn in_limit_bombs(dir: &Path) {
    let rows = 16_383;
    let pages: Vec<(u64, Vec<u8>)> = (0..16).map(|_| (rows, forge::bomb_batch(rows))).collect();
    let claims = Claims {
        n_cols: rows,
        n_rows: 16 * rows,
        nnz: 16 * forge::bomb_nnz(rows),
    };
    for (name, per_block) in [("bombs-1.toc", 16), ("bombs-16.toc", 1)] {
        let bytes = forge::dataset_of(forge::TOC_FULL, &pages, per_block, claims);
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

#[test]
fn pages_in_the_page_limit_that_add_up_to_a_bomb_are_an_error_under_512_mib() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    in_limit_bombs(dir);
    for file in ["bombs-1.toc", "bombs-16.toc"] {
        let mut commands = readers(file);
        commands.push(vec!["train", file, "--epochs", "1"]);
        commands.push(vec!["train", file, "--epochs", "1", "--holdout", "0.2"]);
        for args in commands {
            // `inspect` checks without decoding (the file is well formed):
            // it may succeed; the others decode, and must fail cleanly.
            let code = exit_code_under_512_mib(&args, dir);
            let expected: &[i32] = if args[0] == "inspect" { &[0, 1] } else { &[1] };
            assert!(
                code.is_some_and(|c| expected.contains(&c)),
                "{args:?} on pages of in-limit bombs: exit {code:?}"
            );
        }
    }
    // One block's pages add up past the limit on decoded non-zeros: the
    // error names it and how to raise it.
    fails(
        &["train", "bombs-1.toc", "--epochs", "1", "--mode", "exact"],
        dir,
        &["bombs-1.toc", "block 0", "--max-decode-nnz"],
    );
    // A block each: two blocks make the default 10% buffer, which is over
    // the limit.
    fails(
        &["train", "bombs-16.toc", "--epochs", "1"],
        dir,
        &["bombs-16.toc", "buffer", "--max-decode-nnz"],
    );
}

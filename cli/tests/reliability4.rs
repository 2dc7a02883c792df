//! The reproductions of issue 34 ("Reliability round 4") from the command
//! line, one test per item: shared-dictionary bombs, the decode budget on
//! every path, the mini-batch reserve, messages. The output paths (items
//! 3 to 5) are in `outputs.rs`. Runs under an address-space limit go
//! through `sh -c 'ulimit -v ...; exec ...'`.

mod common;
#[path = "../../tests/support/forge.rs"]
mod forge;

use std::path::Path;
use std::process::Command;

use common::*;

/// The address-space limit, in KiB (`ulimit -v`).
const LIMIT_KB: u32 = 1_000_000;

/// Runs tocpile in `dir` under `ulimit -v LIMIT_KB`; returns the exit code
/// and stderr.
fn under_limit(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run sh");
    (o.status.code(), stderr(&o))
}

/// Exit code 1 under the limit, the last line of stderr the error,
/// naming each of `mentions`.
fn fails_under_limit(args: &[&str], dir: &Path, mentions: &[&str]) -> String {
    let (code, err) = under_limit(args, dir);
    assert_eq!(code, Some(1), "{args:?}: {err}");
    let last = err.lines().last().unwrap_or_default().to_string();
    assert!(last.starts_with("tocpile: "), "{args:?}: {err}");
    for m in mentions {
        assert!(last.contains(m), "{args:?}: {last} lacks {m:?}");
    }
    last
}

/// A logistic model over `cols` columns, saved as `name` in `dir`.
fn model(dir: &Path, cols: u32, name: &str) {
    let text = format!("1 1:1 {cols}:1\n0 2:1\n1 3:1\n0 4:1\n");
    std::fs::write(dir.join("m.libsvm"), text).unwrap();
    ok(&["encode", "m.libsvm", "-o", "m.toc"], dir);
    ok(&["train", "m.toc", "--epochs", "1", "--save", name], dir);
}

/// The commands of the issue that read a dataset file `file` (`M` a
/// model of its columns).
fn readers(file: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["predict", "M", file],
        vec!["evaluate", "M", file],
        vec!["train", file, "--mode", "page", "--epochs", "1"],
        vec!["train", file, "--shuffle", "once", "--epochs", "1"],
        vec!["train", file, "--epochs", "1"],
        vec!["ratio", file],
        vec!["bench", "kernels", file],
        vec!["inspect", file],
    ]
}

/// Item 1: 682 KB, one block of 5,000 one-row compact pages, every row
/// the deepest node of a 131,072-node chain dictionary: every command
/// exits 1 naming the file (it aborted, 134, in all but `inspect` and
/// exact-mode `train`).
#[test]
fn item1_shared_dictionary_bombs_are_errors_under_1_gb() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let bytes = forge::dict_bomb_file(5000, 5000, 1 << 17);
    assert_eq!(bytes.len(), 682_243);
    std::fs::write(dir.join("bomb.toc"), bytes).unwrap();
    model(dir, 1 << 17, "M");
    for args in readers("bomb.toc") {
        fails_under_limit(&args, dir, &["bomb.toc"]);
    }
    // 300 blocks of one such page each (39M non-zeros): every block is
    // in the limits; what holds many blocks at once works or says it
    // ran out of memory, naming the file. (Shuffle Once's writer, which
    // re-encodes the rows, is no decoder: it is left out.)
    let bytes = forge::dict_bomb_file(300, 1, 1 << 17);
    std::fs::write(dir.join("blocks.toc"), bytes).unwrap();
    let readers = readers("blocks.toc");
    for args in readers.iter().filter(|a| !a.contains(&"once")) {
        let (code, err) = under_limit(args, dir);
        let last = err.lines().last().unwrap_or_default();
        assert!(
            code == Some(0) || (code == Some(1) && last.contains("tocpile: blocks.toc")),
            "{args:?}: {code:?} {err}"
        );
    }
}

/// Item 2: `--max-decode-nnz` holds on every path that decodes. Eight
/// blocks of 1.3M non-zeros each (ten pages of 131,072) and a limit of
/// 1M: each command names the limit (`train --shuffle once`, `ratio`
/// and `bench` aborted, `predict` and `evaluate` applied no limit).
#[test]
fn item2_the_decode_limit_holds_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let bytes = forge::dict_bomb_file(80, 10, 1 << 17);
    std::fs::write(dir.join("big.toc"), bytes).unwrap();
    model(dir, 1 << 17, "M");
    for mut args in readers("big.toc") {
        args.extend(["--max-decode-nnz", "1000000"]);
        fails_under_limit(
            &args,
            dir,
            &["big.toc", "above the limit of 1000000", "--max-decode-nnz"],
        );
    }
}

/// Item 2 on the loader's whole-file buffer (the default where the file
/// fits the memory budget): decoded rows held at once stay within
/// `--max-decode-nnz` as a buffer of blocks does. The whole file was
/// decoded whatever the limit, each block checked alone: `--buffer 1`
/// past the limit exited 0.
#[test]
fn item2_the_whole_file_buffer_holds_the_decode_limit() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // 60 rows of 100 entries whose values rarely repeat (no shared
    // dictionary pays: decoded values), 3 rows (300 entries) a block.
    let mut s = 12345u64;
    let text: String = (0..60)
        .map(|i| {
            let row: String = (1..=100)
                .map(|j| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    format!(" {j}:{}.{:03}", 1 + (s >> 40) % 9, (s >> 20) % 1000)
                })
                .collect();
            format!("{}{row}\n", i % 2)
        })
        .collect();
    std::fs::write(dir.join("w.libsvm"), text).unwrap();
    let encode = [
        "encode",
        "w.libsvm",
        "-o",
        "w.toc",
        "--page-rows",
        "1",
        "--block-bytes",
        "512",
    ];
    ok(&encode, dir);
    let limit = ["--epochs", "1", "--max-decode-nnz", "1500"];
    let whole = [&["train", "w.toc", "--buffer", "1"][..], &limit].concat();
    fails_under_limit(&whole, dir, &["w.toc", "6000, above the limit of 1500"]);
    // The default buffer is then a fraction (4 blocks, 1,200 entries),
    // and the header says why.
    let o = tocpile(&[&["train", "w.toc"][..], &limit].concat(), dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("the whole file's non-zeros exceed --max-decode-nnz 1500"),
        "{out}"
    );
}

/// Item 6: a genuine 4-row file of 300,000 non-zeros a row (14 MB
/// decoded) trains under 1 GB: the mini-batch's reserve is what the
/// buffer's rows hold, not the average row times the batch's 250 rows
/// (572 MiB asked, "could not allocate ... for a mini-batch's rows").
#[test]
fn item6_the_mini_batch_reserve_is_what_the_batch_can_hold() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let row: String = (1..=300_000).map(|j| format!(" {j}:1")).collect();
    let text: String = (0..4).map(|i| format!("{}{row}\n", i % 2)).collect();
    std::fs::write(dir.join("wide.libsvm"), text).unwrap();
    ok(&["encode", "wide.libsvm", "-o", "wide.toc"], dir);
    let (code, err) = under_limit(&["train", "wide.toc", "--epochs", "1"], dir);
    assert_eq!(code, Some(0), "{err}");
}

/// How many block numbers the parenthesis after "blocks (" lists.
fn block_numbers_listed(err: &str) -> usize {
    let Some((_, after)) = err.split_once("blocks (") else {
        return 0;
    };
    let inside = after.split(')').next().unwrap_or_default();
    inside
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .count()
}

/// The last line of stderr of a run expected to fail with exit code 1.
fn error_of(args: &[&str], dir: &Path) -> String {
    let o = tocpile(args, dir);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    err.lines().last().unwrap_or_default().to_string()
}

/// A small valid file: 4 pages of 3 rows over 10 columns, 2 to a block.
fn small_file() -> Vec<u8> {
    let pages: Vec<(u64, Vec<u8>)> = (0..4).map(|_| (3, forge::small_batch(3, 10))).collect();
    let claims = forge::Claims {
        n_cols: 10,
        n_rows: 12,
        nnz: 12,
    };
    forge::dataset_of(forge::TOC_FULL, &pages, 2, claims)
}

/// A label-mix section (`LMIX`, version 1).
fn label_mix(pages: u64, ratio: f64) -> Vec<u8> {
    let mut out = b"LMIX\x01".to_vec();
    forge::varint(&mut out, pages);
    out.extend_from_slice(&ratio.to_le_bytes());
    out
}

/// Item 9: each message the issue found wrong, as it reads now.
#[test]
fn item9_messages_say_what_was_wrong() {
    let (_guard, dir) = fixture();
    let dir = dir.as_path();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
    // "expected a a compact page ... page, found a a page".
    let labels = forge::int_labels(&[0], &[0]);
    // (First byte 3: no form; 2 is a page of row ids, named as such.)
    let page = vec![(1, labels, vec![3, 1, 1, 2, 1])];
    let claims = forge::Claims {
        n_cols: 4,
        n_rows: 1,
        nnz: 1,
    };
    let file = forge::dataset_versioned(forge::TOC_FULL, 4, &page, 1, claims);
    let section = forge::shared_section(&[(1, forge::chain_dict(4))]);
    write("form.toc", &forge::with_footer_sections(&file, &section));
    let err = error_of(&["inspect", "form.toc"], dir);
    assert!(
        err.contains("expected a compact page (first byte 1) or a self-contained TOC batch")
            && err.contains("found a page of another first byte")
            && !err.contains("a a ")
            && !err.ends_with("page page"),
        "{err}"
    );
    // Trailing footer bytes were "after the batch".
    write(
        "trail.toc",
        &forge::with_footer_sections(&small_file(), b"\0\0"),
    );
    let err = error_of(&["inspect", "trail.toc"], dir);
    assert!(
        err.contains("2 unexpected bytes after the footer's last section"),
        "{err}"
    );
    // A NaN label-mix ratio was printed as its bits, 1e308 accepted, the
    // page count not checked against the file's 4 pages.
    for (pages, ratio, what) in [
        (4, f64::NAN, "is NaN"),
        (4, -1.0, "is -1"),
        (4, 1e308, "is 1e308"),
        (4, 3.7, "is 3.7"),
    ] {
        write(
            "mix.toc",
            &forge::with_footer_sections(&small_file(), &label_mix(pages, ratio)),
        );
        let err = error_of(&["inspect", "mix.toc"], dir);
        assert!(
            err.contains("label mix ratio")
                && err.contains(what)
                && err.contains("from 0 to (rows - 1) / (pages - 1)")
                && !err.contains("9221120237041090560"),
            "{err}"
        );
    }
    write(
        "mix.toc",
        &forge::with_footer_sections(&small_file(), &label_mix(4, 3.6)),
    );
    ok(&["inspect", "mix.toc"], dir);
    for pages in [5, 1] {
        write(
            "mix.toc",
            &forge::with_footer_sections(&small_file(), &label_mix(pages, 1.0)),
        );
        let err = error_of(&["inspect", "mix.toc"], dir);
        assert!(err.contains("label mix pages"), "{err}");
    }
    // Version errors name their section ("this build reads up to 1").
    let mut shared = forge::shared_section(&[(2, Vec::new())]);
    shared[4] = 2;
    write(
        "shrd.toc",
        &forge::with_footer_sections(&small_file(), &shared),
    );
    let err = error_of(&["inspect", "shrd.toc"], dir);
    assert!(
        err.contains("unsupported shared-dictionary section (SHRD) version 2"),
        "{err}"
    );
    // The buffer limit listed every block of the buffer.
    ok(
        &[
            "encode",
            "small.libsvm",
            "-o",
            "many.toc",
            "--page-rows",
            "1",
            "--block-bytes",
            "1",
        ],
        dir,
    );
    let err = error_of(
        &[
            "train",
            "many.toc",
            "--mode",
            "exact",
            "--buffer",
            "0.9",
            "--max-decode-nnz",
            "10",
        ],
        dir,
    );
    // The first and last of them (a buffer of the whole file is its
    // mini-batches' to check, `item2_the_whole_file_buffer_...`).
    let listed = block_numbers_listed(&err);
    assert!(
        err.contains("a buffer of 36 blocks (") && listed <= 2,
        "{err}"
    );
    // Item 2 again: the whole file as code rows decodes a mini-batch at
    // a time, each within the limit (the whole file's buffer checked
    // each block alone, and the batch of 40 rows not at all: exit 0).
    let err = error_of(
        &[
            "train",
            "many.toc",
            "--mode",
            "exact",
            "--buffer",
            "1",
            "--max-decode-nnz",
            "10",
        ],
        dir,
    );
    assert!(
        err.contains("many.toc") && err.contains("non-zeros one mini-batch's rows decode to"),
        "{err}"
    );
    // An unterminated quote was reported on line 4 of a 3-line file.
    std::fs::write(dir.join("q.csv"), "a,label\n1,0\n\"2,1\n").unwrap();
    let err = error_of(
        &["encode", "q.csv", "--label-column", "label", "-o", "q.toc"],
        dir,
    );
    assert!(err.contains("q.csv:3:1: expected a closing quote"), "{err}");
    // "expected an index below 2^32" while 4294967296 is accepted.
    std::fs::write(dir.join("top.libsvm"), "1 4294967296:1\n").unwrap();
    ok(&["encode", "top.libsvm", "-o", "top.toc"], dir);
    std::fs::write(dir.join("over.libsvm"), "1 4294967297:1\n").unwrap();
    let err = error_of(&["encode", "over.libsvm", "-o", "over.toc"], dir);
    assert!(
        err.contains("an index of at most 4294967296 (2^32)"),
        "{err}"
    );
    // A dataset file given to encode was parsed as LIBSVM, raw bytes shown.
    let err = error_of(&["encode", "top.toc", "-o", "again.toc"], dir);
    assert!(
        err.contains("top.toc: this is a tocpile dataset file, encoded already"),
        "{err}"
    );
    // A full disk (here a file-size limit) named the temporary file.
    let rows: String = (0..2000)
        .map(|i| format!("{} {}:{i}\n", i % 2, 1 + i % 7))
        .collect();
    std::fs::write(dir.join("big.libsvm"), rows).unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 2 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_tocpile"))
        .args(["encode", "big.libsvm", "-o", "big.toc"])
        .current_dir(dir)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("tocpile: big.toc: writing its temporary file"),
        "{err}"
    );
}

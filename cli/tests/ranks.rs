//! `tocpile train --ranks N` and `tocpile shuffle` without MPI (ranks and
//! workers as threads): the same model on every run, the same model as a
//! saved single-rank run, shuffles that verify every block, and clear
//! errors for options that need several ranks or MPI. No wall-clock
//! thresholds.

mod common;

use std::path::Path;

use common::*;

fn mushrooms(dir: &Path) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    let args = [
        "encode",
        data,
        "-o",
        "m.toc",
        "--cols",
        "98",
        "--page-rows",
        "25",
        "--block-bytes",
        "1024",
    ];
    ok(&args, dir);
}

const TRAIN: [&str; 8] = [
    "train",
    "m.toc",
    "--epochs",
    "2",
    "--lr",
    "0.5",
    "--batch-size",
    "100",
];

#[test]
fn ranks_as_threads_train_the_same_model_every_time() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    let out = ok(
        &[&TRAIN[..], &["--ranks", "3", "--save", "a.model"]].concat(),
        dir.path(),
    );
    assert!(
        out.contains("3 ranks (gradients averaged every step)"),
        "{out}"
    );
    assert_eq!(out.matches("final:").count(), 1, "{out}");
    ok(
        &[&TRAIN[..], &["--ranks", "3", "--save", "b.model"]].concat(),
        dir.path(),
    );
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    assert_eq!(read("a.model"), read("b.model"));
    // Models averaged every 4 steps: another model, also saved.
    let args = [
        &TRAIN[..],
        &["--ranks", "3", "--average-every", "4", "--save", "c.model"],
    ]
    .concat();
    let out = ok(&args, dir.path());
    assert!(out.contains("models averaged every 4 steps"), "{out}");
    assert_ne!(read("a.model"), read("c.model"));
}

#[test]
fn options_that_need_several_ranks_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    let o = tocpile(
        &[&TRAIN[..], &["--average-every", "4"]].concat(),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("several ranks"), "{}", stderr(&o));
    let o = tocpile(
        &[&TRAIN[..], &["--ranks", "2", "--json"]].concat(),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--json"), "{}", stderr(&o));
    usage_error(
        &[&TRAIN[..], &["--ranks", "0"]].concat(),
        dir.path(),
        "--ranks",
    );
    #[cfg(not(feature = "mpi"))]
    {
        let o = tocpile(&[&TRAIN[..], &["--distributed"]].concat(), dir.path());
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("`mpi` feature"), "{}", stderr(&o));
    }
}

#[test]
fn shuffle_as_threads_verifies_every_block() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    let args = [
        "shuffle",
        "m.toc",
        "--workers",
        "3",
        "--epochs",
        "2",
        "--chunk",
        "256",
        "--verify",
    ];
    let out = ok(&args, dir.path());
    assert!(
        out.contains("among 3 workers") && out.contains("verified byte for byte"),
        "{out}"
    );
    for scheme in ["uncoded", "coded", "ubershuffle"] {
        assert_eq!(out.matches(&format!("| {scheme} |")).count(), 2, "{out}");
    }
    assert!(out.contains("uncoded / ubershuffle server bytes"), "{out}");
    // alpha below 1/n: an error naming alpha, not a hang.
    let o = tocpile(
        &["shuffle", "m.toc", "--workers", "4", "--alpha", "0.1"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("alpha"), "{}", stderr(&o));
    usage_error(&["shuffle", "m.toc", "--scheme", "xor"], dir.path(), "xor");
}

/// The eval losses of each scheme's rows, in order.
fn eval_losses(out: &str, scheme: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with(&format!("| {scheme} | ")))
        .filter_map(|l| l.split('|').nth(8).map(|c| c.trim().to_string()))
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn shuffle_train_learns_from_the_caches() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    let args = [
        "shuffle",
        "m.toc",
        "--workers",
        "3",
        "--epochs",
        "3",
        "--chunk",
        "256",
        "--train",
        "lr",
        "--lr",
        "0.5",
        "--batch-size",
        "100",
        "--scheme",
        "none,uncoded,ubershuffle",
        "--target-loss",
        "0.3",
    ];
    let out = ok(&args, dir.path());
    // Every scheme delivers the same blocks: the same training, loss for
    // loss; no shuffle keeps the first blocks and trains differently.
    let uncoded = eval_losses(&out, "uncoded");
    assert_eq!(uncoded.len(), 3, "{out}");
    assert_eq!(uncoded, eval_losses(&out, "ubershuffle"));
    assert_ne!(uncoded, eval_losses(&out, "none"));
    assert_eq!(out.matches("reached loss 0.3 after").count(), 3, "{out}");
    let last: f64 = uncoded[2].parse().unwrap();
    assert!(last < 0.2, "{out}");
    let o = tocpile(&["shuffle", "m.toc", "--scheme", "none"], dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--train"), "{}", stderr(&o));
}

//! The command line under `mpirun` (feature `mpi`; needs Open MPI's
//! `mpirun` on the PATH): 2 and 4 ranks train to the model of the single
//! process that takes the same global mini-batches (`train_lockstep`), to
//! 1e-9, and to the same bytes as the ranks run as threads (`--ranks`); a
//! server and four workers move every block of a file through coded
//! shuffles, byte for byte, with the byte counts of the in-process run.

#![cfg(feature = "mpi")]

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use tocpile::dist::train_lockstep;
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind};
use tocpile::train::TrainOptions;

fn mpirun(np: usize, args: &[&str], dir: &Path) -> String {
    let o = Command::new("mpirun")
        .args(["--oversubscribe", "-np", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        // Containers and CI run as root, which mpirun refuses otherwise.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("run mpirun (install Open MPI: apt-get install openmpi-bin libopenmpi-dev)");
    assert!(
        o.status.success(),
        "mpirun -np {np} tocpile {args:?} failed ({:?}):\n{}\n{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Runs mpirun, killing it after a minute: an error on one rank must end
/// the job, not leave the others waiting. Returns the exit code and stderr.
fn mpirun_failing(np: usize, args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let mut child = Command::new("mpirun")
        .args(["--oversubscribe", "-np", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_tocpile"))
        .args(args)
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mpirun");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("mpirun -np {np} tocpile {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

fn mushrooms(dir: &Path) {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/mushrooms.libsvm.gz");
    ok(
        &[
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
        ],
        dir,
    );
}

// Plain SGD, the rule of the lockstep reference below.
const TRAIN: [&str; 14] = [
    "train",
    "m.toc",
    // The reference below buffers a tenth of the blocks per rank (the
    // default would keep each rank's whole slice).
    "--buffer",
    "0.1",
    "--optimizer",
    "sgd",
    "--epochs",
    "3",
    "--lr",
    "0.5",
    "--batch-size",
    "100",
    "--seed",
    "3",
];

#[test]
fn ranks_under_mpirun_train_the_lockstep_model() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    for k in [2usize, 4] {
        let saved = format!("mpi{k}.model");
        let out = mpirun(k, &[&TRAIN[..], &["--save", &saved]].concat(), dir.path());
        assert!(out.contains(&format!("{k} ranks")), "{out}");
        // Only rank 0 prints: one table.
        assert_eq!(out.matches("final:").count(), 1, "{out}");
        let threads = format!("threads{k}.model");
        let ranks = k.to_string();
        ok(
            &[&TRAIN[..], &["--ranks", &ranks, "--save", &threads]].concat(),
            dir.path(),
        );
        let mpi = std::fs::read(dir.path().join(&saved)).unwrap();
        assert_eq!(mpi, std::fs::read(dir.path().join(&threads)).unwrap());

        let loaders: Vec<Loader> = (0..k)
            .map(|worker| {
                let options = LoaderOptions::default()
                    .with_strategy(Strategy::CorgiPile)
                    .with_mode(Mode::Auto)
                    .with_batch_rows(100)
                    .with_buffer(Buffer::Fraction(0.1))
                    .with_seed(3)
                    .with_worker(worker)
                    .with_workers(k);
                Loader::open(dir.path().join("m.toc"), options).unwrap()
            })
            .collect();
        let mut reference = Model::new(ModelKind::Logistic, 98, 3).unwrap();
        // The rule first: it sets its default rate, replaced next.
        let options = TrainOptions::default()
            .with_optimizer(tocpile::model::Optimizer::Sgd)
            .with_epochs(3)
            .with_learning_rate(0.5);
        train_lockstep(&mut reference, &loaders, &options).unwrap();
        let model = Model::load(dir.path().join(&saved)).unwrap();
        let diff = model
            .params()
            .iter()
            .zip(reference.params())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(diff < 1e-9, "{k} ranks: {diff}");
    }
}

/// The table rows without the seconds column.
fn counts(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| scheme"))
        .map(|l| l.rsplitn(3, '|').nth(2).unwrap().to_string())
        .collect()
}

#[test]
fn coded_shuffles_under_mpirun_recover_every_block() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    let args = [
        "shuffle",
        "m.toc",
        "--scheme",
        "uncoded,coded,ubershuffle",
        "--epochs",
        "2",
        "--chunk",
        "256",
        "--seed",
        "7",
        "--verify",
    ];
    let out = mpirun(5, &args, dir.path());
    assert!(out.contains("among 4 workers"), "{out}");
    assert!(out.contains("verified byte for byte"), "{out}");
    let rows = counts(&out);
    assert_eq!(rows.len(), 6, "{out}");
    // The same packets and bytes as with the workers as threads.
    let threads = ok(&[&args[..], &["--workers", "4"]].concat(), dir.path());
    assert_eq!(rows, counts(&threads));
}

#[test]
fn an_error_on_one_rank_ends_the_job() {
    let dir = tempfile::tempdir().unwrap();
    mushrooms(dir.path());
    // Only the server refuses alpha below 1/n; the workers wait for it.
    let (code, err) = mpirun_failing(5, &["shuffle", "m.toc", "--alpha", "0.1"], dir.path());
    assert_ne!(code, Some(0));
    assert!(
        err.contains("tocpile: rank 0:") && err.contains("alpha"),
        "{err}"
    );
    let (code, err) = mpirun_failing(2, &["train", "missing.toc"], dir.path());
    assert_ne!(code, Some(0));
    assert!(err.contains("missing.toc"), "{err}");
}

//! The library's parallel work in a process forked after the parent used
//! it (PyTorch's DataLoader workers, Python's `multiprocessing` with the
//! fork start method): the child inherits the parent's thread pool but
//! none of its threads, and before `tocpile::parallel` rebuilt the pool
//! in the child, the child's first parallel step waited forever. Its own
//! test binary: it forks, and the only other thread then is the test
//! harness's main thread (waiting). Linux only (the raw `fork`,
//! `waitpid` and `alarm` below).
#![cfg(target_os = "linux")]

use std::sync::Arc;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind};
use tocpile::SparseBatch;

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn alarm(seconds: u32) -> u32;
    fn _exit(status: i32) -> !;
}

/// Encodes 6,000 rows (the writer encodes pages in parallel), then runs
/// an exact-mode CorgiPile epoch with the whole file as its buffer and one
/// streamed in buffers (the loader decodes the two halves of a buffer at
/// once) and scores every block with a small network (pages
/// validated and scored in parallel). Returns the epoch's row count and a
/// sum of the scores.
fn parallel_work(tag: &str) -> (usize, f64) {
    let dense: Vec<Vec<f64>> = (0..6000)
        .map(|r| {
            (0..40)
                .map(|c| match (r * 7 + c * 3 + r / 13) % 5 {
                    0..=1 => 0.0,
                    k => k as f64 * 0.25,
                })
                .collect()
        })
        .collect();
    let rows = SparseBatch::from_dense_rows(40, &dense).unwrap();
    let labels: Vec<f64> = (0..6000).map(|r| (r % 2) as f64).collect();
    let path = std::env::temp_dir().join(format!("tocpile-fork-{}-{tag}.toc", std::process::id()));
    let layout = WriterOptions::default()
        .with_page_rows(100)
        .with_block_bytes(4096);
    let mut writer = DatasetWriter::create(&path, 40, layout).unwrap();
    writer.push(&rows, &labels).unwrap();
    writer.finish().unwrap();
    let dataset = Arc::new(Dataset::open(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    let options = LoaderOptions::default()
        .with_strategy(Strategy::CorgiPile)
        .with_mode(Mode::Exact)
        .with_batch_rows(250);
    // The whole file fits the default budget (one buffer, made once); with
    // no memory every block streams, in buffers whose two halves are
    // decoded at once.
    let mut seen = 0;
    for options in [options.clone(), options.with_memory(0)] {
        let loader = Loader::new(Arc::clone(&dataset), options).unwrap();
        for batch in loader.epoch(0).unwrap() {
            seen += batch.unwrap().n_rows();
        }
    }
    let kind = ModelKind::Mlp {
        hidden: vec![8],
        outputs: 1,
    };
    let model = Model::new(kind, 40, 7).unwrap();
    let mut total = 0.0;
    for b in 0..dataset.n_blocks() {
        let pages = dataset.read_block(b).unwrap().pages().unwrap();
        let p = model.predict(&pages).unwrap();
        total += (0..p.n_rows()).map(|i| p.scores(i)[0]).sum::<f64>();
    }
    (seen, total)
}

#[test]
fn parallel_work_survives_a_fork() {
    let expected = parallel_work("parent");
    assert_eq!(expected.0, 12_000);
    // SAFETY: the child runs only the library's code and then `_exit`s
    // (no unwinding back into the harness); glibc keeps the allocator
    // usable in the child of a multi-threaded process.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: plain calls; a child that hangs is ended by SIGALRM.
        unsafe { alarm(120) };
        let same = std::panic::catch_unwind(|| parallel_work("child") == expected);
        // SAFETY: ends the child without running the harness's code.
        unsafe { _exit(if matches!(same, Ok(true)) { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child started above.
    assert_eq!(unsafe { waitpid(pid, &mut status, 0) }, pid);
    let signal = status & 0x7f;
    assert_eq!(
        signal, 0,
        "the child was ended by signal {signal} (14, SIGALRM: its parallel work hung)"
    );
    assert_eq!(
        (status >> 8) & 0xff,
        0,
        "the child's results differ from the parent's"
    );
    // And the parent's pool still works.
    assert_eq!(parallel_work("after"), expected);
}

//! The loader alone: epochs of a dataset file drained with no training,
//! the time of each epoch after the first (which reads and validates the
//! file) as median and minimum. What the loader's own figures in
//! docs/RESULTS.md and its history measure ("drained epochs"), with
//! `perf record` around it for where the time goes.
//!
//! ```text
//! cargo run --release --example drain -- FILE.toc [--epochs N] [--memory MIB]
//! ```
//!
//! `--memory 0` (the default here) keeps no block resident: every epoch
//! reads the file and decodes its buffers again (`bench train`'s
//! toc-stream). Any other budget is `tocpile train --memory`'s.

mod shared;

use std::time::Instant;

use tocpile::loader::{Loader, LoaderOptions};

fn main() -> tocpile::Result<()> {
    let args = shared::Args::from_env();
    let Some(path) = args.0.first().filter(|a| !a.starts_with("--")) else {
        eprintln!("usage: drain FILE.toc [--epochs N] [--memory MIB]");
        std::process::exit(2);
    };
    let epochs: u64 = args.get("--epochs", 8).max(2);
    let memory: usize = args.get("--memory", 0);
    let mut options = LoaderOptions::default();
    options.memory = Some(memory << 20);
    let loader = Loader::open(path, options)?;
    let n_rows = loader.dataset().info().n_rows as usize;
    let buffer = loader.buffer_choice();
    println!(
        "{path}: {} rows; {} of {} blocks, rows as {}; {} blocks resident; {epochs} epochs",
        n_rows,
        if buffer.whole_file {
            "the whole file"
        } else {
            "buffers"
        },
        buffer.blocks,
        buffer.rows,
        loader.resident_blocks(),
    );
    let (mut later, mut firsts) = (Vec::new(), Vec::new());
    for epoch in 0..epochs {
        let start = Instant::now();
        let mut first = None;
        let mut rows = 0usize;
        for batch in loader.epoch(epoch)? {
            rows += batch?.n_rows();
            first.get_or_insert_with(|| start.elapsed().as_secs_f64());
        }
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(rows, n_rows, "epoch {epoch} visits every row");
        if epoch > 0 {
            later.push(seconds);
            firsts.push(first.unwrap_or(seconds));
        }
    }
    let ms = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (1e3 * v[v.len() / 2], 1e3 * v[0])
    };
    let ((median, min), (first_median, first_min)) = (ms(later), ms(firsts));
    println!(
        "epochs 1-{}: median {median:.2} ms, min {min:.2} ms; the first mini-batch after \
         {first_median:.2} ms (min {first_min:.2})",
        epochs - 1,
    );
    Ok(())
}

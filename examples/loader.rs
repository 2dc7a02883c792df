//! The loader measured: per-epoch time of every strategy reading a TOC
//! dataset file, as a ratio to No Shuffle in the same run, in exact and
//! page mode; the gain of double buffering with a training consumer; and
//! the shuffle quality of every strategy on label-clustered data (the
//! CorgiPile paper's Figures 3 and 4 as numbers).
//!
//! ```text
//! cargo run --release --example loader [-- [--dataset NAME] [--rows N] [--blocks N] [--rounds N] [--cold]]
//! ```
//!
//! Default: census_fertility sorted by label (254,654 rows), 50-row pages,
//! about 400 blocks, 250-row mini-batches, a 10% buffer, 5 rounds. Each
//! round runs every configuration once, in turn, so that load from other
//! processes hits them alike; times are medians over rounds. The trivial
//! consumer touches every label. `--cold` drops the page cache before
//! every epoch (root), so blocks come from disk.

mod shared;

use std::sync::Arc;
use std::time::Instant;

use tocpile::dataset::Dataset;
use tocpile::formats::FormatKind;
use tocpile::loader::{labels_in_file_order, Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Gradient, Model, ModelKind};

fn main() -> tocpile::Result<()> {
    let args = shared::Args::from_env();
    let name: String = args.get("--dataset", "census_fertility".to_string());
    let max_rows: usize = args.get("--rows", usize::MAX);
    let blocks: usize = args.get("--blocks", 400);
    let rounds: usize = args.get("--rounds", 5);
    let cold = args.has("--cold");

    let (rows, labels) = shared::rows(&name, max_rows, true);
    let path = shared::scratch("loader.toc");
    let block_bytes = shared::block_bytes_for(&rows, &labels, 50, blocks, &path)?;
    let info = shared::write(&path, &rows, &labels, FormatKind::TocFull, 50, block_bytes)?;
    let n_cols = rows.n_cols();
    drop(rows);
    let dataset = Arc::new(Dataset::open(&path)?);
    println!(
        "{name}, sorted by label: {} rows, {} blocks of ~{} KiB, {} pages of 50 rows, {:.1} MiB \
         (TOC_FULL); mini-batches of 250 rows, buffer 10%{}\n",
        info.n_rows,
        info.n_blocks,
        block_bytes / 1024,
        info.n_pages,
        info.file_bytes as f64 / (1 << 20) as f64,
        if cold {
            ", page cache dropped before every epoch"
        } else {
            ", file in the page cache"
        }
    );

    let loader = |strategy, mode, double_buffer, trace| {
        let options = LoaderOptions::default()
            .with_strategy(strategy)
            .with_mode(mode)
            .with_double_buffer(double_buffer)
            .with_trace(trace)
            .with_buffer(Buffer::Fraction(0.1))
            .with_seed(7)
            .with_scratch_dir(Some(std::env::temp_dir()));
        Loader::new(Arc::clone(&dataset), options)
    };

    // 1. Epoch time with a trivial consumer, every strategy and mode.
    let mut configs = Vec::new();
    for mode in [Mode::Exact, Mode::Page] {
        for strategy in Strategy::ALL {
            configs.push((strategy, mode, loader(strategy, mode, true, false)?));
        }
    }
    let mut times = vec![Vec::new(); configs.len()];
    for round in 0..rounds {
        for (i, (_, _, l)) in configs.iter().enumerate() {
            if cold {
                shared::drop_page_cache();
            }
            let start = Instant::now();
            let mut sum = 0.0;
            for batch in l.epoch(round as u64)? {
                for page in &batch?.pages {
                    sum += page.labels().iter().sum::<f64>();
                }
            }
            std::hint::black_box(sum);
            times[i].push(start.elapsed().as_secs_f64());
        }
    }
    println!("Per-epoch time, trivial consumer (median of {rounds} rounds):\n");
    println!("| strategy | mode | seconds | vs No Shuffle, same mode | buffer peak MiB |");
    println!("|---|---|---:|---:|---:|");
    for (i, (strategy, mode, l)) in configs.iter().enumerate() {
        let base = configs
            .iter()
            .position(|c| c.0 == Strategy::NoShuffle && c.1 == *mode)
            .expect("No Shuffle is measured");
        let mut epoch = l.epoch(0)?;
        epoch.by_ref().for_each(drop);
        let secs = tocpile_bench_data::median(times[i].clone());
        println!(
            "| {strategy} | {mode:?} | {secs:.3} | {:.3} | {:.1} |",
            secs / tocpile_bench_data::median(times[base].clone()),
            epoch.stats().buffer_peak_bytes as f64 / (1 << 20) as f64
        );
    }

    // 2. Double buffering with a consumer that trains (an LR step per
    // mini-batch): single buffering pays loading and training in turn.
    println!(
        "\nCorgiPile with a training consumer (LR step per mini-batch), median of {rounds}:\n"
    );
    println!("| mode | single buffering s | double buffering s | gain | wait share (double) |");
    println!("|---|---:|---:|---:|---:|");
    for mode in [Mode::Exact, Mode::Page] {
        let mut secs = [Vec::new(), Vec::new()];
        let mut wait = Vec::new();
        for round in 0..rounds {
            for (k, double) in [false, true].into_iter().enumerate() {
                let l = loader(Strategy::CorgiPile, mode, double, false)?;
                let mut model = Model::new(ModelKind::Logistic, n_cols, 0)?;
                let mut grad = Gradient::new(&model);
                if cold {
                    shared::drop_page_cache();
                }
                let start = Instant::now();
                let mut epoch = l.epoch(round as u64)?;
                for batch in epoch.by_ref() {
                    let batch = batch?;
                    model.gradient(&batch.pages, 0.0, &mut grad)?;
                    model.step(&grad, 0.1);
                }
                let s = start.elapsed().as_secs_f64();
                secs[k].push(s);
                if double {
                    wait.push(epoch.stats().wait_seconds / s);
                }
            }
        }
        let (single, double) = (
            tocpile_bench_data::median(secs[0].clone()),
            tocpile_bench_data::median(secs[1].clone()),
        );
        println!(
            "| {mode:?} | {single:.3} | {double:.3} | {:.2}x | {:.0}% |",
            single / double,
            100.0 * tocpile_bench_data::median(wait)
        );
    }

    // 3. Shuffle quality of one epoch's order.
    let file_labels = labels_in_file_order(&dataset)?;
    println!("\nShuffle quality of epoch 0 (exact mode; label skew over windows of 250 rows):\n");
    println!("| strategy | rank correlation | mean displacement | label skew | uniform skew |");
    println!("|---|---:|---:|---:|---:|");
    for strategy in Strategy::ALL {
        let l = loader(strategy, Mode::Exact, true, true)?;
        let mut epoch = l.epoch(0)?;
        for batch in epoch.by_ref() {
            batch?;
        }
        let q = epoch.trace().expect("traced").quality(&file_labels, 250);
        println!(
            "| {strategy} | {:.3} | {:.3} | {:.3} | {:.3} |",
            q.rank_correlation, q.mean_displacement, q.label_skew, q.uniform_label_skew
        );
    }
    drop(configs);
    std::fs::remove_file(&path).ok();
    Ok(())
}

//! The end-to-end experiments of both papers, measured here
//! (`docs/archive/RESULTS-HISTORY.md` holds the tables).
//!
//! ```text
//! cargo run --release --example experiments -- shuffling [--dataset NAME] [--rows N] [--epochs N] [--lr X] [--model lr|svm|softmax]
//! cargo run --release --example experiments -- formats [--dataset NAME] [--rows N] [--epochs N] [--lr X] [--budget X] [--formats A,B]
//! cargo run --release --example experiments -- speed [--dataset NAME] [--epochs N] [--lr X]
//! ```
//!
//! **speed** (against scikit-learn and Vowpal Wabbit, whose side is
//! `experiments/baselines.sh`): the same preparation as theirs (max-abs
//! scaling fitted on the training rows, one shuffle, a 90/10 split), the
//! training rows written as TOC_FULL with 50-row pages; logistic
//! regression for `--epochs` epochs with No Shuffle (the file is already
//! shuffled, as their fixed order is) and with CorgiPile. Examples per
//! second count training time only (as theirs do), not writing the file.
//!
//! **shuffling** (CorgiPile paper Figure 2 / 12, Table 3): columns are
//! max-abs scaled (fitted on the training rows), 10% of the rows (random,
//! seed 42) are held out as the test file; the rest, sorted by
//! label (clustered), are the training file: TOC_FULL, 50-row pages, about
//! 1,000 blocks. The model trains with every strategy (10% buffer, exact
//! mode; CorgiPile also in page mode, and with 1%, 2% and 5% buffers) and
//! the test accuracy after each epoch is reported.
//!
//! **formats** (TOC paper Table 6): the rows max-abs scaled and shuffled
//! once, stored as
//! 250-row pages in every format; logistic regression reads them in file
//! order (page mode, one page per mini-batch). (a) every file in the page
//! cache; (b) a memory budget of `--budget` times the TOC file's size
//! (default 2): before each epoch the page cache is dropped
//! (`/proc/sys/vm/drop_caches`, root) and the first `budget` bytes of the
//! file are read back in (the part a cache of that size would hold), so the
//! rest of a file larger than the budget is read from disk during the
//! epoch. Epoch times are medians, reported as ratios to TOC_FULL.

use tocpile_bench_data as support;

mod shared;

use shared::Args;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tocpile::dataset::Dataset;
use tocpile::formats::FormatKind;
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind};
use tocpile::train::{evaluate, train, TrainOptions};
use tocpile::SparseBatch;

fn main() -> tocpile::Result<()> {
    let args = Args::from_env();
    match args.0.first().map(String::as_str) {
        Some("shuffling") => shuffling(&args),
        Some("formats") => formats(&args),
        Some("speed") => speed(&args),
        _ => {
            eprintln!("usage: experiments shuffling|formats [options] (see the source's docs)");
            std::process::exit(2);
        }
    }
}

/// Splits rows into a test part (every row with probability `share`,
/// seeded) and the rest.
fn split(rows: &SparseBatch, labels: &[f64], share: f64) -> [(SparseBatch, Vec<f64>); 2] {
    let mut parts = [
        (
            SparseBatch::with_cols(rows.n_cols()).expect("cols"),
            Vec::new(),
        ),
        (
            SparseBatch::with_cols(rows.n_cols()).expect("cols"),
            Vec::new(),
        ),
    ];
    // A fixed, seeded coin per row (the library's generator).
    let mut rng = tocpile::rng::Rng::new(42);
    for (i, (c, v)) in rows.rows().enumerate() {
        let u = rng.next_u64() as f64 / u64::MAX as f64;
        let k = usize::from(u >= share);
        parts[k].0.push_row(c, v).expect("row");
        parts[k].1.push(labels[i]);
    }
    parts
}

fn shuffling(args: &Args) -> tocpile::Result<()> {
    let name: String = args.get("--dataset", "census_fertility".to_string());
    let max_rows: usize = args.get("--rows", usize::MAX);
    let epochs: usize = args.get("--epochs", 5);
    let model_name: String = args.get("--model", "lr".to_string());
    let lr: f64 = args.get("--lr", 0.1);
    let (rows, labels) = shared::rows(&name, max_rows, false);
    let classes = labels.iter().fold(0.0f64, |m, &l| m.max(l)) as usize + 1;
    let kind = ModelKind::from_name(&model_name, classes)?;
    let [(mut test_rows, test_labels), (mut train_rows, train_labels)] = split(&rows, &labels, 0.1);
    drop(rows);
    let fit = train_rows.clone();
    shared::maxabs_scale(&fit, &mut [&mut train_rows, &mut test_rows]);
    drop(fit);
    let (train_rows, train_labels) = support::sort_by_label(&train_rows, &train_labels);
    let train_path = shared::scratch("train.toc");
    let test_path = shared::scratch("test.toc");
    let block_bytes = shared::block_bytes_for(&train_rows, &train_labels, 50, 1000, &train_path)?;
    let info = shared::write(
        &train_path,
        &train_rows,
        &train_labels,
        FormatKind::TocFull,
        50,
        block_bytes,
    )?;
    shared::write(
        &test_path,
        &test_rows,
        &test_labels,
        FormatKind::TocFull,
        250,
        1 << 22,
    )?;
    let n_cols = train_rows.n_cols();
    drop((train_rows, test_rows));
    let dataset = Arc::new(Dataset::open(&train_path)?);
    let test = Arc::new(Dataset::open(&test_path)?);
    println!(
        "{name}: {} training rows sorted by label ({} blocks), {} test rows; {kind}, \
         {epochs} epochs, lr {lr} (decay 0.95), batch 250\n",
        info.n_rows,
        info.n_blocks,
        test_labels.len()
    );
    let mut configs: Vec<(String, LoaderOptions)> = Strategy::ALL
        .into_iter()
        .map(|s| (s.to_string(), options(s, Mode::Exact, 0.1)))
        .collect();
    configs.push((
        "corgipile, page mode".into(),
        options(Strategy::CorgiPile, Mode::Page, 0.1),
    ));
    for f in [0.01, 0.02, 0.05] {
        let label = format!("corgipile, buffer {}%", f * 100.0);
        configs.push((label, options(Strategy::CorgiPile, Mode::Exact, f)));
    }
    print!("| strategy |");
    (0..epochs).for_each(|e| print!(" epoch {} |", e + 1));
    println!(" test loss | seconds/epoch |");
    println!("|---|{}---:|---:|", "---:|".repeat(epochs));
    for (label, options) in configs {
        let loader = Loader::new(Arc::clone(&dataset), options)?;
        let mut model = Model::new(kind.clone(), n_cols, 1)?;
        let train_options = TrainOptions::default()
            .with_optimizer(tocpile::model::Optimizer::Sgd)
            .with_epochs(epochs)
            .with_learning_rate(lr)
            .with_scale(tocpile::train::Scale::Model);
        print!("| {label} |");
        let reports = train(&mut model, &loader, &train_options, Some(&test), |r| {
            let eval = r.eval.expect("test file given");
            print!(" {:.2}% |", 100.0 * eval.accuracy);
            use std::io::Write as _;
            std::io::stdout().flush().ok();
        });
        match reports {
            Ok(reports) => {
                let secs: f64 = reports.iter().map(|r| r.seconds).sum::<f64>() / epochs as f64;
                let loss = reports
                    .last()
                    .and_then(|r| r.eval)
                    .map_or(f64::NAN, |e| e.loss);
                println!(" {loss:.4} | {secs:.2} |");
            }
            Err(e) => println!(" {e} |"),
        }
    }
    let test = Arc::new(Dataset::open(&test_path)?);
    let majority = evaluate(&Model::new(kind, n_cols, 1)?, &test)?;
    println!(
        "\n(an untrained model scores {:.2}% on the test file, loss {:.4})",
        100.0 * majority.accuracy,
        majority.loss
    );
    std::fs::remove_file(&train_path).ok();
    std::fs::remove_file(&test_path).ok();
    Ok(())
}

fn options(strategy: Strategy, mode: Mode, buffer: f64) -> LoaderOptions {
    LoaderOptions::default()
        .with_strategy(strategy)
        .with_mode(mode)
        .with_buffer(Buffer::Fraction(buffer))
        .with_seed(42)
        .with_scratch_dir(Some(std::env::temp_dir()))
}

/// Reads the first `bytes` bytes of a file (into the page cache).
fn warm(path: &Path, bytes: u64) {
    let mut buf = vec![0u8; 1 << 20];
    if let Ok(f) = std::fs::File::open(path) {
        let mut r = f.take(bytes);
        while r.read(&mut buf).is_ok_and(|n| n > 0) {}
    }
}

fn formats(args: &Args) -> tocpile::Result<()> {
    let name: String = args.get("--dataset", "census_fertility".to_string());
    let max_rows: usize = args.get("--rows", usize::MAX);
    let epochs: usize = args.get("--epochs", 10);
    let lr: f64 = args.get("--lr", 0.1);
    let budget_factor: f64 = args.get("--budget", 2.0);
    let (mut rows, labels) = shared::rows(&name, max_rows, false);
    let fit = rows.clone();
    shared::maxabs_scale(&fit, &mut [&mut rows]);
    drop(fit);
    let order = support::shuffle_order(labels.len(), 42);
    let rows = support::reorder(&rows, &order);
    let labels: Vec<f64> = order.iter().map(|&i| labels[i]).collect();
    let names: String = args.get(
        "--formats",
        "TOC_FULL,CSR,CVI,DVI,DEN,gzip,snappy".to_string(),
    );
    let mut formats: Vec<FormatKind> = names
        .split(',')
        .map(|n| FormatKind::from_name(n).expect("--formats: format names"))
        .collect();
    // TOC first: the others are reported as ratios to it.
    formats.retain(|&f| f != FormatKind::TocFull);
    formats.insert(0, FormatKind::TocFull);
    let mut files: Vec<(FormatKind, PathBuf, u64)> = Vec::new();
    for f in formats {
        let path = shared::scratch(&format!("formats-{}.toc", f.name()));
        let info = shared::write(&path, &rows, &labels, f, 250, 4 << 20)?;
        files.push((f, path, info.file_bytes));
    }
    let toc_bytes = files[0].2;
    let budget = (budget_factor * toc_bytes as f64) as u64;
    let n_cols = rows.n_cols();
    drop(rows);
    println!(
        "{name}: {} rows shuffled once, 250-row pages; LR, {epochs} epochs, lr {lr}, No Shuffle \
         over the shuffled file, page mode; budget {:.1} MiB ({budget_factor} x the TOC file)\n",
        labels.len(),
        budget as f64 / (1 << 20) as f64
    );
    let can_drop = shared::drop_page_cache();
    let mut rows_out = Vec::new();
    for (format, path, bytes) in &files {
        let loader = Loader::open(
            path,
            LoaderOptions::default()
                .with_strategy(Strategy::NoShuffle)
                .with_mode(Mode::Page),
        )?;
        let mut times = [Vec::new(), Vec::new()];
        let mut accuracy = f64::NAN;
        for (k, cached) in [true, false].into_iter().enumerate() {
            if !cached && !can_drop {
                continue;
            }
            let mut model = Model::new(ModelKind::Logistic, n_cols, 1)?;
            for epoch in 0..epochs {
                if cached {
                    warm(path, u64::MAX);
                } else {
                    shared::drop_page_cache();
                    warm(path, budget);
                }
                let one = TrainOptions::default()
                    .with_optimizer(tocpile::model::Optimizer::Sgd)
                    .with_epochs(1)
                    .with_learning_rate(lr * 0.95f64.powi(epoch as i32))
                    .with_scale(tocpile::train::Scale::Model);
                let report = train(&mut model, &loader, &one, None, |_| {})?;
                times[k].push(report[0].seconds);
                accuracy = report[0].train.accuracy;
            }
        }
        rows_out.push((*format, *bytes, times, accuracy));
    }
    let median = |t: &Vec<f64>| {
        if t.is_empty() {
            f64::NAN
        } else {
            tocpile_bench_data::median(t.clone())
        }
    };
    let (toc_mem, toc_disk) = (median(&rows_out[0].2[0]), median(&rows_out[0].2[1]));
    println!("| format | file MiB | fits the budget | (a) in memory: s/epoch | vs TOC | (b) budget: s/epoch | vs TOC | train accuracy |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|");
    for (format, bytes, times, accuracy) in &rows_out {
        let (mem, disk) = (median(&times[0]), median(&times[1]));
        println!(
            "| {format} | {:.2} | {} | {mem:.3} | {:.2} | {disk:.3} | {:.2} | {:.2}% |",
            *bytes as f64 / (1 << 20) as f64,
            if *bytes <= budget { "yes" } else { "no" },
            mem / toc_mem,
            disk / toc_disk,
            100.0 * accuracy
        );
    }
    if !can_drop {
        println!("\n(b) skipped: dropping the page cache needs root");
    }
    for (_, path, _) in &files {
        std::fs::remove_file(path).ok();
    }
    Ok(())
}

fn speed(args: &Args) -> tocpile::Result<()> {
    let name: String = args.get("--dataset", "census_fertility".to_string());
    let epochs: usize = args.get("--epochs", 10);
    let lr: f64 = args.get("--lr", 0.1);
    let (rows, labels) = shared::rows(&name, usize::MAX, false);
    let order = support::shuffle_order(labels.len(), 42);
    let rows = support::reorder(&rows, &order);
    let labels: Vec<f64> = order.iter().map(|&i| labels[i]).collect();
    let n_train = (labels.len() as f64 * 0.9).round() as usize;
    let mut train_rows = rows.slice_rows(0..n_train);
    let mut test_rows = rows.slice_rows(n_train..labels.len());
    drop(rows);
    let fit = train_rows.clone();
    shared::maxabs_scale(&fit, &mut [&mut train_rows, &mut test_rows]);
    drop(fit);
    let train_path = shared::scratch("speed-train.toc");
    let test_path = shared::scratch("speed-test.toc");
    shared::write(
        &train_path,
        &train_rows,
        &labels[..n_train],
        FormatKind::TocFull,
        50,
        1 << 20,
    )?;
    shared::write(
        &test_path,
        &test_rows,
        &labels[n_train..],
        FormatKind::TocFull,
        250,
        1 << 22,
    )?;
    let n_cols = train_rows.n_cols();
    drop((train_rows, test_rows));
    let test = Arc::new(Dataset::open(&test_path)?);
    println!(
        "| dataset | tool | mode | epochs | train rows | seconds | examples/s | test accuracy |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    for strategy in [Strategy::NoShuffle, Strategy::CorgiPile] {
        let loader = Loader::open(&train_path, options(strategy, Mode::Auto, 0.1))?;
        let mut model = Model::new(ModelKind::Logistic, n_cols, 1)?;
        let train_options = TrainOptions::default()
            .with_optimizer(tocpile::model::Optimizer::Sgd)
            .with_epochs(epochs)
            .with_learning_rate(lr)
            .with_scale(tocpile::train::Scale::Model);
        let reports = train(&mut model, &loader, &train_options, None, |_| {})?;
        let secs: f64 = reports.iter().map(|r| r.seconds).sum();
        let accuracy = evaluate(&model, &test)?.accuracy;
        println!(
            "| {name} | tocpile | LR, {strategy}, {:?} mode, batch 250, lr {lr} | {epochs} | {n_train} | {secs:.2} | {:.0} | {:.4} |",
            loader.mode(),
            (n_train * epochs) as f64 / secs,
            accuracy
        );
    }
    std::fs::remove_file(&train_path).ok();
    std::fs::remove_file(&test_path).ok();
    Ok(())
}

//! `tocpile bench train`: training from a dataset file against an SGD
//! loop over CSR mini-batches already in memory, in one run
//! ([`tocpile::train::bench::bench_train`] measures, this renders).

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use tocpile::dataset::Dataset;
use tocpile::loader::Strategy;
use tocpile::train::bench::{bench_train, TrainBench, TrainBenchOptions};

use crate::output::{emit, emit_json};
use crate::{Failure, Outcome};

/// Time training from a dataset file against the in-memory limit.
///
/// Trains the same model on FILE.toc in twelve settings, each for
/// --epochs timed epochs after a first one: streaming the file every
/// epoch (toc-stream), with the loader's default buffer (toc-resident:
/// the whole file when it fits), the same with the buffer's rows kept as
/// code rows, pair codes or decoded values (toc-code-rows,
/// toc-pair-codes, toc-values) or whole pages shuffled (toc-pages, the
/// retired page mode), the same rows as CSR pages read both ways
/// (csr-stream, csr-resident; a temporary copy beside the file), and SGD
/// loops with no loader over mini-batches built in memory beforehand:
/// cut into the file's pages in its format (memory-toc-pages) or as CSR
/// (memory-csr-pages), one batch of pair codes per mini-batch in the form
/// the loader hands them over (memory-pair-codes: with toc-pair-codes,
/// what the loader costs apart from that form), and one CSR page per
/// mini-batch (memory-csr, the practical limit). Reports each setting's buffer, the share of
/// mini-batches computed on their TOC trees, median epoch, examples/s,
/// its speed as a ratio to memory-csr (above 1 is faster), the share of
/// the epoch spent waiting for the loader and the most heap bytes the
/// data took. Wall-clock times: run on a quiet machine.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench train train.toc\n  \
    tocpile bench train digits.toc --model softmax --epochs 5 --json")]
pub struct TrainBenchArgs {
    /// The dataset file (see `tocpile encode`).
    #[arg(value_name = "FILE.toc")]
    file: PathBuf,
    /// The model: lr, svm, linreg, softmax or mlp (as `tocpile train`).
    #[arg(long, value_name = "MODEL", default_value = "lr")]
    model: String,
    /// Number of classes (softmax, mlp); default: the largest label + 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=65_536))]
    classes: Option<u64>,
    /// Timed epochs per setting (after a first, untimed one).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    epochs: u64,
    /// Rows per mini-batch.
    #[arg(long, value_name = "N", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Learning rate [default: 0.03 for adam, 0.1 for adagrad and sgd].
    #[arg(long, value_name = "X")]
    lr: Option<f64>,
    /// The step rule of every setting (as `tocpile train --optimizer`).
    #[arg(long, value_enum, default_value = "adam")]
    optimizer: crate::train::OptimizerArg,
    /// The loader's strategy (as `tocpile train --shuffle`, one only).
    #[arg(long, value_name = "NAME", default_value = "corgipile")]
    shuffle: String,
    /// The loader's mode (as `tocpile train --mode`).
    #[arg(long, value_enum, default_value = "auto")]
    mode: crate::train::ModeArg,
    /// Resident budget of the resident settings, in MiB (as `tocpile
    /// train --memory`; default: half the memory available to the
    /// process, at most 1024).
    #[arg(long, value_name = "MIB")]
    memory: Option<u64>,
    /// Seed of the model and the shuffles.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct SettingJson {
    name: &'static str,
    /// What the loader's buffer held ("pair codes, whole file", ...).
    mode: String,
    /// Share of mini-batches computed on a decode tree.
    tree_share: f64,
    gradient_threads: usize,
    first_epoch_seconds: f64,
    epoch_seconds: f64,
    examples_per_second: f64,
    speed_vs_memory_csr: f64,
    wait_share: f64,
    peak_bytes: usize,
    file_bytes: u64,
    final_loss: f64,
}

#[derive(Serialize)]
struct BenchJson {
    dataset: String,
    model: String,
    rows: u64,
    blocks: usize,
    page_rows: usize,
    batch_rows: usize,
    epochs: usize,
    optimizer: &'static str,
    settings: Vec<SettingJson>,
}

pub fn run(args: &TrainBenchArgs) -> Outcome {
    let strategy = Strategy::from_name(&args.shuffle)
        .ok_or_else(|| Failure(format!("unknown shuffling strategy {:?}", args.shuffle)))?;
    let dataset = Dataset::open(&args.file)?;
    let kind = crate::train::model_kind(&args.model, args.classes, &dataset, &args.file)?;
    let loader_options = tocpile::loader::LoaderOptions::default()
        .with_strategy(strategy)
        .with_mode(args.mode.mode())
        .with_batch_rows(usize::try_from(args.batch_size).unwrap_or(usize::MAX));
    let memory = crate::train::memory_budget(args.memory, &dataset, &loader_options).0;
    drop(dataset);
    let options = TrainBenchOptions {
        model: kind.clone(),
        epochs: usize::try_from(args.epochs).unwrap_or(usize::MAX),
        batch_rows: usize::try_from(args.batch_size).unwrap_or(usize::MAX),
        learning_rate: args.lr.unwrap_or(args.optimizer.default_lr()),
        optimizer: args.optimizer.rule(),
        strategy,
        mode: args.mode.mode(),
        memory,
        seed: args.seed,
        scratch_dir: None,
    };
    let bench = bench_train(&args.file, &options).map_err(|e| Failure::about(&args.file, e))?;
    if args.json {
        return emit_json(&to_json(&bench, &kind.to_string(), &options));
    }
    emit(&render(&bench, &kind.to_string(), &options))
}

fn to_json(bench: &TrainBench, model: &str, options: &TrainBenchOptions) -> BenchJson {
    BenchJson {
        dataset: bench.path.display().to_string(),
        model: model.to_string(),
        rows: bench.rows,
        blocks: bench.blocks,
        page_rows: bench.page_rows,
        batch_rows: options.batch_rows,
        epochs: options.epochs,
        optimizer: options.optimizer.name(),
        settings: bench
            .settings
            .iter()
            .map(|s| SettingJson {
                name: s.name,
                mode: s.mode.clone(),
                tree_share: s.tree_share,
                gradient_threads: s.gradient_threads,
                first_epoch_seconds: s.first_epoch_seconds,
                epoch_seconds: s.epoch_seconds,
                examples_per_second: s.examples_per_second,
                speed_vs_memory_csr: 1.0 / s.time_ratio_to_memory,
                wait_share: s.wait_share,
                peak_bytes: s.peak_bytes,
                file_bytes: s.file_bytes,
                final_loss: s.final_loss,
            })
            .collect(),
    }
}

fn render(bench: &TrainBench, model: &str, options: &TrainBenchOptions) -> String {
    let mib = |b: f64| b / (1u64 << 20) as f64;
    let mut text = format!(
        "{}: {} rows in {} blocks of {}-row pages; {model}, {} lr {}, {}-row mini-batches, {} {} \
         timed epochs after a first one\n\n\
         | setting | buffer | on trees | gradient threads | first epoch s | epoch s | examples/s | speed vs memory-csr | wait share | peak MiB | file MiB |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        bench.path.display(),
        bench.rows,
        bench.blocks,
        bench.page_rows,
        options.optimizer,
        options.learning_rate,
        options.batch_rows,
        options.strategy,
        options.epochs,
    );
    for s in &bench.settings {
        text.push_str(&format!(
            "| {} | {} | {:.0}% | {} | {:.3} | {:.3} | {:.2}M | {:.2}x | {:.0}% | {:.1} | {:.1} |\n",
            s.name,
            s.mode,
            100.0 * s.tree_share,
            s.gradient_threads,
            s.first_epoch_seconds,
            s.epoch_seconds,
            s.examples_per_second / 1e6,
            1.0 / s.time_ratio_to_memory,
            100.0 * s.wait_share,
            mib(s.peak_bytes as f64),
            mib(s.file_bytes as f64),
        ));
    }
    text
}

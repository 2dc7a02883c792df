//! `tocpile bench kernels`: the TOC paper's Figure 8 on the user's data.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde::Serialize;
use tocpile::bench::{kernel_table, KernelBenchConfig, KernelReport, Op};
use tocpile::formats::FormatKind;

use crate::encode::parse_format;
use crate::input::{load_rows, shuffled, to_decimals, InputArgs};
use crate::output::{emit, emit_json};
use crate::{Failure, Outcome};

/// Measurements.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    Kernels(KernelArgs),
    Train(crate::bench_train::TrainBenchArgs),
}

/// Time the matrix operations of MGD on each format, as a ratio to CSR.
///
/// The first --batches batches of --batch-rows rows of INPUT (in file
/// order) are encoded in every format; A*c, A.v, v.A, A.M and M.A (p = 20)
/// are timed on each, interleaved over rounds, and the median round is
/// reported as each format's time over CSR's (below 1 is faster).
/// Wall-clock times: run on a quiet machine.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench kernels train.libsvm.gz\n  \
    tocpile bench kernels train.libsvm.gz --formats csr,toc,gzip --json\n  \
    tocpile bench kernels train.toc --batch-rows 100 --batches 10")]
struct KernelArgs {
    /// LIBSVM or CSV text (plain or gzip), Parquet, or a dataset file.
    input: PathBuf,
    #[command(flatten)]
    input_args: InputArgs,
    /// Rows per batch.
    #[arg(long, value_name = "N", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..))]
    batch_rows: u64,
    /// Batches measured (the first ones of the file).
    #[arg(long, value_name = "N", default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..))]
    batches: u64,
    /// Formats, comma-separated (CSR, the baseline, is always added).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_format)]
    formats: Option<Vec<FormatKind>>,
    /// Interleaved rounds (the median is reported).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Minimum time of one (format, operation) measurement per round, in
    /// milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 20)]
    min_time_ms: u64,
    /// Divide the values of every numeric column (any value other than 1)
    /// by 10^N before measuring (see `tocpile ratio --decimals`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=22))]
    decimals: Option<u32>,
    /// Shuffle the rows read once with this seed before cutting batches
    /// (default: file order).
    #[arg(long, value_name = "SEED")]
    shuffle: Option<u64>,
    /// Read this many rows (default: --batches times --batch-rows), so
    /// that with --shuffle the batches mix rows from the whole range.
    #[arg(long, value_name = "N")]
    max_rows: Option<usize>,
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &BenchArgs) -> Outcome {
    match &args.what {
        BenchCommand::Kernels(args) => kernels(args),
        BenchCommand::Train(args) => crate::bench_train::run(args),
    }
}

#[derive(Serialize)]
struct Cell {
    seconds_per_batch: f64,
    ratio_to_csr: f64,
}

#[derive(Serialize)]
struct KernelJson {
    dataset: String,
    batch_rows: usize,
    n_batches: usize,
    p: usize,
    encoded_bytes: BTreeMap<&'static str, usize>,
    ops: BTreeMap<&'static str, BTreeMap<&'static str, Cell>>,
}

fn kernels(args: &KernelArgs) -> Outcome {
    let batch_rows = usize::try_from(args.batch_rows).unwrap_or(usize::MAX);
    let n_batches = usize::try_from(args.batches).unwrap_or(usize::MAX);
    let max_rows = args
        .max_rows
        .unwrap_or_else(|| batch_rows.saturating_mul(n_batches));
    let (mut rows, labels) = load_rows(&args.input, &args.input_args, max_rows)?;
    if rows.n_rows() == 0 {
        return Err(Failure::about(&args.input, "no rows to measure"));
    }
    if let Some(places) = args.decimals {
        rows = to_decimals(&rows, places)?;
    }
    if let Some(seed) = args.shuffle {
        rows = shuffled(&rows, &labels, seed)?.0;
    }
    let batches: Vec<_> = (0..rows.n_rows())
        .step_by(batch_rows)
        .take(n_batches)
        .map(|s| rows.slice_rows(s..(s + batch_rows).min(rows.n_rows())))
        .collect();
    let config = KernelBenchConfig {
        formats: args
            .formats
            .clone()
            .unwrap_or_else(|| FormatKind::ALL.to_vec()),
        rounds: usize::try_from(args.rounds).unwrap_or(usize::MAX),
        min_time: Duration::from_millis(args.min_time_ms),
        ..KernelBenchConfig::default()
    };
    let report = kernel_table(&batches, &config).map_err(|e| Failure::about(&args.input, e))?;
    if args.json {
        return emit_json(&to_json(&args.input.display().to_string(), &report));
    }
    emit(&format!(
        "{}: {} batches of {} rows, p = {}; time per batch as a ratio to CSR (below 1 is faster)\n\n{}\n{}\n",
        args.input.display(),
        report.n_batches,
        report.batch_rows,
        report.p,
        report.to_markdown(),
        report.csr_micros()
    ))
}

fn to_json(dataset: &str, report: &KernelReport) -> KernelJson {
    let mut ops: BTreeMap<&'static str, BTreeMap<&'static str, Cell>> = BTreeMap::new();
    for op in Op::ALL {
        let cells = ops.entry(op.name()).or_default();
        for t in report.timings.iter().filter(|t| t.op == op) {
            cells.insert(
                t.format.name(),
                Cell {
                    seconds_per_batch: t.seconds_per_batch,
                    ratio_to_csr: t.ratio_to_csr,
                },
            );
        }
    }
    KernelJson {
        dataset: dataset.to_string(),
        batch_rows: report.batch_rows,
        n_batches: report.n_batches,
        p: report.p,
        encoded_bytes: report
            .encoded_bytes
            .iter()
            .map(|&(k, b)| (k.name(), b))
            .collect(),
        ops,
    }
}

//! `tocpile bench kernels`: the TOC paper's Figure 8 on the user's data;
//! `tocpile bench codec` (in `bench/codec.rs`): sizes of TOC's layouts and
//! codec speed; `tocpile bench pages` (`bench/pages.rs`): the pages of a
//! mini-batch in parallel; `tocpile bench adaptive` (`bench/adaptive.rs`):
//! what each choice of format version 2 buys; `tocpile bench predict`
//! (`bench/predict.rs`): a linear model's predictions against scipy's
//! loop.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::measure::kernels::{
    kernel_table, Clock, KernelBenchConfig, KernelFormat, KernelReport, Op,
};
use clap::{Args, Subcommand};
use serde::Serialize;
use tocpile::formats::FormatKind;

use crate::input::InputArgs;
use crate::output::{emit, emit_json};
use crate::rows::RowArgs;
use crate::{Failure, Outcome};

mod adaptive;
mod codec;
mod pages;
mod predict;

/// Measurements.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    Kernels(KernelArgs),
    Codec(codec::CodecArgs),
    Pages(pages::PagesArgs),
    Adaptive(adaptive::AdaptiveArgs),
    Predict(predict::PredictArgs),
    Train(crate::bench_train::TrainBenchArgs),
}

/// Time the matrix operations of MGD on each format, as a ratio to CSR.
///
/// The first --batches batches of --batch-rows rows of INPUT (in file
/// order) are encoded in every format; A*c, A.v, v.A, A.M and M.A (p = 20)
/// and a linear model's gradient (grad: as the models run it, one fused
/// kernel on TOC; grad (A.v, v.A): two kernels and a loop between them)
/// are timed on each, interleaved over rounds, and the median round is
/// reported as each format's time over CSR's (below 1 is faster).
/// Wall-clock times by default (run on a quiet machine); --clock cpu
/// times the thread's CPU time instead.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench kernels train.libsvm.gz\n  \
    tocpile bench kernels train.libsvm.gz --formats csr,toc,gzip --json\n  \
    tocpile bench kernels train.toc --batch-rows 100 --batches 10\n  \
    tocpile bench kernels train.libsvm.gz --formats csr,toc --clock cpu --rounds 9")]
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
    /// Besides the batch formats: `toc-v3`, each batch as one page of
    /// dataset file version 3 (coded against the shared dictionary of its
    /// segment, learned as `tocpile encode` learns it, over the measured
    /// rows), `toc-v3xK`, each batch as K such pages whose kernels run on
    /// one tree (the pairs and nodes the pages share computed once), and
    /// `toc-v3xK-apart`, the same pages' kernels run page by page. A
    /// `-tree` suffix on these keeps every page's kernels on its tree,
    /// where otherwise a batch whose tree costs more work than its rows
    /// runs on the rows (as every TOC batch does). `pairs`: each batch as
    /// the loader hands pair codes to the trainer (a code per entry into
    /// one table of the distinct pairs of all batches, shared by them).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = KernelFormat::parse)]
    formats: Option<Vec<KernelFormat>>,
    /// Interleaved rounds (the median is reported).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Minimum time of one (format, operation) measurement per round, in
    /// milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 20)]
    min_time_ms: u64,
    #[command(flatten)]
    rows: RowArgs,
    /// What is timed: `wall` (the wall clock) or `cpu` (the measuring
    /// thread's CPU time, Linux only), which other processes on a busy
    /// machine do not inflate.
    #[arg(long, value_name = "CLOCK", default_value = "wall", value_parser = parse_clock)]
    clock: Clock,
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
}

fn parse_clock(text: &str) -> Result<Clock, String> {
    match text {
        "wall" => Ok(Clock::Wall),
        "cpu" => Ok(Clock::Cpu),
        other => Err(format!("unknown clock {other:?}: expected wall or cpu")),
    }
}

pub fn run(args: &BenchArgs) -> Outcome {
    match &args.what {
        BenchCommand::Kernels(args) => kernels(args),
        BenchCommand::Codec(args) => codec::run(args),
        BenchCommand::Pages(args) => pages::run(args),
        BenchCommand::Adaptive(args) => adaptive::run(args),
        BenchCommand::Predict(args) => predict::run(args),
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
    encoded_bytes: BTreeMap<String, usize>,
    ops: BTreeMap<&'static str, BTreeMap<String, Cell>>,
}

fn kernels(args: &KernelArgs) -> Outcome {
    let batch_rows = usize::try_from(args.batch_rows).unwrap_or(usize::MAX);
    let n_batches = usize::try_from(args.batches).unwrap_or(usize::MAX);
    let rows = args.rows.load(
        &args.input,
        &args.input_args,
        batch_rows.saturating_mul(n_batches),
    )?;
    let batches: Vec<_> = (0..rows.n_rows())
        .step_by(batch_rows)
        .take(n_batches)
        .map(|s| rows.slice_rows(s..(s + batch_rows).min(rows.n_rows())))
        .collect();
    let config = KernelBenchConfig {
        formats: args
            .formats
            .clone()
            .unwrap_or_else(|| FormatKind::ALL.map(KernelFormat::Batch).to_vec()),
        rounds: usize::try_from(args.rounds).unwrap_or(usize::MAX),
        min_time: Duration::from_millis(args.min_time_ms),
        clock: args.clock,
        ..KernelBenchConfig::default()
    };
    dense_fits(&batches, &config.formats, &args.input)?;
    let report = kernel_table(&batches, &config).map_err(|e| Failure::about(&args.input, e))?;
    if args.json {
        return emit_json(&to_json(&args.input.display().to_string(), &report));
    }
    emit(&format!(
        "{}: {} batches of {} rows, p = {}; {} per batch as a ratio to CSR (below 1 is faster)\n\n{}\n{}\n",
        args.input.display(),
        report.n_batches,
        report.batch_rows,
        report.p,
        match args.clock {
            Clock::Wall => "time",
            Clock::Cpu => "CPU time",
        },
        report.to_markdown(),
        report.csr_micros()
    ))
}

/// The formats that build a batch's dense matrix (DEN, DVI, snappy, gzip,
/// LZ4) hold every batch's, and decompress one at a time, about twice the
/// matrices of all batches and twice one more: refused, naming them, when
/// that is more than the process may allocate (a 4-row file with column
/// 6,000,000 has 192 MB matrices, which aborted under a 1 GB limit).
fn dense_fits(
    batches: &[tocpile::SparseBatch],
    formats: &[KernelFormat],
    input: &std::path::Path,
) -> Outcome {
    let dense: Vec<&str> = formats
        .iter()
        .filter_map(|f| match f {
            KernelFormat::Batch(kind) => Some(*kind),
            KernelFormat::Shared { .. } | KernelFormat::Pairs => None,
        })
        .filter(|f| {
            matches!(
                f,
                FormatKind::Den
                    | FormatKind::Dvi
                    | FormatKind::Snappy
                    | FormatKind::Gzip
                    | FormatKind::Lz4
            )
        })
        .map(|f| f.name())
        .collect();
    let Some(first) = batches.first() else {
        return Ok(());
    };
    if dense.is_empty() {
        return Ok(());
    }
    let matrix = |b: &tocpile::SparseBatch| 8 * b.n_rows() as u64 * b.n_cols() as u64;
    let largest = batches.iter().map(matrix).max().unwrap_or(0);
    let need = 2 * batches.iter().map(matrix).sum::<u64>() + 2 * largest;
    match crate::measure::memory_ceiling() {
        Some((ceiling, source)) if need > ceiling / 2 => Err(Failure::about(
            input,
            format!(
                "the dense formats ({}) of {} batches of {} x {} need about {} MiB, more than \
                 half of {source}, {} MiB: measure the others (--formats csr,cvi,toc) or fewer \
                 rows (--batch-rows, --batches)",
                dense.join(", "),
                batches.len(),
                first.n_rows(),
                first.n_cols(),
                need >> 20,
                ceiling >> 20
            ),
        )),
        _ => Ok(()),
    }
}

fn to_json(dataset: &str, report: &KernelReport) -> KernelJson {
    let mut ops: BTreeMap<&'static str, BTreeMap<String, Cell>> = BTreeMap::new();
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

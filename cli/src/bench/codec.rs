//! `tocpile bench codec`: sizes of TOC's layout variants against CSR,
//! CVI with bit packing, snappy and gzip, and the codec's speed against
//! gzip and snappy (the measurement is in `crate::measure::codec`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use crate::input::InputArgs;
use crate::measure::codec::{
    mb_per_s, ratio, sizes, speed, Sizes, Speed, FORMATS, OPS, TIMED_BATCH_ROWS, TIME_RATIOS,
};
use crate::measure::file::{self, file_sizes_or_skip, FileJson, FileSizes};
use crate::output::{emit, emit_json};
use crate::rows::RowArgs;
use crate::{Failure, Outcome};

/// Sizes of every TOC layout variant and the codec's speed.
///
/// Each INPUT is read into memory (--max-rows, --decimals, --shuffle as
/// for `tocpile ratio`) and cut into batches of each --batch-rows size.
/// Sizes: CSR, CVI with bit packing, snappy and gzip of the dense f64
/// bytes, the TOC ablation levels, the paper's layout, bit packing with an
/// f64 dictionary, the fixed layout of format version 1 and the default
/// TOC_FULL; every TOC encoding is decoded back and checked. Speeds: TOC
/// encode and decode (several layouts) against gzip and snappy on the
/// first 250-row batches (at most 40, about 32 MiB dense), --reps
/// interleaved repetitions, medians; in MB/s of dense f64 bytes. Then the
/// file-level figure, as `tocpile ratio` gives it (--no-file skips it).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench codec train.libsvm.gz --shuffle 42\n  \
    tocpile bench codec a.libsvm.gz b.libsvm.gz --shuffle 42 --reps 7 --json\n  \
    tocpile bench codec big.libsvm.gz --shuffle 42 --max-rows 300000 --decimals 2")]
pub struct CodecArgs {
    /// LIBSVM or CSV text (plain or gzip), Parquet, or dataset files.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    rows: RowArgs,
    /// Mini-batch sizes in rows of the size tables.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "250,50",
          value_parser = clap::value_parser!(u64).range(1..))]
    batch_rows: Vec<u64>,
    /// Timed repetitions (medians are reported).
    #[arg(long, value_name = "N", default_value_t = 11, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Skip the file-level figure (default .toc file against the input
    /// text compressed), which compresses the whole input three times.
    #[arg(long)]
    no_file: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

struct Report {
    name: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    sizes: Vec<Sizes>,
    speed: Speed,
    file: Option<FileSizes>,
    elapsed: f64,
}

pub fn run(args: &CodecArgs) -> Outcome {
    let start = Instant::now();
    let reps = usize::try_from(args.reps).unwrap_or(usize::MAX);
    let mut reports = Vec::new();
    for path in &args.inputs {
        let t = Instant::now();
        let all = args.rows.load(path, &args.input_args, usize::MAX)?;
        let fail =
            |e: String| Failure::about(path, format!("{e} (a tocpile bug; please report it)"));
        let sizes = args
            .batch_rows
            .iter()
            .map(|&r| sizes(&all, usize::try_from(r).unwrap_or(usize::MAX)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        let speed = speed(&all, reps).map_err(fail)?;
        let file = if args.no_file {
            None
        } else {
            file_sizes_or_skip(path, &args.input_args)
        };
        reports.push(Report {
            name: path.display().to_string(),
            rows: all.n_rows(),
            cols: all.n_cols(),
            nnz: all.nnz(),
            sizes,
            speed,
            file,
            elapsed: t.elapsed().as_secs_f64(),
        });
    }
    let total = start.elapsed().as_secs_f64();
    if args.json {
        emit_json(&to_json(&reports, total, args))
    } else {
        emit(&markdown(&reports, total))
    }
}

fn markdown(reports: &[Report], total: f64) -> String {
    let mut s = String::new();
    let headers: Vec<&str> = FORMATS.iter().map(|f| f.1).collect();
    let n_sizes = reports.first().map_or(0, |r| r.sizes.len());
    for bi in 0..n_sizes {
        let rows = reports[0].sizes[bi].batch_rows;
        let _ = writeln!(
            s,
            "\n### Compression ratio, {rows}-row batches (dense f64 / encoded)\n"
        );
        let _ = writeln!(
            s,
            "| dataset | rows x cols | batches | {} |",
            headers.join(" | ")
        );
        let _ = writeln!(s, "|---|---|---|{}", "---:|".repeat(FORMATS.len()));
        for r in reports {
            let z = &r.sizes[bi];
            let cells: Vec<String> = z
                .encoded
                .iter()
                .map(|&e| format!("{:.1}", ratio(z.dense, e)))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} x {} | {} | {} |",
                r.name,
                r.rows,
                r.cols,
                z.n_batches,
                cells.join(" | ")
            );
        }
    }
    let _ = writeln!(
        s,
        "\n### Speed, MB/s of dense f64 bytes (first {TIMED_BATCH_ROWS}-row batches, median)\n"
    );
    let headers: Vec<&str> = OPS.iter().map(|o| o.1).collect();
    let _ = writeln!(s, "| dataset | batches | {} |", headers.join(" | "));
    let _ = writeln!(s, "|---|---:|{}", "---:|".repeat(OPS.len()));
    for r in reports {
        let cells: Vec<String> = r
            .speed
            .secs
            .iter()
            .map(|&t| format!("{:.0}", mb_per_s(r.speed.dense, t)))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            r.name,
            r.speed.n_batches,
            cells.join(" | ")
        );
    }
    let _ = writeln!(
        s,
        "\n### Time ratios, median of per-repetition ratios (< 1: the first is faster)\n"
    );
    let headers: Vec<&str> = TIME_RATIOS.iter().map(|t| t.1).collect();
    let _ = writeln!(s, "| dataset | {} |", headers.join(" | "));
    let _ = writeln!(s, "|---|{}", "---:|".repeat(TIME_RATIOS.len()));
    for r in reports {
        let cells: Vec<String> = r
            .speed
            .time_ratios
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect();
        let _ = writeln!(s, "| {} | {} |", r.name, cells.join(" | "));
    }
    for r in reports {
        if let Some(sizes) = &r.file {
            let _ = writeln!(s, "\n### {}\n\n{}", r.name, file::markdown(sizes));
        }
    }
    let _ = writeln!(s);
    for r in reports {
        let _ = writeln!(
            s,
            "{}: nnz {}, measured in {:.1} s",
            r.name, r.nnz, r.elapsed
        );
    }
    let _ = writeln!(s, "total {total:.1} s");
    s
}

#[derive(Serialize)]
struct Json {
    shuffle: Option<u64>,
    reps: u64,
    max_rows: Option<usize>,
    decimals: Option<u32>,
    total_secs: f64,
    datasets: Vec<DatasetJson>,
}

#[derive(Serialize)]
struct DatasetJson {
    path: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    secs: f64,
    batches: Vec<SizesJson>,
    speed: SpeedJson,
    /// The file-level figure (`null` with --no-file or for an input that
    /// is not text).
    file: Option<FileJson>,
}

#[derive(Serialize)]
struct SizesJson {
    batch_rows: usize,
    n_batches: usize,
    dense_bytes: u64,
    encoded_bytes: BTreeMap<&'static str, u64>,
    ratio: BTreeMap<&'static str, f64>,
}

#[derive(Serialize)]
struct SpeedJson {
    batch_rows: usize,
    n_batches: usize,
    dense_bytes: u64,
    secs: BTreeMap<&'static str, f64>,
    mb_per_s: BTreeMap<&'static str, f64>,
    time_ratios: BTreeMap<&'static str, f64>,
}

fn to_json(reports: &[Report], total: f64, args: &CodecArgs) -> Json {
    let datasets = reports
        .iter()
        .map(|r| DatasetJson {
            path: r.name.clone(),
            rows: r.rows,
            cols: r.cols,
            nnz: r.nnz,
            secs: r.elapsed,
            batches: r
                .sizes
                .iter()
                .map(|z| SizesJson {
                    batch_rows: z.batch_rows,
                    n_batches: z.n_batches,
                    dense_bytes: z.dense,
                    encoded_bytes: FORMATS.iter().map(|f| f.0).zip(z.encoded).collect(),
                    ratio: FORMATS
                        .iter()
                        .zip(z.encoded)
                        .map(|(f, e)| (f.0, ratio(z.dense, e)))
                        .collect(),
                })
                .collect(),
            speed: SpeedJson {
                batch_rows: TIMED_BATCH_ROWS,
                n_batches: r.speed.n_batches,
                dense_bytes: r.speed.dense,
                secs: OPS.iter().map(|o| o.0).zip(r.speed.secs).collect(),
                mb_per_s: OPS
                    .iter()
                    .zip(r.speed.secs)
                    .map(|(o, t)| (o.0, mb_per_s(r.speed.dense, t)))
                    .collect(),
                time_ratios: TIME_RATIOS
                    .iter()
                    .map(|t| t.0)
                    .zip(r.speed.time_ratios)
                    .collect(),
            },
            file: r.file.as_ref().map(FileJson::from),
        })
        .collect();
    Json {
        shuffle: args.rows.shuffle,
        reps: args.reps,
        max_rows: args.rows.max_rows,
        decimals: args.rows.decimals,
        total_secs: total,
        datasets,
    }
}

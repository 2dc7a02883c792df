//! `tocpile ratio`: the TOC paper's Figures 5 to 7 on the user's data.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::measure::file::{self, file_sizes_or_skip, FileJson, FileSizes};
use crate::measure::ratios::{ratio_table, RatioConfig, RatioRow};
use clap::Args;
use serde::Serialize;
use tocpile::formats::FormatKind;

use crate::input::InputArgs;
use crate::output::{emit, emit_json};
use crate::rows::RowArgs;
use crate::{Failure, Outcome};

mod plot;

/// Compression ratio of every format against DEN, per mini-batch size.
///
/// Each INPUT is read into memory (up to --max-rows rows), optionally
/// shuffled once (--shuffle SEED; otherwise rows stay in file order), cut
/// into consecutive batches of each --batch-rows size and of each --shares
/// percentage of the rows, and every batch is encoded in every format and
/// decoded back to check it. The ratio is the DEN (dense f64) bytes of all
/// batches over the format's bytes. Printed as the paper's figures:
/// Figure 5 (every format), Figure 6 (the TOC ablation: TOC_SPARSE,
/// TOC_LOGICAL, TOC_FULL) and Figure 7 (large batches as a share of the
/// rows). Then the file-level figure: the .toc file of a default
/// `tocpile encode` of the whole input against gzip -6, zstd -19 and xz -9
/// of the input text (and Parquet with zstd in a build with the `parquet`
/// feature); --no-file skips it.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile ratio train.libsvm.gz\n  \
    tocpile ratio a.libsvm.gz b.csv --label-column y --shuffle 42 --json\n  \
    tocpile ratio train.libsvm.gz --batch-rows 50,250 --shares 1,100 --plot ratio.svg\n  \
    tocpile ratio big.libsvm.gz --max-rows 300000")]
pub struct RatioArgs {
    /// LIBSVM or CSV text (plain or gzip), Parquet, or dataset files.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input_args: InputArgs,
    /// Mini-batch sizes in rows (Figures 5 and 6).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "50,100,150,200,250",
          value_parser = clap::value_parser!(u64).range(1..))]
    batch_rows: Vec<u64>,
    /// Large batches as a percentage of the rows (Figure 7).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "1,10,50,100",
          value_parser = parse_share)]
    shares: Vec<f64>,
    /// Skip the large batches (no Figure 7).
    #[arg(long)]
    no_large: bool,
    #[command(flatten)]
    rows: RowArgs,
    /// Skip the formats that build a dense matrix (DEN, DVI, snappy, gzip,
    /// lz4) on batches whose dense f64 size exceeds this many MiB (lowered
    /// to an eighth of what the process may allocate, its address-space
    /// limit or the memory available, when that is less: a dense batch
    /// takes about four times its matrix, two batches at once).
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    max_dense_mib: u64,
    /// Skip the file-level figure (default .toc file against the input
    /// text compressed), which compresses the whole input three times.
    #[arg(long)]
    no_file: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// Also draw the ratios as an SVG chart.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

fn parse_share(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("{text:?} is not a percentage in (0, 100]")),
    }
}

/// The measurements of one input.
pub struct DatasetRatios {
    pub path: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub shuffle: Option<u64>,
    /// One row per --batch-rows size.
    pub batches: Vec<RatioRow>,
    /// (share in percent, row) per --shares entry.
    pub large: Vec<(f64, RatioRow)>,
    /// The file-level figure, unless skipped or not a text input.
    pub file: Option<FileSizes>,
}

pub fn run(args: &RatioArgs) -> Outcome {
    // Written after every measurement: checked first.
    let inputs: Vec<&std::path::Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    let outputs: Vec<(&str, &std::path::Path)> =
        args.plot.iter().map(|p| ("--plot", p.as_path())).collect();
    crate::output::check(&inputs, &outputs)?;
    // A 4-row file with column 6,000,000 has 192 MB dense batches, which
    // the compressed formats hold about four times over: bounded by what
    // the process may allocate, they are skipped rather than aborting it.
    let (max_dense_bytes, lowered) =
        crate::measure::dense_budget(args.max_dense_mib.saturating_mul(1 << 20));
    let config = RatioConfig {
        max_dense_bytes,
        ..RatioConfig::default()
    };
    let batch_rows: Vec<usize> = args
        .batch_rows
        .iter()
        .map(|&r| usize::try_from(r).unwrap_or(usize::MAX))
        .collect();
    let mut results = Vec::new();
    for path in &args.inputs {
        let r = measure(path, args, &batch_rows, &config)?;
        check_exact(&r)?;
        if !args.json {
            emit(&markdown(&r, lowered.as_deref()))?;
        }
        results.push(r);
    }
    if let Some(svg) = &args.plot {
        plot::draw(svg, &results).map_err(|e| Failure::about(svg, e))?;
        if !args.json {
            emit(&format!("chart written to {}\n", svg.display()))?;
        }
    }
    if args.json {
        emit_json(&to_json(&results))?;
    }
    Ok(())
}

fn measure(
    path: &Path,
    args: &RatioArgs,
    batch_rows: &[usize],
    config: &RatioConfig,
) -> Result<DatasetRatios, Failure> {
    let rows = args.rows.load(path, &args.input_args, usize::MAX)?;
    let fail = |e| Failure::about(path, e);
    let batches = ratio_table(&rows, batch_rows, config).map_err(fail)?;
    let mut large = Vec::new();
    let shares: &[f64] = if args.no_large { &[] } else { &args.shares };
    for &share in shares {
        let n = ((rows.n_rows() as f64 * share / 100.0).ceil() as usize).max(1);
        let mut row = ratio_table(&rows, &[n], config).map_err(fail)?;
        large.push((share, row.remove(0)));
    }
    let file = if args.no_file {
        None
    } else {
        file_sizes_or_skip(path, &args.input_args)
    };
    Ok(DatasetRatios {
        path: path.display().to_string(),
        rows: rows.n_rows(),
        cols: rows.n_cols(),
        nnz: rows.nnz(),
        shuffle: args.rows.shuffle,
        batches,
        large,
        file,
    })
}

/// Every verified batch must have decoded exactly; anything else is a bug
/// worth reporting loudly.
fn check_exact(r: &DatasetRatios) -> Outcome {
    let rows = r.batches.iter().chain(r.large.iter().map(|(_, row)| row));
    for row in rows {
        for cell in &row.cells {
            if cell.exact == Some(false) {
                return Err(Failure(format!(
                    "{}: a {}-row batch in {} did not decode to the rows it encodes (a tocpile bug; please report it)",
                    r.path, row.batch_rows, cell.format
                )));
            }
        }
    }
    Ok(())
}

/// The formats of Figure 5 (all but the TOC ablation levels) and of Figure 6.
const FIGURE5: [FormatKind; 8] = [
    FormatKind::Den,
    FormatKind::Csr,
    FormatKind::Cvi,
    FormatKind::Dvi,
    FormatKind::Snappy,
    FormatKind::Gzip,
    FormatKind::Lz4,
    FormatKind::TocFull,
];
const FIGURE6: [FormatKind; 3] = [
    FormatKind::TocSparse,
    FormatKind::TocLogical,
    FormatKind::TocFull,
];

fn cell_text(row: &RatioRow, format: FormatKind) -> String {
    match row.get(format).and_then(|c| c.ratio_vs_den) {
        Some(r) if r >= 100.0 => format!("{r:.0}"),
        Some(r) => format!("{r:.1}"),
        None => "-".to_string(),
    }
}

fn table(out: &mut String, first: &str, formats: &[FormatKind], rows: &[(String, &RatioRow)]) {
    let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
    let _ = writeln!(out, "| {first} | batches | {} |", names.join(" | "));
    let _ = writeln!(out, "|---:|---:|{}", "---:|".repeat(formats.len()));
    for (label, row) in rows {
        let cells: Vec<String> = formats.iter().map(|&f| cell_text(row, f)).collect();
        let _ = writeln!(
            out,
            "| {label} | {} | {} |",
            row.n_batches,
            cells.join(" | ")
        );
    }
}

/// The tables of `r`; `lowered`: why --max-dense-mib was lowered, if it
/// was.
fn markdown(r: &DatasetRatios, lowered: Option<&str>) -> String {
    let mut s = String::new();
    let order = match r.shuffle {
        Some(seed) => format!("rows shuffled once (seed {seed})"),
        None => "rows in file order".to_string(),
    };
    let _ = writeln!(
        s,
        "## {}: {} rows x {} columns, {} non-zeros; {order}\n",
        r.path, r.rows, r.cols, r.nnz
    );
    let _ = writeln!(
        s,
        "Compression ratio vs DEN (DEN bytes / format bytes; every batch decoded back exactly).\n"
    );
    let fixed: Vec<(String, &RatioRow)> = r
        .batches
        .iter()
        .map(|b| (b.batch_rows.to_string(), b))
        .collect();
    if !fixed.is_empty() {
        let _ = writeln!(s, "Figure 5, every format:\n");
        table(&mut s, "batch rows", &FIGURE5, &fixed);
        let _ = writeln!(s, "\nFigure 6, TOC ablation:\n");
        table(&mut s, "batch rows", &FIGURE6, &fixed);
    }
    if !r.large.is_empty() {
        let _ = writeln!(s, "\nFigure 7, large batches (share of the rows):\n");
        let large: Vec<(String, &RatioRow)> = r
            .large
            .iter()
            .map(|(share, b)| (format!("{share}% ({} rows)", b.batch_rows), b))
            .collect();
        table(&mut s, "batch", &FormatKind::ALL, &large);
    }
    let skipped = r
        .batches
        .iter()
        .chain(r.large.iter().map(|(_, b)| b))
        .any(|b| b.cells.iter().any(|c| c.bytes.is_none()));
    if skipped {
        let _ = writeln!(
            s,
            "\n- : skipped, the batch's dense matrix exceeds --max-dense-mib{}",
            lowered.map(|why| format!(" ({why})")).unwrap_or_default()
        );
    }
    if let Some(sizes) = &r.file {
        s.push('\n');
        s.push_str(&file::markdown(sizes));
    }
    s.push('\n');
    s
}

#[derive(Serialize)]
struct BatchJson {
    batch_rows: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_percent: Option<f64>,
    n_batches: usize,
    den_bytes: u64,
    /// Format name to ratio vs DEN; `null` where skipped.
    ratios: BTreeMap<&'static str, Option<f64>>,
    /// Format name to encoded bytes; `null` where skipped.
    bytes: BTreeMap<&'static str, Option<u64>>,
}

#[derive(Serialize)]
struct DatasetJson {
    path: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    shuffle_seed: Option<u64>,
    batches: Vec<BatchJson>,
    large_batches: Vec<BatchJson>,
    /// The file-level figure (`null` with --no-file or for an input that
    /// is not text).
    file: Option<FileJson>,
}

#[derive(Serialize)]
struct RatioJson {
    datasets: Vec<DatasetJson>,
}

fn batch_json(row: &RatioRow, share: Option<f64>) -> BatchJson {
    BatchJson {
        batch_rows: row.batch_rows,
        share_percent: share,
        n_batches: row.n_batches,
        den_bytes: row.den_bytes,
        ratios: row
            .cells
            .iter()
            .map(|c| (c.format.name(), c.ratio_vs_den))
            .collect(),
        bytes: row
            .cells
            .iter()
            .map(|c| (c.format.name(), c.bytes))
            .collect(),
    }
}

fn to_json(results: &[DatasetRatios]) -> RatioJson {
    RatioJson {
        datasets: results
            .iter()
            .map(|r| DatasetJson {
                path: r.path.clone(),
                rows: r.rows,
                cols: r.cols,
                nnz: r.nnz,
                shuffle_seed: r.shuffle,
                batches: r.batches.iter().map(|b| batch_json(b, None)).collect(),
                large_batches: r
                    .large
                    .iter()
                    .map(|(share, b)| batch_json(b, Some(*share)))
                    .collect(),
                file: r.file.as_ref().map(FileJson::from),
            })
            .collect(),
    }
}

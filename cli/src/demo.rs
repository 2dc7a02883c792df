//! `tocpile demo`: the main job on the built-in dataset, step by step.
//!
//! The steps share one [`Demo`]: the built-in rows, cut into mini-batches.
//! A step is a function taking it; to add one (training, when the trainer
//! lands), write the function and call it from [`run`].

use std::io::Cursor;
use std::time::{Duration, Instant};

use clap::Args;
use tocpile::bench::{kernel_table, ratio_table, KernelBenchConfig, RatioConfig};
use tocpile::formats::FormatKind;
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::SparseBatch;

use crate::input::shuffled;
use crate::output::emit;
use crate::{Failure, Outcome};

/// The built-in dataset, embedded in the binary so that the demo runs from
/// any directory: the UCI Mushroom data (5,644 rows, 22 categorical
/// attributes one-hot encoded into 98 columns), gzip'd LIBSVM.
const MUSHROOMS: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../data/mushrooms.libsvm.gz"
));
const MUSHROOMS_NAME: &str = "data/mushrooms.libsvm.gz";
const MUSHROOMS_COLS: usize = 98;
/// Rows per mini-batch, as in the TOC paper's kernel measurements.
const BATCH_ROWS: usize = 250;
/// The seed of the one shuffle before cutting batches.
const SEED: u64 = 42;

/// Run the main job on the built-in dataset (no network, no files needed).
///
/// Reads the built-in UCI Mushroom data (embedded in the binary), shuffles
/// it once, cuts it into 250-row mini-batches, encodes every batch in every
/// format, checks that each decodes back exactly, and prints the
/// compression ratio of each format against dense f64 (DEN), then the time
/// of the matrix operations of MGD on each format as a ratio to CSR.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile demo\n  \
    cargo run --release -- demo    (from the repository)")]
pub struct DemoArgs {}

/// What the steps share.
pub struct Demo {
    /// Every row, shuffled once.
    pub rows: SparseBatch,
    /// One label per row (1 = poisonous), for the training step to come.
    #[allow(dead_code)]
    pub labels: Vec<f64>,
    /// `rows` cut into consecutive mini-batches of [`BATCH_ROWS`].
    pub batches: Vec<SparseBatch>,
}

pub fn run(_args: &DemoArgs) -> Outcome {
    let start = Instant::now();
    let demo = load()?;
    compression_step(&demo)?;
    kernel_step(&demo)?;
    emit(&format!(
        "\ndone in {:.1} s\n",
        start.elapsed().as_secs_f64()
    ))
}

/// Reads the embedded dataset and cuts it into mini-batches.
fn load() -> Result<Demo, Failure> {
    let options = LibsvmOptions {
        n_cols: Some(MUSHROOMS_COLS),
        zero_based: false,
    };
    let mut reader = LibsvmReader::from_reader(Cursor::new(MUSHROOMS), MUSHROOMS_NAME, options)?;
    let mut raw = SparseBatch::with_cols(MUSHROOMS_COLS)?;
    let mut raw_labels = Vec::new();
    while let Some(chunk) = reader.next_chunk(1 << 16)? {
        for (cols, vals) in chunk.batch.rows() {
            raw.push_row(cols, vals)?;
        }
        raw_labels.extend_from_slice(&chunk.labels);
    }
    let (rows, labels) = shuffled(&raw, &raw_labels, SEED)?;
    let batches = (0..rows.n_rows())
        .step_by(BATCH_ROWS)
        .map(|s| rows.slice_rows(s..(s + BATCH_ROWS).min(rows.n_rows())))
        .collect::<Vec<_>>();
    let poisonous = labels.iter().filter(|&&y| y == 1.0).count();
    emit(&format!(
        "mushrooms (built in, {MUSHROOMS_NAME}): {} rows x {} columns, {} non-zeros, {poisonous} poisonous\n\
         shuffled once (seed {SEED}), cut into {} mini-batches of {BATCH_ROWS} rows\n\n",
        rows.n_rows(),
        rows.n_cols(),
        rows.nnz(),
        batches.len(),
    ))?;
    Ok(Demo {
        rows,
        labels,
        batches,
    })
}

/// Encodes every batch in every format, checks the round trip, prints the
/// compression table.
fn compression_step(demo: &Demo) -> Outcome {
    let table = ratio_table(&demo.rows, &[BATCH_ROWS], &RatioConfig::default())?;
    let row = &table[0];
    let mut text = String::from(
        "Compression of the mini-batches (ratio = dense f64 (DEN) bytes / encoded bytes):\n\n\
         | format | encoded KiB | ratio vs DEN | round trip |\n|---|---:|---:|---|\n",
    );
    let mut inexact = Vec::new();
    for cell in &row.cells {
        let bytes = cell.bytes.unwrap_or(0);
        let exact = cell.exact == Some(true);
        if !exact {
            inexact.push(cell.format.name());
        }
        text.push_str(&format!(
            "| {} | {:.1} | {:.1} | {} |\n",
            cell.format,
            bytes as f64 / 1024.0,
            cell.ratio_vs_den.unwrap_or(f64::NAN),
            if exact { "exact" } else { "MISMATCH" }
        ));
    }
    emit(&text)?;
    if !inexact.is_empty() {
        return Err(Failure(format!(
            "the built-in mini-batches did not decode exactly in {} (a tocpile bug)",
            inexact.join(", ")
        )));
    }
    emit(&format!(
        "\nevery one of the {} mini-batches decodes back exactly in all {} formats\n",
        row.n_batches,
        row.cells.len()
    ))
}

/// Times the matrix operations of MGD on each format (a short run: see
/// `tocpile bench kernels` for a longer one).
fn kernel_step(demo: &Demo) -> Outcome {
    let config = KernelBenchConfig {
        formats: FormatKind::ALL.to_vec(),
        rounds: 3,
        min_time: Duration::from_millis(5),
        ..KernelBenchConfig::default()
    };
    let report = kernel_table(&demo.batches, &config)?;
    emit(&format!(
        "\nKernel time per {BATCH_ROWS}-row batch as a ratio to CSR (p = {}; below 1 is faster; \
         wall-clock, a short run):\n\n{}\n{}\n",
        report.p,
        report.to_markdown(),
        report.csr_micros()
    ))
}

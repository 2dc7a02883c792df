//! `tocpile demo`: the main job on the built-in dataset, step by step.
//!
//! The steps share one [`Demo`]: the built-in rows, cut into mini-batches.
//! A step is a function taking it; to add one, write the function and call
//! it from [`run`].

use std::io::Cursor;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::measure::kernels::{kernel_table, KernelBenchConfig, KernelFormat};
use crate::measure::ratios::{ratio_table, RatioConfig};
use clap::Args;
use std::sync::Arc;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::FormatKind;
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::loader::{LoaderOptions, Strategy};
use tocpile::model::ModelKind;
use tocpile::train::{TrainOptions, Trainer};
use tocpile::SparseBatch;

use crate::input::shuffled;
use crate::output::emit;
use crate::train::{print_warnings, Table};
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
/// The seed of the one shuffle before cutting batches, and of training.
const SEED: u64 = 42;
/// The training step's dataset file: 50-row pages (five to a mini-batch)
/// in blocks of about 1 KiB, so that the file has a few dozen blocks
/// (which the loader keeps whole: they fit its budget).
const TRAIN_PAGE_ROWS: usize = 50;
const TRAIN_BLOCK_BYTES: usize = 1 << 10;
const TRAIN_EPOCHS: usize = 5;
const TRAIN_LR: f64 = 0.5;

/// Run the main job on the built-in dataset (no network, no files needed).
///
/// Reads the built-in UCI Mushroom data (embedded in the binary), shuffles
/// it once, cuts it into 250-row mini-batches, encodes every batch in every
/// format, checks that each decodes back exactly, and prints the
/// compression ratio of each format against dense f64 (DEN), then the time
/// of the matrix operations of MGD on each format as a ratio to CSR.
/// Finally writes the rows to a temporary dataset file and trains logistic
/// regression on it for a few epochs with the loader's defaults
/// (CorgiPile over rows kept as codes, the whole file when it fits),
/// printing loss and accuracy per epoch and how many mini-batches the
/// trainer computed on their TOC trees.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile demo\n  \
    cargo run --release -- demo    (from the repository)")]
pub struct DemoArgs {}

/// What the steps share.
pub struct Demo {
    /// Every row, shuffled once.
    pub rows: SparseBatch,
    /// One label per row (1 = poisonous).
    pub labels: Vec<f64>,
    /// `rows` cut into consecutive mini-batches of [`BATCH_ROWS`].
    pub batches: Vec<SparseBatch>,
}

pub fn run(_args: &DemoArgs) -> Outcome {
    let start = Instant::now();
    let demo = load()?;
    compression_step(&demo)?;
    kernel_step(&demo)?;
    training_step(&demo)?;
    emit(&format!(
        "\ndone in {:.1} s\n",
        start.elapsed().as_secs_f64()
    ))
}

/// Reads the embedded dataset and cuts it into mini-batches.
fn load() -> Result<Demo, Failure> {
    let options = LibsvmOptions::default()
        .with_n_cols(Some(MUSHROOMS_COLS))
        .with_zero_based(false);
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
        formats: FormatKind::ALL.map(KernelFormat::Batch).to_vec(),
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

/// A file removed when dropped (on success and on error alike).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes the rows to a temporary dataset file and trains logistic
/// regression on it with CorgiPile, printing the epochs as they finish.
fn training_step(demo: &Demo) -> Outcome {
    let file =
        TempFile(std::env::temp_dir().join(format!("tocpile-demo-{}.toc", std::process::id())));
    let options = WriterOptions::default()
        .with_page_rows(TRAIN_PAGE_ROWS)
        .with_block_bytes(TRAIN_BLOCK_BYTES)
        .with_format(FormatKind::TocFull);
    let mut writer = DatasetWriter::create(&file.0, demo.rows.n_cols(), options)?;
    writer.push(&demo.rows, &demo.labels)?;
    let info = writer.finish()?;
    let options = TrainOptions::default()
        .with_optimizer(tocpile::model::Optimizer::Sgd)
        .with_epochs(TRAIN_EPOCHS)
        .with_learning_rate(TRAIN_LR);
    let prepared = Trainer::new(ModelKind::Logistic)
        .options(options.clone())
        .loader(
            // The default path: CorgiPile over rows kept as codes into the
            // file's shared dictionaries, the whole file when it fits, the
            // trainer handed TOC batches (or rows, where a batch's tree
            // costs the kernels more work than its rows).
            LoaderOptions::default()
                .with_strategy(Strategy::CorgiPile)
                .with_batch_rows(BATCH_ROWS),
        )
        .seed(SEED)
        .prepare(&Arc::new(Dataset::open(&file.0)?))?;
    print_warnings(&prepared)?;
    let table = Table {
        metric: "accuracy",
        eval: false,
        strategy: false,
    };
    let loader = &prepared.loaders()[0];
    let choice = loader.buffer_choice();
    let buffer = if choice.whole_file {
        format!(
            "the whole file ({} blocks, its rows kept as {}, {:.1} KiB): a full shuffle each \
             epoch, each row decoded once",
            choice.blocks,
            choice.rows,
            choice.whole_bytes as f64 / 1024.0
        )
    } else {
        format!(
            "a buffer of {} blocks, its rows kept as {}",
            loader.buffer_blocks(),
            choice.rows
        )
    };
    emit(&format!(
        "\nTraining: logistic regression by mini-batch SGD with the loader's defaults.\nThe rows \
         were written to a dataset file ({} pages of {TRAIN_PAGE_ROWS} rows in {} blocks, \
         TOC_FULL against shared dictionaries) and are read with CorgiPile:\n{buffer};\n\
         {BATCH_ROWS}-row mini-batches cut from the shuffled codes go to the trainer as TOC \
         batches, or as rows where a batch's tree would cost the kernels more.\nLearning rate \
         {TRAIN_LR}, decaying by {} per epoch. Loss and accuracy are the running figures of \
         each epoch;\nwait share = share of the epoch spent waiting for the loader.\n\n{}",
        info.n_pages,
        info.n_blocks,
        options.decay,
        table.header()
    ))?;
    let mut printed = Ok(());
    let fitted = prepared.fit(|strategy, report| {
        if printed.is_ok() {
            printed = emit(&table.row(strategy, report));
        }
    })?;
    printed?;
    let last = fitted[0].reports.last().expect("at least one epoch");
    let (trees, rows) = fitted[0]
        .reports
        .iter()
        .fold((0, 0), |(t, r), e| (t + e.tree_batches, r + e.row_batches));
    emit(&format!(
        "\ntrained in {TRAIN_EPOCHS} epochs: training accuracy {:.2}% (loss {:.4}); of {} \
         mini-batches, {trees} computed on their TOC trees and {rows} as rows\n",
        100.0 * last.train.accuracy,
        last.train.loss,
        trees + rows
    ))
}

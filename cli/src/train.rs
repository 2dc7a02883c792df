//! `tocpile train`: mini-batch SGD over a dataset file with a shuffling
//! strategy, the gradient computed on the encoded mini-batches.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use tocpile::dataset::Dataset;
use tocpile::loader::{labels_in_file_order, Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::{Model, ModelKind};
use tocpile::train::{train, EpochReport, Score, TrainOptions};

use crate::output::{emit, emit_json};
use crate::{Failure, Outcome};

mod plot;

/// Train a model by mini-batch SGD on a dataset file.
///
/// Reads FILE.toc (written by `tocpile encode`) epoch by epoch in the
/// order of the --shuffle strategy (CorgiPile by default: a random
/// permutation of the blocks, a buffer of --buffer of the blocks at a time,
/// its rows shuffled) and takes one SGD step per mini-batch, with the
/// gradient computed on the encoded batch. The learning rate decays as
/// lr * decay^epoch. Each epoch's loss and accuracy (R^2 for linreg) are
/// the running figures of the mini-batches as the model met them; --eval
/// adds exact figures on another file after each epoch. Epochs are
/// numbered from 0.
///
/// A comma list of strategies (--shuffle corgipile,none,once) trains one
/// model per strategy, from the same initial model, for comparison.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile encode train.libsvm.gz -o train.toc --block-bytes 65536\n  \
    tocpile train train.toc\n  \
    tocpile train train.toc --model svm --epochs 20 --lr 0.05 --save svm.model\n  \
    tocpile train train.toc --eval test.toc --json\n  \
    tocpile train train.toc --shuffle corgipile,none,once,epoch --plot shuffles.svg\n  \
    tocpile train digits.toc --model softmax --mode page --buffer 0.2")]
pub struct TrainArgs {
    /// The dataset file to train on (see `tocpile encode`).
    #[arg(value_name = "FILE.toc")]
    pub file: PathBuf,
    /// The model: lr (logistic regression), svm, linreg (linear
    /// regression), softmax (multinomial LR) or mlp (the TOC paper's
    /// network, hidden layers 200 and 50).
    #[arg(long, value_name = "MODEL", default_value = "lr", value_parser = parse_model)]
    pub model: String,
    /// Shuffling strategy, or a comma list of them to compare: corgipile,
    /// none, once, epoch, window, mrs, block.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "corgipile",
          value_parser = parse_strategy)]
    pub shuffle: Vec<Strategy>,
    /// What the buffer shuffles: rows (exact, re-encoded into each
    /// mini-batch), whole encoded pages (page, no re-encoding), or auto:
    /// page mode when a mini-batch spans at least four pages of the file,
    /// exact mode otherwise.
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: ModeArg,
    /// Epochs to run.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub epochs: u64,
    /// Rows per mini-batch.
    #[arg(long, value_name = "N", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_size: u64,
    /// Learning rate of the first epoch.
    #[arg(long, value_name = "X", default_value_t = 0.1, allow_negative_numbers = true,
          value_parser = parse_positive)]
    pub lr: f64,
    /// Factor applied to the learning rate after each epoch, in (0, 1].
    #[arg(long, value_name = "X", default_value_t = 0.95, allow_negative_numbers = true,
          value_parser = parse_decay)]
    pub decay: f64,
    /// L2 regularisation strength.
    #[arg(long, value_name = "X", default_value_t = 0.0, allow_negative_numbers = true,
          value_parser = parse_l2)]
    pub l2: f64,
    /// Buffer size as a fraction of the dataset, in (0, 1] (CorgiPile,
    /// block, window, mrs).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.1, allow_negative_numbers = true,
          value_parser = parse_fraction)]
    pub buffer: f64,
    /// Seed of the shuffles and of the initial model.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Number of classes (softmax, mlp); default: the largest label + 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=65_536))]
    pub classes: Option<u64>,
    /// A dataset file to evaluate the model on after each epoch.
    #[arg(long, value_name = "FILE.toc")]
    pub eval: Option<PathBuf>,
    /// Write the trained model to this file (atomically; one strategy
    /// only).
    #[arg(long, value_name = "MODEL_FILE")]
    pub save: Option<PathBuf>,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also draw loss and accuracy per epoch (one line per strategy) as an
    /// SVG chart.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Shuffle decoded rows; encode each mini-batch.
    Exact,
    /// Shuffle whole encoded pages.
    Page,
    /// Page mode when batches span four pages or more, else exact.
    Auto,
}

impl ModeArg {
    fn mode(self) -> Mode {
        match self {
            ModeArg::Exact => Mode::Exact,
            ModeArg::Page => Mode::Page,
            ModeArg::Auto => Mode::Auto,
        }
    }
}

fn parse_model(name: &str) -> Result<String, String> {
    let lower = name.to_ascii_lowercase();
    if ModelKind::NAMES.contains(&lower.as_str()) {
        Ok(lower)
    } else {
        Err(format!(
            "unknown model {name:?} (one of {})",
            ModelKind::NAMES.join(", ")
        ))
    }
}

fn parse_strategy(name: &str) -> Result<Strategy, String> {
    Strategy::from_name(name.trim()).ok_or_else(|| {
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        format!(
            "unknown shuffling strategy {name:?} (one of {})",
            names.join(", ")
        )
    })
}

fn parse_number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .map_err(|_| format!("{text:?} is not a number"))
}

fn parse_positive(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("{text} is not a positive finite number")),
    }
}

fn parse_decay(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!("{text} is not in (0, 1]")),
    }
}

fn parse_l2(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x >= 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("{text} is not a non-negative finite number")),
    }
}

fn parse_fraction(text: &str) -> Result<f64, String> {
    match parse_number(text)? {
        x if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(format!("{text} is not a fraction in (0, 1]")),
    }
}

/// One strategy's training run.
pub struct Run {
    pub strategy: Strategy,
    /// The mode the loader used (`auto` resolved).
    pub mode: &'static str,
    pub reports: Vec<EpochReport>,
}

/// What a training table shows besides the figures.
pub struct Table {
    /// "accuracy", or "R^2" for regression.
    pub metric: &'static str,
    /// Whether the eval columns are shown.
    pub eval: bool,
    /// Whether the strategy column is shown.
    pub strategy: bool,
}

impl Table {
    /// The header and separator lines.
    pub fn header(&self) -> String {
        let mut head = String::from("|");
        let mut rule = String::from("|");
        if self.strategy {
            head.push_str(" strategy |");
            rule.push_str("---|");
        }
        head.push_str(&format!(
            " epoch | loss | {} | seconds | wait share |",
            self.metric
        ));
        rule.push_str("---:|---:|---:|---:|---:|");
        if self.eval {
            head.push_str(&format!(" eval loss | eval {} |", self.metric));
            rule.push_str("---:|---:|");
        }
        format!("{head}\n{rule}\n")
    }

    /// One epoch's line.
    pub fn row(&self, strategy: Strategy, r: &EpochReport) -> String {
        let mut line = String::from("|");
        if self.strategy {
            line.push_str(&format!(" {strategy} |"));
        }
        let share = if r.seconds > 0.0 {
            r.wait_seconds / r.seconds
        } else {
            0.0
        };
        line.push_str(&format!(
            " {} | {:.4} | {:.4} | {:.3} | {:.0}% |",
            r.epoch,
            r.train.loss,
            r.train.accuracy,
            r.seconds,
            100.0 * share
        ));
        if let Some(e) = r.eval {
            line.push_str(&format!(" {:.4} | {:.4} |", e.loss, e.accuracy));
        } else if self.eval {
            line.push_str(" - | - |");
        }
        line.push('\n');
        line
    }
}

/// The model kind for `name` on `dataset`, inferring the number of classes
/// from the labels for softmax and mlp unless `classes` is given.
fn model_kind(
    name: &str,
    classes: Option<u64>,
    dataset: &Dataset,
    path: &Path,
) -> Result<ModelKind, Failure> {
    let classes = match (name, classes) {
        (_, Some(c)) => usize::try_from(c).unwrap_or(usize::MAX),
        ("softmax" | "mlp", None) => infer_classes(name, dataset, path)?,
        _ => 2,
    };
    Ok(ModelKind::from_name(name, classes)?)
}

/// Largest label + 1, the labels being class indices.
fn infer_classes(name: &str, dataset: &Dataset, path: &Path) -> Result<usize, Failure> {
    const MAX_CLASSES: f64 = 65_536.0;
    let labels = labels_in_file_order(dataset)?;
    // A binary network also takes -1/+1 labels (label > 0 is positive).
    if name == "mlp" && labels.iter().all(|&y| y == -1.0 || y == 0.0 || y == 1.0) {
        return Ok(2);
    }
    let mut max = 0.0f64;
    for (row, &y) in labels.iter().enumerate() {
        if !(y >= 0.0 && y.fract() == 0.0 && y < MAX_CLASSES) {
            return Err(Failure::about(
                path,
                format!(
                    "row {row}: label {y} is not a class index (an integer in 0..{MAX_CLASSES}): \
                     {name} needs labels 0, 1, 2, ...; give --classes N if some classes are absent"
                ),
            ));
        }
        max = max.max(y);
    }
    Ok(max as usize + 1)
}

/// A spinner on stderr naming the epoch, hidden unless stderr is a
/// terminal.
fn spinner() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Prints the loader's warnings to stderr.
pub fn warn(loader: &Loader) {
    for w in loader.warnings() {
        eprintln!("tocpile: warning: {w}");
    }
}

pub fn run(args: &TrainArgs) -> Outcome {
    if args.save.is_some() && args.shuffle.len() > 1 {
        return Err(Failure(format!(
            "--save takes a single --shuffle strategy ({} given)",
            args.shuffle.len()
        )));
    }
    let dataset = Arc::new(Dataset::open(&args.file)?);
    if dataset.info().n_rows == 0 {
        return Err(Failure::about(&args.file, "no rows to train on"));
    }
    let eval = match &args.eval {
        Some(path) => Some(Arc::new(Dataset::open(path)?)),
        None => None,
    };
    let kind = model_kind(&args.model, args.classes, &dataset, &args.file)?;
    let n_cols = dataset.info().n_cols;
    let initial = Model::new(kind.clone(), n_cols, args.seed)?;
    let options = TrainOptions {
        epochs: usize::try_from(args.epochs).unwrap_or(usize::MAX),
        learning_rate: args.lr,
        decay: args.decay,
        l2: args.l2,
    };
    let table = Table {
        metric: if kind.is_regression() {
            "R^2"
        } else {
            "accuracy"
        },
        eval: args.eval.is_some(),
        strategy: args.shuffle.len() > 1,
    };
    if !args.json {
        let info = dataset.info();
        // The library decides what auto means; the header only reports it.
        let chosen = args.mode.mode();
        let batch_rows = usize::try_from(args.batch_size).unwrap_or(usize::MAX);
        let resolved = chosen.resolve(info.page_rows, batch_rows);
        let mode = match chosen {
            Mode::Auto => format!("{} (auto)", resolved.name()),
            _ => resolved.name().to_string(),
        };
        emit(&format!(
            "training {kind} on {}: {} rows x {n_cols} columns in {} blocks; {} mode, \
             {}-row mini-batches, buffer {}, lr {} (decay {}), l2 {}, seed {}\n\n{}",
            args.file.display(),
            info.n_rows,
            info.n_blocks,
            mode,
            args.batch_size,
            args.buffer,
            args.lr,
            args.decay,
            args.l2,
            args.seed,
            table.header(),
        ))?;
    }
    let bar = spinner();
    let mut runs = Vec::new();
    let mut models = Vec::new();
    for &strategy in &args.shuffle {
        let loader = Loader::new(
            Arc::clone(&dataset),
            LoaderOptions {
                strategy,
                mode: args.mode.mode(),
                batch_rows: usize::try_from(args.batch_size).unwrap_or(usize::MAX),
                buffer: Buffer::Fraction(args.buffer),
                seed: args.seed,
                ..LoaderOptions::default()
            },
        )?;
        bar.suspend(|| warn(&loader));
        let mut model = initial.clone();
        bar.set_message(format!("{strategy}: epoch 0 of {}", options.epochs));
        let mut printed = Ok(());
        let reports = train(&mut model, &loader, &options, eval.as_ref(), |report| {
            bar.set_message(format!(
                "{strategy}: epoch {} of {}",
                report.epoch + 1,
                options.epochs
            ));
            if !args.json && printed.is_ok() {
                printed = bar.suspend(|| emit(&table.row(strategy, report)));
            }
        });
        let reports = match reports {
            Ok(r) => r,
            Err(e) => {
                bar.finish_and_clear();
                return Err(e.into());
            }
        };
        printed?;
        runs.push(Run {
            strategy,
            mode: loader.mode().name(),
            reports,
        });
        models.push(model);
    }
    bar.finish_and_clear();
    if let (Some(path), Some(model)) = (&args.save, models.first()) {
        model.save(path)?;
    }
    if let Some(svg) = &args.plot {
        plot::draw(svg, &runs, table.metric).map_err(|e| Failure::about(svg, e))?;
    }
    if args.json {
        let docs: Vec<RunJson> = runs.iter().map(|r| run_json(args, &kind, r)).collect();
        return if docs.len() == 1 {
            emit_json(&docs[0])
        } else {
            emit_json(&RunsJson { runs: docs })
        };
    }
    let mut text = String::from("\n");
    for r in &runs {
        if let Some(last) = r.reports.last() {
            text.push_str(&format!(
                "final ({}): loss {:.4}, {} {:.4}",
                r.strategy, last.train.loss, table.metric, last.train.accuracy
            ));
            if let Some(e) = last.eval {
                text.push_str(&format!(
                    "; eval loss {:.4}, eval {} {:.4}",
                    e.loss, table.metric, e.accuracy
                ));
            }
            text.push('\n');
        }
    }
    if let Some(path) = &args.save {
        text.push_str(&format!("model written to {}\n", path.display()));
    }
    if let Some(svg) = &args.plot {
        text.push_str(&format!("chart written to {}\n", svg.display()));
    }
    emit(&text)
}

#[derive(Serialize)]
struct ScoreJson {
    loss: f64,
    accuracy: f64,
}

impl From<Score> for ScoreJson {
    fn from(s: Score) -> Self {
        ScoreJson {
            loss: s.loss,
            accuracy: s.accuracy,
        }
    }
}

#[derive(Serialize)]
struct EpochJson {
    epoch: usize,
    loss: f64,
    accuracy: f64,
    seconds: f64,
    wait_seconds: f64,
    learning_rate: f64,
    steps: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval: Option<ScoreJson>,
}

#[derive(Serialize)]
struct RunJson {
    file: String,
    model: String,
    /// "accuracy", or "r2" when `accuracy` holds R^2 (linreg).
    metric: &'static str,
    strategy: &'static str,
    mode: &'static str,
    batch_size: u64,
    buffer: f64,
    learning_rate: f64,
    decay: f64,
    l2: f64,
    seed: u64,
    epochs: Vec<EpochJson>,
    #[serde(rename = "final")]
    final_: ScoreJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    final_eval: Option<ScoreJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    saved: Option<String>,
}

#[derive(Serialize)]
struct RunsJson {
    runs: Vec<RunJson>,
}

fn run_json(args: &TrainArgs, kind: &ModelKind, run: &Run) -> RunJson {
    let last = run.reports.last();
    RunJson {
        file: args.file.display().to_string(),
        model: kind.to_string(),
        metric: if kind.is_regression() {
            "r2"
        } else {
            "accuracy"
        },
        strategy: run.strategy.name(),
        mode: run.mode,
        batch_size: args.batch_size,
        buffer: args.buffer,
        learning_rate: args.lr,
        decay: args.decay,
        l2: args.l2,
        seed: args.seed,
        epochs: run
            .reports
            .iter()
            .map(|r| EpochJson {
                epoch: r.epoch,
                loss: r.train.loss,
                accuracy: r.train.accuracy,
                seconds: r.seconds,
                wait_seconds: r.wait_seconds,
                learning_rate: r.learning_rate,
                steps: r.steps,
                eval: r.eval.map(ScoreJson::from),
            })
            .collect(),
        final_: last.map_or(
            ScoreJson {
                loss: f64::NAN,
                accuracy: f64::NAN,
            },
            |r| r.train.into(),
        ),
        final_eval: last.and_then(|r| r.eval).map(ScoreJson::from),
        eval_file: args.eval.as_ref().map(|p| p.display().to_string()),
        saved: args.save.as_ref().map(|p| p.display().to_string()),
    }
}

//! `tocpile train`: mini-batch SGD over a dataset file with a shuffling
//! strategy, the gradient computed on the encoded mini-batches.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tocpile::dataset::Dataset;
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::model::ModelKind;
use tocpile::train::{infer_kind, train, EpochReport};

use crate::output::emit;
use crate::{Failure, Outcome};

mod args;
mod checks;
mod distributed;
mod json;
mod plot;
pub(crate) mod prepare;
mod table;

pub use args::{memory_budget, ModeArg, TrainArgs};
pub use table::Table;

/// One strategy's training run.
pub struct Run {
    pub strategy: Strategy,
    /// The mode the loader used (`auto` resolved).
    pub mode: &'static str,
    pub reports: Vec<EpochReport>,
    /// The input scaling's name, or "none".
    pub scaling: &'static str,
}

/// The model kind for `name` on `dataset`, inferring the number of classes
/// from the labels for softmax and mlp unless `classes` is given (the
/// library's [`tocpile::train::infer_kind`], its error said in the
/// command line's words).
pub fn model_kind(
    name: &str,
    classes: Option<u64>,
    dataset: &Dataset,
    path: &Path,
) -> Result<ModelKind, Failure> {
    let classes = classes.map(|c| usize::try_from(c).unwrap_or(usize::MAX));
    match infer_kind(name, classes, dataset) {
        Err(tocpile::Error::BadValue { row, found, .. }) => {
            // A label of 1e300 said as such, not as 301 digits.
            let found = found.parse::<f64>().map_or(found, crate::output::number);
            Err(Failure::about(
                path,
                format!(
                    "row {row}: label {found} is not a class index (an integer in 0..{}): \
                 {name} needs labels 0, 1, 2, ...; give --classes N if some classes are absent, \
                 or --model linreg for a regression target",
                    tocpile::train::MAX_CLASSES
                ),
            ))
        }
        other => Ok(other?),
    }
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
    checks::outputs(args)?;
    if let Some(outcome) = distributed::train(args) {
        return outcome;
    }
    if args.save.is_some() && args.shuffle.len() > 1 {
        return Err(Failure(format!(
            "--save takes a single --shuffle strategy ({} given)",
            args.shuffle.len()
        )));
    }
    let mut dataset = Arc::new(crate::input::open_dataset(&args.file)?);
    if dataset.info().n_rows == 0 {
        return Err(Failure::about(&args.file, "no rows to train on"));
    }
    let mut eval = match &args.eval {
        Some(path) => Some(Arc::new(crate::input::open_dataset(path)?)),
        None => None,
    };
    if let (Some(path), Some(eval)) = (&args.eval, &eval) {
        checks::eval_columns(&args.file, &dataset, path, eval)?;
    }
    checks::warn_multiclass(&args.model, &dataset, &args.file)?;
    // Classes from every row, held-out ones included.
    let kind = model_kind(&args.model, args.classes, &dataset, &args.file)?;
    // --holdout: train on one part of a split, evaluate on the other.
    let split = match args.holdout {
        Some(fraction) => {
            let split = prepare::holdout(&args.file, &dataset, fraction, args.seed, args.scale)?;
            dataset = Arc::clone(split.train());
            eval = Some(Arc::clone(split.test()));
            Some(split)
        }
        None => None,
    };
    let n_cols = dataset.info().n_cols;
    let (initial, options, scaling_name) = prepare::start(args, &kind, &dataset)?;
    let table = Table {
        metric: if kind.is_regression() {
            "R^2"
        } else {
            "accuracy"
        },
        eval: eval.is_some(),
        strategy: args.shuffle.len() > 1,
    };
    // Every loader first, so that their warnings come before the table.
    let mut loaders = Vec::new();
    // The header's budget: the smallest of the loaders' (one per strategy).
    let mut shown: Option<(usize, Option<String>)> = None;
    for &strategy in &args.shuffle {
        let mut options = LoaderOptions::default()
            .with_strategy(strategy)
            .with_mode(args.mode.mode())
            .with_batch_rows(usize::try_from(args.batch_size).unwrap_or(usize::MAX))
            .with_buffer(Buffer::Fraction(args.buffer))
            .with_seed(args.seed)
            .with_scratch_dir(args.scratch_dir.clone());
        let budget = args.memory_budget(&dataset, &options);
        options.memory = Some(budget.0);
        if !matches!(&shown, Some(s) if s.0 <= budget.0) {
            shown = Some(budget);
        }
        let loader = Loader::new(Arc::clone(&dataset), options)
            .map_err(|e| Failure::of_run(&args.file, e))?;
        warn(&loader);
        loaders.push((strategy, loader));
    }
    let (memory, memory_why) = shown.unwrap_or((0, None));
    if !args.json {
        let info = dataset.info();
        // The library decides what auto means; the header only reports it.
        let choice = loaders[0].1.mode_choice();
        let mode = match args.mode.mode() {
            Mode::Auto => format!("{} (auto: {})", choice.mode.name(), choice.reason),
            _ => choice.mode.name().to_string(),
        };
        let held = match &split {
            Some(s) => format!(
                " ({} rows held out by --holdout {}, seed {})",
                s.test().info().n_rows,
                args.holdout.unwrap_or(0.0),
                args.seed
            ),
            None => String::new(),
        };
        emit(&format!(
            "training {kind} on {}: {} rows x {n_cols} columns in {} blocks{held}; {} mode, \
             {}-row mini-batches, buffer {}, {} lr {} (decay {}), l2 {}, scaling {scaling_name}, \
             seed {}, memory {} MiB{}\n\n{}",
            args.file.display(),
            info.n_rows,
            info.n_blocks,
            mode,
            args.batch_size,
            args.buffer,
            args.optimizer.rule(),
            args.learning_rate(),
            args.decay,
            args.l2,
            args.seed,
            memory >> 20,
            memory_why
                .map(|why| format!(" ({why})"))
                .unwrap_or_default(),
            table.header(),
        ))?;
    }
    let bar = spinner();
    let mut runs = Vec::new();
    let mut models = Vec::new();
    let strategies = loaders.len();
    // One copy of the model per strategy, the last one the initial model
    // itself: a single strategy trains with no copy at all.
    let mut initial = Some(initial);
    for (i, (strategy, loader)) in loaders.into_iter().enumerate() {
        let mut model = match initial.take() {
            Some(last) if i + 1 == strategies => last,
            Some(first) => {
                let copy = first.try_clone()?;
                initial = Some(first);
                copy
            }
            None => unreachable!("the initial model is kept until the last strategy"),
        };
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
                return Err(Failure::of_run(&args.file, e));
            }
        };
        printed?;
        runs.push(Run {
            strategy,
            mode: loader.mode().name(),
            reports,
            scaling: scaling_name,
        });
        models.push(model);
    }
    bar.finish_and_clear();
    if let (Some(path), Some(model)) = (&args.save, models.first()) {
        crate::output::save_model(model, path)?;
    }
    if let Some(svg) = &args.plot {
        plot::draw(svg, &runs, table.metric).map_err(|e| Failure::about(svg, e))?;
    }
    checks::warn_negative_r2(&kind, &runs, split.is_some());
    if args.json {
        return json::emit_runs(args, &kind, &runs);
    }
    let mut text = String::from("\n");
    for r in &runs {
        if let Some(last) = r.reports.last() {
            // The honest figure first: held-out or --eval, then the
            // running training figure, labelled as such.
            text.push_str(&format!("final ({}): ", r.strategy));
            if let Some(e) = last.eval {
                let what = if split.is_some() { "held-out" } else { "eval" };
                text.push_str(&format!(
                    "{what} {} {:.4}, {what} loss {:.4}; ",
                    table.metric, e.accuracy, e.loss
                ));
            }
            text.push_str(&format!(
                "running training {} {:.4}, running training loss {:.4}\n",
                table.metric, last.train.accuracy, last.train.loss
            ));
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

//! `tocpile train`: mini-batch SGD over a dataset file with a shuffling
//! strategy (or several, compared from one start model), the gradient
//! computed on the encoded mini-batches.
//!
//! A thin caller of the library's `Trainer`, read top to bottom in
//! [`run`]: the arguments become a trainer ([`TrainArgs::trainer`]), the
//! trainer sets the run up on the file (`Trainer::prepare`: the held-out
//! split, the start model and its scaling, a loader per strategy), the
//! command says what will happen (warnings, the header), trains with a
//! row of the table per epoch (`Prepared::fit`), and writes what was
//! asked for (the model, the chart, the JSON or the summary). Several
//! ranks take the same steps in `distributed.rs`.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tocpile::loader::{Mode, Strategy};
use tocpile::model::Model;
use tocpile::train::{EpochReport, Fitted, Prepared, TrainWarning};

use crate::output::{emit, number};
use crate::{Failure, Outcome};

mod args;
mod checks;
mod distributed;
mod json;
mod plot;
mod table;

pub use args::{memory_budget, model_kind, ModeArg, OptimizerArg, TrainArgs};
pub use table::Table;

/// One strategy's training run, as the outputs show it.
pub struct Run {
    pub strategy: Strategy,
    /// The mode the loader used (`auto` resolved).
    pub mode: &'static str,
    pub reports: Vec<EpochReport>,
    /// The input scaling's name, or "none".
    pub scaling: &'static str,
    /// Whether the loader's buffer was the whole file.
    pub whole_file: bool,
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
    // The data, checked before anything is trained.
    let dataset = Arc::new(crate::input::open_dataset(&args.file)?);
    if dataset.info().n_rows == 0 {
        return Err(Failure::about(&args.file, "no rows to train on"));
    }
    let mut trainer = args.trainer(&dataset)?;
    if let Some(path) = &args.eval {
        let eval = crate::input::open_dataset(path)?;
        checks::eval_columns(&args.file, &dataset, path, &eval)?;
        trainer = trainer.eval(Arc::new(eval));
    }
    if let Some(fraction) = args.holdout {
        trainer = trainer.holdout(fraction);
    }
    // The run set up: the held-out split, the start model, a loader per
    // strategy (Shuffle Once writes its copy here).
    let prepared = trainer
        .prepare(&dataset)
        .map_err(|e| prepare_failure(args, e))?;
    print_warnings(&prepared)?;
    let kind = prepared.model().kind().clone();
    let table = Table {
        metric: if kind.is_regression() {
            "R^2"
        } else {
            "accuracy"
        },
        eval: prepared.eval().is_some(),
        strategy: args.shuffle.len() > 1,
    };
    if !args.json {
        emit(&header(args, &prepared, &table))?;
    }
    let scaling = scaling_name(prepared.model());
    let modes: Vec<(&'static str, bool)> = prepared
        .loaders()
        .iter()
        .map(|l| (l.mode().name(), l.buffer_choice().whole_file))
        .collect();
    let held_out = prepared.holdout().is_some();
    let fitted = fit(args, prepared, &table)?;
    if let (Some(path), Some(first)) = (&args.save, fitted.first()) {
        crate::output::save_model(&first.model, path)?;
    }
    let runs: Vec<Run> = fitted
        .into_iter()
        .zip(modes)
        .map(|(f, (mode, whole_file))| Run {
            strategy: f.strategy,
            mode,
            reports: f.reports,
            scaling,
            whole_file,
        })
        .collect();
    if let Some(svg) = &args.plot {
        plot::draw(svg, &runs, table.metric).map_err(|e| Failure::about(svg, e))?;
    }
    checks::warn_negative_r2(&kind, &runs, held_out);
    if args.json {
        return json::emit_runs(args, &kind, &runs);
    }
    emit(&summary(args, &runs, &table, held_out))
}

/// An error of setting the run up, naming the training file (and, for a
/// held-out split that leaves a side empty, the option).
fn prepare_failure(args: &TrainArgs, error: tocpile::Error) -> Failure {
    match error {
        tocpile::Error::EmptySplit {
            fraction,
            train_rows,
            test_rows,
        } => Failure::about(
            &args.file,
            format!(
                "--holdout {fraction} leaves {train_rows} training and {test_rows} held-out \
                 rows: both need rows"
            ),
        ),
        other => Failure::about(&args.file, other),
    }
}

/// Prints the run's warnings to stderr, the advice in the command line's
/// options: labels a classifier cannot use as they are, then loader
/// settings likely to shuffle poorly.
pub(crate) fn print_warnings<S: tocpile::dataset::Source>(prepared: &Prepared<S>) -> Outcome {
    for warning in prepared.warnings()? {
        eprintln!("tocpile: warning: {}", warning_text(&warning));
    }
    Ok(())
}

fn warning_text(warning: &TrainWarning) -> String {
    let shown = |first: &[f64; 3]| {
        let shown: Vec<String> = first.iter().map(|&y| number(y)).collect();
        shown.join(", ")
    };
    match warning {
        TrainWarning::RegressionLabels {
            path,
            model,
            first,
            distinct,
            more,
        } => format!(
            "{}: {}{distinct} distinct labels ({}, ...) look like a regression target: for a \
             linear regression, train with --model linreg ({model} is a classifier, its accuracy \
             would mean nothing here)",
            path.display(),
            if *more { "more than " } else { "" },
            shown(first)
        ),
        TrainWarning::MoreThanTwoLabels { path, model, first } => format!(
            "{}: more than two distinct labels ({}, ...): {model} is a binary model and takes \
             label > 0 as the positive class; for classes, train with --model softmax or mlp",
            path.display(),
            shown(first)
        ),
        other => other.to_string(),
    }
}

/// The input scaling's name, or "none".
fn scaling_name(model: &Model) -> &'static str {
    model.scaling().map_or("none", |s| s.kind().name())
}

/// What the run will do, and the table's header.
fn header(args: &TrainArgs, prepared: &Prepared, table: &Table) -> String {
    let info = prepared.dataset().info();
    let loaders = prepared.loaders();
    // The library decides what auto means; the header only reports it.
    let choice = loaders[0].mode_choice();
    let mode = match args.mode.mode() {
        Mode::Auto => format!("{} (auto: {})", choice.mode.name(), choice.reason),
        _ => choice.mode.name().to_string(),
    };
    let held = match prepared.holdout() {
        Some(split) => format!(
            " ({} rows held out by --holdout {}, seed {})",
            split.test().info().n_rows,
            args.holdout.unwrap_or(0.0),
            args.seed
        ),
        None => String::new(),
    };
    // The smallest of the loaders' budgets (one per strategy), and why
    // the default was lowered.
    let (memory, why) = loaders
        .iter()
        .zip(prepared.memory_budgets())
        .map(|(l, budget)| {
            let why = budget.as_ref().and_then(|b| b.reason());
            (l.options().memory.unwrap_or(0), why)
        })
        .min_by_key(|(bytes, _)| *bytes)
        .unwrap_or((0, None));
    format!(
        "training {} on {}: {} rows x {} columns in {} blocks{held}; {mode} mode, \
         {}-row mini-batches, buffer {}, {} lr {} (decay {}), l2 {}, scaling {}, seed {}, \
         memory {} MiB{}\n\n{}",
        prepared.model().kind(),
        args.file.display(),
        info.n_rows,
        info.n_cols,
        info.n_blocks,
        args.batch_size,
        buffer_phrase(args, &loaders[0]),
        args.optimizer.rule(),
        args.learning_rate(),
        args.decay,
        args.l2,
        scaling_name(prepared.model()),
        args.seed,
        (memory + (1 << 19)) >> 20,
        why.map(|why| format!(" ({why})")).unwrap_or_default(),
        table.header(),
    )
}

/// Trains a model per strategy, a row of the table per epoch as it ends
/// (not with --json), a spinner on a terminal.
fn fit(args: &TrainArgs, prepared: Prepared, table: &Table) -> Result<Vec<Fitted>, Failure> {
    let epochs = prepared.options().epochs;
    let strategies: Vec<Strategy> = prepared
        .loaders()
        .iter()
        .map(|l| l.options().strategy)
        .collect();
    let bar = spinner();
    bar.set_message(format!("{}: epoch 0 of {epochs}", strategies[0]));
    let mut printed = Ok(());
    let mut done = 0;
    let fitted = prepared.fit(|strategy, report| {
        if !args.json && printed.is_ok() {
            printed = bar.suspend(|| emit(&table.row(strategy, report)));
        }
        // The epoch under way: this strategy's next, or the next
        // strategy's first.
        let (mut strategy, mut epoch) = (strategy, report.epoch + 1);
        if epoch == epochs {
            done += 1;
            if let Some(&next) = strategies.get(done) {
                (strategy, epoch) = (next, 0);
            }
        }
        bar.set_message(format!("{strategy}: epoch {epoch} of {epochs}"));
    });
    bar.finish_and_clear();
    let fitted = fitted.map_err(|e| Failure::of_run(&args.file, e))?;
    printed?;
    Ok(fitted)
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

/// The final figures of each strategy, the honest one first: held-out or
/// --eval, then the running training figure, labelled as such; then the
/// files written.
fn summary(args: &TrainArgs, runs: &[Run], table: &Table, held_out: bool) -> String {
    let mut text = String::from("\n");
    for r in runs {
        if let Some(last) = r.reports.last() {
            text.push_str(&format!("final ({}): ", r.strategy));
            if let Some(e) = last.eval {
                let what = if held_out { "held-out" } else { "eval" };
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
    text
}

/// The header's account of the buffer: the whole file or a share of it,
/// what each row is kept as, and (for the default) why.
pub(crate) fn buffer_phrase<S: tocpile::dataset::Source>(
    args: &TrainArgs,
    loader: &tocpile::loader::Loader<S>,
) -> String {
    let c = loader.buffer_choice();
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
    match (c.whole_file, args.buffer) {
        (true, _) => format!(
            "the whole file ({} blocks as {}, {}, within the {} budget: a full shuffle \
             each epoch, each row decoded once)",
            c.blocks,
            c.rows,
            mib(c.whole_bytes),
            mib(c.memory as u64)
        ),
        (false, Some(f)) => format!("{f} ({} blocks as {})", c.blocks, c.rows),
        // Within the memory budget, the decoded rows are past the decode
        // budget's (the library buffers a fraction then).
        (false, None) if c.whole_bytes <= c.memory as u64 => format!(
            "0.1 ({} blocks as {}; the whole file's non-zeros exceed --max-decode-nnz {})",
            c.blocks,
            c.rows,
            tocpile::limits::limits().max_decode_nnz
        ),
        (false, None) => format!(
            "0.1 ({} blocks as {}; the whole file's {} exceed the {} budget)",
            c.blocks,
            c.rows,
            mib(c.whole_bytes),
            mib(c.memory as u64)
        ),
    }
}

//! `tocpile train --json`: the documented fields of a run (README,
//! "Command line").

use serde::Serialize;
use tocpile::model::ModelKind;
use tocpile::train::Score;

use super::{Run, TrainArgs};
use crate::output::emit_json;
use crate::Outcome;

/// Prints the runs as JSON: one run's document, or `{"runs": [...]}`.
pub(super) fn emit_runs(args: &TrainArgs, kind: &ModelKind, runs: &[Run]) -> Outcome {
    let docs: Vec<RunJson> = runs.iter().map(|r| run_json(args, kind, r)).collect();
    if docs.len() == 1 {
        emit_json(&docs[0])
    } else {
        emit_json(&RunsJson { runs: docs })
    }
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
    /// Mini-batches computed on in their TOC form (a decode tree).
    tree_batches: usize,
    /// Mini-batches computed on as rows (CSR, pair codes, flat TOC).
    row_batches: usize,
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
    /// `--buffer`, or "auto" (see `buffer_whole_file`).
    buffer: serde_json::Value,
    /// Whether the buffer was the whole file (each row decoded once).
    buffer_whole_file: bool,
    learning_rate: f64,
    optimizer: &'static str,
    /// "maxabs", "standard" or "none".
    scaling: &'static str,
    /// The held-out share; `final_eval` then holds the held-out figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    holdout: Option<f64>,
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
        buffer: match args.buffer {
            Some(f) => serde_json::json!(f),
            None => serde_json::json!("auto"),
        },
        buffer_whole_file: run.whole_file,
        learning_rate: args.learning_rate(),
        optimizer: args.optimizer.rule().name(),
        scaling: run.scaling,
        holdout: args.holdout,
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
                tree_batches: r.tree_batches,
                row_batches: r.row_batches,
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

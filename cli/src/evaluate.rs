//! `tocpile evaluate MODEL FILE`: a saved model's figures on a labelled
//! dataset file (the computing is the library's `train::evaluate_all`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde::Serialize;
use tocpile::model::Model;
use tocpile::train::evaluate_all;

use crate::output::{emit, emit_json};
use crate::{Failure, Outcome};

/// Evaluate a saved model on a dataset file.
///
/// Reports the mean loss (the model's training loss), and for a
/// classifier the accuracy and the confusion matrix (rows: label,
/// columns: predicted class), for a binary classifier the area under the
/// ROC curve, for linear regression R^2. The file must have the columns
/// the model was trained on (encode it with --schema TRAIN.toc).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile train train.toc --save lr.model\n  \
    tocpile evaluate lr.model test.toc\n  \
    tocpile evaluate lr.model test.toc --json")]
pub struct EvaluateArgs {
    /// The model file (`train --save`).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The dataset file with labels (see `tocpile encode`).
    #[arg(value_name = "FILE.toc")]
    pub file: PathBuf,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct EvaluateJson {
    model: String,
    file: String,
    kind: String,
    rows: u64,
    loss: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    accuracy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auc: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confusion: Option<Vec<Vec<u64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    r2: Option<f64>,
}

pub fn run(args: &EvaluateArgs) -> Outcome {
    let model = Model::load(&args.model)?;
    let dataset = Arc::new(crate::input::open_dataset(&args.file)?);
    let report = evaluate_all(&model, &dataset).map_err(|e| {
        Failure::about(
            &args.file,
            format!("evaluating {}: {e}", args.model.display()),
        )
    })?;
    if args.json {
        return emit_json(&EvaluateJson {
            model: args.model.display().to_string(),
            file: args.file.display().to_string(),
            kind: model.kind().to_string(),
            rows: report.rows,
            loss: report.loss,
            accuracy: report.accuracy,
            auc: report.auc,
            confusion: report.confusion,
            r2: report.r2,
        });
    }
    let mut text = format!(
        "{} on {}: {} rows\nloss {:.4}\n",
        model.kind(),
        args.file.display(),
        report.rows,
        report.loss
    );
    if let Some(a) = report.accuracy {
        text.push_str(&format!("accuracy {a:.4}\n"));
    }
    if let Some(a) = report.auc {
        text.push_str(&format!("AUC {a:.4}\n"));
    }
    if let Some(r2) = report.r2 {
        text.push_str(&format!("R^2 {r2:.4}\n"));
    }
    if let Some(m) = &report.confusion {
        text.push_str("\nconfusion matrix (rows: label, columns: predicted)\n\n| label |");
        for c in 0..m.len() {
            text.push_str(&format!(" {c} |"));
        }
        text.push_str(&format!("\n|---:|{}\n", "---:|".repeat(m.len())));
        for (label, row) in m.iter().enumerate() {
            text.push_str(&format!("| {label} |"));
            for n in row {
                text.push_str(&format!(" {n} |"));
            }
            text.push('\n');
        }
    }
    emit(&text)
}

//! Checks made before the first epoch, so that a mistake costs no
//! training time (the outputs written at the end, the --eval file's
//! columns), and the advice after the last (a regression's R^2 below 0).

use std::path::Path;

use tocpile::dataset::Dataset;
use tocpile::model::ModelKind;

use crate::Failure;

/// The files written after the last epoch (--save, --plot) follow the
/// command line's rule for outputs (`crate::output::check`: writable, not
/// an input, not read-only without --force, human text to stderr when
/// one is standard output): checked before the first, so that a typo
/// costs a second, not the training.
pub fn outputs(args: &super::TrainArgs) -> Result<(), Failure> {
    let inputs: Vec<&Path> = std::iter::once(args.file.as_path())
        .chain(args.eval.as_deref())
        .collect();
    let outputs: Vec<(&str, &Path)> = [("--save", &args.save), ("--plot", &args.plot)]
        .into_iter()
        .filter_map(|(option, path)| path.as_deref().map(|p| (option, p)))
        .collect();
    crate::output::check(&inputs, &outputs)
}

/// The --eval file must have the training file's columns; said before the
/// first epoch, naming both files.
pub fn eval_columns(
    train_path: &Path,
    train: &Dataset,
    eval_path: &Path,
    eval: &Dataset,
) -> Result<(), Failure> {
    let (want, got) = (train.info().n_cols, eval.info().n_cols);
    if want == got {
        return Ok(());
    }
    Err(Failure::about(
        eval_path,
        format!(
            "--eval file has {got} columns, the training file {} has {want}: encode it with \
             the training file's columns (LIBSVM: --cols {want}; CSV or Parquet: --schema {})",
            train_path.display(),
            train_path.display()
        ),
    ))
}

/// A warning (stderr) when a linear regression ends with R^2 below 0 on
/// the held-out or --eval rows (else the running training figure): the
/// model predicts worse than the labels' mean, and the figures alone do
/// not say what to try.
pub fn warn_negative_r2(kind: &ModelKind, runs: &[super::Run], held_out: bool) {
    if !matches!(kind, ModelKind::LinearRegression) {
        return;
    }
    for run in runs {
        let Some(last) = run.reports.last() else {
            continue;
        };
        let (what, r2) = match last.eval {
            Some(e) if held_out => ("held-out", e.accuracy),
            Some(e) => ("eval", e.accuracy),
            None => ("running training", last.train.accuracy),
        };
        if r2 < 0.0 {
            eprintln!(
                "tocpile: warning: {}: final {what} R^2 {r2:.4} is below 0 (worse than \
                 predicting the labels' mean): try more --epochs, another --lr (such as 0.1) \
                 or --optimizer sgd",
                run.strategy
            );
        }
    }
}

//! Checks made before the first epoch, so that a mistake costs no
//! training time: the outputs written at the end, the --eval file's
//! columns, and labels a binary model cannot take as they are.

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

/// A warning (stderr) when a binary model (lr, svm) sees more than two
/// distinct labels: it takes label > 0 as the positive class, which turns
/// class indices 1, 2, ... into one class without a word otherwise. When
/// the labels look like a regression target (more distinct values than
/// classes, or values that are not integers:
/// [`tocpile::train::looks_like_regression`]) the warning suggests
/// linreg, and says so for softmax and mlp too when the values are
/// integers (they would train one class per value; they refuse a value
/// that is not an integer with an error that says so).
pub fn warn_multiclass(model: &str, dataset: &Dataset, path: &Path) -> Result<(), Failure> {
    let model = model.to_ascii_lowercase();
    let binary = matches!(model.as_str(), "lr" | "svm");
    if !binary && !matches!(model.as_str(), "softmax" | "mlp") {
        return Ok(());
    }
    // Distinct labels from a sample of the blocks, enough to tell classes
    // from a regression target.
    let seen = tocpile::train::label_sample(dataset, tocpile::train::REGRESSION_SAMPLE)?;
    let Some(regression) = tocpile::train::label_warning(&seen, binary) else {
        return Ok(());
    };
    let shown: Vec<String> = seen[..3]
        .iter()
        .map(|&y| crate::output::number(y))
        .collect();
    let many = match seen.len() == tocpile::train::REGRESSION_SAMPLE {
        true => format!("more than {} distinct labels", seen.len() - 1),
        false => format!("{} distinct labels", seen.len()),
    };
    let path = path.display();
    let shown = shown.join(", ");
    match (binary, regression) {
        (_, true) => eprintln!(
            "tocpile: warning: {path}: {many} ({shown}, ...) look like a regression target: \
             for a linear regression, train with --model linreg ({model} is a classifier, its accuracy \
             would mean nothing here)"
        ),
        _ => eprintln!(
            "tocpile: warning: {path}: more than two distinct labels ({shown}, ...): {model} is \
             a binary model and takes label > 0 as the positive class; for classes, train with --model \
             softmax or mlp"
        ),
    }
    Ok(())
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

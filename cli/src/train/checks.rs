//! Checks made before the first epoch, so that a mistake costs no
//! training time: the outputs written at the end, the --eval file's
//! columns, and labels a binary model cannot take as they are.

use std::path::Path;

use tocpile::dataset::Dataset;

use crate::Failure;

/// The files written after the last epoch (--save, --plot) must be
/// writable: checked before the first (the directory exists and takes a
/// file, the path is no directory), so that a typo costs a second, not
/// the training.
pub fn outputs(save: Option<&Path>, plot: Option<&Path>) -> Result<(), Failure> {
    for (option, path) in [("--save", save), ("--plot", plot)] {
        if let Some(path) = path {
            // The error starts with the path: "--save PATH: what is wrong".
            tocpile::atomic::check_writable(path).map_err(|e| Failure(format!("{option} {e}")))?;
        }
    }
    Ok(())
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
/// class indices 1, 2, ... into one class without a word otherwise.
pub fn warn_multiclass(model: &str, dataset: &Dataset, path: &Path) -> Result<(), Failure> {
    if !matches!(model, "lr" | "svm") {
        return Ok(());
    }
    // Up to the third distinct label, from a sample of the blocks.
    let seen = tocpile::train::label_sample(dataset, 3)?;
    if seen.len() > 2 {
        let shown: Vec<String> = seen.iter().map(|&y| crate::output::number(y)).collect();
        eprintln!(
            "tocpile: warning: {}: more than two distinct labels ({}, ...): {model} is a binary \
             model and takes label > 0 as the positive class; for classes use --model softmax \
             or mlp",
            path.display(),
            shown.join(", ")
        );
    }
    Ok(())
}

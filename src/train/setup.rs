//! What a training run decides from the data before its first step,
//! defined once for the library's [`Trainer`](super::Trainer), the
//! command line and Python: the model's kind with its classes inferred
//! from the labels ([`infer_kind`]), the held-out split ([`Holdout`]), and
//! the sample of labels behind the warning that a binary model met more
//! than two ([`label_sample`]).

use std::path::Path;
use std::sync::Arc;

use crate::cleanup::{self, ScratchFile};
use crate::dataset::{split_holdout, Dataset, DatasetInfo, Source};
use crate::error::{Error, Result};
use crate::loader::labels_in_file_order;
use crate::model::ModelKind;
use crate::scale::ScaleKind;

/// Most classes [`infer_kind`] takes from the labels.
pub const MAX_CLASSES: usize = 65_536;

/// The model kind named `name` ("lr", "svm", "linreg", "softmax", "mlp":
/// [`ModelKind::from_name`]) for `dataset`. Softmax and mlp take their
/// number of classes from the labels unless `classes` is given: the
/// largest label + 1, the labels being class indices (one pass over the
/// labels); an mlp whose labels are all -1, 0 or 1 is binary (2 classes,
/// label > 0 positive). The other models are binary.
///
/// # Errors
/// [`Error::BadValue`] naming the file and the first row (file order)
/// whose label is not a class index (an integer in `0..MAX_CLASSES`);
/// read errors; as [`ModelKind::from_name`].
pub fn infer_kind<S: Source>(
    name: &str,
    classes: Option<usize>,
    dataset: &Dataset<S>,
) -> Result<ModelKind> {
    let lower = name.to_ascii_lowercase();
    let classes = match (lower.as_str(), classes) {
        (_, Some(c)) => c,
        ("softmax" | "mlp", None) => infer_classes(&lower, dataset)?,
        _ => 2,
    };
    ModelKind::from_name(name, classes)
}

/// Largest label + 1, the labels being class indices.
fn infer_classes<S: Source>(name: &str, dataset: &Dataset<S>) -> Result<usize> {
    let labels = labels_in_file_order(dataset)?;
    if name == "mlp" && labels.iter().all(|&y| y == -1.0 || y == 0.0 || y == 1.0) {
        return Ok(2);
    }
    let mut max = 0.0f64;
    for (row, &y) in labels.iter().enumerate() {
        if !(y >= 0.0 && y.fract() == 0.0 && y < MAX_CLASSES as f64) {
            return Err(Error::BadValue {
                path: dataset.path().display().to_string(),
                row: row as u64,
                column: "label".into(),
                expected: "a class index (an integer in 0..65536; give the number of classes \
                           if some are absent; for a regression target, train linreg)",
                found: crate::error::Number(y).to_string(),
            });
        }
        max = max.max(y);
    }
    Ok(max as usize + 1)
}

/// Blocks whose labels [`label_sample`] looks at: every block of a small
/// file, else this many spread evenly over it (reading every block's
/// labels was a whole pass over the file before the first epoch: 59 s of
/// a dense file's 238 s run under the out-of-memory experiment's
/// throttle). A class holding more than 1/256 of the rows in runs
/// (label-sorted files) or spread out is seen.
pub const LABEL_SAMPLE_BLOCKS: usize = 256;

/// The distinct labels of `dataset` in the order met, up to `up_to` of
/// them, from the labels of at most [`LABEL_SAMPLE_BLOCKS`] blocks spread
/// over the file (every block of a smaller file). A binary model (lr,
/// svm) that finds three should say so: it takes label > 0 as the
/// positive class.
///
/// # Errors
/// Read errors.
pub fn label_sample<S: Source>(dataset: &Dataset<S>, up_to: usize) -> Result<Vec<f64>> {
    let mut seen: Vec<f64> = Vec::with_capacity(up_to.min(16));
    let n = dataset.n_blocks();
    let picks = n.min(LABEL_SAMPLE_BLOCKS);
    for k in 0..picks {
        let b = if picks == n { k } else { k * n / picks };
        for &y in dataset.read_block(b)?.labels() {
            if seen.len() == up_to {
                return Ok(seen);
            }
            if !seen.iter().any(|s| s.to_bits() == y.to_bits()) {
                seen.push(y);
            }
        }
    }
    Ok(seen)
}

/// Distinct labels [`label_sample`] looks for to tell classes from a
/// regression target ([`looks_like_regression`]): one more than
/// [`MAX_CLASSES`](crate::dataset::MAX_CLASSES), the most distinct
/// labels a file's label mix takes as classes.
pub const REGRESSION_SAMPLE: usize = crate::dataset::MAX_CLASSES + 1;

/// Whether labels sampled by [`label_sample`] (up to
/// [`REGRESSION_SAMPLE`] of them) look like a regression target rather
/// than classes: one is not an integer, or there are more distinct
/// values than [`MAX_CLASSES`](crate::dataset::MAX_CLASSES) (ggplot2's
/// diamonds: 11,602 distinct prices). A classifier trained on them
/// reports a meaningless accuracy; the front ends then suggest linreg.
pub fn looks_like_regression(seen: &[f64]) -> bool {
    seen.len() > crate::dataset::MAX_CLASSES || seen.iter().any(|y| y.fract() != 0.0)
}

/// What a classifier's front end should warn about labels sampled by
/// [`label_sample`]: `Some(true)` when they look like a regression target
/// ([`looks_like_regression`]), `Some(false)` when a `binary` model
/// (lr, svm) sees more than two of them, `None` when nothing is wrong. A
/// multi-class model (softmax, mlp) is warned only of integer labels that
/// look like a regression target: it refuses a label that is not an
/// integer with an error that says so. Whenever it warns, `seen` holds at
/// least three labels.
pub fn label_warning(seen: &[f64], binary: bool) -> Option<bool> {
    let regression = looks_like_regression(seen);
    let warn = match binary {
        true => seen.len() > 2,
        false => regression && seen.iter().all(|y| y.fract() == 0.0),
    };
    warn.then_some(regression)
}

/// The mean and standard deviation (population) of the labels of the
/// blocks [`label_sample`] looks at (at most [`LABEL_SAMPLE_BLOCKS`]
/// spread evenly over the file, every block of a smaller one): where a
/// linear regression's target standardisation comes from. `None` for no
/// rows or labels that are not all finite.
///
/// # Errors
/// Read errors.
pub(crate) fn label_moments<S: Source>(dataset: &Dataset<S>) -> Result<Option<(f64, f64)>> {
    let n = dataset.n_blocks();
    let picks = n.min(LABEL_SAMPLE_BLOCKS);
    let mut summary = super::LabelSummary::new();
    for k in 0..picks {
        let b = if picks == n { k } else { k * n / picks };
        summary.add(dataset.read_block(b)?.labels());
    }
    Ok(summary.moments())
}

/// The two parts of a held-out split in scratch files of the temporary
/// directory, removed when dropped (and on SIGINT/SIGTERM, see
/// [`cleanup`]; after a SIGKILL the next split removes them by name).
#[derive(Debug)]
pub struct Holdout {
    train: Arc<Dataset>,
    test: Arc<Dataset>,
    _guards: [ScratchFile; 2],
}

impl Holdout {
    /// Splits `dataset`: a share `fraction` of the rows, picked by a hash
    /// of the row number under `seed`, is held out
    /// ([`split_holdout`]); each part gets a scaling of kind `scale`
    /// fitted on its own rows.
    ///
    /// # Errors
    /// As [`split_holdout`] (a share outside (0, 1), read and write
    /// errors); errors of creating the scratch files.
    pub fn split<S: Source + 'static>(
        dataset: &Arc<Dataset<S>>,
        fraction: f64,
        seed: u64,
        scale: Option<ScaleKind>,
    ) -> Result<Holdout> {
        let dir = std::env::temp_dir();
        cleanup::remove_stale(&dir, ".tocpile-holdout-");
        let pid = std::process::id();
        let train = ScratchFile::claim(&dir, |n| {
            format!(".tocpile-holdout-{pid}-{seed}-{n}-train.toc")
        })?;
        let test = train
            .path()
            .to_string_lossy()
            .replace("-train.toc", "-test.toc");
        let guards = [train, ScratchFile::new(test)?];
        let (train, test): (&Path, &Path) = (guards[0].path(), guards[1].path());
        split_holdout(dataset, fraction, seed, scale, train, test)?;
        Ok(Holdout {
            train: Arc::new(Dataset::open(train)?),
            test: Arc::new(Dataset::open(test)?),
            _guards: guards,
        })
    }

    /// The rows trained on.
    pub fn train(&self) -> &Arc<Dataset> {
        &self.train
    }

    /// The rows held out.
    pub fn test(&self) -> &Arc<Dataset> {
        &self.test
    }

    /// Whether both parts have rows.
    pub fn both_have_rows(&self) -> bool {
        let rows = |d: &Dataset| d.info().n_rows;
        rows(&self.train) > 0 && rows(&self.test) > 0
    }

    /// The parts' infos (training, held out).
    pub fn infos(&self) -> (&DatasetInfo, &DatasetInfo) {
        (self.train.info(), self.test.info())
    }
}

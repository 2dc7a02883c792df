//! Predictions: each row's scores under a model, the forward pass of the
//! gradient code without the loss (the same kernels on the encoded
//! pages: `A.v` for the linear models, `A.M` for the first layer of the
//! networks).
//!
//! Scores are the model's raw outputs: the margin `x.w + b` of a linear
//! model (log-odds for logistic regression, the regression's prediction
//! for linear regression), the logits of a softmax or network. Their
//! meaning as classes and probabilities is in [`Predictions`].

use ndarray::{Array2, ArrayViewMut1};
use rayon::prelude::*;

use super::{sigmoid, Model, ModelKind};
use std::sync::Arc;

use crate::dataset::{Dataset, Source};
use crate::error::{Error, Result};
use crate::kernels::Workspace;
use crate::page::Page;

/// Rows below which pages are validated and scored on the calling
/// thread: handing them to the pool costs two thread wake-ups, more than
/// scoring a default block's 50 to 150 rows.
const PARALLEL_MIN_ROWS: usize = 4096;

/// Rows of consecutive blocks [`Model::predict_dataset`] scores in one
/// parallel step. `tocpile predict` on 400,000 rows in 8,000 one-page
/// blocks took 0.50 s when each block was read ahead on another thread
/// and handed to the pool twice (validation, scoring), 0.14 to 0.28 s
/// in groups (2 cores, load 7).
const GROUP_ROWS: usize = 32_768;

/// The scores of some rows, `outputs` per row (row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Predictions {
    kind: ModelKind,
    /// The binary model's labels of classes 0 and 1, if not 0 and 1.
    labels: Option<[f64; 2]>,
    outputs: usize,
    scores: Vec<f64>,
}

impl Predictions {
    /// Rows predicted.
    pub fn n_rows(&self) -> usize {
        self.scores.len() / self.outputs
    }

    /// Scores per row: 1 for the linear models and binary networks, the
    /// class count for softmax and multi-class networks.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Row `i`'s scores (margin or logits).
    pub fn scores(&self, i: usize) -> &[f64] {
        &self.scores[i * self.outputs..(i + 1) * self.outputs]
    }

    /// Row `i`'s predicted class (binary models: 1 when the margin or
    /// logit is positive, else 0; multi-class: the largest logit, the
    /// first on a tie), or `None` for linear regression.
    pub fn class(&self, i: usize) -> Option<usize> {
        self.kind.class_of(self.scores(i))
    }

    /// Row `i`'s prediction in the labels of the training data: the
    /// predicted class's label (a binary model's
    /// [`binary_labels`](Model::binary_labels), else the class index),
    /// or the regression's value.
    pub fn label(&self, i: usize) -> f64 {
        match self.class(i) {
            None => self.scores(i)[0],
            Some(c) => match self.labels {
                Some(labels) if c < 2 => labels[c],
                _ => c as f64,
            },
        }
    }

    /// Every row's [`label`](Self::label).
    pub fn labels(&self) -> Vec<f64> {
        (0..self.n_rows()).map(|i| self.label(i)).collect()
    }

    /// Row `i`'s probabilities: of the positive class for logistic
    /// regression and binary networks (one value), of each class for
    /// softmax and multi-class networks; `None` for SVM and linear
    /// regression, which give no probabilities.
    pub fn probabilities(&self, i: usize) -> Option<Vec<f64>> {
        let mut out = Vec::new();
        self.kind
            .probabilities_of(self.scores(i), &mut out)
            .then_some(out)
    }
}

impl ModelKind {
    /// The class of one row's `scores` under a model of this kind, as
    /// [`Predictions::class`] gives it (for scores computed elsewhere, of
    /// the same model).
    pub fn class_of(&self, scores: &[f64]) -> Option<usize> {
        match (self, scores.len()) {
            (ModelKind::LinearRegression, _) => None,
            (_, 1) => Some(usize::from(scores[0] > 0.0)),
            _ => {
                let mut best = 0;
                for (c, &v) in scores.iter().enumerate() {
                    if v > scores[best] {
                        best = c;
                    }
                }
                Some(best)
            }
        }
    }

    /// Appends the probabilities of one row's `scores` to `out`, as
    /// [`Predictions::probabilities`] gives them; false (nothing
    /// appended) for svm and linear regression.
    pub fn probabilities_of(&self, scores: &[f64], out: &mut Vec<f64>) -> bool {
        match (self, scores.len()) {
            (ModelKind::Svm | ModelKind::LinearRegression, _) => false,
            (_, 1) => {
                out.push(sigmoid(scores[0]));
                true
            }
            _ => {
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|&v| (v - max).exp()).sum();
                out.extend(scores.iter().map(|&v| (v - max).exp() / sum));
                true
            }
        }
    }
}

impl Model {
    /// The scores of every row of `pages`, in page order (labels are not
    /// read).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] for a page whose column count is not the
    /// model's; [`Error::InvalidNumber`] for a score that is NaN (finite
    /// parameters and values give one only by overflowing to infinities
    /// of both signs), so that no NaN passes for class 0.
    pub fn predict(&self, pages: &[Page]) -> Result<Predictions> {
        self.check_columns(pages)?;
        let rows: usize = pages.iter().map(Page::n_rows).sum();
        let scores = if pages.len() > 1 && rows >= PARALLEL_MIN_ROWS {
            let per_page: Vec<Vec<f64>> = crate::parallel::install(|| {
                pages
                    .par_iter()
                    .map_init(Workspace::new, |ws, page| self.forward(page, ws))
                    .collect()
            });
            per_page.concat()
        } else {
            self.scores_of(pages, &mut Workspace::new())
        };
        self.predictions(scores)
    }

    /// [`Error::LengthMismatch`] unless every page has the model's columns.
    fn check_columns(&self, pages: &[Page]) -> Result<()> {
        for page in pages {
            if page.n_cols() != self.n_cols {
                return Err(Error::LengthMismatch {
                    what: "columns of a page (the model's n_cols)",
                    expected: self.n_cols as u64,
                    found: page.n_cols() as u64,
                });
            }
        }
        Ok(())
    }

    /// The scores of `pages`, one after another on this thread.
    fn scores_of(&self, pages: &[Page], ws: &mut Workspace) -> Vec<f64> {
        let mut scores = Vec::new();
        for page in pages {
            scores.extend(self.forward(page, ws));
        }
        scores
    }

    /// `scores` as [`Predictions`], or the error for the first NaN.
    fn predictions(&self, scores: Vec<f64>) -> Result<Predictions> {
        let outputs = self.layers.last().map_or(1, |l| l.weights.ncols());
        if let Some(i) = scores.iter().position(|s| s.is_nan()) {
            return Err(Error::InvalidNumber {
                what: format!(
                    "the score of row {} (of the rows given; an overflow of large values)",
                    i / outputs.max(1)
                ),
                value: f64::NAN,
                expected: "a number",
            });
        }
        Ok(Predictions {
            kind: self.kind.clone(),
            labels: self.binary_labels,
            outputs,
            scores,
        })
    }

    /// Predictions for every row of `dataset` in file order: consecutive
    /// blocks taken together until they hold [`GROUP_ROWS`] rows (or the
    /// file ends), each block read, validated and scored at once (its
    /// pages still in cache: validating a group's pages first and scoring
    /// them after took twice as long), the blocks in parallel (no thread
    /// hand-over per block: a default block holds a page or two). A
    /// block's error comes after the predictions of the blocks before it,
    /// and ends the iteration.
    pub(crate) fn predict_file<'a, S: Source + 'static>(
        &'a self,
        dataset: &Arc<Dataset<S>>,
    ) -> impl Iterator<Item = Result<Predictions>> + 'a {
        let dataset = Arc::clone(dataset);
        let mut next_block = 0;
        let mut failed: Option<Error> = None;
        std::iter::from_fn(move || {
            if let Some(e) = failed.take() {
                next_block = dataset.n_blocks();
                return Some(Err(e));
            }
            let first = next_block;
            let mut rows = 0;
            while next_block < dataset.n_blocks() && rows < GROUP_ROWS as u64 {
                rows += dataset.block_rows(next_block);
                next_block += 1;
            }
            if first == next_block {
                return None;
            }
            let score = |ws: &mut Workspace, b: usize| -> Result<Vec<f64>> {
                let pages = dataset.read_block(b)?.pages()?;
                self.check_columns(&pages)?;
                Ok(self.scores_of(&pages, ws))
            };
            let group: Vec<Result<Vec<f64>>> =
                if next_block - first > 1 && rows >= PARALLEL_MIN_ROWS as u64 {
                    crate::parallel::install(|| {
                        (first..next_block)
                            .into_par_iter()
                            .map_init(Workspace::new, score)
                            .collect()
                    })
                } else {
                    let mut ws = Workspace::new();
                    (first..next_block).map(|b| score(&mut ws, b)).collect()
                };
            let mut scores = Vec::new();
            for result in group {
                match result {
                    Ok(block_scores) => scores.extend(block_scores),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if scores.is_empty() && failed.is_some() {
                next_block = dataset.n_blocks();
                return failed.take().map(Err);
            }
            Some(self.predictions(scores))
        })
    }

    /// The output layer's values for one page, row-major.
    fn forward(&self, page: &Page, ws: &mut Workspace) -> Vec<f64> {
        let batch = page.batch();
        let rows = batch.n_rows();
        let first = &self.layers[0];
        if first.weights.ncols() == 1 && self.layers.len() == 1 {
            let mut z = vec![0.0; rows];
            batch.matvec_into(first.weights.column(0), ArrayViewMut1::from(&mut z[..]), ws);
            z.iter_mut().for_each(|v| *v += first.bias[0]);
            return z;
        }
        let mut z = Array2::zeros((rows, first.weights.ncols()));
        batch.matmat_into(first.weights.view(), z.view_mut(), ws);
        z += &first.bias;
        for layer in &self.layers[1..] {
            z.mapv_inplace(sigmoid);
            z = z.dot(&layer.weights) + &layer.bias;
        }
        z.iter().copied().collect()
    }
}

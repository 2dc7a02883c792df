//! Softmax regression and the feed-forward network of TOC section 5.3
//! (sigmoid hidden layers, softmax or sigmoid output, cross-entropy): the
//! `A.M` / `M.A` column of TOC Table 1.
//!
//! Only the first layer touches the data. Its forward pass is
//! `Z1 = A . W1` (Algorithm 7 on TOC pages; `W1` is `n_cols x h1`) and the
//! gradient of `W1` is `(delta1^T . A)^T` (Algorithm 8, `M = delta1^T`,
//! `h1 x n_rows`), written straight into the page's `n_cols x h1` gradient
//! through a transposed view. Every later layer is dense `ndarray` algebra
//! on `n_rows x h` activations. Softmax regression is the same network with
//! no hidden layer.
//!
//! The output is stable for any logits: the softmax subtracts the row
//! maximum (log-sum-exp), the binary output's cross-entropy is
//! `softplus(z) - y z`.
//!
//! Pages run in parallel (rayon), one [`Workspace`] and one gradient buffer
//! per page; the page gradients and figures are then summed in page order,
//! so the result does not depend on scheduling. A page's gradient is as
//! large as the model (its first layer is `n_cols x h1`), so pages run in
//! rounds of as many as there are threads, each round's gradients added
//! before the next starts: at most that many copies exist at once (all the
//! pages' were, five of a 250-row batch of 50-row pages), and each is
//! allocated fallibly.

use ndarray::{Array2, Axis};
use rayon::prelude::*;

use super::{sigmoid, softplus, BatchStats, Gradient, Layer, Model};
use crate::error::Result;
use crate::kernels::Workspace;
use crate::page::Page;

/// Loss figures of `pages` and, with `grad`, the summed (not yet averaged)
/// gradient of the loss, added into `grad`'s zeroed layers.
pub(super) fn run(
    model: &Model,
    pages: &[Page],
    grad: Option<&mut Gradient>,
) -> Result<BatchStats> {
    let mut stats = BatchStats::default();
    match grad {
        Some(grad) => {
            let round = crate::parallel::current_num_threads().max(1);
            let work = &mut grad.work[..pages.len()];
            for (pages, work) in pages.chunks(round).zip(work.chunks_mut(round)) {
                let results: Vec<Result<(Option<Vec<Layer>>, BatchStats)>> =
                    crate::parallel::install(|| {
                        pages
                            .par_iter()
                            .zip(work.par_iter_mut())
                            .map(|(page, ws)| pass(model, page, ws, true))
                            .collect()
                    });
                for result in results {
                    let (page_grad, page_stats) = result?;
                    let page_grad = page_grad.expect("asked for a gradient");
                    for (dst, src) in grad.layers.iter_mut().zip(&page_grad) {
                        dst.add(src);
                    }
                    stats.merge(&page_stats);
                }
            }
        }
        None => {
            let results: Vec<Result<(Option<Vec<Layer>>, BatchStats)>> =
                crate::parallel::install(|| {
                    pages
                        .par_iter()
                        .map(|page| pass(model, page, &mut Workspace::new(), false))
                        .collect()
                });
            for result in results {
                stats.merge(&result?.1);
            }
        }
    }
    Ok(stats)
}

/// Forward (and with `want_grad` backward) pass over one page; labels are
/// already checked. Returns the summed gradient of the page's losses.
///
/// # Errors
/// [`Error::OutOfMemory`](crate::Error::OutOfMemory) if the page's
/// gradient of the first layer cannot be allocated.
fn pass(
    model: &Model,
    page: &Page,
    ws: &mut Workspace,
    want_grad: bool,
) -> Result<(Option<Vec<Layer>>, BatchStats)> {
    let layers = &model.layers;
    let (batch, labels) = (page.batch(), page.labels());
    let rows = batch.n_rows();
    let first = &layers[0];
    // Forward: acts[k] is the sigmoid output of hidden layer k.
    let mut z = Array2::zeros((rows, first.weights.ncols()));
    batch.matmat_into(first.weights.view(), z.view_mut(), ws);
    z += &first.bias;
    let mut acts: Vec<Array2<f64>> = Vec::with_capacity(layers.len() - 1);
    for layer in &layers[1..] {
        z.mapv_inplace(sigmoid);
        let next = z.dot(&layer.weights) + &layer.bias;
        acts.push(std::mem::replace(&mut z, next));
    }
    // Output: z holds the logits; turn them into dloss/dlogits.
    let mut stats = BatchStats::of_labels(labels);
    if z.ncols() == 1 {
        for (mut row, &label) in z.rows_mut().into_iter().zip(labels) {
            let y = if label > model.positive_above() {
                1.0
            } else {
                0.0
            };
            let logit = row[0];
            stats.loss_sum += softplus(logit) - y * logit;
            if (logit > 0.0) == (y > 0.0) {
                stats.correct += 1;
            }
            row[0] = sigmoid(logit) - y;
        }
    } else {
        for (mut row, &label) in z.rows_mut().into_iter().zip(labels) {
            let class = label as usize;
            let (mut best, mut max) = (0, f64::NEG_INFINITY);
            for (c, &v) in row.iter().enumerate() {
                if v > max {
                    (best, max) = (c, v);
                }
            }
            let lse = max + row.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
            stats.loss_sum += lse - row[class];
            if best == class {
                stats.correct += 1;
            }
            row.mapv_inplace(|v| (v - lse).exp());
            row[class] -= 1.0;
        }
    }
    if !want_grad {
        return Ok((None, stats));
    }
    // Backward: `delta` is dloss/dz of the layer being visited.
    let mut delta = z;
    let mut grads: Vec<Layer> = Vec::with_capacity(layers.len());
    for (i, layer) in layers.iter().enumerate().skip(1).rev() {
        let input = &acts[i - 1];
        grads.push(Layer {
            weights: input.t().dot(&delta),
            bias: delta.sum_axis(Axis(0)),
        });
        let mut back = delta.dot(&layer.weights.t());
        back.zip_mut_with(input, |d, &h| *d *= h * (1.0 - h));
        delta = back;
    }
    let mut g0 = Layer::try_zeros(first.weights.nrows(), first.weights.ncols())?;
    batch.left_matmat_into(delta.t(), g0.weights.view_mut().reversed_axes(), ws);
    g0.bias = delta.sum_axis(Axis(0));
    grads.push(g0);
    grads.reverse();
    Ok((Some(grads), stats))
}

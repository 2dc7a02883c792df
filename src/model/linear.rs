//! The linear models of TOC Table 1 (logistic regression, linear SVM,
//! linear regression): per page one `A.v` for the margins `z = A.w + b`
//! (Algorithm 4 on TOC pages) and, for a gradient, one `v.A` (Algorithm 5)
//! with `v` the loss derivative at each margin, exactly equation 3 of the
//! TOC paper generalised to any loss.
//!
//! Losses, for a margin `z` and `y = +1` if the label is `> 0` else `-1`:
//! log-loss `ln(1 + e^(-y z))` computed as a softplus (no overflow for any
//! `z`); hinge `max(0, 1 - y z)` with the subgradient `-y` where
//! `y z < 1`, else 0; squared `(z - label)^2 / 2`. Pages run one after the
//! other with one workspace: the kernels cost about as much as the loss,
//! and the loader already works in parallel. With a gradient, a page is
//! one call of [`Batch::linear_gradient_add`](crate::formats::Batch::linear_gradient_add)
//! (on TOC pages one fused kernel: margins, loss derivative and `v.A` on
//! one tree, see `kernels/fused.rs`).

use ndarray::{ArrayView1, ArrayViewMut1};

use super::logistic::LogSum;
use super::{BatchStats, Gradient, Model, ModelKind};
use crate::kernels::Workspace;
use crate::page::Page;

/// Loss figures of `pages` and, with `grad`, the summed (not yet averaged)
/// gradient of the loss, added into `grad`'s zeroed layer.
pub(super) fn run(
    model: &Model,
    pages: &[Page],
    grad: Option<&mut Gradient>,
) -> crate::Result<BatchStats> {
    let layer = &model.layers[0];
    let w = weights(layer);
    let w = &w[..];
    let b = layer.bias[0];
    if let Some(g) = grad {
        let gl = &mut g.layers[0];
        let gw = gl
            .weights
            .as_slice_mut()
            .expect("a linear gradient is one column");
        let above = model.positive_above();
        let (d_sum, stats) = gradient_add(&model.kind, above, w, b, pages, gw, &mut g.work[0]);
        gl.bias[0] += d_sum;
        return Ok(stats);
    }
    let mut own = Workspace::new();
    let mut z = Vec::new();
    let mut stats = BatchStats::default();
    for page in pages {
        let (batch, labels) = (page.batch(), page.labels());
        let mut page_stats = BatchStats::of_labels(labels);
        z.clear();
        z.resize(batch.n_rows(), 0.0);
        batch.matvec_into(
            ArrayView1::from(w),
            ArrayViewMut1::from(&mut z[..]),
            &mut own,
        );
        let mut logs = LogSum::default();
        for (&zi, &label) in z.iter().zip(labels) {
            let (loss, _) = loss_and_slope(
                &model.kind,
                model.positive_above(),
                zi + b,
                label,
                (&mut page_stats, &mut logs),
            );
            page_stats.loss_sum += loss;
        }
        page_stats.loss_sum += logs.take();
        stats.merge(&page_stats);
    }
    Ok(stats)
}

/// A linear layer's weights as one slice (a copy only if not laid out
/// so).
pub(super) fn weights(layer: &super::Layer) -> std::borrow::Cow<'_, [f64]> {
    let column = layer.weights.column(0);
    match column.to_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(column.to_vec()),
    }
}

/// The summed gradient of the loss of a linear model (weights `w`, bias
/// `b`) on `pages`, its weight part added into `gw`; returns the bias
/// part and the pages' figures. One fused kernel per TOC page: margins,
/// slopes and `v.A` added straight into the gradient (no vector per
/// page). Shared by [`run`] and the trainer's second thread
/// (`model::split`).
pub(super) fn gradient_add(
    kind: &ModelKind,
    above: f64,
    w: &[f64],
    b: f64,
    pages: &[Page],
    gw: &mut [f64],
    ws: &mut Workspace,
) -> (f64, BatchStats) {
    let mut stats = BatchStats::default();
    let mut bias = 0.0;
    for page in pages {
        let (batch, labels) = (page.batch(), page.labels());
        let mut page_stats = BatchStats::of_labels(labels);
        let (mut d_sum, mut logs) = (0.0, LogSum::default());
        let slope = |r: usize, z: f64| {
            let stats = (&mut page_stats, &mut logs);
            let (loss, d) = loss_and_slope(kind, above, z + b, labels[r], stats);
            page_stats.loss_sum += loss;
            d_sum += d;
            d
        };
        batch.linear_gradient_add(w, slope, gw, ws);
        page_stats.loss_sum += logs.take();
        bias += d_sum;
        stats.merge(&page_stats);
    }
    (bias, stats)
}

/// The loss at `margin` and its derivative in the margin; counts a correct
/// prediction or the squared residual into `stats`. The log-loss's
/// logarithm goes into `logs` (one `ln` a page, see [`LogSum`]), the rest
/// of every loss is returned. A classifier's label
/// is positive when above `above` (0, or the midpoint of the model's
/// [binary labels](Model::binary_labels)).
fn loss_and_slope(
    kind: &ModelKind,
    above: f64,
    margin: f64,
    label: f64,
    (stats, logs): (&mut BatchStats, &mut LogSum),
) -> (f64, f64) {
    match kind {
        ModelKind::LinearRegression => {
            let r = margin - label;
            stats.sse += r * r;
            (0.5 * r * r, r)
        }
        // No branch on the label or the margin: in shuffled rows each
        // is a coin toss the branch predictor loses (selects, not jumps).
        _ => {
            let positive = label > above;
            let y = if positive { 1.0 } else { -1.0 };
            stats.correct += usize::from((margin > 0.0) == positive);
            let m = y * margin;
            if matches!(kind, ModelKind::Svm) {
                let inside = m < 1.0;
                (
                    if inside { 1.0 - m } else { 0.0 },
                    if inside { -y } else { 0.0 },
                )
            } else {
                let (rest, slope) = logs.log_loss_and_sigmoid(m);
                (rest, -y * slope)
            }
        }
    }
}

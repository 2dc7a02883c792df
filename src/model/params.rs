//! A model's parameters, layer by layer ([`Layer`]), and a [`Gradient`] of
//! the same shape with the kernels' scratch memory.

use ndarray::{Array1, Array2};

use super::Model;
use crate::kernels::Workspace;
use crate::{Error, Result};

/// One layer's parameters: `weights` (`inputs x outputs`, so a layer maps
/// rows `x` to `x . weights + bias`) and `bias` (`outputs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    pub(super) weights: Array2<f64>,
    pub(super) bias: Array1<f64>,
}

impl Layer {
    pub(super) fn zeros(inputs: usize, outputs: usize) -> Layer {
        Layer {
            weights: Array2::zeros((inputs, outputs)),
            bias: Array1::zeros(outputs),
        }
    }

    /// As [`Layer::zeros`], allocated fallibly: a model sized by its
    /// input must fail with an error, not abort.
    pub(super) fn try_zeros(inputs: usize, outputs: usize) -> crate::Result<Layer> {
        let cells = inputs.saturating_mul(outputs);
        let weights = crate::limits::try_filled(cells, 0.0, "model weights")?;
        let bias = crate::limits::try_filled(outputs, 0.0, "model biases")?;
        Ok(Layer {
            weights: Array2::from_shape_vec((inputs, outputs), weights)
                .expect("inputs x outputs cells"),
            bias: Array1::from_vec(bias),
        })
    }

    /// A copy, allocated fallibly.
    fn try_clone(&self) -> crate::Result<Layer> {
        let mut copy = Layer::try_zeros(self.weights.nrows(), self.weights.ncols())?;
        copy.weights.assign(&self.weights);
        copy.bias.assign(&self.bias);
        Ok(copy)
    }

    /// The weights, `inputs x outputs`.
    pub fn weights(&self) -> &Array2<f64> {
        &self.weights
    }

    /// The bias (intercept), one per output.
    pub fn bias(&self) -> &Array1<f64> {
        &self.bias
    }

    pub(super) fn fill(&mut self, v: f64) {
        self.weights.fill(v);
        self.bias.fill(v);
    }

    /// `self += other`.
    pub(super) fn add(&mut self, other: &Layer) {
        self.weights += &other.weights;
        self.bias += &other.bias;
    }

    /// Parameters in file order: weights row by row, then the bias.
    pub(super) fn values(&self) -> impl Iterator<Item = &f64> {
        self.weights.iter().chain(self.bias.iter())
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut f64> {
        self.weights.iter_mut().chain(self.bias.iter_mut())
    }

    pub(super) fn len(&self) -> usize {
        self.weights.len() + self.bias.len()
    }
}

/// Parameter count of layers of `widths` over `n_cols` inputs, if it can
/// be addressed as `f64`s.
pub(super) fn param_count(n_cols: usize, widths: &[usize]) -> Option<usize> {
    let mut inputs = n_cols;
    let mut total = 0usize;
    for &w in widths {
        total = total.checked_add(inputs.checked_mul(w)?.checked_add(w)?)?;
        inputs = w;
    }
    (total <= isize::MAX as usize / 8).then_some(total)
}

/// A gradient (the shape of a model's parameters), with the kernels'
/// scratch memory, reused from one mini-batch to the next.
#[derive(Debug, Clone)]
pub struct Gradient {
    pub(super) layers: Vec<Layer>,
    pub(super) work: Vec<Workspace>,
}

impl Gradient {
    /// A zero gradient shaped like `model`. It is as large as the model:
    /// [`try_new`](Self::try_new) reports a refused allocation instead of
    /// aborting.
    pub fn new(model: &Model) -> Gradient {
        Gradient {
            layers: model
                .layers
                .iter()
                .map(|l| Layer::zeros(l.weights.nrows(), l.weights.ncols()))
                .collect(),
            work: Vec::new(),
        }
    }

    /// As [`new`](Self::new), allocated fallibly.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if the system refuses the allocation.
    pub fn try_new(model: &Model) -> Result<Gradient> {
        let layers = model
            .layers
            .iter()
            .map(|l| Layer::try_zeros(l.weights.nrows(), l.weights.ncols()))
            .collect::<Result<_>>()?;
        Ok(Gradient {
            layers,
            work: Vec::new(),
        })
    }

    /// The gradient of each layer's weights and bias.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The gradient flattened in [`Model::params`] order.
    pub fn to_vec(&self) -> Vec<f64> {
        self.layers
            .iter()
            .flat_map(Layer::values)
            .copied()
            .collect()
    }

    /// Overwrites the gradient with `values`, flattened in
    /// [`Model::params`] order (e.g. a gradient averaged across ranks).
    pub fn set_values(&mut self, values: &[f64]) -> Result<()> {
        let n: usize = self.layers.iter().map(Layer::len).sum();
        if values.len() != n {
            return Err(Error::LengthMismatch {
                what: "gradient values",
                expected: n as u64,
                found: values.len() as u64,
            });
        }
        let dst = self.layers.iter_mut().flat_map(Layer::values_mut);
        dst.zip(values).for_each(|(d, &s)| *d = s);
        Ok(())
    }

    /// Multiplies every value by `factor`.
    pub(crate) fn scale_by(&mut self, factor: f64) {
        for l in &mut self.layers {
            l.values_mut().for_each(|v| *v *= factor);
        }
    }

    /// Euclidean norm.
    pub fn norm(&self) -> f64 {
        self.layers
            .iter()
            .flat_map(Layer::values)
            .map(|g| g * g)
            .sum::<f64>()
            .sqrt()
    }

    /// Makes sure the gradient has `model`'s shape and `pages` workspaces,
    /// then zeroes it.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] if a gradient of another shape cannot be
    /// allocated.
    pub(super) fn reset(&mut self, model: &Model, pages: usize) -> Result<()> {
        let same = self.layers.len() == model.layers.len()
            && self
                .layers
                .iter()
                .zip(&model.layers)
                .all(|(g, l)| g.weights.dim() == l.weights.dim());
        if !same {
            *self = Gradient {
                work: std::mem::take(&mut self.work),
                ..Gradient::try_new(model)?
            };
        }
        self.layers.iter_mut().for_each(|l| l.fill(0.0));
        if self.work.len() < pages.max(1) {
            self.work.resize_with(pages.max(1), Workspace::new);
        }
        Ok(())
    }

    /// Divides the summed data gradient by `rows` and adds `l2 * w`.
    pub(super) fn finish(&mut self, model: &Model, rows: usize, l2: f64) {
        let scale = if rows == 0 { 0.0 } else { 1.0 / rows as f64 };
        for (i, (g, l)) in self.layers.iter_mut().zip(&model.layers).enumerate() {
            g.weights.mapv_inplace(|v| v * scale);
            g.bias.mapv_inplace(|v| v * scale);
            if l2 == 0.0 {
                continue;
            }
            match (model.scaling(), i) {
                // The penalty is on the scaled coordinates w_j / s_j.
                (Some(s), 0) => {
                    let rows = g.weights.rows_mut().into_iter().zip(l.weights.rows());
                    for ((mut g, w), &f) in rows.zip(s.factors()) {
                        g.scaled_add(l2 / (f * f), &w);
                    }
                }
                _ => g.weights.scaled_add(l2, &l.weights),
            }
        }
    }
}

impl Model {
    /// A copy of the model, allocated fallibly (`clone` aborts when the
    /// system refuses a model's worth of memory).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`].
    pub fn try_clone(&self) -> Result<Model> {
        let mut layers = Vec::new();
        layers
            .try_reserve_exact(self.layers.len())
            .map_err(|_| Error::OutOfMemory {
                what: "model layers",
                bytes: (self.layers.len() * std::mem::size_of::<Layer>()) as u64,
            })?;
        for layer in &self.layers {
            layers.push(layer.try_clone()?);
        }
        let scaling = match &self.scaling {
            Some(s) => Some(s.try_clone()?),
            None => None,
        };
        Ok(Model {
            kind: self.kind.clone(),
            n_cols: self.n_cols,
            layers,
            scaling,
            schema: self.schema,
            binary_labels: self.binary_labels,
        })
    }

    /// Every parameter in [`params`](Self::params) order, allocated
    /// fallibly.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`].
    pub fn try_params(&self) -> Result<Vec<f64>> {
        let mut out = Vec::new();
        out.try_reserve_exact(self.n_params())
            .map_err(|_| Error::OutOfMemory {
                what: "a copy of the model's parameters",
                bytes: 8 * self.n_params() as u64,
            })?;
        out.extend(self.layers.iter().flat_map(Layer::values).copied());
        Ok(out)
    }
}

//! Step rules: plain SGD, AdaGrad (Duchi, Hazan and Singer, 2011) and
//! Adam (Kingma and Ba, 2015), all in the scaled coordinates of a model
//! with an input scaling (see [`Model::set_scaling`]).
//!
//! For a parameter `w` with scaled coordinate `w' = w / f` (`f = s_j` for
//! row `j` of the first layer's weights, 1 elsewhere) and raw gradient
//! `g`, the scaled gradient is `g' = f g`; the rule computes a step `d'`
//! from `g'` and its state, and `w -= f d'`:
//!
//! | rule | `d'` |
//! |---|---|
//! | SGD | `lr g'` |
//! | AdaGrad | `lr g' / (sqrt(G) + 1e-8)`, `G += g'^2` |
//! | Adam | `lr m^ / (sqrt(v^) + 1e-8)`, `m = 0.9 m + 0.1 g'`, `v = 0.999 v + 0.001 g'^2`, `m^ = m / (1 - 0.9^t)`, `v^ = v / (1 - 0.999^t)` |
//!
//! The adaptive rules divide by a running size of each parameter's own
//! gradient, so one learning rate suits columns of very different scales
//! and rare one-hot columns get full-size steps: what makes a default
//! learning rate work without tuning on real data. AdaGrad's and Adam's
//! state is one or two `f64` per parameter.

use ndarray::{ArrayView, ArrayViewMut, Dimension};

use super::{Gradient, Layer, Model};

/// A step rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Optimizer {
    /// Plain SGD: `w -= lr * g`.
    Sgd,
    /// AdaGrad: each parameter's step divided by the root of its summed
    /// squared gradients.
    AdaGrad,
    /// Adam: bias-corrected moving averages of the gradient and of its
    /// square (`beta1 = 0.9`, `beta2 = 0.999`, `eps = 1e-8`).
    Adam,
}

impl Optimizer {
    /// The names [`from_name`](Self::from_name) accepts.
    pub const NAMES: [&'static str; 3] = ["sgd", "adagrad", "adam"];

    /// The short name.
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Sgd => "sgd",
            Optimizer::AdaGrad => "adagrad",
            Optimizer::Adam => "adam",
        }
    }

    /// The learning rate of the first epoch when none is given: 0.03 for
    /// Adam, 0.1 for AdaGrad and plain SGD (measured on the shared
    /// datasets, `docs/archive/RESULTS-HISTORY.md`, "Real data, real workflows"). The
    /// command line, Python and [`TrainOptions`](crate::train::TrainOptions)
    /// take it from here.
    pub fn default_learning_rate(self) -> f64 {
        match self {
            Optimizer::Adam => 0.03,
            Optimizer::AdaGrad | Optimizer::Sgd => 0.1,
        }
    }

    /// Looks a rule up by short name, ignoring case.
    pub fn from_name(name: &str) -> Option<Optimizer> {
        match name.to_ascii_lowercase().as_str() {
            "sgd" => Some(Optimizer::Sgd),
            "adagrad" => Some(Optimizer::AdaGrad),
            "adam" => Some(Optimizer::Adam),
            _ => None,
        }
    }
}

impl std::fmt::Display for Optimizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPS: f64 = 1e-8;

/// A rule's state across steps (empty for SGD).
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerState {
    rule: Optimizer,
    steps: u64,
    first: Vec<f64>,
    second: Vec<f64>,
}

impl OptimizerState {
    /// A fresh state of `rule`.
    pub fn new(rule: Optimizer) -> OptimizerState {
        OptimizerState {
            rule,
            steps: 0,
            first: Vec::new(),
            second: Vec::new(),
        }
    }

    /// A fresh state of `rule` for `model`, its moments (two vectors as
    /// large as the model) allocated now and
    /// fallibly; [`new`](Self::new) allocates them at the first step,
    /// aborting if the system refuses.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    pub fn try_new(rule: Optimizer, model: &Model) -> crate::Result<OptimizerState> {
        let mut state = OptimizerState::new(rule);
        if rule != Optimizer::Sgd {
            let n = model.n_params();
            state.first = crate::limits::try_filled(n, 0.0, "the optimizer's first moments")?;
            state.second = crate::limits::try_filled(n, 0.0, "the optimizer's second moments")?;
        }
        Ok(state)
    }

    /// The rule.
    pub fn rule(&self) -> Optimizer {
        self.rule
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

impl Model {
    /// One step of `state`'s rule with learning rate `lr` and gradient
    /// `grad` (from [`gradient`](Self::gradient)); see the module docs.
    /// SGD is exactly [`step`](Self::step).
    ///
    /// # Panics
    /// If `grad` was not shaped by this model.
    pub fn step_with(&mut self, grad: &Gradient, lr: f64, state: &mut OptimizerState) {
        state.steps += 1;
        if state.rule == Optimizer::Sgd {
            self.step(grad, lr);
            return;
        }
        let n = self.n_params();
        let grad_len: usize = grad.layers.iter().map(Layer::len).sum();
        assert_eq!(grad_len, n, "gradient of another model");
        if state.second.len() != n {
            state.first = vec![0.0; n];
            state.second = vec![0.0; n];
        }
        let t = state.steps as i32;
        let (c1, c2) = (1.0 - BETA1.powi(t), 1.0 - BETA2.powi(t));
        let rule = Rule {
            adagrad: state.rule == Optimizer::AdaGrad,
            lr,
            c1,
            c2,
        };
        // Layer by layer over plain slices: no vector of factors per step,
        // no chained iterators.
        let (mut first, mut second) = (&mut state.first[..], &mut state.second[..]);
        for (i, (layer, g)) in self.layers.iter_mut().zip(&grad.layers).enumerate() {
            // Only the first layer's weights are scaled: one factor per row.
            let factors = match (&self.scaling, i) {
                (Some(s), 0) => Some((s.factors(), layer.weights.ncols().max(1))),
                _ => None,
            };
            let n = layer.weights.len();
            let (m, rest) = std::mem::take(&mut first).split_at_mut(n);
            let (v, rest2) = std::mem::take(&mut second).split_at_mut(n);
            rule.apply_view(layer.weights.view_mut(), g.weights.view(), m, v, factors);
            let (m, rest) = rest.split_at_mut(layer.bias.len());
            let (v, rest2) = rest2.split_at_mut(layer.bias.len());
            rule.apply_view(layer.bias.view_mut(), g.bias.view(), m, v, None);
            first = rest;
            second = rest2;
        }
    }
}

/// One step's constants of AdaGrad or Adam.
struct Rule {
    adagrad: bool,
    lr: f64,
    c1: f64,
    c2: f64,
}

impl Rule {
    /// [`apply`](Self::apply) on arrays of any layout (logical order).
    fn apply_view<D: Dimension>(
        &self,
        mut w: ArrayViewMut<'_, f64, D>,
        g: ArrayView<'_, f64, D>,
        m: &mut [f64],
        v: &mut [f64],
        factors: Option<(&[f64], usize)>,
    ) {
        match (w.as_slice_mut(), g.as_slice()) {
            (Some(w), Some(g)) => self.apply(w, g, m, v, factors),
            _ => {
                let mut wc: Vec<f64> = w.iter().copied().collect();
                let gc: Vec<f64> = g.iter().copied().collect();
                self.apply(&mut wc, &gc, m, v, factors);
                w.iter_mut().zip(wc).for_each(|(d, s)| *d = s);
            }
        }
    }

    /// Steps the parameters `w` with gradients `g` and moments `m`, `v`;
    /// `factors`: the scaling factor of each row of `outputs` parameters.
    fn apply(
        &self,
        w: &mut [f64],
        g: &[f64],
        m: &mut [f64],
        v: &mut [f64],
        factors: Option<(&[f64], usize)>,
    ) {
        match factors {
            None => {
                for (((w, &g), m), v) in w.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                    // `f = 1`: the same arithmetic as below, bit for bit.
                    *w -= self.delta(g, m, v);
                }
            }
            // Linear models: one parameter per factor. A loop over plain
            // zipped slices, with the rule's branch taken once, lets the
            // compiler vectorise the square roots and divisions (chunks of
            // one element did not: Adam's step was about 10% of a resident
            // flights3m epoch). Same arithmetic as the general case.
            Some((factors, 1)) if self.adagrad => {
                let params = w.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut());
                for ((((w, &g), _), v), &f) in params.zip(factors) {
                    let g = f * g;
                    *v += g * g;
                    *w -= f * (self.lr * g / (v.sqrt() + EPS));
                }
            }
            Some((factors, 1)) => {
                let params = w.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut());
                for ((((w, &g), m), v), &f) in params.zip(factors) {
                    let g = f * g;
                    *m = BETA1 * *m + (1.0 - BETA1) * g;
                    *v = BETA2 * *v + (1.0 - BETA2) * g * g;
                    *w -= f * (self.lr * (*m / self.c1) / ((*v / self.c2).sqrt() + EPS));
                }
            }
            Some((factors, outputs)) => {
                let rows = w.chunks_mut(outputs).zip(g.chunks(outputs));
                let moments = m.chunks_mut(outputs).zip(v.chunks_mut(outputs));
                for (((w, g), (m, v)), &f) in rows.zip(moments).zip(factors) {
                    for (((w, &g), m), v) in w.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut())
                    {
                        *w -= f * self.delta(f * g, m, v);
                    }
                }
            }
        }
    }

    /// The step `d'` of one parameter with scaled gradient `g`.
    #[inline(always)]
    fn delta(&self, g: f64, m: &mut f64, v: &mut f64) -> f64 {
        if self.adagrad {
            *v += g * g;
            self.lr * g / (v.sqrt() + EPS)
        } else {
            *m = BETA1 * *m + (1.0 - BETA1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            self.lr * (*m / self.c1) / ((*v / self.c2).sqrt() + EPS)
        }
    }
}

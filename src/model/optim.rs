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

use super::{Gradient, Layer, Model};

/// A step rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
        let factors: Vec<f64> = if self.scaling.is_none() {
            Vec::new()
        } else {
            let f = self.param_factor();
            let first = self.layers[0].weights.len();
            // Only the first layer's weights are scaled.
            (0..first).map(f).collect()
        };
        let t = state.steps as i32;
        let (c1, c2) = (1.0 - BETA1.powi(t), 1.0 - BETA2.powi(t));
        let rule = state.rule;
        let grads = grad.layers.iter().flat_map(Layer::values);
        let params = self.layers.iter_mut().flat_map(Layer::values_mut);
        let moments = state.first.iter_mut().zip(state.second.iter_mut());
        for (k, ((w, &g), (m, v))) in params.zip(grads).zip(moments).enumerate() {
            let f = factors.get(k).copied().unwrap_or(1.0);
            let g = f * g;
            let d = match rule {
                Optimizer::AdaGrad => {
                    *v += g * g;
                    lr * g / (v.sqrt() + EPS)
                }
                _ => {
                    *m = BETA1 * *m + (1.0 - BETA1) * g;
                    *v = BETA2 * *v + (1.0 - BETA2) * g * g;
                    lr * (*m / c1) / ((*v / c2).sqrt() + EPS)
                }
            };
            *w -= f * d;
        }
    }
}

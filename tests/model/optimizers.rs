//! The step rules (`Model::step`, `Model::step_with`) against their
//! formulas written as plain loops over the flat parameter vector (the
//! module docs of `model::optim`), with and without an input scaling, for
//! a linear model and a two-layer network: equal bit for bit, since the
//! arithmetic is the same.

use tocpile::model::{Gradient, Model, ModelKind, Optimizer, OptimizerState};
use tocpile::scale::{ScaleKind, Scaling};

use crate::support::numbers;

const COLS: usize = 5;

/// `steps` steps of `rule` on `params` with the gradients `grads`, as the
/// formulas say; `factor(k)` is parameter `k`'s scaling factor.
fn reference(
    rule: Optimizer,
    params: &mut [f64],
    grads: &[Vec<f64>],
    lr: f64,
    factor: impl Fn(usize) -> f64,
) {
    let (mut m, mut v) = (vec![0.0; params.len()], vec![0.0; params.len()]);
    for (t, grad) in grads.iter().enumerate() {
        let t = t as i32 + 1;
        let (c1, c2) = (1.0 - 0.9f64.powi(t), 1.0 - 0.999f64.powi(t));
        for k in 0..params.len() {
            let f = factor(k);
            let g = f * grad[k];
            let d = match rule {
                Optimizer::Sgd => unreachable!("SGD is checked with step"),
                Optimizer::AdaGrad => {
                    v[k] += g * g;
                    lr * g / (v[k].sqrt() + 1e-8)
                }
                Optimizer::Adam => {
                    m[k] = 0.9 * m[k] + (1.0 - 0.9) * g;
                    v[k] = 0.999 * v[k] + (1.0 - 0.999) * g * g;
                    lr * (m[k] / c1) / ((v[k] / c2).sqrt() + 1e-8)
                }
            };
            params[k] -= f * d;
        }
    }
}

#[test]
fn step_rules_match_their_formulas() {
    let kinds = [
        ModelKind::Logistic,
        ModelKind::Mlp {
            hidden: vec![3],
            outputs: 2,
        },
    ];
    let factors: Vec<f64> = (0..COLS).map(|j| 0.5 + j as f64).collect();
    for kind in kinds {
        for scaled in [false, true] {
            let mut model = Model::new(kind.clone(), COLS, 3).unwrap();
            let start = numbers(1, model.n_params());
            model.set_params(&start).unwrap();
            if scaled {
                let s = Scaling::new(ScaleKind::MaxAbs, factors.clone()).unwrap();
                model.set_scaling(Some(s)).unwrap();
            }
            let outputs = model.layers()[0].weights().ncols();
            let first = model.layers()[0].weights().len();
            let factor = |k: usize| {
                if scaled && k < first {
                    factors[k / outputs]
                } else {
                    1.0
                }
            };
            let grads: Vec<Vec<f64>> = (0..3).map(|i| numbers(10 + i, model.n_params())).collect();
            let mut grad = Gradient::new(&model);
            for rule in [Optimizer::AdaGrad, Optimizer::Adam] {
                let mut m = model.clone();
                let mut state = OptimizerState::new(rule);
                for g in &grads {
                    grad.set_values(g).unwrap();
                    m.step_with(&grad, 0.1, &mut state);
                }
                let mut want = start.clone();
                reference(rule, &mut want, &grads, 0.1, factor);
                assert_eq!(m.params(), want, "{kind:?} {rule} scaled={scaled}");
            }
            // SGD: w -= lr f^2 g.
            let mut m = model.clone();
            grad.set_values(&grads[0]).unwrap();
            m.step(&grad, 0.1);
            let want: Vec<f64> = (0..start.len())
                .map(|k| start[k] + (-0.1 * factor(k) * factor(k)) * grads[0][k])
                .collect();
            assert_eq!(m.params(), want, "{kind:?} sgd scaled={scaled}");
        }
    }
}

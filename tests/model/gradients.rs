//! Gradients: against central finite differences of the objective, and
//! equal across page formats.

use tocpile::formats::FormatKind;
use tocpile::model::{Gradient, Model, ModelKind};
use tocpile::Page;

use super::{encode_all, pages_of, random_batch};
use crate::support::numbers;

const COLS: usize = 6;
const ROWS: [usize; 3] = [5, 7, 4];
const L2: f64 = 0.03;

/// Maps a random number in [-1, 1) to a label.
type Label = fn(f64) -> f64;

/// Every model, with labels it accepts.
fn cases() -> Vec<(ModelKind, Label)> {
    fn binary(x: f64) -> f64 {
        f64::from(x > 0.0)
    }
    fn signed(x: f64) -> f64 {
        if x > 0.0 {
            1.0
        } else {
            -1.0
        }
    }
    fn value(x: f64) -> f64 {
        3.0 * x + 0.5
    }
    fn class3(x: f64) -> f64 {
        ((x + 1.0) * 1.5).floor().min(2.0)
    }
    vec![
        (ModelKind::Logistic, binary),
        (ModelKind::Svm, signed),
        (ModelKind::LinearRegression, value),
        (ModelKind::Softmax { classes: 3 }, class3),
        (
            ModelKind::Mlp {
                hidden: vec![4, 3],
                outputs: 3,
            },
            class3,
        ),
        (
            ModelKind::Mlp {
                hidden: vec![5],
                outputs: 1,
            },
            binary,
        ),
        (
            ModelKind::Mlp {
                hidden: vec![],
                outputs: 2,
            },
            binary,
        ),
    ]
}

/// Three small batches and their labels.
fn data(seed: u64, label: Label) -> (Vec<tocpile::SparseBatch>, Vec<Vec<f64>>) {
    let batches: Vec<_> = ROWS
        .iter()
        .enumerate()
        .map(|(i, &r)| random_batch(seed + i as u64, r, COLS))
        .collect();
    let labels = ROWS
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            numbers(seed * 31 + i as u64, r)
                .into_iter()
                .map(label)
                .collect()
        })
        .collect();
    (batches, labels)
}

/// A model with random parameters (not the zero start of linear models).
fn random_model(kind: &ModelKind, seed: u64) -> Model {
    let mut model = Model::new(kind.clone(), COLS, seed).unwrap();
    let p: Vec<f64> = numbers(seed ^ 0x55, model.n_params())
        .iter()
        .map(|x| 0.7 * x)
        .collect();
    model.set_params(&p).unwrap();
    model
}

fn objective(model: &Model, pages: &[Page]) -> f64 {
    model.evaluate(pages).unwrap().mean_loss() + model.penalty(L2)
}

#[test]
fn every_gradient_matches_finite_differences() {
    for (seed, (kind, label)) in cases().into_iter().enumerate() {
        let seed = seed as u64 + 1;
        let (batches, labels) = data(seed * 100, label);
        let pages = pages_of(&encode_all(&batches, FormatKind::TocFull), &labels);
        let model = random_model(&kind, seed);
        let mut grad = Gradient::new(&model);
        let stats = model.gradient(&pages, L2, &mut grad).unwrap();
        assert_eq!(stats.rows, ROWS.iter().sum::<usize>());
        let eval = model.evaluate(&pages).unwrap();
        assert_eq!(stats, eval, "{kind}: gradient and evaluate figures");
        let g = grad.to_vec();
        let p0 = model.params();
        let mut probe = model.clone();
        let h = 1e-5;
        for i in 0..p0.len() {
            let mut p = p0.clone();
            p[i] = p0[i] + h;
            probe.set_params(&p).unwrap();
            let up = objective(&probe, &pages);
            p[i] = p0[i] - h;
            probe.set_params(&p).unwrap();
            let down = objective(&probe, &pages);
            let fd = (up - down) / (2.0 * h);
            let tol = 1e-6 * g[i].abs().max(fd.abs()).max(1e-2);
            assert!(
                (g[i] - fd).abs() <= tol,
                "{kind}: parameter {i}: gradient {}, finite difference {fd}",
                g[i]
            );
        }
    }
}

#[test]
fn gradients_agree_across_formats() {
    for (seed, (kind, label)) in cases().into_iter().enumerate() {
        let seed = seed as u64 + 7;
        let (batches, labels) = data(seed * 100, label);
        let model = random_model(&kind, seed);
        let grads: Vec<Vec<f64>> = [FormatKind::TocFull, FormatKind::Den, FormatKind::Csr]
            .iter()
            .map(|&f| {
                let pages = pages_of(&encode_all(&batches, f), &labels);
                let mut grad = Gradient::new(&model);
                model.gradient(&pages, L2, &mut grad).unwrap();
                grad.to_vec()
            })
            .collect();
        for other in &grads[1..] {
            for (i, (a, b)) in grads[0].iter().zip(other).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-9 * a.abs().max(1.0),
                    "{kind}: parameter {i}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn one_epoch_is_the_same_on_toc_and_den() {
    for (seed, (kind, label)) in cases().into_iter().enumerate() {
        let seed = seed as u64 + 13;
        // Twelve pages, three per mini-batch, in a fixed order.
        let batches: Vec<_> = (0..12)
            .map(|i| random_batch(seed * 50 + i, 6, COLS))
            .collect();
        let labels: Vec<Vec<f64>> = (0..12)
            .map(|i| numbers(seed * 70 + i, 6).into_iter().map(label).collect())
            .collect();
        let train = |format: FormatKind| {
            let all = pages_of(&encode_all(&batches, format), &labels);
            let mut model = Model::new(kind.clone(), COLS, seed).unwrap();
            let mut grad = Gradient::new(&model);
            for step in all.chunks(3) {
                model.gradient(step, 1e-3, &mut grad).unwrap();
                model.step(&grad, 0.3);
            }
            model.params()
        };
        let (toc, den) = (train(FormatKind::TocFull), train(FormatKind::Den));
        assert_ne!(toc, Model::new(kind.clone(), COLS, seed).unwrap().params());
        for (i, (a, b)) in toc.iter().zip(&den).enumerate() {
            assert!((a - b).abs() <= 1e-9, "{kind}: parameter {i}: {a} vs {b}");
        }
    }
}

#[test]
fn no_rows_gives_the_penalty_gradient_alone() {
    let model = random_model(&ModelKind::Softmax { classes: 3 }, 3);
    let mut grad = Gradient::new(&model);
    let stats = model.gradient(&[], 0.5, &mut grad).unwrap();
    assert_eq!(stats.rows, 0);
    let w = &model.layers()[0];
    let g = &grad.layers()[0];
    assert_eq!(g.weights(), &(w.weights() * 0.5));
    assert!(g.bias().iter().all(|&b| b == 0.0));
}

#[test]
fn the_split_gradient_is_the_one_thread_gradient() {
    // Pages shared with a helper thread: the same gradient up to rounding
    // and the same figures, for every model (non-linear ones run on one
    // thread), every format, and one to three pages; then again with the
    // helper reused across calls of different models.
    let mut helper = tocpile::model::GradientHelper::start().unwrap();
    for round in 0..2 {
        for (seed, (kind, label)) in cases().into_iter().enumerate() {
            let seed = seed as u64 + 11 + round;
            let (batches, labels) = data(seed * 100, label);
            let model = random_model(&kind, seed);
            for format in [FormatKind::TocFull, FormatKind::Csr, FormatKind::Den] {
                let all = pages_of(&encode_all(&batches, format), &labels);
                for n in 1..=all.len() {
                    let pages = &all[..n];
                    let mut one = Gradient::new(&model);
                    let want = model.gradient(pages, L2, &mut one).unwrap();
                    let mut two = Gradient::new(&model);
                    let got = model
                        .gradient_split(pages, L2, &mut two, &mut helper)
                        .unwrap();
                    // Not shared (a busy machine): the same sums, bit for bit.
                    helper.pause();
                    let mut here = Gradient::new(&model);
                    let alone = model
                        .gradient_split(pages, L2, &mut here, &mut helper)
                        .unwrap();
                    helper.new_epoch();
                    assert_eq!(here.to_vec(), two.to_vec(), "{kind} {format}: paused");
                    assert_eq!(alone, got, "{kind} {format}: paused figures");
                    assert_eq!(got.rows, want.rows);
                    assert_eq!(got.correct, want.correct);
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(1.0);
                    assert!(close(got.loss_sum, want.loss_sum), "{kind} {format}: loss");
                    assert!(close(got.sse, want.sse), "{kind} {format}: sse");
                    for (i, (a, b)) in one.to_vec().iter().zip(two.to_vec()).enumerate() {
                        assert!(close(*a, b), "{kind} {format} {n} pages: parameter {i}");
                    }
                }
            }
        }
    }
}

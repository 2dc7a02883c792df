//! The logistic function and the log-loss, computed without overflow for
//! any score: shared by the linear models, the network, the predictions
//! and the metrics.

/// `ln(1 + e^x)` without overflow or loss of precision.
pub(crate) fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `(ln(1 + e^-m), 1 / (1 + e^m))`: the log-loss at `y z = m` and the
/// size of its slope, from one `exp` (of `-|m|`, which never overflows)
/// rather than one each: the exponentials were a fifth of a resident
/// logistic-regression epoch on flights3m.
///
/// Without a branch on the sign of `m` (a select and a `max`, the same
/// values to the bit): in shuffled rows the sign is as good as random for
/// the branch predictor (history section 47).
pub(crate) fn log_loss_and_sigmoid(m: f64) -> (f64, f64) {
    let e = (-m.abs()).exp();
    let top = if m >= 0.0 { e } else { 1.0 };
    (e.ln_1p() + (-m).max(0.0), top / (1.0 + e))
}

/// `1 / (1 + e^-x)` without overflow.
pub(crate) fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

#[cfg(test)]
mod tests {
    use super::{log_loss_and_sigmoid, sigmoid, softplus};

    #[test]
    fn one_exp_log_loss_matches_the_two_exp_forms() {
        for m in [
            -800.0, -40.0, -3.5, -1e-9, 0.0, 1e-9, 0.7, 12.0, 40.0, 800.0,
        ] {
            let (loss, slope) = log_loss_and_sigmoid(m);
            let (l2, s2) = (softplus(-m), sigmoid(-m));
            assert!(
                (loss - l2).abs() <= 1e-12 * l2.abs().max(1.0),
                "{m}: {loss} {l2}"
            );
            assert!(
                (slope - s2).abs() <= 1e-15 + 1e-12 * s2,
                "{m}: {slope} {s2}"
            );
        }
    }
}

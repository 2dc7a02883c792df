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

/// A sum of log-losses' logarithms `ln(1 + e)` kept as a product of the
/// `1 + e` (each in `[1, 2]`), whose logarithm is taken when the sum is
/// asked for: one `ln` a mini-batch where `ln_1p` a row was the trainer's
/// costliest call (12% of a whole-file epoch's samples on flights3m), and
/// a costlier one the nearer `e` is to 1, as in shuffled rows, than in
/// label-sorted ones (history section 47). The product is folded into the
/// sum before it can pass 2^512. Each row computes its `1 + e` anyway
/// (its slope's denominator), so a row costs one product; an `e` below
/// 2^-10, where `1 + e` would round away a visible share of
/// `ln(1 + e)`, is added by `ln_1p` instead.
///
/// The sum differs from adding each row's `ln_1p(e)` by rounding only:
/// the product of `n` factors rounds by at most `n` units of 2^-53 of
/// it, so its logarithm by at most about `n * 2^-53` (2.8e-14 for 250
/// rows, against a sum of about 0.5 a row).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogSum {
    sum: f64,
    product: f64,
}

impl Default for LogSum {
    fn default() -> Self {
        LogSum {
            sum: 0.0,
            product: 1.0,
        }
    }
}

/// [`LogSum`] folds its product into its sum past this.
const FOLD_ABOVE: f64 = 1.340_780_792_994_259_7e154; // 2^512

impl LogSum {
    /// The log-loss at `y z = m`, `ln(1 + e^-m)`, and the size of its
    /// slope, `1 / (1 + e^m)`, with the loss's `ln(1 + e)` (`e = e^-|m|`)
    /// taken into this sum: returns the rest of the loss, `max(-m, 0)`,
    /// and the slope's size. One `exp` (of `-|m|`, which never overflows)
    /// serves both: the exponentials were a fifth of a resident
    /// logistic-regression epoch on flights3m. No branch on the sign of
    /// `m` (a select and a `max`): in shuffled rows the sign is as good
    /// as random for the branch predictor (history section 47).
    #[inline]
    pub(crate) fn log_loss_and_sigmoid(&mut self, m: f64) -> (f64, f64) {
        let e = (-m.abs()).exp();
        let top = if m >= 0.0 { e } else { 1.0 };
        let one_plus = 1.0 + e;
        if e >= 1.0 / 1024.0 {
            self.product *= one_plus;
            if self.product > FOLD_ABOVE {
                self.fold();
            }
        } else {
            self.sum += e.ln_1p();
        }
        ((-m).max(0.0), top / one_plus)
    }

    #[cold]
    fn fold(&mut self) {
        self.sum += self.product.ln();
        self.product = 1.0;
    }

    /// The sum so far, and this emptied.
    pub(crate) fn take(&mut self) -> f64 {
        let total = self.sum + self.product.ln();
        *self = LogSum::default();
        total
    }
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
    use super::{sigmoid, softplus, LogSum};

    /// A sum of many rows' losses through the product is the sum of
    /// their `ln_1p` terms but for rounding, on both sides of the switch
    /// to `ln_1p`, past a fold, and for margins of both signs.
    #[test]
    fn a_log_sum_adds_up_each_rows_log_loss() {
        let mut logs = LogSum::default();
        let (mut sum, mut exact) = (0.0, 0.0);
        for i in 0..5_000 {
            // Margins from -8 to 12: e from about 6e-6 to 1.
            let m = -8.0 + 20.0 * ((i * 7_919) % 5_000) as f64 / 5_000.0;
            let (rest, slope) = logs.log_loss_and_sigmoid(m);
            sum += rest;
            exact += softplus(-m);
            assert!((slope - sigmoid(-m)).abs() <= 1e-15 + 1e-12 * sigmoid(-m));
        }
        sum += logs.take();
        assert!((sum - exact).abs() <= 1e-12 * exact, "{sum} {exact}");
        assert_eq!(logs.take(), 0.0, "take empties the sum");
        // Folded three times: 2,000 factors of 2.
        let mut big = LogSum::default();
        let mut rest = 0.0;
        for _ in 0..2_000 {
            rest += big.log_loss_and_sigmoid(0.0).0;
        }
        let total = rest + big.take();
        assert!((total - 2_000.0 * 2f64.ln()).abs() <= 1e-12 * total);
    }

    #[test]
    fn one_exp_log_loss_matches_the_two_exp_forms() {
        for m in [
            -800.0, -40.0, -3.5, -1e-9, 0.0, 1e-9, 0.7, 12.0, 40.0, 800.0,
        ] {
            let mut logs = LogSum::default();
            let (rest, slope) = logs.log_loss_and_sigmoid(m);
            let loss = rest + logs.take();
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

//! A loan-like dataset: rows dominated by high-cardinality numeric columns
//! (amounts in dollars and cents, rates and ratios with two decimals,
//! balances), beside a few one-hot categorical columns, as a consumer
//! credit table (a loan book's application records) looks after one-hot
//! encoding. The shared datasets are one-hot or small-integer columns
//! almost everywhere; this set is where TOC's first layer barely repeats
//! (each numeric value is nearly unique within a page) and the kernels
//! meet numeric columns at their worst.
//!
//! 119 columns, 16.5 non-zeros a row: 11 numeric columns (one of
//! them missing, that is zero, in half the rows; installments, incomes,
//! ratios and balances nearly unique, amounts mostly round thousands,
//! rates from a grid of one per sub-grade) and one level each of
//! term (2), sub-grade (35), home ownership (4), purpose (14), state (50)
//! and verification status (3). The label is a default drawn from a
//! logistic model of the grade, the debt-to-income ratio and the
//! revolving utilisation. Deterministic for a seed (the library's
//! [`Rng`]).

use tocpile::rng::Rng;
use tocpile::SparseBatch;

/// Numeric columns first, then the one-hot groups.
const NUMERIC: usize = 11;
/// One-hot groups: levels of each, in column order after the numerics.
const GROUPS: [usize; 6] = [2, 35, 4, 14, 50, 3];
/// Columns of the set.
pub const LOAN_COLS: usize = NUMERIC + 2 + 35 + 4 + 14 + 50 + 3;

/// `rows` rows of the loan-like set and their 0/1 labels.
pub fn loan_like(rows: usize, seed: u64) -> (SparseBatch, Vec<f64>) {
    let mut rng = Rng::new(seed);
    let mut batch = SparseBatch::with_cols(LOAN_COLS).expect("119 columns");
    let mut labels = Vec::with_capacity(rows);
    let mut cols = Vec::with_capacity(20);
    let mut vals = Vec::with_capacity(20);
    for _ in 0..rows {
        cols.clear();
        vals.clear();
        let u = |rng: &mut Rng| rng.unit();
        // A standard normal (Box-Muller), for log-normal amounts.
        let normal = |rng: &mut Rng| {
            let (a, b) = (rng.unit().max(1e-12), rng.unit());
            (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
        };
        let cents = |x: f64| (x * 100.0).round() / 100.0;
        let term = rng.below(2) as usize; // 36 or 60 months
        let sub_grade = (rng.below(20) + rng.below(16)) as usize; // 0..35, centred
                                                                  // Rates come from a grid, one per sub-grade (as lenders price).
        let rate = cents(5.31 + sub_grade as f64 * 0.72 + (sub_grade % 3) as f64 * 0.07);
        // Most amounts are round thousands; the rest any multiple of $25.
        let amount = if rng.below(10) < 6 {
            1000.0 * (1 + rng.below(15) + rng.below(16)) as f64
        } else {
            1000.0 + 25.0 * rng.below(1561) as f64
        };
        let months = if term == 0 { 36.0 } else { 60.0 };
        let r = rate / 1200.0;
        let installment = cents(amount * r / (1.0 - (1.0 + r).powf(-months)));
        // Stated incomes: half of them round thousands.
        let income = (11.0 + 0.55 * normal(&mut rng)).exp().max(4000.0);
        let income = if rng.below(2) == 0 {
            (income / 1000.0).round() * 1000.0
        } else {
            income.round()
        };
        let dti = cents((u(&mut rng) * 35.0 + 0.5).min(39.99));
        let revol_bal = (9.0 + 1.1 * normal(&mut rng)).exp().round().max(1.0);
        let revol_util = (u(&mut rng) * 1000.0).round().max(1.0) / 10.0;
        let open_acc = 1.0 + (rng.below(15) + rng.below(15)) as f64;
        let total_acc = open_acc + rng.below(40) as f64;
        let fico = 660.0 + 5.0 * (rng.below(20) + rng.below(18)) as f64;
        let delinq = 1.0 + rng.below(120) as f64;
        let tot_bal = (10.5 + 1.3 * normal(&mut rng)).exp().round().max(1.0);
        // Ten numeric columns in every row, the months since the last
        // delinquency (column 10) in half of them.
        let numeric = [
            amount,
            rate,
            installment,
            income,
            dti,
            revol_bal,
            revol_util,
            total_acc,
            fico,
            tot_bal,
        ];
        for (c, &x) in numeric.iter().enumerate() {
            cols.push(c as u32);
            vals.push(x);
        }
        if rng.below(2) == 0 {
            cols.push((NUMERIC - 1) as u32);
            vals.push(delinq);
        }
        let levels = [
            term,
            sub_grade,
            rng.below(4) as usize,
            rng.below(14) as usize,
            rng.below(50) as usize,
            rng.below(3) as usize,
        ];
        let mut at = NUMERIC;
        for (level, size) in levels.into_iter().zip(GROUPS) {
            cols.push((at + level) as u32);
            vals.push(1.0);
            at += size;
        }
        let z = -4.0 + 0.12 * sub_grade as f64 + 0.04 * dti + 0.01 * revol_util
            - 0.2 * (income / 50_000.0).ln();
        labels.push(f64::from(u(&mut rng) < 1.0 / (1.0 + (-z).exp())));
        batch.push_row(&cols, &vals).expect("ascending columns");
    }
    (batch, labels)
}

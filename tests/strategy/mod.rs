//! proptest strategies for batches, weighted to the edges: empty batches
//! and rows, one column, huge column ids, identical rows (shared
//! prefixes), all-distinct values, subnormal and huge values, long rows.
//! Values are finite: batches reject NaN and infinities
//! (`tests/sparse`).

use proptest::prelude::*;
use tocpile::{SparseBatch, MAX_COLS};

pub fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => Just(1.0),
        2 => (-4i64..6).prop_map(|i| i as f64),
        1 => Just(0.0),
        1 => Just(-0.0),
        1 => Just(f64::MIN),
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(f64::from_bits(1)),                      // smallest subnormal
        1 => Just(-f64::MIN_POSITIVE / 3.0),               // negative subnormal
        1 => Just(f64::MAX),
        1 => Just(9_007_199_254_740_992.0),                // 2^53
        1 => Just(-9_007_199_254_740_994.0),
        1 => Just(1e300),
        // All-distinct values (the bit patterns of NaN and infinities
        // folded onto finite ones).
        3 => any::<u64>().prop_map(|b| finite(f64::from_bits(b))),
        3 => decimal(),
    ]
}

/// `v` if finite, else a finite value of the same bits but the exponent.
pub fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        f64::from_bits(v.to_bits() & !(1 << 62))
    }
}

/// A decimal with up to 4 places, as parsed from text (the scaled
/// dictionary), sometimes at the edge of the exact range.
pub fn decimal() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => (-100_000i64..100_000, 0i32..5).prop_map(|(n, e)| n as f64 / 10f64.powi(e)),
        1 => (0i32..23).prop_map(|e| 1.0 / 10f64.powi(e)),
        1 => Just(9_007_199_254_740_991.0 / 100.0),
        1 => Just(0.1 + 0.2),
    ]
}

pub fn n_cols() -> impl Strategy<Value = usize> {
    prop_oneof![
        2 => Just(1usize),
        6 => 1usize..24,
        2 => 24usize..600,
        2 => Just(MAX_COLS),
        1 => 1usize..=MAX_COLS,
    ]
}

pub fn row(n_cols: usize) -> impl Strategy<Value = Vec<(u32, f64)>> {
    let last = (n_cols - 1) as u64;
    let col = prop_oneof![
        1 => Just(0u64),
        1 => Just(last),
        1 => Just(last.saturating_sub(1)),
        6 => 0..=last,
        3 => 0..=last.min(16),
    ]
    .prop_map(|c| c as u32);
    let len = prop_oneof![
        1 => Just(0usize),
        8 => 1usize..12,
        1 => 200usize..400, // long rows
    ];
    len.prop_flat_map(move |l| prop::collection::vec((col.clone(), value()), l))
        .prop_map(|mut pairs| {
            pairs.sort_by_key(|p| p.0);
            pairs.dedup_by_key(|p| p.0);
            pairs
        })
}

pub fn batch() -> impl Strategy<Value = SparseBatch> {
    n_cols().prop_flat_map(|n| {
        let templates = prop::collection::vec(row(n), 1..4);
        // Each row is either a copy of a template (identical rows, shared
        // prefixes) or a fresh row.
        let picks = prop::collection::vec(
            prop_oneof![2 => (0usize..4).prop_map(Some), 1 => Just(None)],
            0..40,
        );
        let fresh = prop::collection::vec(row(n), 40);
        (Just(n), templates, picks, fresh).prop_map(|(n, templates, picks, fresh)| {
            let mut b = SparseBatch::with_cols(n).unwrap();
            for (i, pick) in picks.iter().enumerate() {
                let r = match pick {
                    Some(t) => &templates[t % templates.len()],
                    None => &fresh[i],
                };
                let (c, v): (Vec<u32>, Vec<f64>) = r.iter().copied().unzip();
                b.push_row(&c, &v).unwrap();
            }
            b
        })
    })
}

/// Finite values only, for kernels compared against dense math (where
/// `0 * inf` would differ from a skipped zero).
pub fn finite_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => Just(1.0),
        3 => (-4i64..6).prop_map(|i| i as f64),
        1 => Just(f64::from_bits(1)),
        1 => Just(1e-300),
        4 => -1e3..1e3f64,
        3 => decimal(),
    ]
}

/// Batches of finite values with at most `max_cols` columns.
pub fn finite_batch(max_cols: usize) -> impl Strategy<Value = SparseBatch> {
    (1usize..=max_cols).prop_flat_map(|n| {
        let row = move || {
            prop::collection::vec((0..n as u32, finite_value()), 0..(n.min(40) + 1)).prop_map(
                |mut r| {
                    r.sort_by_key(|p| p.0);
                    r.dedup_by_key(|p| p.0);
                    r
                },
            )
        };
        let templates = prop::collection::vec(row(), 1..4);
        let rows = prop::collection::vec((prop::option::weighted(0.6, 0usize..4), row()), 0..40);
        (Just(n), templates, rows).prop_map(|(n, templates, rows)| {
            let mut b = SparseBatch::with_cols(n).unwrap();
            for (pick, fresh) in rows {
                let r = pick.map_or(&fresh, |t| &templates[t % templates.len()]);
                let (c, v): (Vec<u32>, Vec<f64>) = r.iter().copied().unzip();
                b.push_row(&c, &v).unwrap();
            }
            b
        })
    })
}

//! The entropy stage's decode speed on long synthetic streams (a cubic
//! skew over 8 to 3,000 values: no page overhead, and escapes only for
//! the rarest of the 3,000):
//! what one value costs `AnsModel::decode` at best, in thread CPU time.
//!
//! ```text
//! cargo run --release --example entropy_speed
//! ```

use std::hint::black_box;
use tocpile::codec::entropy::{AnsModel, LearnOptions};
use tocpile_bench_data::thread_cpu_ns as cpu_ns;
fn main() {
    let mut rng = 12345u64;
    for (syms, n) in [
        (8u32, 100usize),
        (8, 100_000),
        (200, 100_000),
        (3000, 100_000),
    ] {
        let vals: Vec<u32> = (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let r = (rng % 1000) as f64 / 1000.0;
                (r * r * r * syms as f64) as u32
            })
            .collect();
        let m = AnsModel::learn(&vals, LearnOptions::default()).unwrap();
        let mut s = Vec::new();
        m.encode(&vals, &mut s).unwrap();
        let mut out = Vec::new();
        let reps = 20_000_000 / n;
        let t0 = cpu_ns();
        for _ in 0..reps {
            m.decode(&s, n, &mut out).unwrap();
            black_box(&out);
        }
        let t1 = cpu_ns();
        println!(
            "syms {syms} n {n}: {:.2} ns/value, {:.2} bits/value",
            (t1 - t0) as f64 / (reps * n) as f64,
            s.len() as f64 * 8.0 / n as f64
        );
    }
}

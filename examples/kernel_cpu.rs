//! TOC_FULL's kernel time as a ratio to CSR, like `kernel_table`, but
//! timed by the thread's CPU time (`/proc/thread-self/schedstat`) rather
//! than the wall clock, so that other processes on a busy machine do not
//! count: on the project's shared 2-core machines the wall-clock table
//! moved by 2x between runs under load, this one by about 10%.
//!
//! ```text
//! cargo run --release --example kernel_cpu [-- DATASET...]
//! ```
//!
//! 40 batches of 250 rows of each dataset's shuffled rows (seed 42, first
//! 50,000 rows), `p = 20`; 9 interleaved rounds, median; each (format, op)
//! runs passes over all batches for at least 15 ms of CPU time per round.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;

use ndarray::{s, Array1, Array2};
use tocpile::formats::{Batch, FormatKind};
use tocpile::Workspace;

const ROUNDS: usize = 9;
const MIN_NS: u64 = 15_000_000;
const OPS: [&str; 4] = ["A.v", "v.A", "A.M", "M.A"];

/// Nanoseconds this thread has run.
fn cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    s.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .expect("schedstat")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names = support::DATASETS
            .iter()
            .chain(support::DECIMAL_DATASETS)
            .map(|s| s.to_string())
            .collect();
    }
    println!("| dataset | A.v | v.A | A.M | M.A | CSR us per batch (A.v, v.A, A.M, M.A) |");
    println!("|---|---:|---:|---:|---:|---|");
    for name in &names {
        let (all, _) = support::load(name, 50_000);
        let batches: Vec<_> = support::batches(&support::shuffled(&all, 42), 250)
            .into_iter()
            .take(40)
            .collect();
        let (n_cols, p, rows) = (all.n_cols(), 20, 250);
        let v_cols = Array1::from(support::numbers(1, n_cols));
        let v_rows = Array1::from(support::numbers(2, rows));
        let m_right =
            Array2::from_shape_vec((n_cols, p), support::numbers(3, n_cols * p)).expect("shape");
        let m_left =
            Array2::from_shape_vec((p, rows), support::numbers(4, rows * p)).expect("shape");
        let kinds = [FormatKind::Csr, FormatKind::TocFull];
        let pages: Vec<Vec<Batch>> = kinds
            .iter()
            .map(|k| {
                batches
                    .iter()
                    .map(|b| k.encode(b).expect("encode"))
                    .collect()
            })
            .collect();
        let mut ws = Workspace::new();
        let mut out_rows = Array1::zeros(rows);
        let mut out_cols = Array1::zeros(n_cols);
        let mut out_right = Array2::zeros((rows, p));
        let mut out_left = Array2::zeros((p, n_cols));
        let mut samples = vec![vec![Vec::new(); OPS.len()]; kinds.len()];
        for _ in 0..ROUNDS {
            for (f, format_pages) in pages.iter().enumerate() {
                for (o, &op) in OPS.iter().enumerate() {
                    let start = cpu_ns();
                    let mut passes = 0u64;
                    loop {
                        for page in format_pages {
                            let n = page.n_rows();
                            match op {
                                "A.v" => page.matvec_into(
                                    v_cols.view(),
                                    out_rows.slice_mut(s![..n]),
                                    &mut ws,
                                ),
                                "v.A" => page.vecmat_into(
                                    v_rows.slice(s![..n]),
                                    out_cols.view_mut(),
                                    &mut ws,
                                ),
                                "A.M" => page.matmat_into(
                                    m_right.view(),
                                    out_right.slice_mut(s![..n, ..]),
                                    &mut ws,
                                ),
                                _ => page.left_matmat_into(
                                    m_left.slice(s![.., ..n]),
                                    out_left.view_mut(),
                                    &mut ws,
                                ),
                            }
                        }
                        black_box((&out_rows, &out_cols, &out_right, &out_left));
                        passes += 1;
                        let spent = cpu_ns() - start;
                        if spent > MIN_NS {
                            let per_batch =
                                spent as f64 / passes as f64 / format_pages.len() as f64;
                            samples[f][o].push(per_batch);
                            break;
                        }
                    }
                }
            }
        }
        let mut cells = Vec::new();
        let mut csr_us = Vec::new();
        let (csr_samples, toc_samples) = samples.split_at_mut(1);
        for (csr, toc) in csr_samples[0].iter_mut().zip(toc_samples[0].iter_mut()) {
            let (csr, toc) = (median(csr), median(toc));
            cells.push(format!("{:.2}", toc / csr));
            csr_us.push(format!("{:.1}", csr / 1000.0));
        }
        println!("| {name} | {} | {} |", cells.join(" | "), csr_us.join(", "));
    }
}

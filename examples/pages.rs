//! Rayon across the pages of a mini-batch: `A.v` and `v.A` over
//! mini-batches of k pages, pages in parallel against one page after
//! another on one thread, as a ratio in the same run.
//!
//! ```text
//! cargo run --release --example pages [-- --datasets a,b]
//! ```

mod shared;

use tocpile_bench_data as support;

use std::hint::black_box;
use std::time::Instant;

use ndarray::Array1;
use tocpile::kernels::pages::{par_matvec, par_vecmat};
use tocpile::{DecodeTree, Workspace};

/// Median seconds of `f` over 15 runs, each repeated to last >= 5 ms.
fn time(mut f: impl FnMut()) -> f64 {
    let mut samples: Vec<f64> = (0..15)
        .map(|_| {
            let start = Instant::now();
            let mut n = 0;
            while start.elapsed().as_secs_f64() < 0.005 {
                f();
                n += 1;
            }
            start.elapsed().as_secs_f64() / n as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let datasets: String = shared::Args::from_env().get(
        "--datasets",
        "mushrooms,coil2000,mnist5k,census_fertility".to_string(),
    );
    let names: Vec<&str> = datasets.split(',').collect();
    println!("threads: {}", rayon::current_num_threads());
    println!("| dataset | pages x rows | A.v parallel / sequential | v.A parallel / sequential |");
    println!("|---|---|---:|---:|");
    for name in &names {
        let (all, _) = support::load(name, 20_000);
        let shuffled = support::shuffled(&all, 42);
        for (k, rows) in [(5, 50), (10, 100)] {
            let pages: Vec<DecodeTree> = support::batches(&shuffled.slice_rows(0..k * rows), rows)
                .iter()
                .map(|b| tocpile::encode(b).unwrap().tree())
                .collect();
            let v = Array1::from_elem(all.n_cols(), 0.5);
            let u = Array1::from_elem(k * rows, 0.25);
            let mut out_rows = Array1::zeros(k * rows);
            let mut out_cols = Array1::zeros(all.n_cols());
            let mut ws = Workspace::new();
            let seq_av = time(|| {
                let mut at = 0;
                for p in &pages {
                    let n = p.n_rows();
                    p.matvec_into(
                        v.view(),
                        out_rows.slice_mut(ndarray::s![at..at + n]),
                        &mut ws,
                    );
                    at += n;
                }
                black_box(&out_rows);
            });
            let par_av = time(|| {
                par_matvec(&pages, v.view(), out_rows.view_mut());
                black_box(&out_rows);
            });
            let mut part = Array1::zeros(all.n_cols());
            let seq_va = time(|| {
                out_cols.fill(0.0);
                let mut at = 0;
                for p in &pages {
                    let n = p.n_rows();
                    p.vecmat_into(u.slice(ndarray::s![at..at + n]), part.view_mut(), &mut ws);
                    out_cols += &part;
                    at += n;
                }
                black_box(&out_cols);
            });
            let par_va = time(|| {
                par_vecmat(&pages, u.view(), out_cols.view_mut());
                black_box(&out_cols);
            });
            println!(
                "| {name} | {k} x {rows} | {:.2} | {:.2} |",
                par_av / seq_av,
                par_va / seq_va
            );
        }
    }
}

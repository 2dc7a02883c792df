//! Kernel speed per format on the shared datasets (TOC paper, Figure 8):
//! A*c, A.v, v.A, A.M and M.A (p = 20) on 250-row batches of the shuffled
//! rows, for TOC_FULL, CSR (the baseline), DEN and gzip.
//!
//! Names are `OP/DATASET/FORMAT`; throughput is the encoded bytes of the
//! batches, so bytes/s says how fast each format consumes its own input.
//! `cargo bench --bench kernels -- --test` runs each once. For the full
//! table with every format as ratios to CSR, run
//! `tocpile bench kernels DATA.libsvm.gz` (the command line).

use tocpile_bench_data as support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::{Array1, Array2};
use tocpile::formats::{Batch, FormatKind};
use tocpile::Workspace;

const FORMATS: [FormatKind; 4] = [
    FormatKind::TocFull,
    FormatKind::Csr,
    FormatKind::Den,
    FormatKind::Gzip,
];
const P: usize = 20;
const BATCHES: usize = 20;

fn kernels(c: &mut Criterion) {
    for name in support::available_datasets() {
        let (all, _) = support::load(name, 20_000);
        let batches: Vec<_> = support::batches(&support::shuffled(&all, 42), 250)
            .into_iter()
            .take(BATCHES)
            .collect();
        let (rows, cols) = (250, all.n_cols());
        let v_cols = Array1::from_shape_fn(cols, |i| (i % 7) as f64 - 3.0);
        let v_rows = Array1::from_shape_fn(rows, |i| (i % 5) as f64 - 2.0);
        let m_right = Array2::from_shape_fn((cols, P), |(i, j)| ((i + j) % 9) as f64 - 4.0);
        let m_left = Array2::from_shape_fn((P, rows), |(i, j)| ((i * j) % 11) as f64 - 5.0);
        for kind in FORMATS {
            if kind == FormatKind::Gzip && cols > 1000 {
                continue; // dense decompression of nycflights13 is minutes of bench time
            }
            let mut pages: Vec<Batch> = batches.iter().map(|b| kind.encode(b).unwrap()).collect();
            let bytes: usize = pages.iter().map(|p| p.encoded_len()).sum();
            let mut ws = Workspace::new();
            let mut g = c.benchmark_group(format!("{name}/{}", kind.name()));
            g.throughput(Throughput::Bytes(bytes as u64));
            g.measurement_time(Duration::from_secs(1)).sample_size(10);
            g.bench_function("A*c", |b| {
                b.iter(|| pages.iter_mut().for_each(|p| p.scale(black_box(1.0))))
            });
            let mut out = Array1::zeros(rows);
            g.bench_function("A.v", |b| {
                b.iter(|| {
                    for p in &pages {
                        let n = p.n_rows();
                        p.matvec_into(v_cols.view(), out.slice_mut(ndarray::s![..n]), &mut ws);
                    }
                })
            });
            let mut out = Array1::zeros(cols);
            g.bench_function("v.A", |b| {
                b.iter(|| {
                    for p in &pages {
                        let n = p.n_rows();
                        p.vecmat_into(v_rows.slice(ndarray::s![..n]), out.view_mut(), &mut ws);
                    }
                })
            });
            let mut out = Array2::zeros((rows, P));
            g.bench_function("A.M", |b| {
                b.iter(|| {
                    for p in &pages {
                        let n = p.n_rows();
                        p.matmat_into(m_right.view(), out.slice_mut(ndarray::s![..n, ..]), &mut ws);
                    }
                })
            });
            let mut out = Array2::zeros((P, cols));
            g.bench_function("M.A", |b| {
                b.iter(|| {
                    for p in &pages {
                        let n = p.n_rows();
                        p.left_matmat_into(
                            m_left.slice(ndarray::s![.., ..n]),
                            out.view_mut(),
                            &mut ws,
                        );
                    }
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);

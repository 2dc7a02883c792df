//! The trainer's per-step kernels on the loader's shuffled code batches
//! against CSR on the same rows, on every dataset at hand: the rows of a
//! version-4 file (segments sharing dictionaries) kept as code rows
//! (mini-batches on the compact tree of their codes where it pays, CSR
//! written from codes elsewhere) or as pair codes, cut into 250-row
//! mini-batches by CorgiPile's tuple shuffle over the whole file; each
//! batch's rows also as one CSR page (the baseline, what the loader gave
//! before code rows). A.v and v.A are the linear models' step, A.M and
//! M.A (p = 20) the softmax's and the MLP's; `gradient` is the linear
//! models' whole step as the trainer calls it (fused where the form has
//! a fused kernel) and `gradient-separate` the same as two kernels.
//!
//! Names are `code-batches/DATASET/FORM/OP`, FORM `codes`, `pairs` or
//! `csr`; throughput is the batches' rows. `cargo bench --bench
//! code_batches -- --test` runs each once.

use tocpile_bench_data as support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::{s, Array1, Array2};
use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::formats::{Batch, FormatKind};
use tocpile::loader::{Loader, LoaderOptions, Mode, RowForm};
use tocpile::Workspace;

const P: usize = 20;
const ROWS: usize = 250;
const BATCHES: usize = 40;

/// The first `BATCHES` mini-batches of a shuffled epoch over `ds` with
/// its rows kept as `form`, as the loader hands them to the trainer.
fn loader_batches(ds: &Arc<Dataset>, form: RowForm) -> Vec<Batch> {
    let options = LoaderOptions::default()
        .with_mode(Mode::Exact)
        .with_rows(form)
        .with_batch_rows(ROWS)
        .with_memory(usize::MAX)
        .with_seed(42);
    let loader = Loader::new(Arc::clone(ds), options).unwrap();
    let mut out = Vec::new();
    for batch in loader.epoch(0).unwrap().take(BATCHES) {
        for page in batch.unwrap().pages {
            out.push(page.batch().clone());
        }
    }
    out
}

fn code_batches(c: &mut Criterion) {
    for name in support::available_datasets() {
        let (all, labels) = support::load(name, 20_000);
        let path = std::env::temp_dir().join(format!(
            "tocpile-bench-code-batches-{}-{name}.toc",
            std::process::id()
        ));
        let options = WriterOptions::default().with_segment_rows(5_000);
        let mut writer = DatasetWriter::create(&path, all.n_cols(), options).unwrap();
        writer.push(&all, &labels).unwrap();
        writer.finish().unwrap();
        let ds = Arc::new(Dataset::open(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        let codes = loader_batches(&ds, RowForm::Codes);
        let pairs = loader_batches(&ds, RowForm::PairCodes);
        // The same rows, batch for batch, as CSR pages.
        let csr: Vec<Batch> = codes
            .iter()
            .map(|b| FormatKind::Csr.encode(&b.decode()).unwrap())
            .collect();
        let cols = all.n_cols();
        let v_cols = Array1::from_shape_fn(cols, |i| (i % 7) as f64 - 3.0);
        let v_rows = Array1::from_shape_fn(ROWS, |i| (i % 5) as f64 - 2.0);
        let m_right = Array2::from_shape_fn((cols, P), |(i, j)| ((i + j) % 9) as f64 - 4.0);
        let m_left = Array2::from_shape_fn((P, ROWS), |(i, j)| ((i * j) % 11) as f64 - 5.0);
        for (form, pages) in [("codes", &codes), ("pairs", &pairs), ("csr", &csr)] {
            let rows: usize = pages.iter().map(Batch::n_rows).sum();
            let mut ws = Workspace::new();
            let mut g = c.benchmark_group(format!("code-batches/{name}/{form}"));
            g.throughput(Throughput::Elements(rows as u64));
            g.measurement_time(Duration::from_secs(1)).sample_size(10);
            let mut out = Array1::zeros(ROWS);
            g.bench_function("A.v", |b| {
                b.iter(|| {
                    for p in pages {
                        let n = p.n_rows();
                        p.matvec_into(black_box(v_cols.view()), out.slice_mut(s![..n]), &mut ws);
                    }
                })
            });
            let mut out = Array1::zeros(cols);
            g.bench_function("v.A", |b| {
                b.iter(|| {
                    for p in pages {
                        let n = p.n_rows();
                        p.vecmat_into(black_box(v_rows.slice(s![..n])), out.view_mut(), &mut ws);
                    }
                })
            });
            let mut out = Array2::zeros((ROWS, P));
            g.bench_function("A.M", |b| {
                b.iter(|| {
                    for p in pages {
                        let n = p.n_rows();
                        p.matmat_into(m_right.view(), out.slice_mut(s![..n, ..]), &mut ws);
                    }
                })
            });
            let mut out = Array2::zeros((P, cols));
            g.bench_function("M.A", |b| {
                b.iter(|| {
                    for p in pages {
                        let n = p.n_rows();
                        p.left_matmat_into(m_left.slice(s![.., ..n]), out.view_mut(), &mut ws);
                    }
                })
            });
            // A linear model's gradient: one fused pass on TOC pages and
            // pair codes, two kernels and the slopes between on CSR
            // (`gradient-separate` is the two-kernel form on every form).
            let (w, mut grad) = (v_cols.to_vec(), vec![0.0; cols]);
            let slope = |r: usize, z: f64| 1.0 / (1.0 + (-z).exp()) - (r % 2) as f64;
            g.bench_function("gradient", |b| {
                b.iter(|| {
                    for p in pages {
                        p.linear_gradient_add(black_box(&w), slope, &mut grad, &mut ws);
                    }
                })
            });
            g.bench_function("gradient-separate", |b| {
                b.iter(|| {
                    for p in pages {
                        p.linear_gradient_add_separate(black_box(&w), slope, &mut grad, &mut ws);
                    }
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, code_batches);
criterion_main!(benches);

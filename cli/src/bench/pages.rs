//! `tocpile bench pages`: `A.v` and `v.A` over a mini-batch of several
//! TOC pages, the pages in parallel (`tocpile::kernels::pages`, rayon)
//! against one page after another on one thread, as a ratio in the same
//! run.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use tocpile::kernels::pages::{par_matvec, par_vecmat};
use tocpile::ndarray::{s, Array1};
use tocpile::{DecodeTree, SparseBatch, Workspace};
use tocpile_bench_data::median;

use crate::input::InputArgs;
use crate::output::emit;
use crate::rows::RowArgs;
use crate::{Failure, Outcome};

/// The mini-batches measured: (pages, rows per page).
const SHAPES: [(usize, usize); 2] = [(5, 50), (10, 100)];

/// Time A.v and v.A on a mini-batch of several pages: in parallel against
/// one after another.
///
/// The first rows of each INPUT (after --shuffle) are cut into mini-batches
/// of 5 pages of 50 rows and 10 pages of 100 rows, encoded as TOC. Each
/// product is timed over the pages one after another on one thread and
/// with the pages in parallel (rayon's threads), 15 runs of at least 5 ms
/// each, medians; printed as parallel time over sequential (below 1 is
/// faster). Wall clock: run on a quiet machine.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench pages train.libsvm.gz --shuffle 42\n  \
    RAYON_NUM_THREADS=4 tocpile bench pages a.libsvm.gz b.libsvm.gz --shuffle 42")]
pub struct PagesArgs {
    /// LIBSVM or CSV text (plain or gzip), Parquet, or dataset files.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    rows: RowArgs,
}

pub fn run(args: &PagesArgs) -> Outcome {
    let mut out = format!(
        "threads: {}\n| input | pages x rows | A.v parallel / sequential | v.A parallel / sequential |\n|---|---|---:|---:|\n",
        tocpile::parallel::current_num_threads()
    );
    for path in &args.inputs {
        let all = args.rows.load(path, &args.input_args, 20_000)?;
        for (k, rows) in SHAPES {
            let (av, va) = ratios(&all, k, rows).map_err(|e| Failure::about(path, e))?;
            let _ = writeln!(
                out,
                "| {} | {k} x {rows} | {av:.2} | {va:.2} |",
                path.display()
            );
        }
    }
    emit(&out)
}

/// Median seconds of `f` over 15 runs, each repeated to last >= 5 ms.
fn time(mut f: impl FnMut()) -> f64 {
    median(
        (0..15)
            .map(|_| {
                let start = Instant::now();
                let mut n = 0;
                while start.elapsed().as_secs_f64() < 0.005 {
                    f();
                    n += 1;
                }
                start.elapsed().as_secs_f64() / n as f64
            })
            .collect(),
    )
}

/// Parallel over sequential time of `A.v` and of `v.A` on the first `k`
/// pages of `rows` rows of `all` (fewer if `all` is shorter).
fn ratios(all: &SparseBatch, k: usize, rows: usize) -> tocpile::Result<(f64, f64)> {
    let n_rows = (k * rows).min(all.n_rows());
    let pages = (0..n_rows)
        .step_by(rows)
        .map(|at| Ok(tocpile::encode(&all.slice_rows(at..(at + rows).min(n_rows)))?.tree()))
        .collect::<tocpile::Result<Vec<DecodeTree>>>()?;
    let v = Array1::from_elem(all.n_cols(), 0.5);
    let u = Array1::from_elem(n_rows, 0.25);
    let mut out_rows = Array1::zeros(n_rows);
    let mut out_cols = Array1::zeros(all.n_cols());
    let mut ws = Workspace::new();
    let seq_av = time(|| {
        let mut at = 0;
        for p in &pages {
            let n = p.n_rows();
            p.matvec_into(v.view(), out_rows.slice_mut(s![at..at + n]), &mut ws);
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
            p.vecmat_into(u.slice(s![at..at + n]), part.view_mut(), &mut ws);
            out_cols += &part;
            at += n;
        }
        black_box(&out_cols);
    });
    let par_va = time(|| {
        par_vecmat(&pages, u.view(), out_cols.view_mut());
        black_box(&out_cols);
    });
    Ok((par_av / seq_av, par_va / seq_va))
}

//! `tocpile bench predict`: what `tocpile predict` computes (the library's
//! `Model::predict_dataset` on the encoded pages) against scipy's loop
//! over the file's rows (`X @ w + b` on CSR arrays of int32 indices, the
//! loop scipy's `csr_matvec` runs), on one thread and on all, as ratios
//! in the same run.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use tocpile::dataset::Dataset;
use tocpile::model::Model;
use tocpile_bench_data::median;

use crate::output::emit;
use crate::{Failure, Outcome};

/// Time a linear model's predictions for every row of a dataset file
/// against scipy's loop over the same rows.
///
/// Three ways to the scores of every row of FILE.toc, timed in
/// interleaved rounds (median reported): `tocpile predict`'s computing
/// (the library's `Model::predict_dataset`, on the encoded pages, no text
/// output), scipy's `X @ w + b` loop over the rows decoded from the file
/// block by block (what a Python loop over `Dataset.read_block` and scipy
/// does), and the same loop over rows already decoded into one CSR matrix
/// (scipy's product alone). The baselines run on one thread, as scipy's;
/// tocpile on one thread, then on all (RAYON_NUM_THREADS or one per core).
/// Ratios are baseline time over tocpile's: above 1 is faster than scipy.
/// The model must be linear (lr, svm, linreg).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    tocpile bench predict lr.model test.toc\n  \
    tocpile bench predict lr.model test.toc --rounds 15")]
pub struct PredictArgs {
    /// The model file (`train --save`), a linear model.
    #[arg(value_name = "MODEL")]
    model: PathBuf,
    /// The dataset file.
    #[arg(value_name = "FILE.toc")]
    file: PathBuf,
    /// Interleaved rounds (the median is reported).
    #[arg(long, value_name = "N", default_value_t = 9, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
}

/// Rows decoded into CSR arrays as scipy holds them (int32 offsets and
/// column indices).
struct Csr {
    indptr: Vec<i32>,
    indices: Vec<i32>,
    data: Vec<f64>,
}

impl Csr {
    fn new() -> Csr {
        Csr {
            indptr: vec![0],
            indices: Vec::new(),
            data: Vec::new(),
        }
    }

    fn push(&mut self, rows: &tocpile::SparseBatch) -> Result<(), String> {
        let base = self.data.len();
        let too_big = || "the file's non-zeros exceed scipy's int32 indices".to_string();
        for &end in &rows.offsets()[1..] {
            self.indptr
                .push(i32::try_from(base + end).map_err(|_| too_big())?);
        }
        for &c in rows.cols() {
            self.indices.push(i32::try_from(c).map_err(|_| too_big())?);
        }
        self.data.extend_from_slice(rows.values());
        Ok(())
    }

    /// scipy's `csr_matvec` then `+ b`: `y = zeros(n); y[i] += sum(data *
    /// w[indices])`, one row after another.
    fn matvec(&self, w: &[f64], b: f64, out: &mut Vec<f64>) {
        out.clear();
        out.resize(self.indptr.len() - 1, 0.0);
        for (r, o) in out.iter_mut().enumerate() {
            let mut acc = *o;
            for e in self.indptr[r] as usize..self.indptr[r + 1] as usize {
                acc += self.data[e] * w[self.indices[e] as usize];
            }
            *o = acc + b;
        }
    }
}

/// Every row of the file decoded, block by block, into `csr` (cleared).
fn decode_all(dataset: &Dataset, csr: &mut Csr) -> Result<(), Failure> {
    *csr = Csr::new();
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b)?;
        for j in 0..block.n_pages() {
            let rows = block.page(j)?.batch().decode();
            csr.push(&rows)
                .map_err(|e| Failure::about(dataset.path(), e))?;
        }
    }
    Ok(())
}

/// The scores of every row by the library, as `tocpile predict` computes
/// them.
fn by_tocpile(model: &Model, dataset: &Arc<Dataset>, out: &mut Vec<f64>) -> Result<(), Failure> {
    out.clear();
    for p in model.predict_dataset(dataset)? {
        let p = p?;
        out.extend((0..p.n_rows()).map(|i| p.scores(i)[0]));
    }
    Ok(())
}

pub fn run(args: &PredictArgs) -> Outcome {
    let model = Model::load(&args.model)?;
    let [layer] = model.layers() else {
        return Err(Failure::about(
            &args.model,
            "bench predict compares linear models (lr, svm, linreg) with scipy's X @ w + b",
        ));
    };
    if layer.weights().ncols() != 1 {
        return Err(Failure::about(
            &args.model,
            "bench predict compares models with one output (lr, svm, linreg)",
        ));
    }
    let w: Vec<f64> = layer.weights().column(0).to_vec();
    let b = layer.bias()[0];
    let dataset = Arc::new(crate::input::open_dataset(&args.file)?);
    let info = dataset.info();
    model.check_schema(info.n_cols, &info.schema)?;
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| Failure(format!("could not start a thread: {e}")))?;
    // Checked once: the three give the same scores (the library's sums
    // on the encoded form may differ in the last bits).
    let (mut csr, mut ours, mut theirs) = (Csr::new(), Vec::new(), Vec::new());
    decode_all(&dataset, &mut csr)?;
    csr.matvec(&w, b, &mut theirs);
    by_tocpile(&model, &dataset, &mut ours)?;
    let worst = ours
        .iter()
        .zip(&theirs)
        .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
        .fold(0.0, f64::max);
    if ours.len() != theirs.len() || worst > 1e-9 {
        return Err(Failure(format!(
            "the library's scores differ from the CSR loop's (largest relative difference \
             {worst:e})"
        )));
    }
    let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..args.rounds {
        let start = Instant::now();
        csr.matvec(&w, b, &mut theirs);
        black_box(&theirs);
        t[0].push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        decode_all(&dataset, &mut csr)?;
        csr.matvec(&w, b, &mut theirs);
        black_box(&theirs);
        t[1].push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        one.install(|| by_tocpile(&model, &dataset, &mut ours))?;
        t[2].push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        by_tocpile(&model, &dataset, &mut ours)?;
        t[3].push(start.elapsed().as_secs_f64());
    }
    let [in_memory, decoded, one_thread, all] = t.map(|v| median(v) * 1e3);
    let threads = tocpile::parallel::current_num_threads();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} rows, {} columns, {} blocks; medians of {} rounds (ms)",
        args.file.display(),
        info.n_rows,
        info.n_cols,
        dataset.n_blocks(),
        args.rounds
    );
    let _ = writeln!(
        out,
        "| tocpile threads | tocpile predict | scipy loop over the file's rows (decode + X @ w + b) \
         | ratio | X @ w + b on rows in memory | ratio |\n|---:|---:|---:|---:|---:|---:|"
    );
    for (n, ours) in [(1, one_thread), (threads, all)] {
        let _ = writeln!(
            out,
            "| {n} | {ours:.3} | {decoded:.3} | {:.2} | {in_memory:.3} | {:.2} |",
            decoded / ours,
            in_memory / ours
        );
    }
    emit(&out)
}

//! Your own training step over CorgiPile mini-batches: the library reads
//! and shuffles the compressed dataset file (CorgiPile: blocks in a random
//! order, their rows shuffled in a buffer; Xu et al. 2022, section 4), and
//! this file writes logistic regression's SGD step itself, with the two
//! products it needs (`A.w` for the margins, `r.A` for the gradient) run
//! on each page as the loader hands it over, compressed.
//!
//! ```sh
//! cargo run --release --example custom_loop                 # the shipped mushrooms set
//! cargo run --release --example custom_loop -- FILE.libsvm.gz
//! ```
//!
//! The labels must be 0 or 1. Prints loss and accuracy per epoch (each
//! row scored before its step), then the accuracy of the final weights on
//! every row; mushrooms ends above 0.97.

use std::path::PathBuf;

use tocpile::dataset::{DatasetWriter, WriterOptions};
use tocpile::ingest::libsvm::{LibsvmOptions, LibsvmReader};
use tocpile::loader::{Loader, LoaderOptions, Strategy};
use tocpile::ndarray::{ArrayView1, ArrayViewMut1};
use tocpile::{Page, Workspace};

/// Streams a LIBSVM file (plain or gzip) into a dataset file at `out`.
fn write_dataset(input: &PathBuf, out: &PathBuf) -> Result<usize, tocpile::Error> {
    let mut reader = LibsvmReader::open(input, LibsvmOptions::default())?;
    let n_cols = reader.n_cols();
    let mut writer = DatasetWriter::create(out, n_cols, WriterOptions::default())?;
    while let Some(chunk) = reader.next_chunk(1 << 14)? {
        writer.push(&chunk.batch, &chunk.labels)?;
    }
    writer.finish()?;
    Ok(n_cols)
}

/// Logistic regression: weights and a bias.
struct Logistic {
    w: Vec<f64>,
    b: f64,
}

impl Logistic {
    /// The margins `A.w + b` of a page's rows, computed on the page as it
    /// is stored (a TOC page: on its decode tree).
    fn margins(&self, page: &Page, ws: &mut Workspace) -> Vec<f64> {
        let mut out = vec![0.0; page.n_rows()];
        let batch = page.batch();
        batch.matvec_into(
            ArrayView1::from(&self.w),
            ArrayViewMut1::from(&mut out[..]),
            ws,
        );
        out.iter_mut().for_each(|m| *m += self.b);
        out
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Log loss of one row from its margin, computed stably.
fn log_loss(margin: f64, label: f64) -> f64 {
    let z = if label > 0.5 { -margin } else { margin };
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

fn main() -> Result<(), tocpile::Error> {
    let input = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/mushrooms.libsvm.gz")
        });
    let path = std::env::temp_dir().join(format!("custom-loop-{}.toc", std::process::id()));
    let n_cols = write_dataset(&input, &path)?;

    // CorgiPile is the default strategy; said here for the reader.
    let options = LoaderOptions::default()
        .with_strategy(Strategy::CorgiPile)
        .with_batch_rows(100)
        .with_seed(7);
    let loader = Loader::open(&path, options)?;

    let mut model = Logistic {
        w: vec![0.0; n_cols],
        b: 0.0,
    };
    let mut ws = Workspace::new();
    let mut grad = vec![0.0; n_cols];
    println!("| epoch | loss | accuracy | steps |\n|---:|---:|---:|---:|");
    for epoch in 0..10u64 {
        let learning_rate = 0.5 * 0.9f64.powi(epoch as i32);
        let (mut loss, mut right, mut rows, mut steps) = (0.0, 0usize, 0usize, 0usize);
        for batch in loader.epoch(epoch)? {
            let batch = batch?;
            // The gradient of the mean log loss: sum over pages of r.A,
            // r = sigmoid(margin) - label, added page by page.
            grad.iter_mut().for_each(|g| *g = 0.0);
            let mut grad_b = 0.0;
            for page in &batch.pages {
                let margins = model.margins(page, &mut ws);
                let residuals: Vec<f64> = margins
                    .iter()
                    .zip(page.labels())
                    .map(|(&m, &y)| {
                        loss += log_loss(m, y);
                        right += usize::from((m > 0.0) == (y > 0.5));
                        sigmoid(m) - y
                    })
                    .collect();
                page.batch().vecmat_add(&residuals, &mut grad, &mut ws);
                grad_b += residuals.iter().sum::<f64>();
            }
            let n = batch.n_rows() as f64;
            for (w, g) in model.w.iter_mut().zip(&grad) {
                *w -= learning_rate * g / n;
            }
            model.b -= learning_rate * grad_b / n;
            rows += batch.n_rows();
            steps += 1;
        }
        println!(
            "| {epoch} | {:.4} | {:.4} | {steps} |",
            loss / rows as f64,
            right as f64 / rows as f64
        );
    }

    // The final weights on every row, in file order.
    let dataset = loader.dataset();
    let (mut right, mut rows) = (0usize, 0usize);
    for b in 0..dataset.n_blocks() {
        let block = dataset.read_block(b)?;
        for p in 0..block.n_pages() {
            let page = block.page(p)?;
            let margins = model.margins(&page, &mut ws);
            right += margins
                .iter()
                .zip(page.labels())
                .filter(|(&m, &y)| (m > 0.0) == (y > 0.5))
                .count();
            rows += page.n_rows();
        }
    }
    let accuracy = right as f64 / rows as f64;
    println!("\nfinal weights: accuracy {accuracy:.4} on all {rows} rows");
    std::fs::remove_file(&path).ok();
    if input.ends_with("data/mushrooms.libsvm.gz") {
        assert!(accuracy > 0.97, "mushrooms: accuracy {accuracy}");
    }
    Ok(())
}

//! The CorgiPile paper's Figures 3 and 4 as text: 1,000 tuples, the first
//! 500 negative and the rest positive, in blocks of 20 tuples; the order
//! each strategy visits them in, as the number of negative tuples in each
//! run of 20 visited tuples (a full shuffle gives about 10 everywhere; an
//! unshuffled file gives 20 then 0), and the shuffle-quality measures.
//!
//! ```text
//! cargo run --release --example figure3
//! ```
//!
//! Buffers as in the paper's examples: Sliding-Window and MRS hold 10% of
//! the tuples (100); CorgiPile holds 10 blocks (200 tuples).

use std::sync::Arc;

use tocpile::dataset::{Dataset, DatasetWriter, WriterOptions};
use tocpile::loader::{Buffer, Loader, LoaderOptions, Mode, Strategy};
use tocpile::SparseBatch;

fn main() -> tocpile::Result<()> {
    let path = std::env::temp_dir().join(format!("tocpile-figure3-{}.toc", std::process::id()));
    let mut rows = SparseBatch::with_cols(1)?;
    for i in 0..1000 {
        rows.push_row(&[0], &[i as f64 + 1.0])?;
    }
    let labels: Vec<f64> = (0..1000).map(|i| f64::from(i >= 500)).collect();
    // One 20-row page per block: a block closes with its first page.
    let options = WriterOptions::default()
        .with_page_rows(20)
        .with_block_bytes(1);
    let mut writer = DatasetWriter::create(&path, 1, options)?;
    writer.push(&rows, &labels)?;
    writer.finish()?;
    let dataset = Arc::new(Dataset::open(&path)?);
    println!("{} blocks of 20 tuples\n", dataset.n_blocks());
    println!("negative tuples in each run of 20 visited tuples (epoch 0):\n");
    let configs = [
        (Strategy::NoShuffle, Buffer::Fraction(0.1)),
        (Strategy::SlidingWindow, Buffer::Fraction(0.1)),
        (Strategy::Mrs, Buffer::Fraction(0.1)),
        (Strategy::BlockOnly, Buffer::Blocks(10)),
        (Strategy::CorgiPile, Buffer::Blocks(10)),
        (Strategy::EpochShuffle, Buffer::Fraction(1.0)),
    ];
    let mut measures = Vec::new();
    for (strategy, buffer) in configs {
        let loader = Loader::new(
            Arc::clone(&dataset),
            LoaderOptions::default()
                .with_strategy(strategy)
                .with_buffer(buffer)
                .with_mode(Mode::Exact)
                .with_batch_rows(20)
                .with_trace(true)
                .with_seed(3),
        )?;
        let mut epoch = loader.epoch(0)?;
        for batch in epoch.by_ref() {
            batch?;
        }
        let trace = epoch.trace().expect("traced");
        let counts: Vec<String> = trace
            .rows()
            .chunks(20)
            .map(|w| w.iter().filter(|&&r| r < 500).count().to_string())
            .collect();
        println!("{:>10}: {}", strategy.to_string(), counts.join(" "));
        measures.push((strategy, trace.quality(&labels, 20)));
    }
    println!(
        "\n| strategy | rank correlation | mean displacement | label skew (20) | uniform skew |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (strategy, q) in measures {
        println!(
            "| {strategy} | {:.3} | {:.3} | {:.3} | {:.3} |",
            q.rank_correlation, q.mean_displacement, q.label_skew, q.uniform_label_skew
        );
    }
    std::fs::remove_file(&path).ok();
    Ok(())
}

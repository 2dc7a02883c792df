//! UberShuffle (Chung et al., "UberShuffle: communication-efficient data
//! shuffling for SGD via coding theory") in two measurements:
//!
//! ```text
//! cargo run --release --example ubershuffle -- figure5 [--q 10000,100000,1000000] [--seeds 3] [--workers 20] [--depth 2]
//! cargo run --release --example ubershuffle -- loopback [--dataset mushrooms] [--workers 4] [--alpha 0.5] [--epochs 3] [--chunk 256] [--block-bytes 1024] [--seed 7]
//! ```
//!
//! `figure5` prints the packets of one epoch's shuffle for uncoded
//! shuffling, coded shuffling and UberShuffle (mean over seeds 0, 1, ...),
//! beside Theorems 1 and 2, for the storage fractions of the paper's
//! Figure 5 (n = 20 workers, depth 2). `loopback` writes a shared dataset
//! to a TOC file, then moves its blocks from a server thread to worker
//! threads ([`tocpile::dist::loopback`]) under each scheme and prints the
//! bytes sent per shuffle; its defaults are the transport test's
//! (`tests/dist/transport.rs`).

mod shared;

use tocpile::dist::sim::{figure5, FIGURE5_ALPHAS};
use tocpile::dist::{loopback, read_blocks, Scheme, ShuffleOptions};
use tocpile::formats::FormatKind;

fn main() -> tocpile::Result<()> {
    let args = shared::Args::from_env();
    match args.0.first().map(String::as_str) {
        Some("loopback") => run_loopback(&args),
        _ => run_figure5(&args),
    }
}

fn run_figure5(args: &shared::Args) -> tocpile::Result<()> {
    let qs: Vec<usize> = args
        .get("--q", "10000,100000,1000000".to_string())
        .split(',')
        .map(|q| q.parse().expect("--q: comma-separated block counts"))
        .collect();
    let seeds: usize = args.get("--seeds", 3);
    let workers: usize = args.get("--workers", 20);
    let depth: usize = args.get("--depth", Scheme::PAPER_DEPTH);
    println!(
        "packets per epoch, n = {workers} workers, UberShuffle depth {depth}, mean of {seeds} seeds\n"
    );
    println!("| q | alpha | uncoded | Thm 1 | coded | Thm 2 | UberShuffle | coded / Uber | uncoded / Uber |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for q in qs {
        for p in figure5(workers, &[q], &FIGURE5_ALPHAS, seeds, depth)? {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} |",
                p.n_blocks,
                p.alpha,
                p.mean.uncoded,
                p.uncoded_theory,
                p.mean.coded,
                p.coded_theory,
                p.mean.ubershuffle,
                p.coded_over_uber(),
                p.uncoded_over_uber()
            );
        }
    }
    Ok(())
}

fn run_loopback(args: &shared::Args) -> tocpile::Result<()> {
    let name: String = args.get("--dataset", "mushrooms".to_string());
    let workers: usize = args.get("--workers", 4);
    let alpha: f64 = args.get("--alpha", 0.5);
    let epochs: u64 = args.get("--epochs", 3);
    let chunk: usize = args.get("--chunk", 256);
    let seed: u64 = args.get("--seed", 7);
    let block_bytes: usize = args.get("--block-bytes", 1024);
    let (rows, labels) = shared::rows(&name, usize::MAX, false);
    let path = shared::scratch("ubershuffle.toc");
    let info = shared::write(&path, &rows, &labels, FormatKind::TocFull, 50, block_bytes)?;
    let blocks = read_blocks(&path)?;
    std::fs::remove_file(&path).ok();
    let total: usize = blocks.iter().map(Vec::len).sum();
    let (min, max) = blocks.iter().fold((usize::MAX, 0), |(lo, hi), b| {
        (lo.min(b.len()), hi.max(b.len()))
    });
    println!(
        "{name}: {} rows in {} blocks ({total} bytes, {min} to {max} per block); 1 server + \
         {workers} workers, alpha {alpha}, {chunk}-byte chunks, {epochs} shuffles\n",
        info.n_rows,
        blocks.len()
    );
    println!("| scheme | packets | chunks | blocks | block bytes | padding | server payload bytes | whole blocks padded to largest | whole blocks padded per packet | server bytes (with plan) | worker relay bytes | seconds |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for scheme in Scheme::ALL {
        let options = ShuffleOptions {
            scheme,
            alpha,
            chunk_bytes: chunk,
            seed,
        };
        let reports = loopback(blocks.clone(), workers, &options, epochs)?;
        let k = reports.len().max(1) as f64;
        let mean = |f: &dyn Fn(&tocpile::dist::ShuffleReport) -> f64| {
            reports.iter().map(f).sum::<f64>() / k
        };
        println!(
            "| {scheme} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1}% | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.4} |",
            mean(&|r| r.packets as f64),
            mean(&|r| r.chunks as f64),
            mean(&|r| r.blocks as f64),
            mean(&|r| r.block_bytes as f64),
            100.0 * mean(&|r| r.padding_bytes as f64) / mean(&|r| r.block_bytes as f64),
            mean(&|r| r.payload_bytes as f64),
            mean(&|r| r.whole_blocks_padded_bytes as f64),
            mean(&|r| r.whole_blocks_per_packet_bytes as f64),
            mean(&|r| r.server.bytes_sent as f64),
            mean(&|r| r.workers.bytes_sent as f64),
            mean(&|r| r.seconds),
        );
    }
    println!("\nmeans per shuffle over {epochs} shuffles (seed {seed})");
    Ok(())
}

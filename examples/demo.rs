//! The main job on the built-in dataset (`data/mushrooms.libsvm.gz`, no
//! network, no arguments): encode it in 250-row mini-batches in every
//! format, check every batch decodes exactly, print the compression table
//! and the kernel table (each format's time as a ratio to CSR).
//!
//! ```text
//! cargo run --release --example demo
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tocpile::bench::{kernel_table, KernelBenchConfig};
use tocpile::formats::FormatKind;

fn main() {
    let start = Instant::now();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/mushrooms.libsvm.gz");
    let (all, labels) = support::load_file(&path, 98, usize::MAX);
    let positives = labels.iter().filter(|&&y| y == 1.0).count();
    println!(
        "mushrooms (built in): {} rows x {} columns, {} non-zeros, {} poisonous",
        all.n_rows(),
        all.n_cols(),
        all.nnz(),
        positives
    );
    // Shuffle once, as the TOC paper does before cutting mini-batches.
    let batches = support::batches(&support::shuffled(&all, 42), 250);
    let dense_bytes = (all.n_rows() * all.n_cols() * 8) as f64;
    println!(
        "{} mini-batches of 250 rows; dense f64 size {:.1} KiB\n",
        batches.len(),
        dense_bytes / 1024.0
    );

    println!("| format | encoded KiB | ratio vs dense | round trip |");
    println!("|---|---:|---:|---|");
    for kind in FormatKind::ALL {
        let mut bytes = 0usize;
        let mut exact = true;
        for b in &batches {
            let page = kind.encode(b).expect("encode");
            bytes += page.encoded_len();
            exact &= page.decode() == *b;
        }
        println!(
            "| {} | {:.1} | {:.1} | {} |",
            kind.name(),
            bytes as f64 / 1024.0,
            dense_bytes / bytes as f64,
            if exact { "exact" } else { "MISMATCH" }
        );
        assert!(exact, "{kind} did not round-trip");
    }

    let config = KernelBenchConfig {
        rounds: 5,
        min_time: Duration::from_millis(10),
        ..KernelBenchConfig::default()
    };
    let report = kernel_table(&batches, &config).expect("encode");
    println!(
        "\nKernel time per 250-row batch as a ratio to CSR (p = {}; below 1 is faster):\n",
        report.p
    );
    println!("{}", report.to_markdown());
    println!("{}", report.csr_micros());
    println!("\ndone in {:.1} s", start.elapsed().as_secs_f64());
}

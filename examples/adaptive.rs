//! What each per-batch choice of format version 2 buys: the compression
//! ratio of `Level::Full` with each `Adaptive` choice alone and all
//! together, against the version-1 layout (`Adaptive::NONE`), on 250-row
//! batches of each dataset's shuffled rows. Every batch is decoded back
//! and compared.
//!
//! ```text
//! cargo run --release --example adaptive [-- DATASET...]
//! ```
//!
//! Datasets are the shared ones and the mixed one-hot and decimal sets
//! (`*_cents`, see `tests/support`); default: all of them.

#[path = "../tests/support/mod.rs"]
mod support;

use tocpile::{Adaptive, EncodeOptions, Encoder, SparseBatch, TocBatch};

const ROWS: usize = 50_000;
const BATCHES: usize = 200;

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names = support::DATASETS
            .iter()
            .chain(support::DECIMAL_DATASETS)
            .map(|s| s.to_string())
            .collect();
    }
    let variants = [
        ("version 1", Adaptive::NONE),
        (
            "+ flat pages",
            Adaptive {
                flat_pages: true,
                ..Adaptive::NONE
            },
        ),
        (
            "+ gaps",
            Adaptive {
                gaps: true,
                ..Adaptive::NONE
            },
        ),
        (
            "+ scaled dict",
            Adaptive {
                scaled_dictionary: true,
                ..Adaptive::NONE
            },
        ),
        ("all (default)", Adaptive::ALL),
    ];
    print!("| dataset |");
    for (name, _) in &variants {
        print!(" {name} |");
    }
    println!(" flat pages | version-2 pages |");
    println!("|---|{}---:|---:|", "---:|".repeat(variants.len()));
    for name in &names {
        let (all, _) = support::load(name, ROWS);
        let batches: Vec<SparseBatch> = support::batches(&support::shuffled(&all, 42), 250)
            .into_iter()
            .take(BATCHES)
            .collect();
        let dense: f64 = batches
            .iter()
            .map(|b| (b.n_rows() * b.n_cols() * 8) as f64)
            .sum();
        print!("| {name} |");
        let (mut flat, mut v2) = (0, 0);
        for (_, adaptive) in variants {
            let options = EncodeOptions {
                adaptive,
                ..EncodeOptions::default()
            };
            let mut encoder = Encoder::new(options);
            let mut bytes = 0usize;
            (flat, v2) = (0, 0);
            for b in &batches {
                let encoded = encoder.encode(b).expect("encode");
                bytes += encoded.encoded_len();
                flat += usize::from(!encoded.has_tree());
                v2 += usize::from(encoded.version() == 2);
                let loaded = TocBatch::from_bytes(encoded.as_bytes()).expect("valid");
                assert!(loaded.decode() == *b, "{name}: round trip");
            }
            print!(" {:.1} |", dense / bytes as f64);
        }
        println!(" {flat} of {} | {v2} |", batches.len());
    }
}

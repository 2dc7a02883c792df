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
//!
//! The last two columns are what a reader pays per page on the training
//! path, validating it and building its decode tree
//! (`TocBatch::from_bytes_with_tree`), for the version-1 layout and the
//! default: the thread's CPU time per page (`/proc/thread-self/schedstat`,
//! so other processes on a busy machine do not count), median of 7
//! interleaved rounds.

use tocpile_bench_data as support;
use tocpile_bench_data::thread_cpu_ns as cpu_ns;

use std::hint::black_box;

use tocpile::{Adaptive, DecodeTree, EncodeOptions, Encoder, SparseBatch, TocBatch};

/// Median CPU microseconds per page to validate and build the tree of
/// each of `pages` (interleaved rounds across the page sets).
fn build_micros(sets: &[Vec<Vec<u8>>]) -> Vec<f64> {
    let mut tree = DecodeTree::default();
    let mut samples = vec![Vec::new(); sets.len()];
    for _ in 0..7 {
        for (s, pages) in sets.iter().enumerate() {
            let start = cpu_ns();
            let mut passes = 0u64;
            while cpu_ns() - start < 20_000_000 {
                for p in pages {
                    black_box(TocBatch::from_bytes_with_tree(&p[..], &mut tree).expect("valid"));
                }
                passes += 1;
            }
            let per_page = (cpu_ns() - start) as f64 / passes as f64 / pages.len() as f64;
            samples[s].push(per_page / 1000.0);
        }
    }
    samples
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect()
}

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
    println!(" flat pages | version-2 pages | build us/page, version 1 | build us/page, default |");
    println!(
        "|---|{}---:|---:|---:|---:|",
        "---:|".repeat(variants.len())
    );
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
        let mut blobs: Vec<Vec<Vec<u8>>> = Vec::new();
        for (_, adaptive) in variants {
            let options = EncodeOptions {
                adaptive,
                ..EncodeOptions::default()
            };
            let mut encoder = Encoder::new(options);
            let mut bytes = 0usize;
            let mut pages = Vec::new();
            (flat, v2) = (0, 0);
            for b in &batches {
                let encoded = encoder.encode(b).expect("encode");
                bytes += encoded.encoded_len();
                pages.push(encoded.as_bytes().to_vec());
                flat += usize::from(!encoded.has_tree());
                v2 += usize::from(encoded.version() == 2);
                let loaded = TocBatch::from_bytes(encoded.as_bytes()).expect("valid");
                assert!(loaded.decode() == *b, "{name}: round trip");
            }
            print!(" {:.1} |", dense / bytes as f64);
            blobs.push(pages);
        }
        // The last variant is the default, the first the version-1 layout.
        let default = blobs.pop().expect("variants");
        let micros = build_micros(&[blobs.swap_remove(0), default]);
        println!(
            " {flat} of {} | {v2} | {:.1} | {:.1} |",
            batches.len(),
            micros[0],
            micros[1]
        );
    }
}

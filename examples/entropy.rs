//! Would an entropy stage on the code stream pay? For every tree page of
//! 250 shuffled rows (the default encoding), this measures:
//! - the codes as stored (bit-packed at the width of the largest code);
//! - an order-0 Huffman coding of them: the stream, plus the model a
//!   decoder needs (which codes occur and their lengths: a gap-coded
//!   symbol id and a 5-bit length per distinct code);
//! - the time to decode that Huffman stream (one table lookup per code)
//!   against the time to validate the page and build its decode tree,
//!   which every loaded page pays on the training path.
//!
//! ```text
//! cargo run --release --example entropy [-- DATASET...]
//! ```
//!
//! Given dataset files instead (`FILE.toc`, version 3), it measures a
//! model shared by a segment's pages ([`shared_model`]).
//!
//! Times are the thread's CPU time (`/proc/thread-self/schedstat`), so
//! other processes on a busy machine do not count.

use tocpile_bench_data as support;
use tocpile_bench_data::thread_cpu_ns as cpu_ns;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hint::black_box;

use tocpile::{DecodeTree, EncodeOptions, Encoder, TocBatch};

/// Huffman code lengths for `counts`.
fn huffman_lengths(counts: &[u64]) -> Vec<u8> {
    let n = counts.len();
    if n == 1 {
        return vec![1];
    }
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| Reverse((c, i)))
        .collect();
    let mut parent = vec![usize::MAX; 2 * n];
    let mut next = n;
    while let (Some(Reverse((a, i))), Some(Reverse((b, j)))) = (heap.pop(), heap.pop()) {
        parent[i] = next;
        parent[j] = next;
        heap.push(Reverse((a + b, next)));
        next += 1;
    }
    (0..n)
        .map(|mut k| {
            let mut depth = 0;
            while parent[k] != usize::MAX {
                k = parent[k];
                depth += 1;
            }
            depth
        })
        .collect()
}

/// The stream (bits least significant first) and a lookup table of
/// `2^max_len` entries `(symbol, length)`.
type Coded = (Vec<u8>, Vec<(u32, u8)>, u32);

/// Canonical Huffman coding of `codes`.
fn huffman(codes: &[u32], symbols: &[u32], lens: &[u8]) -> Coded {
    let mut order: Vec<usize> = (0..symbols.len()).collect();
    order.sort_by_key(|&i| (lens[i], symbols[i]));
    let mut words = vec![0u32; symbols.len()];
    let (mut word, mut prev) = (0u32, 0u8);
    for &i in &order {
        word <<= lens[i] - prev;
        prev = lens[i];
        words[i] = word;
        word += 1;
    }
    let reversed = |w: u32, l: u8| w.reverse_bits() >> (32 - l as u32);
    let index: HashMap<u32, usize> = symbols.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u64, 0u32);
    for c in codes {
        let i = index[c];
        acc |= (reversed(words[i], lens[i]) as u64) << bits;
        bits += lens[i] as u32;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    out.push(acc as u8);
    out.extend_from_slice(&[0; 8]);
    let max_len = *lens.iter().max().expect("symbols") as u32;
    let mut table = vec![(0u32, 0u8); 1 << max_len];
    for i in 0..symbols.len() {
        let mut k = reversed(words[i], lens[i]) as usize;
        while k < table.len() {
            table[k] = (symbols[i], lens[i]);
            k += 1 << lens[i];
        }
    }
    (out, table, max_len)
}

mod footer;
#[path = "entropy/shared_model.rs"]
mod shared_model;

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.iter().any(|n| n.ends_with(".toc")) {
        return shared_model::run(&names);
    }
    if names.is_empty() {
        names = [
            "mushrooms",
            "coil2000",
            "census_fertility",
            "nycflights13",
            "flights3m",
        ]
        .map(String::from)
        .to_vec();
    }
    println!("| dataset | tree pages | page bytes | codes packed | Huffman stream | Huffman model | net change of page bytes | tree build us/page | Huffman decode us/page |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for name in &names {
        let (all, _) = support::load(name, 50_000);
        let batches: Vec<_> = support::batches(&support::shuffled(&all, 42), 250)
            .into_iter()
            .take(40)
            .collect();
        let mut encoder = Encoder::new(EncodeOptions::default());
        let mut tree = DecodeTree::default();
        let (mut pages, mut total, mut packed, mut stream, mut model) = (0, 0u64, 0u64, 0u64, 0u64);
        let (mut build_ns, mut huff_ns) = (0u64, 0u64);
        for b in &batches {
            let encoded = encoder.encode(b).expect("encode");
            if !encoded.has_tree() {
                continue;
            }
            pages += 1;
            total += encoded.encoded_len() as u64;
            let full = encoded.full_tree();
            let codes: Vec<u32> = (0..full.n_rows())
                .flat_map(|r| full.row_codes(r).to_vec())
                .collect();
            let max_code = codes.iter().copied().max().unwrap_or(1);
            packed += (codes.len() as u64 * (32 - max_code.leading_zeros()) as u64).div_ceil(8);
            let mut counts: HashMap<u32, u64> = HashMap::new();
            for &c in &codes {
                *counts.entry(c).or_default() += 1;
            }
            let mut symbols: Vec<u32> = counts.keys().copied().collect();
            symbols.sort_unstable();
            let freq: Vec<u64> = symbols.iter().map(|s| counts[s]).collect();
            let lens = huffman_lengths(&freq);
            stream += freq
                .iter()
                .zip(&lens)
                .map(|(&c, &l)| c * l as u64)
                .sum::<u64>()
                .div_ceil(8);
            let d = symbols.len() as u64;
            let gap_bits = 64 - (max_code as u64 / d).max(1).leading_zeros() as u64 + 2;
            model += (d * (gap_bits + 5)).div_ceil(8);
            let (bits, table, max_len) = huffman(&codes, &symbols, &lens);
            let mask = (1u64 << max_len) - 1;
            let bytes = encoded.as_bytes().to_vec();
            let mut decoded = Vec::with_capacity(codes.len());
            let reps = 100;
            let t0 = cpu_ns();
            for _ in 0..reps {
                black_box(TocBatch::from_bytes_with_tree(&bytes[..], &mut tree).expect("valid"));
            }
            let t1 = cpu_ns();
            for _ in 0..reps {
                decoded.clear();
                let mut at = 0usize;
                for _ in 0..codes.len() {
                    let word =
                        u64::from_le_bytes(bits[at >> 3..(at >> 3) + 8].try_into().expect("8"));
                    let (s, l) = table[((word >> (at & 7)) & mask) as usize];
                    decoded.push(s);
                    at += l as usize;
                }
                black_box(&decoded);
            }
            let t2 = cpu_ns();
            assert_eq!(decoded, codes);
            build_ns += (t1 - t0) / reps;
            huff_ns += (t2 - t1) / reps;
        }
        let net = stream as f64 + model as f64 - packed as f64;
        println!(
            "| {name} | {pages} | {total} | {packed} | {stream} | {model} | {:+.1}% | {:.1} | {:.1} |",
            100.0 * net / total as f64,
            build_ns as f64 / pages as f64 / 1000.0,
            huff_ns as f64 / pages as f64 / 1000.0
        );
    }
}

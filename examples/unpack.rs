//! Bit unpacking by measurement: the codec's hand-written unpacker
//! (`src/wire.rs`) against `bitvec` (bit slices, `load_le`) and the
//! `bitpacking` crate's block packers (blocks of 32 values, scalar, and of
//! 128, SIMD), on the packed arrays of real pages.
//!
//! Pages as `tocpile encode` writes them with its defaults: 50-row pages
//! of the rows in file order, `Level::Full` with the default options (the
//! first 20,000 rows of each shared dataset). For each dataset the
//! example prints the (width, length) distribution of the packed arrays
//! (per section: widths and lengths, smallest, median, largest) and the
//! CPU time to unpack every packed array of a page, per method (median of
//! interleaved rounds). `bitpacking` has its own layout (blocks of a fixed
//! length, each padded), so its arrays are re-packed in that layout first:
//! it would change the byte format; its extra bytes are reported too.
//! Every method's output is checked against the hand-written one.
//!
//! ```text
//! cargo run --release --example unpack [ROUNDS]
//! ```

use std::hint::black_box;

use bitpacking::{BitPacker, BitPacker1x, BitPacker4x};
use bitvec::prelude::*;
use tocpile::internals::{packed_arrays, unpack};
use tocpile_bench_data as support;

const PAGE_ROWS: usize = 50;
const MAX_ROWS: usize = 20_000;

/// One packed array of a page, with its values and its `bitpacking` forms.
struct Array {
    width: u8,
    count: usize,
    payload: Vec<u8>,
    /// Blocks of 32 values, the last padded with zeros (BitPacker1x).
    blocks32: Vec<u8>,
    /// Blocks of 128 values, the last padded with zeros (BitPacker4x).
    blocks128: Vec<u8>,
}

fn block_pack<B: BitPacker>(packer: &B, values: &[u32], width: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let mut block = vec![0u32; B::BLOCK_LEN];
    let mut buf = vec![0u8; 4 * B::BLOCK_LEN];
    for chunk in values.chunks(B::BLOCK_LEN) {
        block.fill(0);
        block[..chunk.len()].copy_from_slice(chunk);
        let n = packer.compress(&block, &mut buf, width);
        out.extend_from_slice(&buf[..n]);
    }
    out
}

fn block_unpack<B: BitPacker>(
    packer: &B,
    bytes: &[u8],
    width: u8,
    count: usize,
    out: &mut Vec<u32>,
) {
    out.clear();
    let mut block = [0u32; 128];
    let per_block = B::BLOCK_LEN * width as usize / 8;
    let mut at = 0;
    while out.len() < count {
        packer.decompress(
            &bytes[at..at + per_block],
            &mut block[..B::BLOCK_LEN],
            width,
        );
        at += per_block;
        let take = (count - out.len()).min(B::BLOCK_LEN);
        out.extend_from_slice(&block[..take]);
    }
}

fn bitvec_unpack(payload: &[u8], width: u8, count: usize, out: &mut Vec<u32>) {
    out.clear();
    if width == 0 {
        out.resize(count, 0);
        return;
    }
    let bits = payload.view_bits::<Lsb0>();
    out.extend(
        bits[..count * width as usize]
            .chunks_exact(width as usize)
            .map(|c| c.load_le::<u32>()),
    );
}

/// Candidate: eight values per group, each from one unaligned 64-bit load
/// at a constant offset in a 40-byte window (no 128-bit shifts).
fn windowed(payload: &[u8], width: u8, count: usize, out: &mut Vec<u32>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => windowed_groups::<$w>(payload, count, out),)*
                _ => return unpack(payload, width, count, out),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 9 10 11 12 13 14 15 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    // The last `count % 8` values one by one.
    let w = width as usize;
    let mask = (1u64 << w) - 1;
    for i in out.len()..count {
        let bit = i * w;
        let mut word = [0u8; 8];
        let rest = &payload[bit / 8..];
        let keep = rest.len().min(8);
        word[..keep].copy_from_slice(&rest[..keep]);
        out.push(((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32);
    }
}

#[inline(always)]
fn windowed_groups<const W: usize>(payload: &[u8], count: usize, out: &mut Vec<u32>) {
    out.clear();
    let groups = count / 8;
    out.resize(groups * 8, 0);
    let mask = (1u64 << W) - 1;
    let mut pad;
    for (g, dst) in out.chunks_exact_mut(8).enumerate() {
        let start = g * W;
        let win: &[u8; 40] = match payload.get(start..start + 40) {
            Some(w) => w.try_into().expect("40 bytes"),
            None => {
                pad = [0u8; 40];
                let rest = &payload[start..];
                pad[..rest.len()].copy_from_slice(rest);
                &pad
            }
        };
        for (k, d) in dst.iter_mut().enumerate() {
            let bit = k * W;
            let at = bit / 8;
            let word = u64::from_le_bytes(win[at..at + 8].try_into().expect("8 bytes"));
            *d = ((word >> (bit % 8)) & mask) as u32;
        }
    }
}

#[derive(Clone, Copy)]
enum Method {
    Windowed,
    Hand,
    Bitvec,
    Blocks32,
    Blocks128,
}

const METHODS: [(Method, &str); 5] = [
    (Method::Hand, "hand-written"),
    (Method::Windowed, "64-bit loads"),
    (Method::Bitvec, "bitvec"),
    (Method::Blocks32, "bitpacking 1x (32)"),
    (Method::Blocks128, "bitpacking 4x (128)"),
];

fn run(method: Method, pages: &[Vec<Array>], out: &mut Vec<u32>) {
    let (p1, p4) = (BitPacker1x::new(), BitPacker4x::new());
    for page in pages {
        for a in page {
            match method {
                Method::Hand => unpack(&a.payload, a.width, a.count, out),
                Method::Windowed => windowed(&a.payload, a.width, a.count, out),
                Method::Bitvec => bitvec_unpack(&a.payload, a.width, a.count, out),
                Method::Blocks32 => block_unpack(&p1, &a.blocks32, a.width, a.count, out),
                Method::Blocks128 => block_unpack(&p4, &a.blocks128, a.width, a.count, out),
            }
            black_box(&out);
        }
    }
}

/// Smallest, median and largest of `xs`, as "a / b / c".
fn spread(mut xs: Vec<usize>) -> String {
    xs.sort_unstable();
    match xs.as_slice() {
        [] => "-".into(),
        s => format!("{} / {} / {}", s[0], s[s.len() / 2], s[s.len() - 1]),
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let mut distribution = String::from(
        "| dataset | section | arrays | width (min / median / max) | length (min / median / max) |\n|---|---|---:|---|---|\n",
    );
    let mut timing =
        String::from("| dataset | pages | arrays a page | values a page | generic widths | page decode ns/page |");
    for (_, name) in METHODS {
        timing.push_str(&format!(" {name} ns/page |"));
    }
    timing.push_str(
        " bitpacking 1x extra bytes | bitpacking 4x extra bytes |\n|---|---:|---:|---:|---:|---:|",
    );
    timing.push_str(&"---:|".repeat(METHODS.len() + 2));
    timing.push('\n');
    for name in support::DATASETS {
        let (rows, _) = support::load(name, MAX_ROWS);
        let (p1, p4) = (BitPacker1x::new(), BitPacker4x::new());
        let mut pages: Vec<Vec<Array>> = Vec::new();
        let mut blobs: Vec<Vec<u8>> = Vec::new();
        let mut sections: Vec<(&'static str, Vec<usize>, Vec<usize>)> = Vec::new();
        let (mut payload_bytes, mut extra32, mut extra128) = (0usize, 0i64, 0i64);
        let mut out = Vec::new();
        for batch in support::batches(&rows, PAGE_ROWS) {
            let blob = tocpile::encode(&batch).expect("encode").into_bytes();
            let mut page = Vec::new();
            for a in packed_arrays(&blob).expect("a valid page") {
                unpack(a.payload, a.width, a.count, &mut out);
                let entry = match sections.iter_mut().find(|s| s.0 == a.name) {
                    Some(e) => e,
                    None => {
                        sections.push((a.name, Vec::new(), Vec::new()));
                        sections.last_mut().expect("pushed")
                    }
                };
                entry.1.push(a.width as usize);
                entry.2.push(a.count);
                let blocks32 = block_pack(&p1, &out, a.width);
                let blocks128 = block_pack(&p4, &out, a.width);
                payload_bytes += a.payload.len();
                extra32 += blocks32.len() as i64 - a.payload.len() as i64;
                extra128 += blocks128.len() as i64 - a.payload.len() as i64;
                page.push(Array {
                    width: a.width,
                    count: a.count,
                    payload: a.payload.to_vec(),
                    blocks32,
                    blocks128,
                });
            }
            pages.push(page);
            blobs.push(blob);
        }
        // Every method gives the hand-written unpacker's values.
        let mut want = Vec::new();
        for a in pages.iter().flatten() {
            unpack(&a.payload, a.width, a.count, &mut want);
            bitvec_unpack(&a.payload, a.width, a.count, &mut out);
            assert_eq!(out, want, "bitvec, width {}", a.width);
            windowed(&a.payload, a.width, a.count, &mut out);
            assert_eq!(out, want, "64-bit loads, width {}", a.width);
            block_unpack(&p1, &a.blocks32, a.width, a.count, &mut out);
            assert_eq!(out, want, "bitpacking 1x, width {}", a.width);
            block_unpack(&p4, &a.blocks128, a.width, a.count, &mut out);
            assert_eq!(out, want, "bitpacking 4x, width {}", a.width);
        }
        for (section, widths, lengths) in &sections {
            distribution.push_str(&format!(
                "| {name} | {section} | {} | {} | {} |\n",
                widths.len(),
                spread(widths.clone()),
                spread(lengths.clone())
            ));
        }
        let n_pages = pages.len();
        let arrays: usize = pages.iter().map(Vec::len).sum();
        let values: usize = pages.iter().flatten().map(|a| a.count).sum();
        let generic = pages
            .iter()
            .flatten()
            .filter(|a| ![0, 8, 16, 32].contains(&a.width))
            .map(|a| a.count)
            .sum::<usize>();
        // What a reader pays per page to validate it and build its decode
        // tree (the unpacking included), for scale.
        let mut tree = tocpile::DecodeTree::default();
        let mut decode = Vec::new();
        for _ in 0..rounds {
            let start = support::thread_cpu_ns();
            let mut reps = 0u64;
            while support::thread_cpu_ns() - start < 20_000_000 {
                for blob in &blobs {
                    tocpile::TocBatch::from_bytes_with_tree(&blob[..], &mut tree).expect("valid");
                }
                reps += 1;
            }
            let ns = (support::thread_cpu_ns() - start) as f64;
            decode.push(ns / reps as f64 / n_pages as f64);
        }
        // Interleaved rounds, each method once per round; medians.
        let mut samples = vec![Vec::new(); METHODS.len()];
        for _ in 0..rounds {
            for (m, &(method, _)) in METHODS.iter().enumerate() {
                let start = support::thread_cpu_ns();
                let mut reps = 0u64;
                while support::thread_cpu_ns() - start < 20_000_000 {
                    run(method, &pages, &mut out);
                    reps += 1;
                }
                let ns = (support::thread_cpu_ns() - start) as f64;
                samples[m].push(ns / reps as f64 / n_pages as f64);
            }
        }
        timing.push_str(&format!(
            "| {name} | {n_pages} | {:.1} | {:.0} | {:.0}% | {:.0} |",
            arrays as f64 / n_pages as f64,
            values as f64 / n_pages as f64,
            100.0 * generic as f64 / values.max(1) as f64,
            support::median(decode)
        ));
        for s in samples {
            timing.push_str(&format!(" {:.0} |", support::median(s)));
        }
        timing.push_str(&format!(
            " {:+.1}% | {:+.1}% |\n",
            100.0 * extra32 as f64 / payload_bytes as f64,
            100.0 * extra128 as f64 / payload_bytes as f64
        ));
        eprintln!("{name}: done");
    }
    println!("Packed arrays of {PAGE_ROWS}-row pages (first {MAX_ROWS} rows, file order, default encode):\n");
    println!("{distribution}");
    println!("CPU time to unpack every packed array of a page (median of {rounds} rounds):\n");
    println!("{timing}");
}

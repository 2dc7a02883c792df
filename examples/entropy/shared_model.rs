//! Would an entropy stage pay with its model shared by a segment's pages
//! (dataset file version 3)? For every segment of each file given, over
//! the codes and the row lengths of its version-3 pages:
//! - the bytes as stored (each page's bit-packed payload);
//! - a canonical Huffman code learned over the whole segment, lengths at
//!   most `L` bits (`L = max(12, bits of the symbol count)`, so that one
//!   table of `2^L` entries decodes it): each page's stream on its own
//!   (whole bytes, so a page stays decodable alone) plus the model once
//!   per segment (the symbols present as escape-coded gaps at their best
//!   width, and a 4-bit length each: what a decoder needs);
//! - the order-0 entropy of the segment's symbols, the bound an ANS coder
//!   with the same model would approach (its model, frequencies rather
//!   than lengths, would be larger than counted here);
//! - the time to unpack each page's codes as every decode does today
//!   against the time to decode its Huffman stream (one table lookup per
//!   code), in thread CPU time per code.

use std::collections::HashMap;
use std::hint::black_box;

use tocpile::codec::entropy::{AnsModel, LearnOptions};
use tocpile::dataset::Dataset;
use tocpile::internals::{packed_arrays_of, unpack};
use tocpile::DecodeTree;

use super::{cpu_ns, footer, huffman_lengths};

/// One stream of a page (its codes or row lengths) as stored.
struct Stream {
    values: Vec<u32>,
    width: u8,
    payload: Vec<u8>,
}

/// Totals of one stream kind over a file.
#[derive(Default)]
struct Totals {
    stored: u64,
    huffman: u64,
    model: u64,
    entropy_bits: f64,
    symbols: u64,
    max_len: u8,
    unpack_ns: u64,
    huffman_ns: u64,
    values: u64,
    rans: u64,
    rans_model: u64,
    rans_ns: u64,
    rans_unpack_ns: u64,
}

/// Lengths of at most `limit` bits (Kraft sum kept at most 1: the longest
/// codes under the limit are lengthened until it holds).
fn limit_lengths(lens: &mut [u8], freq: &[u64], limit: u8) {
    for l in lens.iter_mut() {
        *l = (*l).clamp(1, limit);
    }
    let kraft = |lens: &[u8]| -> u64 { lens.iter().map(|&l| 1u64 << (limit - l)).sum() };
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(lens[i]), freq[i]));
    while kraft(lens) > 1u64 << limit {
        let mut over = kraft(lens) - (1u64 << limit);
        for &i in &order {
            if over == 0 {
                break;
            }
            if lens[i] < limit {
                over = over.saturating_sub(1u64 << (limit - lens[i] - 1));
                lens[i] += 1;
            }
        }
    }
}

/// Bits of the model: symbols as escape-coded gaps at their best width,
/// a 4-bit length each, and a count and width header.
fn model_bytes(symbols: &[u32]) -> u64 {
    let gaps: Vec<u64> = symbols
        .iter()
        .scan(0u64, |prev, &s| {
            let g = s as u64 - *prev;
            *prev = s as u64;
            Some(g)
        })
        .collect();
    let best = (1..=20u64)
        .map(|w| {
            let e = (1u64 << w) - 1;
            gaps.iter().map(|g| (g / e + 1) * w).sum::<u64>()
        })
        .min()
        .unwrap_or(0);
    (best + 4 * symbols.len() as u64).div_ceil(8) + 4
}

/// The canonical code words (bit-reversed, to be read least significant
/// bit first) of `lens`, in symbol order.
fn canonical(lens: &[u8]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| (lens[i], i));
    let mut words = vec![0u32; lens.len()];
    let (mut word, mut prev) = (0u32, 0u8);
    for &i in &order {
        word <<= lens[i] - prev;
        prev = lens[i];
        words[i] = word.reverse_bits() >> (32 - lens[i] as u32);
        word += 1;
    }
    words
}

/// Measures one stream kind of one segment into `t`.
fn segment(pages: &[Stream], timed: bool, t: &mut Totals) {
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for p in pages {
        t.stored += p.payload.len() as u64;
        t.values += p.values.len() as u64;
        for &v in &p.values {
            *counts.entry(v).or_default() += 1;
        }
    }
    if counts.is_empty() {
        return;
    }
    let mut symbols: Vec<u32> = counts.keys().copied().collect();
    symbols.sort_unstable();
    let freq: Vec<u64> = symbols.iter().map(|s| counts[s]).collect();
    let total: u64 = freq.iter().sum();
    t.entropy_bits += freq
        .iter()
        .map(|&c| c as f64 * (total as f64 / c as f64).log2())
        .sum::<f64>();
    let limit = (64 - (symbols.len() as u64).leading_zeros() as u8).max(12);
    let mut lens = huffman_lengths(&freq);
    limit_lengths(&mut lens, &freq, limit);
    t.symbols += symbols.len() as u64;
    t.max_len = t.max_len.max(*lens.iter().max().expect("symbols"));
    t.model += model_bytes(&symbols);
    let words = canonical(&lens);
    let index: HashMap<u32, usize> = symbols.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    // An entry is the symbol above 5 bits of length: 4 bytes, so the
    // table of 2^L entries takes half the cache a pair would.
    let mut table = vec![0u32; 1 << limit];
    for i in 0..symbols.len() {
        let mut k = words[i] as usize;
        while k < table.len() {
            table[k] = symbols[i] << 5 | lens[i] as u32;
            k += 1 << lens[i];
        }
    }
    let mask = (1u64 << limit) - 1;
    let mut streams = Vec::with_capacity(pages.len());
    for p in pages {
        let (mut out, mut acc, mut bits) = (Vec::new(), 0u64, 0u32);
        for v in &p.values {
            let i = index[v];
            acc |= (words[i] as u64) << bits;
            bits += lens[i] as u32;
            while bits >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
        if bits > 0 {
            out.push(acc as u8);
        }
        t.huffman += out.len() as u64;
        // Slack for the decoder's 8-byte reads (not counted).
        out.extend_from_slice(&[0; 8]);
        streams.push(out);
    }
    rans_segment(pages, t);
    if !timed {
        return;
    }
    let mut out = Vec::new();
    // At least about 20 million values a side, so the thread's CPU clock
    // (updated at scheduler ticks) resolves them.
    let reps = (20_000_000 / pages.iter().map(|p| p.values.len()).sum::<usize>().max(1)).max(3);
    let t0 = cpu_ns();
    for _ in 0..reps {
        for p in pages {
            unpack(&p.payload, p.width, p.values.len(), &mut out);
            black_box(&out);
        }
    }
    let t1 = cpu_ns();
    for _ in 0..reps {
        for (p, bits) in pages.iter().zip(&streams) {
            out.clear();
            let mut at = 0usize;
            for _ in 0..p.values.len() {
                let word = u64::from_le_bytes(bits[at >> 3..(at >> 3) + 8].try_into().expect("8"));
                let entry = table[((word >> (at & 7)) & mask) as usize];
                out.push(entry >> 5);
                at += (entry & 31) as usize;
            }
            black_box(&out);
        }
    }
    let t2 = cpu_ns();
    for (p, bits) in pages.iter().zip(&streams).take(3) {
        let mut at = 0usize;
        for &v in &p.values {
            let word = u64::from_le_bytes(bits[at >> 3..(at >> 3) + 8].try_into().expect("8"));
            let entry = table[((word >> (at & 7)) & mask) as usize];
            assert_eq!(entry >> 5, v, "the Huffman stream decodes to the codes");
            at += (entry & 31) as usize;
        }
    }
    t.unpack_ns += (t1 - t0) / reps as u64;
    t.huffman_ns += (t2 - t1) / reps as u64;
}

/// The library's rANS stage ([`AnsModel`]) on one stream kind of one
/// segment: a model learned over the segment (stored once), each page's
/// stream coded alone; decode timed against unpacking the same pages in
/// the same loop order (at least about 20 million values a side).
fn rans_segment(pages: &[Stream], t: &mut Totals) {
    let all: Vec<u32> = pages
        .iter()
        .flat_map(|p| p.values.iter().copied())
        .collect();
    let Some(model) = AnsModel::learn(&all, LearnOptions::default()) else {
        return;
    };
    t.rans_model += model.encoded_len() as u64;
    let streams: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| {
            let mut s = Vec::new();
            model
                .encode(&p.values, &mut s)
                .expect("the escape covers every value");
            s
        })
        .collect();
    t.rans += streams.iter().map(|s| s.len() as u64).sum::<u64>();
    let mut out = Vec::new();
    for (p, s) in pages.iter().zip(&streams) {
        model
            .decode(s, p.values.len(), &mut out)
            .expect("valid stream");
        assert_eq!(out, p.values, "the rANS stream decodes to the values");
    }
    let reps = (20_000_000 / all.len().max(1)).max(3);
    let t0 = cpu_ns();
    for _ in 0..reps {
        for p in pages {
            unpack(&p.payload, p.width, p.values.len(), &mut out);
            black_box(&out);
        }
    }
    let t1 = cpu_ns();
    for _ in 0..reps {
        for (p, s) in pages.iter().zip(&streams) {
            model.decode(s, p.values.len(), &mut out).expect("valid");
            black_box(&out);
        }
    }
    let t2 = cpu_ns();
    t.rans_unpack_ns += (t1 - t0) / reps as u64;
    t.rans_ns += (t2 - t1) / reps as u64;
}

/// Writes every page's values of a stream kind (u32 little-endian) and
/// their stored payloads to `dir`, for an outside compressor to be
/// measured on the same streams.
fn dump(dir: &str, name: &str, what: &str, pages: &[Stream]) {
    use std::io::Write;
    let open = |suffix: &str| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(format!("{dir}/{name}.{what}.{suffix}"))
            .expect("a writable dump directory")
    };
    let (mut values, mut payloads) = (open("u32"), open("packed"));
    for p in pages {
        for v in &p.values {
            values.write_all(&v.to_le_bytes()).expect("written");
        }
        payloads.write_all(&p.payload).expect("written");
    }
}

/// The shared-model measurement over the dataset files `paths`.
pub fn run(paths: &[String]) {
    println!("| file | stream | bytes stored | Huffman streams | models | net | net / file | order-0 entropy + models | symbols / segment | max length | unpack ns/value | Huffman ns/value |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut rans_rows = Vec::new();
    for path in paths {
        let data = Dataset::open(path).expect("a dataset file");
        let file = std::fs::read(path).expect("readable");
        let f = footer::parse(&file);
        let mut segment_of = Vec::new();
        for (k, (blocks, _)) in f.segments.iter().enumerate() {
            segment_of.extend(std::iter::repeat_n(k, *blocks as usize));
        }
        segment_of.resize(data.n_blocks(), 0);
        let name = std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (mut codes_t, mut lens_t) = (Totals::default(), Totals::default());
        let (mut codes, mut lens) = (Vec::new(), Vec::new());
        let mut tree = DecodeTree::default();
        for b in 0..data.n_blocks() {
            let block = data.read_block(b).expect("valid block");
            for p in 0..block.n_pages() {
                let view = block.toc_view(p, &mut tree).expect("valid page");
                if view.batch.version() < 3 {
                    continue;
                }
                for array in packed_arrays_of(&view.batch) {
                    let mut values = Vec::new();
                    unpack(array.payload, array.width, array.count, &mut values);
                    let stream = Stream {
                        values,
                        width: array.width,
                        payload: array.payload.to_vec(),
                    };
                    match array.name {
                        "codes" => codes.push(stream),
                        _ => lens.push(stream),
                    }
                }
            }
            if b + 1 == data.n_blocks() || segment_of[b + 1] != segment_of[b] {
                if let Ok(dir) = std::env::var("ENTROPY_DUMP") {
                    dump(&dir, &name, "codes", &codes);
                    dump(&dir, &name, "lens", &lens);
                }
                segment(&codes, true, &mut codes_t);
                segment(&lens, false, &mut lens_t);
                codes.clear();
                lens.clear();
            }
        }
        let file_bytes = file.len() as f64;
        let segments = f
            .segments
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .count()
            .max(1) as f64;
        for (what, t) in [("codes", &codes_t), ("row lengths", &lens_t)] {
            if t.values == 0 {
                println!("| {name} | {what} | no version-3 page | | | | | | | | | |");
                continue;
            }
            let net = (t.huffman + t.model) as f64 - t.stored as f64;
            let ideal = t.entropy_bits / 8.0 + t.model as f64;
            let per_value = |ns: u64| {
                if ns == 0 {
                    String::new()
                } else {
                    format!("{:.2}", ns as f64 / t.values as f64)
                }
            };
            println!(
                "| {name} | {what} | {} | {} | {} | {:+.0} | {:+.1}% | {:.0} ({:+.1}%) | {:.0} | {} | {} | {} |",
                t.stored,
                t.huffman,
                t.model,
                net,
                100.0 * net / file_bytes,
                ideal,
                100.0 * (ideal - t.stored as f64) / file_bytes,
                t.symbols as f64 / segments,
                t.max_len,
                per_value(t.unpack_ns),
                per_value(t.huffman_ns),
            );
            let net = (t.rans + t.rans_model) as f64 - t.stored as f64;
            rans_rows.push(format!(
                "| {name} | {what} | {} | {} | {} | {:+.0} | {:+.1}% | {} | {} | {:.2} |",
                t.stored,
                t.rans,
                t.rans_model,
                net,
                100.0 * net / file_bytes,
                per_value(t.rans_unpack_ns),
                per_value(t.rans_ns),
                t.rans_ns as f64 / t.rans_unpack_ns.max(1) as f64,
            ));
        }
    }
    println!();
    println!(
        "rANS (the library's `codec::entropy`, precision 12, two states, a model per segment):"
    );
    println!();
    println!("| file | stream | bytes stored | rANS streams | models | net | net / file | unpack ns/value | rANS ns/value | rANS / unpack |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rans_rows {
        println!("{row}");
    }
}

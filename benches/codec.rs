//! Codec throughput on the shared datasets: TOC encode / decode against
//! gzip (level 6) and snappy over the dense little-endian `f64` bytes of
//! the same batches.
//!
//! Every dataset is loaded once (the two flight sets capped at 50,000
//! rows), shuffled with a fixed seed and cut into 250-row batches; a fixed
//! prefix of those batches (at most 40, and at most ~32 MiB of dense bytes,
//! so the 4,195-column nycflights13 gets a few) is the input of every
//! benchmark. Throughput is always the dense `f64` size of that input, so
//! every operation reads in comparable MB/s.
//!
//! Benchmarks, per dataset:
//! - `encode/toc/D`: a reused [`Encoder`], [`Level::Full`] default options.
//! - `decode/toc/D`: what a reader pays for untrusted bytes: validation
//!   ([`TocBatch::from_bytes_with_tree`], i.e. `from_bytes` keeping the
//!   tree it built) and decoding into a reused [`SparseBatch`].
//! - `decode_naive/toc/D`: the same through the short path,
//!   `TocBatch::from_bytes(..).decode()`, which builds the tree twice and
//!   allocates a fresh tree and batch each time.
//! - `compress/gzip/D`, `decompress/gzip/D`: flate2, gzip format, level 6.
//! - `compress/snappy/D`, `decompress/snappy/D`: `snap::raw`.
//!
//! `cargo bench --bench codec -- --test` runs each once.

use tocpile_bench_data as support;

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput,
};
use support::{gunzip, gzip, timed_batches};
use tocpile::{DecodeTree, EncodeOptions, Encoder, SparseBatch, TocBatch};

const SEED: u64 = 42;
const BATCH_ROWS: usize = 250;
const MAX_BATCHES: usize = 40;
/// Dense bytes of the benchmark input, at most (but at least 2 batches).
const DENSE_BUDGET: usize = 32 << 20;
/// Row cap for the two flight sets.
const FLIGHT_ROWS: usize = 50_000;

/// One dataset's benchmark input, every representation built up front.
struct Input {
    name: &'static str,
    batches: Vec<SparseBatch>,
    dense: Vec<Vec<u8>>,
    toc: Vec<Vec<u8>>,
    gzip: Vec<Vec<u8>>,
    snappy: Vec<Vec<u8>>,
    dense_total: u64,
}

/// The dense row-major little-endian `f64` bytes of `batch`.
fn load(name: &'static str) -> Input {
    let cap = match name {
        "flights3m" | "nycflights13" => FLIGHT_ROWS,
        _ => usize::MAX,
    };
    let (all, _) = support::load(name, cap);
    let all = support::shuffled(&all, SEED);
    let (batches, dense) = timed_batches(&all, BATCH_ROWS, DENSE_BUDGET, MAX_BATCHES);
    let mut encoder = Encoder::new(EncodeOptions::default());
    let toc: Vec<Vec<u8>> = batches
        .iter()
        .map(|b| encoder.encode(b).unwrap().into_bytes())
        .collect();
    let gzip: Vec<Vec<u8>> = dense.iter().map(|d| gzip(d, Vec::new())).collect();
    let mut snap_enc = snap::raw::Encoder::new();
    let snappy: Vec<Vec<u8>> = dense
        .iter()
        .map(|d| snap_enc.compress_vec(d).unwrap())
        .collect();
    // The inputs must round-trip, or the timings mean nothing.
    for (i, b) in batches.iter().enumerate() {
        assert_eq!(&TocBatch::from_bytes(&toc[i][..]).unwrap().decode(), b);
        assert_eq!(gunzip(&gzip[i], Vec::new()), dense[i]);
        assert_eq!(
            snap::raw::Decoder::new()
                .decompress_vec(&snappy[i])
                .unwrap(),
            dense[i]
        );
    }
    let dense_total = dense.iter().map(|d| d.len() as u64).sum();
    Input {
        name,
        batches,
        dense,
        toc,
        gzip,
        snappy,
        dense_total,
    }
}

/// A group with the short settings every benchmark here uses. Flat
/// sampling: one iteration encodes a whole input (up to ~32 MiB dense).
fn group_for<'a>(c: &'a mut Criterion, op: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(op);
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sampling_mode(SamplingMode::Flat);
    g
}

fn bench_codec(c: &mut Criterion) {
    let inputs: Vec<Input> = support::available_datasets()
        .into_iter()
        .map(load)
        .collect();

    let mut g = group_for(c, "encode");
    for inp in &inputs {
        g.throughput(Throughput::Bytes(inp.dense_total));
        let mut encoder = Encoder::new(EncodeOptions::default());
        g.bench_function(format!("toc/{}", inp.name), |b| {
            b.iter(|| {
                for batch in &inp.batches {
                    black_box(encoder.encode(black_box(batch)).unwrap());
                }
            })
        });
    }
    g.finish();

    let mut g = group_for(c, "decode");
    for inp in &inputs {
        g.throughput(Throughput::Bytes(inp.dense_total));
        let mut tree = DecodeTree::default();
        let mut out = SparseBatch::default();
        g.bench_function(format!("toc/{}", inp.name), |b| {
            b.iter(|| {
                for bytes in &inp.toc {
                    let batch =
                        TocBatch::from_bytes_with_tree(black_box(&bytes[..]), &mut tree).unwrap();
                    black_box(&batch);
                    tree.decode_into(&mut out);
                    black_box(&out);
                }
            })
        });
    }
    g.finish();

    let mut g = group_for(c, "decode_naive");
    for inp in &inputs {
        g.throughput(Throughput::Bytes(inp.dense_total));
        g.bench_function(format!("toc/{}", inp.name), |b| {
            b.iter(|| {
                for bytes in &inp.toc {
                    let batch = TocBatch::from_bytes(black_box(&bytes[..])).unwrap();
                    black_box(batch.decode());
                }
            })
        });
    }
    g.finish();

    let mut g = group_for(c, "compress");
    for inp in &inputs {
        g.throughput(Throughput::Bytes(inp.dense_total));
        let mut buf = Vec::new();
        g.bench_function(format!("gzip/{}", inp.name), |b| {
            b.iter(|| {
                for d in &inp.dense {
                    buf.clear();
                    buf = gzip(black_box(d), std::mem::take(&mut buf));
                    black_box(&buf);
                }
            })
        });
        let mut enc = snap::raw::Encoder::new();
        let max = inp.dense.iter().map(|d| d.len()).max().unwrap_or(0);
        let mut buf = vec![0u8; snap::raw::max_compress_len(max)];
        g.bench_function(format!("snappy/{}", inp.name), |b| {
            b.iter(|| {
                for d in &inp.dense {
                    black_box(enc.compress(black_box(d), &mut buf).unwrap());
                }
            })
        });
    }
    g.finish();

    let mut g = group_for(c, "decompress");
    for inp in &inputs {
        g.throughput(Throughput::Bytes(inp.dense_total));
        let max = inp.dense.iter().map(|d| d.len()).max().unwrap_or(0);
        let mut buf = Vec::with_capacity(max);
        g.bench_function(format!("gzip/{}", inp.name), |b| {
            b.iter(|| {
                for z in &inp.gzip {
                    buf = gunzip(black_box(z), std::mem::take(&mut buf));
                    black_box(&buf);
                }
            })
        });
        let mut dec = snap::raw::Decoder::new();
        let mut buf = vec![0u8; max];
        g.bench_function(format!("snappy/{}", inp.name), |b| {
            b.iter(|| {
                for s in &inp.snappy {
                    black_box(dec.decompress(black_box(s), &mut buf).unwrap());
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_codec);
criterion_main!(benches);

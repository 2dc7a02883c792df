//! Compression ratios and codec speed of TOC against CSR, snappy and gzip
//! on the shared datasets (TOC paper, Figures 5 and 6).
//!
//! ```text
//! cargo run --release --example ratio [-- [--json] [--rows N] [--datasets a,b] [--reps N]]
//! ```
//!
//! Per dataset: rows shuffled once with a fixed seed, cut into 250-row and
//! 50-row batches; ratio = dense `f64` size / encoded size, both summed
//! over all batches. Formats:
//! - CSR: `u32` column ids, `f64` values, `u32` row offsets per batch.
//! - CVI bits: CVI with bit packing (a flat TOC batch with plain packed
//!   columns, value ids and an `f64` dictionary), the size `TOC_FULL`
//!   never exceeds.
//! - snappy (`snap::raw`) and gzip (flate2, level 6) over the dense
//!   little-endian `f64` bytes of each batch.
//! - TOC_SPARSE, TOC_LOGICAL: the ablation levels.
//! - TOC paper: TOC_FULL with the paper's layout (byte packing, `f64`
//!   dictionary).
//! - TOC bits+f64: TOC_FULL with bit packing and an `f64` dictionary.
//! - TOC_FULL v1: bit packing and integer dictionary in the fixed layout of
//!   format version 1 (`Adaptive::NONE`).
//! - TOC_FULL: the default (bit packing; per batch the smaller of the tree
//!   and flat rows, gap-coded columns, the smallest dictionary form).
//!
//! Every TOC encoding is validated and decoded back and compared with its
//! batch. Speeds are measured on a fixed prefix of the 250-row batches (at
//! most 40 batches and ~32 MiB of dense bytes, as in `benches/codec.rs`):
//! after a warm-up, each of `--reps` (default 11) repetitions times every
//! operation in turn, each long enough (>= 20 ms) to be measured with
//! `Instant`. Speeds are medians over repetitions; time ratios are medians
//! of the per-repetition ratios (robust to load from other processes, which
//! hits the operations of one repetition alike). Speeds are in MB/s of
//! dense `f64` bytes, so all operations are comparable. "TOC decode" is
//! what a reader of untrusted bytes pays: `from_bytes_with_tree` (the
//! validating `from_bytes`, keeping the tree) plus `decode_into` a reused
//! batch, on the default encoding (bit packing, "Bits"); "Bytes" is the
//! same with byte packing (integer dictionary kept, so only the packing
//! differs); "paper" is `EncodeOptions::paper()`; "naive" is
//! `TocBatch::from_bytes(..).decode()` on the default encoding.
//!
//! `--datasets` also takes the mixed one-hot and decimal sets
//! (`nycflights13_cents` and the others of `support::DECIMAL_DATASETS`:
//! numeric columns divided by 100).
//!
//! All rows of every dataset are used, except nycflights13 and flights3m,
//! capped at 300,000 rows; `--rows N` caps every dataset at N rows.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use support::{dense_bytes, gunzip, gzip};
use tocpile::{
    Adaptive, DecodeTree, EncodeOptions, Encoder, Level, Packing, SparseBatch, TocBatch,
};

const SEED: u64 = 42;
const BATCH_SIZES: [usize; 2] = [250, 50];
const FLIGHT_ROWS: usize = 300_000;
const TIMED_BATCH_ROWS: usize = 250;
const TIMED_MAX_BATCHES: usize = 40;
const TIMED_DENSE_BUDGET: usize = 32 << 20;
const MIN_REP: Duration = Duration::from_millis(20);

/// The formats whose sizes are measured, in table order.
const FORMATS: [&str; 10] = [
    "CSR",
    "CVI bits",
    "snappy",
    "gzip",
    "TOC_SPARSE",
    "TOC_LOGICAL",
    "TOC paper",
    "TOC bits+f64",
    "TOC_FULL v1",
    "TOC_FULL",
];
const JSON_FORMATS: [&str; 10] = [
    "csr",
    "cvi_bits",
    "snappy",
    "gzip",
    "toc_sparse",
    "toc_logical",
    "toc_paper",
    "toc_bits_f64dict",
    "toc_full_v1",
    "toc_full",
];

/// The TOC configurations, in the order of `FORMATS[3..]`.
fn toc_options() -> [EncodeOptions; 6] {
    [
        EncodeOptions::level(Level::Sparse),
        EncodeOptions::level(Level::Logical),
        EncodeOptions::paper(),
        EncodeOptions {
            int_dictionary: false,
            ..EncodeOptions::default()
        },
        EncodeOptions {
            adaptive: Adaptive::NONE,
            ..EncodeOptions::default()
        },
        EncodeOptions::default(),
    ]
}

/// The timed operations, in table order: (JSON key, table header).
const OPS: [(&str, &str); 9] = [
    ("toc_encode", "TOC enc"),
    ("toc_decode", "TOC dec Bits"),
    ("toc_decode_naive", "TOC dec naive"),
    ("toc_decode_bytes", "TOC dec Bytes"),
    ("toc_decode_paper", "TOC dec paper"),
    ("gzip_compress", "gzip comp"),
    ("gzip_decompress", "gzip decomp"),
    ("snappy_compress", "snappy comp"),
    ("snappy_decompress", "snappy decomp"),
];

struct Args {
    json: bool,
    rows: Option<usize>,
    datasets: Vec<String>,
    reps: usize,
}

fn usage() -> ! {
    eprintln!(
        "usage: ratio [--json] [--rows N] [--datasets a,b] [--reps N]\n  datasets: {}",
        support::DATASETS
            .iter()
            .chain(support::DECIMAL_DATASETS)
            .copied()
            .collect::<Vec<_>>()
            .join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        json: false,
        rows: None,
        datasets: support::DATASETS.iter().map(|s| s.to_string()).collect(),
        reps: 11,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => args.json = true,
            "--rows" => {
                args.rows = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| usage()),
                )
            }
            "--reps" => {
                args.reps = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&r| r > 0)
                    .unwrap_or_else(|| usage())
            }
            "--datasets" => {
                let list = it.next().unwrap_or_else(|| usage());
                args.datasets = list.split(',').map(str::to_string).collect();
                for d in &args.datasets {
                    let known = support::DATASETS.iter().chain(support::DECIMAL_DATASETS);
                    if !known.copied().any(|k| k == d.as_str()) {
                        eprintln!("unknown dataset {d}");
                        usage();
                    }
                }
            }
            "-h" | "--help" => usage(),
            _ => {
                eprintln!("unknown argument {a}");
                usage()
            }
        }
    }
    args
}

/// Sizes summed over all batches of one batch size.
struct Sizes {
    batch_rows: usize,
    n_batches: usize,
    dense: u64,
    encoded: [u64; 10],
}

struct Report {
    name: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    sizes: Vec<Sizes>,
    timed_batches: usize,
    timed_dense: u64,
    /// Seconds per pass over the timed batches, per entry of `OPS`.
    secs: [f64; 9],
    /// Median over repetitions of the per-repetition time ratios, per
    /// entry of `TIME_RATIOS`.
    time_ratios: [f64; 4],
    elapsed: f64,
}

/// A timed operation: one pass over the timed batches.
type Op<'a> = Box<dyn FnMut() + 'a>;

/// Seconds per call of each op, per repetition. Each op is warmed up and
/// calibrated to enough calls to last at least [`MIN_REP`]; then each
/// repetition times every op in turn, so that load from other processes
/// hits all ops alike and per-repetition ratios stay meaningful.
fn time_ops(ops: &mut [Op<'_>], reps: usize) -> Vec<Vec<f64>> {
    let calls: Vec<u32> = ops
        .iter_mut()
        .map(|f| {
            f();
            let t = Instant::now();
            f();
            let once = t.elapsed().max(Duration::from_nanos(1));
            (MIN_REP.as_secs_f64() / once.as_secs_f64()).ceil().max(1.0) as u32
        })
        .collect();
    let mut samples = vec![Vec::with_capacity(reps); ops.len()];
    for _ in 0..reps {
        for (k, f) in ops.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..calls[k] {
                f();
            }
            samples[k].push(t.elapsed().as_secs_f64() / calls[k] as f64);
        }
    }
    samples
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A decode op: validation keeping the tree, then decoding into a reused
/// batch.
fn decode_op(blobs: &[Vec<u8>]) -> Op<'_> {
    let mut tree = DecodeTree::default();
    let mut out = SparseBatch::default();
    Box::new(move || {
        for bytes in blobs {
            let b = TocBatch::from_bytes_with_tree(black_box(&bytes[..]), &mut tree).unwrap();
            black_box(&b);
            tree.decode_into(&mut out);
            black_box(&out);
        }
    })
}

/// Sizes of every format over all batches of `batch_rows` rows, checking
/// every TOC encoding round-trips.
fn measure_sizes(all: &SparseBatch, batch_rows: usize) -> Sizes {
    let mut encoders = toc_options().map(Encoder::new);
    let mut snap_enc = snap::raw::Encoder::new();
    let mut dense = Vec::new();
    let mut gz = Vec::new();
    let mut snapped = Vec::new();
    let mut tree = DecodeTree::default();
    let mut decoded = SparseBatch::default();
    let mut sizes = Sizes {
        batch_rows,
        n_batches: 0,
        dense: 0,
        encoded: [0; 10],
    };
    for batch in support::batches(all, batch_rows) {
        sizes.n_batches += 1;
        dense_bytes(&batch, &mut dense);
        sizes.dense += dense.len() as u64;
        sizes.encoded[0] += 12 * batch.nnz() as u64 + 4 * (batch.n_rows() as u64 + 1);
        sizes.encoded[1] += support::cvi_bit_packed_len(&batch);
        snapped.resize(snap::raw::max_compress_len(dense.len()), 0);
        sizes.encoded[2] += snap_enc.compress(&dense, &mut snapped).unwrap() as u64;
        gz = gzip(&dense, gz);
        sizes.encoded[3] += gz.len() as u64;
        for (k, enc) in encoders.iter_mut().enumerate() {
            let toc = enc.encode(&batch).unwrap();
            sizes.encoded[4 + k] += toc.encoded_len() as u64;
            let loaded = TocBatch::from_bytes_with_tree(toc.as_bytes(), &mut tree)
                .unwrap_or_else(|e| panic!("{:?}: encoding rejected: {e}", enc.options()));
            assert_eq!(loaded.level(), enc.options().level);
            tree.decode_into(&mut decoded);
            assert!(
                decoded == batch,
                "{:?}: decoded batch differs",
                enc.options()
            );
        }
    }
    sizes
}

/// Speeds on the first batches of 250 rows: seconds per pass, per `OPS`.
fn measure_speed(all: &SparseBatch, reps: usize) -> (usize, u64, [f64; 9], [f64; 4]) {
    let (batches, dense) =
        support::timed_batches(all, TIMED_BATCH_ROWS, TIMED_DENSE_BUDGET, TIMED_MAX_BATCHES);
    let dense_total: u64 = dense.iter().map(|d| d.len() as u64).sum();
    let max_dense = dense.iter().map(Vec::len).max().unwrap_or(0);
    let encode_all = |options: EncodeOptions| -> Vec<Vec<u8>> {
        let mut enc = Encoder::new(options);
        batches
            .iter()
            .map(|b| enc.encode(b).unwrap().into_bytes())
            .collect()
    };
    let toc_bits = encode_all(EncodeOptions::default());
    let toc_bytes = encode_all(EncodeOptions {
        packing: Packing::Bytes,
        ..EncodeOptions::default()
    });
    let toc_paper = encode_all(EncodeOptions::paper());
    let gz: Vec<Vec<u8>> = dense.iter().map(|d| gzip(d, Vec::new())).collect();
    let mut snap_enc = snap::raw::Encoder::new();
    let snapped: Vec<Vec<u8>> = dense
        .iter()
        .map(|d| snap_enc.compress_vec(d).unwrap())
        .collect();

    let mut ops: Vec<Op<'_>> = Vec::with_capacity(OPS.len());
    let mut encoder = Encoder::new(EncodeOptions::default());
    let batches = &batches;
    ops.push(Box::new(move || {
        for b in batches {
            black_box(encoder.encode(black_box(b)).unwrap());
        }
    }));
    ops.push(decode_op(&toc_bits));
    let toc = &toc_bits;
    ops.push(Box::new(move || {
        for bytes in toc {
            black_box(
                TocBatch::from_bytes(black_box(&bytes[..]))
                    .unwrap()
                    .decode(),
            );
        }
    }));
    ops.push(decode_op(&toc_bytes));
    ops.push(decode_op(&toc_paper));
    let dense = &dense;
    let mut buf = Vec::with_capacity(max_dense);
    ops.push(Box::new(move || {
        for d in dense {
            buf = gzip(black_box(d), std::mem::take(&mut buf));
            black_box(&buf);
        }
    }));
    let gz = &gz;
    let mut buf = Vec::with_capacity(max_dense);
    ops.push(Box::new(move || {
        for z in gz {
            buf = gunzip(black_box(z), std::mem::take(&mut buf));
            black_box(&buf);
        }
    }));
    let mut buf = vec![0u8; snap::raw::max_compress_len(max_dense)];
    ops.push(Box::new(move || {
        for d in dense {
            black_box(snap_enc.compress(black_box(d), &mut buf).unwrap());
        }
    }));
    let snapped = &snapped;
    let mut snap_dec = snap::raw::Decoder::new();
    let mut buf = vec![0u8; max_dense];
    ops.push(Box::new(move || {
        for s in snapped {
            black_box(snap_dec.decompress(black_box(s), &mut buf).unwrap());
        }
    }));
    debug_assert_eq!(ops.len(), OPS.len());
    let samples = time_ops(&mut ops, reps);
    let secs: [f64; 9] = std::array::from_fn(|k| median(samples[k].clone()));
    let ratios: [f64; 4] = std::array::from_fn(|i| {
        let (_, _, a, b) = TIME_RATIOS[i];
        median(
            samples[a]
                .iter()
                .zip(&samples[b])
                .map(|(x, y)| x / y)
                .collect(),
        )
    });
    (batches.len(), dense_total, secs, ratios)
}

fn measure(name: &str, args: &Args) -> Report {
    let start = Instant::now();
    let cap = args.rows.unwrap_or(match name {
        "flights3m" | "nycflights13" | "flights3m_cents" | "nycflights13_cents" => FLIGHT_ROWS,
        _ => usize::MAX,
    });
    let (raw, _) = support::load(name, cap);
    let all = support::shuffled(&raw, SEED);
    drop(raw);
    let sizes = BATCH_SIZES
        .iter()
        .map(|&r| measure_sizes(&all, r))
        .collect();
    let (timed_batches, timed_dense, secs, time_ratios) = measure_speed(&all, args.reps);
    Report {
        name: name.to_string(),
        rows: all.n_rows(),
        cols: all.n_cols(),
        nnz: all.nnz(),
        sizes,
        timed_batches,
        timed_dense,
        secs,
        time_ratios,
        elapsed: start.elapsed().as_secs_f64(),
    }
}

fn ratio(dense: u64, encoded: u64) -> f64 {
    dense as f64 / encoded.max(1) as f64
}

fn mb_per_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

/// Throughput ratios reported: (JSON key, header, numerator op, denominator
/// op) as time ratios numerator / denominator.
const TIME_RATIOS: [(&str, &str, usize, usize); 4] = [
    ("toc_encode_over_gzip_compress", "TOC enc / gzip comp", 0, 5),
    (
        "toc_decode_over_snappy_decompress",
        "TOC dec Bits / snappy decomp",
        1,
        8,
    ),
    ("toc_decode_bytes_over_bits", "TOC dec Bytes / Bits", 3, 1),
    (
        "toc_decode_naive_over_decode",
        "TOC dec naive / dec Bits",
        2,
        1,
    ),
];

fn markdown(reports: &[Report], total: f64) -> String {
    let mut s = String::new();
    for (bi, &rows) in BATCH_SIZES.iter().enumerate() {
        let _ = writeln!(
            s,
            "\n### Compression ratio, {rows}-row batches (dense f64 / encoded)\n"
        );
        let _ = writeln!(
            s,
            "| dataset | rows x cols | batches | {} |",
            FORMATS.join(" | ")
        );
        let _ = writeln!(s, "|---|---|---|{}", "---:|".repeat(FORMATS.len()));
        for r in reports {
            let z = &r.sizes[bi];
            let cells: Vec<String> = z
                .encoded
                .iter()
                .map(|&e| format!("{:.1}", ratio(z.dense, e)))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} x {} | {} | {} |",
                r.name,
                r.rows,
                r.cols,
                z.n_batches,
                cells.join(" | ")
            );
        }
    }
    let _ = writeln!(
        s,
        "\n### Speed, MB/s of dense f64 bytes (first {TIMED_BATCH_ROWS}-row batches, median)\n"
    );
    let headers: Vec<&str> = OPS.iter().map(|o| o.1).collect();
    let _ = writeln!(s, "| dataset | batches | {} |", headers.join(" | "));
    let _ = writeln!(s, "|---|---:|{}", "---:|".repeat(OPS.len()));
    for r in reports {
        let cells: Vec<String> = r
            .secs
            .iter()
            .map(|&t| format!("{:.0}", mb_per_s(r.timed_dense, t)))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            r.name,
            r.timed_batches,
            cells.join(" | ")
        );
    }
    let _ = writeln!(
        s,
        "\n### Time ratios, median of per-repetition ratios (< 1: the first is faster)\n"
    );
    let headers: Vec<&str> = TIME_RATIOS.iter().map(|t| t.1).collect();
    let _ = writeln!(s, "| dataset | {} |", headers.join(" | "));
    let _ = writeln!(s, "|---|{}", "---:|".repeat(TIME_RATIOS.len()));
    for r in reports {
        let cells: Vec<String> = r.time_ratios.iter().map(|t| format!("{t:.3}")).collect();
        let _ = writeln!(s, "| {} | {} |", r.name, cells.join(" | "));
    }
    let _ = writeln!(s);
    for r in reports {
        let _ = writeln!(
            s,
            "{}: nnz {}, measured in {:.1} s",
            r.name, r.nnz, r.elapsed
        );
    }
    let _ = writeln!(s, "total {total:.1} s");
    s
}

fn json(reports: &[Report], total: f64, args: &Args) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{{\"seed\":{SEED},\"reps\":{},\"rows_cap\":{},\"total_secs\":{total:.3},\"datasets\":[",
        args.reps,
        args.rows.map_or("null".to_string(), |r| r.to_string())
    );
    for (i, r) in reports.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"name\":\"{}\",\"rows\":{},\"cols\":{},\"nnz\":{},\"secs\":{:.3},\"batches\":[",
            r.name, r.rows, r.cols, r.nnz, r.elapsed
        );
        for (j, z) in r.sizes.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let _ = write!(
                s,
                "{{\"batch_rows\":{},\"n_batches\":{},\"dense_bytes\":{},\"encoded_bytes\":{{",
                z.batch_rows, z.n_batches, z.dense
            );
            let enc: Vec<String> = JSON_FORMATS
                .iter()
                .zip(z.encoded)
                .map(|(k, e)| format!("\"{k}\":{e}"))
                .collect();
            let rat: Vec<String> = JSON_FORMATS
                .iter()
                .zip(z.encoded)
                .map(|(k, e)| format!("\"{k}\":{:.4}", ratio(z.dense, e)))
                .collect();
            let _ = write!(s, "{}}},\"ratio\":{{{}}}}}", enc.join(","), rat.join(","));
        }
        let _ = write!(
            s,
            "],\"speed\":{{\"batch_rows\":{TIMED_BATCH_ROWS},\"n_batches\":{},\"dense_bytes\":{},\"secs\":{{",
            r.timed_batches, r.timed_dense
        );
        let secs: Vec<String> = OPS
            .iter()
            .zip(r.secs)
            .map(|((k, _), t)| format!("\"{k}\":{t:.9}"))
            .collect();
        let mbs: Vec<String> = OPS
            .iter()
            .zip(r.secs)
            .map(|((k, _), t)| format!("\"{k}\":{:.1}", mb_per_s(r.timed_dense, t)))
            .collect();
        let rats: Vec<String> = TIME_RATIOS
            .iter()
            .zip(r.time_ratios)
            .map(|(&(k, _, _, _), t)| format!("\"{k}\":{t:.4}"))
            .collect();
        let _ = write!(
            s,
            "{}}},\"mb_per_s\":{{{}}},\"time_ratios\":{{{}}}}}}}",
            secs.join(","),
            mbs.join(","),
            rats.join(",")
        );
    }
    s.push_str("]}");
    s
}

fn main() {
    let args = parse_args();
    let start = Instant::now();
    let mut reports = Vec::new();
    for name in &args.datasets {
        let r = measure(name, &args);
        eprintln!("{name}: done in {:.1} s", r.elapsed);
        reports.push(r);
    }
    let total = start.elapsed().as_secs_f64();
    if args.json {
        println!("{}", json(&reports, total, &args));
    } else {
        print!("{}", markdown(&reports, total));
    }
}

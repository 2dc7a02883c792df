//! Sizes of TOC's layout variants and the codec's speed against gzip and
//! snappy (TOC paper, Figures 5 and 6; README's ratio table), for `tocpile
//! bench codec`.
//!
//! Sizes: rows cut into consecutive batches of each batch size; a
//! format's size is summed over all batches. Formats ([`FORMATS`]):
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
//! Every TOC encoding is validated, decoded back and compared with its
//! batch. Speeds are measured on a fixed prefix of the 250-row batches (at
//! most 40 batches and ~32 MiB of dense bytes: `benches/codec.rs` times
//! the same input through the same `tocpile_bench_data::timed_batches`):
//! after a warm-up, each of `reps` repetitions times every operation in
//! turn, each long enough (>= 20 ms) to be measured with `Instant`. Speeds
//! are medians over repetitions; time ratios are medians of the
//! per-repetition ratios (robust to load from other processes, which hits
//! the operations of one repetition alike). "TOC decode" is what a reader
//! of untrusted bytes pays: `from_bytes_with_tree` (the validating
//! `from_bytes`, keeping the tree) plus `decode_into` a reused batch, on
//! the default encoding ("Bits"); "Bytes" is the same with byte packing
//! (integer dictionary kept, so only the packing differs); "paper" is
//! `EncodeOptions::paper()`; "naive" is `TocBatch::from_bytes(..).decode()`
//! on the default encoding.

use std::hint::black_box;
use std::time::{Duration, Instant};

use tocpile_bench_data::{
    batches, cvi_bit_packed_len, dense_bytes, gunzip, gzip, median, timed_batches,
};

use tocpile::{
    Adaptive, DecodeTree, EncodeOptions, Encoder, Level, Packing, SparseBatch, TocBatch,
};

/// Rows per batch of the timed prefix.
pub const TIMED_BATCH_ROWS: usize = 250;
const TIMED_MAX_BATCHES: usize = 40;
const TIMED_DENSE_BUDGET: usize = 32 << 20;
const MIN_REP: Duration = Duration::from_millis(20);

/// The formats whose sizes are measured, in table order: (JSON key, table
/// header).
pub const FORMATS: [(&str, &str); 10] = [
    ("csr", "CSR"),
    ("cvi_bits", "CVI bits"),
    ("snappy", "snappy"),
    ("gzip", "gzip"),
    ("toc_sparse", "TOC_SPARSE"),
    ("toc_logical", "TOC_LOGICAL"),
    ("toc_paper", "TOC paper"),
    ("toc_bits_f64dict", "TOC bits+f64"),
    ("toc_full_v1", "TOC_FULL v1"),
    ("toc_full", "TOC_FULL"),
];

/// The TOC configurations, in the order of `FORMATS[4..]`.
fn toc_options() -> [EncodeOptions; 6] {
    [
        EncodeOptions::level(Level::Sparse),
        EncodeOptions::level(Level::Logical),
        EncodeOptions::paper(),
        EncodeOptions::default().with_int_dictionary(false),
        EncodeOptions::default().with_adaptive(Adaptive::NONE),
        EncodeOptions::default(),
    ]
}

/// The timed operations, in table order: (JSON key, table header).
pub const OPS: [(&str, &str); 9] = [
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

/// Time ratios reported: (JSON key, header, numerator op, denominator op),
/// indices into [`OPS`].
pub const TIME_RATIOS: [(&str, &str, usize, usize); 4] = [
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

/// Sizes summed over all batches of one batch size.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Rows per batch.
    pub batch_rows: usize,
    /// Batches.
    pub n_batches: usize,
    /// Dense `f64` bytes of all batches.
    pub dense: u64,
    /// Encoded bytes per entry of [`FORMATS`].
    pub encoded: [u64; 10],
}

/// Codec speed on the timed prefix.
#[derive(Debug, Clone)]
pub struct Speed {
    /// Batches timed.
    pub n_batches: usize,
    /// Their dense `f64` bytes.
    pub dense: u64,
    /// Seconds per pass over the timed batches, per entry of [`OPS`].
    pub secs: [f64; 9],
    /// Median over repetitions of the per-repetition time ratios, per
    /// entry of [`TIME_RATIOS`].
    pub time_ratios: [f64; 4],
}

/// Dense `f64` size over encoded size.
pub fn ratio(dense: u64, encoded: u64) -> f64 {
    dense as f64 / encoded.max(1) as f64
}

/// Megabytes (10^6) of `bytes` per second.
pub fn mb_per_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

/// Sizes of every format over all batches of `batch_rows` rows, checking
/// that every TOC encoding validates and decodes back to its batch.
///
/// # Errors
/// A message naming the encoding that failed (a tocpile bug).
pub fn sizes(all: &SparseBatch, batch_rows: usize) -> Result<Sizes, String> {
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
    let bug = |options: &EncodeOptions, what: String| format!("{options:?}: {what}");
    for batch in batches(all, batch_rows) {
        sizes.n_batches += 1;
        dense_bytes(&batch, &mut dense);
        sizes.dense += dense.len() as u64;
        sizes.encoded[0] += 12 * batch.nnz() as u64 + 4 * (batch.n_rows() as u64 + 1);
        sizes.encoded[1] += cvi_bit_packed_len(&batch);
        snapped.resize(snap::raw::max_compress_len(dense.len()), 0);
        sizes.encoded[2] += snap_enc
            .compress(&dense, &mut snapped)
            .map_err(|e| e.to_string())? as u64;
        gz = gzip(&dense, gz);
        sizes.encoded[3] += gz.len() as u64;
        for (k, enc) in encoders.iter_mut().enumerate() {
            let options = enc.options();
            let toc = enc
                .encode(&batch)
                .map_err(|e| bug(&options, e.to_string()))?;
            sizes.encoded[4 + k] += toc.encoded_len() as u64;
            let loaded = TocBatch::from_bytes_with_tree(toc.as_bytes(), &mut tree)
                .map_err(|e| bug(&options, format!("encoding rejected: {e}")))?;
            if loaded.level() != options.level {
                return Err(bug(&options, "read back at another level".into()));
            }
            tree.decode_into(&mut decoded);
            if decoded != batch {
                return Err(bug(&options, "decoded batch differs".into()));
            }
        }
    }
    Ok(sizes)
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
    for _ in 0..reps.max(1) {
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

/// A decode op: validation keeping the tree, then decoding into a reused
/// batch. The bytes were encoded (and checked) just before.
fn decode_op(blobs: &[Vec<u8>]) -> Op<'_> {
    let mut tree = DecodeTree::default();
    let mut out = SparseBatch::default();
    Box::new(move || {
        for bytes in blobs {
            let b = TocBatch::from_bytes_with_tree(black_box(&bytes[..]), &mut tree)
                .expect("bytes just encoded");
            black_box(&b);
            tree.decode_into(&mut out);
            black_box(&out);
        }
    })
}

/// Speeds on the first batches of [`TIMED_BATCH_ROWS`] rows.
///
/// # Errors
/// A message if a batch cannot be encoded or compressed.
pub fn speed(all: &SparseBatch, reps: usize) -> Result<Speed, String> {
    let (batches, dense) =
        timed_batches(all, TIMED_BATCH_ROWS, TIMED_DENSE_BUDGET, TIMED_MAX_BATCHES);
    let dense_total: u64 = dense.iter().map(|d| d.len() as u64).sum();
    let max_dense = dense.iter().map(Vec::len).max().unwrap_or(0);
    let encode_all = |options: EncodeOptions| -> Result<Vec<Vec<u8>>, String> {
        let mut enc = Encoder::new(options);
        batches
            .iter()
            .map(|b| Ok(enc.encode(b).map_err(|e| e.to_string())?.into_bytes()))
            .collect()
    };
    let toc_bits = encode_all(EncodeOptions::default())?;
    let toc_bytes = encode_all(EncodeOptions::default().with_packing(Packing::Bytes))?;
    let toc_paper = encode_all(EncodeOptions::paper())?;
    let gz: Vec<Vec<u8>> = dense.iter().map(|d| gzip(d, Vec::new())).collect();
    let mut snap_enc = snap::raw::Encoder::new();
    let snapped = dense
        .iter()
        .map(|d| snap_enc.compress_vec(d).map_err(|e| e.to_string()))
        .collect::<Result<Vec<Vec<u8>>, String>>()?;

    let mut ops: Vec<Op<'_>> = Vec::with_capacity(OPS.len());
    let mut encoder = Encoder::new(EncodeOptions::default());
    let batches = &batches;
    ops.push(Box::new(move || {
        for b in batches {
            black_box(encoder.encode(black_box(b)).expect("encoded before"));
        }
    }));
    ops.push(decode_op(&toc_bits));
    let toc = &toc_bits;
    ops.push(Box::new(move || {
        for bytes in toc {
            black_box(
                TocBatch::from_bytes(black_box(&bytes[..]))
                    .expect("bytes just encoded")
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
            black_box(
                snap_enc
                    .compress(black_box(d), &mut buf)
                    .expect("compressed before"),
            );
        }
    }));
    let snapped = &snapped;
    let mut snap_dec = snap::raw::Decoder::new();
    let mut buf = vec![0u8; max_dense];
    ops.push(Box::new(move || {
        for s in snapped {
            black_box(
                snap_dec
                    .decompress(black_box(s), &mut buf)
                    .expect("compressed before"),
            );
        }
    }));
    debug_assert_eq!(ops.len(), OPS.len());
    let samples = time_ops(&mut ops, reps);
    let time_ratios: [f64; 4] = std::array::from_fn(|i| {
        let (_, _, a, b) = TIME_RATIOS[i];
        median(
            samples[a]
                .iter()
                .zip(&samples[b])
                .map(|(x, y)| x / y)
                .collect(),
        )
    });
    let secs: [f64; 9] = std::array::from_fn(|k| median(samples[k].clone()));
    Ok(Speed {
        n_batches: batches.len(),
        dense: dense_total,
        secs,
        time_ratios,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> SparseBatch {
        let mut b = SparseBatch::with_cols(6).unwrap();
        for i in 0..600u32 {
            b.push_row(&[0, 1 + i % 4, 5], &[1.0, f64::from(i % 7) + 0.25, 3.5])
                .unwrap();
        }
        b
    }

    #[test]
    fn sizes_sum_over_batches_and_toc_never_exceeds_cvi_bits() {
        let all = rows();
        let s = sizes(&all, 250).unwrap();
        assert_eq!(s.n_batches, 3);
        assert_eq!(s.dense, 600 * 6 * 8);
        assert_eq!(s.encoded[0], 12 * 1800 + 4 * (251 + 251 + 101));
        // TOC_FULL (last) is never larger than CVI with bit packing.
        assert!(s.encoded[9] <= s.encoded[1], "{:?}", s.encoded);
        assert!(s.encoded.iter().all(|&e| e > 0));
    }

    #[test]
    fn speed_times_every_op() {
        let sp = speed(&rows(), 1).unwrap();
        assert_eq!(sp.n_batches, 3);
        assert!(sp.secs.iter().all(|&t| t > 0.0 && t.is_finite()));
        assert!(sp.time_ratios.iter().all(|&r| r > 0.0 && r.is_finite()));
    }
}

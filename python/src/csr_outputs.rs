//! Scores of CSR rows for a model of 2 to 16 outputs (softmax) on x86-64
//! processors with AVX-512: each entry adds its value times its column's
//! row of `W`, all the outputs at once in one or two vector registers.
//!
//! Why: the checked loop adds an entry's outputs one by one with a bounds
//! check per entry, 0.87-0.98 times scipy's `X @ W + b` for 3 and 10
//! classes (400,000 x 100 rows of density 0.1, one thread). Here `W` is
//! copied once with each row padded to 8 or 16 outputs and one more row
//! of NaN; an entry's column is clamped to that row (`min`, one
//! instruction), so that no read leaves the copy whatever the indices and
//! a bad index makes its row's scores NaN, which the caller's checked
//! loop then names. The offsets are checked as in [`crate::csr_lanes`].

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::mem::MaybeUninit;

use crate::csr_lanes::{self, Lanes};

/// Entries of the copy of `W` at most (4 MiB): a wider model keeps the
/// checked loop rather than copy its weights.
const MAX_PADDED: usize = 512 * 1024;

/// `W` (`n_cols x k`, row-major, `k` from 2 to 16) with each row padded
/// with zeros to a multiple of 8 outputs and a row of NaN after the last.
pub(crate) struct PaddedRows {
    values: Vec<f64>,
    n_cols: usize,
    k: usize,
}

impl PaddedRows {
    /// The copy, or None where [`scores`] does not run (no AVX-512, `k`
    /// outside 2..=16, a copy past [`MAX_PADDED`] entries).
    pub(crate) fn new(w: &[f64], n_cols: usize, k: usize) -> Option<Self> {
        let stride = k.div_ceil(8) * 8;
        let len = (n_cols + 1).checked_mul(stride)?;
        if !csr_lanes::available() || !(2..=16).contains(&k) || len > MAX_PADDED {
            return None;
        }
        let mut values = vec![0.0; len];
        for (dst, src) in values.chunks_exact_mut(stride).zip(w.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
        }
        values[n_cols * stride..].fill(f64::NAN);
        Some(PaddedRows { values, n_cols, k })
    }
}

/// `out[r * k..][..k] = x_r W + b` for the rows whose offsets are
/// `offsets` (`out.len() / k + 1` of them). False if the offsets are out
/// of order or outside the values, or a score is not finite (a bad index
/// reads the row of NaN): the caller scores the rows again with every
/// check in the loop, to name the problem. Every score is written when it
/// returns true.
pub(crate) fn scores<I: Lanes>(
    offsets: &[I],
    indices: &[I],
    data: &[f64],
    w: &PaddedRows,
    b: &[f64],
    out: &mut [MaybeUninit<f64>],
) -> bool {
    assert!(
        csr_lanes::available()
            && b.len() == w.k
            && offsets.len() == out.len() / w.k + 1
            && indices.len() == data.len()
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F is available (asserted above).
    unsafe {
        if w.k <= 8 {
            scores_avx512::<I, 1>(offsets, indices, data, w, b, out)
        } else {
            scores_avx512::<I, 2>(offsets, indices, data, w, b, out)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (b, w);
        unreachable!("no AVX-512 off x86-64")
    }
}

/// [`scores`] for `B` registers of eight outputs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn scores_avx512<I: Lanes, const B: usize>(
    offsets: &[I],
    indices: &[I],
    data: &[f64],
    w: &PaddedRows,
    b: &[f64],
    out: &mut [MaybeUninit<f64>],
) -> bool {
    let (k, stride) = (w.k, 8 * B);
    let len = data.len();
    let (first, last) = (offsets[0].value(), offsets[offsets.len() - 1].value());
    if first < 0 || last > len as i64 {
        return false;
    }
    // The last lanes of the last register, and b as registers.
    let tail = (0xFFu32 >> (stride - k)) as u8;
    let mut bias = [_mm512_setzero_pd(); B];
    for (i, reg) in bias.iter_mut().enumerate() {
        let k_lanes = if i + 1 == B { tail } else { 0xFF };
        // SAFETY: the mask selects entries i*8..min(i*8+8, k) of `b`.
        *reg = unsafe { _mm512_maskz_loadu_pd(k_lanes, b.as_ptr().wrapping_add(i * 8)) };
    }
    let nan_row = w.n_cols as u64;
    let rows = w.values.as_ptr();
    let out_ptr = out.as_mut_ptr().cast::<f64>();
    let mut in_order = true;
    for (r, pair) in offsets.windows(2).enumerate() {
        let (start, end) = csr_lanes::span(pair, len, &mut in_order);
        let mut sums = bias;
        for e in start..end {
            // SAFETY: start <= e < end <= len, the length of `indices` and
            // `data`; `j` is at most `n_cols`, and the copy holds
            // `n_cols + 1` rows of `stride` entries.
            unsafe {
                let j = (*indices.get_unchecked(e)).value() as u64;
                let row = rows.add(j.min(nan_row) as usize * stride);
                let x = _mm512_set1_pd(*data.get_unchecked(e));
                for (i, sum) in sums.iter_mut().enumerate() {
                    *sum = _mm512_fmadd_pd(x, _mm512_loadu_pd(row.add(i * 8)), *sum);
                }
            }
        }
        for (i, sum) in sums.iter().enumerate() {
            let k_lanes = if i + 1 == B { tail } else { 0xFF };
            // SAFETY: row r's scores are out[r * k..(r + 1) * k]; the mask
            // selects lanes i*8.. below k.
            unsafe { _mm512_mask_storeu_pd(out_ptr.add(r * k + i * 8), k_lanes, *sum) };
        }
    }
    // SAFETY: the loop above wrote every score (k of each row).
    let out = unsafe { &*(out as *const [MaybeUninit<f64>] as *const [f64]) };
    in_order && out.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// `out[r * k..][..k] = x_r W + b` for dense rows (`out.len() / k` rows
/// of `w`'s columns each, from the start of `rows`), every column an
/// entry as above, in two sets of running sums (even and odd columns) so
/// that no chain of additions is a row long. True if every score is
/// finite.
pub(crate) fn dense_scores(rows: &[f64], w: &PaddedRows, b: &[f64], out: &mut [f64]) -> bool {
    let n_rows = out.len() / w.k;
    assert!(csr_lanes::available() && b.len() == w.k && rows.len() >= n_rows * w.n_cols);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F is available (asserted above).
    unsafe {
        if w.k <= 8 {
            dense_avx512::<1>(rows, w, b, out)
        } else {
            dense_avx512::<2>(rows, w, b, out)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (rows, b, out);
        unreachable!("no AVX-512 off x86-64")
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn dense_avx512<const B: usize>(rows: &[f64], w: &PaddedRows, b: &[f64], out: &mut [f64]) -> bool {
    let (k, n_cols, stride) = (w.k, w.n_cols, 8 * B);
    let tail = (0xFFu32 >> (stride - k)) as u8;
    let lanes = |i: usize| if i + 1 == B { tail } else { 0xFF };
    let mut bias = [_mm512_setzero_pd(); B];
    for (i, reg) in bias.iter_mut().enumerate() {
        // SAFETY: the mask selects entries i*8..min(i*8+8, k) of `b`.
        *reg = unsafe { _mm512_maskz_loadu_pd(lanes(i), b.as_ptr().wrapping_add(i * 8)) };
    }
    let weights = &w.values[..n_cols * stride];
    for (r, o) in out.chunks_exact_mut(k).enumerate() {
        let row = &rows[r * n_cols..(r + 1) * n_cols];
        let (mut even, mut odd) = (bias, [_mm512_setzero_pd(); B]);
        let mut pairs = row.chunks_exact(2);
        for (x, wj) in (&mut pairs).zip(weights.chunks_exact(2 * stride)) {
            let (x0, x1) = (_mm512_set1_pd(x[0]), _mm512_set1_pd(x[1]));
            for i in 0..B {
                // SAFETY: wj holds 2 * stride entries; i * 8 + 8 <= stride.
                unsafe {
                    even[i] = _mm512_fmadd_pd(x0, _mm512_loadu_pd(wj.as_ptr().add(i * 8)), even[i]);
                    odd[i] = _mm512_fmadd_pd(
                        x1,
                        _mm512_loadu_pd(wj.as_ptr().add(stride + i * 8)),
                        odd[i],
                    );
                }
            }
        }
        if let [x] = pairs.remainder() {
            let wj = &weights[(n_cols - 1) * stride..];
            for (i, sum) in even.iter_mut().enumerate() {
                // SAFETY: wj holds stride entries; i * 8 + 8 <= stride.
                unsafe {
                    *sum = _mm512_fmadd_pd(
                        _mm512_set1_pd(*x),
                        _mm512_loadu_pd(wj.as_ptr().add(i * 8)),
                        *sum,
                    );
                }
            }
        }
        for i in 0..B {
            // SAFETY: the mask selects lanes i*8.. below k, within `o`.
            unsafe {
                _mm512_mask_storeu_pd(
                    o.as_mut_ptr().add(i * 8),
                    lanes(i),
                    _mm512_add_pd(even[i], odd[i]),
                );
            }
        }
    }
    out.iter().fold(true, |ok, v| ok & v.is_finite())
}

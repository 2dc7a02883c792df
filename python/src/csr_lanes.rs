//! A one-output model's scores of CSR rows sixteen entries at a time, on
//! x86-64 processors with AVX-512 (detected at run time; elsewhere
//! `predict` keeps its scalar loop).
//!
//! Why: scipy's loop (and `predict`'s scalar one) adds a row's products
//! one after the other and leaves the row on a branch that mispredicts
//! about once a row; with the checks that hostile arrays need (offsets in
//! order, column indices within the model's), the scalar loop ran 0.87 to
//! 0.94 times scipy's `X @ w + b` on int64 indices (400,000 x 100 rows of
//! density 0.1, one thread). Here a row's entries are read sixteen at a
//! time with masked loads (the lanes past the row read nothing), the
//! weights gathered, the products summed in sixteen lanes and the lanes
//! added at the row's end; a row of up to sixteen entries takes one pass
//! and no data-dependent branch. The checks are lane-wise ORs that leave
//! the sums' path.
//!
//! The sums are a row's products in lanes, not in the row's order: a score
//! may differ from scipy's in its last bits (the tests compare with a
//! relative tolerance of 1e-12).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::mem::MaybeUninit;
use std::sync::OnceLock;

/// A CSR index array's element (scipy's int32 or int64), as the scalar
/// loops and the lanes read it.
pub(crate) trait Lanes: Copy {
    /// The element as a number (an offset, an index in a message).
    fn value(self) -> i64;

    /// The element's bits as an unsigned number: a negative index is
    /// above every valid column.
    fn bits(self) -> u64;

    /// Entries `s..s + l` of `indices` (`l` at most 16; none read past
    /// it), as two vectors of eight zero-extended 64-bit lanes, zero past
    /// `l`.
    ///
    /// # Safety
    ///
    /// AVX-512F must be available; `s + l` is at most `indices.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(indices: &[Self], s: usize, k: u16) -> (__m512i, __m512i);
}

impl Lanes for i64 {
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load16(indices: &[i64], s: usize, k: u16) -> (__m512i, __m512i) {
        let p = indices.as_ptr().wrapping_add(s);
        // SAFETY: the masks select entries s..s + l of `indices` only; a
        // masked load reads no lane outside its mask.
        unsafe {
            (
                _mm512_maskz_loadu_epi64(k as u8, p),
                _mm512_maskz_loadu_epi64((k >> 8) as u8, p.wrapping_add(8)),
            )
        }
    }

    #[inline]
    fn value(self) -> i64 {
        self
    }

    #[inline]
    fn bits(self) -> u64 {
        self as u64
    }
}

impl Lanes for i32 {
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load16(indices: &[i32], s: usize, k: u16) -> (__m512i, __m512i) {
        // SAFETY: as for i64: the mask selects entries s..s + l only.
        let both = unsafe { _mm512_maskz_loadu_epi32(k, indices.as_ptr().wrapping_add(s)) };
        // Zero-extended, so that a negative index is above every column.
        (
            _mm512_cvtepu32_epi64(_mm512_castsi512_si256(both)),
            _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(both)),
        )
    }

    #[inline]
    fn value(self) -> i64 {
        self.into()
    }

    #[inline]
    fn bits(self) -> u64 {
        u64::from(self as u32)
    }
}

/// Whether [`scores`] runs here: AVX-512F, detected once, unless the
/// environment variable `TOCPILE_NO_AVX512` is set (not empty) when it is
/// first asked (the tests score with and without it).
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let refused = std::env::var_os("TOCPILE_NO_AVX512").is_some_and(|v| !v.is_empty());
            !refused && is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// The entries `start..end` of the row whose offsets are `pair`, with
/// `end` clamped to the values (`len`): whatever the offsets, no read
/// leaves them (a negative start, as usize, is past `end`: an empty
/// span). `in_order` is cleared where the start passes the end; with the
/// first offset at 0 or more and the last at `len` or less, checked
/// before, that makes every offset valid.
#[inline(always)]
pub(crate) fn span<I: Lanes>(pair: &[I], len: usize, in_order: &mut bool) -> (usize, usize) {
    let (start, end) = (pair[0].value(), pair[1].value());
    *in_order &= start <= end;
    (start as usize, (end as usize).min(len))
}

/// Entries a row needs on average for [`scores`] to beat the scalar loop:
/// on rows of 2 and 4 entries it ran 0.83-0.92 times scipy where the
/// scalar loop ran 0.96-1.00, level at 6, ahead from 10 (1.07-1.12 against
/// 0.83-1.00) to 50 (0.95-1.00 against 0.88); one thread, 400,000 rows of
/// 100 columns.
const MIN_MEAN_ENTRIES: i64 = 6;

/// Whether [`scores`] is the kernel for `rows` rows whose offsets run
/// from `first` to `last`: available, and rows long enough on average.
pub(crate) fn pays(first: i64, last: i64, rows: usize) -> bool {
    available() && last.saturating_sub(first) >= MIN_MEAN_ENTRIES.saturating_mul(rows as i64)
}

/// `out[r] = x_r . w + b` for the rows whose offsets are `offsets` (one
/// more than `out.len()`), `padded` the weights padded with NaN to a power
/// of two. False if the offsets are out of order or outside the values, an
/// index is at or past `padded.len()`, or a score is not finite (an index
/// into the padding reads a NaN): the caller then scores the rows again
/// with every check in the loop, to name the problem. Every score is
/// written when it returns true.
///
/// # Panics
///
/// If [`available`] is false, or the arrays' lengths disagree.
pub(crate) fn scores<I: Lanes>(
    offsets: &[I],
    indices: &[I],
    data: &[f64],
    padded: &[f64],
    b: f64,
    out: &mut [MaybeUninit<f64>],
) -> bool {
    assert!(
        available()
            && padded.len().is_power_of_two()
            && offsets.len() == out.len() + 1
            && indices.len() == data.len()
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F is available (asserted above).
    unsafe {
        scores_avx512(offsets, indices, data, padded, b, out)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = b;
        unreachable!("no AVX-512 off x86-64")
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn scores_avx512<I: Lanes>(
    offsets: &[I],
    indices: &[I],
    data: &[f64],
    padded: &[f64],
    b: f64,
    out: &mut [MaybeUninit<f64>],
) -> bool {
    let len = data.len();
    let (first, last) = (offsets[0].value(), offsets[out.len()].value());
    if first < 0 || last > len as i64 {
        return false;
    }
    let mask = padded.len() as u64 - 1;
    let mask_lanes = _mm512_set1_epi64(mask as i64);
    let mut seen = _mm512_setzero_si512();
    let mut in_order = true;
    let (values, weights) = (data.as_ptr(), padded.as_ptr());
    for (o, pair) in out.iter_mut().zip(offsets.windows(2)) {
        let (mut s, end) = span(pair, len, &mut in_order);
        let (mut sum0, mut sum1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        while s < end {
            let l = (end - s).min(16);
            let k = ((1u32 << l) - 1) as u16;
            let (k0, k1) = (k as u8, (k >> 8) as u8);
            // SAFETY: s + l <= end <= len = indices.len() = data.len();
            // the masks select entries s..s + l; a gather reads only its
            // mask's lanes, each index masked below `padded.len()`.
            unsafe {
                let (j0, j1) = I::load16(indices, s, k);
                seen = _mm512_or_si512(seen, _mm512_or_si512(j0, j1));
                let zero = _mm512_setzero_pd();
                let w0 = _mm512_mask_i64gather_pd::<8>(
                    zero,
                    k0,
                    _mm512_and_si512(j0, mask_lanes),
                    weights,
                );
                let w1 = _mm512_mask_i64gather_pd::<8>(
                    zero,
                    k1,
                    _mm512_and_si512(j1, mask_lanes),
                    weights,
                );
                let x0 = _mm512_maskz_loadu_pd(k0, values.wrapping_add(s));
                let x1 = _mm512_maskz_loadu_pd(k1, values.wrapping_add(s + 8));
                sum0 = _mm512_fmadd_pd(x0, w0, sum0);
                sum1 = _mm512_fmadd_pd(x1, w1, sum1);
            }
            s += 16;
        }
        o.write(_mm512_reduce_add_pd(_mm512_add_pd(sum0, sum1)) + b);
    }
    let mut lanes = [0u64; 8];
    // SAFETY: `lanes` is 64 bytes, an unaligned store's width.
    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), seen) };
    let seen = lanes.iter().fold(0, |all, lane| all | lane);
    // SAFETY: the loop above wrote every score.
    let out = unsafe { &*(out as *const [MaybeUninit<f64>] as *const [f64]) };
    in_order && seen & !mask == 0 && out.iter().fold(true, |ok, v| ok & v.is_finite())
}

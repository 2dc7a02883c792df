//! Kernels on a flat batch (a `Level::Full` page stored as value-indexed
//! rows because its prefix tree did not pay, or a `Level::Sparse` page):
//! the decode tree holds every entry as a first-layer pair, in row order,
//! so the kernels are CSR loops over `pair_cols` and `pair_vals` with
//! `row_starts` as offsets. Walking the identity codes instead, as the
//! tree kernels would, costs an indirection and a per-node table per
//! entry (mnist5k `A.v`: 1.7x CSR through the tree, about 1.0x here).
//!
//! Pair `j` of the batch is first-layer id `j + 1` (index 0 is the root).
//! Every kernel applies the batch's pending `A*c` ([`DecodeTree::factor`])
//! once per row or per entry, where it costs one multiply.

use super::sum4;
use crate::codec::DecodeTree;

/// The columns and values of every entry, and the row offsets into them.
fn parts(t: &DecodeTree) -> (&[u32], &[f64], &[u32]) {
    (&t.pair_cols[1..], &t.pair_vals[1..], &t.row_starts)
}

/// `A . v`: `emit(row, dot product)`.
pub(super) fn matvec(t: &DecodeTree, v: &[f64], mut emit: impl FnMut(usize, f64)) {
    let (cols, vals, starts) = parts(t);
    let f = t.factor();
    for (r, w) in starts.windows(2).enumerate() {
        let (c, x) = (
            &cols[w[0] as usize..w[1] as usize],
            &vals[w[0] as usize..w[1] as usize],
        );
        emit(r, f * sum4(c.len(), |i| x[i] * v[c[i] as usize]));
    }
}

/// The sum of all elements.
pub(super) fn sum(t: &DecodeTree) -> f64 {
    let vals = &t.pair_vals[1..];
    t.factor() * sum4(vals.len(), |i| vals[i])
}

/// `v . A` added into `out` (zeroed by the caller).
pub(super) fn vecmat(t: &DecodeTree, v: &[f64], out: &mut [f64]) {
    let (cols, vals, starts) = parts(t);
    let f = t.factor();
    for (&w, r) in v.iter().zip(starts.windows(2)) {
        let w = w * f;
        let (s, e) = (r[0] as usize, r[1] as usize);
        for (&c, &x) in cols[s..e].iter().zip(&vals[s..e]) {
            out[c as usize] += x * w;
        }
    }
}

/// `A . M` (`m` row-major `n_cols x p`) into `out` (row-major
/// `n_rows x p`, zeroed by the caller).
pub(super) fn matmat(t: &DecodeTree, m: &[f64], p: usize, out: &mut [f64]) {
    let (cols, vals, starts) = parts(t);
    let f = t.factor();
    for (dst, r) in out.chunks_exact_mut(p).zip(starts.windows(2)) {
        let (s, e) = (r[0] as usize, r[1] as usize);
        for (&c, &x) in cols[s..e].iter().zip(&vals[s..e]) {
            let x = x * f;
            let src = &m[c as usize * p..][..p];
            dst.iter_mut().zip(src).for_each(|(d, &y)| *d += x * y);
        }
    }
}

/// `M . A` with `M`'s columns contiguous (`mt`: `n_rows x q`), added into
/// `acc`, column-major (`n_cols x q`).
pub(super) fn left_matmat(t: &DecodeTree, mt: &[f64], q: usize, acc: &mut [f64]) {
    let (cols, vals, starts) = parts(t);
    let f = t.factor();
    for (src, r) in mt.chunks_exact(q).zip(starts.windows(2)) {
        let (s, e) = (r[0] as usize, r[1] as usize);
        for (&c, &x) in cols[s..e].iter().zip(&vals[s..e]) {
            let x = x * f;
            let dst = &mut acc[c as usize * q..][..q];
            dst.iter_mut().zip(src).for_each(|(d, &y)| *d += x * y);
        }
    }
}

/// Whether `M . A` goes straight into a row-major result
/// ([`left_matmat_rows`]) rather than through the column-major scratch:
/// when the batch has fewer entries than twice its columns. The scratch
/// costs a zero fill and a copy of `n_cols x q` values; the direct adds
/// cost a cache line each, where the scratch's `q` contiguous values
/// share two or three. nycflights13 (2,500 entries a 250-row batch, 4,195
/// columns): 0.34x CSR direct, 1.0x through the scratch; mnist5k (37,500
/// entries, 784 columns): 2.0x direct, 0.8x through the scratch.
pub(super) fn rows_direct(t: &DecodeTree) -> bool {
    t.decoded_nnz < 2 * t.n_cols() as u64
}

/// `M . A` with `M`'s columns contiguous (`mt`: `n_rows x q`), added
/// straight into a row-major `out` (`q x n_cols`): each entry adds its
/// `q` products down its column of `out`, touching only the columns the
/// batch has (as `wide::left_stored_rows` does for trees), where the
/// column-major scratch costs a zero fill and a copy of all `n_cols x q`
/// values per call (nycflights13, 4,195 columns: CSR's 262 us a batch are
/// mostly those).
pub(super) fn left_matmat_rows(t: &DecodeTree, mt: &[f64], q: usize, out: &mut [f64]) {
    let n_cols = t.n_cols();
    let (cols, vals, starts) = parts(t);
    let f = t.factor();
    for (src, r) in mt.chunks_exact(q).zip(starts.windows(2)) {
        let (s, e) = (r[0] as usize, r[1] as usize);
        for (&c, &x) in cols[s..e].iter().zip(&vals[s..e]) {
            let x = x * f;
            for (j, &y) in src.iter().enumerate() {
                out[j * n_cols + c as usize] += x * y;
            }
        }
    }
}

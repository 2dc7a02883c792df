//! `A . M` and `M . A` with `p` (or `q`) values per node, in two
//! strategies chosen per batch by [`DecodeTree::lazy_first_layer`]:
//!
//! - *stored*: one `p`-vector per node, first layer included (the paper's
//!   `H`); a pair's product `value * M[column]` is computed once however
//!   often the batch repeats it.
//! - *lazy*: vectors for created nodes only; a first-layer pair is
//!   multiplied where it is used, as CSR does. Cheaper when pairs barely
//!   repeat, since the stored table would be as large as the batch.
//!
//! Node vectors are contiguous, so every inner loop runs over `p`.

use super::{scratch, zeroed};
use crate::codec::DecodeTree;

/// `dst += x * src`.
#[inline]
fn axpy(dst: &mut [f64], x: f64, src: &[f64]) {
    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += x * s);
}

/// `dst += src`.
#[inline]
fn add(dst: &mut [f64], src: &[f64]) {
    dst.iter_mut().zip(src).for_each(|(d, &s)| *d += s);
}

/// `A . M` with every node's row of the product stored; `m` is row-major
/// `n_cols x p`; the rows of the result are added into `out` (row-major
/// `n_rows x p`, zeroed by the caller).
pub(super) fn right_stored(
    t: &DecodeTree,
    m: &[f64],
    p: usize,
    node: &mut Vec<f64>,
    out: &mut [f64],
) {
    // Every row but the root's (never read) is written before it is read.
    let h = scratch(node, t.n_nodes() * p);
    for k in 1..t.pair_cols.len() {
        let src = &m[t.pair_cols[k] as usize * p..][..p];
        let x = t.pair_vals[k];
        h[k * p..(k + 1) * p]
            .iter_mut()
            .zip(src)
            .for_each(|(d, &s)| *d = x * s);
    }
    for n in t.pair_cols.len()..t.n_nodes() {
        // Parent and key are below n: split to borrow.
        let (done, rest) = h.split_at_mut(n * p);
        let (parent, key) = (t.parent[n] as usize, t.key[n] as usize);
        let (a, b) = (&done[parent * p..][..p], &done[key * p..][..p]);
        for ((d, &x), &y) in rest[..p].iter_mut().zip(a).zip(b) {
            *d = x + y;
        }
    }
    for (dst, w) in out.chunks_exact_mut(p).zip(t.row_starts.windows(2)) {
        for &code in &t.codes[w[0] as usize..w[1] as usize] {
            add(dst, &h[code as usize * p..][..p]);
        }
    }
}

/// `A . M` with rows stored for created nodes only.
pub(super) fn right_lazy(
    t: &DecodeTree,
    m: &[f64],
    p: usize,
    node: &mut Vec<f64>,
    out: &mut [f64],
) {
    let first_created = t.pair_cols.len();
    let created = t.n_nodes() - first_created;
    let m_row = |pair: usize| &m[t.pair_cols[pair] as usize * p..][..p];
    // Every created node's row is written (from its parent) before use.
    let h = scratch(node, created * p);
    for i in 0..created {
        let n = first_created + i;
        let (done, rest) = h.split_at_mut(i * p);
        let dst = &mut rest[..p];
        let parent = t.parent[n] as usize;
        if parent < first_created {
            let x = t.pair_vals[parent];
            dst.iter_mut()
                .zip(m_row(parent))
                .for_each(|(d, &s)| *d = x * s);
        } else {
            dst.copy_from_slice(&done[(parent - first_created) * p..][..p]);
        }
        let key = t.key[n] as usize;
        axpy(dst, t.pair_vals[key], m_row(key));
    }
    for (dst, w) in out.chunks_exact_mut(p).zip(t.row_starts.windows(2)) {
        for &code in &t.codes[w[0] as usize..w[1] as usize] {
            let c = code as usize;
            if c < first_created {
                axpy(dst, t.pair_vals[c], m_row(c));
            } else {
                add(dst, &h[(c - first_created) * p..][..p]);
            }
        }
    }
}

/// `M . A` with a weight vector per node; `mt` holds `M`'s columns
/// contiguous (`n_rows x q`); the result is added into `acc`, column-major
/// (`n_cols x q`).
pub(super) fn left_stored(
    t: &DecodeTree,
    mt: &[f64],
    q: usize,
    node: &mut Vec<f64>,
    acc: &mut [f64],
) {
    let g = node_weights(t, mt, q, node);
    for k in 1..t.pair_cols.len() {
        let dst = &mut acc[t.pair_cols[k] as usize * q..][..q];
        axpy(dst, t.pair_vals[k], &g[k * q..][..q]);
    }
}

/// `M . A` with a weight vector per node, added straight into `out` in
/// its own row-major layout (`q x n_cols`, zeroed by the caller): only
/// the columns of first-layer pairs are touched, `q` strided adds each.
/// Accumulating into a column-major scratch instead (as CSR must) costs a
/// zero fill and a transposing copy of the whole `q x n_cols` result
/// (nycflights13, 4,195 columns: 671 KB each, per call). Pairs of one
/// column (sorted first layer) are summed in `run` first.
pub(super) fn left_stored_rows(
    t: &DecodeTree,
    mt: &[f64],
    q: usize,
    node: &mut Vec<f64>,
    run: &mut Vec<f64>,
    out: &mut [f64],
) {
    let n_cols = t.n_cols();
    let g = node_weights(t, mt, q, node);
    let run = zeroed(run, q);
    let (cols, vals) = (&t.pair_cols, &t.pair_vals);
    let mut k = 1;
    while k < cols.len() {
        let col = cols[k];
        run.fill(0.0);
        while k < cols.len() && cols[k] == col {
            axpy(run, vals[k], &g[k * q..][..q]);
            k += 1;
        }
        for (j, &x) in run.iter().enumerate() {
            out[j * n_cols + col as usize] += x;
        }
    }
}

/// The weight vector of every node: `M`'s columns of the rows whose codes
/// name it, pushed down from each node to its parent and its key.
fn node_weights<'a>(t: &DecodeTree, mt: &[f64], q: usize, node: &'a mut Vec<f64>) -> &'a [f64] {
    let g = zeroed(node, t.n_nodes() * q);
    for (r, w) in t.row_starts.windows(2).enumerate() {
        let src = &mt[r * q..(r + 1) * q];
        for &code in &t.codes[w[0] as usize..w[1] as usize] {
            add(&mut g[code as usize * q..][..q], src);
        }
    }
    for n in (t.pair_cols.len()..t.n_nodes()).rev() {
        // Parent and key are below n: split to borrow.
        let (lo, hi) = g.split_at_mut(n * q);
        let gn = &hi[..q];
        add(&mut lo[t.parent[n] as usize * q..][..q], gn);
        add(&mut lo[t.key[n] as usize * q..][..q], gn);
    }
    g
}

/// `M . A` with weights for created nodes only; first-layer codes go
/// straight into their column.
pub(super) fn left_lazy(
    t: &DecodeTree,
    mt: &[f64],
    q: usize,
    node: &mut Vec<f64>,
    acc: &mut [f64],
) {
    let first_created = t.pair_cols.len();
    let created = t.n_nodes() - first_created;
    let into_column = |acc: &mut [f64], pair: usize, src: &[f64]| {
        let dst = &mut acc[t.pair_cols[pair] as usize * q..][..q];
        axpy(dst, t.pair_vals[pair], src);
    };
    let g = zeroed(node, created * q);
    for (r, w) in t.row_starts.windows(2).enumerate() {
        let src = &mt[r * q..(r + 1) * q];
        for &code in &t.codes[w[0] as usize..w[1] as usize] {
            let c = code as usize;
            if c < first_created {
                into_column(acc, c, src);
            } else {
                add(&mut g[(c - first_created) * q..][..q], src);
            }
        }
    }
    for i in (0..created).rev() {
        let n = first_created + i;
        // The parent is below n: split to borrow.
        let (lo, hi) = g.split_at_mut(i * q);
        let gn = &hi[..q];
        let parent = t.parent[n] as usize;
        if parent < first_created {
            into_column(acc, parent, gn);
        } else {
            add(&mut lo[(parent - first_created) * q..][..q], gn);
        }
        into_column(acc, t.key[n] as usize, gn);
    }
}

//! `A . v` and `v . A` (one value per node, Algorithms 4 and 5), with a
//! value stored for every node, first layer included. The lazy strategy of
//! `wide.rs` (first-layer pairs evaluated where used) was measured here
//! too: for `A.v` it lost everywhere, by 1.6x on mnist5k (with one value
//! per node, a stored value is one load where a lazy pair is three
//! dependent ones); for `v.A` it made no difference beyond the noise
//! (three runs on six datasets), so one strategy serves both.
//!
//! `pair(k)` gives the contribution of first-layer pair `k` (for `A.v`:
//! `value * v[column]`; for the sum of all elements: `value`).

use super::sum4;
use crate::codec::DecodeTree;

/// Right multiplication with a value stored per node; `emit(row, sum)`.
pub(super) fn right_stored(
    t: &DecodeTree,
    h: &mut Vec<f64>,
    pair: impl Fn(usize) -> f64,
    mut emit: impl FnMut(usize, f64),
) {
    h.clear();
    h.push(0.0); // the root, never read
    h.extend((1..t.pair_cols.len()).map(&pair));
    let links = t.parent[t.pair_cols.len()..]
        .iter()
        .zip(&t.key[t.pair_cols.len()..]);
    for (&parent, &key) in links {
        // Parents and keys precede their node: already computed.
        let x = h[parent as usize] + h[key as usize];
        h.push(x);
    }
    for (r, w) in t.row_starts.windows(2).enumerate() {
        let codes = &t.codes[w[0] as usize..w[1] as usize];
        emit(r, sum4(codes.len(), |i| h[codes[i] as usize]));
    }
}

/// Left multiplication with a weight per node: adds `v . A` into `out`
/// (`n_cols` entries, zeroed by the caller).
pub(super) fn left_stored(t: &DecodeTree, v: &[f64], g: &mut Vec<f64>, out: &mut [f64]) {
    g.clear();
    g.resize(t.n_nodes(), 0.0);
    for (&vr, w) in v.iter().zip(t.row_starts.windows(2)) {
        for &code in &t.codes[w[0] as usize..w[1] as usize] {
            g[code as usize] += vr;
        }
    }
    // Children before parents; a pair's weight collects every node whose
    // key it is.
    for n in (t.pair_cols.len()..t.n_nodes()).rev() {
        let gn = g[n];
        g[t.parent[n] as usize] += gn;
        g[t.key[n] as usize] += gn;
    }
    for k in 1..t.pair_cols.len() {
        out[t.pair_cols[k] as usize] += t.pair_vals[k] * g[k];
    }
}

//! The gradient of a linear model on one TOC page in one kernel: `A.w`
//! (Algorithm 4), a per-row slope (the loss derivative at the margin), and
//! `v.A` (Algorithm 5) with `v` the slopes, added into the gradient. TOC
//! paper section 4.2 (equation 3): the tree `C'` does not depend on the
//! model, so both products run on one tree.
//!
//! What fusing saves over the two kernels called one after the other: the
//! per-row vector of margins (then slopes) between them; a second pass
//! over `D` (a row's codes are scattered into the weight table while they
//! are in cache from its dot product); and rows whose slope is exactly 0
//! (hinge loss beyond the margin) skip the scatter. The node-value table
//! of `A.w` and the node-weight table of `v.A` live side by side in the
//! workspace, both reused from page to page.

use super::scalar::{add_pairs, code_weights};
use super::sum4;
use crate::codec::DecodeTree;

/// Flat pages: per row a CSR dot product, the slope, and a CSR scatter of
/// `value * slope` into `out`.
pub(super) fn flat(
    t: &DecodeTree,
    w: &[f64],
    slope: &mut impl FnMut(usize, f64) -> f64,
    out: &mut [f64],
) {
    let (cols, vals, starts) = (&t.pair_cols[1..], &t.pair_vals[1..], &t.row_starts);
    let f = t.factor();
    for (r, s) in starts.windows(2).enumerate() {
        let (c, x) = (
            &cols[s[0] as usize..s[1] as usize],
            &vals[s[0] as usize..s[1] as usize],
        );
        let d = f * slope(r, f * sum4(c.len(), |i| x[i] * w[c[i] as usize]));
        if d != 0.0 {
            for (&c, &x) in c.iter().zip(x) {
                out[c as usize] += x * d;
            }
        }
    }
}

/// Tree pages: node values `h` (one forward pass), then per row its margin
/// from `h` and its slope added to the weights `g` of the row's codes;
/// one backward pass and the first-layer pairs then add `v.A` into `out`.
pub(super) fn tree(
    t: &DecodeTree,
    w: &[f64],
    slope: &mut impl FnMut(usize, f64) -> f64,
    h: &mut Vec<f64>,
    g: &mut Vec<f64>,
    out: &mut [f64],
) {
    let first = t.pair_cols.len();
    h.clear();
    h.resize(t.n_nodes(), 0.0); // h[0], the root's, is never read
                                // Over zipped slices: one bounds check per pair (on `w`) rather than
                                // three, and no capacity check per push.
    let (h_pairs, h_links) = h.split_at_mut(first);
    let pairs = t.pair_vals[1..].iter().zip(&t.pair_cols[1..]);
    for (hk, (&value, &col)) in h_pairs[1..].iter_mut().zip(pairs) {
        *hk = value * w[col as usize];
    }
    let links = t.parent[first..].iter().zip(&t.key[first..]);
    for (i, (&parent, &key)) in links.enumerate() {
        // Parents and keys precede their node: already computed.
        let value = |id: u32| {
            let id = id as usize;
            if id < first {
                h_pairs[id]
            } else {
                h_links[id - first]
            }
        };
        h_links[i] = value(parent) + value(key);
    }
    // The rows' slopes into the node weights (`scalar::code_weights`).
    code_weights(t, g, |r, codes| {
        slope(r, sum4(codes.len(), |i| h[codes[i] as usize]))
    });
    let n = t.n_nodes();
    for node in (first..n).rev() {
        let gn = g[node];
        g[t.parent[node] as usize] += gn;
        g[t.key[node] as usize] += gn;
    }
    add_pairs(t, g, out);
}

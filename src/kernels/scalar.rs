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
    code_weights(t, g, |r, _| v[r]);
    // Children before parents; a pair's weight collects every node whose
    // key it is.
    for n in (t.pair_cols.len()..t.n_nodes()).rev() {
        let gn = g[n];
        g[t.parent[n] as usize] += gn;
        g[t.key[n] as usize] += gn;
    }
    add_pairs(t, g, out);
}

/// Whether [`code_weights`] adds even and odd rows into two tables: when
/// a node is named by more than 2.5 codes on average (census_fertility:
/// 3.1 codes a node in a 250-row page), consecutive rows often name the
/// same node, and one table makes each add wait on the previous row's
/// store to that address. Elsewhere the second table's zero fill and
/// merge cost more than they save (`v.A`, one table against two, CPU time
/// interleaved in one process: coil2000 0.81, flights3m 0.83,
/// nycflights13 0.94, mushrooms 1.00, census_fertility 1.17).
fn two_tables(t: &DecodeTree) -> bool {
    2 * t.n_codes() > 5 * t.n_nodes()
}

/// Sets `g` to one weight per node: the sum, over the rows, of
/// `weight(row, codes of the row)` added to the node of each of the row's
/// codes (before the backward pass of a left multiplication). Rows of
/// weight 0 are skipped.
pub(super) fn code_weights(
    t: &DecodeTree,
    g: &mut Vec<f64>,
    mut weight: impl FnMut(usize, &[u32]) -> f64,
) {
    let n = t.n_nodes();
    let rows = t.row_starts.windows(2).enumerate();
    if !two_tables(t) {
        g.clear();
        g.resize(n, 0.0);
        for (r, w) in rows {
            let codes = &t.codes[w[0] as usize..w[1] as usize];
            let d = weight(r, codes);
            if d != 0.0 {
                for &code in codes {
                    g[code as usize] += d;
                }
            }
        }
        return;
    }
    // Even and odd rows add into separate tables, summed afterwards: a node
    // used by consecutive rows (one-hot data repeats a few sequences in
    // most rows) then updates its weight every other row rather than
    // waiting on the previous row's store to the same address.
    g.clear();
    g.resize(2 * n, 0.0);
    let (g0, g1) = g.split_at_mut(n);
    for (r, w) in rows {
        let codes = &t.codes[w[0] as usize..w[1] as usize];
        let d = weight(r, codes);
        if d != 0.0 {
            let table = if r % 2 == 0 { &mut *g0 } else { &mut *g1 };
            for &code in codes {
                table[code as usize] += d;
            }
        }
    }
    for (a, &b) in g0.iter_mut().zip(g1.iter()) {
        *a += b;
    }
    g.truncate(n);
}

/// `out[column of k] += value of k * g[k]` for every first-layer pair.
/// The first layer is sorted by column (the encoder's default), so pairs
/// of one column come in runs (numeric columns: hundreds of values); a
/// run is summed in a register and stored once. Updating `out` per pair
/// made each add wait for the previous store to the same address
/// (nycflights13 `v.A`: this pass took 0.63x CSR's whole time, 0.2x with
/// runs). Finding each run first and summing it with four accumulators
/// (`sum4`) was measured too: slower on the short runs of census_fertility
/// and the flight sets, not kept.
pub(super) fn add_pairs(t: &DecodeTree, g: &[f64], out: &mut [f64]) {
    let (cols, vals) = (&t.pair_cols[1..], &t.pair_vals[1..]);
    let g = &g[1..cols.len() + 1];
    let mut k = 0;
    while k < cols.len() {
        let col = cols[k];
        let mut acc = vals[k] * g[k];
        k += 1;
        while k < cols.len() && cols[k] == col {
            acc += vals[k] * g[k];
            k += 1;
        }
        out[col as usize] += acc;
    }
}

//! The kernels on a [`DecodeTree`]; see the module docs of `kernels` for
//! the paper's algorithms and where these depart from them.
//!
//! Every parent and key has a smaller id than its node, so one forward
//! pass over the nodes completes per-node results (right multiplications)
//! and one backward pass pushes weights from nodes to parents and pairs
//! (left multiplications).

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::{zeroed, Workspace};
use crate::codec::DecodeTree;

impl DecodeTree {
    /// `A * c` in place (Algorithm 3): touches only the first-layer values,
    /// so it costs `O(|I|)` whatever the batch size.
    pub fn scale(&mut self, c: f64) {
        for v in &mut self.pair_vals[1..] {
            *v *= c;
        }
        self.zeros_possible = true;
    }

    /// `A^2` element-wise, in place, on the first layer only.
    pub fn square(&mut self) {
        for v in &mut self.pair_vals[1..] {
            *v *= *v;
        }
        self.zeros_possible = true;
    }

    /// The sum of all elements.
    pub fn sum(&self, ws: &mut Workspace) -> f64 {
        let h = zeroed(&mut ws.node, self.n_nodes());
        h[1..self.pair_vals.len()].copy_from_slice(&self.pair_vals[1..]);
        self.fill_nodes(h);
        self.row_starts
            .windows(2)
            .map(|w| row_sum(h, &self.codes[w[0] as usize..w[1] as usize]))
            .sum()
    }

    /// Completes `h` for the nodes beyond the first layer, in node order
    /// (parents first): a node's sequence is its parent's plus its key.
    #[inline]
    fn fill_nodes(&self, h: &mut [f64]) {
        let first_created = self.pair_cols.len();
        let links = self.parent[first_created..]
            .iter()
            .zip(&self.key[first_created..]);
        for (n, (&parent, &key)) in (first_created..).zip(links) {
            h[n] = h[parent as usize] + h[key as usize];
        }
    }

    /// Pushes each node's weight to its parent and to its key's pair, last
    /// node first (children before parents): afterwards `g[k]` for a pair
    /// `k` is the total weight of that pair over all rows.
    #[inline]
    fn push_up(&self, g: &mut [f64]) {
        let first_created = self.pair_cols.len();
        for n in (first_created..self.n_nodes()).rev() {
            let gn = g[n];
            g[self.parent[n] as usize] += gn;
            g[self.key[n] as usize] += gn;
        }
    }

    /// `A . v` (Algorithm 4) into `out`, one entry per row.
    ///
    /// # Panics
    /// If `v.len() != n_cols()` or `out.len() != n_rows()`.
    pub fn matvec_into(
        &self,
        v: ArrayView1<'_, f64>,
        mut out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        assert_eq!(
            v.len(),
            self.n_cols,
            "A.v: v has {} entries, A has {} columns",
            v.len(),
            self.n_cols
        );
        assert_eq!(
            out.len(),
            self.n_rows(),
            "A.v: out has {} entries, A has {} rows",
            out.len(),
            self.n_rows()
        );
        let h = zeroed(&mut ws.node, self.n_nodes());
        for k in 1..self.pair_cols.len() {
            h[k] = self.pair_vals[k] * v[self.pair_cols[k] as usize];
        }
        self.fill_nodes(h);
        for (o, w) in out.iter_mut().zip(self.row_starts.windows(2)) {
            *o = row_sum(h, &self.codes[w[0] as usize..w[1] as usize]);
        }
    }

    /// `A . v`, allocating the result.
    ///
    /// # Panics
    /// As [`DecodeTree::matvec_into`].
    pub fn matvec(&self, v: ArrayView1<'_, f64>, ws: &mut Workspace) -> Array1<f64> {
        let mut out = Array1::zeros(self.n_rows());
        self.matvec_into(v, out.view_mut(), ws);
        out
    }

    /// `v . A` (Algorithm 5) into `out`, one entry per column.
    ///
    /// Weights of the codes are pushed from each node to its parent and to
    /// the first-layer pair of its key, so the columns are touched once per
    /// distinct pair rather than once per node.
    ///
    /// # Panics
    /// If `v.len() != n_rows()` or `out.len() != n_cols()`.
    pub fn vecmat_into(
        &self,
        v: ArrayView1<'_, f64>,
        mut out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        assert_eq!(
            v.len(),
            self.n_rows(),
            "v.A: v has {} entries, A has {} rows",
            v.len(),
            self.n_rows()
        );
        assert_eq!(
            out.len(),
            self.n_cols,
            "v.A: out has {} entries, A has {} columns",
            out.len(),
            self.n_cols
        );
        let g = zeroed(&mut ws.node, self.n_nodes());
        for (&vr, w) in v.iter().zip(self.row_starts.windows(2)) {
            for &code in &self.codes[w[0] as usize..w[1] as usize] {
                g[code as usize] += vr;
            }
        }
        self.push_up(g);
        out.fill(0.0);
        for k in 1..self.pair_cols.len() {
            out[self.pair_cols[k] as usize] += self.pair_vals[k] * g[k];
        }
    }

    /// `v . A`, allocating the result.
    ///
    /// # Panics
    /// As [`DecodeTree::vecmat_into`].
    pub fn vecmat(&self, v: ArrayView1<'_, f64>, ws: &mut Workspace) -> Array1<f64> {
        let mut out = Array1::zeros(self.n_cols);
        self.vecmat_into(v, out.view_mut(), ws);
        out
    }

    /// `A . M` (Algorithm 7) into `out`: `M` is `n_cols x p` in any memory
    /// layout, `out` is `n_rows x p`.
    ///
    /// # Panics
    /// If the dimensions do not match.
    pub fn matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        mut out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let p = m.ncols();
        assert_eq!(
            m.nrows(),
            self.n_cols,
            "A.M: M has {} rows, A has {} columns",
            m.nrows(),
            self.n_cols
        );
        assert_eq!(
            out.dim(),
            (self.n_rows(), p),
            "A.M: out is {:?}, expected {:?}",
            out.dim(),
            (self.n_rows(), p)
        );
        if p == 0 {
            return;
        }
        let h = zeroed(&mut ws.node, self.n_nodes() * p);
        for k in 1..self.pair_cols.len() {
            let val = self.pair_vals[k];
            let dst = &mut h[k * p..(k + 1) * p];
            let row = m.row(self.pair_cols[k] as usize);
            match row.as_slice() {
                Some(src) => dst.iter_mut().zip(src).for_each(|(d, &s)| *d = val * s),
                None => dst
                    .iter_mut()
                    .zip(row.iter())
                    .for_each(|(d, &s)| *d = val * s),
            }
        }
        for n in self.pair_cols.len()..self.n_nodes() {
            // parent and key are below n: split to borrow.
            let (done, rest) = h.split_at_mut(n * p);
            let (parent, key) = (self.parent[n] as usize, self.key[n] as usize);
            let (a, b) = (&done[parent * p..][..p], &done[key * p..][..p]);
            for ((d, &x), &y) in rest[..p].iter_mut().zip(a).zip(b) {
                *d = x + y;
            }
        }
        let acc = zeroed(&mut ws.pair, p);
        for (r, w) in self.row_starts.windows(2).enumerate() {
            acc.fill(0.0);
            for &code in &self.codes[w[0] as usize..w[1] as usize] {
                let c = code as usize;
                acc.iter_mut()
                    .zip(&h[c * p..(c + 1) * p])
                    .for_each(|(a, &x)| *a += x);
            }
            let mut row = out.row_mut(r);
            match row.as_slice_mut() {
                Some(dst) => dst.copy_from_slice(acc),
                None => row.iter_mut().zip(acc.iter()).for_each(|(d, &s)| *d = s),
            }
        }
    }

    /// `A . M`, allocating the result.
    ///
    /// # Panics
    /// As [`DecodeTree::matmat_into`].
    pub fn matmat(&self, m: ArrayView2<'_, f64>, ws: &mut Workspace) -> Array2<f64> {
        let mut out = Array2::zeros((self.n_rows(), m.ncols()));
        self.matmat_into(m, out.view_mut(), ws);
        out
    }

    /// `M . A` (Algorithm 8) into `out`: `M` is `q x n_rows` in any memory
    /// layout, `out` is `q x n_cols`.
    ///
    /// # Panics
    /// If the dimensions do not match.
    pub fn left_matmat_into(
        &self,
        m: ArrayView2<'_, f64>,
        mut out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let q = m.nrows();
        assert_eq!(
            m.ncols(),
            self.n_rows(),
            "M.A: M has {} columns, A has {} rows",
            m.ncols(),
            self.n_rows()
        );
        assert_eq!(
            out.dim(),
            (q, self.n_cols),
            "M.A: out is {:?}, expected {:?}",
            out.dim(),
            (q, self.n_cols)
        );
        out.fill(0.0);
        if q == 0 {
            return;
        }
        // Columns of M (one per row of A) made contiguous.
        let mt = zeroed(&mut ws.operand, self.n_rows() * q);
        for (r, col) in m.columns().into_iter().enumerate() {
            mt[r * q..(r + 1) * q]
                .iter_mut()
                .zip(col.iter())
                .for_each(|(d, &s)| *d = s);
        }
        let g = zeroed(&mut ws.node, self.n_nodes() * q);
        for (r, w) in self.row_starts.windows(2).enumerate() {
            let src = &mt[r * q..(r + 1) * q];
            for &code in &self.codes[w[0] as usize..w[1] as usize] {
                let c = code as usize;
                g[c * q..(c + 1) * q]
                    .iter_mut()
                    .zip(src)
                    .for_each(|(d, &s)| *d += s);
            }
        }
        for n in (self.n_first_layer() + 1..self.n_nodes()).rev() {
            // parent and key are below n: split to borrow.
            let (lo, hi) = g.split_at_mut(n * q);
            let gn = &hi[..q];
            for target in [self.parent[n] as usize, self.key[n] as usize] {
                lo[target * q..(target + 1) * q]
                    .iter_mut()
                    .zip(gn)
                    .for_each(|(d, &s)| *d += s);
            }
        }
        for k in 1..self.pair_cols.len() {
            let val = self.pair_vals[k];
            let mut col = out.column_mut(self.pair_cols[k] as usize);
            col.iter_mut()
                .zip(&g[k * q..(k + 1) * q])
                .for_each(|(d, &s)| *d += val * s);
        }
    }

    /// `M . A`, allocating the result.
    ///
    /// # Panics
    /// As [`DecodeTree::left_matmat_into`].
    pub fn left_matmat(&self, m: ArrayView2<'_, f64>, ws: &mut Workspace) -> Array2<f64> {
        let mut out = Array2::zeros((m.nrows(), self.n_cols));
        self.left_matmat_into(m, out.view_mut(), ws);
        out
    }

    /// `A + c` (sparse-unsafe, Algorithm 6): decodes and returns a dense
    /// `n_rows x n_cols` matrix.
    ///
    /// # Panics
    /// If the dense matrix cannot be allocated.
    pub fn add_scalar(&self, c: f64) -> Array2<f64> {
        let mut dense = self.to_dense();
        dense.mapv_inplace(|x| x + c);
        dense
    }

    /// `A + M` (sparse-unsafe): decodes and returns a dense matrix.
    ///
    /// # Panics
    /// If `M` is not `n_rows x n_cols`.
    pub fn add_matrix(&self, m: ArrayView2<'_, f64>) -> Array2<f64> {
        assert_eq!(
            m.dim(),
            (self.n_rows(), self.n_cols),
            "A+M: M is {:?}, A is {:?}",
            m.dim(),
            (self.n_rows(), self.n_cols)
        );
        let mut dense = self.to_dense();
        dense += &m;
        dense
    }

    /// The batch as a dense matrix, written directly from the tree.
    ///
    /// # Panics
    /// If the dense matrix cannot be allocated.
    pub fn to_dense(&self) -> Array2<f64> {
        let mut dense = Array2::zeros((self.n_rows(), self.n_cols));
        for r in 0..self.n_rows() {
            for &code in self.row_codes(r) {
                let mut node = code as usize;
                while node != 0 {
                    let pair = self.key[node] as usize;
                    dense[[r, self.pair_cols[pair] as usize]] = self.pair_vals[pair];
                    node = self.parent[node] as usize;
                }
            }
        }
        dense
    }
}

/// Sum of `h` over the codes of one row.
#[inline]
fn row_sum(h: &[f64], codes: &[u32]) -> f64 {
    codes.iter().map(|&c| h[c as usize]).sum()
}

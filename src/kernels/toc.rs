//! The kernels on a [`DecodeTree`]; see the module docs of `kernels` for
//! the paper's algorithms and where these depart from them.
//!
//! Every parent and key has a smaller id than its node, so one forward
//! pass over the nodes completes per-node results (right multiplications)
//! and one backward pass pushes weights from nodes to parents and pairs
//! (left multiplications).

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, ArrayViewMut1, ArrayViewMut2};

use super::layout::{check_dim, columns, fill, fill_columns, standard, Shape};
use super::{flat, fused, scalar, wide, Workspace};
use crate::codec::DecodeTree;

impl DecodeTree {
    fn shape(&self) -> Shape {
        Shape {
            n_rows: self.n_rows(),
            n_cols: self.n_cols,
        }
    }

    /// `A * c` in place (Algorithm 3): touches only the first-layer values,
    /// so it costs `O(|I|)` whatever the batch size.
    ///
    /// A flat batch (every entry a first-layer pair) records `c` and its
    /// kernels apply it, so that scaling stays `O(1)` there too: scales
    /// combine into one factor, so a value scaled twice is `v * (a * b)`,
    /// within a rounding of `(v * a) * b`.
    pub fn scale(&mut self, c: f64) {
        self.zeros_possible = true;
        if self.flat {
            self.pending_scale = Some(self.factor() * c);
            return;
        }
        for v in &mut self.pair_vals[1..] {
            *v *= c;
        }
    }

    /// The factor a flat batch's values are to be multiplied by (its
    /// `A*c` not yet applied); 1 for a tree.
    #[inline]
    pub(crate) fn factor(&self) -> f64 {
        match (self.flat, self.pending_scale) {
            (true, Some(c)) => c,
            _ => 1.0,
        }
    }

    /// `A^2` element-wise, in place, on the first layer only.
    pub fn square(&mut self) {
        let f = self.factor();
        self.pending_scale = None;
        for v in &mut self.pair_vals[1..] {
            *v *= f;
            *v *= *v;
        }
        self.zeros_possible = true;
    }

    /// The sum of all elements.
    pub fn sum(&self, ws: &mut Workspace) -> f64 {
        if self.flat {
            return flat::sum(self);
        }
        let mut total = 0.0;
        let pair = |k: usize| self.pair_vals[k];
        scalar::right_stored(self, &mut ws.node, pair, |_, s| total += s);
        total
    }

    /// Whether the first layer is so large compared with the codes that
    /// storing a partial product per pair costs more than computing it at
    /// each use (pairs barely repeat: mnist5k's pixel values).
    pub(crate) fn lazy_first_layer(&self) -> bool {
        2 * self.n_first_layer() > self.n_codes()
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
        self.shape().check_matvec(v.len(), out.len());
        let v = standard(v, &mut ws.operand);
        let pair = |k: usize| self.pair_vals[k] * v[self.pair_cols[k] as usize];
        // Writing through a contiguous slice rather than indexing the view
        // (a bounds and stride computation per row).
        match out.as_slice_mut() {
            Some(o) if self.flat => flat::matvec(self, v, |r, x| o[r] = x),
            Some(o) => scalar::right_stored(self, &mut ws.node, pair, |r, x| o[r] = x),
            None if self.flat => flat::matvec(self, v, |r, x| out[r] = x),
            None => scalar::right_stored(self, &mut ws.node, pair, |r, x| out[r] = x),
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
        out: ArrayViewMut1<'_, f64>,
        ws: &mut Workspace,
    ) {
        self.shape().check_vecmat(v.len(), out.len());
        let v = standard(v, &mut ws.operand);
        fill(out, &mut ws.pair, |acc| {
            if self.flat {
                flat::vecmat(self, v, acc)
            } else {
                scalar::left_stored(self, v, &mut ws.node, acc)
            }
        });
    }

    /// Adds `v . A` into `out` (not zeroed first): the gradient of a
    /// linear model accumulated page after page with no vector per page
    /// (see [`Batch::vecmat_add`](crate::formats::Batch::vecmat_add)).
    ///
    /// # Panics
    /// If `v.len() != n_rows()` or `out.len() != n_cols()`.
    pub fn vecmat_add(&self, v: &[f64], out: &mut [f64], ws: &mut Workspace) {
        self.shape().check_vecmat(v.len(), out.len());
        if self.flat {
            flat::vecmat(self, v, out)
        } else {
            scalar::left_stored(self, v, &mut ws.node, out)
        }
    }

    /// The gradient of a linear model on this batch, added into `out`:
    /// `out += s . A` where `s[r] = slope(r, (A.w)[r])`. `slope` is called
    /// once per row, in row order, with the row's dot product with `w`
    /// (the caller adds a bias, computes its loss and returns the loss
    /// derivative). One kernel (see `fused.rs`): the margins, the slopes
    /// and `v.A` share the tree and the workspace, with no per-row vector
    /// between them; [`Batch::linear_gradient_add_separate`](crate::formats::Batch::linear_gradient_add_separate)
    /// is the same result from `A.v` and `v.A` called one after the other.
    ///
    /// # Panics
    /// If `w.len() != n_cols()` or `out.len() != n_cols()`.
    pub fn linear_gradient_add(
        &self,
        w: &[f64],
        mut slope: impl FnMut(usize, f64) -> f64,
        out: &mut [f64],
        ws: &mut Workspace,
    ) {
        self.shape().check_matvec(w.len(), self.n_rows());
        check_dim("v.A", "out length", out.len(), self.n_cols);
        if self.flat {
            fused::flat(self, w, &mut slope, out)
        } else {
            fused::tree(self, w, &mut slope, &mut ws.node, &mut ws.pair, out)
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
        out: ArrayViewMut2<'_, f64>,
        ws: &mut Workspace,
    ) {
        let p = self.shape().check_matmat(m.dim(), out.dim());
        if p == 0 {
            return;
        }
        let m = standard(m, &mut ws.operand);
        if self.flat {
            return fill(out, &mut ws.pair, |o| flat::matmat(self, m, p, o));
        }
        // Rows accumulate in `out` itself when it is row-major (else in
        // scratch, copied once): a view per row plus a copy cost 10 to 15%
        // of A.M on the flight sets.
        let node = &mut ws.node;
        fill(out, &mut ws.pair, |o| {
            if self.lazy_first_layer() {
                wide::right_lazy(self, m, p, node, o);
            } else {
                wide::right_stored(self, m, p, node, o);
            }
        });
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
        let q = self.shape().check_left_matmat(m.dim(), out.dim());
        if q == 0 {
            return;
        }
        let mt = columns(m, &mut ws.operand);
        if let Some(o) = out.as_slice_mut() {
            if self.flat && flat::rows_direct(self) {
                o.fill(0.0);
                return flat::left_matmat_rows(self, mt, q, o);
            }
            if !self.flat && !self.lazy_first_layer() {
                o.fill(0.0);
                return wide::left_stored_rows(self, mt, q, &mut ws.node, &mut ws.pair, o);
            }
        }
        // The result accumulates column by column (`q` contiguous values
        // per column), in `out` itself when its columns are contiguous.
        fill_columns(out, &mut ws.pair, |acc| {
            if self.flat {
                flat::left_matmat(self, mt, q, acc);
            } else if self.lazy_first_layer() {
                wide::left_lazy(self, mt, q, &mut ws.node, acc);
            } else {
                wide::left_stored(self, mt, q, &mut ws.node, acc);
            }
        });
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
        let factor = self.factor();
        for r in 0..self.n_rows() {
            if self.flat {
                // Entry j is pair j + 1 (the key array may be gone).
                let (s, e) = (self.row_starts[r] as usize, self.row_starts[r + 1] as usize);
                for k in s + 1..e + 1 {
                    dense[[r, self.pair_cols[k] as usize]] = self.pair_vals[k] * factor;
                }
                continue;
            }
            for &code in self.row_codes(r) {
                let mut node = code as usize;
                while node != 0 {
                    let pair = self.key[node] as usize;
                    dense[[r, self.pair_cols[pair] as usize]] = self.pair_vals[pair] * factor;
                    node = self.parent[node] as usize;
                }
            }
        }
        dense
    }
}

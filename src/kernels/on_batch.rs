//! The kernels where a user looks: on the encoded batch itself.
//! [`TocBatch::kernels`] rebuilds the decode tree once (TOC Algorithm 2)
//! and keeps it with a workspace, so that a step needing several
//! products (every GLM needs `A.v` and `v.A`) pays for it once; the
//! one-shot methods ([`TocBatch::matvec`], ...) build it per call.
//! Vectors are `&[f64]` throughout, matrices ndarray views; a wrong
//! length is an [`Error::LengthMismatch`], not a panic.

use ndarray::{Array2, ArrayView1, ArrayView2};

use super::Workspace;
use crate::codec::{DecodeTree, TocBatch};
use crate::error::{Error, Result};

/// An encoded batch with its decode tree and a workspace: the products of
/// TOC section 4 on the compressed form (see [`TocBatch::kernels`]).
#[derive(Debug)]
pub struct BatchKernels {
    tree: DecodeTree,
    ws: Workspace,
}

fn check(what: &'static str, expected: usize, found: usize) -> Result<()> {
    match expected == found {
        true => Ok(()),
        false => Err(Error::LengthMismatch {
            what,
            expected: expected as u64,
            found: found as u64,
        }),
    }
}

impl BatchKernels {
    /// Rows of the batch.
    pub fn n_rows(&self) -> usize {
        self.tree.n_rows()
    }

    /// Columns of the batch.
    pub fn n_cols(&self) -> usize {
        self.tree.n_cols()
    }

    /// `A . v`: one value per row.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `v` has one value per column.
    pub fn matvec(&mut self, v: &[f64]) -> Result<Vec<f64>> {
        check(
            "vector of A.v (one value per column)",
            self.n_cols(),
            v.len(),
        )?;
        Ok(self
            .tree
            .matvec(ArrayView1::from(v), &mut self.ws)
            .into_raw_vec_and_offset()
            .0)
    }

    /// `v . A`: one value per column.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `v` has one value per row.
    pub fn vecmat(&mut self, v: &[f64]) -> Result<Vec<f64>> {
        check("vector of v.A (one value per row)", self.n_rows(), v.len())?;
        let mut out = vec![0.0; self.n_cols()];
        self.tree.vecmat_add(v, &mut out, &mut self.ws);
        Ok(out)
    }

    /// `A . M` for `M` of `n_cols` rows: `n_rows x M.ncols()`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `M` has one row per column.
    pub fn matmat(&mut self, m: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        check(
            "rows of M in A.M (one per column)",
            self.n_cols(),
            m.nrows(),
        )?;
        Ok(self.tree.matmat(m, &mut self.ws))
    }

    /// `M . A` for `M` of `n_rows` columns: `M.nrows() x n_cols`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `M` has one column per row.
    pub fn left_matmat(&mut self, m: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        check(
            "columns of M in M.A (one per row)",
            self.n_rows(),
            m.ncols(),
        )?;
        Ok(self.tree.left_matmat(m, &mut self.ws))
    }

    /// Not part of the API (hidden): used by front ends and tests; may
    /// change in any release.
    ///
    /// The kernels of the mini-batch made of `pages`, rows in page order,
    /// on one tree ([`DecodeTree::build_pages`]): version-3 pages of one
    /// segment share the products of the pairs and shared nodes they use.
    ///
    /// # Errors
    /// As [`DecodeTree::build_pages`].
    #[doc(hidden)]
    pub fn of_pages<B: AsRef<[u8]>>(pages: &[TocBatch<B>]) -> Result<BatchKernels> {
        let mut tree = DecodeTree::default();
        tree.build_pages(pages)?;
        tree.settle_for_kernels();
        Ok(BatchKernels {
            tree,
            ws: Workspace::new(),
        })
    }

    /// The sum of every element.
    pub fn sum(&mut self) -> f64 {
        self.tree.sum(&mut self.ws)
    }

    /// The batch as a dense matrix.
    pub fn to_dense(&self) -> Array2<f64> {
        self.tree.to_dense()
    }
}

impl<B: AsRef<[u8]>> TocBatch<B> {
    /// The batch's kernels: its decode tree rebuilt once (`O(|D|)`) and
    /// kept for every product asked of it.
    ///
    /// ```
    /// use tocpile::{encode, SparseBatch};
    ///
    /// let rows = SparseBatch::from_dense_rows(3, &[[1.0, 0.0, 2.0], [1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])?;
    /// let batch = encode(&rows)?;
    /// let mut k = batch.kernels();
    /// assert_eq!(k.matvec(&[1.0, 1.0, 1.0])?, [3.0, 3.0, 3.0]);
    /// assert_eq!(k.vecmat(&[1.0, 1.0, 1.0])?, [2.0, 3.0, 4.0]);
    /// # Ok::<(), tocpile::Error>(())
    /// ```
    pub fn kernels(&self) -> BatchKernels {
        let mut tree = self.tree();
        tree.settle_for_kernels();
        BatchKernels {
            tree,
            ws: Workspace::new(),
        }
    }

    /// `A . v` (the tree rebuilt for this call: see [`kernels`](Self::kernels)).
    ///
    /// # Errors
    /// As [`BatchKernels::matvec`].
    pub fn matvec(&self, v: &[f64]) -> Result<Vec<f64>> {
        self.kernels().matvec(v)
    }

    /// `v . A` (the tree rebuilt for this call).
    ///
    /// # Errors
    /// As [`BatchKernels::vecmat`].
    pub fn vecmat(&self, v: &[f64]) -> Result<Vec<f64>> {
        self.kernels().vecmat(v)
    }

    /// `A . M` (the tree rebuilt for this call).
    ///
    /// # Errors
    /// As [`BatchKernels::matmat`].
    pub fn matmat(&self, m: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.kernels().matmat(m)
    }

    /// `M . A` (the tree rebuilt for this call).
    ///
    /// # Errors
    /// As [`BatchKernels::left_matmat`].
    pub fn left_matmat(&self, m: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        self.kernels().left_matmat(m)
    }
}

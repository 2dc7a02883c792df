//! A private timing of the kernels inside Rust, for
//! `experiments/python_bench.py`: the same decode tree and operands the
//! Python calls use, timed without crossing into Python, so the two can be
//! compared in one run.

use std::time::Instant;

use numpy::ndarray::{Array1, Array2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tocpile::Workspace;

use crate::batch::PyTocBatch;

/// Seconds per call of each kernel on `batch`, timed in Rust: the median
/// of `rounds` rounds of `calls` calls each. `p` is the width of `M` for
/// `matmat` and the height for `matmat_left`. Operands are all ones
/// (kernel time does not depend on their values).
#[pyfunction]
#[pyo3(name = "_bench_kernels", signature = (batch, calls = 1000, rounds = 5, p = 20))]
pub(crate) fn bench_kernels<'py>(
    py: Python<'py>,
    batch: PyRef<'py, PyTocBatch>,
    calls: usize,
    rounds: usize,
    p: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let (n, d) = (batch.batch.n_rows(), batch.batch.n_cols());
    let tree = &batch.tree;
    let times = py.detach(|| {
        let mut ws = Workspace::new();
        let (vc, vr) = (Array1::<f64>::ones(d), Array1::<f64>::ones(n));
        let (mut on, mut od) = (Array1::<f64>::zeros(n), Array1::<f64>::zeros(d));
        let (mr, ml) = (Array2::<f64>::ones((d, p)), Array2::<f64>::ones((p, n)));
        let (mut omr, mut oml) = (Array2::<f64>::zeros((n, p)), Array2::<f64>::zeros((p, d)));
        let mut time = |f: &mut dyn FnMut(&mut Workspace)| {
            let mut per_round: Vec<f64> = (0..rounds.max(1))
                .map(|_| {
                    let start = Instant::now();
                    for _ in 0..calls.max(1) {
                        f(&mut ws);
                    }
                    start.elapsed().as_secs_f64() / calls.max(1) as f64
                })
                .collect();
            per_round.sort_by(f64::total_cmp);
            per_round[per_round.len() / 2]
        };
        [
            (
                "matvec",
                time(&mut |ws| tree.matvec_into(vc.view(), on.view_mut(), ws)),
            ),
            (
                "vecmat",
                time(&mut |ws| tree.vecmat_into(vr.view(), od.view_mut(), ws)),
            ),
            (
                "matmat",
                time(&mut |ws| tree.matmat_into(mr.view(), omr.view_mut(), ws)),
            ),
            (
                "matmat_left",
                time(&mut |ws| tree.left_matmat_into(ml.view(), oml.view_mut(), ws)),
            ),
        ]
    });
    let out = PyDict::new(py);
    for (name, seconds) in times {
        out.set_item(name, seconds)?;
    }
    Ok(out)
}

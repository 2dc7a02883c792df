"""Model.decision_function of a linear model against scipy's ``X @ w + b``
(numpy's for dense rows), on one thread and on all, in one run.

    python python/benchmarks/predict_vs_scipy.py [--rows 400000] [--cols 100]
        [--density 0.1] [--dense-rows 100000] [--repeat 15]

Inputs: a CSR matrix with int32 indices (scipy's default), the same with
int64 indices, and a dense C-contiguous array (the first --dense-rows
rows). Each thread setting runs in its own process (the library's pool
takes its size from RAYON_NUM_THREADS when it starts): 1 thread, then
the default (one per core). scipy and numpy run on one thread in both
(OPENBLAS_NUM_THREADS=1 etc. are left as the caller set them; scipy's
sparse product is single-threaded). Within a process each timing of ours
is paired with one of the baseline taken just before, so that a shared
machine's load hits both alike; the ratio is the median over the pairs of
baseline time over ours (above 1.0: faster than scipy). Prints the load
average next to the figures.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

import tocpile


def seconds(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def measure(args):
    """One process: every input, pairs of (baseline, ours) timings."""
    X = sp.load_npz(os.path.join(args.dir, "X.npz")).tocsr()
    m = tocpile.Model.load(os.path.join(args.dir, "lr.model"))
    w, b = m.layers[0]
    w, b = np.ascontiguousarray(w[:, 0]), float(b[0])
    X64 = X.copy()
    X64.indices = X64.indices.astype(np.int64)
    X64.indptr = X64.indptr.astype(np.int64)
    dense = X[: args.dense_rows].toarray()
    out = {}
    for name, x in [("CSR int32", X), ("CSR int64", X64), ("dense", dense)]:
        np.testing.assert_allclose(m.decision_function(x), x @ w + b, rtol=1e-12, atol=1e-12)
        pairs = []
        for _ in range(args.repeat):
            base = seconds(lambda: x @ w + b)
            ours = seconds(lambda: m.decision_function(x))
            pairs.append((base, ours))
        out[name] = {
            "baseline_ms": 1e3 * statistics.median(p[0] for p in pairs),
            "ours_ms": 1e3 * statistics.median(p[1] for p in pairs),
            "ratio": statistics.median(p[0] / p[1] for p in pairs),
        }
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--cols", type=int, default=100)
    ap.add_argument("--density", type=float, default=0.1)
    ap.add_argument("--dense-rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.dir:
        return measure(a)
    rng = np.random.default_rng(0)
    X = sp.random(a.rows, a.cols, density=a.density, format="csr", random_state=rng)
    y = (X @ rng.normal(size=a.cols) > 0).astype(float)
    cpus = os.cpu_count()
    print(f"{a.rows} x {a.cols} rows, density {a.density}, nnz {X.nnz}; dense: first "
          f"{min(a.dense_rows, a.rows)} rows; {cpus} cpus; load average at start "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        tocpile.encode(X[:20_000], y[:20_000], os.path.join(tmp, "train.toc"))
        tocpile.train(os.path.join(tmp, "train.toc"), "lr", epochs=1).save(
            os.path.join(tmp, "lr.model"))
        sp.save_npz(os.path.join(tmp, "X.npz"), X)
        rows = []
        for threads in ["1", str(cpus)]:
            env = dict(os.environ, RAYON_NUM_THREADS=threads)
            child = subprocess.run(
                [sys.executable, __file__, "--dir", tmp, "--repeat", str(a.repeat),
                 "--dense-rows", str(a.dense_rows)],
                env=env, check=True, capture_output=True, text=True)
            for name, r in json.loads(child.stdout).items():
                rows.append((name, threads, r))
    print("| input | threads | scipy / numpy ms | decision_function ms | baseline / ours |")
    print("|---|---:|---:|---:|---:|")
    for name, threads, r in rows:
        print(f"| {name} | {threads} | {r['baseline_ms']:.2f} | {r['ours_ms']:.2f} | "
              f"{r['ratio']:.2f} |")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Model.decision_function over a whole sparse matrix against scipy's
``X @ w + b`` (and the one-page path it replaced), in one run.

    python python/benchmarks/predict_vs_scipy.py [--rows 400000] [--cols 100] [--density 0.1]

Prints the median of several timings of each (scipy and ours
interleaved) and the ratios (scipy time over ours: above 1.0 is faster
than scipy).
"""

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import scipy.sparse as sp

import tocpile


def median_seconds(f, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--cols", type=int, default=100)
    ap.add_argument("--density", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    X = sp.random(a.rows, a.cols, density=a.density, format="csr", random_state=rng)
    y = (X @ rng.normal(size=a.cols) > 0).astype(float)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.toc")
        tocpile.encode(X[:20_000], y[:20_000], path)
        m = tocpile.train(path, "lr", epochs=1)
    w, b = m.layers[0]
    w, b = np.ascontiguousarray(w[:, 0]), float(b[0])
    ours = m.decision_function(X)
    np.testing.assert_allclose(ours, X @ w + b, rtol=1e-12, atol=1e-12)
    # Interleaved, so that the load of a shared machine hits both alike.
    pairs = [(median_seconds(lambda: X @ w + b, 1), median_seconds(lambda: m.decision_function(X), 1))
             for _ in range(a.repeat)]
    t_scipy = statistics.median(p[0] for p in pairs)
    t_ours = statistics.median(p[1] for p in pairs)
    t_page = median_seconds(lambda: m._reference_scores(X), max(1, a.repeat // 3))
    print(f"{a.rows} x {a.cols} rows, density {a.density}, nnz {X.nnz}, {os.cpu_count()} cpus")
    print(f"scipy X @ w + b            {t_scipy * 1e3:8.2f} ms")
    print(f"Model.decision_function    {t_ours * 1e3:8.2f} ms   scipy/ours = {t_scipy / t_ours:.2f}")
    print(f"one CSR page (the old path) {t_page * 1e3:7.2f} ms   scipy/old  = {t_scipy / t_page:.2f}")
    Xd = X[:100_000].toarray()
    t_np = median_seconds(lambda: Xd @ w + b, a.repeat)
    t_dense = median_seconds(lambda: m.decision_function(Xd), a.repeat)
    print(f"dense 100000 x {a.cols}: numpy {t_np * 1e3:.2f} ms, ours {t_dense * 1e3:.2f} ms, "
          f"numpy/ours = {t_np / t_dense:.2f}")


if __name__ == "__main__":
    main()

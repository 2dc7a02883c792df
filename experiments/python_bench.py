#!/usr/bin/env python3
"""The Python package against its targets (docs/archive/RESULTS-HISTORY.md, section
"Python package"), measured in one run:

1. Iterating a CorgiPile epoch over a dataset file from Python as
   scipy CSR mini-batches (tocpile.Loader) against reading the same data
   with scikit-learn's load_svmlight_file and a Python shuffle-and-slice
   loop (a permutation, then X[idx] for each 250-row slice): examples/s.
2. The kernels (A.v, v.A, A.M, M.A with p = 20) called from Python on
   250-row TocBatches of shuffled rows of the same data, against the same kernels on the
   same decode trees timed inside Rust (tocpile._tocpile._bench_kernels):
   time per call, as a ratio.

Usage (from the repository root, with numpy, scipy, scikit-learn and the
package installed, e.g. `pip install ./python scikit-learn`):

    python experiments/python_bench.py [--data ../shared/data/flights3m.libsvm.gz]
        [--toc /tmp/flights3m.toc] [--epochs 2] [--batches 20] [--calls 2000]

The dataset file is encoded once with the command line
(target/release/tocpile encode --page-rows 50 --block-bytes 262144: about
100 blocks, so that the 10% buffer holds ten) unless --toc exists.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

import tocpile

REPO = pathlib.Path(__file__).resolve().parents[1]


def encode(data, toc):
    cli = os.environ.get("TOCPILE_CLI", str(REPO / "target" / "release" / "tocpile"))
    subprocess.run(
        [cli, "encode", str(data), "--page-rows", "50", "--block-bytes", "262144", "-o", str(toc)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def loader_epochs(toc, epochs, batch):
    """Examples/s of each CorgiPile epoch as scipy CSR batches."""
    rates = []
    loader = tocpile.Loader(toc, shuffle="corgipile", batch_size=batch, seed=1)
    for _ in range(epochs):
        start = time.perf_counter()
        rows = nnz = 0
        for X, y in loader:
            rows += X.shape[0]
            nnz += X.nnz
        rates.append(rows / (time.perf_counter() - start))
    return rates, rows


def sklearn_epochs(data, epochs, batch, n_features):
    """load_svmlight_file, then a shuffle-and-slice loop per epoch:
    examples/s of the first epoch (load included) and of each loop alone."""
    from sklearn.datasets import load_svmlight_file

    start = time.perf_counter()
    X, y = load_svmlight_file(str(data), n_features=n_features)
    load = time.perf_counter() - start
    n = X.shape[0]
    rng = np.random.default_rng(1)
    loops = []
    for _ in range(epochs):
        start = time.perf_counter()
        perm = rng.permutation(n)
        rows = nnz = 0
        for i in range(0, n, batch):
            idx = perm[i : i + batch]
            Xb, yb = X[idx], y[idx]
            rows += Xb.shape[0]
            nnz += Xb.nnz
        loops.append(time.perf_counter() - start)
    return load, loops, n


def seconds_per_call(f, calls):
    start = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - start) / calls


def kernels(X, n_batches, calls, rounds=7, p=20, rows=250, seed=42):
    """Per-call seconds from Python (into out=, and allocating the result)
    and in Rust, on 250-row batches of shuffled rows (as `tocpile bench
    kernels --shuffle`). The machine is shared, so the three are timed in
    alternation, round after round, and each keeps its fastest round."""
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    ops = ["matvec", "vecmat", "matmat", "matmat_left"]
    out = {op: {"python_out": [], "python_alloc": [], "rust": []} for op in ops}
    for k in range(n_batches):
        b = tocpile.TocBatch(X[np.sort(perm[k * rows : (k + 1) * rows])])
        n, d = b.shape
        vc, vr = np.ones(d), np.ones(n)
        on, od = np.zeros(n), np.zeros(d)
        mr, ml = np.ones((d, p)), np.ones((p, n))
        omr, oml = np.zeros((n, p)), np.zeros((p, d))
        cases = {
            "matvec": (lambda: b.matvec(vc, out=on), lambda: b.matvec(vc)),
            "vecmat": (lambda: b.vecmat(vr, out=od), lambda: b.vecmat(vr)),
            "matmat": (lambda: b.matmat(mr, out=omr), lambda: b.matmat(mr)),
            "matmat_left": (lambda: b.matmat_left(ml, out=oml), lambda: b.matmat_left(ml)),
        }
        best = {op: [float("inf")] * 3 for op in ops}
        for _ in range(rounds):
            rust = tocpile._bench_kernels(b, calls=calls, rounds=1, p=p)
            for op, (with_out, alloc) in cases.items():
                t = (rust[op], seconds_per_call(with_out, calls), seconds_per_call(alloc, calls))
                best[op] = [min(a, c) for a, c in zip(best[op], t)]
        for op in ops:
            out[op]["rust"].append(best[op][0])
            out[op]["python_out"].append(best[op][1])
            out[op]["python_alloc"].append(best[op][2])
    table = {}
    for op, t in out.items():
        ratios_out = [a / r for a, r in zip(t["python_out"], t["rust"])]
        ratios_alloc = [a / r for a, r in zip(t["python_alloc"], t["rust"])]
        table[op] = {
            "rust_us": statistics.median(t["rust"]) * 1e6,
            "python_out_us": statistics.median(t["python_out"]) * 1e6,
            "python_alloc_us": statistics.median(t["python_alloc"]) * 1e6,
            "ratio_out": statistics.median(ratios_out),
            "ratio_alloc": statistics.median(ratios_alloc),
        }
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "flights3m.libsvm.gz"))
    ap.add_argument("--toc", default="/tmp/tocpile-python-bench.toc")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--skip-sklearn", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    if not os.path.exists(args.toc):
        encode(args.data, args.toc)
    ds = tocpile.Dataset(args.toc)
    result = {"dataset": args.data, "rows": ds.n_rows, "cols": ds.n_cols}

    rates, rows = loader_epochs(args.toc, args.epochs, 250)
    result["tocpile_epochs_examples_per_s"] = rates
    if not args.skip_sklearn:
        load, loops, n = sklearn_epochs(args.data, args.epochs, 250, ds.n_cols)
        assert n == rows, (n, rows)
        result["sklearn_load_s"] = load
        result["sklearn_loop_s"] = loops
        first = n / (load + loops[0])
        later = [n / t for t in loops[1:]]
        result["sklearn_first_epoch_examples_per_s"] = first
        result["sklearn_later_epochs_examples_per_s"] = later
        result["ratio_first_epoch"] = rates[0] / first
        if later:
            result["ratio_later_epochs"] = statistics.median(rates[1:]) / statistics.median(later)
    X, _ = ds.read()
    result["kernels"] = kernels(X, args.batches, args.calls)

    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return
    print(f"{args.data}: {result['rows']} rows x {result['cols']} columns")
    print("tocpile CorgiPile epochs (scipy CSR batches of 250): "
          + ", ".join(f"{r / 1e6:.2f}M ex/s" for r in rates))
    if not args.skip_sklearn:
        print(f"sklearn load_svmlight_file: {result['sklearn_load_s']:.1f} s; "
              f"shuffle-and-slice loops: " + ", ".join(f"{t:.1f} s" for t in loops))
        print(f"sklearn epoch 0 (load + loop): {result['sklearn_first_epoch_examples_per_s'] / 1e6:.3f}M ex/s"
              f" -> tocpile {result['ratio_first_epoch']:.1f}x")
        if "ratio_later_epochs" in result:
            print(f"sklearn later epochs (loop only): "
                  + ", ".join(f"{r / 1e6:.3f}M ex/s" for r in result["sklearn_later_epochs_examples_per_s"])
                  + f" -> tocpile {result['ratio_later_epochs']:.1f}x")
    print("\n| kernel | Rust (us/call) | Python, out= (us) | ratio | Python, new array (us) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    names = {"matvec": "A.v", "vecmat": "v.A", "matmat": "A.M", "matmat_left": "M.A"}
    for op, t in result["kernels"].items():
        print(f"| {names[op]} | {t['rust_us']:.2f} | {t['python_out_us']:.2f} | {t['ratio_out']:.2f} "
              f"| {t['python_alloc_us']:.2f} | {t['ratio_alloc']:.2f} |")


if __name__ == "__main__":
    main()

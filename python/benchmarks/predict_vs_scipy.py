"""Model.decision_function of a linear model against scipy's ``X @ w + b``
(numpy's for dense rows), on one thread and on all, in one run.

    python python/benchmarks/predict_vs_scipy.py [--rows 400000] [--cols 100]
        [--density 0.1] [--dense-rows 100000] [--repeat 15] [--cli PATH]
        [--classes N]

Inputs: a CSR matrix with int32 indices (scipy's default), the same with
int64 indices, and a dense C-contiguous array (the first --dense-rows
rows). Each thread setting runs in its own process (the library's pool
takes its size from RAYON_NUM_THREADS when it starts): 1 thread, then
the default (one per core). scipy's sparse product runs on one thread;
numpy's dense one on its BLAS's threads (as OPENBLAS_NUM_THREADS etc.
set them). Within a process each timing of ours
is paired with one of the baseline taken just before, so that a shared
machine's load hits both alike; the ratio is the median over the pairs of
baseline time over ours (above 1.0: faster than scipy). Prints the load
average next to the figures.

With --classes N (2 or more), the model is a softmax of N classes and
the baseline ``X @ W + b``; the command line is then not measured.

Then the rows as a dataset file (``tocpile.encode``'s defaults), scored to
text: ``tocpile predict MODEL FILE --scores -o OUT`` (the command line,
--cli or target/release/tocpile; skipped if missing) against a scipy loop
over the file's rows (``Dataset.read_block`` for every block, ``X @ w +
b``, the scores written one per line with Python's ``repr``) and against
the file read whole (``Dataset.read``, ``X @ w + b``, the same text).
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
    m = tocpile.Model.load(os.path.join(args.dir, "scored.model"))
    w, b = m.layers[0]
    if w.shape[1] == 1:
        w, b = np.ascontiguousarray(w[:, 0]), float(b[0])
    else:
        w, b = np.ascontiguousarray(w), np.asarray(b)
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
    ap.add_argument("--cli", help="the tocpile binary (default: $TOCPILE_CLI or target/release/tocpile)")
    ap.add_argument("--classes", type=int, default=0,
                    help="a softmax of this many classes rather than lr")
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.dir:
        return measure(a)
    rng = np.random.default_rng(0)
    X = sp.random(a.rows, a.cols, density=a.density, format="csr", random_state=rng)
    if a.classes >= 2:
        y = np.asarray((X @ rng.normal(size=(a.cols, a.classes))).argmax(axis=1), dtype=float)
    else:
        y = (X @ rng.normal(size=a.cols) > 0).astype(float)
    cpus = os.cpu_count()
    print(f"{a.rows} x {a.cols} rows, density {a.density}, nnz {X.nnz}; dense: first "
          f"{min(a.dense_rows, a.rows)} rows; {cpus} cpus; load average at start "
          f"{os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        tocpile.encode(X[:20_000], y[:20_000], os.path.join(tmp, "train.toc"))
        kind = "softmax" if a.classes >= 2 else "lr"
        tocpile.train(os.path.join(tmp, "train.toc"), kind, epochs=1).save(
            os.path.join(tmp, "scored.model"))
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
        if a.classes < 2:
            cli_table(a, tmp, X)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def cli_table(a, tmp, X):
    """tocpile predict against scipy loops over the same file's rows."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cli = a.cli or os.environ.get("TOCPILE_CLI") or os.path.join(repo, "target", "release", "tocpile")
    if not os.path.exists(cli):
        print(f"(no command line at {cli}: tocpile predict not measured)")
        return
    path, model = os.path.join(tmp, "all.toc"), os.path.join(tmp, "scored.model")
    tocpile.encode(X, np.zeros(X.shape[0]), path)
    m = tocpile.Model.load(model)
    w, b = m.layers[0]
    w, b = np.ascontiguousarray(w[:, 0]), float(b[0])
    out = os.path.join(tmp, "scores.txt")
    ds = tocpile.Dataset(path)

    def command():
        subprocess.run([cli, "predict", model, path, "--scores", "-o", out], check=True)

    def write(scores):
        with open(out, "w") as f:
            f.write("\n".join(map(repr, scores.tolist())) + "\n")

    def per_block():
        write(np.concatenate([ds.read_block(i)[0] @ w + b for i in range(ds.n_blocks)]))

    def whole():
        rows, _ = ds.read()
        write(rows @ w + b)

    triples = [(seconds(command), seconds(per_block), seconds(whole))
               for _ in range(max(3, a.repeat // 3))]
    ours = statistics.median(t[0] for t in triples)
    print(f"\ntocpile predict --scores -o FILE on the same rows as a dataset file "
          f"({ds.n_blocks} blocks), {len(triples)} interleaved rounds:")
    print("| scoring to text | ms | scipy / tocpile |")
    print("|---|---:|---:|")
    print(f"| tocpile predict (the command) | {ours * 1e3:.1f} | 1.00 |")
    for k, name in [(1, "scipy loop over the file's blocks (read_block, X @ w + b)"),
                    (2, "scipy on the file read whole (read, X @ w + b)")]:
        print(f"| {name} | {statistics.median(t[k] for t in triples) * 1e3:.1f} | "
              f"{statistics.median(t[k] / t[0] for t in triples):.2f} |")


if __name__ == "__main__":
    main()

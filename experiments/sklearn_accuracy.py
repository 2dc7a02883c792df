#!/usr/bin/env python3
"""Test accuracy of tocpile's default workflow against scikit-learn.

For every dataset in ../shared/data (and a Parquet copy of mushrooms with
its 22 categorical columns as strings, written here with pyarrow), the same
90/10 split on both sides:

- tocpile: default `tocpile encode` (max-abs scaling stored in the file),
  then `tocpile train --holdout 0.1 --save M` with default options (Adam,
  lr 0.03, 10 epochs, CorgiPile), then `tocpile evaluate M TEST.toc` on the
  held-out rows. The held-out rows are the ones `train --holdout 0.1`
  picks (a SplitMix64 hash of the row number under the seed, reproduced
  below bit for bit), so scikit-learn tests on exactly those rows; the
  test file for `evaluate` is written by `tocpile encode` from a LIBSVM
  file of those rows, with the training file's column count.
- scikit-learn: MaxAbsScaler fitted on the training rows, then
  SGDClassifier(loss="log_loss") (default options) and
  LogisticRegression (lbfgs, default C = 1, max_iter 1000).

Usage: sklearn_accuracy.py --tocpile PATH [--data-dir DIR] [--out-dir DIR]
       [--tocpile-parquet PATH] [--only a,b] [--flights-epochs N]
Writes sklearn_accuracy.json and sklearn_accuracy.md in experiments/results/.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.preprocessing import MaxAbsScaler

HERE = os.path.dirname(os.path.abspath(__file__))
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
HOLDOUT_STREAM = 0x484F4C444F555453  # "HOLDOUTS", src/dataset/split.rs

DATASETS = [
    # name, columns, model
    ("mushrooms", 98, "lr"),
    ("coil2000", 565, "lr"),
    ("census_fertility", 12, "lr"),
    ("mnist5k", 784, "softmax"),
    ("nycflights13", 4195, "lr"),
    ("flights3m", 496, "lr"),
]


def mix(z):
    """SplitMix64's finaliser on a uint64 numpy array (src/rng.rs)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def held_out(n_rows, fraction, seed):
    """tocpile::dataset::is_held_out for rows 0..n_rows."""
    with np.errstate(over="ignore"):
        g = np.uint64(GOLDEN)
        h = mix(np.uint64(seed) ^ g)
        h = mix(h ^ mix(np.uint64(HOLDOUT_STREAM) + g))
        rows = np.arange(n_rows, dtype=np.uint64)
        h = mix(h ^ mix(rows + g))
        x = mix(h + g)
    unit = (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
    return unit < fraction


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.stdout


def write_libsvm(path, X, y):
    X = X.tocsr()
    with open(path, "w") as f:
        for i in range(X.shape[0]):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            items = " ".join(
                f"{c + 1}:{v:.17g}" for c, v in zip(X.indices[lo:hi], X.data[lo:hi])
            )
            f.write(f"{y[i]:.17g} {items}\n")


def write_parquet(path, X, y, cols_txt):
    """mushrooms as a table: each categorical column a string column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [line.strip() for line in open(cols_txt)]
    groups = {}
    for j, name in enumerate(names):
        col, level = name.split("=", 1)
        groups.setdefault(col, []).append((j, level))
    X = X.tocsc()
    table = {}
    for col, levels in groups.items():
        values = np.array([""] * X.shape[0], dtype=object)
        for j, level in levels:
            rows = X.indices[X.indptr[j]:X.indptr[j + 1]]
            values[rows] = level
        table[col] = pa.array(values.tolist(), type=pa.string())
    table["label"] = pa.array(y.astype(np.int64))
    pq.write_table(pa.table(table), path, row_group_size=2000)


def sklearn_side(X, y, test, multiclass, seed):
    scaler = MaxAbsScaler().fit(X[~test])
    Xtr, Xte = scaler.transform(X[~test]), scaler.transform(X[test])
    ytr, yte = y[~test], y[test]
    if not multiclass:
        ytr, yte = (ytr > 0).astype(int), (yte > 0).astype(int)
    out = {}
    t = time.time()
    sgd = SGDClassifier(loss="log_loss", random_state=seed).fit(Xtr, ytr)
    out["sgd"] = float((sgd.predict(Xte) == yte).mean())
    out["sgd_seconds"] = time.time() - t
    t = time.time()
    lr = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
    out["logreg"] = float((lr.predict(Xte) == yte).mean())
    out["logreg_seconds"] = time.time() - t
    out["majority"] = float(max(np.mean(yte == c) for c in np.unique(yte)))
    return out


def tocpile_side(tocpile, source, test_libsvm, n_cols, model, work, seed, epochs,
                 source_args=()):
    toc = os.path.join(work, "train.toc")
    test_toc = os.path.join(work, "test.toc")
    saved = os.path.join(work, "model")
    run([tocpile, "encode", source, "-o", toc, *source_args])
    cmd = [tocpile, "train", toc, "--model", model, "--holdout", "0.1",
           "--seed", str(seed), "--save", saved, "--json"]
    if epochs is not None:
        cmd += ["--epochs", str(epochs)]
    t = time.time()
    trained = json.loads(run(cmd))
    seconds = time.time() - t
    run([tocpile, "encode", test_libsvm, "--cols", str(n_cols), "-o", test_toc])
    ev = json.loads(run([tocpile, "evaluate", saved, test_toc, "--json"]))
    return {
        "holdout_accuracy": trained["final_eval"]["accuracy"],
        "evaluate_accuracy": ev["accuracy"],
        "evaluate_rows": ev["rows"],
        "auc": ev.get("auc"),
        "running_training_accuracy": trained["final"]["accuracy"],
        "train_seconds": seconds,
        "epochs": len(trained["epochs"]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tocpile", required=True)
    ap.add_argument("--tocpile-parquet", help="a tocpile built with --features parquet")
    ap.add_argument("--data-dir", default=os.path.join(HERE, "..", "..", "shared", "data"))
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flights-epochs", type=int, default=3)
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    results = []
    for name, n_cols, model in DATASETS + [("mushrooms_parquet", 98, "lr")]:
        if only and name not in only:
            continue
        if name == "mushrooms_parquet" and not args.tocpile_parquet:
            print("skipping mushrooms_parquet (no --tocpile-parquet)", file=sys.stderr)
            continue
        base = name.replace("_parquet", "")
        path = os.path.join(args.data_dir, base + ".libsvm.gz")
        X, y = load_svmlight_file(path, n_features=n_cols)
        test = held_out(X.shape[0], 0.1, args.seed)
        print(f"{name}: {X.shape[0]} rows, {test.sum()} held out", file=sys.stderr)
        row = {"dataset": name, "rows": X.shape[0], "test_rows": int(test.sum()),
               "model": model}
        row.update(sklearn_side(X, y, test, model == "softmax", args.seed))
        epochs = args.flights_epochs if name == "flights3m" else None
        with tempfile.TemporaryDirectory() as work:
            test_libsvm = os.path.join(work, "test.libsvm")
            write_libsvm(test_libsvm, X[test], y[test])
            if name == "mushrooms_parquet":
                source = os.path.join(work, "mushrooms.parquet")
                write_parquet(source, X, y,
                              os.path.join(args.data_dir, "mushrooms.cols.txt"))
                # The Parquet file's one-hot columns come in the schema's
                # order; evaluate on the same rows through that schema.
                test_pq = os.path.join(work, "test.parquet")
                write_parquet(test_pq, X[test], y[test],
                              os.path.join(args.data_dir, "mushrooms.cols.txt"))
                toc = os.path.join(work, "train.toc")
                row.update(tocpile_side(args.tocpile_parquet, source, test_libsvm,
                                        n_cols, model, work, args.seed, epochs,
                                        ["--label-column", "label"]))
                test_toc = os.path.join(work, "test-pq.toc")
                run([args.tocpile_parquet, "encode", test_pq, "--label-column", "label",
                     "--schema", toc, "-o", test_toc])
                ev = json.loads(run([args.tocpile_parquet, "evaluate",
                                     os.path.join(work, "model"), test_toc, "--json"]))
                row["evaluate_accuracy"] = ev["accuracy"]
                row["evaluate_rows"] = ev["rows"]
            else:
                row.update(tocpile_side(args.tocpile, path, test_libsvm, n_cols, model,
                                        work, args.seed, epochs, ["--cols", str(n_cols)]))
        best = max(row["sgd"], row["logreg"])
        row["gap_points"] = 100.0 * (best - row["holdout_accuracy"])
        print(json.dumps(row), file=sys.stderr)
        results.append(row)
    with open(os.path.join(HERE, "results", "sklearn_accuracy.json"), "w") as f:
        json.dump(results, f, indent=2)
    lines = [
        "| dataset | model | test rows | tocpile held-out | tocpile evaluate | "
        "SGDClassifier | LogisticRegression | gap to the better (points) | majority |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['dataset']} | {r['model']} | {r['test_rows']} | "
            f"{100 * r['holdout_accuracy']:.2f}% | {100 * r['evaluate_accuracy']:.2f}% | "
            f"{100 * r['sgd']:.2f}% | {100 * r['logreg']:.2f}% | {r['gap_points']:+.2f} | "
            f"{100 * r['majority']:.2f}% |"
        )
    with open(os.path.join(HERE, "results", "sklearn_accuracy.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

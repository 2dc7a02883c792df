#!/usr/bin/env python3
"""Baseline training speed of well-known tools on tocpile's LIBSVM data sets.

Trains logistic regression with scikit-learn (SGDClassifier: mini-batch
partial_fit and plain fit), a hand-written scipy mini-batch SGD that follows
tocpile's update rule, and Vowpal Wabbit (if installed), and reports
examples/s and accuracy. Only training is timed; loading, shuffling,
splitting, format conversion and evaluation are not.

With --versus-tocpile BIN it times only the scipy mini-batch loop against
`tocpile train` with its default options, on the same training rows written
with `tocpile encode`'s default options, in interleaved rounds, and reports
the ratio from the same run.

Run through experiments/baselines.sh, which sets up a throw-away venv.
tocpile itself never depends on any of these tools.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import SGDClassifier

# Column counts from /work/shared/data/README.md: never inferred from data.
N_FEATURES = {
    "census_fertility": 12,
    "flights3m": 496,
    "nycflights13": 4195,
    "mushrooms": 98,
    "coil2000": 565,
}

BATCH = 250


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default=None,
                   help="comma-separated names (default: census_fertility,flights3m; "
                        "flights3m with --versus-tocpile)")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data-dir", default=os.environ.get(
        "TOCPILE_DATA_DIR", os.path.join(os.path.dirname(here), "..", "shared", "data")))
    p.add_argument("--json", default=os.path.join(here, "results", "baselines.json"))
    p.add_argument("--markdown", default=None,
                   help="also write the table (with versions) to this file")
    p.add_argument("--alpha", type=float, default=1e-6,
                   help="SGDClassifier L2 strength (default 1e-6)")
    p.add_argument("--sklearn-lr", default="optimal",
                   help="SGDClassifier learning_rate schedules, comma-separated "
                        "(optimal, constant, invscaling, adaptive; default optimal)")
    p.add_argument("--eta0", type=float, default=0.1,
                   help="eta0 for non-'optimal' sklearn schedules and the "
                        "scipy mini-batch rate (default 0.1, tocpile's default)")
    p.add_argument("--decay", type=float, default=0.95,
                   help="per-epoch decay of the scipy mini-batch rate (tocpile default 0.95)")
    p.add_argument("--fit-epochs", type=int, default=None,
                   help="epochs for sklearn plain fit if fewer than --epochs are feasible")
    p.add_argument("--skip", default="",
                   help="comma-separated modes to skip: partial_fit,fit,scipy,vw")
    p.add_argument("--versus-tocpile", metavar="BIN", default=None,
                   help="time only the scipy loop and `BIN train` (default options) on the "
                        "same rows; default dataset flights3m")
    p.add_argument("--rounds", type=int, default=3,
                   help="--versus-tocpile: interleaved rounds, medians reported (default 3)")
    args = p.parse_args(argv)
    if args.datasets is None:
        args.datasets = "flights3m" if args.versus_tocpile else "census_fertility,flights3m"
    return args


# ----------------------------------------------------------------- data

def load(data_dir, name, seed):
    path = os.path.join(data_dir, name + ".libsvm.gz")
    t0 = time.perf_counter()
    X, y = load_svmlight_file(path, n_features=N_FEATURES[name],
                              zero_based=False, dtype=np.float64)
    X = sp.csr_matrix(X)
    X.sort_indices()
    y = y.astype(np.float64)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(X.shape[0])
    X, y = X[perm], y[perm]
    n_train = int(round(0.9 * X.shape[0]))
    # Max-abs scaling fitted on the training rows, as tocpile's experiments
    # do (sparsity kept; raw columns run into the thousands otherwise).
    from sklearn.preprocessing import MaxAbsScaler
    scaler = MaxAbsScaler().fit(X[:n_train])
    X = sp.csr_matrix(scaler.transform(X))
    split = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    print(f"[{name}] loaded {X.shape[0]} x {X.shape[1]} (nnz {X.nnz}) in "
          f"{time.perf_counter() - t0:.1f}s; train {n_train}, test {X.shape[0] - n_train}",
          file=sys.stderr, flush=True)
    return split


def result(dataset, tool, mode, epochs, rows, seconds, test_acc, train_acc, notes):
    return {
        "dataset": dataset, "tool": tool, "mode": mode, "epochs": epochs,
        "rows": rows, "seconds": seconds,
        "examples_per_second": rows * epochs / seconds if seconds > 0 else None,
        "test_accuracy": test_acc, "train_accuracy": train_acc, "notes": notes,
    }


# -------------------------------------------------------------- sklearn

def sk_partial_fit(Xtr, ytr, Xte, yte, epochs, lr, args):
    clf = SGDClassifier(loss="log_loss", penalty="l2", alpha=args.alpha,
                        learning_rate=lr, eta0=args.eta0, max_iter=1, tol=None,
                        shuffle=False, random_state=args.seed)
    classes = np.array([0.0, 1.0])
    n = Xtr.shape[0]
    # Pre-slice the batches (not timed, like tocpile's encode step).
    batches = [(Xtr[i:i + BATCH], ytr[i:i + BATCH]) for i in range(0, n, BATCH)]
    t0 = time.perf_counter()
    for _ in range(epochs):
        for Xb, yb in batches:
            clf.partial_fit(Xb, yb, classes=classes)
    secs = time.perf_counter() - t0
    return clf, secs


def sk_fit(Xtr, ytr, epochs, lr, args):
    clf = SGDClassifier(loss="log_loss", penalty="l2", alpha=args.alpha,
                        learning_rate=lr, eta0=args.eta0, max_iter=epochs, tol=None,
                        shuffle=True, random_state=args.seed)
    t0 = time.perf_counter()
    clf.fit(Xtr, ytr)
    secs = time.perf_counter() - t0
    return clf, secs


# ------------------------------------------- scipy mini-batch (tocpile rule)

def scipy_minibatch(Xtr, ytr, epochs, args):
    """Mean-gradient mini-batch SGD: w -= lr_e * mean_grad, lr_e = eta0 * decay^e."""
    n, d = Xtr.shape
    batches = [(Xtr[i:i + BATCH], ytr[i:i + BATCH]) for i in range(0, n, BATCH)]
    batches = [(Xb, Xb.T.tocsr(), yb) for Xb, yb in batches]  # transposes: not timed
    w = np.zeros(d)
    b = 0.0
    t0 = time.perf_counter()
    for e in range(epochs):
        lr = args.eta0 * args.decay ** e
        for Xb, XbT, yb in batches:
            z = Xb @ w + b
            with np.errstate(over="ignore"):  # exp(-z) -> inf gives sigmoid 0, as wanted
                g = 1.0 / (1.0 + np.exp(-z)) - yb
            step = lr / yb.shape[0]
            w -= step * (XbT @ g)
            b -= step * g.sum()
    secs = time.perf_counter() - t0
    return w, b, secs


def linear_accuracy(X, y, w, b):
    return float(np.mean(((X @ w + b) > 0.0) == (y > 0.5)))


# ------------------------------------------------------------ Vowpal Wabbit

def vw_available():
    try:
        import vowpalwabbit  # noqa: F401
        return True, vowpalwabbit.__version__
    except Exception as e:  # ImportError or a broken native library
        return False, f"{type(e).__name__}: {e}"


def write_vw(path, X, y):
    """VW text: '<+1|-1> |f <idx>:<val> ...' with the original 1-based indices."""
    indptr, indices, data = X.indptr, X.indices, X.data
    with open(path, "w", buffering=1 << 20) as f:
        lines = []
        for r in range(X.shape[0]):
            a, bnd = indptr[r], indptr[r + 1]
            feats = " ".join(f"{j + 1}:{v:g}" for j, v in zip(indices[a:bnd], data[a:bnd]))
            lines.append(("1" if y[r] > 0.5 else "-1") + " |f " + feats)
            if len(lines) >= 100_000:
                f.write("\n".join(lines) + "\n")
                lines = []
        if lines:
            f.write("\n".join(lines) + "\n")


def vw_run(args_list):
    from vowpalwabbit import Workspace
    ws = Workspace(arg_list=args_list, enable_logging=True)  # runs the driver for -d
    ws.finish()
    return "\n".join(ws.get_log())


def vw_train_eval(name, Xtr, ytr, Xte, yte, epochs, tmp):
    tr, te = os.path.join(tmp, f"{name}.train.vw"), os.path.join(tmp, f"{name}.test.vw")
    cache, model = tr + ".cache", os.path.join(tmp, f"{name}.model")
    t0 = time.perf_counter()
    write_vw(tr, Xtr, ytr)
    write_vw(te, Xte, yte)
    common = ["--loss_function", "logistic", "--holdout_off", "--quiet"]
    # Untimed: build the cache from text with a throw-away 1-pass run.
    vw_run(["-d", tr, "--cache_file", cache, "--passes", "1"] + common)
    print(f"[{name}] VW text+cache written in {time.perf_counter() - t0:.1f}s",
          file=sys.stderr, flush=True)
    # Timed: epochs passes reading the existing cache.
    t0 = time.perf_counter()
    log = vw_run(["-d", tr, "--cache_file", cache, "--passes", str(epochs),
                  "-f", model] + common)
    secs = time.perf_counter() - t0
    accs = []
    for data, labels in ((te, yte), (tr, ytr)):
        preds = os.path.join(tmp, f"{name}.preds")
        vw_run(["-t", "-i", model, "-d", data, "-r", preds, "--quiet"])
        raw = np.loadtxt(preds, usecols=0, ndmin=1)
        accs.append(float(np.mean((raw > 0.0) == (labels > 0.5))))
    for f in (tr, te, cache, model, preds):
        if os.path.exists(f):
            os.remove(f)
    return secs, accs[0], accs[1], log


# ------------------------------------------- scipy loop against tocpile train

def write_libsvm(path, X, y):
    """LIBSVM text with 1-based indices; values in numpy's shortest
    round-trip form, so tocpile reads exactly the rows scipy trains on."""
    with open(path, "w", buffering=1 << 20) as f:
        for start in range(0, X.shape[0], 100_000):
            chunk = X[start:start + 100_000]
            tokens = np.char.add(np.char.add((chunk.indices + 1).astype(str), ":"),
                                 chunk.data.astype(str))
            labels = [format(v, "g") for v in y[start:start + 100_000]]
            ptr = chunk.indptr
            f.write("\n".join(labels[r] + " " + " ".join(tokens[ptr[r]:ptr[r + 1]])
                              for r in range(chunk.shape[0])))
            f.write("\n")


def tocpile_train(binary, train_file, test_file, epochs):
    """`tocpile train` with its defaults (CorgiPile, --mode auto, batch 250,
    lr 0.1, decay 0.95); training seconds are the sum of its epochs'."""
    cmd = [binary, "train", train_file, "--epochs", str(epochs), "--eval", test_file, "--json"]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    doc = json.loads(res.stdout)
    secs = sum(e["seconds"] for e in doc["epochs"])
    wait = sum(e["wait_seconds"] for e in doc["epochs"])
    return doc, secs, wait, " ".join(cmd), res.stderr.strip()


def versus_tocpile(args, name, Xtr, ytr, Xte, yte):
    """The scipy loop and `tocpile train` on the same training rows, in
    interleaved rounds; examples/s of training only, medians."""
    binary, E, n = args.versus_tocpile, args.epochs, Xtr.shape[0]
    with tempfile.TemporaryDirectory(prefix="tocpile-versus-") as tmp:
        files = {}
        for part, X, y in (("train", Xtr, ytr), ("test", Xte, yte)):
            text = os.path.join(tmp, f"{name}.{part}.libsvm")
            write_libsvm(text, X, y)
            files[part] = os.path.join(tmp, f"{name}.{part}.toc")
            enc = [binary, "encode", text, "--cols", str(X.shape[1]), "-o", files[part], "--json"]
            info = json.loads(subprocess.run(enc, check=True, capture_output=True,
                                             text=True).stdout)
            if part == "train":
                encode_cmd, encode_info = " ".join(enc), info
            os.remove(text)
        scipy_secs, toc_secs, toc_wait, toc_docs = [], [], [], []
        for r in range(args.rounds):
            w, b, secs = scipy_minibatch(Xtr, ytr, E, args)
            scipy_secs.append(secs)
            doc, secs, wait, train_cmd, warnings = tocpile_train(
                binary, files["train"], files["test"], E)
            toc_secs.append(secs)
            toc_wait.append(wait / secs)
            toc_docs.append(doc)
            print(f"[{name}] round {r + 1}: scipy {scipy_secs[-1]:.2f}s, tocpile {secs:.2f}s "
                  f"({100 * wait / secs:.0f}% waiting)", file=sys.stderr, flush=True)
    s_med, t_med = float(np.median(scipy_secs)), float(np.median(toc_secs))
    last = toc_docs[-1]
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "dataset": name, "train_rows": n, "epochs": E, "rounds": args.rounds,
        "tocpile_version": version,
        "scipy": {"seconds": scipy_secs, "median_seconds": s_med,
                  "examples_per_second": n * E / s_med,
                  "test_accuracy": linear_accuracy(Xte, yte, w, b),
                  "train_accuracy": linear_accuracy(Xtr, ytr, w, b)},
        "tocpile": {"seconds": toc_secs, "median_seconds": t_med,
                    "examples_per_second": n * E / t_med,
                    "wait_share": float(np.median(toc_wait)),
                    "mode": last["mode"], "strategy": last["strategy"],
                    "test_accuracy": last["final_eval"]["accuracy"],
                    "train_accuracy_running": last["final"]["accuracy"],
                    "encode_command": encode_cmd, "train_command": train_cmd,
                    "file": {k: encode_info[k] for k in
                             ("file_bytes", "page_rows", "block_bytes", "blocks", "pages")},
                    "warnings": warnings},
        "tocpile_over_scipy": s_med / t_med,
    }


def versus_table(rows):
    out = ["| dataset | train rows | epochs | scipy loop s | scipy examples/s | tocpile s "
           "| tocpile examples/s | tocpile / scipy | tocpile mode | tocpile wait share "
           "| test accuracy scipy / tocpile |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
    for v in rows:
        s, t = v["scipy"], v["tocpile"]
        out.append(f"| {v['dataset']} | {v['train_rows']:,} | {v['epochs']} "
                   f"| {s['median_seconds']:.2f} | {s['examples_per_second'] / 1e6:.2f}M "
                   f"| {t['median_seconds']:.2f} | {t['examples_per_second'] / 1e6:.2f}M "
                   f"| {v['tocpile_over_scipy']:.2f}x | {t['mode']}, {t['strategy']} "
                   f"| {100 * t['wait_share']:.0f}% "
                   f"| {s['test_accuracy']:.4f} / {t['test_accuracy']:.4f} |")
    return "\n".join(out)


def versus_main(args, versions):
    load_start = os.getloadavg()
    rows = []
    for name in filter(None, args.datasets.split(",")):
        if name not in N_FEATURES:
            sys.exit(f"unknown dataset {name!r}; known: {', '.join(N_FEATURES)}")
        Xtr, ytr, Xte, yte = load(args.data_dir, name, args.seed)
        rows.append(versus_tocpile(args, name, Xtr, ytr, Xte, yte))
    table = versus_table(rows)
    ver_line = "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v) \
        + f", {rows[0]['tocpile_version']}"
    print(table)
    print()
    print(ver_line)
    with open(args.json, "w") as f:
        json.dump({"versions": versions, "batch_rows": BATCH, "seed": args.seed,
                   "split": "90/10 after one shuffle",
                   "load_average": {"start": load_start, "end": os.getloadavg()},
                   "results": rows}, f, indent=2)
        f.write("\n")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"# scipy mini-batch loop against `tocpile train`: {args.datasets}, "
                    f"{args.epochs} epochs, median of {args.rounds} interleaved rounds\n\n"
                    f"Generated by `bash experiments/baselines.sh --versus-tocpile BIN` on "
                    f"{time.strftime('%Y-%m-%d')} ({os.cpu_count()} cores, shared: timings "
                    f"are noisy; load average {load_start[0]:.1f} at the start, "
                    f"{os.getloadavg()[0]:.1f} at the end). Training time only. tocpile reads a file written by "
                    "`tocpile encode` with default options and trains with default options; "
                    "the scipy loop trains on CSR batches prepared in memory, in a fixed "
                    "order. Commands are in the JSON.\n\n" + table + "\n\n" + ver_line + "\n")


# -------------------------------------------------------------------- main

def fmt_table(rows):
    out = ["| dataset | tool | mode | epochs | train rows | seconds | examples/s | test accuracy |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        eps = r["examples_per_second"]
        out.append(f"| {r['dataset']} | {r['tool']} | {r['mode']} | {r['epochs']} | "
                   f"{r['rows']:,} | {r['seconds']:.2f} | "
                   f"{eps:,.0f} | {r['test_accuracy']:.4f} |" if eps else
                   f"| {r['dataset']} | {r['tool']} | {r['mode']} | - | - | - | - | - |")
    return "\n".join(out)


def main(argv):
    args = parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    vw_ok, vw_info = vw_available()
    vw_note = os.environ.get("TOCPILE_VW_NOTE", "")
    versions = {
        "python": platform.python_version(),
        "numpy": np.__version__, "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
        "vowpalwabbit": vw_info if vw_ok else None,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    if args.versus_tocpile:
        versions.pop("vowpalwabbit")
        return versus_main(args, versions)
    if not vw_ok:
        vw_note = vw_note or f"Vowpal Wabbit: not installable here ({vw_info})"
        print(vw_note, file=sys.stderr)

    results = []
    majority = {}
    for name in filter(None, args.datasets.split(",")):
        if name not in N_FEATURES:
            sys.exit(f"unknown dataset {name!r}; known: {', '.join(N_FEATURES)}")
        Xtr, ytr, Xte, yte = load(args.data_dir, name, args.seed)
        n = Xtr.shape[0]
        E = args.epochs
        pos = float(ytr.mean())
        majority[name] = float(np.mean(yte == (1.0 if pos >= 0.5 else 0.0)))

        for lr in filter(None, args.sklearn_lr.split(",")):
            lr_desc = (f"learning_rate={lr}" if lr == "optimal"
                       else f"learning_rate={lr}, eta0={args.eta0}")
            base = f"log_loss, alpha={args.alpha}, {lr_desc}"
            if "partial_fit" not in skip:
                clf, secs = sk_partial_fit(Xtr, ytr, Xte, yte, E, lr, args)
                results.append(result(
                    name, "scikit-learn SGDClassifier", f"partial_fit 250-row batches ({lr})",
                    E, n, secs, clf.score(Xte, yte), clf.score(Xtr, ytr),
                    base + "; one partial_fit per 250-row batch in the fixed shuffled order, "
                    "shuffle=False. NB sklearn still updates per example inside a batch "
                    "(no gradient averaging); the batching only adds Python call overhead."))
                print(f"[{name}] sklearn partial_fit ({lr}): {secs:.2f}s", file=sys.stderr, flush=True)
            if "fit" not in skip:
                fe = args.fit_epochs or E
                clf, secs = sk_fit(Xtr, ytr, fe, lr, args)
                note = base + f"; fit(max_iter={fe}, tol=None, shuffle=True): per-example SGD, " \
                              "reshuffled every epoch (sklearn's normal use)"
                if fe != E:
                    note += f"; epochs reduced from {E} to {fe} for time"
                results.append(result(
                    name, "scikit-learn SGDClassifier", f"fit, per-example ({lr})",
                    fe, n, secs, clf.score(Xte, yte), clf.score(Xtr, ytr), note))
                print(f"[{name}] sklearn fit ({lr}): {secs:.2f}s", file=sys.stderr, flush=True)

        if "scipy" not in skip:
            w, b, secs = scipy_minibatch(Xtr, ytr, E, args)
            results.append(result(
                name, "numpy/scipy (hand-written)", "mini-batch 250, mean gradient",
                E, n, secs, linear_accuracy(Xte, yte, w, b), linear_accuracy(Xtr, ytr, w, b),
                f"tocpile's update rule: w -= lr_e * mean batch gradient, lr_e = {args.eta0} * "
                f"{args.decay}^epoch, l2 = 0, bias; scipy CSR matvecs driven from a Python loop "
                "(batches and their transposes pre-built, not timed); fixed shuffled order"))
            print(f"[{name}] scipy mini-batch: {secs:.2f}s", file=sys.stderr, flush=True)

        if "vw" not in skip and vw_ok:
            with tempfile.TemporaryDirectory(prefix="tocpile-vw-") as tmp:
                secs, te_acc, tr_acc, _log = vw_train_eval(name, Xtr, ytr, Xte, yte, E, tmp)
            results.append(result(
                name, "Vowpal Wabbit", f"--passes {E} from cache", E, n, secs, te_acc, tr_acc,
                f"vw {vw_info} via the Python package (same driver as the vw CLI): "
                f"--loss_function logistic --passes {E} --holdout_off, defaults otherwise "
                "(adaptive+normalized+invariant updates, -l 0.5, -b 18 hashing); "
                "labels -1/+1; rows in the fixed shuffled order; cache built by an untimed "
                "1-pass run first; VW parses in a second thread (2 cores)"))
            print(f"[{name}] VW: {secs:.2f}s", file=sys.stderr, flush=True)
        elif "vw" not in skip:
            results.append({
                "dataset": name, "tool": "Vowpal Wabbit", "mode": "not run", "epochs": None,
                "rows": n, "seconds": None, "examples_per_second": None,
                "test_accuracy": None, "train_accuracy": None, "notes": vw_note})

    table = fmt_table(results)
    ver_line = ("Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v)
                + ("" if vw_ok else f". {vw_note}"))
    maj_line = "Majority-class test accuracy (for scale): " + ", ".join(
        f"{k} {v:.4f}" for k, v in majority.items())
    print(table)
    print()
    print(maj_line)
    print()
    print(ver_line)
    with open(args.json, "w") as f:
        json.dump({"versions": versions, "vowpalwabbit_note": vw_note or None,
                   "batch_rows": BATCH, "seed": args.seed, "split": "90/10 after one shuffle",
                   "majority_class_test_accuracy": majority,
                   "results": results}, f, indent=2)
        f.write("\n")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"# Baselines: {args.datasets}, {args.epochs} epochs, seed {args.seed}\n\n"
                    f"Generated by `bash experiments/baselines.sh` on {time.strftime('%Y-%m-%d')}. "
                    "One run of each tool on a shared machine "
                    f"({os.cpu_count()} cores): timings are noisy. Only training is timed "
                    "(examples/s = train rows x epochs / seconds). Details of each row are in "
                    "the `notes` field of baselines.json.\n\n")
            f.write(table + "\n\n" + maj_line + "\n\n" + ver_line + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])

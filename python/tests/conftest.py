"""Shared fixtures: small dataset files with a row-id column, the built-in
mushrooms data read from the repository, and the command line binary."""

import gzip
import os
import pathlib
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile

REPO = pathlib.Path(__file__).resolve().parents[2]


def pytest_configure(config):
    # The small test files have few blocks, so most loaders warn about
    # their buffer; the tests that check the warning use pytest.warns.
    config.addinivalue_line("filterwarnings", "ignore:the CorgiPile buffer holds:UserWarning")


def read_libsvm(path, n_cols=None):
    """A plain LIBSVM reader (one-based indices), for the tests only."""
    rows, cols, vals, labels = [], [], [], []
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        for r, line in enumerate(f):
            parts = line.split()
            labels.append(float(parts[0]))
            for item in parts[1:]:
                i, v = item.split(":")
                rows.append(r)
                cols.append(int(i) - 1)
                vals.append(float(v))
    width = n_cols if n_cols is not None else max(cols) + 1
    X = sp.csr_matrix((vals, (rows, cols)), shape=(len(labels), width))
    return X, np.array(labels)


def id_rows(n, n_cols=6, seed=0):
    """n rows whose column 0 holds the row number + 1 (so a loader's output
    names its rows), other columns random and sparse, labels 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, n_cols))
    X[X < 0.5] = 0.0
    X[:, 0] = np.arange(1, n + 1)
    y = (rng.random(n) < 0.5).astype(np.float64)
    return X, y


def row_ids(X):
    """The row numbers of a batch built from id_rows (CSR or dense)."""
    dense = X.toarray() if sp.issparse(X) else X
    return (dense[:, 0] - 1).astype(np.int64)


@pytest.fixture
def ids_file(tmp_path):
    """1,000 id rows in 50-row pages and ~1 KiB blocks (about 20 blocks)."""
    X, y = id_rows(1000)
    path = tmp_path / "ids.toc"
    tocpile.encode(X, y, path, page_rows=50, block_bytes=1024)
    return path, X, y


@pytest.fixture(scope="session")
def mushrooms():
    return read_libsvm(REPO / "data" / "mushrooms.libsvm.gz")


@pytest.fixture(scope="session")
def mushrooms_file(tmp_path_factory, mushrooms):
    X, y = mushrooms
    path = tmp_path_factory.mktemp("mushrooms") / "mushrooms.toc"
    tocpile.encode(X, y, path, page_rows=50, block_bytes=1024)
    return path


@pytest.fixture(scope="session")
def cli():
    """The tocpile binary: $TOCPILE_CLI, or target/release/tocpile of the
    repository. Missing, the test is skipped unless TOCPILE_REQUIRE_CLI is
    set (CI sets it, after building the binary)."""
    path = os.environ.get("TOCPILE_CLI") or str(REPO / "target" / "release" / "tocpile")
    if shutil.which(path) is None:
        if os.environ.get("TOCPILE_REQUIRE_CLI"):
            pytest.fail(f"the tocpile command line is needed at {path}")
        pytest.skip(f"no tocpile command line at {path} (cargo build --release -p tocpile-cli)")
    return path

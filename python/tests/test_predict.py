"""Model predictions over whole matrices (in place, on every core) equal
the library's page-by-page predictions and plain numpy math."""

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile


def labelled_rows(n=3000, width=40, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, width, density=0.2, format="csr", random_state=rng)
    y = (X @ rng.normal(size=width) > 0).astype(float)
    multi = (np.asarray(X.sum(axis=1)).ravel() * 7).astype(int) % classes
    return X, y, multi.astype(float)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    X, y, multi = labelled_rows()
    tmp = tmp_path_factory.mktemp("predict")
    tocpile.encode(X, y, tmp / "bin.toc")
    tocpile.encode(X, multi, tmp / "multi.toc")
    out = {}
    for kind, path in [("lr", "bin"), ("svm", "bin"), ("linreg", "bin"),
                       ("softmax", "multi"), ("mlp", "multi")]:
        out[kind] = tocpile.train(tmp / f"{path}.toc", kind, epochs=2, seed=1)
    return X, out, tmp


@pytest.mark.parametrize("kind", ["lr", "svm", "linreg", "softmax", "mlp"])
def test_equal_to_the_library_and_to_numpy(models, kind):
    X, ms, tmp = models
    m = ms[kind]
    ref = m._reference_scores(X)
    int64 = X.copy()
    int64.indices = int64.indices.astype(np.int64)
    int64.indptr = int64.indptr.astype(np.int64)
    # Each entry split in two halves: duplicate entries, summed.
    doubled = sp.csr_matrix(
        (np.repeat(X.data / 2, 2), np.repeat(X.indices, 2), X.indptr * 2), shape=X.shape)
    assert not doubled.has_canonical_format
    inputs = [X, int64, X.tocsc(), X.toarray(), np.asfortranarray(X.toarray()),
              sp.csr_array(X), doubled]
    for x in inputs:
        np.testing.assert_allclose(m.decision_function(x), ref, rtol=1e-12, atol=1e-12)
    single = X.astype(np.float32)
    np.testing.assert_allclose(m.decision_function(single), m._reference_scores(single),
                               rtol=1e-12, atol=1e-12)
    if len(m.layers) == 1:
        w, b = m.layers[0]
        np.testing.assert_allclose(m.decision_function(X), np.squeeze(X @ w + b),
                                   rtol=1e-12, atol=1e-12)
    # Rows that are more than a chunk (4,096 rows), an empty matrix.
    big = sp.vstack([X] * 3).tocsr()
    np.testing.assert_allclose(m.decision_function(big), np.concatenate([ref] * 3),
                               rtol=1e-12, atol=1e-12)
    assert m.decision_function(X[:0]).shape[0] == 0
    # Over the dataset file, in file order (the rows encoded above).
    ds = tocpile.Dataset(tmp / ("bin.toc" if kind in ("lr", "svm", "linreg") else "multi.toc"))
    np.testing.assert_allclose(m.decision_function(ds), ref, rtol=1e-12, atol=1e-12)
    # predict and predict_proba follow the scores.
    pred = m.predict(X)
    if kind == "linreg":
        np.testing.assert_array_equal(pred, m.decision_function(X))
    elif ref.ndim == 1:
        np.testing.assert_array_equal(pred, (ref > 0).astype(float))
    else:
        np.testing.assert_array_equal(pred, ref.argmax(axis=1).astype(float))
    if kind in ("lr", "softmax", "mlp"):
        p = m.predict_proba(X)
        if ref.ndim == 1:
            np.testing.assert_allclose(p, 1 / (1 + np.exp(-ref)), rtol=1e-12)
        else:
            e = np.exp(ref - ref.max(axis=1, keepdims=True))
            np.testing.assert_allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-12)


def test_bad_rows_are_named(models):
    X, ms, _ = models
    m = ms["lr"]
    bad = X.copy()
    bad.data[bad.indptr[7]] = np.nan
    with pytest.raises(ValueError, match=r"row 7, column \d+ is NaN"):
        m.decision_function(bad)
    dense = X.toarray()
    dense[11, 3] = np.inf
    with pytest.raises(ValueError, match="row 11, column 3 is inf"):
        m.predict(dense)
    with pytest.raises(ValueError, match="5 columns, but the model takes 40"):
        m.decision_function(X[:, :5])
    with pytest.raises(ValueError, match="real numbers"):
        m.decision_function(np.array([["a"] * 40]))
    # Arrays that do not make a CSR matrix: an index past the columns.
    forged = X.copy()
    forged.indices[5] = 1000
    with pytest.raises(ValueError, match="column index 1000"):
        m.decision_function(forged)
    # Offsets that decrease, and offsets past the values.
    forged = X.copy()
    forged.indptr[5] = forged.indptr[6] + 3
    with pytest.raises(ValueError, match=r"row [45] has offsets \d+\.\.\d+ outside"):
        m.decision_function(forged)
    forged = X.copy()
    forged.indptr[-1] += 10
    with pytest.raises(ValueError, match="row 2999 has offsets"):
        m.decision_function(forged)


@pytest.mark.parametrize("kind", ["lr", "softmax"])
def test_empty_rows_and_no_rows_against_numpy(models, kind):
    """Empty rows (runs of them, at the start and the end), no rows at all,
    with int32 and int64 indices and dense rows, against numpy's math."""
    X, ms, _ = models
    m = ms[kind]
    w, b = m.layers[0]
    rows = X.toarray()[:600]
    rows[:3] = 0
    rows[100:140] = 0
    rows[-5:] = 0
    csr = sp.csr_matrix(rows)
    int64 = csr.copy()
    int64.indices = int64.indices.astype(np.int64)
    int64.indptr = int64.indptr.astype(np.int64)
    expected = np.squeeze(rows @ w + b)
    for x in [csr, int64, rows]:
        got = m.decision_function(x)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got[100:140], np.broadcast_to(np.squeeze(b), got[100:140].shape))
    empty = sp.csr_matrix((5000, X.shape[1]))
    np.testing.assert_array_equal(m.decision_function(empty),
                                  np.squeeze(np.zeros((5000, X.shape[1])) @ w + b))
    for x in [csr[:0], int64[:0], rows[:0]]:
        assert m.decision_function(x).shape[0] == 0
        assert m.predict(x).shape == (0,)


def test_hostile_column_indices_are_errors(models):
    """Column indices just past the model's columns (within the padding of
    the fast loop), far past them and negative, in int32 and int64 arrays:
    a ValueError naming the row and the index, never a crash."""
    X, ms, _ = models
    m = ms["lr"]
    for dtype in [np.int32, np.int64]:
        for index in [40, 63, 64, 2**31 - 1, -1, -(2**31)]:
            forged = X.copy()
            forged.indices = forged.indices.astype(dtype)
            forged.indptr = forged.indptr.astype(dtype)
            row = 4500 % X.shape[0]
            forged.indices[forged.indptr[row]] = index
            with pytest.raises(ValueError, match=rf"row {row} has column index {index}\b"):
                m.decision_function(forged)


LENGTHS_CHECK = r"""
import sys
import numpy as np, scipy.sparse as sp, tocpile


def check(m):
    w, b = m.layers[0]
    rng = np.random.default_rng(3)
    # Rows of every length from 0 to 40 (a kernel that reads sixteen entries at
    # a time: 15, 16, 17, 32 and 33 among them), in a shuffled order.
    lengths = rng.permutation(np.repeat(np.arange(41), 60))
    rows = np.zeros((len(lengths), 40))
    for r, n in enumerate(lengths):
        rows[r, rng.choice(40, n, replace=False)] = rng.normal(size=n)
    expected = np.squeeze(rows @ w + b)
    csr = sp.csr_matrix(rows)
    for dtype in [np.int32, np.int64]:
        x = csr.copy()
        x.indices, x.indptr = x.indices.astype(dtype), x.indptr.astype(dtype)
        np.testing.assert_allclose(m.decision_function(x), expected, rtol=1e-12, atol=1e-12)
        # A bad index at each place of a 40-entry row: named, never read.
        long_row = int(np.flatnonzero(lengths == 40)[0])
        for place in [0, 15, 16, 17, 31, 32, 39]:
            for index in [40, 64, -1]:
                forged = x.copy()
                forged.indices[forged.indptr[long_row] + place] = index
                try:
                    m.decision_function(forged)
                except ValueError as e:
                    assert f"row {long_row} has column index {index}" in str(e), e
                else:
                    raise AssertionError(f"index {index} at {place} was not refused")
        # A negative offset, and one far past the values, inside the matrix.
        for bad in [-5, 10**9]:
            forged = x.copy()
            forged.indptr[700] = bad
            try:
                m.decision_function(forged)
            except ValueError as e:
                assert "row 699 has offsets" in str(e) or "row 700 has offsets" in str(e), e
            else:
                raise AssertionError(f"offset {bad} was not refused")
    # Dense rows (one product a chunk for several outputs): a value that is
    # not finite named.
    np.testing.assert_allclose(m.decision_function(rows), expected, rtol=1e-12, atol=1e-12)
    rows[1234, 5] = np.nan
    try:
        m.decision_function(rows)
    except ValueError as e:
        assert "row 1234, column 5 is NaN" in str(e), e
    else:
        raise AssertionError("a NaN value was not refused")


for path in sys.argv[1:]:
    check(tocpile.Model.load(path))
print("ok")
"""


@pytest.mark.parametrize("scalar", [False, True])
def test_rows_of_every_length_in_both_kernels(models, scalar):
    """Rows of 0 to 40 entries against numpy, bad indices and offsets
    inside long rows named, and a NaN in dense rows named, for one output
    and for 3, 10 and 16, in the kernels that read a row sixteen entries
    at a time or add an entry's outputs in registers (where the processor
    has AVX-512) and in the scalar ones (TOCPILE_NO_AVX512 set: it is read
    once per process, hence the subprocess)."""
    import os
    import subprocess
    import sys

    X, ms, tmp = models
    paths = [tmp / "lengths_lr.model", tmp / "lengths_softmax3.model"]
    ms["lr"].save(paths[0])
    ms["softmax"].save(paths[1])
    # Ten and sixteen classes: outputs in two registers of eight, the
    # second part full or not.
    for classes in [10, 16]:
        labels = (np.arange(X.shape[0]) % classes).astype(float)
        tocpile.encode(X, labels, tmp / f"classes{classes}.toc")
        model = tocpile.train(tmp / f"classes{classes}.toc", "softmax", epochs=1, seed=1)
        assert model.layers[0][0].shape[1] == classes
        paths.append(tmp / f"lengths_softmax{classes}.model")
        model.save(paths[-1])
    env = dict(os.environ)
    env.pop("TOCPILE_NO_AVX512", None)
    if scalar:
        env["TOCPILE_NO_AVX512"] = "1"
    done = subprocess.run([sys.executable, "-c", LENGTHS_CHECK, *map(str, paths)], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_dense_rows_of_a_softmax_as_one_product(models):
    """A multi-output model's dense rows are one matrix product a chunk:
    against numpy over three chunks, and a value that is not finite in the
    second chunk is named by its row and column."""
    X, ms, _ = models
    m = ms["softmax"]
    w, b = m.layers[0]
    rows = np.vstack([X.toarray()] * 3)
    np.testing.assert_allclose(m.decision_function(rows), rows @ w + b, rtol=1e-12, atol=1e-12)
    rows[5000, 7] = np.inf
    with pytest.raises(ValueError, match="row 5000, column 7 is inf"):
        m.decision_function(rows)

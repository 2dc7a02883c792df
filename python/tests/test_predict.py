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

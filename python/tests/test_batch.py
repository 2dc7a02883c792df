"""TocBatch: round trips against scipy, the kernels against numpy's
products, validation of bytes and of kernel operands."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile


def random_csr(rng, n, d, density, integers=False):
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    if integers:
        X.data = np.ceil(X.data * 5)
    return X


SHAPES = [(1, 1), (4, 4), (250, 98), (100, 1000), (37, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("level", ["full", "logical", "sparse"])
def test_round_trip_scipy(shape, level):
    rng = np.random.default_rng(sum(shape))
    for density, integers in [(0.0, False), (0.1, True), (0.5, False)]:
        X = random_csr(rng, *shape, density, integers)
        b = tocpile.TocBatch(X, level=level)
        assert b.shape == shape and b.level == level and b.nnz == X.nnz
        back = b.to_scipy()
        assert isinstance(back, sp.csr_matrix)
        assert (back != X).nnz == 0
        np.testing.assert_array_equal(b.to_dense(), X.toarray())
        again = tocpile.TocBatch.from_bytes(b.to_bytes())
        assert again.to_bytes() == b.to_bytes()
        assert (again.to_scipy() != X).nnz == 0


def test_inputs_of_every_kind_agree():
    X = np.array([[1.1, 2.0, 3.0, 1.4], [1.1, 2.0, 3.0, 0.0], [0.0, 1.1, 3.0, 1.4], [1.1, 2.0, 0.0, 0.0]])
    ref = tocpile.TocBatch(X).to_bytes()
    for other in [sp.csr_matrix(X), sp.csc_matrix(X), sp.coo_matrix(X), np.asfortranarray(X), X.tolist()]:
        assert tocpile.TocBatch(other).to_bytes() == ref
    # Integer and bool dtypes are converted; unsorted and duplicate CSR
    # entries are summed as scipy does.
    assert tocpile.TocBatch(np.eye(3, dtype=np.int32)).to_dense().tolist() == np.eye(3).tolist()
    dup = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    assert tocpile.TocBatch(dup).to_dense().tolist() == [[2.0, 0.0, 4.0]]


def test_bad_rows_are_value_errors():
    with pytest.raises(ValueError, match="dtype complex128"):
        tocpile.TocBatch(np.ones((2, 2), dtype=complex))
    with pytest.raises(ValueError, match="2-D"):
        tocpile.TocBatch(np.ones(3))
    X = np.ones((3, 2))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="row 2, column 1 is NaN"):
        tocpile.TocBatch(X)
    S = sp.csr_matrix(np.ones((3, 2)))
    S.data[3] = np.inf
    with pytest.raises(ValueError, match="row 1, column 1 is inf"):
        tocpile.TocBatch(S)


def test_from_bytes_rejects_damage_with_toc_error():
    rng = np.random.default_rng(7)
    good = tocpile.TocBatch(random_csr(rng, 50, 30, 0.2, True)).to_bytes()
    assert issubclass(tocpile.TocError, ValueError)
    with pytest.raises(tocpile.TocError, match="magic"):
        tocpile.TocBatch.from_bytes(b"XXXX" + good[4:])
    for cut in [0, 3, 10, len(good) - 1]:
        with pytest.raises(tocpile.TocError):
            tocpile.TocBatch.from_bytes(good[:cut])
    # Random single-byte damage: an error or a valid batch, never a crash.
    for _ in range(300):
        b = bytearray(good)
        b[rng.integers(len(b))] = rng.integers(256)
        try:
            tocpile.TocBatch.from_bytes(bytes(b)).to_dense()
        except tocpile.TocError:
            pass
    assert tocpile.TocBatch.from_bytes(bytearray(good)).to_bytes() == good
    assert tocpile.TocBatch.from_bytes(memoryview(good)).to_bytes() == good


def test_pickle_goes_through_the_bytes():
    b = tocpile.TocBatch(np.array([[0.0, 1.5], [2.0, 0.0]]))
    c = pickle.loads(pickle.dumps(b))
    assert c.to_bytes() == b.to_bytes()


@pytest.mark.parametrize("shape", SHAPES)
def test_kernels_match_numpy(shape):
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    n, d = shape
    X = random_csr(rng, n, d, 0.3, integers=True)
    A = X.toarray()
    b = tocpile.TocBatch(X)
    v, u = rng.standard_normal(d), rng.standard_normal(n)
    M, L = rng.standard_normal((d, 5)), rng.standard_normal((3, n))
    np.testing.assert_allclose(b.matvec(v), A @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.vecmat(u), u @ A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.matmat(M), A @ M, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.matmat_left(L), L @ A, rtol=1e-12, atol=1e-12)
    # Into a caller's array, overwritten.
    out = np.full(n, 99.0)
    assert b.matvec(v, out=out) is out
    np.testing.assert_allclose(out, A @ v, rtol=1e-12, atol=1e-12)
    out2 = np.full((3, d), 99.0)
    b.matmat_left(L, out=out2)
    np.testing.assert_allclose(out2, L @ A, rtol=1e-12, atol=1e-12)


def test_kernels_on_real_data(mushrooms):
    X, _ = mushrooms
    rng = np.random.default_rng(3)
    for start in range(0, X.shape[0], 1000):
        part = X[start : start + 250]
        A = part.toarray()
        b = tocpile.TocBatch(part)
        v, u = rng.standard_normal(A.shape[1]), rng.standard_normal(A.shape[0])
        M = rng.standard_normal((A.shape[1], 20))
        np.testing.assert_allclose(b.matvec(v), A @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b.vecmat(u), u @ A, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b.matmat(M), A @ M, rtol=1e-12, atol=1e-12)
        L = rng.standard_normal((4, A.shape[0]))
        np.testing.assert_allclose(b.matmat_left(L), L @ A, rtol=1e-12, atol=1e-12)


def test_bad_operands_are_value_errors():
    b = tocpile.TocBatch(np.ones((3, 4)))
    with pytest.raises(ValueError, match="dtype float64, got float32"):
        b.matvec(np.ones(4, dtype=np.float32))
    with pytest.raises(ValueError, match="not C-contiguous"):
        b.matvec(np.ones(8)[::2])
    with pytest.raises(ValueError, match="not C-contiguous"):
        b.matmat(np.asfortranarray(np.ones((4, 2))))
    with pytest.raises(ValueError, match="expected 4 entries"):
        b.matvec(np.ones(3))
    with pytest.raises(ValueError, match="expected 3 entries"):
        b.vecmat(np.ones(4))
    with pytest.raises(ValueError, match="numpy array of float64, got list"):
        b.matvec([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="1-D"):
        b.matvec(np.ones((4, 1)))
    with pytest.raises(ValueError, match="shape"):
        b.matmat(np.ones((4, 2)), out=np.ones((3, 3)))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="cannot write"):
        b.matvec(np.ones(4), out=ro)
    v = np.ones(4)
    with pytest.raises(ValueError):
        tocpile.TocBatch(np.ones((4, 4))).matvec(v, out=v)  # aliasing


def test_kernels_release_the_gil():
    import threading

    rng = np.random.default_rng(0)
    b = tocpile.TocBatch(random_csr(rng, 250, 500, 0.2, True))
    M = rng.standard_normal((500, 64))
    ref = b.matmat(M)
    results = []

    def work():
        for _ in range(20):
            results.append(np.array_equal(b.matmat(M), ref))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80 and all(results)

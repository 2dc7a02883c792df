"""encode and Dataset: files from numpy, scipy and chunks read back
exactly; the writer's options; errors."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile
from conftest import id_rows


def test_dense_round_trip(tmp_path):
    X, y = id_rows(777)
    path = tmp_path / "a.toc"
    info = tocpile.encode(X, y, path, page_rows=50, block_bytes=2048)
    assert info["n_rows"] == 777 and info["n_cols"] == 6 and info["nnz"] == np.count_nonzero(X)
    ds = tocpile.Dataset(path)
    assert ds.shape == (777, 6) and len(ds) == 777 and ds.page_rows == 50
    assert ds.n_blocks == info["n_blocks"] > 1 and ds.format == "TOC_FULL"
    assert ds.info() == info
    R, labels = ds.read()
    assert isinstance(R, sp.csr_matrix)
    np.testing.assert_array_equal(R.toarray(), X)
    np.testing.assert_array_equal(labels, y)
    D, labels = ds.read(as_="dense")
    np.testing.assert_array_equal(D, X)
    np.testing.assert_array_equal(ds.labels(), y)
    # Blocks in order make up the file.
    parts = [ds.read_block(i) for i in range(ds.n_blocks)]
    assert sum(ds.block_rows(i) for i in range(ds.n_blocks)) == 777
    np.testing.assert_array_equal(sp.vstack([p[0] for p in parts]).toarray(), X)
    ds.verify()
    assert "ratio vs dense" in ds.summary()
    with pytest.raises(IndexError, match="out of range"):
        ds.read_block(ds.n_blocks)


def test_scipy_and_chunks_give_the_same_file(tmp_path):
    X, y = id_rows(600, n_cols=40, seed=4)
    a, b, c = tmp_path / "a.toc", tmp_path / "b.toc", tmp_path / "c.toc"
    tocpile.encode(X, y, a, page_rows=100)
    tocpile.encode(sp.csr_matrix(X), y, b, page_rows=100)
    chunks = ((sp.csr_matrix(X[i : i + 64]), y[i : i + 64]) for i in range(0, 600, 64))
    tocpile.encode(chunks, path=c, page_rows=100)
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()


@pytest.mark.parametrize("fmt", ["toc", "CSR", "CVI", "DEN", "gzip", "TOC_SPARSE"])
def test_page_formats(tmp_path, fmt):
    X, y = id_rows(300)
    path = tmp_path / "f.toc"
    tocpile.encode(X, y, path, page_rows=64, page_format=fmt)
    R, labels = tocpile.Dataset(path).read()
    np.testing.assert_array_equal(R.toarray(), X)
    np.testing.assert_array_equal(labels, y)


def test_bad_input_is_a_value_error_and_leaves_no_file(tmp_path):
    X, y = id_rows(10)
    path = tmp_path / "x.toc"
    bad = y.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="label of row 7 is NaN"):
        tocpile.encode(X, bad, path)
    with pytest.raises(ValueError, match="9 labels for 10 rows"):
        tocpile.encode(X, y[:9], path)
    with pytest.raises(ValueError, match="dtype <U1"):
        tocpile.encode(X, np.array(["a"] * 10), path)
    with pytest.raises(ValueError, match="page_format"):
        tocpile.encode(X, y, path, page_format="zip")
    with pytest.raises(tocpile.TocError, match="page_rows"):
        tocpile.encode(X, y, path, page_rows=0)
    # A bad second chunk: the first was written, yet no file appears.
    chunks = [(X, y), (X[:, :3], y)]
    with pytest.raises(ValueError, match="3 columns"):
        tocpile.encode(chunks, path=path)
    assert not path.exists()
    assert [p for p in os.listdir(tmp_path)] == []


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.toc"):
        tocpile.Dataset(tmp_path / "nope.toc")
    junk = tmp_path / "junk.toc"
    junk.write_bytes(b"not a dataset file at all, just some bytes" * 10)
    with pytest.raises(tocpile.TocError, match="junk.toc"):
        tocpile.Dataset(junk)
    # A flipped byte inside a block: the checksum names the block.
    X, y = id_rows(500)
    path = tmp_path / "ok.toc"
    tocpile.encode(X, y, path, page_rows=50, block_bytes=1024)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    ds = tocpile.Dataset(path)
    with pytest.raises(tocpile.TocError, match="block 0"):
        ds.verify()
    with pytest.raises(tocpile.TocError, match="block 0"):
        ds.read()


def test_mushrooms_file_matches_scipy(mushrooms, mushrooms_file):
    X, y = mushrooms
    R, labels = tocpile.Dataset(mushrooms_file).read()
    assert (R != X).nnz == 0
    np.testing.assert_array_equal(labels, y)


def test_dataframe_with_categories(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({
        "age": [31, 45, 22, 60],
        "city": ["Oslo", "Lima", "Oslo", "Pune"],
        "plan": pd.Categorical(["a", "b", "b", "a"]),
        "score": [0.5, 1.5, 2.5, 3.5],
    })
    y = np.array([1.0, 0.0, 1.0, 0.0])
    path = tmp_path / "frame.toc"
    info = tocpile.encode(frame, y, path, scale=None)
    ds = tocpile.Dataset(path)
    # Two numeric columns, three cities and two plans one-hot.
    assert info["n_cols"] == 2 + 3 + 2 and ds.schema != ""
    X, labels = ds.read(as_="dense")
    np.testing.assert_array_equal(labels, y)
    # Every row: one city and one plan set, the numbers as given.
    assert set(np.round(X.sum(axis=1) - frame["age"] - frame["score"], 9)) == {2.0}
    for value in (31, 45, 22, 60):
        assert (X == value).sum() == 1
    # A numeric frame goes through numpy, as an array would.
    numeric = tocpile.encode(frame[["age", "score"]], y, tmp_path / "num.toc", scale=None)
    assert numeric["n_cols"] == 2 and tocpile.Dataset(tmp_path / "num.toc").schema == ""
    with pytest.raises(ValueError, match="y: 3 labels for 4 rows"):
        tocpile.encode(frame, y[:3], tmp_path / "bad.toc")
    assert not (tmp_path / "bad.toc").exists()

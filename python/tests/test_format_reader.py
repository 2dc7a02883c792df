"""docs/FORMAT.md is exact (issue 34, item 8): `tests/format_reader.py`,
a reader written from the document alone, parses the golden files of
every version that holds TOC pages (version-3 pages, version-4 compact
pages and their shared dictionaries, version-5 page copies, version-6 runs of them,
version-7 pages of row ids and version-8 grouped dictionaries and scaled
labels included) down to their rows, which
are the rows the crate decodes, bit for bit."""

import importlib.util

import numpy as np
import pytest

import tocpile
from conftest import REPO

spec = importlib.util.spec_from_file_location("format_reader", REPO / "tests" / "format_reader.py")
format_reader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(format_reader)

GOLDEN = sorted(
    str(p.relative_to(REPO))
    for version in ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "scaling")
    for p in (REPO / "tests" / "golden" / version).rglob("*.toc")
    # Dataset files (not bare batches) of TOC pages.
    if p.read_bytes()[:4] == b"TOCD" and tocpile.Dataset(p).format.startswith("TOC")
)


def test_the_document_says_what_the_reader_reads():
    text = (REPO / "docs" / "FORMAT.md").read_text()
    for line in format_reader.GRAMMAR:
        assert line in text, f"docs/FORMAT.md lacks {line!r}"


def test_the_golden_files_of_versions_3_to_8_are_read():
    assert "tests/golden/v3/dataset/toc_full.toc" in GOLDEN
    assert "tests/golden/v4/dataset/toc_full.toc" in GOLDEN
    assert "tests/golden/v5/dataset/toc_full.toc" in GOLDEN
    assert "tests/golden/v6/dataset/toc_full.toc" in GOLDEN
    assert "tests/golden/v7/dataset/toc_full.toc" in GOLDEN
    assert "tests/golden/v8/dataset/toc_full.toc" in GOLDEN


@pytest.mark.parametrize("name", GOLDEN)
def test_a_reader_from_the_document_reads_what_the_crate_decodes(name):
    path = REPO / name
    rows, n_cols = format_reader.read_file(path.read_bytes())
    try:
        X, y = tocpile.Dataset(path).read()
    except tocpile.TocError as e:
        # Version-1 golden files written before numbers had to be finite
        # hold a NaN, which the crate refuses (docs/FORMAT.md, "Numbers
        # are finite"): the reader finds it where the crate says.
        assert "is NaN" in str(e) and name.startswith("tests/golden/v1/"), str(e)
        assert any(np.isnan(v) for _, row in rows for _, v in row)
        return
    assert X.shape == (len(rows), n_cols)
    assert [label for label, _ in rows] == list(y)
    for i, (_, row) in enumerate(rows):
        start, end = X.indptr[i], X.indptr[i + 1]
        assert [c for c, _ in row] == list(X.indices[start:end]), f"{name} row {i}"
        want = np.array([v for _, v in row], dtype=np.float64)
        assert want.tobytes() == X.data[start:end].tobytes(), f"{name} row {i}"

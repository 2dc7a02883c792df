"""tocpile: mini-batch SGD on compressed data, from Python.

Rows are stored with tuple-oriented compression (TOC) in dataset files of
checksummed blocks; the matrix products of SGD run on the compressed form;
a CorgiPile loader reads the blocks in a random order and shuffles their
rows in a buffer. This package wraps the Rust library ``tocpile``:

- :func:`encode` writes numpy arrays, scipy.sparse matrices or an iterable
  of ``(X, y)`` chunks into a dataset file; :class:`Dataset` opens, checks
  and reads one (rows back as ``scipy.sparse.csr_matrix``).
- :class:`TocBatch` is one compressed batch with the kernels ``matvec``
  (A.v), ``vecmat`` (v.A), ``matmat`` (A.M) and ``matmat_left`` (M.A) on
  numpy arrays, run with the GIL released.
- :class:`Loader` iterates mini-batches ``(X, y)`` in CorgiPile (or another
  strategy's) order, split across ranks, with ``set_epoch`` and
  ``state_dict()`` / ``load_state_dict()`` for exact mid-epoch resumption.
- :func:`train` trains the built-in models (``lr``, ``svm``, ``linreg``,
  ``softmax``, ``mlp``) with the command line's defaults (Adam, the
  file's stored scaling) and returns a :class:`Model` with ``predict``
  and ``evaluate`` (accuracy, AUC, confusion matrix, R^2).
- :mod:`tocpile.sklearn` (imported only on request, needs scikit-learn):
  ``TocClassifier`` and ``TocRegressor`` estimators.
- :mod:`tocpile.torch` (imported only on request, needs PyTorch) adapts
  the loader to ``torch.utils.data.IterableDataset``.

Errors of the library raise :class:`TocError` (a ``ValueError``) with the
library's message, naming the file, block, page, row or byte offset; I/O
errors raise ``OSError`` (``FileNotFoundError``, ...); bad arrays (a wrong
dtype, a non-contiguous kernel operand, a NaN label) raise ``ValueError``;
an allocation the system refuses raises ``MemoryError``. Sizes a file
asks for that its bytes do not back are limited: :func:`set_limits`
raises the limits for trusted files (:func:`limits` shows them).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Union

from ._tocpile import (
    Dataset,
    EpochIter,
    Loader,
    Model,
    TocBatch,
    TocError,
    _bench_kernels,
    _encode_csv,
    _Writer,
    limits,
    set_limits,
    train,
)

__all__ = [
    "Dataset",
    "EpochIter",
    "Loader",
    "Model",
    "TocBatch",
    "TocError",
    "encode",
    "limits",
    "set_limits",
    "train",
]

__version__ = "0.1.0"


def _restore_loader(args: dict, state: dict) -> Loader:
    """Unpickles a :class:`Loader`: made again from its arguments, resumed
    at its state."""
    loader = Loader(**args)
    loader.load_state_dict(state)
    return loader


def _is_matrix(x: Any) -> bool:
    """True for a numpy array or a scipy.sparse matrix (one chunk)."""
    import numpy as np

    return isinstance(x, np.ndarray) or (hasattr(x, "tocsr") and hasattr(x, "nnz"))


def encode(
    X: Any,
    y: Any = None,
    path: Union[str, "os.PathLike[str]", None] = None,
    *,
    page_rows: int = 50,
    block_bytes: int = 2048,
    page_format: str = "toc",
    schema: str = "",
    n_cols: Optional[int] = None,
    scale: Optional[str] = "maxabs",
) -> dict:
    """Writes rows and labels into a dataset file at ``path``.

    ``X`` is a 2-D numpy array (any real dtype), any scipy.sparse matrix,
    a pandas DataFrame (columns of numbers as they are; other columns,
    strings or categories, one-hot encoded over their values through the
    schema that ``tocpile encode file.csv`` infers, stored in the file),
    or, with ``y=None``, an iterable of ``(X, y)`` chunks (all with the same
    number of columns), streamed so that memory holds one chunk at a time.
    ``y`` holds one finite label per row.

    Options are the file writer's: ``page_rows`` rows per page (one
    encoded batch; for CorgiPile's page mode keep it at most a fifth of the
    mini-batch), ``block_bytes`` the target block size (the unit of the
    loader's random reads; smaller blocks shuffle better), ``page_format``
    ``"toc"`` (default) or one of the comparison formats (``"CSR"``,
    ``"CVI"``, ``"DEN"``, ``"gzip"``, ...), and a ``schema`` text stored
    with the data. ``n_cols`` fixes the column count (needed only for an
    empty iterable).

    ``scale`` fits a column scaling in the same pass and stores it in the
    file, as ``tocpile encode --scale`` (same default): ``"maxabs"`` (each
    column divided by its largest absolute value, scikit-learn's
    MaxAbsScaler; keeps zeros zero), ``"standard"`` (divided by its
    standard deviation, no centering) or ``None``. The rows and their
    compression are not changed: :func:`train` applies the scaling to the
    model's parameters (``Dataset.scaling`` shows it).

    The file appears only when complete (written to a temporary file,
    then renamed); on an error nothing is left at ``path``. Returns the
    file's figures (rows, columns, nnz, blocks, pages, bytes, scaling).
    """
    if path is None:
        raise TypeError("encode() needs a path to write to")
    if _has_categories(X):
        if y is None:
            raise ValueError("y: labels are required (one per row of X)")
        return _encode_frame(X, y, path, page_rows, block_bytes, page_format, scale)
    chunks: Iterable[Any]
    if y is not None or _is_matrix(X):
        if y is None:
            raise ValueError("y: labels are required (one per row of X)")
        chunks = [(X, y)]
    else:
        chunks = X
    options = (page_rows, block_bytes, page_format, schema, "none" if scale is None else scale)
    writer: Optional[_Writer] = None
    try:
        for chunk in chunks:
            try:
                cx, cy = chunk
            except (TypeError, ValueError):
                raise ValueError(
                    "encode: expected (X, y) pairs from the iterable of chunks, got "
                    f"{type(chunk).__name__}"
                ) from None
            if writer is None:
                width = n_cols if n_cols is not None else _n_cols(cx)
                writer = _Writer(os.fspath(path), width, *options)
            writer.push(cx, cy)
        if writer is None:
            if n_cols is None:
                raise ValueError("encode: no chunks to write (pass n_cols for an empty file)")
            writer = _Writer(os.fspath(path), n_cols, *options)
        return writer.finish()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


def _has_categories(x: Any) -> bool:
    """True for a pandas DataFrame with a column that is not numbers."""
    dtypes = getattr(x, "dtypes", None)
    if dtypes is None or not hasattr(x, "to_csv") or not hasattr(x, "columns"):
        return False
    import numpy as np

    return any(not (np.issubdtype(d, np.number) or np.issubdtype(d, np.bool_))
               if isinstance(d, np.dtype) else True for d in dtypes)


def _encode_frame(frame: Any, y: Any, path: Any, page_rows: int, block_bytes: int,
                  page_format: str, scale: Optional[str]) -> dict:
    """A DataFrame with categorical columns, through the library's CSV
    reader (the schema `tocpile encode file.csv` infers: numeric columns
    as they are, the others one-hot over their values, stored in the
    file)."""
    import tempfile

    import numpy as np

    label = "label"
    while label in frame.columns:
        label = "_" + label
    labels = np.asarray(y, dtype=np.float64)
    if labels.ndim != 1 or labels.shape[0] != len(frame):
        raise ValueError(f"y: {labels.size} labels for {len(frame)} rows (one label per row)")
    table = frame.copy()
    table.columns = [str(c) for c in table.columns]
    table[label] = labels
    with tempfile.TemporaryDirectory(prefix="tocpile-frame-") as tmp:
        csv_path = os.path.join(tmp, "frame.csv")
        table.to_csv(csv_path, index=False)
        try:
            return _encode_csv(csv_path, os.fspath(path), label, page_rows, block_bytes,
                               page_format, "none" if scale is None else scale)
        except TocError as e:
            # Name the user's DataFrame, not the scratch CSV file.
            raise TocError(str(e).replace(csv_path, "DataFrame (as CSV)")) from None


def _n_cols(x: Any) -> int:
    import numpy as np

    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.asarray(x).shape
    if len(shape) != 2:
        raise ValueError(f"X: expected a 2-D array, got shape {tuple(shape)}")
    return int(shape[1])

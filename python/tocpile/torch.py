"""PyTorch adapter: :class:`CorgiPileDataset`, a
``torch.utils.data.IterableDataset`` of CorgiPile mini-batches.

Importing this module needs PyTorch; ``import tocpile`` alone never
imports it. The dataset yields whole mini-batches, so give the
``DataLoader`` ``batch_size=None``::

    from torch.utils.data import DataLoader
    from tocpile.torch import CorgiPileDataset

    ds = CorgiPileDataset("train.toc", batch_size=250, seed=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    for epoch in range(10):
        ds.set_epoch(epoch)            # before the DataLoader's iterator is made
        for X, y in loader:            # X: float tensor (dense), y: labels
            ...

Work is split across every DataLoader worker of every DDP rank: worker
``w`` of ``W`` on rank ``r`` of ``R`` reads slice ``r * W + w`` of the
``R * W`` contiguous slices of the epoch's block order (CorgiPile paper
section 5.1), so between them the workers visit every row exactly once per
epoch, each with its own buffer. The rank and world size come from
``torch.distributed`` when it is initialised, else from the ``rank`` and
``world_size`` arguments (default one process). As with
``DistributedSampler``, call ``set_epoch`` before each epoch; with
``persistent_workers=True`` the workers keep the epoch they started with,
so leave it off.

The adapter uses only ``torch.utils.data.IterableDataset``,
``torch.utils.data.get_worker_info``, ``torch.distributed``'s
``is_available`` / ``is_initialized`` / ``get_rank`` / ``get_world_size``,
``torch.from_numpy`` and ``torch.sparse_csr_tensor``; the tests run it
against a stand-in module with exactly that protocol (PyTorch is not
installed in CI).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Tuple, Union

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError as e:  # pragma: no cover - exercised without torch
    raise ImportError(
        "tocpile.torch needs PyTorch (pip install torch); the rest of tocpile works without it"
    ) from e

from . import Loader

__all__ = ["CorgiPileDataset"]


class CorgiPileDataset(IterableDataset):
    """Mini-batches ``(X, y)`` of a dataset file as torch tensors.

    ``as_="dense"`` (default) gives ``X`` as a dense float64 tensor,
    ``"csr"`` as a ``torch.sparse_csr_tensor``; ``to_tensor=False`` yields
    the numpy / scipy objects of :class:`tocpile.Loader` instead.
    ``dtype=numpy.float32`` gives float32 rows and labels (torch's default
    float type), made without a float64 copy. The other options are the
    loader's (``shuffle``, ``batch_size``, ``seed``, ``buffer``, ``mode``).
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        batch_size: int = 250,
        shuffle: str = "corgipile",
        seed: int = 0,
        buffer: Union[float, int] = 0.1,
        mode: str = "auto",
        as_: str = "dense",
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        to_tensor: bool = True,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if as_ not in ("dense", "csr"):
            raise ValueError(f'as_: expected "dense" or "csr", got {as_!r}')
        self.path = os.fspath(path)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.buffer = buffer
        self.mode = mode
        self.as_ = as_
        self.rank = rank
        self.world_size = world_size
        self.to_tensor = to_tensor
        self.dtype = dtype
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration yields (fixes its shuffle)."""
        self.epoch = epoch

    def _ranks(self) -> Tuple[int, int]:
        if self.rank is not None or self.world_size is not None:
            return (self.rank or 0, self.world_size or 1)
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return (dist.get_rank(), dist.get_world_size())
        return (0, 1)

    def split(self) -> Tuple[int, int]:
        """``(slice, slices)``: which share of each epoch this process reads."""
        rank, world = self._ranks()
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        return (rank * workers + worker, world * workers)

    def loader(self) -> Loader:
        """The :class:`tocpile.Loader` of this process's share, at the epoch."""
        index, count = self.split()
        loader = Loader(
            self.path,
            shuffle=self.shuffle,
            batch_size=self.batch_size,
            seed=self.seed,
            rank=index,
            world_size=count,
            buffer=self.buffer,
            mode=self.mode,
            as_=self.as_,
            dtype=self.dtype,
        )
        loader.set_epoch(self.epoch)
        return loader

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        for X, y in self.loader():
            if not self.to_tensor:
                yield X, y
            elif self.as_ == "dense":
                yield torch.from_numpy(X), torch.from_numpy(y)
            else:
                yield (
                    torch.sparse_csr_tensor(
                        torch.from_numpy(X.indptr.astype("int64")),
                        torch.from_numpy(X.indices.astype("int64")),
                        torch.from_numpy(X.data),
                        size=X.shape,
                    ),
                    torch.from_numpy(y),
                )

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

Resuming mid-epoch: ``ds.state_dict()`` (the epoch and the batches of it
already consumed) and ``ds.load_state_dict(state)`` before the next
iteration, which then yields exactly the rest of that epoch, with or
without workers (each worker skips its share of the consumed batches:
the DataLoader takes the workers' batches in turn). Without workers the
dataset counts the batches itself; with workers (whose iterations the
dataset in the main process does not see) give the count the training
loop holds, ``ds.state_dict(batches=n)``, and resume with the same
``num_workers``::

    for i, (X, y) in enumerate(loader):
        ...
        if time_to_save:
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(),
                        "data": ds.state_dict(batches=i + 1)}, "ckpt.pt")

Worker processes made by fork (Linux's default) are safe: the library
starts its thread pool again in each, and each worker opens its own file
and loader threads when it starts iterating.

The adapter uses only ``torch.utils.data.IterableDataset``,
``torch.utils.data.get_worker_info``, ``torch.distributed``'s
``is_available`` / ``is_initialized`` / ``get_rank`` / ``get_world_size``,
``torch.from_numpy`` and ``torch.sparse_csr_tensor``; the fast tests run
it against a stand-in module with exactly that protocol, and
``tests/test_torch_real.py`` against PyTorch itself (CI's opt-in step,
``TOCPILE_TORCH=1``).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Iterator, Optional, Tuple, Union

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
except ImportError as e:  # pragma: no cover - exercised without torch
    raise ImportError(
        "tocpile.torch needs PyTorch (pip install torch); the rest of tocpile works without it"
    ) from e

from . import Dataset, Loader

__all__ = ["CorgiPileDataset"]

#: Format of the dicts ``CorgiPileDataset.state_dict`` returns.
STATE_VERSION = 1


def resume_plan(consumed: int, counts: "list[int]") -> Tuple["list[int]", int]:
    """Where each worker's share stands after a DataLoader yielded
    ``consumed`` batches from workers having ``counts`` batches: how many
    of each share's batches were among them, and which share's batch comes
    next. A DataLoader takes the workers' batches in turn (batch ``t`` of
    worker 0, of worker 1, ..., then batch ``t + 1``), passing over a
    worker that has none left; a new one starts with worker 0, so the
    resumed epoch gives worker ``w`` share ``(next + w) % len(counts)``
    and the batches come in the same order as without the interruption."""
    skips = [0] * len(counts)
    left, following = consumed, 0
    while left > 0 and any(s < c for s, c in zip(skips, counts)):
        for w, c in enumerate(counts):
            if left > 0 and skips[w] < c:
                skips[w] += 1
                left -= 1
                following = (w + 1) % len(counts)
    return skips, following


class CorgiPileDataset(IterableDataset):
    """Mini-batches ``(X, y)`` of a dataset file as torch tensors.

    ``as_="dense"`` (default) gives ``X`` as a dense float64 tensor,
    ``"csr"`` as a ``torch.sparse_csr_tensor``; ``to_tensor=False`` yields
    the numpy / scipy objects of :class:`tocpile.Loader` instead.
    ``dtype=numpy.float32`` gives float32 rows and labels (torch's default
    float type), made without a float64 copy. The other options are the
    loader's (``shuffle``, ``batch_size``, ``seed``, ``buffer``, ``mode``);
    ``buffer=None`` (the default) is the library's: the whole file when it
    fits the loader's memory budget, else a tenth. Each DataLoader worker
    then keeps its share of the file, so the workers hold it once between
    them.
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        batch_size: int = 250,
        shuffle: str = "corgipile",
        seed: int = 0,
        buffer: Union[float, int, str, None] = None,
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
        # Batches of `epoch` this process's iterations yielded (without
        # workers: what the training loop consumed); None before any.
        self._yielded: Optional[int] = None
        # (epoch, batches consumed) for the next iteration of that epoch.
        self._resume: Optional[Tuple[int, int]] = None

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration yields (fixes its shuffle). Another
        epoch than a loaded state's ends that resumption."""
        self.epoch = epoch
        self._yielded = None
        if self._resume is not None and self._resume[0] != epoch:
            self._resume = None

    def _identity(self) -> dict:
        """The options a state must have been saved under."""
        return {
            "n_rows": Dataset(self.path).n_rows,
            "batch_size": self.batch_size,
            "shuffle": self.shuffle,
            "seed": self.seed,
            "buffer": self.buffer,
            "mode": self.mode,
            "rank": self._ranks(),
        }

    def state_dict(self, batches: Optional[int] = None) -> dict:
        """Where the iteration stands: the epoch, the batches of it already
        consumed (``batches``; by default those this process's iteration
        yielded, which is the count without DataLoader workers) and the
        options, checked on load."""
        if batches is None:
            if self._yielded is None:
                raise ValueError(
                    "batches: this process has not iterated the dataset (with DataLoader "
                    "workers the dataset here does not see the batches); pass the number "
                    "of batches the DataLoader yielded in this epoch"
                )
            batches = self._yielded
        if isinstance(batches, bool) or not isinstance(batches, int) or batches < 0:
            raise ValueError(f"batches: expected an int >= 0, got {batches!r}")
        state = {"version": STATE_VERSION, "epoch": self.epoch, "batches": batches}
        state.update(self._identity())
        return state

    def load_state_dict(self, state: dict) -> None:
        """Resumes from a :meth:`state_dict`: sets its epoch, whose
        iterations then skip the batches already consumed (each DataLoader
        worker its share) until :meth:`set_epoch` moves to another epoch."""
        version = state.get("version")
        if version != STATE_VERSION:
            raise ValueError(
                f"state_dict version {version!r} (this dataset reads version {STATE_VERSION})")
        for key, ours in self._identity().items():
            theirs = state.get(key)
            if isinstance(theirs, list):
                theirs = tuple(theirs)
            if theirs != ours:
                raise ValueError(
                    f"state_dict is of another run: {key} is {theirs!r} there, {ours!r} here; "
                    "resume with the same file and options")
        self.epoch = int(state["epoch"])
        self._resume = (self.epoch, int(state["batches"]))
        self._yielded = None

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

    def _slice_loader(self, index: int, count: int) -> Loader:
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

    def loader(self) -> Loader:
        """The :class:`tocpile.Loader` of this process's share, at the epoch.
        After :meth:`load_state_dict`, the share's rest of the epoch: the
        workers' shares turned so that the DataLoader's first worker has
        the share whose batch was next (see :func:`resume_plan`)."""
        index, count = self.split()
        if self._resume is None or self._resume[0] != self.epoch or self._resume[1] == 0:
            return self._slice_loader(index, count)
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        first = index - worker
        with warnings.catch_warnings():
            # The shares' loaders for their batch counts only: their
            # warnings are those of the loader made below.
            warnings.simplefilter("ignore")
            counts = [len(self._slice_loader(first + w, count)) for w in range(workers)]
        skips, following = resume_plan(self._resume[1], counts)
        share = (following + worker) % workers
        loader = self._slice_loader(first + share, count)
        state = loader.state_dict()
        state["position"] = skips[share]
        loader.load_state_dict(state)
        return loader

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        loader = self.loader()
        resumed = self._resume is not None and self._resume[0] == self.epoch
        self._yielded = self._resume[1] if resumed else 0
        for X, y in loader:
            self._yielded += 1
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
                        # The loader's arrays are valid CSR (no check, and
                        # no warning that none is made).
                        check_invariants=False,
                    ),
                    torch.from_numpy(y),
                )

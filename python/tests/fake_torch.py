"""A stand-in for the parts of PyTorch that tocpile.torch uses, with the
same protocol: ``torch.utils.data.IterableDataset`` and
``get_worker_info`` (None in the main process, an object with ``id`` and
``num_workers`` in a DataLoader worker), ``torch.distributed`` (
``is_available``, ``is_initialized``, ``get_rank``, ``get_world_size``),
``torch.from_numpy`` and ``torch.sparse_csr_tensor`` (plus a sequential
``DataLoader`` for the README's example). PyTorch itself is
not installable in CI; this module lets the tests run the adapter and
simulate DataLoader workers and DDP ranks."""

import pickle
import sys
import types


class Tensor:
    """A tensor sharing a numpy array (as torch.from_numpy does)."""

    def __init__(self, array):
        self.array = array

    def numpy(self):
        return self.array


class SparseCsrTensor:
    def __init__(self, crow, col, values, size):
        self.crow_indices, self.col_indices, self.values, self.size = crow, col, values, tuple(size)


def install(monkeypatch):
    """Puts a fresh fake torch into sys.modules; returns (torch, control)
    where control sets the worker info and the distributed state."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch.utils")
    data = types.ModuleType("torch.utils.data")
    dist = types.ModuleType("torch.distributed")
    control = types.SimpleNamespace(worker=None, initialized=False, rank=0, world_size=1)

    class IterableDataset:
        def __iter__(self):
            raise NotImplementedError

    class DataLoader:
        """batch_size=None over an IterableDataset: each worker iterates a
        pickled copy of the dataset (one worker after another here; the
        real one interleaves their batches)."""

        def __init__(self, dataset, batch_size=1, num_workers=0, **_):
            assert batch_size is None, "tocpile yields whole mini-batches: batch_size=None"
            self.dataset, self.num_workers = dataset, num_workers

        def __iter__(self):
            if self.num_workers == 0:
                yield from self.dataset
                return
            for w in range(self.num_workers):
                yield from run_worker(self.dataset, control, w, self.num_workers)

    data.IterableDataset = IterableDataset
    data.DataLoader = DataLoader
    data.get_worker_info = lambda: control.worker
    dist.is_available = lambda: True
    dist.is_initialized = lambda: control.initialized
    dist.get_rank = lambda: control.rank
    dist.get_world_size = lambda: control.world_size
    utils.data = data
    torch.utils = utils
    torch.distributed = dist
    torch.from_numpy = Tensor
    torch.sparse_csr_tensor = lambda crow, col, values, size, check_invariants=None: (
        SparseCsrTensor(crow, col, values, size))
    for name, module in [
        ("torch", torch),
        ("torch.utils", utils),
        ("torch.utils.data", data),
        ("torch.distributed", dist),
    ]:
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "tocpile.torch", raising=False)
    return torch, control


def run_worker(dataset, control, worker_id, num_workers):
    """What a DataLoader worker does: iterate its own (pickled) copy of the
    dataset with get_worker_info() describing it."""
    copy = pickle.loads(pickle.dumps(dataset))
    control.worker = types.SimpleNamespace(id=worker_id, num_workers=num_workers, seed=0)
    try:
        return list(copy)
    finally:
        control.worker = None

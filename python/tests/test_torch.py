"""tocpile.torch against a stand-in torch module (see fake_torch.py):
work split across DataLoader workers and DDP ranks, disjoint and complete."""

import subprocess
import sys

import numpy as np
import pytest

import fake_torch
from conftest import row_ids


def test_tocpile_alone_does_not_import_torch():
    code = "import sys, tocpile; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
    missing = "import sys; sys.modules['torch'] = None\ntry:\n import tocpile.torch\nexcept ImportError as e:\n assert 'needs PyTorch' in str(e), e\nelse:\n raise SystemExit('no ImportError')"
    subprocess.run([sys.executable, "-c", missing], check=True)


def ids_of(batches):
    return [row_ids(X.numpy()) for X, _ in batches]


@pytest.mark.parametrize("world,workers", [(1, 1), (1, 3), (2, 2), (3, 1)])
def test_workers_and_ranks_split_disjoint_and_complete(monkeypatch, ids_file, world, workers):
    torch, control = fake_torch.install(monkeypatch)
    from tocpile.torch import CorgiPileDataset

    path, X, y = ids_file
    for epoch in range(2):
        seen = []
        for rank in range(world):
            control.initialized, control.rank, control.world_size = world > 1, rank, world
            ds = CorgiPileDataset(path, batch_size=100, seed=9)
            ds.set_epoch(epoch)
            for w in range(workers):
                batches = fake_torch.run_worker(ds, control, w, workers)
                for Xb, yb in batches:
                    assert isinstance(Xb, fake_torch.Tensor) and Xb.numpy().dtype == np.float64
                    ids = row_ids(Xb.numpy())
                    np.testing.assert_array_equal(yb.numpy(), y[ids])
                seen.extend(ids_of(batches))
        seen = np.concatenate(seen)
        assert len(seen) == 1000 and sorted(seen.tolist()) == list(range(1000))


def test_explicit_ranks_and_csr_tensors(monkeypatch, ids_file):
    torch, control = fake_torch.install(monkeypatch)
    from tocpile.torch import CorgiPileDataset

    path, X, _ = ids_file
    ds = CorgiPileDataset(path, as_="csr", rank=1, world_size=2, seed=2)
    assert ds.split() == (1, 2)
    batches = list(ds)
    assert batches and all(isinstance(b[0], fake_torch.SparseCsrTensor) for b in batches)
    t = batches[0][0]
    dense = np.zeros(t.size)
    crow, col, val = t.crow_indices.numpy(), t.col_indices.numpy(), t.values.numpy()
    for r in range(t.size[0]):
        dense[r, col[crow[r] : crow[r + 1]]] = val[crow[r] : crow[r + 1]]
    np.testing.assert_array_equal(dense, X[row_ids(dense)])
    # The same share as the loader's rank 1 of 2.
    import tocpile

    ref = [row_ids(Xb) for Xb, _ in tocpile.Loader(path, rank=1, world_size=2, seed=2)]
    raw = CorgiPileDataset(path, rank=1, world_size=2, seed=2, to_tensor=False)
    assert [row_ids(Xb).tolist() for Xb, _ in raw] == [r.tolist() for r in ref]
    with pytest.raises(ValueError, match="as_"):
        CorgiPileDataset(path, as_="coo")


def test_float32_tensors(monkeypatch, ids_file):
    fake_torch.install(monkeypatch)
    from tocpile.torch import CorgiPileDataset

    path, X, y = ids_file
    batches = list(CorgiPileDataset(path, batch_size=300, seed=1, dtype=np.float32))
    assert [b[0].numpy().shape[0] for b in batches] == [300, 300, 300, 100]
    for Xb, yb in batches:
        assert Xb.numpy().dtype == np.float32 and yb.numpy().dtype == np.float32
        ids = row_ids(Xb.numpy())
        np.testing.assert_array_equal(Xb.numpy(), X[ids].astype(np.float32))


def test_resume_plan_gives_the_rest_in_the_dataloaders_order(monkeypatch):
    """A DataLoader takes its workers' batches in turn, passing over the
    exhausted ones; resume_plan's skips and turned shares give the rest of
    that sequence exactly, however many batches were consumed."""
    fake_torch.install(monkeypatch)
    from tocpile.torch import resume_plan

    def turns(shares):
        out = []
        for t in range(max(len(s) for s in shares)):
            out.extend(s[t] for s in shares if t < len(s))
        return out

    rng = np.random.default_rng(0)
    for _ in range(200):
        counts = rng.integers(0, 6, size=rng.integers(1, 5)).tolist()
        shares = [[(w, t) for t in range(c)] for w, c in enumerate(counts)]
        full = turns(shares)
        for consumed in range(len(full) + 1):
            skips, following = resume_plan(consumed, counts)
            assert sum(skips) == consumed
            W = len(counts)
            turned = [shares[(following + w) % W][skips[(following + w) % W]:] for w in range(W)]
            rest = turns(turned) if any(turned) else []
            assert full[:consumed] + rest == full, (counts, consumed)


def test_state_dict_resumes_without_workers(monkeypatch, ids_file):
    fake_torch.install(monkeypatch)
    from tocpile.torch import CorgiPileDataset

    path, _, _ = ids_file
    ds = CorgiPileDataset(path, batch_size=90, seed=5)
    ds.set_epoch(2)
    full = ids_of(list(ds))
    it = iter(ds)
    head = ids_of([next(it) for _ in range(4)])
    state = ds.state_dict()
    assert (state["epoch"], state["batches"]) == (2, 4)
    again = CorgiPileDataset(path, batch_size=90, seed=5)
    again.load_state_dict(state)
    assert again.epoch == 2
    rest = ids_of(list(again))
    assert [a.tolist() for a in head + rest] == [a.tolist() for a in full]
    fresh = CorgiPileDataset(path, batch_size=90, seed=5)
    with pytest.raises(ValueError, match="has not iterated"):
        fresh.state_dict()
    with pytest.raises(ValueError, match="batches"):
        fresh.state_dict(batches=-1)
    with pytest.raises(ValueError, match="seed is 5 there, 6 here"):
        CorgiPileDataset(path, batch_size=90, seed=6).load_state_dict(state)
    with pytest.raises(ValueError, match="version"):
        fresh.load_state_dict({**state, "version": 99})

"""tocpile.torch against PyTorch itself (skipped when torch is not
installed; CI installs it in an opt-in step, ``TOCPILE_TORCH=1 bash
.ci/run``): the DataLoader whose workers hung after the process had used
the library (issue 36), every row once per epoch with 0 and 2 workers in
the DataLoader's order, sparse and dense tensors, pin_memory, resuming
from state_dict, and a torch.nn.Linear trained by torch.optim.SGD on the
loader reaching the command line's accuracy. Workers are made by fork
(Linux's default start method before Python 3.14; asked for explicitly)."""

import importlib
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile
from conftest import REPO, read_libsvm, row_ids

try:
    import torch
    from torch.utils.data import DataLoader
except ImportError:
    # CI's opt-in step (TOCPILE_TORCH=1) sets TOCPILE_REQUIRE_TORCH: there a
    # missing torch is a failure, not a skip.
    if os.environ.get("TOCPILE_REQUIRE_TORCH"):
        raise
    pytest.skip("PyTorch is not installed (pip install torch)", allow_module_level=True)

FORK = "fork" if hasattr(os, "fork") else None
# A run that takes longer has hung (each takes seconds).
HANG_SECONDS = 300


@pytest.fixture
def adapter():
    """tocpile.torch imported against the real torch (the fast tests
    import it against a stand-in, tests/fake_torch.py)."""
    sys.modules.pop("tocpile.torch", None)
    module = importlib.import_module("tocpile.torch")
    assert module.torch is torch
    return module


def loader_of(ds, workers, **kw):
    return DataLoader(ds, batch_size=None, num_workers=workers,
                      multiprocessing_context=FORK if workers else None, **kw)


def test_the_issue_reproduction_finishes(tmp_path):
    """The issue's script, as a user runs it (its own process: a hang
    would stop the test run), ended if it takes longer than HANG_SECONDS."""
    code = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp, tocpile
        from torch.utils.data import DataLoader
        from tocpile.torch import CorgiPileDataset
        X = sp.random(20000, 50, density=0.1, format="csr", random_state=0)
        tocpile.encode(X, (np.arange(20000) % 2).astype(float), "d.toc")
        print(sum(len(b[1]) for b in DataLoader(CorgiPileDataset("d.toc", batch_size=250),
                                                batch_size=None, num_workers=2)))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and its workers
        proc.communicate()
        pytest.fail(f"DataLoader with 2 workers did not finish in {HANG_SECONDS} s (the hang)")
    assert proc.returncode == 0, err
    assert out.split()[-1] == "20000"


def interleaved(shares):
    """Batches as a DataLoader takes them from its workers: in turn."""
    out = []
    for t in range(max(len(s) for s in shares)):
        out.extend(s[t] for s in shares if t < len(s))
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_every_row_once_per_epoch_in_the_dataloaders_order(adapter, ids_file, workers):
    path, X, y = ids_file
    ds = adapter.CorgiPileDataset(path, batch_size=100, seed=9)
    loader = loader_of(ds, workers)
    orders = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        got = [(row_ids(Xb.numpy()), yb.numpy()) for Xb, yb in loader]
        ids = np.concatenate([i for i, _ in got])
        assert sorted(ids.tolist()) == list(range(1000))
        for i, yb in got:
            np.testing.assert_array_equal(yb, y[i])
        # Worker w reads slice w of the epoch's block order: the batches
        # of the library's loader for that slice, taken in turn.
        shares = []
        for w in range(max(workers, 1)):
            ref = tocpile.Loader(path, batch_size=100, seed=9, rank=w, world_size=max(workers, 1))
            ref.set_epoch(epoch)
            shares.append([row_ids(Xb) for Xb, _ in ref])
        assert [i.tolist() for i, _ in got] == [i.tolist() for i in interleaved(shares)]
        orders.append(ids.tolist())
    assert orders[0] != orders[1]  # set_epoch reshuffles


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("as_", ["dense", "csr"])
def test_sparse_and_dense_tensors(adapter, ids_file, workers, as_):
    path, X, y = ids_file
    ds = adapter.CorgiPileDataset(path, batch_size=100, seed=2, as_=as_, dtype=np.float32)
    batches = list(loader_of(ds, workers))
    seen = []
    w = torch.linspace(-1, 1, X.shape[1], dtype=torch.float32).reshape(-1, 1)
    for Xb, yb in batches:
        assert Xb.dtype == torch.float32 and yb.dtype == torch.float32
        assert Xb.layout == (torch.sparse_csr if as_ == "csr" else torch.strided)
        dense = Xb.to_dense() if as_ == "csr" else Xb
        ids = row_ids(dense.numpy())
        np.testing.assert_array_equal(dense.numpy(), X[ids].astype(np.float32))
        np.testing.assert_array_equal(yb.numpy(), y[ids].astype(np.float32))
        torch.testing.assert_close(Xb @ w, dense @ w)
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(1000))
    # float64 by default.
    Xb, yb = next(iter(adapter.CorgiPileDataset(path, batch_size=100, as_=as_)))
    assert Xb.dtype == torch.float64 and yb.dtype == torch.float64


def test_pin_memory(adapter, ids_file):
    path, X, _ = ids_file
    ds = adapter.CorgiPileDataset(path, batch_size=100, seed=4, dtype=np.float32)
    with warnings.catch_warnings():
        # Without an accelerator torch warns that it cannot pin memory.
        warnings.simplefilter("ignore", UserWarning)
        batches = list(loader_of(ds, 2, pin_memory=True))
    ids = np.concatenate([row_ids(Xb.numpy()) for Xb, _ in batches])
    assert sorted(ids.tolist()) == list(range(1000))
    if torch.cuda.is_available():
        assert all(Xb.is_pinned() and yb.is_pinned() for Xb, yb in batches)


def save_and_load(state):
    """A state through torch.save and torch.load, as a checkpoint."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("consumed", [1, 3, 7])
def test_resume_from_state_dict(adapter, ids_file, workers, consumed):
    path, _, _ = ids_file

    def make():
        ds = adapter.CorgiPileDataset(path, batch_size=90, seed=5)
        return ds, loader_of(ds, workers)

    ds, loader = make()
    ds.set_epoch(1)
    full = [row_ids(Xb.numpy()).tolist() for Xb, _ in loader]
    ds, loader = make()
    ds.set_epoch(1)
    head = []
    for Xb, _ in loader:
        head.append(row_ids(Xb.numpy()).tolist())
        if len(head) == consumed:
            break
    if workers == 0:
        state = ds.state_dict()
    else:
        with pytest.raises(ValueError, match="pass the number of batches"):
            ds.state_dict()
        state = ds.state_dict(batches=consumed)
    assert state["epoch"] == 1 and state["batches"] == consumed
    ds, loader = make()
    ds.load_state_dict(save_and_load(state))
    ds.set_epoch(1)  # what a resumed loop calls first: keeps the resumption
    rest = [row_ids(Xb.numpy()).tolist() for Xb, _ in loader]
    assert head + rest == full
    # Another epoch ends the resumption: epoch 1 again is all of it.
    ds.set_epoch(2)
    ds.set_epoch(1)
    assert [row_ids(Xb.numpy()).tolist() for Xb, _ in loader] == full
    other = adapter.CorgiPileDataset(path, batch_size=50, seed=5)
    with pytest.raises(ValueError, match="batch_size is 90 there, 50 here"):
        other.load_state_dict(state)


def split_file(tmp_path, X, y, seed=0, test_share=0.2):
    """Rows shuffled and split; the training rows encoded (max-abs scaling
    stored, the default), the test rows encoded with the same columns."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(X.shape[0])
    n_test = int(len(order) * test_share)
    test, train = order[:n_test], order[n_test:]
    tocpile.encode(X[train], y[train], tmp_path / "train.toc")
    tocpile.encode(X[test], y[test], tmp_path / "test.toc", scale=None)
    return tmp_path / "train.toc", tmp_path / "test.toc", X[test], y[test]


def cli_accuracy(cli, train, test, tmp_path, epochs, lr):
    """The command line's plain SGD on logistic regression (defaults:
    250-row batches, the learning rate times 0.95 after each epoch, no L2),
    evaluated on the test file."""
    model = tmp_path / "cli.model"
    subprocess.run([cli, "train", str(train), "--model", "lr", "--optimizer", "sgd",
                    "--lr", str(lr), "--epochs", str(epochs), "--seed", "1",
                    "--save", str(model)], check=True, capture_output=True)
    out = subprocess.run([cli, "evaluate", str(model), str(test), "--json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["accuracy"]


def torch_accuracy(adapter, train, X_test, y_test, epochs, lr, workers):
    """torch.nn.Linear and torch.optim.SGD on the CorgiPile loader, rows
    multiplied by the file's stored max-abs factors (the library's
    training applies them to its parameters instead)."""
    torch.manual_seed(0)
    kind, factors = tocpile.Dataset(train).scaling
    assert kind == "maxabs"
    scale = torch.from_numpy(factors).float()
    model = torch.nn.Linear(X_test.shape[1], 1)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    decay = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    ds = adapter.CorgiPileDataset(train, batch_size=250, seed=1, dtype=np.float32)
    loader = loader_of(ds, workers)
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for Xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(Xb * scale).squeeze(1), yb)
            loss.backward()
            opt.step()
        decay.step()
    with torch.no_grad():
        X = torch.from_numpy(np.asarray(X_test.todense(), dtype=np.float32))
        predicted = (model(X * scale).squeeze(1) > 0).numpy()
    return float(np.mean(predicted == (y_test > 0)))


@pytest.mark.parametrize("workers", [0, 2])
def test_linear_sgd_reaches_the_command_lines_accuracy_mushrooms(adapter, cli, tmp_path, workers):
    X, y = read_libsvm(REPO / "data" / "mushrooms.libsvm.gz")
    train, test, X_test, y_test = split_file(tmp_path, X, y)
    ref = cli_accuracy(cli, train, test, tmp_path, epochs=10, lr=0.1)
    ours = torch_accuracy(adapter, train, X_test, y_test, epochs=10, lr=0.1, workers=workers)
    print(f"mushrooms: command line {ref:.4f}, torch {ours:.4f}")
    assert ours >= ref - 0.01


CENSUS = REPO / "data" / "census_fertility.libsvm.gz"


@pytest.mark.skipif(not CENSUS.exists(), reason="needs data/census_fertility.libsvm.gz")
def test_linear_sgd_reaches_the_command_lines_accuracy_census(adapter, cli, tmp_path):
    X, y = read_libsvm(CENSUS, n_cols=12)
    train, test, X_test, y_test = split_file(tmp_path, X, y)
    ref = cli_accuracy(cli, train, test, tmp_path, epochs=5, lr=0.1)
    ours = torch_accuracy(adapter, train, X_test, y_test, epochs=5, lr=0.1, workers=2)
    print(f"census_fertility: command line {ref:.4f}, torch {ours:.4f}")
    assert ours >= ref - 0.01

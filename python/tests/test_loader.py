"""Loader: every row once per epoch, deterministic orders, exact
resumption from state_dict, disjoint and complete splits across ranks."""

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile
from conftest import id_rows, row_ids

STRATEGIES = ["corgipile", "block", "none", "once", "epoch", "window", "mrs"]


def epoch_ids(loader):
    """Row numbers of each mini-batch of one pass."""
    return [row_ids(X) for X, _ in loader]


@pytest.mark.parametrize("shuffle", STRATEGIES)
@pytest.mark.parametrize("mode", ["page", "exact"])
def test_every_row_once_per_epoch(ids_file, shuffle, mode):
    path, X, y = ids_file
    loader = tocpile.Loader(path, shuffle=shuffle, batch_size=250, seed=3, mode=mode)
    for epoch in range(2):
        assert loader.epoch == epoch
        seen, labels = [], []
        for Xb, yb in loader:
            assert isinstance(Xb, sp.csr_matrix) and Xb.shape[1] == 6
            ids = row_ids(Xb)
            # Rows arrive whole, with their own labels.
            np.testing.assert_array_equal(Xb.toarray(), X[ids])
            np.testing.assert_array_equal(yb, y[ids])
            seen.append(ids)
        seen = np.concatenate(seen)
        if shuffle == "mrs":  # replay batches repeat rows; the stream has each once
            assert set(seen.tolist()) == set(range(1000))
        else:
            assert sorted(seen.tolist()) == list(range(1000))
            if shuffle not in ("none", "once"):
                assert seen.tolist() != list(range(1000))


def test_orders_follow_seed_and_epoch(ids_file):
    path, _, _ = ids_file

    def order(seed, epoch):
        loader = tocpile.Loader(path, seed=seed)
        loader.set_epoch(epoch)
        return np.concatenate(epoch_ids(loader)).tolist()

    assert order(1, 0) == order(1, 0)
    assert order(1, 0) != order(1, 1)
    assert order(1, 0) != order(2, 0)
    # A pass advances the epoch; set_epoch goes back.
    loader = tocpile.Loader(path, seed=1)
    first = np.concatenate(epoch_ids(loader)).tolist()
    second = np.concatenate(epoch_ids(loader)).tolist()
    assert (first, second) == (order(1, 0), order(1, 1))


def test_dense_batches(ids_file):
    path, X, y = ids_file
    loader = tocpile.Loader(path, as_="dense", batch_size=100, shuffle="none", mode="exact")
    batches = list(loader)
    assert all(isinstance(b[0], np.ndarray) and b[0].dtype == np.float64 for b in batches)
    np.testing.assert_array_equal(np.vstack([b[0] for b in batches]), X)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)


@pytest.mark.parametrize("mode", ["page", "exact"])
@pytest.mark.parametrize("shuffle", ["corgipile", "window", "mrs"])
def test_resumption_yields_the_same_remaining_batches(ids_file, mode, shuffle):
    path, _, _ = ids_file
    kw = dict(shuffle=shuffle, batch_size=100, seed=11, mode=mode)
    loader = tocpile.Loader(path, **kw)
    loader.set_epoch(2)
    full = [(row_ids(X), yb) for X, yb in loader]
    assert len(full) >= 10
    for stop in [0, 1, 4, len(full) - 1, len(full)]:
        first = tocpile.Loader(path, **kw)
        first.set_epoch(2)
        it = iter(first)
        for _ in range(stop):
            next(it)
        state = first.state_dict()
        assert (state["epoch"], state["position"]) == (2, stop)
        resumed = tocpile.Loader(path, **kw)
        resumed.load_state_dict(state)
        rest = [(row_ids(X), yb) for X, yb in resumed]
        assert len(rest) == len(full) - stop
        for (a, ya), (b, yb) in zip(rest, full[stop:]):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(ya, yb)
        # After the epoch, the state points at the next one.
        assert (resumed.state_dict()["epoch"], resumed.state_dict()["position"]) == (3, 0)


def test_state_of_another_run_is_refused(ids_file):
    path, _, _ = ids_file
    state = tocpile.Loader(path, seed=1).state_dict()
    with pytest.raises(ValueError, match="seed"):
        tocpile.Loader(path, seed=2).load_state_dict(state)
    with pytest.raises(ValueError, match="batch_size"):
        tocpile.Loader(path, seed=1, batch_size=10).load_state_dict(state)
    with pytest.raises(KeyError):
        tocpile.Loader(path, seed=1).load_state_dict({"version": 1})


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("shuffle", ["corgipile", "none", "epoch"])
def test_ranks_are_disjoint_and_complete(ids_file, world, shuffle):
    path, _, _ = ids_file
    for epoch in range(2):
        shares = []
        for rank in range(world):
            loader = tocpile.Loader(path, shuffle=shuffle, rank=rank, world_size=world, seed=5)
            loader.set_epoch(epoch)
            ids = epoch_ids(loader)
            shares.append(set(np.concatenate(ids).tolist()) if ids else set())
            assert sum(len(i) for i in ids) == len(shares[-1])
        assert sum(len(s) for s in shares) == 1000
        assert set().union(*shares) == set(range(1000))


def test_bad_options(ids_file):
    path, _, _ = ids_file
    with pytest.raises(ValueError, match="unknown strategy"):
        tocpile.Loader(path, shuffle="random")
    with pytest.raises(ValueError, match="mode"):
        tocpile.Loader(path, mode="fast")
    with pytest.raises(ValueError, match="as_"):
        tocpile.Loader(path, as_="coo")
    with pytest.raises(ValueError, match="buffer"):
        tocpile.Loader(path, buffer="big")
    # Errors name the Python parameter.
    with pytest.raises(ValueError, match="^rank: expected 0 <= rank < world_size"):
        tocpile.Loader(path, rank=2, world_size=2)
    with pytest.raises(ValueError, match="^world_size: expected an int >= 1, got 0"):
        tocpile.Loader(path, world_size=0)
    with pytest.raises(ValueError, match="^seed: expected an int >= 0, got -1"):
        tocpile.Loader(path, seed=-1)
    with pytest.raises(ValueError, match="^batch_size: expected an int >= 1, got 0"):
        tocpile.Loader(path, batch_size=0)
    with pytest.raises(ValueError, match="^rank: expected an int >= 0, got -1"):
        tocpile.Loader(path, rank=-1)
    with pytest.raises(ValueError, match="^seed: .* out of range"):
        tocpile.Loader(path, seed=2**64)
    with pytest.raises(TypeError, match="^batch_size: expected an int, got float"):
        tocpile.Loader(path, batch_size=2.5)
    with pytest.raises(tocpile.TocError, match="buffer"):
        tocpile.Loader(path, buffer=1.5)
    # A buffer in blocks, and the loader's warnings on tiny buffers, also
    # issued through Python's warnings module.
    with pytest.warns(UserWarning, match="buffer holds 1"):
        loader = tocpile.Loader(path, buffer=1)
    assert any("buffer holds 1" in w for w in loader.warnings)
    assert loader.mode == "exact"
    assert sorted(loader.block_order(0)) == list(range(tocpile.Dataset(path).n_blocks))


def test_loader_takes_an_open_dataset(ids_file):
    path, _, _ = ids_file
    ds = tocpile.Dataset(path)
    a = np.concatenate(epoch_ids(tocpile.Loader(ds, seed=4)))
    b = np.concatenate(epoch_ids(tocpile.Loader(str(path), seed=4)))
    np.testing.assert_array_equal(a, b)


def test_state_dict_from_another_thread_while_iterating(ids_file):
    """A thread waiting for a batch holds the loader's state with the GIL
    released; another thread asking for the state must not deadlock."""
    import threading

    path, _, _ = ids_file
    loader = tocpile.Loader(path, batch_size=10, seed=1)
    states = []
    done = threading.Event()

    def consume():
        for _ in loader:
            pass
        done.set()

    def watch():
        while not done.is_set():
            states.append(loader.state_dict()["position"])

    threads = [threading.Thread(target=f, daemon=True) for f in (consume, watch)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert all(0 <= p <= 100 for p in states)


def test_an_epoch_iterator_continues(ids_file):
    path, _, _ = ids_file
    loader = tocpile.Loader(path, batch_size=100, seed=2)
    full = epoch_ids(tocpile.Loader(path, batch_size=100, seed=2))
    it = iter(loader)
    assert iter(it) is it and len(it) == 10
    first = row_ids(next(it)[0])
    assert len(it) == 9
    rest = [row_ids(X) for X, _ in it]
    assert len(rest) == 9 and sum(len(r) for r in rest) == 900
    np.testing.assert_array_equal(np.concatenate([first, *rest]), np.concatenate(full))
    assert loader.epoch == 1  # the pass completed
    # The loader is iterable, not an iterator (as torch's DataLoader).
    with pytest.raises(TypeError, match="not an iterator"):
        next(loader)
    # A new iterator starts the (next) epoch from its start; an older one
    # keeps its own epoch but no longer moves the loader's state.
    a = iter(loader)
    next(a)
    b = iter(loader)
    assert (a.epoch, b.epoch) == (1, 1)
    assert len(list(a)) == 9
    assert loader.state_dict()["position"] == 0 and loader.epoch == 1
    assert len(list(b)) == 10 and loader.epoch == 2


@pytest.mark.parametrize("shuffle", STRATEGIES)
@pytest.mark.parametrize("mode", ["page", "exact"])
@pytest.mark.parametrize("batch_size", [120, 250, 1000, 1500])
def test_len_and_batch_sizes(ids_file, shuffle, mode, batch_size):
    path, _, _ = ids_file
    loader = tocpile.Loader(path, shuffle=shuffle, batch_size=batch_size, seed=9, mode=mode)
    sizes = [X.shape[0] for X, _ in iter(loader)]
    assert len(loader) == len(sizes)
    assert all(s == batch_size for s in sizes[:-1]) and 0 < sizes[-1] <= batch_size
    if shuffle != "mrs":
        assert sum(sizes) == 1000


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("shuffle", STRATEGIES)
@pytest.mark.parametrize("mode", ["page", "exact"])
def test_len_of_a_rank(ids_file, world, shuffle, mode):
    # The library's epoch length (row mode but MRS: a rank's rows over
    # the batch size) or the rows counted: what a pass yields, and what
    # an iterator has left as it goes.
    path, _, _ = ids_file
    rows = 0
    for rank in range(world):
        loader = tocpile.Loader(path, shuffle=shuffle, batch_size=128, rank=rank,
                                world_size=world, seed=1, mode=mode)
        loader.set_epoch(3)
        n = len(loader)
        it = iter(loader)
        sizes = []
        for k in range(n):
            assert len(it) == n - k
            sizes.append(next(it)[0].shape[0])
        assert len(it) == 0 and next(it, None) is None
        rows += sum(sizes)
    if shuffle != "mrs":
        assert rows == 1000


def test_dtype_float32(ids_file):
    path, X, y = ids_file
    for as_ in ["csr", "dense"]:
        loader = tocpile.Loader(path, shuffle="none", mode="exact", batch_size=400, as_=as_,
                                dtype=np.float32)
        batches = list(loader)
        assert all(b[0].dtype == np.float32 and b[1].dtype == np.float32 for b in batches)
        dense = np.vstack([b[0].toarray() if sp.issparse(b[0]) else b[0] for b in batches])
        np.testing.assert_array_equal(dense, X.astype(np.float32))


def test_pickle_and_deepcopy(ids_file):
    import copy
    import pickle

    path, _, _ = ids_file
    loader = tocpile.Loader(tocpile.Dataset(path), batch_size=100, seed=4, as_="dense",
                            dtype="float32")
    loader.set_epoch(1)
    full = epoch_ids(copy.deepcopy(loader))
    it = iter(loader)
    next(it), next(it)
    for clone in (pickle.loads(pickle.dumps(loader)), copy.deepcopy(loader)):
        assert clone.state_dict() == loader.state_dict()
        rest = [(row_ids(X), X.dtype) for X, _ in clone]
        assert [r for r, _ in rest] and all(d == np.float32 for _, d in rest)
        np.testing.assert_array_equal(np.concatenate([r for r, _ in rest]),
                                      np.concatenate(full[2:]))
    ds = pickle.loads(pickle.dumps(tocpile.Dataset(path)))
    assert ds.path == path and ds.n_rows == 1000


def test_default_buffer_is_the_librarys(ids_file):
    """buffer=None (the default) and "auto" are the library's Buffer::Auto:
    on a file that fits the memory budget, the whole file shuffled every
    epoch; a float keeps the paper's fixed share."""
    path, _, _ = ids_file
    n_blocks = tocpile.Dataset(path).n_blocks

    def first_epoch(**kw):
        return [row_ids(X).tolist() for X, _ in tocpile.Loader(path, seed=5, **kw)]

    default = first_epoch()
    assert first_epoch(buffer=None) == default and first_epoch(buffer="auto") == default
    assert tocpile.Loader(path).state_dict()["buffer"] == "auto: the whole file"
    assert tocpile.Loader(path, buffer=0.1).state_dict()["buffer"] == "Fraction(0.1)"
    # The first batch of the whole-file buffer draws from nearly every
    # block (rows are numbered in file order: block = id // rows per block);
    # a tenth of the file (4 blocks here) from a few.
    rows_per_block = 1000 / n_blocks
    spread = lambda batches: len({int(i // rows_per_block) for i in batches[0]})
    assert spread(default) >= 0.75 * n_blocks
    assert spread(first_epoch(buffer=0.1)) <= 8
    # A state saved under one buffer does not resume another.
    state = tocpile.Loader(path, buffer=0.1).state_dict()
    with pytest.raises(ValueError, match="buffer"):
        tocpile.Loader(path).load_state_dict(state)

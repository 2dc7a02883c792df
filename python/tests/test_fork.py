"""The library in processes forked after the parent used it: encoding,
training, a loader epoch and predictions run in parallel on the
library's thread pool, whose threads a forked child does not inherit.
Before the pool was started again in the child, the child's first
parallel step waited forever (what PyTorch DataLoader workers met). No
torch needed: multiprocessing's fork start method and os.fork."""

import multiprocessing
import os
import queue
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import tocpile

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

# A child that hangs is ended after this long and the test fails (the
# work itself takes well under a second).
HANG_SECONDS = 120


def parallel_work(path, X, model):
    """Rows of an exact-mode and a page-mode epoch, and the scores' sum."""
    exact = sum(len(y) for _, y in tocpile.Loader(path, batch_size=250, mode="exact", seed=3))
    page = sum(len(y) for _, y in tocpile.Loader(path, batch_size=250, mode="page", seed=3))
    return exact, page, float(model.decision_function(X).sum())


@pytest.fixture(scope="module")
def used(tmp_path_factory):
    """The issue's data, encoded and trained on in this process (which
    starts the library's pool here), and the work's results here."""
    X = sp.random(20000, 50, density=0.1, format="csr", random_state=0)
    y = (np.arange(20000) % 2).astype(float)
    path = tmp_path_factory.mktemp("fork") / "d.toc"
    tocpile.encode(X, y, path)
    model = tocpile.train(path, "lr", epochs=1)
    expected = parallel_work(path, X, model)
    assert expected[:2] == (20000, 20000)
    return path, X, model, expected


def run_forked(target, *args):
    """Runs target(*args, results) in a process forked from this one and
    returns what it put in `results`; fails if it did not within
    HANG_SECONDS."""
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    with warnings.catch_warnings():
        # Python 3.12 warns on forking a process that has threads (the
        # library's pool): the point of the test.
        warnings.simplefilter("ignore", DeprecationWarning)
        proc = ctx.Process(target=target, args=(*args, results))
        proc.start()
    try:
        return results.get(timeout=HANG_SECONDS)
    except queue.Empty:
        pytest.fail(f"the forked child's parallel work did not finish in {HANG_SECONDS} s")
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()


def child_work(path, X, model, results):
    results.put(parallel_work(path, X, model))


def test_a_forked_child_runs_parallel_work(used):
    path, X, model, expected = used
    assert run_forked(child_work, path, X, model) == expected


def test_a_child_forked_mid_epoch_and_a_grandchild(used):
    path, X, model, expected = used
    # The parent's loader threads are running (a batch taken, the rest
    # being read) when the child is forked.
    it = iter(tocpile.Loader(path, batch_size=250, mode="exact", seed=3))
    first = next(it)

    def child_and_grandchild(path, X, model, results):
        mine = parallel_work(path, X, model)
        results.put((mine, run_forked(child_work, path, X, model)))

    mine, grandchild = run_forked(child_and_grandchild, path, X, model)
    assert mine == expected and grandchild == expected
    # The parent's epoch and pool carry on.
    assert len(first[1]) + sum(len(y) for _, y in it) == 20000
    assert parallel_work(path, X, model) == expected


def test_os_fork(used):
    path, X, model, expected = used
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(read)
            code = 0 if parallel_work(path, X, model) == expected else 1
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    try:
        import select

        ready, _, _ = select.select([read], [], [], HANG_SECONDS)
        if not ready:
            os.kill(pid, 9)
            pytest.fail(f"the forked child's parallel work did not finish in {HANG_SECONDS} s")
        assert os.read(read, 1) == b"\x00", "the child's results differ"
    finally:
        os.close(read)
        os.waitpid(pid, 0)

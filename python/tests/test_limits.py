"""The resource policy from Python (issue 34, items 2 and 7): hostile
files raise an exception a program can catch (TocError, a ValueError, or
MemoryError), never pyo3_runtime.PanicException (a BaseException) or an
abort that ends the interpreter; the limits are raised with
tocpile.set_limits; TocRegressor takes finite targets near 1.7e308."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tocpile

sys.path.insert(0, os.path.dirname(__file__))
import forge  # noqa: E402

# What every call on a hostile file runs in: a child process with its
# address space limited (an abort there is a signal, not a lost test run).
PROBE = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1_000_000 << 10, 1_000_000 << 10))  # ulimit -v 1000000
    import numpy as np
    import tocpile
    path = sys.argv[1]
    model = tocpile.train(sys.argv[2], epochs=1)
    calls = {
        "read": lambda: tocpile.Dataset(path).read(),
        "read_block": lambda: tocpile.Dataset(path).read_block(0),
        "verify": lambda: tocpile.Dataset(path).verify(),
        "predict": lambda: model.predict(tocpile.Dataset(path)),
        "evaluate": lambda: model.evaluate(path),
        "train": lambda: tocpile.train(path, epochs=1),
        "train_page": lambda: tocpile.train(path, epochs=1, mode="page"),
    }
    out = {}
    for name, call in calls.items():
        try:
            call()
            out[name] = ["ok", ""]
        except Exception as e:
            out[name] = [type(e).__name__, str(e)]
        except BaseException as e:
            out[name] = ["BaseException " + type(e).__name__, str(e)]
    print(json.dumps(out))
    """
)


def small_model_file(tmp_path, n_cols):
    """A tiny dataset of `n_cols` columns to train the probe's model on."""
    X = np.zeros((4, n_cols))
    X[:, 0] = 1.0
    X[0, n_cols - 1] = 1.0
    path = tmp_path / "small.toc"
    tocpile.encode(X, np.array([0.0, 1.0, 0.0, 1.0]), path)
    return path


HOSTILE = {
    # 682 KB: 5,000 one-row pages, each row the deepest node of a
    # 131,072-column chain dictionary (655M non-zeros): killed the
    # interpreter (SIGABRT) in read, verify, predict, train(mode="page").
    "dictionary-bomb.toc": (lambda: forge.dict_bomb(5000, 5000, 1 << 17), 1 << 17),
    # Sixteen prefix-tree bombs of 134M non-zeros each, under the page
    # limit, together 2.1 billion: in one block and in a block each.
    "bombs-1.toc": (
        lambda: forge.dataset([(16383, forge.bomb_batch(16383))] * 16, 16, 16383, 16 * 16383 * 16384 // 2),
        16383,
    ),
    "bombs-16.toc": (
        lambda: forge.dataset([(16383, forge.bomb_batch(16383))] * 16, 1, 16383, 16 * 16383 * 16384 // 2),
        16383,
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_raise_exceptions_a_program_catches(tmp_path, name):
    make, n_cols = HOSTILE[name]
    path = tmp_path / name
    path.write_bytes(make())
    small = small_model_file(tmp_path, n_cols)
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), str(small)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"{name}: exit {run.returncode}\n{run.stderr[-2000:]}"
    results = json.loads(run.stdout.splitlines()[-1])
    for call, (kind, message) in results.items():
        # A file each of whose blocks is within the limits verifies.
        assert kind in ("ok", "TocError", "MemoryError"), f"{name} {call}: {kind} {message}"
        assert kind == "ok" or name in message, f"{name} {call}: {message}"
    # Every row at once is over the limit on decoding many pages, or
    # over the memory the process may take.
    assert results["read"][0] != "ok", results["read"]
    if results["read"][0] == "TocError":
        assert "tocpile.set_limits(" in results["read"][1], results["read"]


def test_limits_are_raised_from_python(tmp_path):
    X = np.eye(6)
    path = tmp_path / "six.toc"
    tocpile.encode(X, np.arange(6) % 2, path)
    before = tocpile.limits()
    assert before["max_decode_nnz"] == 1 << 27
    try:
        tocpile.set_limits(max_decode_nnz=3)
        assert tocpile.limits() == dict(before, max_decode_nnz=3)
        for call in (lambda: tocpile.Dataset(path).read(), lambda: tocpile.Dataset(path).verify()):
            with pytest.raises(tocpile.TocError) as e:
                call()
            message = str(e.value)
            assert "six.toc" in message and "above the limit of 3" in message, message
            assert "tocpile.set_limits(max_decode_nnz=N)" in message, message
            assert "--max-decode-nnz" not in message, message
        tocpile.set_limits(max_decode_nnz=6)
        X2, _ = tocpile.Dataset(path).read()
        assert X2.nnz == 6
    finally:
        tocpile.set_limits(**before)
    assert tocpile.limits() == before


def test_regressor_takes_targets_near_the_largest_float(tmp_path):
    pytest.importorskip("sklearn")
    from tocpile.sklearn import TocRegressor

    rng = np.random.default_rng(0)
    X = rng.random((200, 3))
    y = 1.7e308 * (0.5 + 0.5 * X[:, 0])
    model = TocRegressor(epochs=5).fit(X, y)
    assert np.isfinite(model.y_mean_) and np.isfinite(model.y_scale_)
    p = model.predict(X)
    assert np.all(np.isfinite(p))
    # Targets of both signs, whose differences overflow.
    y2 = np.where(X[:, 1] > 0.5, 1.7e308, -1.7e308)
    fitted = TocRegressor(epochs=5).fit(X, y2)
    assert fitted.y_mean_ == pytest.approx(np.mean(y2 / 1.7e308) * 1.7e308)

"""train and Model: the same results as the command line on a shared
dataset, predictions consistent with the library's evaluation."""

import json
import subprocess

import numpy as np
import pytest

import tocpile
from conftest import id_rows


@pytest.mark.parametrize("model", ["lr", "svm", "mlp"])
def test_training_matches_the_command_line(cli, mushrooms_file, tmp_path, model):
    epochs = 2 if model == "mlp" else 3
    saved = tmp_path / "cli.model"
    out = subprocess.run(
        [cli, "train", str(mushrooms_file), "--model", model, "--epochs", str(epochs),
         "--lr", "0.5", "--decay", "0.9", "--seed", "7", "--batch-size", "250",
         "--buffer", "0.1", "--json", "--save", str(saved)],
        check=True, capture_output=True, text=True,
    )
    ref = json.loads(out.stdout)
    m = tocpile.train(mushrooms_file, model, epochs=epochs, lr=0.5, decay=0.9, seed=7,
                      batch_size=250, buffer=0.1)
    assert len(m.history) == len(ref["epochs"]) == epochs
    for ours, theirs in zip(m.history, ref["epochs"]):
        assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-12, abs=1e-12)
        assert ours["accuracy"] == pytest.approx(theirs["accuracy"], rel=1e-12)
        assert ours["steps"] == theirs["steps"]
    assert m.history[-1]["loss"] == pytest.approx(ref["final"]["loss"], rel=1e-12)
    ours_file = tmp_path / "py.model"
    m.save(ours_file)
    assert ours_file.read_bytes() == saved.read_bytes()  # the same parameters, bit for bit


def test_predict_agrees_with_evaluate(mushrooms, mushrooms_file, tmp_path):
    X, y = mushrooms
    m = tocpile.train(mushrooms_file, "lr", epochs=3, lr=0.5)
    assert m.kind == "lr" and m.n_cols == X.shape[1]
    ev = m.evaluate(mushrooms_file)
    pred = m.predict(X)
    assert set(np.unique(pred)) <= {0.0, 1.0}
    assert ev["rows"] == X.shape[0]
    assert np.mean(pred == (y > 0)) == pytest.approx(ev["accuracy"], abs=1e-12)
    margin = m.decision_function(X)
    w, b = m.layers[0]
    np.testing.assert_allclose(margin, X @ w[:, 0] + b[0], rtol=1e-12, atol=1e-12)
    sign = np.where(y > 0, 1.0, -1.0)
    loss = np.mean(np.logaddexp(0.0, -sign * margin))
    assert loss == pytest.approx(ev["loss"], rel=1e-9)
    p = m.predict_proba(X.toarray())
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-margin)), rtol=1e-12)
    assert ev["accuracy"] > 0.95
    # Save and load: the same predictions.
    m.save(tmp_path / "m.model")
    back = tocpile.Model.load(tmp_path / "m.model")
    np.testing.assert_array_equal(back.decision_function(X), margin)
    np.testing.assert_array_equal(back.params, m.params)


def test_softmax_and_mlp_multiclass(tmp_path):
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.random((n, 5))
    y = np.argmax(X[:, :3], axis=1).astype(float)
    path = tmp_path / "c.toc"
    tocpile.encode(X, y, path, page_rows=50, block_bytes=4096)
    for kind in ["softmax", "mlp"]:
        m = tocpile.train(path, kind, epochs=4, lr=0.5)
        ev = m.evaluate(path)
        pred = m.predict(X)
        assert np.mean(pred == y) == pytest.approx(ev["accuracy"], abs=1e-12)
        proba = m.predict_proba(X)
        assert proba.shape == (n, 3)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(np.argmax(proba, axis=1), pred)
        logits = m.decision_function(X)
        ce = np.mean(np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
                     - logits[np.arange(n), y.astype(int)])
        assert ce == pytest.approx(ev["loss"], rel=1e-9)
        if kind == "softmax":
            assert ev["accuracy"] > 0.6


def test_linreg_predicts_values(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.random((2000, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.25
    path = tmp_path / "r.toc"
    tocpile.encode(X, y, path, page_rows=50, block_bytes=2048)
    m = tocpile.train(path, "linreg", epochs=20, lr=0.5, decay=1.0)
    pred = m.predict(X)
    r2 = 1 - np.sum((pred - y) ** 2) / np.sum((y - y.mean()) ** 2)
    assert r2 == pytest.approx(m.evaluate(path)["accuracy"], abs=1e-9)
    assert r2 > 0.9
    with pytest.raises(ValueError, match="no probabilities"):
        m.predict_proba(X)


def test_training_errors(tmp_path):
    X, y = id_rows(500)
    path = tmp_path / "t.toc"
    y = y + 0.5  # not class indices
    tocpile.encode(X, y, path, page_rows=50)
    with pytest.raises(ValueError, match="not a class index"):
        tocpile.train(path, "softmax")
    with pytest.raises(tocpile.TocError, match="model name"):
        tocpile.train(path, "forest")
    with pytest.raises(tocpile.TocError, match="learning rate"):
        tocpile.train(path, "lr", lr=-1.0)
    m = tocpile.train(path, "lr", epochs=1)
    with pytest.raises(ValueError, match="5 columns, but the model takes 6"):
        m.predict(np.ones((2, 5)))

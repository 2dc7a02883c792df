"""train and Model: the same results as the command line (default Adam
and SGD, the stored scaling, a held-out split), predictions and figures
consistent with the library's evaluation and with tocpile predict."""

import json
import subprocess

import numpy as np
import pytest
from scipy.stats import rankdata

import tocpile
from conftest import id_rows


def cli_train(cli, path, saved, *args):
    out = subprocess.run(
        [cli, "train", str(path), *args, "--json", "--save", str(saved)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def same_as_cli(m, ref, saved, tmp_path):
    """m's history is the command line's run, and its file the same bytes."""
    assert len(m.history) == len(ref["epochs"])
    for ours, theirs in zip(m.history, ref["epochs"]):
        assert ours["loss"] == pytest.approx(theirs["loss"], rel=1e-12, abs=1e-12)
        assert ours["accuracy"] == pytest.approx(theirs["accuracy"], rel=1e-12)
        assert ours["steps"] == theirs["steps"]
    assert m.history[-1]["loss"] == pytest.approx(ref["final"]["loss"], rel=1e-12)
    ours_file = tmp_path / "py.model"
    m.save(ours_file)
    assert ours_file.read_bytes() == saved.read_bytes()  # the same parameters, bit for bit


# (optimizer, lr): Adam at the default learning rate on both sides, and SGD.
@pytest.mark.parametrize("model", ["lr", "svm", "mlp"])
@pytest.mark.parametrize("optimizer,lr", [("adam", None), ("sgd", 0.5)])
def test_training_matches_the_command_line(cli, mushrooms_file, tmp_path, model, optimizer, lr):
    epochs = 2 if model == "mlp" else 3
    saved = tmp_path / "cli.model"
    lr_args = [] if lr is None else ["--lr", str(lr)]
    ref = cli_train(cli, mushrooms_file, saved, "--model", model, "--epochs", str(epochs),
                    "--optimizer", optimizer, *lr_args, "--decay", "0.9", "--seed", "7",
                    "--batch-size", "250", "--buffer", "0.1")
    m = tocpile.train(mushrooms_file, model, epochs=epochs, optimizer=optimizer, lr=lr,
                      decay=0.9, seed=7, batch_size=250, buffer=0.1)
    same_as_cli(m, ref, saved, tmp_path)
    if lr is None:
        assert m.history[0]["learning_rate"] == 0.03  # the command line's Adam default


def wide_rows(n=3000, seed=3):
    """Rows whose columns differ in scale by 10^6, sparse, with a label
    that depends on every column: scaling changes the trained model."""
    rng = np.random.default_rng(seed)
    scales = np.array([1000.0, 0.001, 1.0, 50.0, 0.2, 7.0])
    X = rng.standard_normal((n, scales.size)) * scales
    X[rng.random(X.shape) < 0.3] = 0.0
    y = ((X / scales) @ np.array([1.0, -1.0, 0.5, 2.0, -0.5, 1.0]) > 0).astype(float)
    return X, y


def write_libsvm(path, X, y):
    with open(path, "w") as f:
        for row, label in zip(X, y):
            items = " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row) if v != 0.0)
            f.write(f"{label:g} {items}\n")


def test_default_scaling_trains_as_the_command_line(cli, tmp_path):
    X, y = wide_rows()
    text = tmp_path / "wide.libsvm"
    write_libsvm(text, X, y)
    by_cli = tmp_path / "cli.toc"
    subprocess.run([cli, "encode", str(text), "-o", str(by_cli)], check=True,
                   capture_output=True)
    by_py = tmp_path / "py.toc"
    info = tocpile.encode(X, y, by_py)
    assert info["scaling"] == "maxabs"
    # The same scaling stored by both (the default: max-abs).
    kind, factors = tocpile.Dataset(by_py).scaling
    cli_kind, cli_factors = tocpile.Dataset(by_cli).scaling
    assert kind == cli_kind == "maxabs"
    np.testing.assert_array_equal(factors, cli_factors)
    np.testing.assert_allclose(factors, 1 / np.abs(X).max(axis=0), rtol=1e-15)
    # Trained from Python on the Python file and from the command line on
    # its own file, with every default: the same model, bit for bit.
    saved = tmp_path / "cli.model"
    ref = cli_train(cli, by_cli, saved, "--epochs", "3")
    m = tocpile.train(by_py, epochs=3)
    same_as_cli(m, ref, saved, tmp_path)
    assert m.scaling[0] == "maxabs"
    np.testing.assert_array_equal(m.scaling[1], factors)
    # Scaling did change the model, and it trains better here.
    raw = tocpile.train(by_py, epochs=3, scale="none")
    assert raw.scaling is None
    assert not np.array_equal(raw.params, m.params)
    assert m.evaluate(by_py)["accuracy"] > raw.evaluate(by_py)["accuracy"]
    # scale="standard" fits a standard scaling over the file (the command
    # line's --scale standard), as does encode(scale="standard").
    std_file = tmp_path / "std.toc"
    assert tocpile.encode(X, y, std_file, scale="standard")["scaling"] == "standard"
    std = tocpile.train(by_py, epochs=1, scale="standard")
    assert std.scaling[0] == "standard"
    np.testing.assert_array_equal(std.scaling[1], tocpile.Dataset(std_file).scaling[1])
    saved_std = tmp_path / "cli-std.model"
    ref = cli_train(cli, by_py, saved_std, "--epochs", "1", "--scale", "standard")
    same_as_cli(std, ref, saved_std, tmp_path)
    none_file = tmp_path / "none.toc"
    assert tocpile.encode(X, y, none_file, scale=None)["scaling"] == "none"
    assert tocpile.Dataset(none_file).scaling is None


def test_predict_honours_scaling(cli, tmp_path):
    X, y = wide_rows(seed=4)
    path = tmp_path / "wide.toc"
    tocpile.encode(X, y, path, page_rows=100)
    m = tocpile.train(path, "lr", epochs=2)
    assert m.scaling is not None
    # Parameters of raw rows: the margin is raw X against the weights.
    w, b = m.layers[0]
    margin = m.decision_function(X)
    np.testing.assert_allclose(margin, X @ w[:, 0] + b[0], rtol=1e-9, atol=1e-9)
    # The same as a model trained on explicitly scaled rows, with its
    # weights scaled back: train in scaled coordinates, w_raw = s * w'.
    s = m.scaling[1]
    scaled = tmp_path / "scaled.toc"
    tocpile.encode(X * s, y, scaled, page_rows=100, scale=None)
    ms = tocpile.train(scaled, "lr", epochs=2)
    ws, bs = ms.layers[0]
    np.testing.assert_allclose(w[:, 0], s * ws[:, 0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(margin, (X * s) @ ws[:, 0] + bs[0], rtol=1e-6, atol=1e-6)
    # And what the command line predicts and evaluates with the saved model.
    model_file = tmp_path / "m.model"
    m.save(model_file)
    out = subprocess.run([cli, "predict", str(model_file), str(path), "--json"],
                         check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    # Model.decision_function sums each row in its own order (in place on
    # the caller's arrays, on every core), the command line through the
    # page kernel: equal up to rounding.
    np.testing.assert_allclose([r["scores"][0] for r in rows], margin, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal([r["class"] for r in rows], m.predict(X))
    np.testing.assert_allclose([r["probabilities"][0] for r in rows], m.predict_proba(X),
                               rtol=1e-12, atol=1e-15)
    ev = json.loads(subprocess.run([cli, "evaluate", str(model_file), str(path), "--json"],
                                   check=True, capture_output=True, text=True).stdout)
    ours = m.evaluate(path)
    for key in ["rows", "loss", "accuracy", "auc", "confusion"]:
        assert ours[key] == ev[key], key
    assert "r2" not in ours


def test_holdout_matches_the_command_line(cli, tmp_path):
    X, y = wide_rows(seed=5)
    path = tmp_path / "wide.toc"
    tocpile.encode(X, y, path, page_rows=100)
    saved = tmp_path / "cli.model"
    ref = cli_train(cli, path, saved, "--epochs", "2", "--holdout", "0.2", "--seed", "3")
    m = tocpile.train(path, epochs=2, holdout=0.2, seed=3)
    same_as_cli(m, ref, saved, tmp_path)
    last = m.history[-1]
    assert 0 < last["eval_rows"] < X.shape[0] * 0.3
    assert last["rows"] + last["eval_rows"] == X.shape[0]
    assert last["eval_accuracy"] == pytest.approx(ref["epochs"][-1]["eval"]["accuracy"],
                                                  rel=1e-12)


def test_predict_agrees_with_evaluate(mushrooms, mushrooms_file, tmp_path):
    X, y = mushrooms
    m = tocpile.train(mushrooms_file, "lr", epochs=3, optimizer="sgd", lr=0.5)
    assert m.kind == "lr" and m.n_cols == X.shape[1]
    ev = m.evaluate(mushrooms_file)
    pred = m.predict(X)
    assert set(np.unique(pred)) <= {0.0, 1.0}
    assert ev["rows"] == X.shape[0]
    # The confusion matrix and AUC of the margins (pairs ordered correctly).
    pos = y > 0
    conf = [[int(np.sum(~pos & (pred == 0))), int(np.sum(~pos & (pred == 1)))],
            [int(np.sum(pos & (pred == 0))), int(np.sum(pos & (pred == 1)))]]
    assert ev["confusion"] == conf
    margin = m.decision_function(X)
    ranks = rankdata(margin)
    n_pos, n_neg = pos.sum(), (~pos).sum()
    auc = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    assert ev["auc"] == pytest.approx(auc, rel=1e-12)
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
        m = tocpile.train(path, kind, epochs=4, optimizer="sgd", lr=0.5)
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
    m = tocpile.train(path, "linreg", epochs=20, optimizer="sgd", lr=0.5, decay=1.0)
    pred = m.predict(X)
    r2 = 1 - np.sum((pred - y) ** 2) / np.sum((y - y.mean()) ** 2)
    ev = m.evaluate(path)
    assert r2 == pytest.approx(ev["r2"], abs=1e-9)
    assert "accuracy" not in ev and "auc" not in ev and "confusion" not in ev
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
    with pytest.raises(ValueError, match="unknown step rule"):
        tocpile.train(path, "lr", optimizer="rmsprop")
    with pytest.raises(ValueError, match="unknown scaling"):
        tocpile.train(path, "lr", scale="minmax")
    with pytest.raises(ValueError, match="unknown scaling"):
        tocpile.encode(X, y, tmp_path / "bad.toc", scale="minmax")
    with pytest.raises(ValueError, match="not a fraction"):
        tocpile.train(path, "lr", holdout=1.0)
    other = tmp_path / "other.toc"
    tocpile.encode(np.ones((3, 4)), np.ones(3), other)
    with pytest.raises(ValueError, match="has 4 columns, the training file .* has 6"):
        tocpile.train(path, "lr", eval=other)
    classes = tmp_path / "classes.toc"
    tocpile.encode(X, np.arange(500) % 3, classes)
    with pytest.warns(UserWarning, match="more than two distinct labels"):
        tocpile.train(classes, "lr", epochs=1)
    one = tmp_path / "one.toc"
    tocpile.encode(np.ones((1, 3)), np.ones(1), one)
    with pytest.raises(ValueError, match="leaves 1 training and 0 held-out rows"):
        tocpile.train(one, "lr", holdout=0.5)
    with pytest.raises(ValueError, match="give one"):
        tocpile.train(path, "lr", holdout=0.1, eval=path)
    m = tocpile.train(path, "lr", epochs=1)
    with pytest.raises(ValueError, match="5 columns, but the model takes 6"):
        m.predict(np.ones((2, 5)))


def test_model_pickles_as_its_bytes(mushrooms_file, mushrooms):
    import copy
    import pickle

    X, _ = mushrooms
    m = tocpile.train(mushrooms_file, "lr", epochs=1, seed=3)
    for clone in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m),
                  tocpile.Model.from_bytes(m.to_bytes())):
        assert clone.kind == "lr" and clone.to_bytes() == m.to_bytes()
        np.testing.assert_array_equal(clone.decision_function(X), m.decision_function(X))
    with pytest.raises(tocpile.TocError):
        tocpile.Model.from_bytes(m.to_bytes()[:-3])


def test_errors_name_the_parameter_and_the_path(mushrooms_file, tmp_path):
    for kwargs, message in [
        (dict(seed=-1), "^seed: expected an int >= 0, got -1"),
        (dict(batch_size=0), "^batch_size: expected an int >= 1, got 0"),
        (dict(epochs=-2), "^epochs: expected an int >= 0, got -2"),
        (dict(classes=0, model="softmax"), "^classes: expected an int >= 1, got 0"),
    ]:
        with pytest.raises(ValueError, match=message):
            tocpile.train(mushrooms_file, **kwargs)
    missing = tmp_path / "no-such-dir" / "m.model"
    m = tocpile.train(mushrooms_file, epochs=1)
    with pytest.raises(FileNotFoundError, match=f"^{missing}: cannot create it: the directory "):
        m.save(missing)
    with pytest.raises(FileNotFoundError, match=str(missing.parent / "x.toc")):
        tocpile.encode(np.ones((2, 2)), np.ones(2), missing.parent / "x.toc")
    with pytest.raises(FileNotFoundError, match=str(missing.parent / "x.toc")):
        tocpile.Loader(missing.parent / "x.toc")

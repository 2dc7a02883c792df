"""tocpile.sklearn: scikit-learn's own estimator checks, labels mapped
back, probabilities, pipelines and searches, partial_fit and warm_start,
sample weights, DataFrames."""

import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

if os.environ.get("TOCPILE_REQUIRE_SKLEARN"):  # CI: the checks must run
    import sklearn  # noqa: F401
else:
    pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from tocpile.sklearn import TocClassifier, TocRegressor  # noqa: E402

# Every check of scikit-learn's suite runs; none is expected to fail.
# (check_array_api_input skips itself unless SCIPY_ARRAY_API is set: the
# estimators take numpy and scipy input.) The MLP runs at learning rate
# 0.01: at the default 0.03 its 20 epochs on the 300 blob rows of
# check_classifiers_train reach 0.72 accuracy, below the check's 0.83.
ESTIMATORS = [
    TocClassifier(),
    TocClassifier(model="svm"),
    TocClassifier(model="mlp", learning_rate=0.01),
    TocRegressor(),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def blobs(n=400, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(classes, 5))
    y = rng.integers(0, classes, size=n)
    X = centers[y] + rng.normal(size=(n, 5))
    return X, y


def test_labels_as_given_are_mapped_back():
    X, y = blobs()
    names = np.array(["cat", "dog", "emu"])
    clf = TocClassifier().fit(X, names[y])
    assert clf.classes_.tolist() == ["cat", "dog", "emu"]
    pred = clf.predict(X)
    assert set(pred.tolist()) <= set(names.tolist())
    assert clf.score(X, names[y]) > 0.9
    p = clf.predict_proba(X)
    assert p.shape == (400, 3)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.classes_[p.argmax(axis=1)], pred)
    # Binary labels -1/+1: n x 2 probabilities, margins positive for classes_[1].
    yb = np.where(y == 0, -1, 1)
    clf = TocClassifier().fit(X, yb)
    assert clf.classes_.tolist() == [-1, 1]
    p = clf.predict_proba(X)
    assert p.shape == (400, 2)
    d = clf.decision_function(X)
    assert d.shape == (400,)
    np.testing.assert_array_equal(clf.predict(X), np.where(d > 0, 1, -1))
    np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-d)), rtol=1e-12)
    # The estimator's scores are its model's.
    np.testing.assert_array_equal(d, clf.model_.decision_function(X))
    assert not hasattr(TocClassifier(model="svm"), "predict_proba")


def test_pipeline_search_clone_and_pickle():
    X, y = blobs(300, classes=2, seed=1)
    pipe = make_pipeline(StandardScaler(), TocClassifier(epochs=5))
    assert cross_val_score(pipe, X, y, cv=3).mean() > 0.9
    search = GridSearchCV(TocClassifier(epochs=5), {"alpha": [0.0, 0.01]}, cv=2).fit(X, y)
    assert search.best_params_["alpha"] in (0.0, 0.01)
    clf = TocClassifier(epochs=3).fit(X, y)
    copy = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(copy.decision_function(X), clf.decision_function(X))
    assert clone(clf).get_params() == clf.get_params()


def test_sparse_and_dataframe_input():
    pd = pytest.importorskip("pandas")
    X, y = blobs(200, classes=2, seed=2)
    dense = TocClassifier(epochs=3).fit(X, y)
    sparse = TocClassifier(epochs=3).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.decision_function(X), sparse.decision_function(X))
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    by_frame = TocClassifier(epochs=3).fit(frame, pd.Series(y))
    assert by_frame.feature_names_in_.tolist() == list(frame.columns)
    np.testing.assert_array_equal(by_frame.decision_function(frame), dense.decision_function(X))


def test_partial_fit_and_warm_start():
    X, y = blobs(300, classes=3, seed=3)
    clf = TocClassifier(random_state=4)
    with pytest.raises(ValueError, match="classes"):
        clf.partial_fit(X, y)
    losses = []
    for _ in range(5):
        clf.partial_fit(X, y, classes=[0, 1, 2])
        losses.append(clf.loss_curve_[-1])
    assert losses[-1] < losses[0] and clf.n_iter_ == 1
    with pytest.raises(ValueError, match="not one of the classes"):
        clf.partial_fit(X, np.full(300, 7))
    # warm_start continues from the fitted model; without it, fit restarts.
    cold = TocClassifier(epochs=2).fit(X, y)
    again = TocClassifier(epochs=2).fit(X, y)
    np.testing.assert_array_equal(cold.model_.params, again.model_.params)
    warm = TocClassifier(epochs=2, warm_start=True).fit(X, y)
    first = warm.model_.params.copy()
    warm.fit(X, y)
    assert not np.array_equal(warm.model_.params, first)
    assert warm.loss_curve_[0] < cold.loss_curve_[0]


def test_regressor_maps_targets_back():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 4))
    y = 1000.0 + X @ np.array([30.0, -20.0, 5.0, 0.0]) + rng.normal(scale=0.1, size=500)
    reg = TocRegressor(epochs=30).fit(X, y)
    assert reg.score(X, y) > 0.99
    assert abs(reg.predict(X).mean() - y.mean()) < 5.0
    reg.partial_fit(X, y)
    assert reg.n_iter_ == 1


def test_sample_weight():
    X, y = blobs(100, classes=2, seed=6)
    w = np.arange(100) % 3
    weighted = TocClassifier(epochs=3).fit(X, y, sample_weight=w)
    index = np.repeat(np.arange(100), w)
    repeated = TocClassifier(epochs=3).fit(X[index], y[index])
    np.testing.assert_array_equal(weighted.model_.params, repeated.model_.params)
    uniform = TocClassifier(epochs=3).fit(X, y, sample_weight=np.full(100, 2.0))
    plain = TocClassifier(epochs=3).fit(X, y)
    np.testing.assert_array_equal(uniform.model_.params, plain.model_.params)
    with pytest.raises(NotImplementedError, match="per-row weights"):
        TocClassifier().fit(X, y, sample_weight=np.linspace(0.1, 1, 100))

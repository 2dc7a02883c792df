"""scikit-learn estimators: :class:`TocClassifier` and :class:`TocRegressor`.

``fit(X, y)`` takes what scikit-learn takes (numpy arrays, scipy.sparse
matrices, pandas DataFrames of numbers, lists), encodes the rows into a
scratch dataset file (TOC-compressed pages, the column scaling fitted in
the same pass), trains the library's model on the compressed pages
(:func:`tocpile.train`), keeps the model and removes the file. So the
estimators work in ``Pipeline``, ``GridSearchCV``, ``cross_val_score`` and
``clone``::

    from sklearn.model_selection import cross_val_score
    from tocpile.sklearn import TocClassifier

    scores = cross_val_score(TocClassifier(epochs=20), X, y, cv=5)

Needs scikit-learn (``pip install tocpile[sklearn]``); ``import tocpile``
alone never imports it.

What maps to what:

- labels: ``classes_`` holds the labels as given (strings, integers,
  floats), sorted; the model is trained on their indices and ``predict``
  maps back. Two classes train a binary model (``model="lr"``: logistic
  regression, ``"svm"``: hinge loss, ``"mlp"``); more train a softmax
  (``"lr"``) or a multi-class MLP (``"mlp"``); ``"svm"`` is binary only.
- ``predict_proba`` is ``n x n_classes`` (``n x 2`` for binary); an SVM
  has none (``hasattr(clf, "predict_proba")`` is False for it).
- ``TocRegressor`` trains least squares (``linreg``) on the targets
  standardized (mean and standard deviation of the first ``fit``) and maps
  predictions back, so the learning rate does not depend on the targets'
  scale.
- ``partial_fit`` runs one epoch over the rows given, starting from the
  current model; ``warm_start=True`` makes ``fit`` start from it too.
- ``sample_weight``: the trainer's loss has no per-row weights, so
  non-negative integer weights are applied exactly by repeating each row
  that many times (zero drops it); uniform weights change nothing; other
  weights raise ``NotImplementedError``.
- ``random_state`` (an int, default 0) seeds the shuffles and the MLP's
  initial weights: the same data and parameters give the same model.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import _check_sample_weight, check_is_fitted
except ImportError as e:  # pragma: no cover - exercised without scikit-learn
    raise ImportError(
        "tocpile.sklearn needs scikit-learn (pip install tocpile[sklearn]); the rest of "
        "tocpile works without it"
    ) from e

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def _validate_data(estimator, X="no_validation", y="no_validation", **kw):
        return estimator._validate_data(X, y, **kw)


from . import encode, train

__all__ = ["TocClassifier", "TocRegressor"]


def _seed(random_state: Any) -> int:
    if random_state is None:
        return 0
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    raise ValueError(
        f"random_state: expected an int >= 0 or None, got {type(random_state).__name__} "
        "(the trainer's shuffles are fixed by an integer seed)"
    )


def _repeat_by_weight(X: Any, y: np.ndarray, sample_weight: Any, n: int):
    """Rows and targets with `sample_weight` applied: uniform weights
    change nothing, non-negative integer weights repeat rows."""
    if sample_weight is None:
        return X, y
    w = _check_sample_weight(sample_weight, X, dtype=np.float64)
    if np.all(w == w[0]) and w[0] > 0:
        return X, y
    if np.any(w < 0) or np.any(w != np.round(w)):
        raise NotImplementedError(
            "sample_weight: the trainer's loss has no per-row weights; non-negative integer "
            "weights are applied by repeating rows and uniform weights change nothing, but "
            "other weights cannot be honoured (rescale them to integers, or resample rows)"
        )
    index = np.repeat(np.arange(n), w.astype(np.int64))
    if index.size == 0:
        raise ValueError("sample_weight: every weight is zero, no rows to train on")
    return X[index], y[index]


class _TocEstimator(BaseEstimator):
    """Shared parameters and the encode-then-train step."""

    def __init__(
        self,
        *,
        model: str = "lr",
        epochs: int = 20,
        optimizer: str = "adam",
        learning_rate: Optional[float] = None,
        decay: float = 0.95,
        alpha: float = 0.0,
        batch_size: int = 32,
        shuffle: str = "epoch",
        random_state: Optional[int] = 0,
        scale: Optional[str] = "maxabs",
        warm_start: bool = False,
        page_rows: int = 8,
        block_bytes: int = 2048,
    ) -> None:
        self.model = model
        self.epochs = epochs
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.decay = decay
        self.alpha = alpha
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.random_state = random_state
        self.scale = scale
        self.warm_start = warm_start
        self.page_rows = page_rows
        self.block_bytes = block_bytes

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"X_types": ["2darray", "sparse"]}

    def _train(self, X: Any, targets: np.ndarray, kind: str, classes: Optional[int],
               epochs: int, init: Any) -> None:
        """Encodes the rows into a scratch file and trains on it."""
        with tempfile.TemporaryDirectory(prefix="tocpile-sklearn-") as tmp:
            path = os.path.join(tmp, "fit.toc")
            encode(X, targets, path, page_rows=self.page_rows, block_bytes=self.block_bytes,
                   scale=self.scale)
            self.model_ = train(
                path, kind, epochs=epochs, optimizer=self.optimizer, lr=self.learning_rate,
                decay=self.decay, l2=self.alpha, batch_size=self.batch_size,
                shuffle=self.shuffle, seed=_seed(self.random_state), mode="exact",
                classes=classes, init=init,
            )
        history = self.model_.history
        self.loss_curve_ = [h["loss"] for h in history]
        self.n_iter_ = len(history)

    def _init_model(self, warm: bool) -> Any:
        return self.model_ if warm and hasattr(self, "model_") else None

    def _decision(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = _validate_data(self, X, accept_sparse=["csr", "csc", "coo"], dtype=np.float64,
                           reset=False)
        return self.model_.decision_function(X)


class TocClassifier(ClassifierMixin, _TocEstimator):
    """A linear classifier (logistic regression, SVM) or an MLP trained by
    mini-batch SGD on TOC-compressed rows. See the module's documentation
    for what maps to what.

    Parameters: ``model`` ("lr", "svm" or "mlp"), ``epochs``, ``optimizer``
    ("adam", "adagrad", "sgd"), ``learning_rate`` (None: 0.03 for Adam,
    0.1 otherwise), ``decay`` (per epoch), ``alpha`` (L2 strength),
    ``batch_size``, ``shuffle`` (the loader's strategy; "epoch", a full
    shuffle each epoch, by default since the rows fit in memory),
    ``random_state``, ``scale`` ("maxabs", "standard" or None: the input
    scaling fitted at encoding), ``warm_start``, and the scratch file's
    ``page_rows`` and ``block_bytes``.

    Attributes after ``fit``: ``classes_``, ``n_features_in_`` (and
    ``feature_names_in_`` for a DataFrame), ``model_`` (a
    :class:`tocpile.Model`), ``loss_curve_`` and ``n_iter_`` (epochs).
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The hinge loss is binary: scikit-learn's checks then give it two
        # classes.
        tags.classifier_tags.multi_class = self.model != "svm"
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"X_types": ["2darray", "sparse"], "binary_only": self.model == "svm"}

    def _kind(self, n_classes: int) -> str:
        if self.model not in ("lr", "svm", "mlp"):
            raise ValueError(f'model: expected "lr", "svm" or "mlp", got {self.model!r}')
        if n_classes == 2 or self.model == "mlp":
            return self.model
        if self.model == "svm":
            raise ValueError(
                f'Only binary classification is supported by model="svm" (hinge loss); y has '
                f'{n_classes} classes: use model="lr" (a softmax) or "mlp"'
            )
        return "softmax"

    def _fit(self, X, y, sample_weight, classes, epochs, warm):
        first = not (warm and hasattr(self, "model_"))
        X, y = _validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"],
                              dtype=np.float64, reset=first)
        check_classification_targets(y)
        if first:
            labels = np.unique(y) if classes is None else np.unique(np.asarray(classes))
            if labels.size < 2:
                raise ValueError(
                    f"y: a classifier needs at least 2 classes, got one class "
                    f"({labels.tolist()!r})"
                )
            self.classes_ = labels
        index = np.searchsorted(self.classes_, y)
        index = np.clip(index, 0, self.classes_.size - 1)
        unknown = self.classes_[index] != y
        if np.any(unknown):
            raise ValueError(
                f"y: label {y[unknown][0]!r} is not one of the classes {self.classes_.tolist()!r}"
            )
        X, index = _repeat_by_weight(X, index, sample_weight, X.shape[0])
        n_classes = self.classes_.size
        kind = self._kind(n_classes)
        self._train(X, index.astype(np.float64), kind, n_classes if n_classes > 2 else None,
                    epochs, self._init_model(not first))
        return self

    def fit(self, X, y, sample_weight=None):
        """Trains on rows `X` and labels `y` (from scratch unless
        ``warm_start``)."""
        return self._fit(X, y, sample_weight, None, self.epochs, self.warm_start)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch over `X`, `y` from the current model (the first call
        needs ``classes``, every label that will occur)."""
        if not hasattr(self, "model_") and classes is None:
            raise ValueError("classes: the first partial_fit needs every class (classes=...)")
        return self._fit(X, y, sample_weight, classes, 1, True)

    def decision_function(self, X):
        """Margins (n,) for two classes (positive: ``classes_[1]``), logits
        (n, n_classes) for more."""
        return self._decision(X)

    def _has_proba(self) -> bool:
        return self.model != "svm"

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities, ``n x n_classes`` (columns in ``classes_``
        order)."""
        check_is_fitted(self, "model_")
        X = _validate_data(self, X, accept_sparse=["csr", "csc", "coo"], dtype=np.float64,
                           reset=False)
        p = self.model_.predict_proba(X)
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithms of ``predict_proba``."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The label of each row, one of ``classes_``."""
        scores = self._decision(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.int64)]
        return self.classes_[np.argmax(scores, axis=1)]


def _unit(y: np.ndarray) -> float:
    """max |y|, or 1 for no or all-zero targets."""
    unit = float(np.max(np.abs(y))) if y.size else 0.0
    return unit if unit > 0 else 1.0


def _moments(y: np.ndarray):
    """Mean and standard deviation (1 when 0) of finite targets `y`.
    Where the plain sums overflow (targets near 1.7e308: the mean was
    inf, then "the label of row 0 is NaN"), in units of max |y|: both
    are then finite, as |mean| and the deviation are at most max |y|."""
    mean, spread = float(np.mean(y)), float(np.std(y))
    if not (np.isfinite(mean) and np.isfinite(spread)):
        unit = _unit(y)
        mean = float(np.mean(y / unit)) * unit
        spread = float(np.std(y / unit)) * unit
    return mean, (spread if spread > 0 else 1.0)


class TocRegressor(RegressorMixin, _TocEstimator):
    """Least-squares linear regression (``model="linreg"``) trained by
    mini-batch SGD on TOC-compressed rows; the targets are standardized
    for training and predictions mapped back. Parameters and attributes
    as :class:`TocClassifier` (no ``classes_``); ``y_mean_`` and
    ``y_scale_`` hold the targets' standardization.
    """

    def __init__(
        self,
        *,
        model: str = "linreg",
        epochs: int = 20,
        optimizer: str = "adam",
        learning_rate: Optional[float] = None,
        decay: float = 0.95,
        alpha: float = 0.0,
        batch_size: int = 32,
        shuffle: str = "epoch",
        random_state: Optional[int] = 0,
        scale: Optional[str] = "maxabs",
        warm_start: bool = False,
        page_rows: int = 8,
        block_bytes: int = 2048,
    ) -> None:
        super().__init__(
            model=model, epochs=epochs, optimizer=optimizer, learning_rate=learning_rate,
            decay=decay, alpha=alpha, batch_size=batch_size, shuffle=shuffle,
            random_state=random_state, scale=scale, warm_start=warm_start,
            page_rows=page_rows, block_bytes=block_bytes,
        )

    def _fit(self, X, y, sample_weight, epochs, warm):
        if self.model != "linreg":
            raise ValueError(f'model: expected "linreg", got {self.model!r}')
        first = not (warm and hasattr(self, "model_"))
        X, y = _validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"],
                              dtype=np.float64, y_numeric=True, reset=first)
        X, y = _repeat_by_weight(X, y, sample_weight, X.shape[0])
        with np.errstate(over="ignore", invalid="ignore"):
            if first:
                self.y_mean_, self.y_scale_ = _moments(y)
            targets = (y - self.y_mean_) / self.y_scale_
            if not np.all(np.isfinite(targets)):
                # Finite targets near 1.7e308: y - mean overflows, but not
                # in units of max |y|.
                unit = _unit(y)
                targets = (y / unit - self.y_mean_ / unit) / (self.y_scale_ / unit)
        if not np.all(np.isfinite(targets)):
            raise ValueError(
                f"y: standardized with mean {self.y_mean_} and standard deviation "
                f"{self.y_scale_} (from the first fit), the targets overflow a float64: "
                "rescale y"
            )
        self._train(X, targets, "linreg", None, epochs, self._init_model(not first))
        return self

    def fit(self, X, y, sample_weight=None):
        """Trains on rows `X` and targets `y` (from scratch unless
        ``warm_start``)."""
        return self._fit(X, y, sample_weight, self.epochs, self.warm_start)

    def partial_fit(self, X, y, sample_weight=None):
        """One epoch over `X`, `y` from the current model."""
        return self._fit(X, y, sample_weight, 1, True)

    def predict(self, X):
        """The predicted target of each row."""
        return self._decision(X) * self.y_scale_ + self.y_mean_

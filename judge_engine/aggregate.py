"""White-box aggregators: per-criterion scores -> human scores of several aspects.

HD-Eval (Liu et al., 2024, §2.2 and App. C.3) trains a multi-output
regressor with an MSE objective on the human labels, mapping the scores of
every criterion in the tree to the scores of every annotated aspect. The
paper compares four scikit-learn models; this module builds them:

``lr``  ``LinearRegression``
``dt``  ``DecisionTreeRegressor`` (scikit-learn defaults)
``rf``  ``RandomForestRegressor`` (scikit-learn defaults, 100 trees)
``nn``  the paper's main variant, a shallow ReLU MLP (``MLPRegressor``)
        in a ``Pipeline`` after ``StandardScaler`` (App. C.3; the scaling is ours), with its
        targets standardised too (``TransformedTargetRegressor``), an L2
        penalty of :data:`NN_ALPHA` and no early stopping on the small
        training sets HD-Eval has (see :func:`make_aggregator`).

All four are multi-output natively. Nothing is pickled: :meth:`Aggregator.to_state`
keeps the (imputed) training matrix, the targets and the fixed
``random_state``, which is enough to refit the same model deterministically
(:meth:`Aggregator.from_state`); the linear model's coefficients are kept as
numbers too, for display.

Missing criterion scores (NaN, a reply that did not parse) are imputed with
the training mean of that criterion (ours: the HD-Eval paper does not say);
a criterion with no score at all on the training set cannot be a feature
and is reported in :attr:`Aggregator.dropped`.
"""

from __future__ import annotations

import hashlib
import io
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Sequence

import numpy as np

from . import metrics

# scikit-learn is imported by the functions that build, clone and split models: every method module is loaded to
# read a judge, and sklearn (with pandas) took most of a second before `score` or `run` sent a request (issue 67
# item 2), though only HD-Eval fits an aggregator
if TYPE_CHECKING:
    from sklearn.base import RegressorMixin

AGGREGATORS = ("nn", "lr", "dt", "rf")
"""Aggregator kinds (HD-Eval §3.1: NN is the main variant)."""

NN_HIDDEN = (64, 32)
"""Hidden layers of the "3-layer shallow MLP" of App. C.3 (the paper gives no sizes; these are ours)."""
NN_ALPHA = 1.0
"""L2 penalty of the MLP. HD-Eval trains on tens of items (30-100 per dataset): with 1e-3 the 64x32 net
fitted the noise of 60 items and lost to the plain layer-1 scores out of sample (simulate benchmark,
test Pearson 0.54 vs 0.74); 1.0 keeps it a smooth, near-linear map where the data says no more."""
NN_EARLY_STOPPING_MIN = 500
"""From this many training samples on, the MLP holds out 10% for early stopping. Below it the hold-out
(fewer than 50 items) is too noisy to pick the stopping epoch and takes a tenth of scarce labels away;
the L2 penalty regularises instead."""


def make_aggregator(kind: str, *, n_samples: int, random_state: int = 0) -> RegressorMixin:
    """An unfitted multi-output regressor of the given kind."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeRegressor

    if kind == "lr":
        return LinearRegression()
    if kind == "dt":
        return DecisionTreeRegressor(random_state=random_state)
    if kind == "rf":
        return RandomForestRegressor(random_state=random_state, n_jobs=1)
    if kind == "nn":
        mlp = MLPRegressor(hidden_layer_sizes=NN_HIDDEN, activation="relu", solver="adam", alpha=NN_ALPHA,
                           max_iter=2000, early_stopping=n_samples >= NN_EARLY_STOPPING_MIN,
                           random_state=random_state)
        # Targets standardised as well as inputs: unscaled 1-5 targets put the net's output bias far from its
        # start and make the fixed alpha mean a different penalty on every scale (1-5, 0-100).
        return TransformedTargetRegressor(regressor=Pipeline([("scale", StandardScaler()), ("mlp", mlp)]),
                                          transformer=StandardScaler())
    raise ValueError(f"aggregator={kind!r} is not allowed; choose one of {list(AGGREGATORS)}")


def _matrix(rows: Sequence[Sequence[float]], width: int) -> np.ndarray:
    x = np.asarray(rows, dtype=float)
    return x.reshape(len(rows), width)


_FITTED: dict[str, Any] = {}
"""Models by what they were fitted on (:func:`_model_key`), newest last, the whole-data ones and the folds': a judge
stores its training matrix and seed, not its model, so every rebuild of the same judge fitted it again (a run's
scoring after its fit, every rerun of the HD-Eval page: an MLP each time, 1.7 s of an 11 s cache-only round at load
5, issue 62 item 6). The same data and seed give the same model, which is only read (``predict``) afterwards."""
_FITTED_MAX = 256
_FITTED_LOCK = threading.Lock()


class FitKeeper(Protocol):
    """Where fitted MLPs are kept beyond the process (:func:`fits_kept_in`), as :meth:`FittedMLP.to_bytes`."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, blob: bytes) -> None: ...


_KEEPER: list[FitKeeper] = []
"""The keeper of the run being executed (:func:`fits_kept_in`); the first one while several are."""


@contextmanager
def fits_kept_in(keeper: FitKeeper) -> Iterator[None]:
    """MLP fits read from and written to ``keeper`` meanwhile (a worker is a fresh process: a next round on the
    same scores fitted the same fold and whole-data MLPs again, 12-23 s of a cache-only HD-Eval round at load 10,
    issue 62 item 6). A model is keyed by everything it is a function of (:func:`_model_key`), so whichever
    keeper holds it, it is the model a fit here would make."""
    _KEEPER.append(keeper)
    try:
        yield
    finally:
        _KEEPER.remove(keeper)


def _model_key(kind: str, random_state: int, x: np.ndarray, y: np.ndarray) -> str:
    """What a fit is a function of: the kind and its settings, the seed, scikit-learn's version and the data."""
    import sklearn
    digest = hashlib.sha256(f"{kind}|{random_state}|{x.shape}|{y.shape}|{sklearn.__version__}|{NN_HIDDEN}|"
                            f"{NN_ALPHA}|{NN_EARLY_STOPPING_MIN}".encode())
    digest.update(np.ascontiguousarray(x, dtype=float).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=float).tobytes())
    return digest.hexdigest()


def fit_model(kind: str, random_state: int, x: np.ndarray, y: np.ndarray) -> Any:
    """``make_aggregator(kind)`` fitted on ``x`` and ``y``, or the same model fitted before (in this process, or
    kept by :func:`fits_kept_in`); an MLP is kept as its numbers (:class:`FittedMLP`)."""
    # C-contiguous copies: BLAS's last bits follow the memory layout, and a model must be a function of the numbers
    x, y = np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(y, dtype=float)
    key = _model_key(kind, random_state, x, y)
    with _FITTED_LOCK:
        model = _FITTED.get(key)
    if model is not None:
        return model
    keeper = _KEEPER[0] if _KEEPER and kind == "nn" else None
    blob = keeper.get(key) if keeper is not None else None
    if blob is not None:
        model = FittedMLP.from_bytes(blob)
    else:
        model = make_aggregator(kind, n_samples=len(x), random_state=random_state).fit(x, y)
        if kind == "nn":
            model = FittedMLP.of(model)
            if keeper is not None:
                keeper.put(key, model.to_bytes())
    with _FITTED_LOCK:
        _FITTED[key] = model
        while len(_FITTED) > _FITTED_MAX:
            _FITTED.pop(next(iter(_FITTED)))
    return model


@dataclass
class Aggregator:
    """A fitted aggregator with everything needed to rebuild it."""

    kind: str
    features: list[str]
    """Feature (criterion) names in column order, only those with at least one training score."""
    targets: list[str]
    """Aspect names predicted, in output order."""
    means: list[float]
    """Training mean of each feature, used to impute missing scores."""
    x: np.ndarray
    """Imputed training matrix (n_train x features)."""
    y: np.ndarray
    """Human scores (n_train x targets)."""
    random_state: int = 0
    dropped: list[str] = field(default_factory=list)
    """Criteria left out because no training sample has a score for them."""
    _model: Any = field(default=None, init=False, repr=False, compare=False)
    _fitted: bool = field(default=False, init=False, repr=False, compare=False)
    _folds: dict[int, list["FoldFit"]] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Fold fits by number of folds (:meth:`fold_fits`), made on first use."""

    # ---- building -------------------------------------------------------------------------
    @classmethod
    def fit(cls, x: Sequence[Sequence[float]], y: Sequence[Sequence[float]], *, kind: str,
            features: Sequence[str], targets: Sequence[str], random_state: int = 0) -> "Aggregator":
        """Fit on criterion scores ``x`` (NaN = missing) and human scores ``y`` (no NaN)."""
        xm = _matrix(x, len(features))
        ym = _matrix(y, len(targets))
        if np.isnan(ym).any():
            raise ValueError("human scores must not be missing; drop those samples first")
        keep = [j for j in range(xm.shape[1]) if not np.isnan(xm[:, j]).all()]
        dropped = [features[j] for j in range(xm.shape[1]) if j not in keep]
        xm = xm[:, keep]
        means = np.nanmean(xm, axis=0) if xm.size else np.zeros(len(keep))
        xm = np.where(np.isnan(xm), means, xm)
        agg = cls(kind=kind, features=[features[j] for j in keep], targets=list(targets),
                  means=[float(m) for m in means], x=xm, y=ym, random_state=random_state, dropped=dropped)
        return agg

    @property
    def model(self) -> Any:
        """The estimator fitted on the whole training matrix; None when there is nothing to learn from (no feature
        or fewer than 2 rows: the training mean is predicted).

        Fitted on first use, not in :meth:`fit`: HD-Eval refits its aggregator on every layer, but a fit reads
        only the fold models (:meth:`fold_fits`) and a judge stores the training matrix and seed, not the model,
        so a whole-data MLP fit per layer and aspect group was work thrown away (issue 46). The model is the
        same whenever it is made: the same data, the same seed.
        """
        if not self._fitted:
            self._refit()
        return self._model

    def _refit(self) -> None:
        self._fitted = True
        if self.x.shape[1] == 0 or len(self.x) < 2:
            self._model = None  # nothing to learn from: predict the training mean
            return
        self._model = fit_model(self.kind, self.random_state, self.x, self.y if self.y.shape[1] > 1 else self.y.ravel())

    # ---- use ------------------------------------------------------------------------------
    def impute(self, rows: Sequence[dict[str, float]]) -> tuple[np.ndarray, list[int]]:
        """Feature matrix for samples given as {feature: score}; missing -> training mean.

        Also returns, per row, how many features were imputed.
        """
        out = np.empty((len(rows), len(self.features)))
        n_imputed = []
        for i, row in enumerate(rows):
            k = 0
            for j, name in enumerate(self.features):
                value = row.get(name, math.nan)
                if value is None or math.isnan(value):
                    value, k = self.means[j], k + 1
                out[i, j] = value
            n_imputed.append(k)
        return out, n_imputed

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predictions (n x targets) for an imputed feature matrix."""
        x = np.asarray(x, dtype=float)
        if self.model is None:
            return np.tile(self.y.mean(axis=0), (len(x), 1))
        x = x.reshape(-1, len(self.features))
        return np.asarray(self.model.predict(x), dtype=float).reshape(len(x), len(self.targets))

    def predict_rows(self, rows: Sequence[dict[str, float]]) -> list[dict[str, float]]:
        x, _ = self.impute(rows)
        return [dict(zip(self.targets, map(float, p))) for p in self.predict(x)]

    def estimator(self) -> RegressorMixin:
        """A fresh unfitted copy of the model (for cross-validation and permutation importance)."""
        from sklearn.base import clone

        return clone(make_aggregator(self.kind, n_samples=len(self.x), random_state=self.random_state))

    def fold_fits(self, folds: int = 5) -> list["FoldFit"]:
        """The model refitted on the other rows of each of ``folds`` shuffled, seeded folds (fewer on a tiny training
        set, none below 3 rows or without features).

        Fitted once per aggregator: the out-of-fold correlation (:func:`cross_validated_correlation`) and the
        out-of-fold permutation importance (:func:`judge_engine.explain.permutation_importance_oof`) read the
        same folds with the same seed, so fitting them twice made the same models twice (with the MLP, most of
        HD-Eval's time between layers).
        """
        k = n_folds(len(self.x), folds)
        if k < 2 or self.x.shape[1] == 0:
            return []
        if k not in self._folds:
            from sklearn.model_selection import KFold

            y = self.y if self.y.shape[1] > 1 else self.y.ravel()
            self._folds[k] = [FoldFit(train=tr, test=te, model=fit_model(self.kind, self.random_state, self.x[tr], y[tr]))
                              for tr, te in KFold(k, shuffle=True, random_state=self.random_state).split(self.x)]
        return self._folds[k]

    def linear_weights(self) -> dict[str, dict[str, float]] | None:
        """Per target, the linear model's weight of each feature (``lr`` only)."""
        if self.kind != "lr" or self.model is None:
            return None
        coef = np.atleast_2d(self.model.coef_)
        return {t: dict(zip(self.features, map(float, coef[i]))) for i, t in enumerate(self.targets)}

    # ---- storage --------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """JSON-native state: the training data and seed that rebuild this model exactly."""
        state = {"kind": self.kind, "features": list(self.features), "targets": list(self.targets),
                 "means": list(self.means), "x": self.x.tolist(), "y": self.y.tolist(),
                 "random_state": self.random_state, "dropped": list(self.dropped)}
        weights = self.linear_weights()
        if weights is not None:
            state["linear_weights"] = weights
            state["intercepts"] = [float(v) for v in np.atleast_1d(self.model.intercept_)]
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "Aggregator":
        agg = cls(kind=state["kind"], features=list(state["features"]), targets=list(state["targets"]),
                  means=[float(m) for m in state["means"]],
                  x=_matrix(state["x"], len(state["features"])), y=_matrix(state["y"], len(state["targets"])),
                  random_state=int(state["random_state"]), dropped=list(state.get("dropped", [])))
        return agg


@dataclass(frozen=True)
class FoldFit:
    """One fold of an aggregator's out-of-fold estimates."""

    train: np.ndarray
    """Rows the model was fitted on."""
    test: np.ndarray
    """Rows held out: the model predicts (and is permuted on) these."""
    model: Any
    """The aggregator's estimator fitted on ``train``."""


@dataclass(frozen=True)
class FittedMLP:
    """A fitted ``nn`` aggregator (:func:`make_aggregator`) as the numbers its prediction reads; its :meth:`predict`
    is the pipeline's to the last bit (:func:`predictor`), and it is kept as bytes (:meth:`to_bytes`, no pickle)."""

    x_mean: np.ndarray
    x_scale: np.ndarray
    coefs: tuple[np.ndarray, ...]
    intercepts: tuple[np.ndarray, ...]
    y_mean: np.ndarray
    y_scale: np.ndarray
    squeeze: bool
    """A single target given as a vector: predictions are a vector too."""

    @classmethod
    def of(cls, model: Any) -> "FittedMLP":
        if not _is_mlp_pipeline(model):
            raise TypeError(f"not the nn aggregator's pipeline: {type(model).__name__}")
        scaler, mlp = model.regressor_.named_steps["scale"], model.regressor_.named_steps["mlp"]
        return cls(np.asarray(scaler.mean_, dtype=float), np.asarray(scaler.scale_, dtype=float),
                   tuple(np.asarray(w, dtype=float) for w in mlp.coefs_),
                   tuple(np.asarray(b, dtype=float) for b in mlp.intercepts_),
                   np.asarray(model.transformer_.mean_, dtype=float), np.asarray(model.transformer_.scale_, dtype=float),
                   bool(model._training_dim == 1))

    def predict(self, x: np.ndarray) -> np.ndarray:
        a = np.array(x, dtype=float)  # a copy, as the scaler's check makes
        a -= self.x_mean
        a /= self.x_scale
        last = len(self.coefs) - 1
        for i, (weights, bias) in enumerate(zip(self.coefs, self.intercepts)):
            a = a @ weights
            a += bias
            if i != last:
                np.maximum(a, 0, out=a)
        a *= self.y_scale
        a += self.y_mean
        return a[:, 0] if self.squeeze and a.shape[1] == 1 else a

    def to_bytes(self) -> bytes:
        arrays = {"x_mean": self.x_mean, "x_scale": self.x_scale, "y_mean": self.y_mean, "y_scale": self.y_scale,
                  "squeeze": np.array(self.squeeze)}
        arrays.update({f"coef{i}": w for i, w in enumerate(self.coefs)})
        arrays.update({f"intercept{i}": b for i, b in enumerate(self.intercepts)})
        out = io.BytesIO()
        np.savez(out, **arrays)
        return out.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> "FittedMLP":
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            n = sum(1 for name in z.files if name.startswith("coef"))
            return cls(z["x_mean"], z["x_scale"], tuple(z[f"coef{i}"] for i in range(n)),
                       tuple(z[f"intercept{i}"] for i in range(n)), z["y_mean"], z["y_scale"], bool(z["squeeze"]))


def predictor(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """``model.predict`` for a fitted aggregator estimator, as a function of a float matrix; for the MLP the same
    arithmetic without sklearn's checks around it.

    Permutation importance predicts every shuffled copy of a fold (1,350 predicts per aspect group at 27 criteria),
    and the MLP pipeline's ``predict`` spent most of each in input checks on both scalers and the net, not in the
    net (about 0.8 ms against 0.03 ms). The direct form runs the steps sklearn runs, in its order, from the
    fitted estimators' public attributes: center and scale (``StandardScaler.transform``), each layer's ``x @ W
    + b`` with ReLU in place between layers and the identity at the output (``MLPRegressor``), unscale
    (``inverse_transform``) and squeeze a single target. The numbers are the same to the last bit
    (``tests/test_aggregate.py`` checks them against ``model.predict``); the input must be a finite float matrix
    (the imputed training rows are).
    """
    return FittedMLP.of(model).predict if _is_mlp_pipeline(model) else model.predict


def _is_mlp_pipeline(model: Any) -> bool:
    """The fitted ``nn`` aggregator exactly as :func:`make_aggregator` builds it (anything else keeps its predict)."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    regressor = getattr(model, "regressor_", None)
    steps = getattr(regressor, "named_steps", None)
    return (isinstance(model, TransformedTargetRegressor) and isinstance(regressor, Pipeline)
            and list(steps or ()) == ["scale", "mlp"] and type(steps["scale"]) is StandardScaler
            and type(steps["mlp"]) is MLPRegressor and steps["mlp"].activation == "relu"
            and steps["mlp"].out_activation_ == "identity" and steps["scale"].with_mean and steps["scale"].with_std
            and type(model.transformer_) is StandardScaler and model.transformer_.with_mean
            and model.transformer_.with_std)


def n_folds(n_samples: int, wanted: int = 5) -> int:
    """Folds for out-of-fold estimates: ``wanted``, fewer on tiny training sets (0 = too few)."""
    return min(wanted, n_samples) if n_samples >= 3 else 0


def cross_validated_correlation(agg: Aggregator, *, folds: int = 5) -> dict[str, dict[str, float]]:
    """Out-of-fold Pearson/Spearman/Kendall of each target on the training set.

    Shows what a change to the tree did to the fit without touching the test
    split. Empty when the training set is too small for folds.
    """
    fits = agg.fold_fits(folds)
    if not fits:
        return {}
    pred = np.empty_like(agg.y)
    for fit in fits:
        pred[fit.test] = np.asarray(predictor(fit.model)(agg.x[fit.test]), dtype=float).reshape(len(fit.test), -1)
    return {t: metrics.correlations(agg.y[:, i].tolist(), pred[:, i].tolist())
            for i, t in enumerate(agg.targets)}

"""Attributions of a white-box aggregator to its criteria.

HD-Eval (Liu et al., 2024) uses two attributions:

* permutation importance (§2.3, footnote 4) decides which criteria of the
  current layer are decomposed further ("attribution pruning"):
  :func:`permutation_importance_oof` computes it out of fold (each fold's
  model is fitted on the other folds and permuted on its held-out part),
  with repeats, and returns the mean and the spread;
* SHAP (§4.4, App. A, Fig. 7/9, 100 random samples) explains the final
  aggregator: :func:`shap_values` picks shap's explainer suited to each
  aggregator (tree explainer for DT/RF, linear for LR, permutation for the
  MLP).

Both return pandas DataFrames. One judged item is explained by
:func:`explain_prediction`: an :class:`Explanation` of the prediction for one
aspect (that output's SHAP values, that output's base value, the prediction
and the score the verdict reports on the aspect's scale). :func:`state_aggregator`
and :func:`explain_row` do the same for any judge whose learned state holds an
aggregator (the comparison dashboard's triage uses them through
:func:`judge_engine.compare.item_explanation`). Their figures are in
:mod:`judge_engine.figures.attribution`; this module does not import plotly,
so the method code that uses it does not either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .aggregate import Aggregator, predictor

SHAP_MAX_SAMPLES = 100
"""Samples explained with SHAP (HD-Eval Fig. 9: 100 randomly selected samples)."""
SHAP_NN_BACKGROUND = 20
"""Background rows of the MLP's permutation explainer (cost grows with it; the paper gives none)."""
SHAP_ITEM_PERMUTATIONS = 10
"""Permutations of the MLP's explainer for one item (:func:`explain_prediction`); each is exactly additive,
more of them only steady the split between criteria."""


def _neg_mse(y: np.ndarray, pred: Any) -> float:
    """scikit-learn's ``neg_mean_squared_error`` score, computed in its order (targets as columns, the mean per
    target, then over targets), so that the importances are the same numbers to the last bit."""
    truth = y.reshape(len(y), -1)
    return -float(np.average(np.average((truth - np.asarray(pred, dtype=float).reshape(truth.shape)) ** 2, axis=0)))


def permutation_drops(model: Any, x: np.ndarray, y: np.ndarray, *, n_repeats: int, random_state: int) -> np.ndarray:
    """How much the negative MSE of ``model`` on ``(x, y)`` drops when each column is shuffled (features x repeats).

    The numbers of ``sklearn.inspection.permutation_importance(model, x, y, scoring="neg_mean_squared_error",
    n_repeats=n_repeats, random_state=random_state).importances``: the same seed drawn from ``random_state``, the
    same shuffles of every column (each repeat shuffles the column already shuffled), one predict of the same
    matrix per shuffle (:func:`~judge_engine.aggregate.predictor`: ``model.predict``'s arithmetic). What it
    leaves out is sklearn's scorer and input checks around every predict, which took most of HD-Eval's time
    between layers (1,350 predicts per layer at 27 criteria; issue 46).
    The shuffled matrices are not stacked into one predict: a taller matrix product rounds differently in the
    last bit, and the judge would not be the same.
    """
    # scikit-learn here, not at the top: the records and figures of this module are read by pages (Compare's
    # triage) that never compute an importance, and importing it was half of Compare's first visit (issue 67)
    import sklearn

    seed = np.random.RandomState(random_state).randint(np.iinfo(np.int32).max + 1)
    drops = np.empty((x.shape[1], n_repeats))
    # the rows are an aggregator's imputed training matrix, finite: each predict's finiteness scan is skipped
    with sklearn.config_context(assume_finite=bool(np.isfinite(x).all())):
        predict = predictor(model)
        baseline = _neg_mse(y, predict(x))
        for column in range(x.shape[1]):
            rng = np.random.RandomState(seed)  # every column gets the same sequence of shuffles
            shuffled, order = x.copy(), np.arange(len(x))
            for repeat in range(n_repeats):
                rng.shuffle(order)
                shuffled[:, column] = shuffled[order, column]
                drops[column, repeat] = baseline - _neg_mse(y, predict(shuffled))
    return drops


def permutation_importance_oof(agg: Aggregator, *, n_repeats: int = 10, folds: int = 5) -> pd.DataFrame:
    """Out-of-fold permutation importance of every feature, averaged over the targets.

    The score is the negative mean squared error over all targets of the
    aggregator (so importance = increase of MSE when the feature is shuffled);
    it stays defined on folds of one or two samples, where R² is not.

    Returns a DataFrame indexed by feature with ``importance`` (mean over
    folds and repeats), ``std`` (spread over all fold x repeat permutations)
    and ``rank`` (1 = most important). With fewer than 3 training samples the
    permutations run in-sample on the full model.
    """
    features = agg.features
    if not features:
        return pd.DataFrame(columns=["importance", "std", "rank"])
    y = agg.y if agg.y.shape[1] > 1 else agg.y.ravel()
    fits = agg.fold_fits(folds)  # the same fold models the out-of-fold correlation reads
    if fits:
        draws = [permutation_drops(fit.model, agg.x[fit.test], y[fit.test], n_repeats=n_repeats,
                                   random_state=agg.random_state + fold) for fold, fit in enumerate(fits)]
    elif agg.model is not None:
        draws = [permutation_drops(agg.model, agg.x, y, n_repeats=n_repeats, random_state=agg.random_state)]
    else:
        draws = [np.zeros((len(features), n_repeats))]
    allv = np.concatenate(draws, axis=1)
    frame = pd.DataFrame({"importance": allv.mean(axis=1), "std": allv.std(axis=1)}, index=pd.Index(features,
                                                                                                  name="feature"))
    frame["rank"] = frame["importance"].rank(ascending=False, method="first").astype(int)
    return frame.sort_values("rank")


def _explainer(agg: Aggregator, background: np.ndarray):
    import shap

    if agg.kind in ("dt", "rf"):
        return shap.TreeExplainer(agg.model)
    if agg.kind == "lr":
        return shap.LinearExplainer(agg.model, shap.maskers.Independent(background))
    # The MLP is model-agnostic territory: a permutation explainer over a small background
    # (SHAP_NN_BACKGROUND rows) keeps 100 explanations within seconds on a CPU.
    return shap.PermutationExplainer(agg.predict, shap.maskers.Independent(background, max_samples=SHAP_NN_BACKGROUND),
                                     seed=agg.random_state)


def shap_values(agg: Aggregator, x: np.ndarray | None = None, *, max_samples: int = SHAP_MAX_SAMPLES,
                sample_ids: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """SHAP values of the aggregator per target: one DataFrame (samples x features) each.

    ``x`` defaults to the training matrix; at most ``max_samples`` rows,
    drawn at random with the aggregator's seed, are explained. Each frame
    carries the explainer's base value in ``frame.attrs["base_value"]``.
    """
    x = agg.x if x is None else np.asarray(x, dtype=float)
    ids = list(sample_ids) if sample_ids is not None else [str(i) for i in range(len(x))]
    if agg.model is None or not agg.features or len(x) == 0:
        return {}
    rng = np.random.default_rng(agg.random_state)
    rows = np.sort(rng.choice(len(x), size=min(max_samples, len(x)), replace=False))
    x, ids = x[rows], [ids[i] for i in rows]
    background = agg.x[: min(len(agg.x), SHAP_MAX_SAMPLES)]
    explainer = _explainer(agg, background)
    if agg.kind == "nn":
        result = explainer(x, max_evals=2 * x.shape[1] + 1, silent=True)
    else:
        result = explainer(x)
    values = np.asarray(result.values, dtype=float).reshape(len(x), len(agg.features), -1)
    base = np.broadcast_to(np.asarray(result.base_values, dtype=float).reshape(len(x), -1),
                           (len(x), values.shape[2]))
    frames = {}
    for t, target in enumerate(agg.targets):
        frame = pd.DataFrame(values[:, :, min(t, values.shape[2] - 1)], columns=agg.features,
                             index=pd.Index(ids, name="sample"))
        frame.attrs["base_value"] = float(base[0, min(t, base.shape[1] - 1)])
        frames[target] = frame
    return frames


def state_aggregator(state: Mapping[str, Any], target: str) -> Aggregator | None:
    """The white-box aggregator a judge's learned state holds for ``target``, or None.

    Not tied to a method: any Judge whose ``state["aggregators"]`` lists
    :meth:`Aggregator.to_state` dicts has one (HD-Eval keeps one per group of
    aspects on the same scale); the first whose targets include ``target`` is
    rebuilt (refitted from its stored training matrix and seed).
    """
    for agg_state in state.get("aggregators") or ():
        if isinstance(agg_state, Mapping) and target in (agg_state.get("targets") or ()):
            return Aggregator.from_state(dict(agg_state))
    return None


def criterion_labels(state: Mapping[str, Any]) -> dict[str, str]:
    """Readable names of a judge's criteria, by id, from the criteria (or criteria tree) in its state."""
    nodes = (state.get("tree") or {}).get("nodes") if isinstance(state.get("tree"), Mapping) else None
    nodes = nodes if nodes is not None else state.get("criteria")
    if not isinstance(nodes, (list, tuple)):
        return {}
    return {str(n["id"]): str(n["name"]) for n in nodes if isinstance(n, Mapping) and "id" in n and "name" in n}


def explain_row(agg: Aggregator, row: Mapping[str, float], *, sample_id: str, target: str) -> pd.DataFrame | None:
    """SHAP values of one sample for ``target``: a one-row frame indexed by ``sample_id``.

    The frame form of :func:`explain_prediction` (same values, base value in
    ``frame.attrs["base_value"]``). ``row`` maps criterion -> score; criteria
    without a score (absent or NaN) get the training mean, as when the
    aggregator scored the sample. None when the aggregator has no model
    (nothing was learned) or does not predict ``target``.
    """
    if agg.model is None or not agg.features or target not in agg.targets:
        return None
    why = explain_prediction(agg, row, target, sample_id=str(sample_id))
    frame = pd.DataFrame([[why.contributions[f] for f in agg.features]], columns=agg.features,
                         index=pd.Index([why.sample_id], name="sample"))
    frame.attrs["base_value"] = why.base
    return frame


@dataclass(frozen=True)
class Explanation:
    """Why the aggregator gave one item its score on one aspect (SHAP values of that aspect's output).

    ``base + sum(contributions.values()) == prediction`` (up to float
    rounding of the explainer); ``score`` is ``prediction`` clipped to the
    aspect's scale, the number the verdict reports.
    """

    sample_id: str
    """The item explained."""
    target: str
    """The aspect (aggregator output) explained."""
    base: float
    """That output's expected value: the aggregator's mean prediction for ``target`` over its background
    (the training matrix, at most :data:`SHAP_MAX_SAMPLES` rows)."""
    contributions: Mapping[str, float]
    """SHAP value of every feature (criterion id -> push away from ``base``) for the ``target`` output only."""
    prediction: float
    """The aggregator's output for ``target`` on this item, before clipping."""
    low: float | None = None
    """Lowest score of the aspect's scale (None: the prediction is not clipped)."""
    high: float | None = None
    """Highest score of the aspect's scale (None: the prediction is not clipped)."""

    @property
    def score(self) -> float:
        """The prediction clipped to the aspect's scale: what the verdict reports (HD-Eval ``_verdict``)."""
        value = self.prediction
        if self.low is not None:
            value = max(value, self.low)
        if self.high is not None:
            value = min(value, self.high)
        return float(value)

    @property
    def clipped(self) -> float:
        """How far clipping to the scale moved the prediction (0 when it lay on the scale)."""
        return self.score - self.prediction


def _background(agg: Aggregator) -> np.ndarray:
    """The rows an item is explained against: the training matrix, at most SHAP_MAX_SAMPLES drawn with the seed."""
    if len(agg.x) <= SHAP_MAX_SAMPLES:
        return agg.x
    rows = np.sort(np.random.default_rng(agg.random_state).choice(len(agg.x), size=SHAP_MAX_SAMPLES, replace=False))
    return agg.x[rows]


def _as_row(agg: Aggregator, x_row: Mapping[str, float] | Sequence[float] | np.ndarray) -> np.ndarray:
    if isinstance(x_row, Mapping):
        x, _ = agg.impute([dict(x_row)])
        return x
    x = np.asarray(x_row, dtype=float).reshape(1, -1)
    if x.shape[1] != len(agg.features):
        raise ValueError(f"the aggregator reads {len(agg.features)} criteria, the row has {x.shape[1]} values")
    if np.isnan(x).any():
        raise ValueError("the row has missing scores; pass it as {criterion: score} to fill them with the "
                         "training means")
    return x


def explain_prediction(agg: Aggregator, x_row: Mapping[str, float] | Sequence[float] | np.ndarray, target: str, *,
                       sample_id: str = "", scale: tuple[float, float] | None = None) -> Explanation:
    """SHAP explanation of the aggregator's prediction for one item and one aspect.

    Parameters
    ----------
    agg : Aggregator
        A fitted (possibly multi-output) aggregator.
    x_row : mapping or array-like
        The item's criterion scores: ``{criterion id: score}`` (missing or
        NaN -> training mean, as when the item was scored) or one imputed
        row in ``agg.features`` order.
    target : str
        The aspect explained; must be one of ``agg.targets``.
    sample_id : str, default=""
        The item's id (shown in the figure's title).
    scale : (low, high) or None, default=None
        The aspect's scale; the verdict clips the prediction to it, and so
        does :attr:`Explanation.score`.

    Returns
    -------
    Explanation
        Only the ``target`` output: its SHAP values, its base value (the
        mean prediction for ``target`` over the training rows) and its
        prediction. The explainers are interventional over the same
        background for every kind (trees via ``TreeExplainer`` with data,
        the linear model via ``LinearExplainer``, the MLP via a permutation
        explainer over the whole background), so base plus contributions is
        the prediction exactly, not only in expectation.
    """
    if target not in agg.targets:
        raise ValueError(f"the aggregator predicts {', '.join(agg.targets)}; it has no output {target!r}")
    t = agg.targets.index(target)
    x = _as_row(agg, x_row)
    low, high = (float(scale[0]), float(scale[1])) if scale is not None else (None, None)
    prediction = float(agg.predict(x)[0, t])
    if agg.model is None or not agg.features:
        # nothing learned: the prediction is the training mean, which is also the base
        return Explanation(str(sample_id), target, prediction, {f: 0.0 for f in agg.features}, prediction,
                           low, high)
    background = _background(agg)
    base = float(agg.predict(background)[:, t].mean())
    values = _item_shap(agg, x, background)[:, t]
    contributions = {f: float(v) for f, v in zip(agg.features, values)}
    residual = prediction - base - float(values.sum())
    # The three explainers are exact on their background; a residual means shap changed, not the data.
    if abs(residual) > 1e-4 * (1.0 + abs(prediction) + float(np.abs(values).sum())):
        raise RuntimeError(f"SHAP values of {target!r} do not add up to the prediction (off by {residual:.3g})")
    return Explanation(str(sample_id), target, base, contributions, prediction, low, high)


def _item_shap(agg: Aggregator, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    """SHAP values (features x targets) of one row against ``background``, the same game for every kind."""
    import shap

    if agg.kind in ("dt", "rf"):
        explainer = shap.TreeExplainer(agg.model, data=background, feature_perturbation="interventional")
        result = explainer(x, check_additivity=False)
    elif agg.kind == "lr":
        result = shap.LinearExplainer(agg.model, shap.maskers.Independent(background,
                                                                          max_samples=len(background)))(x)
    else:
        # one row: the whole background is affordable, so the base is the mean prediction over it
        masker = shap.maskers.Independent(background, max_samples=len(background))
        explainer = shap.PermutationExplainer(agg.predict, masker, seed=agg.random_state)
        result = explainer(x, max_evals=SHAP_ITEM_PERMUTATIONS * (2 * x.shape[1] + 1), silent=True)
    return np.asarray(result.values, dtype=float).reshape(len(agg.features), -1)


def mean_abs_shap(frame: pd.DataFrame) -> pd.Series:
    """Mean |SHAP| per feature, largest first (the SHAP bar summary)."""
    return frame.abs().mean(axis=0).sort_values(ascending=False)


def summary_frame(importance: pd.DataFrame, shap_frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Permutation importance beside mean |SHAP| per target, one row per feature."""
    out = importance[["importance", "std"]].copy()
    for target, frame in shap_frames.items():
        out[f"|SHAP| {target}"] = mean_abs_shap(frame)
    return out


def as_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A DataFrame as JSON-native rows (for Judge.state)."""
    return [{"feature": str(i), **{k: float(v) for k, v in row.items()}} for i, row in frame.iterrows()]

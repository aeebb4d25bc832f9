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

Both return pandas DataFrames. :func:`state_aggregator` and :func:`explain_row`
explain one judged item of any judge whose learned state holds an aggregator
(the comparison dashboard's triage uses them through
:func:`judge_engine.compare.item_explanation`). Their figures are in
:mod:`judge_engine.figures.attribution`; this module does not import plotly,
so the method code that uses it does not either.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
from sklearn.inspection import permutation_importance
from sklearn.model_selection import KFold

from .aggregate import Aggregator, n_folds

SHAP_MAX_SAMPLES = 100
"""Samples explained with SHAP (HD-Eval Fig. 9: 100 randomly selected samples)."""
SHAP_NN_BACKGROUND = 20
"""Background rows of the MLP's permutation explainer (cost grows with it; the paper gives none)."""


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
    k = n_folds(len(agg.x), folds)
    draws = []  # (features x repeats) per fold
    if k >= 2:
        for fold, (tr, te) in enumerate(KFold(k, shuffle=True, random_state=agg.random_state).split(agg.x)):
            model = agg.estimator().fit(agg.x[tr], y[tr])
            result = permutation_importance(model, agg.x[te], y[te], scoring="neg_mean_squared_error",
                                            n_repeats=n_repeats, random_state=agg.random_state + fold)
            draws.append(result.importances)
    elif agg.model is not None:
        result = permutation_importance(agg.model, agg.x, y, scoring="neg_mean_squared_error",
                                        n_repeats=n_repeats, random_state=agg.random_state)
        draws.append(result.importances)
    else:
        draws.append(np.zeros((len(features), n_repeats)))
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
    """SHAP values of one sample for ``target``: a one-row frame indexed by ``sample_id`` (see :func:`shap_values`).

    ``row`` maps criterion -> score; criteria without a score (absent or NaN)
    get the training mean, as when the aggregator scored the sample. None when
    the aggregator has no model (nothing was learned) or does not predict
    ``target``.
    """
    x, _ = agg.impute([dict(row)])
    return shap_values(agg, x, sample_ids=[str(sample_id)], max_samples=1).get(target)


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

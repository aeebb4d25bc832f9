"""HD-Eval's work between layers (issue 46): the fold models are fitted once, the whole-data model only when read,
and permutation importance skips sklearn's per-predict scorer; none of it changes a bit of the fitted judge.

The reference is the code as it was: ``sklearn.inspection.permutation_importance`` on fold models of its own, and
``cross_val_predict`` fitting the same folds again for the out-of-fold correlation. Each test fits HD-Eval twice
over the same deterministic scripted backend, once as it is and once with the reference patched in, and checks
that the judges' JSON (importances, correlations, chosen criteria, aggregators) is the same string.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.inspection import permutation_importance
from sklearn.model_selection import KFold, cross_val_predict

from judge_engine import aggregate, explain, metrics
from judge_engine.aggregate import Aggregator, n_folds
from judge_engine.explain import permutation_drops
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext
from judge_engine.methods.hd_eval import HDEval
from judge_engine.methods.hd_eval import method as hd_method
from judge_engine.prompting import TaskInfo
from tests.test_hd_eval import _dataset, _json_scripted


def _sklearn_importance(agg: Aggregator, *, n_repeats: int = 10, folds: int = 5) -> pd.DataFrame:
    """``explain.permutation_importance_oof`` before issue 46: sklearn's permutation importance on fold models it
    fits itself."""
    y = agg.y if agg.y.shape[1] > 1 else agg.y.ravel()
    k = n_folds(len(agg.x), folds)
    draws = []
    for fold, (tr, te) in enumerate(KFold(k, shuffle=True, random_state=agg.random_state).split(agg.x)):
        model = agg.estimator().fit(agg.x[tr], y[tr])
        draws.append(permutation_importance(model, agg.x[te], y[te], scoring="neg_mean_squared_error",
                                            n_repeats=n_repeats, random_state=agg.random_state + fold).importances)
    allv = np.concatenate(draws, axis=1)
    frame = pd.DataFrame({"importance": allv.mean(axis=1), "std": allv.std(axis=1)},
                         index=pd.Index(agg.features, name="feature"))
    frame["rank"] = frame["importance"].rank(ascending=False, method="first").astype(int)
    return frame.sort_values("rank")


def _sklearn_correlation(agg: Aggregator, *, folds: int = 5) -> dict:
    """``aggregate.cross_validated_correlation`` before issue 46: ``cross_val_predict`` fits the folds again."""
    cv = KFold(n_splits=n_folds(len(agg.x), folds), shuffle=True, random_state=agg.random_state)
    y = agg.y if agg.y.shape[1] > 1 else agg.y.ravel()
    pred = np.asarray(cross_val_predict(agg.estimator(), agg.x, y, cv=cv), dtype=float).reshape(agg.y.shape)
    return {t: metrics.correlations(agg.y[:, i].tolist(), pred[:, i].tolist()) for i, t in enumerate(agg.targets)}


def _fit(aggregator: str, layers: int, monkeypatch) -> tuple[str, int]:
    """The fitted judge's JSON and how many times the aggregator's estimator was fitted (full data and folds)."""
    fitted = []
    # whole-data models are memoised in the process by their data: each fit counted here starts with none
    monkeypatch.setattr(aggregate, "_FITTED", {})
    cls = type(aggregate.make_aggregator(aggregator, n_samples=12))
    fit = cls.fit
    monkeypatch.setattr(cls, "fit", lambda self, *a, **kw: (fitted.append(1), fit(self, *a, **kw))[1])
    dataset = _dataset(12)
    llm = make_llm(LLMConfig(concurrency=4), store=None, backend=FakeBackend(_json_scripted))
    judge = HDEval(aggregator=aggregator, max_layers=layers, k_expand=2, pi_repeats=3).fit(
        dataset.samples, dataset.aspect("clarity"), FitContext(llm=llm, task=TaskInfo.of(dataset)))
    monkeypatch.setattr(cls, "fit", fit)
    return judge.to_json(), len(fitted)


# the MLP on two layers only: its 2,000 epochs per fit make three layers take minutes on a loaded machine
@pytest.mark.parametrize("aggregator, layers", [("lr", 3), ("dt", 3), ("nn", 2)])
def test_the_judge_is_the_same_as_with_sklearns_permutation_importance_and_folds_fitted_twice(aggregator, layers,
                                                                                             monkeypatch):
    fast, fast_fits = _fit(aggregator, layers, monkeypatch)
    with monkeypatch.context() as m:
        # pruning imports it from explain when it prunes (explain loads pandas and sklearn: not before a request)
        m.setattr(explain, "permutation_importance_oof", _sklearn_importance)
        m.setattr(hd_method, "cross_validated_correlation", _sklearn_correlation)
        reference, reference_fits = _fit(aggregator, layers, m)
    assert '"importance"' in fast and '"pruning"' in fast
    assert fast == reference
    # per layer two aspect groups (1-5 and 0-1) of five folds each, which the reference fitted twice; the whole-data
    # model is fitted only where it is read: the linear model's weights of the last layer go into the judge
    whole = 2 if aggregator == "lr" else 0
    assert fast_fits == layers * 2 * 5 + whole and reference_fits == layers * 2 * 10 + whole


def test_permutation_drops_are_sklearns_importances():
    rng = np.random.default_rng(5)
    x = rng.integers(1, 6, size=(9, 4)).astype(float)
    y = np.column_stack([x[:, 0] + rng.normal(0, 0.1, 9), x[:, 2] - x[:, 1]])
    agg = Aggregator.fit(x, y, kind="lr", features=list("abcd"), targets=["t", "u"])
    drops = permutation_drops(agg.model, x, y, n_repeats=4, random_state=3)
    expected = permutation_importance(agg.model, x, y, scoring="neg_mean_squared_error", n_repeats=4,
                                      random_state=3).importances
    assert drops.shape == expected.shape == (4, 4)
    # the same numbers to the last bit, not close ones: they are stored in the judge and pick what is decomposed
    assert drops.tobytes() == expected.tobytes()
    assert drops[0].mean() > 0 and drops[2].mean() > 0  # a and c carry the targets


def test_fold_models_are_fitted_once_per_aggregator():
    rng = np.random.default_rng(2)
    agg = Aggregator.fit(rng.normal(size=(10, 3)), rng.normal(size=(10, 1)), kind="lr", features=list("abc"),
                         targets=["t"])
    first = agg.fold_fits()
    assert len(first) == 5 and all(f.model is g.model for f, g in zip(first, agg.fold_fits()))
    assert sorted(np.concatenate([f.test for f in first]).tolist()) == list(range(10))
    assert aggregate.cross_validated_correlation(agg).keys() == {"t"}

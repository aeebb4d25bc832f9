"""Permutation importance and SHAP on synthetic data where one feature carries the signal."""

import numpy as np
import plotly.graph_objects as go
import pytest

from judge_engine.aggregate import Aggregator
from judge_engine.explain import mean_abs_shap, permutation_importance_oof, shap_values
from judge_engine.figures import importance_figure, shap_bar_figure, shap_waterfall_figure


def _agg(kind, n=40):
    rng = np.random.default_rng(1)
    x = rng.integers(1, 6, size=(n, 3)).astype(float)
    y = np.c_[x[:, 1] + rng.normal(0, 0.1, n)]
    return Aggregator.fit(x, y, kind=kind, features=["noise1", "signal", "noise2"], targets=["t"])


@pytest.mark.parametrize("kind", ["lr", "dt", "rf"])
def test_permutation_importance_out_of_fold_ranks_the_signal_first_with_spread(kind):
    frame = permutation_importance_oof(_agg(kind), n_repeats=4)
    assert frame.index[0] == "signal" and frame.loc["signal", "rank"] == 1
    assert frame.loc["signal", "importance"] > 10 * abs(frame.loc["noise1", "importance"])
    assert (frame["std"] >= 0).all() and frame.loc["signal", "std"] > 0


@pytest.mark.parametrize("kind", ["lr", "rf", "nn"])
def test_shap_values_per_target_explain_the_signal_and_add_up(kind):
    agg = _agg(kind)
    frames = shap_values(agg, max_samples=10, sample_ids=[f"s{i}" for i in range(40)])
    frame = frames["t"]
    assert frame.shape == (10, 3) and mean_abs_shap(frame).index[0] == "signal"
    rows = [int(i[1:]) for i in frame.index]
    total = frame.sum(axis=1).to_numpy() + frame.attrs["base_value"]
    np.testing.assert_allclose(total, agg.predict(agg.x[rows])[:, 0], atol=0.05)


def test_figures_are_built():
    agg = _agg("lr")
    frame = shap_values(agg, max_samples=5)["t"]
    assert isinstance(importance_figure(permutation_importance_oof(agg, n_repeats=2)), go.Figure)
    assert isinstance(shap_bar_figure(frame), go.Figure)
    fig = shap_waterfall_figure(frame, frame.index[0], labels={"signal": "Signal"})
    assert "Signal" in fig.data[0].y

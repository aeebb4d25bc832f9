"""White-box aggregators on synthetic data with a known structure."""

import json
import math

import numpy as np
import pytest

from judge_engine.aggregate import AGGREGATORS, Aggregator, cross_validated_correlation, make_aggregator


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 6, size=(n, 4)).astype(float)
    y = np.c_[0.8 * x[:, 0] + rng.normal(0, 0.1, n), 0.5 * x[:, 1] + 0.3 * x[:, 0]]
    return x, y


@pytest.mark.parametrize("kind", AGGREGATORS)
def test_each_kind_fits_multi_output_and_rebuilds_exactly_from_json_state(kind):
    x, y = _data()
    agg = Aggregator.fit(x, y, kind=kind, features=list("abcd"), targets=["t1", "t2"], random_state=3)
    state = json.loads(json.dumps(agg.to_state()))  # JSON-native, no pickles
    again = Aggregator.from_state(state)
    np.testing.assert_allclose(again.predict(x), agg.predict(x))
    assert agg.predict(x).shape == (60, 2)
    cv = cross_validated_correlation(agg)
    assert cv["t1"]["pearson"] > 0.8, f"{kind} learns the linear signal out of fold"


def test_linear_weights_recover_the_structure():
    x, y = _data()
    agg = Aggregator.fit(x, y, kind="lr", features=list("abcd"), targets=["t1", "t2"])
    w = agg.to_state()["linear_weights"]
    assert w["t1"]["a"] == pytest.approx(0.8, abs=0.05) and abs(w["t1"]["c"]) < 0.05
    assert w["t2"]["b"] == pytest.approx(0.5, abs=1e-6) and w["t2"]["a"] == pytest.approx(0.3, abs=1e-6)


def test_missing_scores_are_imputed_with_training_means_and_empty_columns_dropped():
    x, y = _data(20)
    x[0, 0] = math.nan
    x[:, 3] = math.nan
    agg = Aggregator.fit(x, y, kind="lr", features=list("abcd"), targets=["t1", "t2"])
    assert agg.features == ["a", "b", "c"] and agg.dropped == ["d"]
    assert agg.x[0, 0] == pytest.approx(np.nanmean(x[1:, 0]))
    rows, imputed = agg.impute([{"a": 2.0, "b": math.nan}])
    assert imputed == [2] and rows[0, 1] == pytest.approx(agg.means[1])


def test_no_usable_feature_predicts_nothing_learned_and_nn_skips_early_stopping_on_tiny_sets():
    x = np.full((5, 1), math.nan)
    agg = Aggregator.fit(x, [[1.0], [2.0], [3.0], [4.0], [5.0]], kind="nn", features=["a"], targets=["t"])
    assert agg.model is None and agg.features == []
    assert make_aggregator("nn", n_samples=10).named_steps["mlp"].early_stopping is False
    assert make_aggregator("nn", n_samples=100).named_steps["mlp"].early_stopping is True
    with pytest.raises(ValueError, match="aggregator"):
        make_aggregator("svm", n_samples=10)

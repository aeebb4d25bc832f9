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


# ---- one item, one aspect: explain_prediction (issue #22 point 3) --------------------------------------------------
# The old waterfall took a frame of SHAP values and drew base + sum: its base was the explainer's (20 background rows
# for the MLP, tree-path statistics for the forest), and its title was the unclipped regressor output, while the
# verdict reports the prediction clipped to the aspect's scale ("Why sample 174 got 2.76" on a 0-1 aspect).

import math
import re

from judge_engine.criteria_scoring import CriterionScore
from judge_engine.explain import Explanation, explain_prediction, explain_row
from judge_engine.figures import explanation_figure
from judge_engine.methods.hd_eval import HDEval
from judge_engine.records import Aspect, Sample

FEATURES = ["a", "b", "c", "d"]


def _two_scales(kind, n=40):
    """One aggregator, two outputs on different scales: 'overall' 1-5 from a and b, 'und' 0-1 from c."""
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, size=(n, 4)).astype(float)
    overall = np.clip(0.5 * x[:, 0] + 0.5 * x[:, 1] + rng.normal(0, 0.3, n), 1, 5)
    und = np.clip((x[:, 2] - 1) / 4 + rng.normal(0, 0.05, n), 0, 1)
    return Aggregator.fit(x, np.c_[overall, und], kind=kind, features=FEATURES, targets=["overall", "und"])


def _title_number(fig):
    return float(re.search(r"got (-?\d+\.\d+)", fig.layout.title.text).group(1))


def _bars_end(fig):
    """Where the waterfall's bars end: the absolute base plus every relative step."""
    trace = fig.data[0]
    return sum(v for v, m in zip(trace.x, trace.measure) if m in ("absolute", "relative"))


@pytest.mark.parametrize("kind", ["lr", "dt", "rf", "nn"])
def test_the_0_1_aspect_is_explained_by_its_own_output_base_and_prediction(kind):
    agg = _two_scales(kind)
    row = {"a": 5.0, "b": 4.0, "c": 2.0, "d": 3.0}
    why = explain_prediction(agg, row, "und", sample_id="174", scale=(0.0, 1.0))
    x, _ = agg.impute([row])
    prediction = agg.predict(x)[0, 1]
    assert isinstance(why, Explanation) and why.target == "und" and set(why.contributions) == set(FEATURES)
    # its base is the mean prediction of the 0-1 output over the training rows, not the 1-5 output's
    assert why.base == pytest.approx(agg.predict(agg.x)[:, 1].mean(), abs=1e-6)
    assert 0.0 <= why.base <= 1.0 and why.base != pytest.approx(agg.predict(agg.x)[:, 0].mean(), abs=0.5)
    assert why.prediction == pytest.approx(prediction, abs=1e-9)
    assert why.base + sum(why.contributions.values()) == pytest.approx(why.prediction, abs=1e-5)
    fig = explanation_figure(why)
    assert _title_number(fig) == pytest.approx(why.score, abs=0.005)
    assert _bars_end(fig) == pytest.approx(why.score, abs=1e-5)
    assert "on und (scale 0-1)" in fig.layout.title.text
    # the 1-5 output of the same item is another explanation, with its own base and number
    other = explain_prediction(agg, row, "overall", sample_id="174", scale=(1.0, 5.0))
    assert other.base == pytest.approx(agg.predict(agg.x)[:, 0].mean(), abs=1e-6)
    assert other.base + sum(other.contributions.values()) == pytest.approx(agg.predict(x)[0, 0], abs=1e-5)


@pytest.mark.parametrize("kind", ["lr", "nn"])
def test_the_waterfall_ends_at_the_score_the_verdict_reports_when_the_prediction_leaves_the_scale(kind):
    """Scores far outside the training range push the 0-1 output above 1; the verdict clips, so does the figure."""
    agg = _two_scales(kind)
    row = {"a": 1.0, "b": 1.0, "c": 40.0, "d": 3.0}  # c = 40: far past the training range 1-5
    why = explain_prediction(agg, row, "und", sample_id="174", scale=(0.0, 1.0))
    assert why.prediction > 1.0 and why.score == pytest.approx(1.0) and why.clipped == pytest.approx(1.0 - why.prediction)
    sample = Sample(id="174", input="q", output="a", group_id="g", human={})
    cells = {f: CriterionScore(score=v, raw=str(v), source="json") for f, v in row.items()}
    verdict = HDEval._verdict(sample, cells, agg, Aspect("und", 0, 1, ""), 0.5)
    assert verdict.metadata["predictions"]["und"] == pytest.approx(why.prediction, abs=1e-5)

    fig = explanation_figure(why, labels={"c": "Clear wording"})
    assert _title_number(fig) == pytest.approx(verdict.score, abs=0.005)
    assert _bars_end(fig) == pytest.approx(verdict.score, abs=1e-5)
    assert "clipped to the scale 0-1" in fig.data[0].y and fig.data[0].y[-1] == "score"
    # nothing else is drawn: one waterfall whose bars are this item's base, criteria, clipping and score
    assert len(fig.data) == 1 and fig.data[0].type == "waterfall"
    assert set(fig.data[0].y) == {"base value", "Clear wording", "a", "b", "d", "clipped to the scale 0-1", "score"}
    lo, hi = fig.layout.xaxis.range
    assert lo <= 0.0 and hi >= max(np.cumsum(fig.data[0].x[:-1]))


def test_an_unknown_aspect_or_a_wrong_row_is_refused_with_a_message():
    agg = _two_scales("lr")
    with pytest.raises(ValueError, match="overall, und; it has no output 'coherence'"):
        explain_prediction(agg, {"a": 1.0}, "coherence")
    with pytest.raises(ValueError, match="reads 4 criteria, the row has 3"):
        explain_prediction(agg, [1.0, 2.0, 3.0], "und")
    with pytest.raises(ValueError, match="missing scores"):
        explain_prediction(agg, [1.0, 2.0, math.nan, 3.0], "und")


def test_a_criterion_without_a_score_is_explained_at_its_training_mean():
    agg = _two_scales("lr")
    why = explain_prediction(agg, {"a": 2.0, "b": math.nan, "c": 4.0}, "und")  # b NaN, d absent
    full = explain_prediction(agg, [2.0, agg.means[1], 4.0, agg.means[3]], "und")
    assert why.prediction == pytest.approx(full.prediction) and why.base == pytest.approx(full.base)
    # at the background's mean a linear model's feature pushes nothing
    assert why.contributions["b"] == pytest.approx(0.0, abs=1e-9) and why.contributions["d"] == pytest.approx(0.0,
                                                                                                         abs=1e-9)


def test_an_aggregator_that_learned_nothing_explains_its_mean():
    agg = Aggregator.fit([[3.0, 1.0]], [[4.0, 0.5]], kind="lr", features=["a", "b"], targets=["overall", "und"])
    why = explain_prediction(agg, {"a": 1.0, "b": 5.0}, "und", scale=(0.0, 1.0))
    assert why.prediction == pytest.approx(0.5) and why.base == pytest.approx(0.5)
    assert all(v == 0.0 for v in why.contributions.values())
    assert explain_row(agg, {"a": 1.0}, sample_id="x", target="und") is None


def test_explain_row_is_the_frame_form_of_the_same_explanation():
    agg = _two_scales("rf")
    row = {"a": 4.0, "b": 2.0, "c": 5.0, "d": 1.0}
    frame = explain_row(agg, row, sample_id="s1", target="und")
    why = explain_prediction(agg, row, "und", sample_id="s1")
    assert list(frame.index) == ["s1"] and frame.attrs["base_value"] == pytest.approx(why.base)
    assert frame.loc["s1"].to_dict() == pytest.approx(dict(why.contributions))
    assert explain_row(agg, row, sample_id="s1", target="nope") is None
    fig = shap_waterfall_figure(frame, "s1")
    assert _title_number(fig) == pytest.approx(why.prediction, abs=0.005) and len(fig.data) == 1


def test_names_an_llm_wrote_are_shown_as_text():
    agg = _two_scales("lr")
    why = explain_prediction(agg, {"a": 1.0}, "und", sample_id="<b>1</b>", scale=(0.0, 1.0))
    fig = explanation_figure(why, labels={"a": "<img src=x onerror=alert(1)>"})
    assert "&lt;b&gt;1&lt;/b&gt;" in fig.layout.title.text and "<b>" not in fig.layout.title.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in fig.data[0].y and not any("<img" in n for n in fig.data[0].y)
    short = explanation_figure(why, max_features=2)
    assert "other criteria" in short.data[0].y and len(short.data[0].y) == 5  # base, 2 criteria, the rest, score
    assert _bars_end(short) == pytest.approx(why.score, abs=1e-6)  # the criteria left out are summed, not dropped

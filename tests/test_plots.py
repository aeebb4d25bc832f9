"""Figures of judge_engine.figures.scores: the traces and points they hold."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from judge_engine import figures
from judge_engine.records import Aspect, Dataset, Sample


def make_dataset() -> Dataset:
    samples = tuple(
        Sample(id=str(i), input=f"in {i}", output=f"out {i}", group_id=f"g{i // 2}",
               human={"fluency": float(i % 5 + 1), "fine": i / 10.0} if i != 9 else {"fluency": 3.0})
        for i in range(40))
    return Dataset(name="toy", task="testing", samples=samples,
                   aspects=(Aspect("fluency", 1, 5, "d"), Aspect("fine", 0, 4, "d")))


def test_histogram_of_one_aspect_counts_every_score():
    fig = figures.human_histograms(make_dataset(), "fluency")
    assert isinstance(fig, go.Figure)
    assert len(fig.data) == 1
    bar = fig.data[0]
    assert bar.type == "bar"
    assert list(bar.x) == [1, 2, 3, 4, 5]
    assert sum(bar.y) == 40
    assert list(bar.y) == [8, 8, 9, 8, 7], "sample 9 has fluency 3"


def test_histograms_of_all_aspects_one_panel_each_and_missing_scores_skipped():
    fig = figures.human_histograms(make_dataset())
    assert [t.name for t in fig.data] == ["fluency", "fine"]
    fine = fig.data[1]
    assert fine.type == "histogram", "many distinct values: a binned histogram"
    assert len(fine.x) == 39, "the sample without a 'fine' score is left out"
    assert "n=39" in fig.layout.annotations[1].text


def test_histogram_unknown_aspect_raises():
    with pytest.raises(KeyError):
        figures.human_histograms(make_dataset(), "nope")


def test_scatter_drops_missing_pairs_and_jitters_within_bounds():
    human = [1, 2, 3, 4, 5, 3, None]
    pred = [1, 2, float("nan"), 4, 5, 2, 3]
    fig = figures.human_vs_judge_scatter(human, pred, ids=list("abcdefg"), aspect="coherence", low=1, high=5,
                                       jitter=0.02)
    names = [t.name for t in fig.data]
    assert names == ["items", "trend", "y = x"]
    points = fig.data[0]
    assert len(points.x) == 5
    assert list(points.text) == ["a", "b", "d", "e", "f"]
    exact = np.array(points.customdata)
    assert np.allclose(exact[:, 0], [1, 2, 4, 5, 3]) and np.allclose(exact[:, 1], [1, 2, 4, 5, 2])
    assert np.all(np.abs(np.array(points.x) - exact[:, 0]) <= 0.02 * 4 + 1e-9)
    assert np.all(np.abs(np.array(points.y) - exact[:, 1]) <= 0.02 * 4 + 1e-9)
    assert "2 without a judge score" in fig.layout.title.text
    assert list(fig.data[2].x) == [1, 5] and list(fig.data[2].y) == [1, 5]


def test_scatter_is_deterministic_and_trend_fits_a_line():
    human = [1, 2, 3, 4, 5]
    pred = [2, 3, 4, 5, 6]
    a = figures.human_vs_judge_scatter(human, pred, seed=1)
    b = figures.human_vs_judge_scatter(human, pred, seed=1)
    assert list(a.data[0].x) == list(b.data[0].x)
    trend = a.data[1]
    assert trend.name == "trend"
    assert np.allclose(trend.y, [2, 6])
    assert len(a.data) == 2, "no diagonal without a scale"


def test_scatter_constant_judge_has_no_trend_and_checks_lengths():
    fig = figures.human_vs_judge_scatter([1, 2, 3], [3, 3, 3])
    assert [t.name for t in fig.data] == ["items"]
    with pytest.raises(ValueError):
        figures.human_vs_judge_scatter([1, 2], [1])


def test_correlation_bars_natural_level_first_with_ci_whiskers():
    levels = {
        "sample": {"pearson": 0.5, "spearman": 0.4, "kendall": 0.3,
                   "pearson_ci": [0.4, 0.6], "spearman_ci": [0.3, 0.5], "kendall_ci": [None, None]},
        "group": {"pearson": 0.2, "spearman": None, "kendall": 0.1,
                  "pearson_ci": [0.0, 0.3], "spearman_ci": [None, None], "kendall_ci": [0.05, 0.2]},
    }
    fig = figures.correlation_bars(levels, natural="group")
    assert [t.name for t in fig.data] == ["pearson", "spearman", "kendall"]
    pearson = fig.data[0]
    assert list(pearson.x) == ["group (natural)", "sample"]
    assert list(pearson.y) == [0.2, 0.5]
    assert np.allclose(pearson.error_y.array, [0.1, 0.1])
    assert np.allclose(pearson.error_y.arrayminus, [0.2, 0.1])
    spearman = fig.data[1]
    assert spearman.y[0] is None and math.isclose(spearman.y[1], 0.4)
    kendall = fig.data[2]
    assert list(kendall.error_y.array) == [pytest.approx(0.1), 0.0], "missing CI: no whisker"


def test_user_text_is_shown_literally_not_as_plotly_html():
    fig = figures.human_vs_judge_scatter([1, 2], [1, 2], ids=["<b>x</b>", "y"], aspect="<i>a</i>")
    assert list(fig.data[0].text) == ["&lt;b&gt;x&lt;/b&gt;", "y"]
    assert "<i>" not in fig.layout.title.text and "&lt;i&gt;a&lt;/i&gt;" in fig.layout.title.text


def test_comparison_figures_and_report():
    import pandas as pd

    from judge_engine import figures

    frame = pd.DataFrame({"run": [1, 2], "method": ["direct", "<b>geval</b>"], "level": ["sample", "sample"],
                          "spearman": [0.5, None], "spearman CI": [[0.3, 0.7], [None, None]],
                          "best": [True, False], "score calls": [20, 0]})
    bars = figures.comparison_bars(frame, ceiling=0.8)
    assert list(bars.data[0].y)[0] == 0.5 and "&lt;b&gt;" in bars.data[0].x[1]
    cost = figures.correlation_vs_cost(frame)
    assert cost.data[0].x[1] is None, "a run with no cost is not drawn on the log axis"
    grid = figures.scatter_grid([1, 2, 3], {"#1 direct": [1, 2, None], "#2 geval": [3, 2, 1]}, low=1, high=5)
    assert len(grid.data) == 4
    hist = figures.score_histograms([1, 2], {"#1": [2, 3]})
    assert [t.name for t in hist.data] == ["human", "#1"]
    page = figures.report_html("Compare <x>", {"Table": frame}, [bars, cost])
    assert page.count("<script") >= 2 and "Compare &lt;x&gt;" in page and "<b>geval</b>" not in page


def test_scatter_grid_draws_one_marker_per_distinct_pair_sized_by_its_count():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, 1600).astype(float).tolist()
    judge_a = rng.integers(1, 6, 1600).astype(float)
    judge_a[:7] = np.nan  # replies that gave no score are left out, not drawn as a pair
    scores = {f"#{k} direct": judge_a.tolist() if k == 1 else rng.integers(1, 6, 1600).astype(float).tolist()
              for k in range(1, 5)}
    grid = figures.scatter_grid(human, scores, low=1, high=5)
    markers = [t for t in grid.data if t.mode == "markers"]
    assert len(markers) == 4 and len(grid.data) == 8, "one marker trace and one diagonal per run"
    for trace, values in zip(markers, scores.values()):
        # a 1-5 judge against 1-5 humans has at most 25 distinct pairs: 1,600 items are not 1,600 markers
        assert len(trace.x) <= 25
        pairs = {(h, p) for h, p in zip(human, values) if not math.isnan(p)}
        assert set(zip(trace.x, trace.y)) == pairs
        assert sum(trace.customdata) == sum(not math.isnan(p) for p in values)
    first = markers[0]
    expected = {pair: sum(1 for h, p in zip(human, judge_a) if (h, p) == pair) for pair in zip(first.x, first.y)}
    assert list(first.customdata) == [expected[pair] for pair in zip(first.x, first.y)]
    biggest = int(np.argmax(first.customdata))
    assert first.marker.size[biggest] == pytest.approx(30.0) and min(first.marker.size) >= 6.0


def test_scatter_grid_of_distinct_pairs_keeps_every_item_and_empty_runs_draw_nothing():
    grid = figures.scatter_grid([1.0, 2.5, 3.25], {"#1 geval": [1.2, 2.4, 3.3], "#2 none": [None, None, None]},
                              low=1, high=5)
    points, empty = grid.data[0], grid.data[2]
    assert list(points.customdata) == [1, 1, 1] and list(points.marker.size) == pytest.approx([6.0, 6.0, 6.0])
    assert len(empty.x) == 0


def test_score_histograms_are_shares_per_score_counted_here():
    human = [1, 1, 2, 3, 5, None]
    judges = {"#1 direct": [2, 2, 2, 3, float("nan"), 4], "#2 <geval>": [1, 5, 5, 5, 5, 5]}
    fig = figures.score_histograms(human, judges)
    assert [t.type for t in fig.data] == ["bar", "bar", "bar"], "bars counted in Python, not browser binning"
    assert [t.name for t in fig.data] == ["human", "#1 direct", "#2 &lt;geval&gt;"]
    for trace, values in zip(fig.data, [human, *judges.values()]):
        finite = [float(v) for v in values if v is not None and v == v]
        assert list(trace.x) == [1.0, 2.0, 3.0, 4.0, 5.0], "every trace on the same scores"
        assert list(trace.customdata) == [finite.count(x) for x in trace.x]
        assert np.asarray(trace.y) == pytest.approx(np.asarray(trace.customdata) / len(finite))


def test_score_histograms_of_fine_scores_share_twenty_bins():
    rng = np.random.default_rng(1)
    fig = figures.score_histograms(rng.uniform(1, 5, 300).tolist(), {"#1": rng.uniform(1, 5, 200).tolist()})
    human, judge = fig.data
    assert len(human.x) == len(judge.x) == 20 and list(human.x) == pytest.approx(list(judge.x))
    assert sum(human.customdata) == 300 and sum(judge.customdata) == 200
    assert float(np.sum(judge.y)) == pytest.approx(1.0)

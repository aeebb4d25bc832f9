"""Tests for judge_engine.metrics against hand-computed values and independent formulas."""

from __future__ import annotations

import json
import math
import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from judge_engine import metrics
from judge_engine.metrics import (
    LEVELS,
    MIN_BOOTSTRAP_UNITS,
    Correlation,
    MetaEvalReport,
    correlations,
    level_correlations,
    meta_evaluate,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


# --------------------------------------------------------------------------- independent formulas
# Plain-Python textbook definitions, independent of scipy.


def pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def avg_ranks(x):
    order = sorted(range(len(x)), key=lambda i: x[i])
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x, y):
    return pearson(avg_ranks(x), avg_ranks(y))


def spearman_no_ties(x, y):
    n = len(x)
    d2 = sum((a - b) ** 2 for a, b in zip(avg_ranks(x), avg_ranks(y)))
    return 1 - 6 * d2 / (n * (n * n - 1))


def kendall_b(x, y):
    conc = disc = tx = ty = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0 and dy == 0:
            tx += 1
            ty += 1
        elif dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif dx * dy > 0:
            conc += 1
        else:
            disc += 1
    n0 = len(x) * (len(x) - 1) / 2
    return (conc - disc) / math.sqrt((n0 - tx) * (n0 - ty))


def all_three(x, y):
    return {"pearson": pearson(x, y), "spearman": spearman(x, y), "kendall": kendall_b(x, y)}


def assert_close(got: dict, want: dict, tol: float = 1e-12):
    assert set(got) == {"pearson", "spearman", "kendall"}
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=tol), k


# --------------------------------------------------------------------------- correlations


def test_correlations_hand_computed():
    h = [1, 2, 3, 4, 5]
    p = [2, 1, 4, 3, 5]
    # deviations (-2,-1,0,1,2) and (-1,-2,1,0,2): sxy = 8, sxx = syy = 10 -> r = 0.8
    # rank differences (-1,1,-1,1,0): 1 - 6*4/(5*24) = 0.8
    # 10 pairs, 2 discordant ((1,2), (3,4)) -> (8-2)/10 = 0.6
    got = correlations(h, p)
    assert_close(got, {"pearson": 0.8, "spearman": 0.8, "kendall": 0.6})
    assert spearman_no_ties(h, p) == pytest.approx(0.8)


def test_correlations_with_ties_match_independent_formulas():
    h = [1, 1, 2, 3, 3, 3, 4, 5, 5, 2]
    p = [0.2, 0.1, 0.1, 0.5, 0.4, 0.9, 0.9, 0.7, 1.0, 0.3]
    assert_close(correlations(h, p), all_three(h, p))


@pytest.mark.parametrize(
    "h,p",
    [([], []), ([1.0], [2.0]), ([2, 2, 2], [1, 2, 3]), ([1, 2, 3], [4, 4, 4])],
)
def test_correlations_undefined_is_nan_without_warnings(h, p):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = correlations(h, p)
    assert all(math.isnan(v) for v in got.values())


def test_correlations_drop_missing_pairs():
    got = correlations([1, 2, 3, 4, 5, 6], [2, 1, None, 4, 3, float("nan")])
    assert_close(got, all_three([1, 2, 4, 5], [2, 1, 4, 3]))


def test_correlations_length_mismatch():
    with pytest.raises(ValueError):
        correlations([1, 2, 3], [1, 2])


# --------------------------------------------------------------------------- levels


def test_sample_level_is_one_correlation():
    h = [1, 2, 3, 4, 5]
    p = [2, 1, 4, 3, 5]
    values, info = level_correlations(h, p, level="sample", systems=list("aabbc"))
    assert_close(values, {"pearson": 0.8, "spearman": 0.8, "kendall": 0.6})
    assert (info.n, info.n_groups, info.groups_skipped, info.n_systems) == (5, 0, 0, 3)


GROUP_DATA = [
    # group A: r = rho = 0.5 (sxy = 1, sxx = syy = 2), tau = (2 - 1)/3
    ("A", 1, 1), ("A", 2, 3), ("A", 3, 2),
    # group B: perfectly reversed -> -1, -1, -1
    ("B", 1, 3), ("B", 2, 2), ("B", 3, 1),
    # group C: human constant -> skipped
    ("C", 2, 1), ("C", 2, 2), ("C", 2, 3),
    # group D: a single item -> skipped
    ("D", 4, 5),
    # group E: prediction constant -> skipped
    ("E", 1, 4), ("E", 2, 4),
]


def test_group_level_mean_over_groups_skipping_constant():
    g, h, p = zip(*GROUP_DATA)
    values, info = level_correlations(h, p, level="group", groups=g)
    assert_close(
        values,
        {"pearson": (0.5 - 1) / 2, "spearman": (0.5 - 1) / 2, "kendall": (1 / 3 - 1) / 2},
    )
    assert info.n == 12
    assert info.n_groups == 2
    assert info.groups_skipped == 3


def test_group_level_unweighted_mean_of_group_sizes():
    # a 3-item and a 6-item group weigh the same in the mean
    g = ["x"] * 3 + ["y"] * 6
    h = [1, 2, 3, 1, 2, 3, 4, 5, 6]
    p = [1, 3, 2, 2, 1, 3, 5, 4, 6]
    values, _ = level_correlations(h, p, level="group", groups=g)
    want_x, want_y = all_three(h[:3], p[:3]), all_three(h[3:], p[3:])
    assert_close(values, {k: (want_x[k] + want_y[k]) / 2 for k in want_x})


def test_group_level_all_skipped_is_nan():
    values, info = level_correlations([1, 1, 2, 2], [1, 2, 3, 4], level="group", groups="aabb")
    assert all(math.isnan(v) for v in values.values())
    assert (info.n_groups, info.groups_skipped) == (0, 2)


def test_system_level_averages_per_system():
    s = ["X", "X", "Y", "Z", "Z", "Z"]
    h = [1, 3, 4, 3, 3, 3]
    p = [2, 2, 5, 1, 2, 3]
    # system means: human (2, 4, 3), predicted (2, 5, 2)
    values, info = level_correlations(h, p, level="system", systems=s)
    assert values["pearson"] == pytest.approx(3 / math.sqrt(12))  # sxy = 3, sxx = 2, syy = 6
    assert values["spearman"] == pytest.approx(spearman([2, 4, 3], [2, 5, 2]))
    # pairs XY, YZ concordant, XZ tied in prediction: 2 / sqrt(3 * 2)
    assert values["kendall"] == pytest.approx(2 / math.sqrt(6))
    assert values["kendall"] == pytest.approx(kendall_b([2, 4, 3], [2, 5, 2]))
    assert (info.n, info.n_systems, info.n_groups) == (6, 3, 0)


def test_level_requirements():
    with pytest.raises(ValueError):
        level_correlations([1, 2], [1, 2], level="group")
    with pytest.raises(ValueError):
        level_correlations([1, 2], [1, 2], level="system")
    with pytest.raises(ValueError):
        level_correlations([1, 2], [1, 2], level="corpus")
    with pytest.raises(ValueError):
        level_correlations([1, 2], [1, 2], level="group", groups=["a"])
    assert LEVELS == ("sample", "group", "system")


# --------------------------------------------------------------------------- meta_evaluate


def test_missing_predictions_counted_and_excluded():
    h = [1, 2, 3, 4, 5, 6, 7]
    p = [2, None, 1, float("nan"), 4, 3, 5]
    rep = meta_evaluate(h, p, n_bootstrap=0)
    assert rep.n == 5
    assert rep.n_missing == 2
    kept_h, kept_p = [1, 3, 5, 6, 7], [2, 1, 4, 3, 5]
    want = all_three(kept_h, kept_p)
    for m in ("pearson", "spearman", "kendall"):
        assert getattr(rep, m).value == pytest.approx(want[m])
        assert math.isnan(getattr(rep, m).ci_low)  # bootstrap disabled


def test_missing_predictions_removed_before_grouping():
    g, h, p = map(list, zip(*GROUP_DATA))
    # a missing prediction turns group A into a 2-item group, still valid
    p[0] = None
    rep = meta_evaluate(h, p, level="group", groups=g, n_bootstrap=0)
    assert rep.n_missing == 1 and rep.n == 11
    assert rep.n_groups == 2 and rep.groups_skipped == 3
    assert rep.pearson.value == pytest.approx((pearson([2, 3], [3, 2]) - 1) / 2)


def _noisy(n, seed=1, groups=10):
    rng = np.random.default_rng(seed)
    h = rng.integers(1, 6, size=n).astype(float)
    p = h + rng.normal(0, 1.2, size=n)
    g = [i % groups for i in range(n)]
    s = [f"sys{i // groups % 6}" for i in range(n)]
    return h, p, g, s


@pytest.mark.parametrize("level", LEVELS)
def test_ci_contains_point_estimate_and_is_deterministic(level):
    h, p, g, s = _noisy(240)
    a = meta_evaluate(h, p, level=level, groups=g, systems=s, n_bootstrap=300, seed=7)
    b = meta_evaluate(h, p, level=level, groups=g, systems=s, n_bootstrap=300, seed=7)
    c = meta_evaluate(h, p, level=level, groups=g, systems=s, n_bootstrap=300, seed=8)
    assert a == b
    assert a != c
    point, _ = level_correlations(h, p, level=level, groups=g, systems=s)
    for m in ("pearson", "spearman", "kendall"):
        corr = getattr(a, m)
        assert corr.value == point[m]  # point estimate on the full data
        assert corr.ci_low <= corr.value <= corr.ci_high
        assert corr.ci_low < corr.ci_high


def test_wider_confidence_gives_wider_interval():
    h, p, _, _ = _noisy(100)
    narrow = meta_evaluate(h, p, n_bootstrap=400, confidence=0.5)
    wide = meta_evaluate(h, p, n_bootstrap=400, confidence=0.99)
    assert wide.pearson.ci_low < narrow.pearson.ci_low
    assert wide.pearson.ci_high > narrow.pearson.ci_high


def test_vectorised_bootstrap_rows_match_scipy():
    rng = np.random.default_rng(0)
    H = rng.integers(1, 5, size=(20, 12)).astype(float)
    P = H + rng.integers(-1, 2, size=(20, 12))
    H[3] = 2.0  # a constant row
    P[5, 4] = np.nan  # a row with an absent entry goes the slow path
    got = metrics._rowwise_correlations(H, P)
    for i in range(20):
        want = correlations(H[i], P[i])
        for j, m in enumerate(("pearson", "spearman", "kendall")):
            if math.isnan(want[m]):
                assert math.isnan(got[i, j])
            else:
                assert got[i, j] == pytest.approx(want[m], abs=1e-12)


def _percentiles(reps, confidence=0.95):
    a = (1 - confidence) / 2 * 100
    return np.nanpercentile(np.asarray(reps), [a, 100 - a], axis=0)


def test_group_bootstrap_resamples_whole_groups():
    h, p, g, s = _noisy(120, seed=3, groups=12)
    h[g.index(0) :: 12] = 3.0  # make group 0 constant on the human side
    rep = meta_evaluate(h, p, level="group", groups=g, n_bootstrap=50, seed=11)
    assert rep.groups_skipped == 1
    # naive reference: same draws of group indices, recompute the group mean
    rng = np.random.default_rng(11)
    draws = rng.integers(0, 12, size=(50, 12))
    g_arr = np.asarray(g)
    reps = []
    for row in draws:
        vals = []
        for k in row:
            hk, pk = h[g_arr == k], p[g_arr == k]
            if len(set(hk)) > 1 and len(set(pk)) > 1:
                vals.append([pearson(hk, pk), spearman(hk, pk), kendall_b(hk, pk)])
        reps.append(np.mean(vals, axis=0))
    lo, hi = _percentiles(reps)
    assert [rep.pearson.ci_low, rep.spearman.ci_low, rep.kendall.ci_low] == pytest.approx(lo)
    assert [rep.pearson.ci_high, rep.spearman.ci_high, rep.kendall.ci_high] == pytest.approx(hi)


def test_system_bootstrap_resamples_whole_groups():
    h, p, g, s = _noisy(120, seed=5, groups=20)
    rep = meta_evaluate(h, p, level="system", groups=g, systems=s, n_bootstrap=40, seed=2)
    assert (rep.n_systems, rep.n_groups) == (6, 20)
    rng = np.random.default_rng(2)
    draws = rng.integers(0, 20, size=(40, 20))
    reps = []
    for row in draws:
        idx = [i for k in row for i in range(len(g)) if g[i] == k]
        systems = sorted(set(s))
        mh = [np.mean([h[i] for i in idx if s[i] == x]) for x in systems]
        mp = [np.mean([p[i] for i in idx if s[i] == x]) for x in systems]
        reps.append([pearson(mh, mp), spearman(mh, mp), kendall_b(mh, mp)])
    lo, hi = _percentiles(reps)
    assert [rep.pearson.ci_low, rep.spearman.ci_low, rep.kendall.ci_low] == pytest.approx(lo)
    assert [rep.pearson.ci_high, rep.spearman.ci_high, rep.kendall.ci_high] == pytest.approx(hi)


@pytest.mark.parametrize("level,with_groups", [("sample", False), ("sample", True), ("group", True), ("system", False),
                                               ("system", True)])
def test_bootstrap_in_blocks_gives_the_same_intervals_whatever_the_block_size(monkeypatch, level, with_groups):
    h, p, g, s = _noisy(300, seed=9, groups=30)
    kwargs = dict(level=level, groups=g if with_groups else None, systems=s, n_bootstrap=101, seed=4)
    whole = meta_evaluate(h, p, **kwargs)
    for cells in (1, 7, 1000):  # one resample per block, a few, many
        monkeypatch.setattr(metrics._resample, "BOOTSTRAP_CHUNK_CELLS", cells)  # where _block_sizes reads it
        assert meta_evaluate(h, p, **kwargs) == whole


def test_block_sizes_cover_every_resample():
    assert metrics._block_sizes(10, 0) == [10]
    assert sum(metrics._block_sizes(1000, 100_000)) == 1000
    assert max(metrics._block_sizes(1000, 100_000)) == max(1, metrics.BOOTSTRAP_CHUNK_CELLS // 100_000)
    assert metrics._block_sizes(3, 10 * metrics.BOOTSTRAP_CHUNK_CELLS) == [1, 1, 1]
    assert metrics._block_sizes(0, 5) == []


@pytest.mark.parametrize("level", ["sample", "system"])
def test_bootstrap_memory_stays_bounded_at_100k_items(level):
    """Drawing all resamples at once needed ``n_bootstrap x n`` arrays: peaks of 368 MB (sample, 40
    resamples) and 963 MB (system, 400) here, about 9 GB at 1,000 x 100k; in blocks about 94 and 26 MB."""
    import tracemalloc

    n = 100_000
    rng = np.random.default_rng(0)
    h = rng.integers(1, 6, n).astype(float)
    p = h + rng.normal(0, 1, n)
    systems = rng.integers(0, 16, n)
    n_bootstrap = 40 if level == "sample" else 400
    tracemalloc.start()
    try:
        rep = meta_evaluate(h, p, level=level, systems=systems, n_bootstrap=n_bootstrap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rep.pearson.ci_low < rep.pearson.value < rep.pearson.ci_high
    assert peak < 160e6, f"peak {peak / 1e6:.0f} MB"


def test_report_to_dict_is_json_with_nan_as_none():
    rep = meta_evaluate([1, 2, 3], [2, 2, 2], n_bootstrap=20)
    d = rep.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["pearson"] is None and d["pearson_ci"] == [None, None]
    assert list(d) == [
        "level", "pearson", "spearman", "kendall", "pearson_ci", "spearman_ci", "kendall_ci",
        "n", "n_missing", "n_groups", "groups_skipped", "n_systems", "ci_note", "resampled",
    ]
    rep2 = MetaEvalReport("sample", *(Correlation(0.5, 0.25, 0.75),) * 3, 3, 0, 0, 0, 0)
    assert rep2.to_dict()["kendall_ci"] == [0.25, 0.75]
    with pytest.raises(AttributeError):
        rep2.n = 4  # frozen


def test_meta_evaluate_argument_checks():
    with pytest.raises(ValueError):
        meta_evaluate([1, 2], [1, 2], confidence=1.5)
    with pytest.raises(ValueError):
        meta_evaluate([1, 2], [1, 2], n_bootstrap=-1)
    with pytest.raises(ValueError):
        meta_evaluate([1, 2], [1, 2], level="system")


# --------------------------------------------------------------------------- real data


def _summeval_items():
    path = DATA / "summeval" / "summeval_ctc.jsonl"
    if not path.exists():
        pytest.skip(f"benchmark data missing: {path}")
    items = []
    with path.open(encoding="utf-8") as f:
        for doc_id, line in enumerate(f):
            for sys_id, out in json.loads(line)["sys_summs"].items():
                items.append((doc_id, sys_id, out["scores"]))
    return items


def test_summeval_group_level_over_100_documents():
    items = _summeval_items()
    assert len(items) == 1600
    h = [sc["fluency"] for _, _, sc in items]
    # deterministic perturbation of the human score as the "judge"
    p = [x + ((i * 7919) % 13 - 6) / 4 for i, x in enumerate(h)]
    g = [d for d, _, _ in items]
    s = [x for _, x, _ in items]
    rep = meta_evaluate(h, p, level="group", groups=g, systems=s, n_bootstrap=200)
    assert rep.n == 1600 and rep.n_missing == 0 and rep.n_systems == 16
    assert rep.n_groups + rep.groups_skipped == 100

    # independent per-document loop (UniEval convention: skip docs with a single distinct value)
    per_doc = []
    for d in range(100):
        hd = [h[i] for i in range(1600) if g[i] == d]
        pd_ = [p[i] for i in range(1600) if g[i] == d]
        if len(set(hd)) == 1 or len(set(pd_)) == 1:
            continue
        per_doc.append((pearson(hd, pd_), spearman(hd, pd_), kendall_b(hd, pd_)))
    assert rep.n_groups == len(per_doc)
    want = np.mean(per_doc, axis=0)
    assert [rep.pearson.value, rep.spearman.value, rep.kendall.value] == pytest.approx(want, abs=1e-12)
    assert rep.kendall.ci_low <= rep.kendall.value <= rep.kendall.ci_high


def test_a_single_group_gives_no_interval_rather_than_a_zero_width_one():
    human = [1, 2, 3, 4, 5, 2]
    pred = [1, 3, 2, 5, 4, 2]
    for level in ("group", "system"):
        report = meta_evaluate(human, pred, level=level, groups=["g"] * 6, systems=list("abcdef"), n_bootstrap=200)
        d = report.to_dict()
        assert d["pearson"] is not None, level
        assert d["pearson_ci"] == [None, None], (level, d["pearson_ci"])
    sample = meta_evaluate(human, pred, level="sample", n_bootstrap=200).to_dict()
    assert sample["pearson_ci"][0] < sample["pearson"] < sample["pearson_ci"][1]


def test_a_group_level_figure_over_too_few_groups_has_no_interval_and_says_why():
    rng = np.random.default_rng(3)
    for n_groups, expect_interval in ((3, False), (MIN_BOOTSTRAP_UNITS, True)):
        groups = np.repeat(np.arange(n_groups), 4)
        human = rng.normal(size=groups.size)
        pred = human + rng.normal(scale=0.5, size=groups.size)
        rep = meta_evaluate(human, pred, level="group", groups=groups, n_bootstrap=200)
        assert math.isfinite(rep.pearson.value)  # the point estimate is always given
        if expect_interval:
            assert math.isfinite(rep.pearson.ci_low) and rep.ci_note == ""
        else:
            assert math.isnan(rep.pearson.ci_low) and math.isnan(rep.pearson.ci_high)
            assert rep.ci_note == f"too few groups for an interval (3 < {MIN_BOOTSTRAP_UNITS})"
            assert rep.to_dict()["pearson_ci"] == [None, None]


@pytest.mark.parametrize("statistic", ["pearson", "spearman"])
def test_sample_correlation_gives_meta_evaluates_figure_and_interval_for_one_coefficient(statistic):
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    y[3] = np.nan
    one = metrics.sample_correlation(x, y, statistic=statistic, seed=4)
    full = getattr(metrics.meta_evaluate(x, y, seed=4), statistic)
    assert one.value == pytest.approx(full.value, abs=1e-12)
    assert (one.ci_low, one.ci_high) == pytest.approx((full.ci_low, full.ci_high), abs=1e-12)
    few = metrics.sample_correlation(x[:4], y[:4], statistic=statistic)
    assert math.isnan(few.ci_low) and math.isnan(few.ci_high)


def test_correlation_p_value_and_items_needed():
    rng = np.random.default_rng(1)
    x = rng.normal(size=12)
    y = x + 2 * rng.normal(size=12)
    r, p = stats.pearsonr(x, y)
    assert metrics.correlation_p_value(r, 12) == pytest.approx(p, rel=1e-9)
    assert metrics.correlation_p_value(0.576, 12) == pytest.approx(0.05, abs=1e-3)
    needed = metrics.items_for_significance(0.5)
    assert metrics.correlation_p_value(0.5, needed) < 0.05 <= metrics.correlation_p_value(0.5, needed - 1)
    assert metrics.items_for_significance(-0.4) is None and metrics.items_for_significance(0.001) is None
    assert math.isnan(metrics.correlation_p_value(0.9, 2))


def test_selection_fitness_survives_its_stored_form_with_nan_as_null():
    fit = metrics.SelectionFitness(value=math.nan, correlation=0.42, coverage=0.75, n_scored=6, n=8, reason="few")
    stored = fit.to_dict()
    assert stored["value"] is None
    back = metrics.SelectionFitness.from_dict(stored)
    assert math.isnan(back.value) and back.correlation == pytest.approx(0.42)
    assert (back.n_scored, back.n, back.reason) == (6, 8, "few") and back.coverage == pytest.approx(0.75)


def test_one_coefficient_is_the_same_as_in_all_three_and_drops_the_same_pairs():
    rng = np.random.default_rng(7)
    h = rng.normal(size=40)
    p = h + rng.normal(size=40)
    p[3], h[9] = math.nan, math.nan
    every = metrics.correlations(h, p)
    for name in metrics.COEFFICIENTS:
        assert metrics.correlation(h, p, name) == pytest.approx(every[name])
    assert math.isnan(metrics.correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], "spearman"))
    with pytest.raises(ValueError, match="unknown coefficient"):
        metrics.correlation(h, p, "tau")


def test_spearman_is_scipys_on_ties_too():
    rng = np.random.default_rng(11)
    h = rng.integers(1, 6, size=60).astype(float)  # many ties, as human scores have
    p = h + rng.integers(-2, 3, size=60)
    assert metrics.correlation(h, p, "spearman") == pytest.approx(stats.spearmanr(h, p)[0], abs=1e-12)
    assert metrics.correlations(h, p)["spearman"] == pytest.approx(stats.spearmanr(h, p)[0], abs=1e-12)


@pytest.mark.parametrize("n", [5, 40, 300])
def test_spearman_resamples_from_draw_counts_equal_those_of_sorting_each_resample(n):
    from judge_engine.metrics import _resample_weights, _resampled_spearman, _rowwise_correlations

    rng = np.random.default_rng(n)
    a = rng.integers(1, 5, size=n).astype(float)  # heavy ties, as on a 1-5 scale
    b = a + rng.normal(0, 1.5, size=n).round()
    idx = np.random.default_rng(3).integers(0, n, size=(200, n))
    sorted_each = _rowwise_correlations(a[idx], b[idx], only="spearman")[:, 1]
    counted = _resampled_spearman(a, b, _resample_weights(np.random.default_rng(3), n, 200))
    assert np.array_equal(np.isnan(sorted_each), np.isnan(counted))
    assert np.allclose(sorted_each[~np.isnan(counted)], counted[~np.isnan(counted)], atol=1e-10)
    if n == 5:
        assert np.isnan(counted).any(), "a resample of one value has no correlation"


def test_the_items_interval_resamples_whole_groups_where_items_share_one():
    """Issue 63: at the sample level, items of one source go into a resample together (the one rule for evidence);
    groups of one item, or ``independent``, resample items; fewer than five sources give no interval, said."""
    rng = np.random.default_rng(11)
    g = np.repeat(np.arange(12), 5)
    h = rng.normal(size=60) + np.repeat(rng.normal(size=12), 5)
    p = h + np.repeat(rng.normal(size=12), 5) + rng.normal(size=60)
    whole = meta_evaluate(h, p, groups=g, n_bootstrap=400, seed=1)
    assert whole.resampled == "groups" and whole.n_groups == 12 and whole.ci_note == ""
    for kwargs in ({}, {"groups": np.arange(60)}, {"groups": g, "independent": True}):
        alone = meta_evaluate(h, p, n_bootstrap=400, seed=1, **kwargs)
        assert alone.resampled == "items" and alone.n_groups == 0
        assert alone.pearson.value == pytest.approx(whole.pearson.value)
    for m in metrics.COEFFICIENTS:  # the same resamples, one coefficient at a time
        one = metrics.sample_correlation(h, p, statistic=m, groups=g, n_bootstrap=400, seed=1)
        assert (one.ci_low, one.ci_high) == pytest.approx((getattr(whole, m).ci_low, getattr(whole, m).ci_high))
    few = meta_evaluate(h[:20], p[:20], groups=g[:20], n_bootstrap=400)
    assert few.resampled == "" and math.isnan(few.pearson.ci_low) and "too few groups" in few.ci_note
    assert not math.isnan(meta_evaluate(h[:20], p[:20], groups=g[:20], independent=True).pearson.ci_low)


def test_whole_groups_drawn_in_buckets_of_equal_length_are_the_groups_drawn():
    rng = np.random.default_rng(2)
    codes = np.array([0, 0, 0, 1, 2, 2, 3, 3, 3, 3])
    buckets, order = metrics.group_resamples(codes, 4, 50, rng)
    assert sorted(order.tolist()) == list(range(50)) and sum(b.shape[0] for b in buckets) == 50
    sizes = np.bincount(codes)
    for rows in buckets:
        for row in rows:
            drawn = np.bincount(codes[row], minlength=4)
            assert np.all(drawn % sizes == 0) and drawn.sum() == row.size  # whole groups only
            assert (drawn // sizes).sum() == 4  # four groups drawn


@pytest.mark.parametrize("units", [5, 10, 40])
def test_an_expanded_p_is_significant_exactly_where_the_expanded_interval_excludes_zero(units):
    from judge_engine.metrics._paired import expanded_p, expanded_tail

    edge = 2 * expanded_tail(0.95, units)  # the percentile p at which the expanded 95% interval touches zero
    assert expanded_p(edge, units) == pytest.approx(0.05, rel=1e-9)
    assert expanded_p(0.9 * edge, units) < 0.05 < expanded_p(1.1 * edge, units)
    assert expanded_p(0.02, units) > 0.02 and expanded_p(1.0, units) == 1.0 and expanded_p(0.0, units) == 0.0


def test_holm_adjusts_the_i_th_smallest_p_by_k_minus_i_and_keeps_the_order():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1: 0.03, 0.06, 0.04, then the running maximum makes the last 0.06
    assert metrics.holm_adjusted([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert metrics.holm_adjusted([0.5, None, 0.6]) == [pytest.approx(1.0), None, pytest.approx(1.0)]
    assert metrics.holm_adjusted([]) == []

"""Comparison of finished runs: alignment, correlations with CIs, paired test, triage, label suggestions."""

import math

import numpy as np
import pytest

from judge_engine import compare
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.runs import RunSpec, create_run, execute_run


@pytest.fixture
def dataset():
    """40 outputs in 10 groups over 4 systems; human quality = 1 + (i % 5)."""
    samples = tuple(Sample(id=f"s{i:02d}", input=f"source {i // 4}", output=f"output {i} " + "x" * (i % 5),
                           group_id=f"g{i // 4}", system_id=f"sys{i % 4}", human={"quality": float(1 + i % 5)},
                           annotators={"quality": [float(1 + i % 5), float(1 + (i + 1) % 5), float(1 + i % 5)]})
                    for i in range(40))
    return Dataset(name="toy", task="toy", aspects=(Aspect("quality", 1, 5, "How good it is."),), samples=samples,
                   natural_level="group")


def good(messages, params):
    """A judge that reads the number of x's: perfectly aligned with the human score."""
    text = messages[0]["content"]
    output = text.split("<<<OUTPUT>>>")[-1].split("<<<END OUTPUT>>>")[0]
    return f"[[{1 + output.count('x')}]]"


def noisy(messages, params):
    return f"[[{1 + len(messages[0]['content']) % 5}]]"


def run(store, responder, *, method="direct", test_size=20, seed=0):
    """A finished run judged by ``responder`` (its own model id, so judges never share cached answers)."""
    run_id = create_run(store, RunSpec(method=method, dataset="toy", aspect="quality", train_size=8,
                                       test_size=test_size, seed=seed))
    backend = FakeBackend(responder, model_id=f"fake-{id(responder)}")
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=backend))
    return store.run(run_id)


def test_runs_on_the_same_items_are_compared_and_the_better_one_wins(store, dataset):
    store.save_dataset(dataset)
    a, b = run(store, good), run(store, noisy)
    assert compare.split_key(a) == compare.split_key(b)
    groups = compare.runs_by_split(compare.finished_runs(store, "toy", "quality"))
    assert [r.id for r in list(groups.values())[0]] == [b.id, a.id]  # newest first
    aligned = compare.align(store, [a, b])
    assert len(aligned.ids) == 20
    frame = compare.comparison_frame(store, dataset, aligned, level="sample", n_bootstrap=200)
    best = frame[frame["best"]].iloc[0]
    assert best["run"] == a.id and best["spearman"] == pytest.approx(1.0)
    worse = frame[frame["run"] == b.id].iloc[0]
    assert worse["Δspearman vs best"] < 0 and 0 <= worse["p vs best"] <= 1
    assert worse["significantly worse"] == (worse["p vs best"] < 0.05)
    assert worse["score calls"] == 20 and worse["fit calls"] == 0 and worse["parse failures"] == 0
    lo, hi = best["spearman CI"]
    assert lo - 1e-9 <= best["spearman"] <= hi + 1e-9  # a perfect correlation may read 0.9999999999999999


def test_runs_on_different_items_are_refused_unless_the_common_subset_is_asked(store, dataset):
    store.save_dataset(dataset)
    a, b = run(store, good, test_size=20), run(store, good, test_size=12)
    with pytest.raises(compare.NotComparable, match="different items"):
        compare.align(store, [a, b])
    aligned = compare.align(store, [a, b], common_subset=True)
    # --test 12 holds 15 items here: 3 from each of 5 sources (a group-level test spans an interval's groups)
    assert 0 < len(aligned.ids) <= len(b.split.test_ids) < len(a.split.test_ids)


def test_paired_bootstrap_is_paired_and_two_sided():
    rng = np.random.default_rng(1)
    human = rng.normal(size=60)
    a = human + rng.normal(scale=0.2, size=60)
    b = human + rng.normal(scale=2.0, size=60)
    diff, p = compare.paired_bootstrap(human, a, b, n_bootstrap=200)
    assert diff > 0 and p < 0.05
    same_diff, same_p = compare.paired_bootstrap(human, a, a, n_bootstrap=200)
    assert same_diff == 0 and same_p == 1.0
    groups = [str(i // 6) for i in range(60)]
    gdiff, gp = compare.paired_bootstrap(human, a, b, level="group", groups=groups, n_bootstrap=200)
    assert gdiff > 0 and 0 <= gp <= 1


def test_paired_bootstrap_on_one_coefficient_skips_the_others_and_gives_the_same_p(monkeypatch):
    from scipy import stats

    from judge_engine import metrics

    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, 300).astype(float)
    a, b = human + rng.integers(-1, 2, 300), rng.integers(1, 6, 300).astype(float)
    H, A = human[rng.integers(0, 300, (50, 300))], a[rng.integers(0, 300, (50, 300))]
    full = metrics._rowwise_correlations(H, A)
    for k, statistic in enumerate(compare.STATISTICS):
        one = metrics._rowwise_correlations(H, A, only=statistic)
        assert one[:, k] == pytest.approx(full[:, k], abs=1e-15)
        assert np.isnan(np.delete(one, k, axis=1)).all()
    taus = []
    kendalltau = stats.kendalltau
    monkeypatch.setattr(stats, "kendalltau", lambda *x, **kw: taus.append(1) or kendalltau(*x, **kw))
    diff, p = compare.paired_bootstrap(human, a, b, statistic="spearman", n_bootstrap=300)
    assert len(taus) == 2, "Kendall's tau of the two point estimates only, none of the 2 x 300 resamples"
    monkeypatch.setattr(stats, "kendalltau", kendalltau)
    expected_diff = metrics.correlations(human, a)["spearman"] - metrics.correlations(human, b)["spearman"]
    idx = np.random.default_rng(0).integers(0, 300, size=(300, 300))
    diffs = metrics._rowwise_correlations(human[idx], a[idx])[:, 1] - metrics._rowwise_correlations(
        human[idx], b[idx])[:, 1]
    assert diff == pytest.approx(expected_diff) and diff > 0
    assert p == pytest.approx(min(1.0, 2 * min(np.mean(diffs <= 0), np.mean(diffs >= 0))))


def test_missing_scores_are_excluded_and_counted(store, dataset):
    store.save_dataset(dataset)
    a = run(store, good)
    b = run(store, lambda m, p: "no idea" if "x" * 3 in m[0]["content"] else good(m, p))
    aligned = compare.align(store, [a, b])
    frame = compare.comparison_frame(store, dataset, aligned, level="group", n_bootstrap=100)
    row = frame[frame["run"] == b.id].iloc[0]
    assert row["parse failures"] == int(np.isnan(aligned.scores[b.id]).sum()) > 0
    assert row["n"] == 20 - row["parse failures"]


def test_triage_puts_the_worst_judged_item_first(store, dataset):
    store.save_dataset(dataset)
    a = run(store, good)
    b = run(store, lambda m, p: "[[5]]")
    triage = compare.disagreement_frame(dataset, compare.align(store, [a, b]))
    errors = triage["mean |judge - human| (0-1)"].tolist()
    assert errors == sorted(errors, reverse=True)
    assert triage.iloc[0]["human"] == 1.0  # judge b said 5 where the humans said 1


def test_label_next_prefers_disputed_items_and_spreads_over_groups(store, dataset):
    store.save_dataset(dataset)
    aligned = compare.align(store, [run(store, good), run(store, lambda m, p: "[[5]]")])
    picks = compare.label_next(dataset, aligned, k=5)
    assert len(picks) == 5 and picks["group"].nunique() == 5
    spreads = picks["judge spread (0-1)"].tolist()
    assert spreads[0] == max(spreads) > 0
    with pytest.raises(ValueError, match="two runs"):
        compare.label_next(dataset, compare.align(store, [aligned.runs[0]]))


def _four_runs(store, dataset):
    store.save_dataset(dataset)
    runs = [run(store, good), run(store, noisy), run(store, lambda m, p: f"[[{1 + len(m[0]['content']) % 3}]]"),
            run(store, lambda m, p: f"[[{5 - m[0]['content'].count('x') % 5}]]")]
    return compare.align(store, runs)


def test_comparing_four_runs_at_group_level_computes_each_runs_group_table_once(store, dataset, monkeypatch):
    from collections import OrderedDict

    from judge_engine import metrics

    aligned = _four_runs(store, dataset)
    n_groups = len({dataset.by_id()[i].group_id for i in aligned.ids})
    # patched in metrics._levels, the module that keeps the tables and reads correlations
    monkeypatch.setattr(metrics._levels, "_group_tables", OrderedDict())  # none left by other tests
    calls = []
    real = metrics.correlations
    monkeypatch.setattr(metrics._levels, "correlations", lambda h, p: calls.append(len(h)) or real(h, p))
    frame = compare.comparison_frame(store, dataset, aligned, level="group", n_bootstrap=200)
    assert frame["best"].sum() == 1 and frame["p vs best"].notna().sum() == 3
    # one scipy triple per group and run; each run's report and each paired test against the best (its point
    # estimate and resamples, for both runs) asked for the same tables: 16 tables for 4 runs before they were kept
    # (the paired tests themselves are at the items' level here: 5 groups are too few for a group-level claim,
    # judge_engine.evidence; their items' figures are the calls over all 20 items)
    group_calls = [c for c in calls if c < len(aligned.ids)]
    assert 0 < len(group_calls) <= 4 * n_groups
    assert set(frame["tested at"]) == {"sample"} and set(frame["resampled"]) == {"groups"}
    table = next(iter(metrics._levels._group_tables.values()))
    assert table.flags.writeable is False, "a kept table cannot be changed by whoever asked for it"


def test_kept_group_tables_leave_the_comparison_unchanged(store, dataset, monkeypatch):
    from collections import OrderedDict

    from judge_engine import metrics

    aligned = _four_runs(store, dataset)
    monkeypatch.setattr(metrics._levels, "_group_tables", OrderedDict())
    kept = compare.comparison_frame(store, dataset, aligned, level="group", statistic="pearson", n_bootstrap=300)
    monkeypatch.setattr(metrics._levels, "GROUP_TABLE_MEMO", 0)  # every table computed afresh
    monkeypatch.setattr(metrics._levels, "_group_tables", OrderedDict())
    fresh = compare.comparison_frame(store, dataset, aligned, level="group", statistic="pearson", n_bootstrap=300)
    assert len(metrics._levels._group_tables) == 0
    assert list(kept["run"]) == list(fresh["run"]) and list(kept["best"]) == list(fresh["best"])
    for column in ("pearson", "spearman", "kendall", "Δpearson vs best", "p vs best"):
        assert kept[column].to_numpy(dtype=float) == pytest.approx(fresh[column].to_numpy(dtype=float), nan_ok=True,
                                                                   rel=1e-12, abs=1e-12), column
    for column in ("pearson CI", "spearman CI", "kendall CI"):
        assert np.asarray(kept[column].tolist(), dtype=float) == pytest.approx(
            np.asarray(fresh[column].tolist(), dtype=float), nan_ok=True, rel=1e-12, abs=1e-12), column


def test_label_next_spread_is_each_items_standard_deviation_over_the_judges(store, dataset):
    aligned = _four_runs(store, dataset)
    picks = compare.label_next(dataset, aligned, k=20)
    matrix = np.vstack([(aligned.scores[r.id] - 1) / 4 for r in aligned.runs])
    expected = {item: float(np.nanstd(matrix[:, j])) for j, item in enumerate(aligned.ids)}
    assert len(picks) == 20
    assert picks["judge spread (0-1)"].tolist() == pytest.approx([expected[i] for i in picks["item"]], abs=1e-12)


def test_human_ceiling_from_per_annotator_scores(dataset):
    ids = [s.id for s in dataset.samples]
    ceiling = compare.human_ceiling(dataset, "quality", ids)
    assert ceiling["annotators"] == 3 and 0 < ceiling["spearman"] < 1
    assert -1 < ceiling["krippendorff_alpha"] < 1
    plain = Dataset(name="p", task="t", aspects=dataset.aspects,
                    samples=tuple(Sample(id=s.id, input=s.input, output=s.output, group_id=s.group_id,
                                         human=s.human) for s in dataset.samples))
    assert compare.human_ceiling(plain, "quality", ids) is None


def test_fit_cost_is_split_from_scoring_cost(store, dataset):
    store.save_dataset(dataset)
    geval = run(store, lambda m, p: "1. Read.\n2. Rate." if "steps" in m[0]["content"].lower() else "[[3]]",
                method="geval")
    cost = compare.cost_split(store, geval)
    assert cost["fit"]["calls"] == 1 and cost["total"]["calls"] == 1 + cost["score"]["calls"]
    assert math.isclose(cost["total"]["calls"], geval.ledger.calls)


def test_transferred_judge_scores_another_dataset_on_its_scale(store, dataset, tiny_dataset):
    from judge_engine.methods import Judge

    store.save_dataset(dataset)
    store.save_dataset(tiny_dataset)
    source = run(store, good)
    judge = Judge.from_dict(source.judge)
    target = Aspect("quality", 0, 10, "How good it is, 0-10.")
    moved = compare.transfer_judge(judge, target)
    assert moved.aspect["low"] == 0 and moved.aspect["high"] == 10 and moved.state == judge.state
    assert compare.transfer_targets(store, "toy") == {"tiny": ["quality"]}
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0,
                                       test_size=6), judge=compare.transfer_judge(judge, tiny_dataset.aspects[0]))
    summary = execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(good)))
    assert summary.n == 6 and not store.run_events(run_id, kind="fitted")


def test_item_explanation_is_the_aggregators_shap_waterfall_and_none_without_an_aggregator(store):
    """An HD-Eval run (scripted LLM, linear aggregator) explains an item's score; a direct run explains nothing."""
    from tests.test_hd_eval import _dataset, scripted

    store.save_dataset(_dataset())
    spec = RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                   params={"aggregator": "lr", "max_layers": 2, "pi_repeats": 2})
    hd_id = create_run(store, spec)
    execute_run(store, hd_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(scripted, model_id="hd")))
    direct_id = create_run(store, RunSpec(method="direct", dataset="toy", aspect="clarity", train_size=12,
                                          test_size=6))
    execute_run(store, direct_id, llm=make_llm(LLMConfig(), store=store,
                                                backend=FakeBackend(lambda m, p: "[[3]]", model_id="d")))
    aligned = compare.align(store, [store.run(hd_id), store.run(direct_id)])
    item = aligned.ids[0]
    verdict = aligned.verdicts[hd_id][item]

    explained = compare.item_explanation(store, hd_id, item)
    assert explained is not None and explained.run_id == hd_id and explained.target == "clarity"
    row = explained.shap.loc[item]
    assert set(row.index) == set(verdict.criteria) and explained.imputed == ()
    # the waterfall adds up to the aggregator's prediction for this item (exact for a linear aggregator)
    prediction = explained.shap.attrs["base_value"] + row.sum()
    assert prediction == pytest.approx(verdict.metadata["predictions"]["clarity"], abs=1e-6)
    # the criterion that carries the signal ("part 0") moves the score most; labels are the tree's names
    top = row.abs().idxmax()
    assert "part 0" in explained.labels[top]
    # the same with the verdict handed in, and the figure the page draws from it
    again = compare.item_explanation(store, hd_id, item, verdict=verdict)
    assert again.shap.equals(explained.shap)
    from judge_engine.figures import shap_waterfall_figure

    fig = shap_waterfall_figure(explained.shap, item, labels=explained.labels)
    assert fig.data[0].type == "waterfall" and explained.labels[top] in fig.data[0].y

    assert compare.item_explanation(store, direct_id, item) is None  # no aggregator: nothing to draw
    assert compare.item_explanation(store, hd_id, "not-an-item") is None


def test_item_explanation_fills_unscored_criteria_and_skips_items_without_a_score(store):
    """A criterion whose reply did not parse is imputed (and named); an item with no score at all has no waterfall."""
    from dataclasses import replace

    from judge_engine.records import Verdict
    from tests.test_hd_eval import _dataset, scripted

    store.save_dataset(_dataset())
    run_id = create_run(store, RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12,
                                       test_size=6, params={"aggregator": "dt", "max_layers": 1, "pi_repeats": 2}))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(scripted, model_id="hd")))
    verdict = store.load_verdicts(run_id)[0]
    first = next(iter(verdict.criteria))
    partial = replace(verdict, criteria={**verdict.criteria, first: math.nan})
    explained = compare.item_explanation(store, run_id, verdict.sample_id, verdict=partial)
    assert explained is not None and explained.imputed == (first,)
    assert list(explained.shap.columns) == list(verdict.criteria)
    from judge_engine.figures import shap_waterfall_figure

    names = shap_waterfall_figure(explained.shap, verdict.sample_id,
                                  labels={first: "<img src=x onerror=alert(1)>"}).data[0].y
    assert "&lt;img src=x onerror=alert(1)&gt;" in names and not any("<img" in n for n in names)
    unscored = Verdict(sample_id=verdict.sample_id, aspect="clarity", score=math.nan,
                       criteria={k: math.nan for k in verdict.criteria})
    assert compare.item_explanation(store, run_id, verdict.sample_id, verdict=unscored) is None


@pytest.fixture
def one_article():
    """24 summaries: 16 of one article (the test items) and 8 of two others (the training items); a judge that
    reads the x's agrees with the humans, another does not."""
    samples = tuple(Sample(id=f"a{i:02d}", input="the one article" if i < 16 else f"article {i // 20}",
                           output=f"summary {i} " + "x" * (i % 5), group_id="doc0" if i < 16 else f"doc{1 + i // 20}",
                           system_id=f"sys{i % 16}", human={"quality": float(1 + i % 5)}) for i in range(24))
    return Dataset(name="toy", task="toy", aspects=(Aspect("quality", 1, 5, "How good it is."),), samples=samples,
                   natural_level="group")


def test_on_one_article_compare_makes_no_claim_either_way(store, one_article):
    """Issue 63: one SummEval article (16 items) was "significantly worse than the best run" at p = 0.0 with
    zero-width intervals; one source is one independent unit, so there is no interval, no p and no "significantly"."""
    store.save_dataset(one_article)
    runs = [create_run(store, RunSpec(method="direct", dataset="toy", aspect="quality", train_size=8, test_size=16,
                                      seed=0)) for _ in range(2)]
    for run_id, responder in zip(runs, (good, noisy)):
        backend = FakeBackend(responder, model_id=f"fake-{run_id}")
        execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=backend))
    aligned = compare.align(store, [store.run(r) for r in runs])
    assert len(aligned.ids) == 16 and {one_article.by_id()[i].group_id for i in aligned.ids} == {"doc0"}
    for level in ("sample", "group"):
        frame = compare.comparison_frame(store, one_article, aligned, level=level, n_bootstrap=200)
        other = frame[~frame["best"]].iloc[0]
        assert other["Δspearman vs best"] < 0, "the point difference is still shown"
        assert other["p vs best"] is None and not frame["significantly worse"].any()
        assert all(ci is None for m in compare.STATISTICS for ci in frame[f"{m} CI"])
        assert set(frame["tested at"]) == {"no test"} and set(frame["resampled"]) == {"nothing"}
        assert "no evidence either way" in compare.frame_evidence(frame)
    # the same items said to be independent (a user's choice) are 16 units: a test is made on them
    told = compare.comparison_frame(store, one_article, aligned, level="sample", n_bootstrap=200, independent=True)
    assert told["p vs best"].notna().sum() == 1 and set(told["resampled"]) == {"items"}


@pytest.mark.parametrize("n_groups", [1, 2, 4])
def test_paired_bootstrap_on_fewer_than_five_sources_gives_no_p(n_groups):
    rng = np.random.default_rng(n_groups)
    human = rng.normal(size=16)
    a, b = human + rng.normal(scale=0.1, size=16), rng.normal(size=16)
    groups = [f"doc{k % n_groups}" for k in range(16)]
    for level in ("sample", "group"):
        diff, p = compare.paired_bootstrap(human, a, b, level=level, groups=groups, n_bootstrap=200)
        assert diff > 0 and math.isnan(p), (level, p)
    _, p = compare.paired_bootstrap(human, a, b, groups=groups, n_bootstrap=200, independent=True)
    assert 0 <= p < 0.05


def test_sample_level_test_resamples_whole_sources_where_items_share_one():
    """Items of one source go together: over 8 sources of 5 items the paired test draws whole sources, so a
    difference that is one source's alone is not significant, while the items' resampling calls it so."""
    rng = np.random.default_rng(4)
    groups = [f"doc{k // 5}" for k in range(40)]
    human = rng.normal(size=40)
    a = human + rng.normal(scale=1.0, size=40)
    b = a.copy()
    b[:5] = human[:5] * -3  # judge b fails on the first source only
    _, p_sources = compare.paired_bootstrap(human, a, b, groups=groups, n_bootstrap=400)
    _, p_items = compare.paired_bootstrap(human, a, b, groups=groups, n_bootstrap=400, independent=True)
    assert p_items < p_sources


def test_runs_that_share_no_item_get_one_message_and_no_claim(store, dataset):
    """Bad input of issue 63: a comparison with no shared ids says so once and computes nothing."""
    from judge_engine.records import Split, Verdict

    store.save_dataset(dataset)
    ids = [s.id for s in dataset.samples]
    runs = []
    for part in (ids[:20], ids[20:]):
        run_id = create_run(store, RunSpec("direct", "toy", "quality", train_size=0),
                            split=Split(dataset="toy", seed=0, train_ids=(), test_ids=tuple(part)))
        store.save_verdicts(run_id, [Verdict(i, "quality", 3.0) for i in part])
        store.update_run(run_id, status="finished")
        runs.append(store.run(run_id))
    with pytest.raises(compare.NotComparable) as refused:
        compare.align(store, runs)
    message = str(refused.value)
    assert message.count("\n") == 0 and "share none" in message and "nothing to compare" in message
    assert compare.align(store, runs, common_subset=True).ids == ()

"""Trust signals of a finished judge (judge_engine.trust): anti-correlation, baselines, too few groups."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judge_engine import trust
from judge_engine.llm import LedgerTotals, LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods import FitContext, Judge, get_method
from judge_engine.records import Aspect, Dataset, Sample, Split, Verdict
from judge_engine.runs import RunSpec, create_run, execute_run, human_dataset, summarize


def _human(i: int) -> float:
    return float(1 + (i * 7) % 5)


@pytest.fixture
def wide_dataset():
    """Forty samples, two per group (20 groups), natural level sample; human score known from the output text."""
    samples = tuple(Sample(id=f"w{i:02d}", input=f"source {i // 2}", output=f"output number {i}",
                           group_id=f"g{i // 2}", system_id=f"sys{i % 4}", human={"quality": _human(i)})
                    for i in range(40))
    return Dataset(name="wide", task="toy summarization", aspects=(Aspect("quality", 1, 5, "How good it is."),),
                   samples=samples, natural_level="sample", input_label="Article", output_label="Summary")


def _number(messages) -> int:
    import re

    return int(re.findall(r"output number (\d+)", messages[0]["content"])[-1])


def _baseline(store, dataset, split, reply, method="direct"):
    """A baseline run executed on a scripted LLM: ``reply(i)`` is its score of item number i."""
    run_id = create_run(store, RunSpec(method, dataset.name, "quality", train_size=0), split=split)
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(lambda m, p: f"[[{reply(_number(m))}]]"))
    execute_run(store, run_id, llm=llm)
    return run_id


def _learned(store, dataset, split, method, state, score):
    """A finished learned judge with ``state`` whose test verdicts are ``score(i)`` (None: missing)."""
    aspect = dataset.aspect("quality")
    judge = Judge(method=method, params=get_method(method).get_params(), aspect=aspect.to_dict(),
                  task={"description": dataset.task, "input_label": "Article", "output_label": "Summary"},
                  state=state)
    run_id = create_run(store, RunSpec(method, dataset.name, "quality", train_size=0), judge=judge, split=split)
    verdicts = []
    for sid in split.test_ids:
        i = int(sid.lstrip("sw"))
        s = score(i)
        verdicts.append(Verdict(sid, "quality", math.nan if s is None else float(s),
                                metadata={} if s is not None else {"source": "missing"}))
    store.save_verdicts(run_id, verdicts)
    ds = human_dataset(store, dataset.name)
    store.update_run(run_id, status="finished", summary=summarize(ds, "quality", store.load_verdicts(run_id),
                                                                  ledger=LedgerTotals(), seconds=0.0))
    return run_id


def _split(dataset, n_train):
    ids = [s.id for s in dataset.samples]
    return Split(dataset=dataset.name, seed=0, train_ids=tuple(ids[:n_train]), test_ids=tuple(ids[n_train:]))


# a good judge: 0.9 on 12 validation items, the best of the 3 strategies it explored (one-sided p about 1e-4)
HPSS_GOOD = {"strategy": "chosen", "selection": {"value": 0.9, "correlation": 0.9, "coverage": 1.0, "n_scored": 12,
                                                 "n": 12}, "explored": [{}, {}, {}]}
HD_FRAME = {"tree": {"nodes": []}, "aggregators": [{}], "target_group": 0, "features": []}
"""The keys every fitted HD-Eval state has, empty: the figures under test are added per test."""


def test_an_anti_correlated_judge_gets_a_warning(store, wide_dataset):
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    bank = [{"key": "h1", "text": "Copies a sentence of the source", "train_pearson": -0.35, "train_parsed": 8},
            {"key": "h2", "text": "States facts clearly", "train_pearson": 0.4, "train_parsed": 8}]
    run_id = _learned(store, wide_dataset, split, "hypoeval", {"selected": bank, "train_ids": [f"t{i}" for i in range(8)]},
                      lambda i: 6 - _human(i))
    report = trust.trust_report(store, run_id)
    assert report.verdict == "warning"
    assert report.test.value == pytest.approx(-1.0)
    assert any("anti-correlated on the test items" in r for r in report.reasons)
    assert any("1 of 2 selected hypotheses" in r and "-0.35" in r for r in report.reasons), report.reasons
    assert report.training.value == pytest.approx(0.025) and report.training.n_items == 8
    # a training correlation significantly below zero alone is enough (test fine, HD-Eval's out-of-fold Pearson)
    ids = ["a", "b", "c", "d", "e"]
    hd_state = {**HD_FRAME, "layers": [{"cv": {"quality": {"pearson": -0.95}}}], "train_ids": ids}
    hd = trust.trust_report(store, _learned(store, wide_dataset, split, "hd_eval", hd_state, _human))
    assert hd.verdict == "warning" and hd.training.value == pytest.approx(-0.95) and hd.training.n_items == 5
    assert any("anti-correlated on its training items" in r for r in hd.reasons), hd.reasons
    # -0.2 on 5 items is what unrelated scores give: no evidence of agreement, but no anti-correlation either
    weak = {**HD_FRAME, "layers": [{"cv": {"quality": {"pearson": -0.2}}}], "train_ids": ids}
    hd = trust.trust_report(store, _learned(store, wide_dataset, split, "hd_eval", weak, _human))
    assert hd.verdict == "not shown to agree", hd.reasons
    assert hd.reasons[0].startswith("not shown to agree on its training items") and "out-of-fold" in hd.reasons[0]


def test_a_judge_significantly_below_its_baseline_is_warned_and_the_baseline_named(store, wide_dataset):
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    base = _baseline(store, wide_dataset, split, lambda i: int(_human(i)))
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 2.0, size=40)
    run_id = _learned(store, wide_dataset, split, "hpss", HPSS_GOOD, lambda i: _human(i) + noise[i])
    report = trust.trust_report(store, run_id)
    assert report.test.value > 0 and report.training.value == pytest.approx(0.9)
    assert [b.run_id for b in report.baselines] == [base]
    b = report.baselines[0]
    assert b.significantly_below and b.diff < 0 and b.p < trust.ALPHA and b.n == 40
    assert report.verdict == "warning"
    assert any(f"#{base} direct" in r and "significantly below" in r for r in report.reasons), report.reasons


def test_baselines_on_another_split_or_backend_are_not_compared(store, wide_dataset):
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    _baseline(store, wide_dataset, _split(wide_dataset, 2), lambda i: int(_human(i)))  # other test items
    other = create_run(store, RunSpec("direct", "wide", "quality", train_size=0,
                                      llm=LLMConfig(backend="openai", model="m")), split=split)
    store.update_run(other, status="finished")
    run_id = _learned(store, wide_dataset, split, "hpss", HPSS_GOOD, _human)
    assert trust.baseline_runs(store, store.run(run_id)) == []


def test_a_group_level_figure_over_too_few_groups_has_no_interval_and_the_sample_level_beside_it(store, tiny_dataset):
    """12 items from 4 sources: no interval at either level (the items' interval resamples whole sources, and 4 are
    too few, issue 63), the sample level shown beside the group level's, and the verdict says why."""
    store.save_dataset(tiny_dataset)
    split = _split(tiny_dataset, 0)  # 12 items in 4 groups: fewer than MIN_BOOTSTRAP_UNITS
    run_id = _learned(store, tiny_dataset, split, "hpss", HPSS_GOOD,
                      lambda i: 1 + (i * 7) % 5 + (0.5 if i % 2 else 0.0))
    report = trust.trust_report(store, run_id)
    assert report.test.level == "group" and report.test.n_groups == 4
    assert report.test.ci == (None, None) and "too few groups" in report.test.ci_note
    assert report.sample is not None and report.sample.level == "sample" and report.sample.n == 12
    assert report.sample.value is not None and report.sample.ci == (None, None) and report.sample.n_groups == 4
    assert "too few groups for an interval (4 < 5)" in report.sample.ci_note
    assert report.verdict == "too few items to say" and "no evidence either way" in report.reasons[0], report.reasons


def test_the_items_interval_resamples_whole_sources_where_items_share_one_and_says_so(store, wide_dataset):
    """Issue 63: at the sample level, items of one source (a SummEval article, a Topical-Chat context) go together
    into each resample, and the report says so; told nothing about sources, items are resampled one by one."""
    from judge_engine import metrics

    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    run_id = _learned(store, wide_dataset, split, "hpss", HPSS_GOOD, _human)
    report = trust.trust_report(store, run_id)
    fig = report.test if report.test.level == "sample" else report.sample
    groups = {s.group_id for s in wide_dataset.samples if s.id in set(split.test_ids)}
    assert fig.resampled == "groups" and fig.n_groups == len(groups) < fig.n
    assert "whole sources resampled" in trust._figure_text(fig)
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(10), 6)
    human = rng.normal(size=60) + np.repeat(rng.normal(size=10), 6)
    judge = human + np.repeat(rng.normal(size=10), 6) + rng.normal(size=60)  # the judge errs by source too
    whole = metrics.meta_evaluate(human, judge, groups=g)
    alone = metrics.meta_evaluate(human, judge, groups=g, independent=True)
    assert (whole.resampled, whole.n_groups, alone.resampled, alone.n_groups) == ("groups", 10, "items", 0)
    assert whole.pearson.value == pytest.approx(alone.pearson.value)
    assert whole.pearson.ci_high - whole.pearson.ci_low > alone.pearson.ci_high - alone.pearson.ci_low


def test_a_good_judge_gets_no_warning_and_its_report_is_json(store, wide_dataset):
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    base = _baseline(store, wide_dataset, split, lambda i: 3, method="direct")  # a constant baseline
    run_id = _learned(store, wide_dataset, split, "hpss", HPSS_GOOD,
                      lambda i: None if i == 5 else _human(i) + (0.3 if i % 3 else 0.0))
    report = trust.trust_report(store, run_id)
    assert report.verdict == "ok" and report.reasons == ()
    assert report.missing == 1 and report.missing_rate == pytest.approx(1 / 40)
    assert report.baselines[0].run_id == base and report.baselines[0].diff is None  # constant: undefined
    d = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert d["verdict"] == "ok" and d["training"]["n_items"] == 12 and d["test"]["level"] == "sample"
    assert trust.one_line(report) == "trust: ok"
    # a baseline run learns nothing: it has no training figure and is compared to no other baseline
    own = trust.trust_report(store, base)
    assert own.training is None and own.baselines == ()


def test_an_unfinished_run_has_no_report(store, wide_dataset):
    store.save_dataset(wide_dataset)
    run_id = create_run(store, RunSpec("direct", "wide", "quality", train_size=0), split=_split(wide_dataset, 0))
    with pytest.raises(ValueError, match="only a finished run"):
        trust.trust_report(store, run_id)


@pytest.mark.parametrize("name", ["hypoeval", "hpss", "active_critic", "hd_eval"])
def test_the_training_figure_is_read_from_what_each_learned_method_stores(name, store, tiny_dataset):
    from judge_engine.prompting import TaskInfo
    from tests.scripted import scripted_llm

    llm, _ = scripted_llm(store)  # replies agree with the humans, so every method builds a judge
    judge = get_method(name).fit(tiny_dataset.samples[:6], tiny_dataset.aspects[0],
                                 FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    figure = trust.training_figure(name, judge.state, "quality")
    assert figure is not None and figure.value is not None and -1.0 <= figure.value <= 1.0, figure
    assert 0 < figure.n_scored <= figure.n_items <= 6, figure
    assert trust.training_figure("direct", {}, "quality") is None and trust.training_figure("geval", {}, "q") is None


def test_a_state_its_method_cannot_read_gives_no_training_figure_and_says_why():
    figure = trust.training_figure("hd_eval", {"layers": [{"cv": {"quality": {"pearson": 0.9}}}]}, "quality")
    assert figure is not None and figure.value is None and "could not be read" in figure.measure, figure
    hpss = trust.training_figure("hpss", {"strategy": "s", "selection": {"correlation": "high"}}, "quality")
    assert hpss is not None and hpss.value is None and "could not be read" in hpss.measure, hpss


def test_a_summary_stored_before_intervals_were_withheld_is_measured_again(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    run_id = _learned(store, tiny_dataset, _split(tiny_dataset, 0), "hpss", HPSS_GOOD, _human)
    old = store.get_run(run_id)["summary"]
    for rep in old["levels"].values():  # what an older version wrote: an interval over 4 groups, no note
        rep.pop("ci_note")
        rep["pearson_ci"] = [0.1, 0.9]
    store.update_run(run_id, summary=old)
    report = trust.trust_report(store, run_id)
    assert report.test.level == "group" and report.test.ci == (None, None)
    assert report.test.ci_note.startswith("too few groups")


@pytest.mark.parametrize("score, said", [
    (lambda i: 3, "its scores do not vary enough to correlate (all 40 items scored)"),
    (lambda i: 3 if i % 4 else None, "its scores do not vary enough to correlate (10 of 40 items have no score)"),
    (lambda i: None, "none of the 40 items has a score")])
def test_a_judge_without_a_test_correlation_says_why(store, wide_dataset, score, said):
    store.save_dataset(wide_dataset)
    run_id = _learned(store, wide_dataset, _split(wide_dataset, 0), "hpss", HPSS_GOOD, score)
    report = trust.trust_report(store, run_id)
    assert report.verdict == "warning"
    assert any(r.startswith("no test pearson at the sample level: ") and r.endswith(said) for r in report.reasons), \
        report.reasons


@pytest.mark.parametrize("train_pearson", [0.005, 0.3, 0.54])  # HypoEval: Topical-Chat 0.005, SF-RES 0.27-0.54
def test_a_judge_chosen_on_a_training_correlation_not_significant_for_its_items_is_not_ok(
        store, wide_dataset, train_pearson):
    # was a "warning" naming the items it would need: no evidence of agreement is now "not shown to agree",
    # kept apart from evidence against the judge (issue 49)
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    weak = [{"key": "h1", "text": "Uses plain words", "train_pearson": train_pearson, "train_parsed": 12}]
    run_id = _learned(store, wide_dataset, split, "hypoeval", {"selected": weak, "train_ids": [f"t{i}" for i in range(12)]},
                      _human)
    report = trust.trust_report(store, run_id)
    assert report.verdict == "not shown to agree" and report.test.value == pytest.approx(1.0)
    said = [r for r in report.reasons if r.startswith("not shown to agree on its training items")]
    assert len(said) == 1 and "(12 of 12 items scored, " in said[0] and "one-sided p = " in said[0], report.reasons


def test_a_winner_among_eleven_is_tested_against_the_best_of_eleven(store, wide_dataset):
    # the run: a random judge's demonstration set won among 11 with a training Pearson of +0.47 on 27 items
    assert trust.selection_p_value(0.47, 27, 1) < 0.01  # what a plain t-test said (two-sided p = 0.014)
    assert 0.05 < trust.selection_p_value(0.47, 27, 11) < 0.1  # about 1 - (1 - 0.0067) ** 11
    store.save_dataset(wide_dataset)
    search = [{"candidate": c, "demo_ids": [f"d{c}"], "n_items": 27, "n_scored": 27, "pearson": 0.47 - 0.05 * c,
               "q": 1.0 - 0.1 * c} for c in range(11)]
    state = {"variant": "overall", "demos": [{"sample_id": "d0"}], "search": search}
    report = trust.trust_report(store, _learned(store, wide_dataset, _split(wide_dataset, 0), "active_critic", state,
                                                _human))
    assert report.training.candidates == 11 and report.training.value == pytest.approx(0.47)
    assert report.verdict == "not shown to agree", report.reasons
    assert "best of K = 11 demonstration sets scored" in report.reasons[0], report.reasons
    assert report.to_dict()["training"]["candidates"] == 11


def test_the_best_few_of_k_are_simulated_and_agree_with_the_closed_form_for_one():
    # the mean of the best 1 of K by simulation must match 1 - (1 - p1) ** K: the simulation is the same law
    closed = trust.selection_p_value(0.5, 20, 11)
    simulated = trust._top_mean_null(20, 11, 1, 20_000, 0)
    assert 0.05 < closed < 0.5 and abs(float((simulated >= 0.5).mean()) - closed) < 0.015
    # the mean of the best 5 of 20 is smaller than the best alone, so the same figure is rarer under no relation
    assert trust.selection_p_value(0.3, 30, 20, top=5) < trust.selection_p_value(0.3, 30, 20)
    assert math.isnan(trust.selection_p_value(0.5, 2, 11))


def _fig(value, ci, n=40, level="sample", note=""):
    return trust.TestFigure(level, value, ci, note, n, 0, 0)


@pytest.mark.parametrize("test, said, reason", [
    # the issue: "worse than chance" from a point estimate whose interval was [-0.14, +0.15]
    (_fig(-0.01, (-0.14, 0.15), 160), "not shown to agree", "not shown to agree on the test items: sample-level "
                                                             "pearson -0.01, 95% interval [-0.14, +0.15]"),
    (_fig(-0.4, (-0.6, -0.2), 160), "warning", "anti-correlated on the test items (worse than chance)"),
    # a random judge on a 160-item pass/fail aspect: 0.08 with an interval through zero was "ok"
    (_fig(0.08, (-0.07, 0.23), 160), "not shown to agree", "reaches zero"),
    (_fig(0.9, (None, None), 3, note="too few items for an interval (3 < 5)"), "too few items to say",
     "3 scored test items (an \"ok\" needs at least 10)"),
    (_fig(0.9, (None, None), 12, "group", "too few groups for an interval (4 < 5)"), "too few items to say",
     "too few groups for an interval"),
    (_fig(0.3, (-0.5, 0.8), 12), "too few items to say", "the interval is 1.30 wide"),
    (_fig(0.5, (0.3, 0.7), 160), "ok", None),
])
def test_ok_needs_a_test_interval_above_zero_on_enough_items(test, said, reason):
    verdict, reasons = trust.verdict(None, test, None, (), test.n, 0)
    assert verdict == said, reasons
    assert (reasons == ()) if reason is None else any(reason in r for r in reasons), reasons


def test_a_training_correlation_significant_for_its_items_is_not_warned(store, wide_dataset):
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    # at 12 items the two-sided 5% critical Pearson is about 0.576
    strong = [{"key": "h1", "text": "Uses plain words", "train_pearson": 0.62, "train_parsed": 12}]
    ok = trust.trust_report(store, _learned(store, wide_dataset, split, "hypoeval",
                                            {"selected": strong, "train_ids": [f"t{i}" for i in range(12)]}, _human))
    assert ok.verdict == "ok", ok.reasons


def _r_at_one_sided_p(p: float, n: int) -> float:
    """The Pearson on ``n`` items whose one-sided t-test p-value is ``p`` (t = r sqrt((n-2)/(1-r^2)))."""
    from scipy import stats

    t = stats.t.isf(p, n - 2)
    return float(t / math.sqrt(n - 2 + t * t))


@pytest.mark.parametrize("p, said", [(0.02, "ok"), (0.03, "not shown to agree"), (0.045, "not shown to agree")])
def test_ok_needs_the_items_t_test_at_one_sided_two_and_a_half_percent(p, said):
    """Between one-sided p = 0.025 and 0.05 the items' correlation is not significant at the verdict's level (the
    two-sided 5%), even with an interval above zero; below 0.025 it is."""
    n = 40
    r = _r_at_one_sided_p(p, n)
    assert trust._correlation_p(r, n) == pytest.approx(p, rel=1e-6)
    verdict, reasons = trust.verdict(None, _fig(r, (0.01, 0.6), n), None, (), n, 0)
    assert verdict == said, reasons
    if said != "ok":
        assert any("is not significantly above zero" in x and f"p = {p:.3f}" in x for x in reasons), reasons


@pytest.mark.parametrize("p, warned", [(0.01, True), (0.03, False), (0.045, False)])
def test_worse_than_chance_needs_the_interval_and_the_items_t_test(p, warned):
    n = 160
    r = -_r_at_one_sided_p(p, n)
    verdict, reasons = trust.verdict(None, _fig(r, (-0.35, -0.01), n), None, (), n, 0)
    assert any("worse than chance" in x for x in reasons) == warned, reasons
    assert (verdict == "warning") == warned


LOWS_AND_HIGHS = [(-0.6, -0.3), (-0.17, -0.03), (-0.2, 0.0), (-0.1, 0.2), (0.0, 0.3), (0.05, 0.4)]


@pytest.mark.parametrize("level, n_groups", [("sample", 0), ("group", 10), ("group", 30)])
@pytest.mark.parametrize("low, high", LOWS_AND_HIGHS)
def test_every_verdict_sentence_matches_the_side_of_zero_of_its_interval(level, n_groups, low, high):
    """Issue 63: "group-level pearson -0.11, 95% interval [-0.17, -0.03] ... reaches zero" (the code tested the
    lower bound only). Each sentence is rendered over intervals on both sides of zero and checked against them."""
    value = (low + high) / 2
    test = trust.TestFigure(level, value, (low, high), "", 160, n_groups, 0)
    sample = _fig(value, (low, high), 160) if level == "group" else None
    _, reasons = trust.verdict(None, test, sample, (), 160, 0)
    for sentence in reasons:
        if "reaches zero" in sentence:
            assert low <= 0 <= high, sentence
        if "lies below zero" in sentence or "worse than chance" in sentence:
            assert high < 0, sentence
        if "lies above zero" in sentence:
            assert low > 0, sentence
    if high < 0:
        assert any("below zero" in s or "worse than chance" in s for s in reasons), reasons
    elif low <= 0:
        assert any("reaches zero" in s for s in reasons), reasons


def test_exact_duplicates_count_once_in_the_items_t_test():
    """Issue 63: 99 SummEval summaries are exact duplicates; a deterministic judge gives a copy its original's score,
    so a copy is not new evidence. 18 items of which 6 repeat others: the t-test reads the 12 distinct ones."""
    human = [1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0, 4.0, 5.0, 2.0, 4.0]
    judge = [4.0, 2.0, 3.0, 2.0, 1.0, 3.0, 5.0, 2.0, 4.0, 2.0, 3.0, 3.0]
    # the two most disagreeing items, three copies each: the 18 items' correlation is far more negative
    keys = [f"item {k}" for k in range(12)] + ["item 0", "item 4"] * 3
    h, j = human + [human[int(k.split()[1])] for k in keys[12:]], judge + [judge[int(k.split()[1])] for k in keys[12:]]
    distinct = trust.distinct_figure(keys, h, j)
    assert distinct.n == 12 and distinct.value == pytest.approx(float(np.corrcoef(human, judge)[0, 1]))
    assert trust.distinct_figure(keys[:12], human, judge) is None, "no duplicate: the sample figure is used as is"
    r_all = float(np.corrcoef(h, j)[0, 1])
    everything = _fig(r_all, (-0.9, -0.1), 18)
    assert trust._correlation_p(-r_all, 18) < 0.025 < trust._correlation_p(-distinct.value, 12)
    said, reasons = trust.verdict(None, everything, None, (), 18, 0)
    assert any("worse than chance" in r for r in reasons)
    said, reasons = trust.verdict(None, everything, None, (), 18, 0, distinct=distinct)
    assert not any("worse than chance" in r for r in reasons), reasons


def test_the_trust_table_says_the_items_interval_rests_on_whole_sources():
    from pages.ui.trust import trust_frame

    whole = trust.TestFigure("sample", 0.4, (0.1, 0.6), "", 60, 10, 0, "groups")
    alone = trust.TestFigure("sample", 0.4, (0.2, 0.55), "", 60, 0, 0, "items")
    said = [trust_frame(trust.TrustReport(1, "direct", "pearson", None, fig, None, 60, 0, 0.0, (), "ok", ()))
            for fig in (whole, alone)]
    assert "60 items from 10 sources, whole sources resampled" in said[0]["rests on"].tolist()
    assert "60 items" in said[1]["rests on"].tolist()

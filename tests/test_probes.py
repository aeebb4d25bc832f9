"""Probes of a finished judge (judge_engine.probes): each finds the effect planted in the verdicts and stays
quiet on a judge without it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judge_engine import probes
from judge_engine.llm import LedgerTotals
from judge_engine.methods import Judge, get_method
from judge_engine.records import Aspect, Dataset, Sample, Split, Verdict
from judge_engine.runs import RunSpec, create_run, human_dataset, summarize

N = 60


def _samples(lengths, human, systems=None):
    return [Sample(id=f"s{i:02d}", input=f"source {i}", output=" ".join(["word"] * int(n)), group_id=f"g{i // 3}",
                   system_id=(systems[i] if systems is not None else f"sys{i % 3}"), human={"quality": float(h)})
            for i, (n, h) in enumerate(zip(lengths, human))]


@pytest.fixture
def world():
    rng = np.random.default_rng(7)
    lengths = rng.integers(5, 200, size=N)
    human = rng.integers(1, 6, size=N).astype(float)  # unrelated to length
    return lengths, human, rng


def test_a_judge_that_follows_length_is_flagged_and_one_that_follows_the_humans_is_not(world):
    lengths, human, rng = world
    follows_length = 1 + 4 * (lengths - lengths.min()) / np.ptp(lengths) + rng.normal(0, 0.3, N)
    found = probes.length_bias(lengths, human, follows_length)
    assert found.flagged and found.n == N
    assert found.judge.value > 0.8 and found.judge.ci[0] > 0.5
    assert found.excess > 0.5 and found.excess_p < probes.ALPHA
    assert found.residual.value > 0.3 and found.residual.ci[0] > 0 and found.direction == "longer over-scored"
    assert probes.format_p(0.0) == "p < 0.001" and probes.format_p(0.0004) == "p < 0.001"
    assert probes.format_p(0.012) == "p = 0.012"
    follows_humans = human + rng.normal(0, 0.3, N)
    quiet = probes.length_bias(lengths, human, follows_humans)
    assert not quiet.flagged and quiet.excess_p >= probes.ALPHA and quiet.direction == "no direction"
    assert quiet.judge.ci[0] < 0 < quiet.judge.ci[1]


def test_length_probe_says_why_it_has_no_figure():
    few = probes.length_bias([10, 20, 30], [1, 2, 3], [1, 2, 3])
    assert few.judge.value is None and not few.flagged and "too few" in few.note
    same = probes.length_bias([12] * 10, list(range(10)), list(range(10)))
    assert same.judge.value is None and "same length (12 words)" in same.note


def test_collapse_counts_the_judges_spread_beside_the_humans(world):
    _, human, rng = world
    constant = probes.collapse(human, np.full(N, 3.0))
    assert constant.collapsed and constant.judge.distinct == 1 and constant.judge.modal_share == pytest.approx(1.0)
    assert "all 60 items got the same score (3)" in constant.note
    assert constant.human.distinct == 5
    mostly = probes.collapse(human, np.where(rng.random(N) < 0.8, 4.0, 2.0))
    assert mostly.collapsed and mostly.judge.distinct == 2 and mostly.judge.modal == pytest.approx(4.0)
    spread = probes.collapse(human, human + rng.normal(0, 0.5, N).round())
    assert not spread.collapsed and spread.note == "" and spread.sd_ratio.ci[0] > 0.5
    # probability-weighted scores all within 3.96-4.04: no two tie, but a sliver of the humans' spread
    near = probes.collapse(human, 4.0 + rng.uniform(-0.035, 0.035, N))
    assert near.judge.distinct > N - 3 and near.collapsed and near.sd_ratio.ci[1] < probes.SPREAD_FLOOR
    assert "sliver" in near.note
    flat_humans = probes.collapse(np.full(N, 3.0), human)
    assert flat_humans.sd_ratio.value is None and "same score" in flat_humans.note


def test_the_slice_where_the_judge_is_reversed_comes_first_and_the_worst_items_are_listed(world):
    lengths, human, rng = world
    systems = [f"sys{i % 3}" for i in range(N)]
    judge = human + rng.normal(0, 0.4, N)
    reversed_system = np.array([s == "sys2" for s in systems])
    judge[reversed_system] = 6 - human[reversed_system]
    samples = _samples(lengths, human, systems)
    found = probes.disagreements(samples, human, judge, ["" for _ in samples])
    first = found.slices[0]
    assert (first.by, first.name) == ("system", "sys2") and first.flagged and first.test == "error"
    assert first.q < probes.ALPHA and first.effect > 0.5 and first.spearman.value < -0.8
    assert first.n == 20 and first.sample_ids == tuple(s.id for s, r in zip(samples, reversed_system) if r)
    assert [(s.by, s.name) for s in found.flagged if s.by == "system"] == [("system", "sys2")]
    # the most disagreeing items are the reversed system's extreme ones
    assert all(reversed_system[int(d.sample_id[1:])] for d in found.top[:5])
    assert abs(found.top[0].rank_difference) >= abs(found.top[-1].rank_difference)
    # groups of 3 items are under the minimum slice size: counted, neither tested nor listed
    assert {s.by for s in found.slices} == {"system", "length", "human score"} and found.too_small == 20
    assert all(s.n >= probes.MIN_SLICE for s in found.slices)


def test_a_judge_with_the_same_noise_everywhere_has_no_slice_promoted():
    # null draws: humans plus the same noise everywhere; before issue 49 a "worst slice" was reported in 80% of them
    fired = 0
    for draw in range(20):
        rng = np.random.default_rng([11, draw])
        human = rng.integers(1, 6, size=N).astype(float)
        samples = _samples(rng.integers(5, 200, size=N), human)
        found = probes.disagreements(samples, human, human + rng.normal(0, 0.8, N), [""] * N, seed=draw)
        fired += bool(found.flagged)
    assert fired <= 3, f"{fired} of 20 null draws promoted a slice"


def test_a_band_the_judge_over_scores_is_flagged_by_its_signed_bias(world):
    lengths, human, rng = world
    judge = human + rng.normal(0, 0.3, N)
    judge[human == 3] += 1.5
    found = probes.disagreements(_samples(lengths, human), human, judge, [""] * N)
    band = next(s for s in found.slices if (s.by, s.name) == ("human score", "human 3"))
    assert band.test == "bias" and band.flagged and band.effect > 0.5 and "over-scored" in band.finding
    assert "band" in {w.kind for w in probes.probe_warnings(_report(found))}


def _report(found):
    empty = probes.Figure(None, (None, None), 0)
    return probes.ProbeReport(1, "quality", found.n, 0, probes.LengthBias(found.n, empty, empty, None, None, empty,
                                                                        False), probes.collapse([1, 2, 3], [1, 2, 3]),
                              found, probes.Themes((), (), 0, 0), None)


def test_slices_say_why_when_they_cannot_be_tested():
    human = np.full(12, 3.0)
    samples = _samples(np.arange(12) + 5, human)
    same = probes.disagreements(samples, human, np.arange(12.0), [""] * 12)
    assert same.slices == () and "same score" in same.note
    few = probes.disagreements(samples[:6], human[:6], np.arange(6.0), [""] * 6)
    assert few.slices == () and "too few" in few.note


def test_explanation_themes_name_what_over_and_under_scored_items_talk_about(world):
    lengths, human, rng = world
    judge = human.copy()
    over, under = np.arange(0, 12), np.arange(12, 24)
    human[over], judge[over] = 1.0, 5.0
    human[under], judge[under] = 5.0, 1.0
    explanations = ["An okay answer." for _ in range(N)]
    for k, i in enumerate(over):
        explanations[i] = ["Very fluent, polished prose and elegant style.",
                           "Fluent and polished style throughout."][k % 2]
    for k, i in enumerate(under):
        explanations[i] = ["It omits key facts from the source.", "Missing facts; omits the main event."][k % 2]
    ids = [f"s{i:02d}" for i in range(N)]
    found = probes.explanation_themes(ids, human, judge, explanations)
    assert found.n_over == 12 and found.n_under == 12 and found.note == ""
    over_terms = {t for theme in found.over for t in theme.terms}
    under_terms = {t for theme in found.under for t in theme.terms}
    assert {"fluent", "polished"} <= over_terms and not over_terms & {"facts", "omits"}
    assert {"facts", "omits"} <= under_terms and not under_terms & {"fluent", "polished"}
    assert sum(t.count for t in found.over) == 12
    assert all(set(t.examples) <= {ids[i] for i in over} and 1 <= len(t.examples) <= 2 for t in found.over)


def test_a_run_without_explanations_says_so_instead_of_drawing_themes(world):
    _, human, _ = world
    found = probes.explanation_themes([f"s{i}" for i in range(N)], human, 6 - human, [""] * N)
    assert found.over == () and found.under == () and "no explanations" in found.note


def test_binary_agreement_for_a_pass_fail_aspect(world):
    _, _, rng = world
    truth = (rng.random(N) < 0.5).astype(float)
    good = truth * 3 + rng.normal(0, 0.5, N)
    found = probes.binary_agreement(truth, good)
    assert found.positive == pytest.approx(1.0) and found.n == N
    assert found.kappa.value > 0.8 and found.kappa.ci[0] > 0.6
    assert found.true_positive_rate > 0.85 and found.true_negative_rate > 0.85 and len(found.thresholds) == 2
    chance = probes.binary_agreement(truth, rng.normal(0, 1, N))
    assert chance.kappa.ci[0] < 0 < chance.kappa.ci[1] or abs(chance.kappa.value) < 0.3
    assert probes.binary_agreement(np.arange(N) % 3, good) is None


def test_probe_run_reads_a_finished_run_and_its_report_is_json(store):
    rng = np.random.default_rng(1)
    lengths = rng.integers(5, 200, size=40)
    human = rng.integers(1, 6, size=40).astype(float)
    samples = tuple(_samples(lengths, human))
    dataset = Dataset(name="probe", task="toy", aspects=(Aspect("quality", 1, 5),), samples=samples)
    store.save_dataset(dataset)
    ids = [s.id for s in samples]
    split = Split(dataset="probe", seed=0, train_ids=tuple(ids[:10]), test_ids=tuple(ids[10:]))
    judge = Judge(method="direct", params=get_method("direct").get_params(), aspect=dataset.aspects[0].to_dict(),
                  task={"task": "toy"}, state={})
    run_id = create_run(store, RunSpec("direct", "probe", "quality", train_size=0), judge=judge, split=split)
    with pytest.raises(ValueError, match="only a finished run"):
        probes.probe_run(store, run_id)
    by_length = {s.id: 1 + 4 * (len(s.output.split()) - 5) / 195 for s in samples}
    verdicts = [Verdict(sid, "quality", math.nan if k == 0 else round(by_length[sid], 2),
                        metadata={"source": "missing"} if k == 0 else {}) for k, sid in enumerate(split.test_ids)]
    store.save_verdicts(run_id, verdicts)
    store.update_run(run_id, status="finished", summary=summarize(human_dataset(store, "probe"), "quality",
                                                                  store.load_verdicts(run_id), ledger=LedgerTotals(), seconds=0.0))
    report = probes.probe_run(store, run_id)
    assert report.n == 29 and report.n_missing == 1
    assert report.length.flagged and report.binary is None
    assert "no explanations" in report.themes.note
    text = json.dumps(report.to_dict(), allow_nan=False)
    assert json.loads(text)["length"]["flagged"] is True


def _direct_judge(dataset):
    return Judge(method="direct", params=get_method("direct").get_params(), aspect=dataset.aspects[0].to_dict(),
                 task={"task": dataset.task, "input_label": "Source", "output_label": "Output"}, state={})


def _numbered(n=24):
    samples = tuple(Sample(id=f"n{i:02d}", input=f"source {i}", output=f"output number {i}", group_id=f"g{i}",
                           human={"quality": float(1 + i % 5)}) for i in range(n))
    return Dataset(name="numbered", task="toy", aspects=(Aspect("quality", 1, 5),), samples=samples)


def _item(messages) -> int:
    import re

    return int(re.findall(r"output number (\d+)", messages[0]["content"])[-1])


def test_stability_finds_a_judge_whose_scores_move_with_the_seed_and_repeats_cost_nothing(store):
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.llm.fake import FakeBackend

    dataset = _numbered()
    judge = _direct_judge(dataset)
    seen = []

    def noisy(messages, params):
        seen.append((params.temperature, params.seed))
        i = _item(messages)
        wobble = int(np.random.default_rng([i, params.seed]).integers(-2, 3))
        return f"[[{min(5, max(1, 1 + i % 5 + wobble))}]]"

    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(noisy))
    found = probes.stability(judge, dataset.samples, "quality", llm=llm, repeats=3, seed=0)
    assert {p for p in seen} == {(probes.STABILITY_TEMPERATURE, s) for s in (1, 2, 3)}
    assert found.n == 24 and found.repeats == 3 and found.missing == 0 and found.varied == "sampling"
    assert found.mean_sd > 0.5 and found.retest.value < 0.9 and found.retest.ci[0] < found.retest.value
    assert len(found.with_humans) == 3 and found.with_humans_spread > 0
    calls = llm.ledger.snapshot().calls
    again = probes.stability(judge, dataset.samples, "quality", llm=llm, repeats=3, seed=0)
    assert llm.ledger.snapshot().calls == calls and again == found

    steady = make_llm(LLMConfig(), store=store,
                      backend=FakeBackend(lambda m, p: f"[[{1 + _item(m) % 5}]]"))
    quiet = probes.stability(judge, dataset.samples, "quality", llm=steady, repeats=3, seed=10)
    assert quiet.mean_sd == pytest.approx(0.0, abs=1e-12) and quiet.retest.value == pytest.approx(1.0)
    assert quiet.with_humans_spread == pytest.approx(0.0, abs=1e-12)


def test_stability_counts_missing_repeat_scores_and_needs_two_repeats(store):
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.llm.fake import FakeBackend

    dataset = _numbered(12)
    judge = _direct_judge(dataset)
    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(
        lambda m, p: "no idea" if (_item(m) == 3 and p.seed == 2) else f"[[{1 + _item(m) % 5}]]"))
    found = probes.stability(judge, dataset.samples, "quality", llm=llm, repeats=2)
    assert found.missing == 1 and found.n == 11 and found.n_items == 12
    with pytest.raises(ValueError, match="at least 2 repeats"):
        probes.stability(judge, dataset.samples, "quality", llm=llm, repeats=1)
    assert probes.stability_items([f"x{i}" for i in range(50)], 20, seed=1) == \
        probes.stability_items([f"x{i}" for i in range(50)], 20, seed=1)
    assert len(probes.stability_items([f"x{i}" for i in range(50)], 20)) == 20
    assert probes.stability_calls(get_method("direct"), 20, 3) == 60


def test_reordered_shuffles_only_what_the_method_puts_in_order():
    judge = Judge(method="active_critic", params={}, aspect={"name": "quality", "low": 1, "high": 5},
                  task={"task": "toy"}, state={"demos": [{"sample_id": f"d{i}"} for i in range(6)],
                                                "criteria": {f"c{i}": f"criterion {i}" for i in range(5)},
                                                "task_description": "unchanged"})
    from judge_engine.methods import reordered

    moved = reordered(judge, 3)
    assert moved.state["task_description"] == "unchanged"
    assert sorted(d["sample_id"] for d in moved.state["demos"]) == [f"d{i}" for i in range(6)]
    assert moved.state["demos"] != judge.state["demos"] or list(moved.state["criteria"]) != list(judge.state["criteria"])
    assert moved.state["criteria"] == judge.state["criteria"]  # same entries, another order
    assert reordered(judge, 3) == moved and judge.state["demos"][0] == {"sample_id": "d0"}


def test_stability_sees_a_judge_whose_score_follows_the_order_of_its_prompt_items(store, monkeypatch):
    from judge_engine.llm import GenerationParams, LLMConfig, Request, make_llm
    from judge_engine.llm.fake import FakeBackend
    from judge_engine.methods import METHODS, Method

    class Listed(Method):
        """A scripted method that lists its learned items in one prompt (test only)."""

        name = "listed"
        ordered_state = ("items",)

        def __init__(self, *, max_tokens: int = 8):
            self.max_tokens = max_tokens

        @classmethod
        def score_with(cls, judge, samples, *, llm, progress=None):
            requests = [Request(({"role": "user", "content": " | ".join(judge.state["items"]) + f" :: {s.output}"},),
                                GenerationParams(max_tokens=8)) for s in samples]
            replies = llm.complete_many(requests)
            return [Verdict(s.id, "quality", float(r.text.strip("[]"))) for s, r in zip(samples, replies)]

    monkeypatch.setitem(METHODS, "listed", Listed)
    dataset = _numbered(12)
    judge = Judge(method="listed", params={"max_tokens": 8}, aspect=dataset.aspects[0].to_dict(),
                  task={"task": "toy"}, state={"items": ["alpha", "beta", "gamma", "delta"]})
    # a position effect: the judge adds a point when "alpha" is among the first two; sampling changes nothing
    def early(messages):
        return int(messages[0]["content"].split(" :: ")[0].split(" | ").index("alpha") < 2)

    llm = make_llm(LLMConfig(), store=store, backend=FakeBackend(lambda m, p: f"[[{1 + _item(m) % 4 + early(m)}]]"))
    by_order = probes.stability(judge, dataset.samples, "quality", llm=llm, repeats=4, vary="order", seed=0)
    by_sampling = probes.stability(judge, dataset.samples, "quality", llm=llm, repeats=4, vary="sampling", seed=0)
    assert by_order.varied == "order" and by_order.temperature == pytest.approx(0.0)
    assert by_order.mean_sd > 0.1, "the order moved the scores"
    assert by_sampling.varied == "sampling" and by_sampling.mean_sd == pytest.approx(0.0, abs=1e-12)
    direct = _direct_judge(dataset)
    with pytest.raises(ValueError, match="no order to vary"):
        probes.stability(direct, dataset.samples, "quality", llm=llm, repeats=2, vary="order")


def test_the_order_probe_shows_distinct_orders_the_runs_own_first():
    from judge_engine.methods import reordered

    def judge_with(k):
        return Judge(method="active_critic", params={}, aspect={"name": "quality", "low": 1, "high": 5},
                     task={"task": "toy"}, state={"demos": [{"sample_id": f"d{i}"} for i in range(k)]})

    def orders(judges):
        return [tuple(d["sample_id"] for d in j.state["demos"]) for j in judges]

    # the old repeats: seeds 1, 2, 3 gave the same permutation of three demonstrations, and never the run's own
    assert len(set(orders([reordered(judge_with(3), s) for s in (1, 2, 3)]))) < 3
    for k, asked in ((2, 3), (3, 3), (3, 6), (3, 10), (8, 5)):
        got = orders(probes.orderings(judge_with(k), asked, seed=1))
        assert got[0] == tuple(f"d{i}" for i in range(k)), "the run's own order comes first"
        assert len(got) == min(asked, math.factorial(k)) and len(set(got)) == len(got)
    assert probes.orders_possible(judge_with(3)) == 6


def test_order_figures_give_the_share_of_items_whose_score_changes():
    human = np.arange(20) % 5 + 1.0
    steady = probes.stability_figures(np.tile(human, (3, 1)), human, temperature=0.0, varied="order")
    assert steady.changed.value == pytest.approx(0.0, abs=1e-12) and not steady.flagged
    moved = np.tile(human, (3, 1))
    moved[1, :12] += 1  # 12 of 20 items move under another order
    found = probes.stability_figures(moved, human, temperature=0.0, varied="order")
    assert found.changed.value == pytest.approx(0.6) and found.changed.ci[0] > probes.ORDER_CHANGE_FLOOR
    assert found.flagged and any(line.startswith("warning:") and "Advice" in line
                                 for line in probes.stability_lines(found))


def test_pass_fail_reports_the_natural_cut_with_intervals_and_the_base_rate():
    rng = np.random.default_rng(3)
    truth = (rng.random(60) < 0.3).astype(float)
    # a judge on a 0-1 scale that passes the humans' passes at 0.8 and their fails at 0.3, plus a little noise
    judge = np.where(truth > 0, 0.8, 0.3) + rng.normal(0, 0.05, truth.size)
    found = probes.binary_agreement(truth, judge, scale=(0.0, 1.0))
    assert found.base_rate == pytest.approx(truth.mean())
    natural = found.natural
    assert natural.threshold == pytest.approx(0.5)
    assert natural.true_positive_rate.value > 0.9 and natural.true_negative_rate.value > 0.9
    low, high = natural.true_positive_rate.ci
    assert low < natural.true_positive_rate.value <= high and natural.true_positive_rate.n == int(truth.sum())
    assert natural.precision > 0.9 and natural.f1 > 0.9 and natural.kappa > 0.8
    # a judge whose every score sits below the middle of its scale passes nothing at its natural cut
    shy = probes.binary_agreement(truth, judge - 0.6, scale=(0.0, 1.0)).natural
    assert shy.true_positive_rate.value == pytest.approx(0.0) and shy.precision is None
    assert probes.binary_agreement(truth, judge).natural is None  # no scale, no natural cut


def test_a_healthy_integer_judge_against_averaged_raters_is_not_collapsed():
    """Issue 63: an integer judge (human + noise, Spearman +0.87) against the mean of several raters was called
    collapsed ("gives 3 distinct score(s); 60% of the items got 4") because the raters' means have many more
    distinct values than integers can; they are counted at the judge's resolution."""
    human = np.array([3.33, 3.67, 4.0, 4.33, 3.67, 4.0, 4.33, 3.33, 4.67, 3.67,
                      2.67, 4.0, 4.33, 3.0, 4.0, 3.67, 4.33, 2.33, 3.33, 4.0])
    judge = np.array([3, 4, 4, 4, 4, 4, 5, 3, 5, 4, 3, 4, 4, 3, 4, 4, 4, 3, 3, 4], dtype=float)
    assert len(np.unique(human)) == 8 and (judge == 4).mean() == pytest.approx(0.6)
    found = probes.collapse(human, judge)
    # the old rule: 3 distinct scores are fewer than half the raters' 8 means, and 60% got one: "collapsed"; at the
    # judge's resolution the raters' means give 4 values (2-5)
    assert found.judge.distinct == 3 and not found.collapsed, found
    # a judge that gives 4 to 17 of the 20 items and 3 to the rest is still collapsed
    squeezed = probes.collapse(human, np.where(np.arange(20) < 17, 4.0, 3.0))
    assert squeezed.collapsed and squeezed.judge.distinct == 2 and squeezed.judge.modal_share == pytest.approx(0.85)


def test_a_judge_that_is_an_exact_linear_function_of_the_humans_has_no_slice():
    """Issue 63: floating-point residuals of an exact line (1e-15) gave slices "under-scored by 0.00 points"."""
    from judge_engine.records import Sample

    rng = np.random.default_rng(5)
    human = rng.integers(1, 6, 80).astype(float) + rng.choice([0.0, 1 / 3, 2 / 3], 80)
    judge = 0.37 + 0.91 * human
    samples = [Sample(id=f"s{i}", input="", output="w " * (10 + i % 30), group_id=f"g{i // 4}", system_id=f"sys{i % 4}")
               for i in range(80)]
    assert np.abs(probes.residuals(human, judge)).max() == 0.0
    found = probes.disagreements(samples, human, judge, [""] * 80, seed=0)
    assert not found.flagged and all(abs(s.effect) < 1e-9 for s in found.slices), found.slices


def test_the_length_probe_tests_ten_groups_by_flipping_the_signs_of_their_differences():
    """Issue 63: a bootstrap over 10 groups fired for 5.8% of judges ignoring length, so the probe made no claim
    there (power 0). Below 20 groups the groups' own differences (judge minus human within-group Spearman with
    length) are tested by flipping their signs, exact whatever the number of groups; below 5 groups nothing is."""
    from scipy import stats

    from judge_engine.probes import _length

    rng = np.random.default_rng(4)
    groups = [f"g{i // 4}" for i in range(40)]
    lengths = rng.integers(20, 200, size=40).astype(float)
    human = rng.integers(1, 6, size=40).astype(float)
    follows = 1 + 4 * (lengths - 20) / 180 + rng.normal(0, 0.3, 40)
    found = probes.length_bias(lengths, human, follows, level="group", groups=groups, seed=1)
    assert found.flagged and found.excess > 0 and found.excess_p < probes.ALPHA
    # by hand: each group's difference of Spearmans (a group whose humans all agree has none), then the share of
    # all 2^k sign patterns whose mean is at least as far from zero as the groups' mean (two-sided, exact)
    diffs = [stats.spearmanr(lengths[k:k + 4], follows[k:k + 4])[0] - stats.spearmanr(lengths[k:k + 4],
                                                                                     human[k:k + 4])[0]
             for k in range(0, 40, 4) if np.ptp(human[k:k + 4]) > 0]
    k = len(diffs)
    signs = np.array([[1 if (pattern >> b) & 1 else -1 for b in range(k)] for pattern in range(2 ** k)])
    means = (signs * np.array(diffs)).mean(axis=1)
    by_hand = float(np.mean(np.abs(means) >= abs(np.mean(diffs)) - 1e-12))
    assert (found.excess, found.excess_p) == pytest.approx((np.mean(diffs), by_hand))
    assert f"{k} groups: tested by flipping the signs" in found.note and k >= 5
    assert _length._sign_flip(lengths, follows, human, groups, seed=1)[2] == k
    quiet = probes.length_bias(lengths, human, human + rng.normal(0, 0.3, 40), level="group", groups=groups, seed=1)
    assert not quiet.flagged and quiet.excess_p is not None
    few = probes.length_bias(lengths[:16], human[:16], follows[:16], level="group", groups=groups[:16], seed=1)
    assert not few.flagged and few.excess_p is None and "shown, not tested" in few.note

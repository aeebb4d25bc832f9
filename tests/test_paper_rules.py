"""The rules each method's paper states exactly, each checked against a hand-computed example (issue 51 item 5).

Every figure below is worked out in the comment next to it, so a test fails on a wrong rule, not on a moved path:
these are the tests tools/mutate.py relies on to catch a selection key or sign, a dropped reward term, importance
on the fitted items, a swapped metric, a search that returns its last candidate, a refinement that changes nothing.
No LLM is called: scores are set on the bank entries, so selection reads them as already evaluated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import judge_engine.explain as explain
import judge_engine.methods.hypoeval as he
from judge_engine import aggregate, metrics
from judge_engine.aggregate import Aggregator
from judge_engine.methods.hd_eval.pruning import prune_by_attribution
from judge_engine.methods.hpss.method import fitness as hpss_fitness
from judge_engine.methods.hpss.method import select_best
from judge_engine.methods.hypoeval import generation
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect, Sample

ASPECT = Aspect("q", 1, 5)
HUMAN = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]
TRAIN = [Sample(id=f"s{i}", input="x", output=f"y{i}", group_id=f"g{i}", human={"q": float(h)})
         for i, h in enumerate(HUMAN)]


class _NoLLM:
    """Selection must not call the model here: every entry already has its scores."""


def _ctx(**params):
    p = {**he.HypoEval().get_params(), **params}
    return he.Context(llm=_NoLLM(), aspect=ASPECT, task=TaskInfo(task="t"), settings=he.HypoEvalSettings.from_params(p),
                      log=lambda k, payload: None, progress=lambda s: None)


def _entry(text: str, scores: list[float | None], reward: float = 0.0) -> dict:
    e = he.new_entry(text, "initial", s_h=[])
    e["scores"] = {s.id: v for s, v in zip(TRAIN, scores)}
    e["reward"] = reward
    return e


# ----------------------------------------------------------------------------- HypoEval §3.2 selection


def test_hypoeval_selection_ranks_by_fitness_with_coverage():
    """H_ev = the top hypotheses by coverage-aware Pearson fitness (r x share scored), r > 0 only.

    Human scores h = 1 2 3 4 5 1 2 3 4 5 (mean 3, sum of squared deviations 20).
    A swaps the first two (2 1 3 4 5 ...): deviations -1 -2 0 1 2 -2 -1 0 1 2, cross sum 19, so r = 19/20 = 0.95,
      all 10 scored: fitness 0.95.
    B repeats h on 8 items and gives none on the last two: r = 1.0 on what it scored, coverage 0.8: fitness 0.80.
    C is 6 - h: r = -1, never selected on its own.
    D repeats h on 7 items only: coverage 0.7 < 0.8, not eligible.
    Asked for 3: A then B, and no third (C disagrees, D is ineligible). Ranking by |r| would put B (1.0) first.
    """
    a = _entry("A", [2, 1, 3, 4, 5, 1, 2, 3, 4, 5], reward=0.1)
    b = _entry("B", [*HUMAN[:8], None, None], reward=0.9)
    c = _entry("C", [6 - h for h in HUMAN], reward=0.5)
    d = _entry("D", [*HUMAN[:7], None, None, None], reward=1.0)
    selected = he.select_hypotheses(_ctx(), [c, d, b, a], TRAIN, 3)
    assert [e["text"] for e in selected] == ["A", "B"]
    assert a["train_pearson"] == pytest.approx(0.95) and a["fitness"] == pytest.approx(0.95)
    assert b["train_pearson"] == pytest.approx(1.0) and b["fitness"] == pytest.approx(0.8)
    assert c["train_pearson"] == pytest.approx(-1.0) and not c["selectable"]
    assert d["fitness"] is None and d["coverage"] == pytest.approx(0.7) and not d["selectable"]


def test_hypoeval_selection_is_by_pearson():
    """The paper selects by Pearson, not rank correlation. On h = 1 2 3 4 5:
    E = 1 2 3 5 4: Pearson = Spearman = 1 - 6*2/(5*24) = 0.9.
    F = 1 1.1 1.2 1.3 5: ranks as h, Spearman 1.0; Pearson: deviations of F from its mean 1.92 are
      -0.92 -0.82 -0.72 -0.62 3.08, cross sum with h's -2 -1 0 1 2 is 8.2, squares sum 11.908,
      r = 8.2 / sqrt(10 * 11.908) = 0.7514. Pearson keeps E; Spearman would keep F.
    """
    train = TRAIN[:5]
    e = he.new_entry("E", "initial", s_h=[])
    f = he.new_entry("F", "initial", s_h=[])
    e["scores"] = dict(zip([s.id for s in train], [1, 2, 3, 5, 4]))
    f["scores"] = dict(zip([s.id for s in train], [1, 1.1, 1.2, 1.3, 5]))
    [chosen] = he.select_hypotheses(_ctx(), [f, e], train, 1)
    assert chosen["text"] == "E"
    assert e["fitness"] == pytest.approx(0.9) and f["fitness"] == pytest.approx(0.7514, abs=1e-4)


def test_selection_fitness_is_correlation_times_coverage():
    """metrics.coverage_adjusted: r x (scored / tried) at or above 80% coverage, not eligible below."""
    assert metrics.coverage_adjusted(0.5, 9, 10).value == pytest.approx(0.45)
    assert metrics.coverage_adjusted(1.0, 8, 10).value == pytest.approx(0.8)
    assert math.isnan(metrics.coverage_adjusted(1.0, 7, 10).value)


# ----------------------------------------------------------------------------- HypoEval §3.1 reward


def test_hypoeval_ucb_reward_has_both_terms():
    """r_h = acc + alpha * sqrt(ln t / |S_h|). acc = 0.75, alpha = 0.5, t = 16, |S_h| = 4:
    ln 16 = 2.772589, / 4 = 0.693147, sqrt = 0.832555, x 0.5 = 0.416277, + 0.75 = 1.166277.
    With acc = 0 the exploration term alone: 0.416277."""
    assert he.reward(0.75, 4, 16, 0.5) == pytest.approx(1.166277, abs=1e-6)
    assert he.reward(0.0, 4, 16, 0.5) == pytest.approx(0.416277, abs=1e-6)
    assert he.reward(0.75, 4, 16, 0.0) == pytest.approx(0.75)


def test_hypoeval_exploitation_is_a_minus_b_squared_error():
    """acc = mean of a - b (s - s_hat)^2 with a = 1, b = 1/16 on 1-5. Human 5 and 3 scored 3 and 3:
    (1 - 4/16 + 1 - 0) / 2 = 0.875. Human 1 scored 2: 1 - 1/16 = 0.9375."""
    ctx = _ctx()
    samples = {"a": Sample(id="a", input="x", output="y", group_id="g", human={"q": 5.0}),
               "b": Sample(id="b", input="x", output="z", group_id="g", human={"q": 3.0}),
               "c": Sample(id="c", input="x", output="w", group_id="g", human={"q": 1.0})}
    entry = {"scores": {"a": 3.0, "b": 3.0, "c": 2.0}}
    assert he.exploitation(entry, samples, ctx, ["a", "b"]) == pytest.approx(0.875)
    assert he.exploitation(entry, samples, ctx, ["c"]) == pytest.approx(0.9375)


def test_hypoeval_refinement_replaces_the_hypotheses(monkeypatch):
    """§3.1: each refinement round's hypotheses replace the previous ones. Generation gives h1 h2; round 1 (data)
    and round 2 (literature) each append a mark, so the result is h1'' h2''."""
    monkeypatch.setattr(generation, "generate_hypotheses", lambda ctx, n, samples, stage: ["h1", "h2"])
    monkeypatch.setattr(generation, "refine_hypotheses",
                        lambda ctx, hyps, samples=(), literature=(), stage="": [h + "'" for h in hyps])
    ctx = _ctx(n_refine=2, refine_start="data")
    out = generation.generate_and_refine(ctx, TRAIN[:2], [{"title": "t", "text": "notes"}], 1)
    assert out == ["h1''", "h2''"]


# ----------------------------------------------------------------------------- HD-Eval §2.3 attribution pruning


def test_hd_eval_importance_is_out_of_fold(monkeypatch):
    """Permutation importance is measured on held-out folds: with 10 items and 5 folds, 5 permutation runs of 2
    items each, every item permuted exactly once, never on items the model of that run was fitted on."""
    rng = np.random.default_rng(0)
    x = np.column_stack([np.arange(10, dtype=float), rng.normal(size=10)])  # column 0 names the row
    y = [[2 * v + 1] for v in x[:, 0]]
    agg = Aggregator.fit(x, y, kind="lr", features=["row", "noise"], targets=["q"], random_state=0)
    seen: list[list[int]] = []
    real = explain.permutation_drops

    def spy(model, xs, ys, **kw):
        seen.append(sorted(int(r) for r in np.asarray(xs)[:, 0]))
        return real(model, xs, ys, **kw)

    fitted: list[list[int]] = []
    real_fit = aggregate.fit_model

    def recording_fit(kind, random_state, xs, ys):  # every fold's model is fitted here (or read back from a memo)
        fitted.append(sorted(int(r) for r in np.asarray(xs)[:, 0]))
        return real_fit(kind, random_state, xs, ys)

    monkeypatch.setattr(explain, "permutation_drops", spy)
    monkeypatch.setattr(aggregate, "fit_model", recording_fit)
    frame = explain.permutation_importance_oof(agg, n_repeats=2)
    assert [len(rows) for rows in seen] == [2] * 5
    assert sorted(r for rows in seen for r in rows) == list(range(10))
    assert [len(rows) for rows in fitted] == [8] * 5  # each fold's model saw the other 8 items
    assert all(not set(rows) & set(train) for rows, train in zip(seen, fitted))
    assert frame.index[0] == "row"


def test_hd_eval_pruning_decomposes_the_most_important():
    """Eq. 3: the k most important candidates are decomposed; one without an importance comes last."""
    importance = {"a": {"importance": 0.1}, "b": {"importance": 0.5}, "c": {"importance": 0.3}}
    assert prune_by_attribution(["a", "b", "c", "d"], importance, 2) == ["b", "c"]
    assert prune_by_attribution(["d", "a"], importance, 1) == ["a"]


# ----------------------------------------------------------------------------- HPSS §3.1 fitness and choice


def test_hpss_fitness_is_spearman():
    """r(T) is Spearman (App. A.1): F = 1 1.1 1.2 1.3 5 on h = 1 2 3 4 5 ranks the items exactly (1.0), where its
    Pearson is 0.7514 (worked out in test_hypoeval_selection_is_by_pearson)."""
    sel = hpss_fitness(TRAIN[:5], "q", [1, 1.1, 1.2, 1.3, 5], level="sample")
    assert sel.value == pytest.approx(1.0) and sel.coverage == pytest.approx(1.0)


def test_hpss_select_best_is_the_highest_selectable():
    """The adopted strategy is the selectable one with the highest fitness, wherever it came in the search."""
    selection = {("s1",): metrics.coverage_adjusted(0.5, 10, 10), ("s2",): metrics.coverage_adjusted(0.9, 10, 10),
                 ("s3",): metrics.coverage_adjusted(0.3, 10, 10), ("s4",): metrics.coverage_adjusted(0.95, 7, 10),
                 ("s5",): metrics.coverage_adjusted(-0.2, 10, 10)}
    assert select_best(selection) == ("s2",)


# ----------------------------------------------------------------------------- the metrics every method reports


def test_pearson_spearman_kendall_hand_examples():
    """On h = 1 2 3 4 5: F = 1 1.1 1.2 1.3 5 gives Pearson 0.7514 (above), Spearman 1.0.
    p = 1 1 2 3 4 (one tie, 9 of 10 pairs concordant): Kendall tau-b = 9 / sqrt(10 * 9) = 0.948683; tau-c would be
    2 * 9 / (25 * 3 / 4) = 0.96."""
    r = metrics.correlations([1, 2, 3, 4, 5], [1, 1.1, 1.2, 1.3, 5])
    assert r["pearson"] == pytest.approx(0.7514, abs=1e-4) and r["spearman"] == pytest.approx(1.0)
    assert metrics.correlations([1, 2, 3, 4, 5], [1, 1, 2, 3, 4])["kendall"] == pytest.approx(0.948683, abs=1e-6)


# ----------------------------------------------------------------------------- HypoEval §3.3 evaluation


def test_hypoeval_score_is_the_mean_of_the_parsed_hypothesis_scores(monkeypatch):
    """§3.3: a text's score is the mean of its selected hypotheses' scores; one that gave no score is left out
    (counted as missing), never turned into a number. On 1-5: scores 2, 5 and none -> (2 + 5) / 2 = 3.5 with one
    missing; scores 4, 4, 1 -> 3.0; none at all -> a missing verdict (NaN)."""
    from judge_engine.criteria_scoring import CriterionScore, ScoringSettings
    from judge_engine.methods.hypoeval import evaluation

    hyps = [{"text": t} for t in ("H1", "H2", "H3")]
    keys = [evaluation.as_criterion(h["text"]).key for h in hyps]
    table = {"a": (2.0, 5.0, math.nan), "b": (4.0, 4.0, 1.0), "c": (math.nan,) * 3}

    def scored(samples, criteria, **_):
        return [{k: CriterionScore(score=v, raw=str(v), source="missing" if math.isnan(v) else "json")
                 for k, v in zip(keys, table[s.id])} for s in samples]

    monkeypatch.setattr(evaluation, "score_criteria", scored)
    samples = [Sample(id=i, input="x", output=i, group_id="g", human={"q": 3.0}) for i in table]
    a, b, c = evaluation.evaluate_with_hypotheses(samples, hyps, aspect=ASPECT, task=TaskInfo(task="t"),
                                                  llm=_NoLLM(), settings=ScoringSettings())
    assert a.score == pytest.approx(3.5) and a.metadata["missing"] == 1
    assert b.score == pytest.approx(3.0) and b.metadata["missing"] == 0
    assert math.isnan(c.score) and c.metadata["missing"] == 3 and c.metadata["source"] == "missing"

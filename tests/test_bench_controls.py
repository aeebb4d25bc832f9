"""Controls that must fail (issue 31): a broken method must not beat the benchmark's baseline for that part of it.

Each test runs one runner of :mod:`judge_engine.bench.simulate` on a small
fixed set of worlds with a mutation of the method (the runner's ``control``
argument; never a method option) and checks the paired difference of the row
that judges the mutated part: over the worlds its 95% interval must reach
zero or lie below it (a broken method "beats" nothing). Each test also runs
the unmutated method on the same worlds and checks that it does beat the same
row by a margin they resolve, so a control is not passed by a row that can
show nothing (HPSS's row gets that check from tests/test_bench_dials.py; its
test says why). The worlds are outside those the code was tuned on (0..19) and
those docs/simulated-world.md reports (1000..1029, 5000..5029); each method gets as many
as its margin needs to resolve (HypoEval's is the narrowest), at sizes that
keep each test within about a minute. Issue 31, "Controls that must fail".
"""

from __future__ import annotations

import math
from typing import Any


from judge_engine.bench import simulate
from judge_engine.bench.simulate import RUNNERS, World, split, summarise
from tests import bench_draw

WORLDS = bench_draw.worlds(range(2000, 2005))


def run_rows(method: str, control: str | None, *, n_train: int, n_test: int, worlds=WORLDS,
             params: dict[str, Any] | None = None) -> tuple[dict[tuple[str, str], dict], list[dict]]:
    """The summarised rows of ``method`` over ``worlds``, by (measure, baseline), and each world's detail."""
    entries, details = [], []
    params = bench_draw.params(method, params)
    for seed in worlds:
        world = World(seed, n_samples=n_train + n_test)
        train, test = split(world, n_train, n_test)
        res = RUNNERS[method](world, train, test, lambda line: None, params, control=control)
        entries.append({"seed": seed, "methods": {method: res}})
        details.append(res["detail"])
    return {(r["measure"], r["baseline"]): r for r in summarise(entries)}, details


def _record(row: dict, side: str) -> None:
    n = row["numbers"]
    bench_draw.record(f"{side}: {row['method']} {row['measure']} vs {row['baseline']}",
                      (n["difference_mean"], *n["difference_ci"]),
                      [m - b for m, b in zip(n["per_seed"], n["baseline_per_seed"])])


def assert_not_better(row: dict, *, higher: bool = True, worlds=WORLDS) -> None:
    """The row's paired difference (method - baseline) is inside zero or on the baseline's side of it."""
    n = row["numbers"]
    lo, hi = n["difference_ci"]
    _record(row, "broken")
    assert row["seeds"] == len(worlds) and math.isfinite(n["difference_mean"]), row
    assert row["beats_baseline"] != "yes", row
    assert (lo <= 0 if higher else hi >= 0), (row["measure"], row["baseline"], row["difference"])


def assert_better(row: dict, *, worlds=WORLDS) -> None:
    """The unmutated method's side: the row's paired difference is above zero by a margin the worlds resolve."""
    lo, _ = row["numbers"]["difference_ci"]
    _record(row, "unbroken")
    assert row["seeds"] == len(worlds) and lo > 0, (row["measure"], row["baseline"], row["difference"])


HPSS_WORLDS = bench_draw.worlds(range(2000, 2010))


def test_hpss_proposing_without_its_advantages_does_not_beat_random_search(monkeypatch):
    """HPSS whose proposals ignore the advantages (uniform one-factor moves, uniform exploitation) keeps its
    population search, validation and budget; against random search with the same 71 evaluations it must not
    come out ahead. Only the arms compared here run.

    The other side of this control is not HPSS itself on these worlds: at 40 train items its lead over random
    search (about +2, spread 8 between worlds) or over this variant needs far more worlds than a test can run
    to resolve on most draws (issue 51: on 6 worlds it resolved for method seed 42 and not for 3 of 43-46;
    on these 10, +1.9 [-3.9, +7.7] over the variant). That the row can show the heuristic is asserted in
    tests/test_bench_dials.py instead: HPSS beats random search on 20 worlds at the same sizes (resolved on 4
    of 5 draws of worlds and method seed, docs/testing.md)."""
    monkeypatch.setattr(simulate.hpss, "HPSS_ARMS", {k: simulate.hpss.HPSS_ARMS[k] for k in ("random", "uniform")})
    monkeypatch.setattr(simulate.world, "PLAIN_BASELINES", {})
    rows, details = run_rows("hpss", "uniform_proposals", n_train=40, n_test=10, worlds=HPSS_WORLDS)
    fitness = "true fitness (Pearson×100)"
    assert_not_better(rows[(fitness, "random search")], worlds=HPSS_WORLDS)
    assert_not_better(rows[("regret to optimum", "random search")], higher=False, worlds=HPSS_WORLDS)
    # the mutated method is the ablation row's arm: nothing between them
    same = rows[(fitness, "HPSS without its heuristic (uniform proposals)")]
    assert same["numbers"]["difference_ci"] == [0.0, 0.0]
    for d in details:  # equal budgets: every search arm made HPSS's number of evaluations
        assert set(d["evaluations"].values()) == {d["budget"]} == {71}, d["evaluations"]


HYPOEVAL_WORLDS = bench_draw.worlds(range(2000, 2024))
"""HypoEval's margin over a random 5 with r > 0 is narrow (+0.04 test Pearson): 8 of these worlds do not
resolve it, 24 do."""


def test_hypoeval_keeping_its_worst_or_a_random_five_does_not_beat_a_random_five_with_r_positive(monkeypatch):
    """Selection kept to r > 0 removes the anti-correlated hypotheses by construction; the baselines that do
    the same (a random 5 with r > 0 of the final bank, all with r > 0) must not lose to the worst five or a
    random five, while HypoEval's own selection beats them on the same worlds."""
    monkeypatch.setattr(simulate.world, "PLAIN_BASELINES", {})
    sizes = dict(n_train=60, n_test=100, worlds=HYPOEVAL_WORLDS)
    rows_compared = [("test Pearson", "random 5 with r > 0 of its bank"), ("test Pearson", "all hypotheses with r > 0"),
                     ("mean planted quality of selected", "random 5 with r > 0 of its bank")]
    working, _ = run_rows("hypoeval", None, **sizes)
    for key in rows_compared:
        assert_better(working[key], worlds=HYPOEVAL_WORLDS)
    for control in ("worst5", "random5"):
        rows, _ = run_rows("hypoeval", control, **sizes)
        for key in rows_compared:
            assert_not_better(rows[key], worlds=HYPOEVAL_WORLDS)


HD_PARAMS = {"pi_repeats": 2}
"""Fewer permutation repeats than the default 10, for time only (the importance ranking stays out of fold)."""


def test_hd_eval_without_decomposition_does_not_beat_its_layer_1_ablation():
    """HD-Eval that decomposes nothing (max_layers=1) is its own "w/o layers 2, 3" ablation: no gain."""
    rows, _ = run_rows("hd_eval", "no_decomposition", n_train=40, n_test=30, params=HD_PARAMS)
    row = rows[("test Pearson", "aggregator on layer 1 only (w/o layers 2, 3)")]
    assert_not_better(row)
    assert row["numbers"]["difference_ci"] == [0.0, 0.0]


HD_WORLDS = bench_draw.worlds(range(2000, 2008))
"""The control's worlds and three more: on 5 the hierarchy's gain (+0.10 to +0.18 a draw, spread 0.08-0.09
between worlds, every world's above 0) missed on one of two draws through one outlying world (+0.105
[-0.009, +0.218]); 8 put the t-interval's half-width near 0.07 at that spread."""


def test_hd_eval_beats_its_layer_1_ablation_on_the_same_worlds():
    """The other side of the control: the hierarchy (layers 2 and 3) adds to the same aggregator on layer 1, so
    the control above is not passed by a row that can show nothing."""
    rows, _ = run_rows("hd_eval", None, n_train=40, n_test=30, params=HD_PARAMS, worlds=HD_WORLDS)
    assert_better(rows[("test Pearson", "aggregator on layer 1 only (w/o layers 2, 3)")], worlds=HD_WORLDS)
    # and the other side of the least-important control below: attribution pruning chooses informative criteria
    assert_better(rows[("informative share of decomposed (pruning)", "random choice")], worlds=HD_WORLDS)


ACTIVE_CRITIC_WORLDS = bench_draw.worlds(range(2000, 2012))
ACTIVE_CRITIC_UNBROKEN_WORLDS = bench_draw.worlds(range(2000, 2020))
"""The control's 12 worlds and 8 more for the unbroken side: on 12 its lead over zero-shot (+0.05 to +0.13 a draw,
spread 0.07-0.11 between worlds) missed on one of three draws (+0.047 [-0.002, +0.096]); about 19 worlds give it
90% power at +0.065 and a spread of 0.085."""


def test_active_critic_with_a_random_demonstration_set_does_not_beat_zero_shot_or_the_best_of_random_sets(monkeypatch):
    """One random labelled set in place of the searched one must not beat zero-shot scoring, which Active-Critic's
    prompt optimisation beats on the same worlds, nor the equal-budget baseline (the best of as many random
    labelled sets as the method scores, chosen by the method's rule; the unmutated method does not resolvably
    beat that one either, docs/simulated-world.md)."""
    monkeypatch.setattr(simulate.world, "PLAIN_BASELINES", {})
    sizes = dict(n_train=40, n_test=40, worlds=ACTIVE_CRITIC_WORLDS)
    zero_shot = ("test Pearson", "no prompt optimisation (zero-shot)")
    rows, details = run_rows("active_critic", "random_demos", **sizes)
    assert_not_better(rows[zero_shot], worlds=ACTIVE_CRITIC_WORLDS)
    assert_not_better(rows[("test Pearson", "best of 11 random labelled sets")], worlds=ACTIVE_CRITIC_WORLDS)
    assert_not_better(rows[("planted noise multiplier of demos (lower is better)", "best of 11 random labelled sets")],
                      higher=False, worlds=ACTIVE_CRITIC_WORLDS)
    for d in details:  # the baseline scored as many sets as the method's search
        assert len(d["random_sets"]["fitness"]) == len(d["search"]) == 11
    working, _ = run_rows("active_critic", None, n_train=40, n_test=40, worlds=ACTIVE_CRITIC_UNBROKEN_WORLDS)
    assert_better(working[zero_shot], worlds=ACTIVE_CRITIC_UNBROKEN_WORLDS)


def test_hd_eval_decomposing_its_least_important_criteria_chooses_no_more_informative_ones_than_chance():
    """Attribution pruning turned upside down (the least important criteria decomposed): the share of informative
    criteria among those decomposed must not beat a random choice among the same candidates."""
    rows, details = run_rows("hd_eval", "least_important", n_train=40, n_test=30, params=HD_PARAMS)
    assert_not_better(rows[("informative share of decomposed (pruning)", "random choice")])
    assert all(d["control"] == "least_important" and d["pruning"]["chosen"] for d in details)

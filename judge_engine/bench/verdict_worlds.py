"""Null worlds of issue 63 for the verdict calibration (:mod:`.verdicts`): claims measured where the data's structure
(items that share a source, exact duplicates, integer judges against averaged raters) could make them fire.

- **The gate** (:func:`judge_engine.gate.compare_scores`) on items in groups of four (4 to 40 sources): with the
  group column given, and without it, the items' repeated inputs grouped by :func:`judge_engine.gate.source_groups`
  as the CLI does. Null: two copies of one system, and a system equal on average but better on some sources and
  worse on others; power: a drop of 0.5 (the simulation of :mod:`.gate`).
- **"Worse than chance" with duplicates**: a deterministic random judge on items of which a tenth are exact
  copies of others (SummEval holds 99 duplicated summaries): the copies get the same human and judge score, and
  the verdict's t-tests count them once (:func:`judge_engine.trust.distinct_figure`, as the trust report does).
- **Collapse** of an integer judge (the humans' score plus noise, rounded to 1-5; Spearman about +0.87) against
  the mean of three raters.
- **The length probe at 5-15 groups** (its sign-flip test, :mod:`.verdict_probes`).
- **The items' interval on grouped data** (Topical-Chat's contexts: six responses each, natural level the items'):
  the humans and the judge each lean by source (a judge that rates the context, not the response), so the items'
  correlation varies more than its items' count says. Its interval resamples whole sources
  (:func:`judge_engine.metrics.meta_evaluate`, the one rule); the rule before, items one by one, is measured beside
  it, and the trust verdict's "ok" and "worse than chance" read that interval.
"""

from __future__ import annotations

import numpy as np

from .verdict_claims import Claim, Scenario, human_scores, judge_scores

GATE_SIZES = (16, 20, 40, 80, 160)
"""Items in groups of four: 4, 5, 10, 20 and 40 sources."""

GATE_NULL = ("gate: same system", "gate: equal on average")
GATE_PLANTED = ("gate: drop 0.5",)

DUPLICATE_SHARE = 0.1
"""Share of items that are exact copies of another item."""


def _gate_worse(scenario: Scenario, rng: np.random.Generator) -> bool:
    """The gate's verdict is "worse": ``grouped`` means the group column is given; without it the sources come
    from the repeated inputs, as ``compare-systems`` finds them."""
    from ..gate import ScoredItem, SystemScores, compare_scores, source_groups
    from ..records import Sample
    from .gate import simulate

    world = scenario.judge.removeprefix("gate: ")
    new, base = simulate(world, scenario.n_items, True, rng)
    if not scenario.grouped:
        samples = [Sample(id=i.id, input=f"source {i.group}", output="", group_id=i.id) for i in new.items]
        label = {s.id: s.group_id for s in source_groups(samples)}

        def relabel(table: SystemScores) -> SystemScores:
            return SystemScores(table.name, table.judge, table.aspect,
                                tuple(ScoredItem(i.id, i.score, label[i.id]) for i in table.items))
        new, base = relabel(new), relabel(base)
    return compare_scores(new, base, seed=int(rng.integers(2 ** 31)), n_bootstrap=1000).verdict == "worse"


def _worse_than_chance_with_duplicates(scenario: Scenario, rng: np.random.Generator) -> bool:
    from .. import metrics, trust
    from ..trust import level_figure

    n = scenario.n_items
    human = human_scores(n, False, rng)
    pred = judge_scores(scenario.judge.removesuffix(" (duplicates)"), human, rng)
    copies = int(round(DUPLICATE_SHARE * n))
    source = rng.integers(0, n - copies, size=copies)
    human[n - copies:], pred[n - copies:] = human[source], pred[source]
    c = metrics.sample_correlation(human, pred, statistic="pearson", n_bootstrap=1000,
                                   seed=int(rng.integers(2 ** 31)))
    test = level_figure("sample", {"pearson": c.value, "pearson_ci": [c.ci_low, c.ci_high], "n": n})
    keys = [str(k) for k in range(n - copies)] + [str(k) for k in source]  # a copy has its original's key
    distinct = trust.distinct_figure(keys, human, pred)
    _, reasons = trust.verdict(None, test, None, (), n, 0, distinct=distinct)
    return any("anti-correlated on the test items" in r for r in reasons)


WORLD_CLAIMS: list[Claim] = [
    Claim("gate: worse (items in sources of 4; grouped = --group-col given, else sources from repeated inputs)",
          False, _gate_worse, null=GATE_NULL, planted=GATE_PLANTED, sizes=GATE_SIZES),
    Claim("warning: worse than chance, a tenth of the items exact duplicates", False,
          _worse_than_chance_with_duplicates, null=("noise (duplicates)",),
          planted=("anti_correlated (duplicates)",), sizes=(20, 50, 160), grouped=(False,)),
]


SOURCE_SIZE = 6
"""Responses per context in the grouped sample-level world (Topical-Chat: 60 contexts of 6)."""

PLANTED = 0.3
"""How much of the human score the planted judges follow (a Pearson of about +-0.25): weak, so that power shows."""

SAMPLE_SIZES = (30, 60, 120, 240)
"""Items in contexts of six: 5, 10, 20 and 40 sources."""


def _contexts_world(scenario: Scenario, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(humans, judge, source per item): human scores averaged over three 1-5 raters with a source effect (sd 0.8,
    as large as the items'); the judge an integer 1-5 reply with a source lean of its own (unrelated to the
    humans': the null), or that lean plus :data:`PLANTED` times the human score (power) or minus it."""
    n = scenario.n_items
    groups = np.arange(n) // SOURCE_SIZE
    base = rng.normal(3.0, 0.8, n) + rng.normal(0.0, 0.8, groups[-1] + 1)[groups]
    human = np.clip(np.rint(base[:, None] + rng.normal(0.0, 0.6, (n, 3))), 1, 5).mean(axis=1)
    lean = rng.normal(0.0, 0.8, groups[-1] + 1)[groups]
    sign = {"noise (sources)": 0.0, "human_plus_noise (sources)": PLANTED, "anti_correlated (sources)": -PLANTED}
    centred = human - human.mean()
    judge = np.clip(np.rint(3.0 + lean + sign[scenario.judge] * centred + rng.normal(0.0, 0.8, n)), 1, 5)
    return human, judge, groups


def _items_interval(scenario: Scenario, rng: np.random.Generator, *, whole_sources: bool):
    from .. import metrics
    from ..trust import level_figure

    human, judge, groups = _contexts_world(scenario, rng)
    c = metrics.sample_correlation(human, judge, statistic="pearson", n_bootstrap=1000,
                                   seed=int(rng.integers(2 ** 31)), groups=groups if whole_sources else None)
    k = int(groups[-1] + 1)
    return level_figure("sample", {"pearson": c.value, "pearson_ci": [c.ci_low, c.ci_high], "n": human.size,
                                   "n_groups": k if whole_sources else 0,
                                   "resampled": "groups" if whole_sources else "items"})


def _excludes_zero(whole_sources: bool):
    def fires(scenario: Scenario, rng: np.random.Generator) -> bool:
        low, high = _items_interval(scenario, rng, whole_sources=whole_sources).ci
        return low is not None and high is not None and (low > 0 or high < 0)
    return fires


def _context_verdict(said: str, reason: str | None = None):
    def fires(scenario: Scenario, rng: np.random.Generator) -> bool:
        from .. import trust
        test = _items_interval(scenario, rng, whole_sources=True)
        verdict, reasons = trust.verdict(None, test, None, (), scenario.n_items, 0)
        return verdict == said and (reason is None or any(reason in r for r in reasons))
    return fires


CONTEXTS = "items in contexts of 6 sharing a source lean"
WORLD_CLAIMS += [
    Claim(f"the items' 95% interval excludes zero ({CONTEXTS}; whole sources resampled)", False,
          _excludes_zero(True), null=("noise (sources)",), planted=("human_plus_noise (sources)",),
          sizes=SAMPLE_SIZES, grouped=(True,)),
    Claim(f"old rule (retired): the items' 95% interval excludes zero ({CONTEXTS}; items resampled one by one)",
          False, _excludes_zero(False), null=("noise (sources)",), planted=("human_plus_noise (sources)",),
          sizes=SAMPLE_SIZES, grouped=(True,), retired=True),
    Claim(f"trust: ok ({CONTEXTS}, natural level the items')", False, _context_verdict("ok"),
          null=("noise (sources)",), planted=("human_plus_noise (sources)",), sizes=SAMPLE_SIZES, grouped=(True,)),
    Claim(f"warning: worse than chance ({CONTEXTS}, natural level the items')", False,
          _context_verdict("warning", "anti-correlated on the test items"), null=("noise (sources)",),
          planted=("anti_correlated (sources)",), sizes=SAMPLE_SIZES, grouped=(True,)),
]

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
- **The length probe at 10 groups**.
"""

from __future__ import annotations

import numpy as np

from .verdicts import Claim, Scenario, human_scores, judge_scores

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

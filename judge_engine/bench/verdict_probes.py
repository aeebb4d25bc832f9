"""The probes' claims for the verdict calibration (:mod:`.verdicts`): each warning a probe can print, fired or not
on simulated runs by the real probe code (:mod:`judge_engine.probes`).

Null judges: the humans plus the same noise everywhere, and pure noise. Planted ones: a system whose items get
three times the noise (``bad_slice``), an integer judge (the humans plus noise, rounded: healthy, a null for
collapse), a band of human scores the judge over-scores by a point
(``band_bias``), a constant and a near-constant judge (sd 0.01 against the humans' ~1), a judge that follows
output length, and a judge that adds a point when one particular demonstration comes last (``order_sensitive``).
"""

from __future__ import annotations

import numpy as np

from .verdict_claims import Claim, Scenario, groups_of, human_scores

SYSTEMS = 4
"""Systems the simulated items come from (round-robin), so each system is a slice of n/4 items."""

NULL = ("human_plus_noise", "noise")


def _lengths(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(20, 200, size=n)


def _judge(kind: str, human: np.ndarray, lengths: np.ndarray, systems: np.ndarray,
           rng: np.random.Generator) -> np.ndarray:
    n, sd = human.size, float(np.std(human)) or 1.0
    if kind == "noise":
        return rng.choice(np.arange(1.0, 6.0), n)
    if kind == "constant":
        return np.full(n, 4.0)
    if kind == "near_constant":
        return 4.0 + rng.normal(0.0, 0.01, n)
    if kind == "integer_judge":  # healthy: the humans plus noise, rounded to an integer reply on 1-5
        return np.clip(np.rint(human + rng.normal(0.0, 0.5 * sd, n)), 1, 5)
    if kind == "length_following":  # half the humans, half the length (ranked onto the humans' spread)
        z = (lengths - lengths.mean()) / (lengths.std() or 1.0)
        return human + sd * z + rng.normal(0.0, 0.5 * sd, n)
    judge = human + rng.normal(0.0, 0.5 * sd, n)
    if kind == "bad_slice":
        bad = systems == 0
        judge[bad] = human[bad] + rng.normal(0.0, 1.5 * sd, int(bad.sum()))
    elif kind == "band_bias":
        judge[human <= np.quantile(human, 1 / 3)] += 1.0
    elif kind != "human_plus_noise":
        raise ValueError(f"judge {kind!r} is not simulated by the probe claims")
    return judge


def _world(scenario: Scenario, rng: np.random.Generator):
    from ..records import Sample

    n = scenario.n_items
    human = human_scores(n, scenario.grouped, rng)
    lengths = _lengths(n, rng)
    systems = np.arange(n) % SYSTEMS
    groups = groups_of(n, scenario.grouped)
    judge = _judge(scenario.judge, human, lengths, systems, rng)
    samples = [Sample(id=f"s{i}", input="", output=" ".join(["w"] * int(lengths[i])), group_id=f"g{groups[i]}",
                      system_id=f"sys{systems[i]}", human={"q": float(human[i])}) for i in range(n)]
    return samples, human, judge, lengths


def _level(scenario: Scenario) -> str:
    return "group" if scenario.grouped else "sample"


def _slice_promoted(scenario: Scenario, rng: np.random.Generator) -> bool:
    from ..probes import disagreements

    samples, human, judge, _ = _world(scenario, rng)
    found = disagreements(samples, human, judge, [""] * len(samples), seed=int(rng.integers(2 ** 31)),
                          level=_level(scenario))
    return bool(found.flagged)


def _old_worst_slice(scenario: Scenario, rng: np.random.Generator) -> bool:
    """The rule before issue 49: the slice with the lowest Spearman, its whole interval below the overall one."""
    from .. import metrics

    samples, human, judge, _ = _world(scenario, rng)
    seed = int(rng.integers(2 ** 31))
    overall = metrics.correlation(human, judge, "spearman")
    systems = np.array([s.system_id for s in samples])
    cuts = np.quantile(human, [1 / 3, 2 / 3])
    parts = [systems == k for k in set(systems.tolist())]
    parts += [np.searchsorted(cuts, human, side="right") == k for k in range(3)]
    for mask in parts:
        if mask.sum() >= 5 and mask.sum() < human.size:
            c = metrics.sample_correlation(human[mask], judge[mask], n_bootstrap=1000, seed=seed)
            if np.isfinite(c.ci_high) and c.ci_high < overall:
                return True
    return False


def _collapsed(scenario: Scenario, rng: np.random.Generator) -> bool:
    from ..probes import collapse

    _, human, judge, _ = _world(scenario, rng)
    return bool(collapse(human, judge, seed=int(rng.integers(2 ** 31))).collapsed)


def _follows_length(scenario: Scenario, rng: np.random.Generator) -> bool:
    from ..probes import length_bias

    samples, human, judge, lengths = _world(scenario, rng)
    found = length_bias(lengths, human, judge, seed=int(rng.integers(2 ** 31)), level=_level(scenario),
                        groups=[s.group_id for s in samples])
    return bool(found.flagged)


DEMONSTRATIONS = 3
"""Demonstrations in the simulated order probe's prompt (Active-Critic-like); with 3 there are 6 orders."""


def _order_changes(scenario: Scenario, rng: np.random.Generator) -> bool:
    """The order probe at its defaults (3 repeats, up to 20 items) on orders from :func:`probes.orderings`."""
    from ..methods import Judge
    from ..probes import STABILITY_ITEMS, STABILITY_REPEATS, orderings, stability_figures

    n = min(scenario.n_items, STABILITY_ITEMS)
    human = human_scores(n, scenario.grouped, rng)
    base = _judge("noise" if scenario.judge == "noise" else "human_plus_noise", human, _lengths(n, rng),
                  np.arange(n) % SYSTEMS, rng)  # drawn once per item: a greedy judge repeats itself
    judge = Judge(method="active_critic", params={}, aspect={"name": "q", "low": 1, "high": 5}, task={},
                  state={"demos": [{"sample_id": f"d{i}"} for i in range(DEMONSTRATIONS)]})
    rows = []
    for ordered in orderings(judge, STABILITY_REPEATS, seed=int(rng.integers(2 ** 31))):
        last = ordered.state["demos"][-1]["sample_id"]
        shift = 1.0 if scenario.judge == "order_sensitive" and last == "d0" else 0.0
        rows.append(base + shift)
    return bool(stability_figures(np.array(rows), human, temperature=0.0, varied="order").flagged)


PROBE_CLAIMS: list[Claim] = [
    Claim("probe: a slice differs from the rest (promoted to the summary and Compare headline)", False,
          _slice_promoted, null=NULL, planted=("bad_slice", "band_bias")),
    Claim("probe (old rule, retired): worst slice's interval below the overall Spearman", False, _old_worst_slice,
          null=("human_plus_noise",), planted=("bad_slice",), sizes=(50, 200), grouped=(False,), retired=True),
    Claim("probe: scores collapsed (few values or spread under a quarter of the humans')", False, _collapsed,
          null=NULL, planted=("near_constant", "constant")),
    Claim("probe: scores collapsed, an integer judge against the mean of three raters", False, _collapsed,
          null=("integer_judge",)),
    Claim("probe: follows length more than the humans do", False, _follows_length, null=NULL,
          planted=("length_following",)),
    Claim("probe: follows length more than the humans do, 5-15 groups of 4 (sign-flip test)", False, _follows_length,
          null=NULL, planted=("length_following",), sizes=(20, 40, 60), grouped=(True,)),
    Claim("probe: the order of the demonstrations changes the scores", False, _order_changes, null=NULL,
          planted=("order_sensitive",)),
]

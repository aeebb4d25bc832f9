"""Stability: re-score the same items varying one thing (sampling, or the order of what the prompt lists)."""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

import numpy as np

from .. import metrics
from ..llm import LLMConfig
from ..records import Sample
from ..records import jsonable  # the reports' JSON rule (NaN written as null)
from ._common import N_BOOTSTRAP, Figure, _finite, _interval, fig_text

STABILITY_ITEMS = 20
"""Test items a stability probe re-scores by default."""

STABILITY_REPEATS = 3
"""Times each is re-scored by default."""

STABILITY_TEMPERATURE = 0.7
"""Sampling temperature of the repeats (greedy requests are sent at it; a method that samples keeps its own)."""

ORDER_CHANGE_FLOOR = 0.10
"""The order probe warns when, with its whole interval, more than this share of the items change score between
orders at greedy decoding (a server that is not deterministic at temperature 0 moves a few on its own)."""


@dataclass(frozen=True)
class Stability:
    """How much the judge's scores move when the same items are scored again with sampling on."""

    n_items: int
    """Items re-scored."""
    repeats: int
    temperature: float
    n: int
    """Items scored in every repeat (the figures rest on these)."""
    missing: int
    """Repeat scores that came back without a score (counted, never imputed)."""
    mean_sd: float | None
    """Mean over items of the standard deviation of their scores across repeats (scale points)."""
    retest: Figure
    """Mean pairwise Spearman between repeats, with a bootstrap interval over items."""
    with_humans: tuple[float | None, ...]
    """Spearman with the human scores of each repeat."""
    with_humans_spread: float | None
    """Largest minus smallest of ``with_humans``."""
    varied: str
    """What varied between repeats: ``sampling`` (temperature and seed) or ``order`` (the order of the
    demonstrations, criteria, examples or hypotheses inside the prompts, decoding greedy)."""
    note: str = ""
    changed: Figure = Figure(None, (None, None), 0)
    """Share of the items (scored in every repeat) whose score is not the same in all repeats, with a Wilson
    interval."""
    orders_possible: int | None = None
    """Order probe: how many distinct orders the judge's lists allow; the repeats are distinct ones among them,
    the run's own order first."""
    requested: int | None = None
    """Repeats asked for, when fewer distinct orders exist."""

    @property
    def flagged(self) -> bool:
        """Order probe only: the order moves the scores of more than :data:`ORDER_CHANGE_FLOOR` of the items."""
        low = self.changed.ci[0]
        return self.varied == "order" and low is not None and low > ORDER_CHANGE_FLOOR

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict; NaN is never written (undefined values are None)."""
        return jsonable(asdict(self))


def stability_figures(scores: np.ndarray, human: Sequence[float], *, temperature: float,
                      seed: int = 0, varied: str = "sampling") -> Stability:
    """The stability figures of ``scores`` (one row per repeat, one column per item), no call."""
    x = np.asarray(scores, dtype=float)
    h = np.asarray(human, dtype=float)
    repeats, n_items = x.shape
    complete = np.all(np.isfinite(x), axis=0)
    n = int(complete.sum())
    missing = int((~np.isfinite(x)).sum())
    retest, _ = metrics.retest_agreement(x, n_bootstrap=N_BOOTSTRAP, seed=seed)
    per_repeat = tuple(_finite(metrics.correlations(h[np.isfinite(row)], row[np.isfinite(row)])["spearman"])
                       if np.isfinite(row).sum() >= 2 else None for row in x)
    defined = [v for v in per_repeat if v is not None]
    moved = int((np.ptp(x[:, complete], axis=0) > 0).sum()) if n else 0
    low, high = metrics.rate_interval(moved, n)
    changed = Figure(round(moved / n, 4) if n else None, _interval((low, high)), n)
    note = ""
    if n < 2:
        note = f"{n} of {n_items} items were scored in every repeat: too few for a figure"
    elif not math.isfinite(retest.value):
        note = "the judge gave every item the same score in a repeat: its repeats cannot be correlated"
    return Stability(n_items=n_items, repeats=repeats, temperature=temperature, n=n, missing=missing,
                     mean_sd=_finite(float(np.std(x[:, complete], axis=0, ddof=1).mean())) if n and repeats > 1
                     else None,
                     retest=Figure(_finite(retest.value), _interval((retest.ci_low, retest.ci_high)), n),
                     with_humans=per_repeat,
                     with_humans_spread=round(max(defined) - min(defined), 4) if defined else None,
                     varied=varied, note=note, changed=changed)


def stability_items(test_ids: Sequence[str], size: int = STABILITY_ITEMS, *, seed: int = 0) -> list[str]:
    """The test items a stability probe re-scores: a seeded sample of ``size`` (all when fewer)."""
    ids = list(test_ids)
    if len(ids) <= size:
        return ids
    chosen = np.random.default_rng(seed).choice(len(ids), size=size, replace=False)
    return [ids[i] for i in sorted(chosen)]


def stability_calls(method: Any, n_items: int, repeats: int) -> int:
    """Calls a stability probe makes before any cache hit: ``repeats`` scorings of ``n_items``."""
    return int(method.estimate_calls(0, n_items).get("score", n_items)) * repeats


VARIES = ("sampling", "order")
"""What a stability probe varies between repeats; reported apart, so a position effect shows as such."""


MAX_ENUMERATED_ORDERS = 5040
"""Up to this many orders (7 items in one list) all are listed and drawn from without repeats; beyond it
random orders are drawn and a repeated one is drawn again."""


def _orderable(judge: Any) -> list[tuple[str, int]]:
    from ..methods import METHODS

    out = []
    for name in METHODS[judge.method].ordered_state:
        value = judge.state.get(name)
        if isinstance(value, (list, dict)) and len(value) > 1:
            out.append((name, len(value)))
    return out


def orders_possible(judge: Any) -> int:
    """How many distinct orders of the lists ``judge`` puts in its prompts exist (1 when there is nothing to
    reorder)."""
    return math.prod(math.factorial(size) for _, size in _orderable(judge))


def orderings(judge: Any, count: int, *, seed: int = 0) -> list[Any]:
    """``count`` distinct orders of ``judge``'s prompt lists (fewer when fewer exist), the run's own first.

    Each repeat of an order probe must show the judge another order: shuffling with one seed per repeat gives
    the same permutation of two or three items again and again, and never the run's own order.
    """
    from ..methods import Judge

    fields = _orderable(judge)
    total = orders_possible(judge)
    count = max(1, min(int(count), total))
    rng = np.random.default_rng(seed)
    identity = tuple(tuple(range(size)) for _, size in fields)
    if total <= MAX_ENUMERATED_ORDERS:
        every = [o for o in itertools.product(*(itertools.permutations(range(size)) for _, size in fields))
                 if o != identity]
        picked = [identity] + [every[i] for i in sorted(rng.choice(len(every), size=count - 1, replace=False))]
    else:
        seen = {identity}
        picked = [identity]
        while len(picked) < count:
            o = tuple(tuple(int(v) for v in rng.permutation(size)) for _, size in fields)
            if o not in seen:
                seen.add(o)
                picked.append(o)
    out = []
    for order in picked:
        state = dict(judge.state)
        for (name, _), perm in zip(fields, order):
            value = state[name]
            if isinstance(value, list):
                state[name] = [value[i] for i in perm]
            else:
                keys = list(value)
                state[name] = {keys[i]: value[keys[i]] for i in perm}
        out.append(Judge(method=judge.method, params=judge.params, aspect=judge.aspect, task=judge.task,
                         state=state))
    return out


def stability(judge: Any, samples: Sequence[Sample], aspect: str, *, llm: Any, repeats: int = STABILITY_REPEATS,
              temperature: float = STABILITY_TEMPERATURE, seed: int = 0, vary: str = "sampling",
              progress: Any = None) -> Stability:
    """Score ``samples`` ``repeats`` times, varying one thing, and measure the spread.

    ``vary="sampling"``: each repeat samples at ``temperature`` with its own seed (``seed + 1 ...``) through
    the one call path (:meth:`judge_engine.llm.LLM.sampled`). ``vary="order"``: decoding stays greedy and each
    repeat shows a distinct order of the items the judge puts inside its prompts (its method's
    ``ordered_state``: demonstrations, criteria, examples, hypotheses), the run's own order first
    (:func:`orderings`); fewer repeats are made when fewer orders exist, and the result says so. A method that
    lists nothing, or a judge with a single order, raises ValueError. Every call is cached: re-running the probe costs nothing and an interrupted one resumes. The
    run's own verdicts are not touched. ``progress(done, total, stage)`` is called as items are scored.
    """
    from ..methods import METHODS

    if vary not in VARIES:
        raise ValueError(f"a stability probe varies one of {', '.join(VARIES)}, not {vary!r}")
    if repeats < 2:
        raise ValueError(f"a stability probe needs at least 2 repeats, got {repeats}")
    if not samples:
        raise ValueError("a stability probe needs at least one item to re-score")
    if vary == "order" and not METHODS[judge.method].ordered_state:
        raise ValueError(f"{judge.method} puts no list of demonstrations, criteria or examples into one prompt: "
                         "there is no order to vary")
    orders = orderings(judge, repeats, seed=seed) if vary == "order" else []
    if vary == "order" and len(orders) < 2:
        raise ValueError("the judge lists at most one item in its prompts: there is only one order")
    asked, repeats = repeats, (len(orders) if vary == "order" else repeats)
    rows = []
    for r in range(repeats):
        stage = f"stability ({vary}) repeat {r + 1} of {repeats}"
        tick = (lambda d, t, _stage="", _s=stage: progress(d, t, _s)) if progress else None
        if vary == "sampling":
            verdicts = judge.score(list(samples), llm=llm.sampled(temperature=temperature, seed=seed + 1 + r),
                                   progress=tick)
        else:
            verdicts = orders[r].score(list(samples), llm=llm, progress=tick)
        by_id = {v.sample_id: v.score for v in verdicts if v.aspect == aspect}
        rows.append([by_id.get(s.id, math.nan) for s in samples])
    human = [s.human.get(aspect, math.nan) for s in samples]
    found = stability_figures(np.array(rows, dtype=float), human, temperature=temperature if vary == "sampling"
                              else 0.0, seed=seed, varied=vary)
    if vary == "order":
        found = replace(found, orders_possible=orders_possible(judge), requested=asked if asked > repeats else None)
    return found


def probe_stability(store: Any, run_id: int, *, llm: Any = None, items: int = STABILITY_ITEMS,
                    repeats: int = STABILITY_REPEATS, temperature: float = STABILITY_TEMPERATURE, seed: int = 0,
                    vary: str = "sampling", progress: Any = None, api_key: str | None = None) -> Stability:
    """:func:`stability` of finished run ``run_id`` on a seeded sample of its test items, on the run's backend.

    Raises
    ------
    ValueError
        When the run is not finished, or has no judge or no test items.
    """
    from .. import runs
    from ..methods import Judge
    from . import make_llm  # looked up on the package at call time, where a test may swap the backend factory

    run = store.run(run_id)
    if run.status != "finished" or run.judge is None or run.split is None:
        raise ValueError(f"run #{run_id} is {run.status}: only a finished run has a judge to re-score with")
    dataset = runs.human_dataset(store, run.dataset, run.human_aggregate)
    ids = stability_items([i for i in run.split.test_ids if i in dataset.by_id()], items, seed=seed)
    if llm is None:
        llm = make_llm(LLMConfig.from_dict(run.llm), store=store, api_key=api_key)
    return stability(Judge.from_dict(run.judge), dataset.subset(ids), run.aspect, llm=llm, repeats=repeats,
                     temperature=temperature, seed=seed, vary=vary, progress=progress)


def stability_lines(found: Stability) -> list[str]:
    """The stability probe in sentences (for a terminal or a caption)."""
    what = (f"sampling, temperature {found.temperature:g}" if found.varied == "sampling"
            else "order of the items inside the prompts, greedy, distinct orders with the run's own first"
            + (f", {found.orders_possible} exist" if found.orders_possible else "")
            + (f", {found.requested} asked" if found.requested else ""))
    head = (f"stability ({what}, {found.repeats} repeats of "
            f"{found.n_items} items, {found.n} scored in every repeat"
            + (f", {found.missing} repeat scores missing" if found.missing else "") + ")")
    if found.note:
        return [f"{head}: {found.note}"]
    spread = ", ".join("undefined" if v is None else f"{v:+.2f}" for v in found.with_humans)
    changed = found.changed
    moved = (f"; {changed.value:.0%} of the items changed score [{changed.ci[0]:.0%}, {changed.ci[1]:.0%}]"
             if changed.value is not None and changed.ci[0] is not None else "")
    lines = [f"{head}: mean per-item standard deviation {found.mean_sd:.2f} points; test-retest Spearman "
             f"{fig_text(found.retest)}; Spearman with the humans per repeat {spread}"
             + (f" (spread {found.with_humans_spread:.2f})" if found.with_humans_spread is not None else "") + moved]
    if found.flagged:
        lines.append("warning: the order of the items in the prompt changes the scores. Advice: " + ORDER_ADVICE)
    return lines


ORDER_ADVICE = ("fix one order for good and report it, or average the scores over several orders "
                "(or shuffle the demonstrations per item)")

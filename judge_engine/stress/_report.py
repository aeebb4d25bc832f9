"""Score each item and its perturbed twin, and say per transformation whether the judge reacted as it should."""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np
from scipy import stats

from .. import evidence, metrics
from ..records import Sample
from ._table import LOWER, NEUTRAL, NONE, StressTable, default_transformations, expectation, load_table
from ._transforms import TRANSFORMATIONS, StressContext

ALPHA = 0.05
"""Level of the paired interval (two-sided). A transformation that should lower the aspect is 'sensitive' when
the whole interval of the mean change is below zero: a one-sided test at ALPHA / 2."""

ALPHA_NEUTRAL = 0.025
"""Two-sided level at which a change that should not matter 'reacts'. At 0.05 a judge scoring pure noise was
flagged in 5.0-5.6% of draws (8-40 items, 10,000 draws each): discrete scores make the t-test a little liberal,
so the verdict asks for p below half that; the false alarms are measured by
``python -m judge_engine.bench stress-calibration`` (docs/reliability.md)."""

MIN_PAIRS = 8
"""Fewest items scored both before and after a transformation for a verdict (the probes' MIN_ITEMS)."""

STRESS_ITEMS = 40
"""Test items a stress test perturbs by default (a seeded sample; all of them when fewer)."""

SENSITIVE = "sensitive"
NOT_SHOWN = "not shown"
REACTS = "reacts to a change that should not matter"
STEADY = "steady"
TOO_FEW = "too few items"
NO_EXPECTATION = "no expected direction"
VERDICTS = (SENSITIVE, NOT_SHOWN, REACTS, STEADY, TOO_FEW, NO_EXPECTATION)
"""``steady``: a change that should not matter did not move the scores (what a good judge shows)."""


@dataclass(frozen=True)
class TransformationResult:
    """What one transformation did to the judge's scores of the items it changed."""

    name: str
    description: str
    expected: str
    """``lower``, ``neutral`` or ``none`` (see :mod:`._table`)."""
    n_items: int
    """Items perturbed (the transformation changed their output)."""
    unchanged: int
    """Items it left as they were (nothing to shuffle, no name to swap): not scored, not counted below."""
    n: int
    """Items scored both before and after: every figure rests on these."""
    missing: int
    """Items whose original or twin reply gave no score (counted, never imputed)."""
    share_lower: float | None
    share_lower_ci: tuple[float | None, float | None]
    """Wilson interval of ``share_lower``."""
    share_higher: float | None
    mean_change: float | None
    """Mean of twin score minus original score (scale points; negative: scored lower)."""
    mean_change_ci: tuple[float | None, float | None]
    """Paired t interval (``1 - ALPHA``) of the mean change."""
    p: float | None
    """Two-sided paired t-test p-value (0 when every change is the same non-zero number); the verdict reads it."""
    verdict: str
    """One of :data:`VERDICTS`."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StressReport:
    """A stress test of one judge on one aspect."""

    aspect: str
    n_items: int
    """Items perturbed (each transformation's own count is in its result)."""
    original_missing: int
    """Of those, items whose unperturbed reply gave no score."""
    seed: int
    table: str
    """The table file the expectations came from."""
    results: tuple[TransformationResult, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["results"] = [r.to_dict() for r in self.results]
        return _clean(out)


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def paired_change(before: Sequence[float], after: Sequence[float], expected: str, *,
                  groups: Sequence[str] | None = None) -> dict[str, Any]:
    """The figures and verdict of one transformation from the scores before and after (NaN: missing).

    Pure: the bench calibrates exactly this function. Items missing on either side are counted and left out.
    ``groups`` (the items' sources) apply the one rule for evidence (:mod:`judge_engine.evidence`): items from
    fewer than five sources carry no verdict either way ("too few items").
    """
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    both = np.isfinite(b) & np.isfinite(a)
    d = a[both] - b[both]
    n = int(d.size)
    out: dict[str, Any] = {"n": n, "missing": int((~both).sum()), "share_lower": None, "share_lower_ci": (None, None),
                           "share_higher": None, "mean_change": None, "mean_change_ci": (None, None), "p": None}
    if n:
        lower = int((d < 0).sum())
        low, high = metrics.rate_interval(lower, n)
        out.update(share_lower=lower / n, share_lower_ci=(_num(low), _num(high)),
                   share_higher=float((d > 0).sum()) / n, mean_change=float(d.mean()))
    if n >= 2:
        sd = float(d.std(ddof=1))
        if sd == 0.0:  # every item moved by the same amount: no spread to test against, and none needed
            out.update(mean_change_ci=(float(d.mean()), float(d.mean())), p=1.0 if d[0] == 0 else 0.0)
        else:
            test = stats.ttest_1samp(d, 0.0)
            ci = test.confidence_interval(1 - ALPHA)
            out.update(mean_change_ci=(float(ci.low), float(ci.high)), p=float(test.pvalue))
    out["verdict"] = verdict(n, out["mean_change"], out["p"], expected)
    kept = [g for g, k in zip(groups, both) if k] if groups is not None else None
    if kept is not None and out["verdict"] not in (NO_EXPECTATION, TOO_FEW) and not evidence.basis(
            "sample", n_items=n, groups=kept, statistic="mean").claim:
        out["verdict"] = TOO_FEW
    return out


def verdict(n: int, mean_change: float | None, p: float | None, expected: str) -> str:
    """The verdict from the mean change and its two-sided paired p-value (see :data:`ALPHA`,
    :data:`ALPHA_NEUTRAL`)."""
    if expected == NONE:
        return NO_EXPECTATION
    if n < MIN_PAIRS or mean_change is None or p is None:
        return TOO_FEW
    if expected == LOWER:  # the 95% interval wholly below zero
        return SENSITIVE if mean_change < 0 and p < ALPHA else NOT_SHOWN
    if expected == NEUTRAL:
        return REACTS if p < ALPHA_NEUTRAL else STEADY
    raise ValueError(f"unknown expectation {expected!r}")


OTHERS_SHOWN = 64
"""Outputs drawn (with replacement, then those of the item's own group dropped) as the other groups' outputs a
transformation may swap in: enough to choose from, and no list of every other output per item on a large file."""


def _rng(seed: int, name: str, item_id: str) -> np.random.Generator:
    # seeded by the item's id, not its place: adding an item or a transformation changes no other twin
    digest = hashlib.sha256(f"{seed}|{name}|{item_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def twins(samples: Sequence[Sample], name: str, *, seed: int = 0) -> dict[str, Sample]:
    """Each item's perturbed twin under transformation ``name``, for the items it changes (by the item's id).

    The twin keeps the item's input, context and reference and gets an id of its own; each item draws from its
    own generator (seeded by ``seed``, the transformation and the item's id). A transformation that raises is a
    ValueError naming it and the item.
    """
    record = TRANSFORMATIONS[name]
    out = {}
    for s in samples:
        rng = _rng(seed, name, s.id)
        # the pool from its own generator: the perturbation's draws do not depend on how many items there are
        drawn = _rng(seed, f"{name}|others", s.id).integers(0, len(samples), size=min(OTHERS_SHOWN, len(samples)))
        others = tuple(dict.fromkeys(samples[int(i)].output for i in drawn if samples[int(i)].group_id != s.group_id))
        try:
            text = record.perturb(s.output, rng, StressContext(source=s.input, others=others))
        except Exception as exc:  # a user's transformation: one line, not a traceback
            raise ValueError(f"transformation {name!r} raised {type(exc).__name__} on item {s.id!r}: {exc}") from None
        if not isinstance(text, str):
            raise ValueError(f"transformation {name!r} returned {type(text).__name__} on item {s.id!r}, not text")
        if text != s.output:
            out[s.id] = Sample(id=f"{s.id}~{name}", input=s.input, output=text, group_id=s.group_id,
                               system_id=s.system_id, context=s.context, reference=s.reference)
    return out


def resolve(table: StressTable, aspect: str, names: Sequence[str] | None) -> list[str]:
    """The transformations to run: ``names`` (each must exist) or the table's for ``aspect``."""
    if not names:
        return default_transformations(table, aspect)
    unknown = [n for n in names if n not in TRANSFORMATIONS]
    if unknown:
        raise ValueError(f"unknown transformation {', '.join(map(repr, unknown))} (known: "
                         f"{', '.join(TRANSFORMATIONS)})")
    return list(dict.fromkeys(names))


def stress(judge: Any, samples: Sequence[Sample], aspect: str, *, llm: Any, transformations: Sequence[str] | None = None,
           table: StressTable | None = None, seed: int = 0,
           progress: Callable[[int, int, str], None] | None = None) -> StressReport:
    """Score ``samples`` and their perturbed twins with ``judge`` through ``llm`` and compare them in pairs.

    Every call goes through the one call path and its cache: the unperturbed items of a stored run come back
    from the cache, and a second stress test with the same seed costs nothing. All twins are made before the
    first call, so a transformation that raises stops the test before anything is paid for.
    """
    if not samples:
        raise ValueError("a stress test needs at least one item to perturb")
    table = table or load_table()
    names = resolve(table, aspect, transformations)
    made = {name: twins(samples, name, seed=seed) for name in names}
    total = len(names) + 1

    def tick(stage: str) -> Callable[[int, int, str], None] | None:
        return (lambda d, t, _s="", _stage=stage: progress(d, t, _stage)) if progress else None

    def scores(items: Sequence[Sample], stage: str) -> dict[str, float]:
        if not items:
            return {}
        verdicts = judge.score(list(items), llm=llm, progress=tick(stage))
        return {v.sample_id: (math.nan if v.missing else float(v.score)) for v in verdicts}

    before = scores(samples, f"stress 1 of {total}: the items as they are")
    results = []
    for k, name in enumerate(names, start=2):
        twin = made[name]
        after = scores(list(twin.values()), f"stress {k} of {total}: {name}")
        ids = list(twin)
        expected = expectation(table, name, aspect)
        source = {s.id: s.group_id for s in samples}
        found = paired_change([before.get(i, math.nan) for i in ids],
                              [after.get(twin[i].id, math.nan) for i in ids], expected,
                              groups=[source.get(i, i) for i in ids])
        results.append(TransformationResult(name=name, description=TRANSFORMATIONS[name].description,
                                            expected=expected, n_items=len(ids), unchanged=len(samples) - len(ids),
                                            **found))
    return StressReport(aspect=aspect, n_items=len(samples),
                        original_missing=sum(1 for s in samples if not math.isfinite(before.get(s.id, math.nan))),
                        seed=seed, table=table.source, results=tuple(results))


def stress_run(store: Any, run_id: int, *, llm: Any = None, transformations: Sequence[str] | None = None,
               table: StressTable | None = None, items: int = STRESS_ITEMS, seed: int = 0,
               progress: Callable[[int, int, str], None] | None = None, api_key: str | None = None) -> StressReport:
    """:func:`stress` of finished run ``run_id`` on a seeded sample of its test items, on the run's backend.

    Raises
    ------
    ValueError
        When the run is not finished, has no judge or no test items, or a transformation is unknown or raises.
    judge_engine.store.NotFound
        When there is no run ``run_id``.
    """
    from .. import runs
    from ..llm import LLMConfig
    from ..methods import Judge
    from ..probes import stability_items
    from . import make_llm  # looked up on the package at call time, where a test may swap the backend factory

    run = store.run(run_id)
    if run.status != "finished" or run.judge is None or run.split is None:
        raise ValueError(f"run #{run_id} is {run.status}: only a finished run has a judge to stress")
    dataset = runs.human_dataset(store, run.dataset, run.human_aggregate)
    index = dataset.by_id()
    ids = stability_items([i for i in run.split.test_ids if i in index], items, seed=seed)
    if not ids:
        raise ValueError(f"run #{run_id} has no test items to perturb")
    table = table or load_table()
    resolve(table, run.aspect, transformations)  # an unknown name or aspect is refused before the backend is made
    if llm is None:
        llm = make_llm(LLMConfig.from_dict(run.llm), store=store, api_key=api_key)
    return stress(Judge.from_dict(run.judge), [index[i] for i in ids], run.aspect, llm=llm,
                  transformations=transformations, table=table, seed=seed, progress=progress)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def result_line(r: TransformationResult) -> str:
    """One transformation in a sentence (terminal, caption, CI log)."""
    head = f"{r.name}: {r.verdict}"
    if r.mean_change is None:
        return f"{head} ({r.n} of {r.n_items} items scored before and after, {r.missing} missing)"
    ci = r.mean_change_ci
    interval = f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci[0] is not None else " (no interval)"
    return (f"{head}; scored lower on {_pct(r.share_lower)} of {r.n} items [{_pct(r.share_lower_ci[0])}, "
            f"{_pct(r.share_lower_ci[1])}], higher on {_pct(r.share_higher)}; mean change {r.mean_change:+.2f}"
            f"{interval}" + (f"; {r.missing} missing" if r.missing else "")
            + (f"; {r.unchanged} items unchanged by it" if r.unchanged else ""))


def stress_lines(report: StressReport) -> list[str]:
    """The report in sentences, a head line then one per transformation."""
    head = (f"stress test on {report.aspect}: {report.n_items} test items, each perturbed and scored again (seed "
            f"{report.seed}); expected directions from {report.table}"
            + (f"; {report.original_missing} items had no score before any change" if report.original_missing
               else ""))
    return [head] + [result_line(r) for r in report.results]

"""Whether to trust a finished judge: the figures a person needs beside its result, and a verdict in words.

:func:`trust_report` reads one finished run from the store and returns a
:class:`TrustReport`:

- the training correlation the judge was chosen on, and how many items it
  rests on (read per method from the judge's state; direct scoring and
  G-Eval learn nothing, so they have none);
- the test correlation at the dataset's natural level with its interval, or
  no interval and the reason (:data:`judge_engine.metrics.MIN_BOOTSTRAP_UNITS`),
  and the sample-level figure beside a group- or system-level one;
- the missing rate, and how many groups stand behind a group-level figure;
- the paired difference to each baseline run (direct scoring, G-Eval) on
  the same dataset, aspect, test items and backend, with the paired
  bootstrap of :func:`judge_engine.compare.paired_bootstrap`;
- ``verdict``: ``"ok"``, or ``"warning"`` with ``reasons`` when the judge is
  anti-correlated with the humans (test or training correlation at or below
  zero), has no test correlation at all, or is significantly below a
  baseline on the same split.

The pages (``pages.ui.trust.trust_panel``), the CLI summary and the exported
judge file all show this one record.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from . import compare, metrics, runs
from .methods.active_critic import ActiveCriticState
from .methods.hd_eval import HDEvalState
from .methods.hpss import HPSSState
from .methods.hypoeval import HypoEvalState
from .records import RunRecord
from .store import Store

STATISTIC = "pearson"
"""The coefficient of the test figures and of the paired differences."""

BASELINE_METHODS = runs.BASELINES
"""The baselines a learned judge must beat: the methods a run brings on its own split (they learn nothing
from the training items), one list for both."""

TRAINING_ALPHA = 0.05
"""A judge chosen on a positive training correlation that is not significantly above zero at this two-sided
level, for the number of items it rests on, is warned about. On the dozen or so items a selection rests on,
unrelated scores give large correlations (at 12 items the two-sided 5% band of a Pearson under no relation is
about +-0.58): a HypoEval hypothesis on Topical-Chat was adopted on a training Pearson of 0.005 over 12 items,
and HypoEval on SF-RES was chosen on 0.27-0.54 and scored the test items at -0.42. A fixed floor (0.1 once)
cannot say this, because what counts as no sign of agreement depends on the number of items."""
ALPHA = 0.05
"""Two-sided level of the paired bootstrap below which a difference to a baseline counts as significant."""

N_BOOTSTRAP = 1000
"""Resamples of the paired bootstrap (and of the intervals when a stored summary predates their notes)."""


@dataclass(frozen=True)
class TrainingFigure:
    """The correlation a learned judge was chosen on, on its training (or validation) items."""

    value: float | None
    """The correlation (None: undefined, e.g. nothing scored)."""
    measure: str
    """What the value is, in words (coefficient, what was correlated, which items)."""
    n_items: int
    """Items the figure was computed on (tried)."""
    n_scored: int
    """Of those, items that had a score."""
    parts: tuple[tuple[str, float | None], ...] = ()
    """Per part (a HypoEval hypothesis), its own training correlation."""


@dataclass(frozen=True)
class TestFigure:
    """A test correlation at one level."""

    level: str
    value: float | None
    ci: tuple[float | None, float | None]
    ci_note: str
    """Why there is no interval ("" when there is one)."""
    n: int
    """Items with a human and a judge score."""
    n_groups: int
    """Groups behind a group-level figure (0 at sample level)."""
    n_systems: int


@dataclass(frozen=True)
class BaselineDifference:
    """The judge's test correlation minus a baseline run's, on the same items, with its paired p-value."""

    run_id: int
    method: str
    level: str
    """Level of the comparison (the natural one, or sample when it has too few units for a bootstrap)."""
    diff: float | None
    p: float | None
    n: int
    """Items both runs scored."""
    significantly_below: bool

    @property
    def label(self) -> str:
        return f"#{self.run_id} {self.method}"


@dataclass(frozen=True)
class TrustReport:
    """Everything a person needs before trusting a finished judge; see the module docstring."""

    run_id: int
    method: str
    statistic: str
    training: TrainingFigure | None
    """None for methods that learn nothing (direct scoring, G-Eval)."""
    test: TestFigure | None
    """At the natural level; None when the run has no verdicts."""
    sample: TestFigure | None
    """The sample-level figure, when the natural level is another one."""
    n: int
    missing: int
    missing_rate: float
    baselines: tuple[BaselineDifference, ...]
    verdict: str
    """``"ok"`` or ``"warning"``."""
    reasons: tuple[str, ...]
    """Why the verdict is a warning, in words (empty when ok)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (tuples become lists, NaN is never written: undefined values are None)."""
        out = asdict(self)
        out["baselines"] = [{**asdict(b), "label": b.label} for b in self.baselines]
        return _jsonable(out)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _finite(x: Any) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------- training figure per method


def training_figure(method: str, state: dict[str, Any], target: str) -> TrainingFigure | None:
    """The training correlation of a judge's state, per method (None for methods that learn nothing).

    A state its method's record cannot read (a judge file edited by hand, a key renamed) gives a figure
    without a value whose measure says why: the report is still shown, with the rest of its figures."""
    try:
        return _training_figure(method, state, target)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return TrainingFigure(None, f"the judge's stored state could not be read ({type(exc).__name__}: {exc})",
                              0, 0)


def _training_figure(method: str, state: dict[str, Any], target: str) -> TrainingFigure | None:
    if method == "hypoeval":
        hypo = HypoEvalState.from_dict(state)
        parts = tuple((h.text or h.key or "", _finite(h.train_pearson)) for h in hypo.selected)
        scored = [h.train_parsed or 0 for h in hypo.selected]
        return TrainingFigure(value=hypo.mean_training_pearson,
                              measure=f"mean training Pearson of the {len(hypo.selected)} selected hypotheses",
                              n_items=len(hypo.train_ids), n_scored=min(scored) if scored else 0, parts=parts)
    if method == "hpss":
        sel = HPSSState.from_dict(state).selection
        if sel is None:
            return TrainingFigure(None, "the chosen strategy's validation figures were not recorded", 0, 0)
        return TrainingFigure(value=_finite(sel.correlation),
                              measure="Spearman of the chosen strategy on the validation items",
                              n_items=sel.n, n_scored=sel.n_scored)
    if method == "active_critic":
        chosen = ActiveCriticState.from_dict(state).chosen_set
        if chosen is None:
            return TrainingFigure(None, "the chosen demonstration set's training figures were not recorded", 0, 0)
        return TrainingFigure(value=chosen.pearson,
                              measure=("training Pearson of the chosen demonstration set"
                                       + (f" (Q = {chosen.q:.2f})" if chosen.q is not None else "")),
                              n_items=chosen.n_items, n_scored=chosen.n_scored)
    if method == "hd_eval":
        hd = HDEvalState.from_dict(state)
        return TrainingFigure(value=hd.training_pearson(target),
                              measure="out-of-fold (cross-validated) training Pearson of the aggregator",
                              n_items=len(hd.train_ids), n_scored=len(hd.train_ids))
    return None


# --------------------------------------------------------------------------- test figures


def _test_figure(level: str, rep: dict[str, Any]) -> TestFigure:
    ci = rep.get(f"{STATISTIC}_ci") or [None, None]
    return TestFigure(level=level, value=_finite(rep.get(STATISTIC)), ci=(_finite(ci[0]), _finite(ci[1])),
                      ci_note=str(rep.get("ci_note") or ""), n=int(rep.get("n") or 0),
                      n_groups=int(rep.get("n_groups") or 0) if level != "sample" else 0,
                      n_systems=int(rep.get("n_systems") or 0))


def _same_backend(a: RunRecord, b: RunRecord) -> bool:
    keys = ("backend", "model", "base_url")
    return all(a.llm.get(k, "") == b.llm.get(k, "") for k in keys)


def baseline_runs(store: Store, run: RunRecord) -> list[RunRecord]:
    """Finished baseline runs (direct, G-Eval) on the same dataset, aspect, test items and backend as ``run``.

    A baseline run itself has none: it is what the learned judges are measured against. The runs come
    as :func:`judge_engine.compare.finished_runs` gives them, ready for :func:`compare.align`.
    """
    if run.method in BASELINE_METHODS:
        return []
    key = compare.split_key(run)
    found = []
    for other in compare.finished_runs(store, run.dataset, run.aspect):
        if (other.id != run.id and other.method in BASELINE_METHODS and compare.split_key(other) == key
                and _same_backend(other, run)):
            found.append(other)
    return found


def _baseline_differences(store: Store, run: RunRecord, baselines: list[RunRecord],
                          level: str, dataset: Any, n_bootstrap: int) -> tuple[BaselineDifference, ...]:
    out = []
    for b in baselines:
        aligned = compare.align(store, [run, b], common_subset=True)
        human, groups, systems = compare._columns(dataset, run.aspect, aligned.ids)
        diff, p = compare.paired_bootstrap(human, aligned.scores[run.id], aligned.scores[b.id], level=level,
                                           groups=groups, systems=systems, statistic=STATISTIC,
                                           n_bootstrap=n_bootstrap)
        diff, p = _finite(diff), _finite(p)
        out.append(BaselineDifference(run_id=b.id, method=b.method, level=level, diff=diff, p=p,
                                      n=len(aligned.ids),
                                      significantly_below=bool(p is not None and diff is not None
                                                               and p < ALPHA and diff < 0)))
    return tuple(out)


# --------------------------------------------------------------------------- the report


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:+.2f}"


def _not_significant(training: TrainingFigure, p: float) -> str:
    needed = metrics.items_for_significance(training.value, alpha=TRAINING_ALPHA)
    need = (f"a correlation of {_fmt(training.value)} would need at least {needed} scored items to be significant"
            if needed is not None else "no feasible number of items would make a correlation this small significant")
    shown = f"two-sided p = {p:.2f}" if math.isfinite(p) else "too few scored items for a test"
    return (f"not significantly above zero on its training items: {training.measure} is {_fmt(training.value)} "
            f"({training.n_scored} of {training.n_items} items scored, {shown}); unrelated scores reach this "
            f"on so few items, and {need}")


def _reasons(training: TrainingFigure | None, test: TestFigure | None, sample: TestFigure | None,
             baselines: tuple[BaselineDifference, ...], n: int, missing: int) -> list[str]:
    reasons = []
    if training is not None:
        low = [(text, v) for text, v in training.parts if v is None or v <= 0]
        if training.value is not None and training.value <= 0 and not low:
            reasons.append(f"anti-correlated on its training items: {training.measure} is {_fmt(training.value)} "
                           f"({training.n_scored} of {training.n_items} items scored)")
        elif training.value is not None and training.value > 0 and not low:
            p = metrics.correlation_p_value(training.value, training.n_scored)
            if not p < TRAINING_ALPHA:
                reasons.append(_not_significant(training, p))
        if low:
            listed = "; ".join(f"{_fmt(v)}: {text[:80]}" for text, v in low)
            reasons.append(f"{len(low)} of {len(training.parts)} selected hypotheses have a training Pearson "
                           f"at or below zero or none ({listed})")
    for fig in (test, sample):
        if fig is None:
            continue
        if fig.value is None:
            why = (f"none of the {n} items has a score" if missing >= n else
                   "its scores do not vary enough to correlate"
                   + (f" ({missing} of {n} items have no score)" if missing else f" (all {n} items scored)"))
            reasons.append(f"no test {STATISTIC} at the {fig.level} level: {why}")
        elif fig.value <= 0:
            reasons.append(f"anti-correlated on the test items: {fig.level}-level {STATISTIC} is {_fmt(fig.value)} "
                           f"(worse than chance)")
    for b in baselines:
        if b.significantly_below:
            reasons.append(f"significantly below baseline {b.label} on the same split: {STATISTIC} "
                           f"{_fmt(b.diff)} at the {b.level} level (paired bootstrap p = {b.p:.3f}, {b.n} items)")
    return reasons


def trust_report(store: Store, run_id: int, *, n_bootstrap: int = N_BOOTSTRAP) -> TrustReport:
    """The :class:`TrustReport` of finished run ``run_id``.

    Reads the stored summary (re-computing it when it predates the interval
    notes), the judge's state, and the baseline runs on the same split.

    Raises
    ------
    ValueError
        When the run is not finished (it has no judge and no result to judge).
    """
    run = store.run(run_id)
    if run.status != "finished" or run.summary is None:
        raise ValueError(f"run #{run_id} is {run.status}: only a finished run has a result to trust")
    summary = run.summary
    dataset = None

    def human() -> Any:
        nonlocal dataset
        if dataset is None:
            dataset = runs.human_dataset(store, run.dataset, run.human_aggregate)
        return dataset

    if any("ci_note" not in rep for rep in summary.levels.values()):
        # a summary written before intervals over too few units were withheld: measure it again the same way
        summary = runs.summarize(human(), run.aspect, store.load_verdicts(run_id), ledger=run.ledger,
                                 seconds=0.0, n_bootstrap=n_bootstrap)
    levels, natural = summary.levels, summary.level
    test = _test_figure(natural, levels[natural]) if natural in levels else None
    sample = _test_figure("sample", levels["sample"]) if natural != "sample" and "sample" in levels else None
    n, missing = summary.n, summary.missing
    training = training_figure(run.method, run.judge_state, run.judge_target)
    found = baseline_runs(store, run)
    # a paired bootstrap over fewer units than an interval needs is as meaningless as that interval
    level = natural if test is not None and not test.ci_note else "sample"
    baselines = _baseline_differences(store, run, found, level, human(), n_bootstrap) if found else ()
    reasons = _reasons(training, test, sample, baselines, n, missing)
    return TrustReport(run_id=int(run_id), method=run.method, statistic=STATISTIC, training=training, test=test,
                       sample=sample, n=n, missing=missing, missing_rate=round(missing / n, 4) if n else 0.0,
                       baselines=baselines, verdict="warning" if reasons else "ok", reasons=tuple(reasons))


def one_line(report: TrustReport) -> str:
    """``trust: ok`` or ``trust: warning (reason; reason)``: for lists of runs in a terminal.

    Reasons can quote generated text (a hypothesis): control characters become spaces so a reply cannot
    move the cursor or recolour the terminal.
    """
    if report.verdict == "ok":
        return "trust: ok"
    text = "; ".join(report.reasons)
    return "trust: warning (" + "".join(ch if ch.isprintable() else " " for ch in text) + ")"

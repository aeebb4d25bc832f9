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
- the paired difference to each baseline run (direct scoring, G-Eval) and
  each peer run (MLflow's MemAlign, ``memalign``) on the same dataset,
  aspect, test items and backend, with the paired bootstrap of
  :func:`judge_engine.compare.paired_bootstrap` (:mod:`judge_engine.trust_baselines`);
- ``verdict`` (:func:`verdict`), one of :data:`VERDICTS`: ``"warning"`` when
  the judge is anti-correlated with the humans (a test interval below zero,
  or a training correlation significantly below zero), has no test
  correlation at all, or is significantly below a baseline or a peer on the same split;
  else ``"too few items to say"`` below :data:`MIN_TEST_ITEMS` scored test
  items, without an interval or with one wider than :data:`MAX_CI_WIDTH`;
  else ``"not shown to agree"`` when the test interval reaches zero or the
  training figure is not significant once the selection among K candidates
  is paid for (:func:`selection_p_value`); ``"ok"`` only with that evidence.
  ``reasons`` say why in words, with the figures and counts.

How well these claims are calibrated (false alarms under a null, power under a
planted effect, a noise judge chosen among as many candidates as each method
tries) is measured by ``python -m judge_engine.bench verdicts``
(:mod:`judge_engine.bench.verdicts`, table in docs/reliability.md).

The pages (``pages.ui.trust.trust_panel``), the CLI summary and the exported
judge file all show this one record.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from . import evidence, metrics, runs
from .methods.active_critic import ActiveCriticState
from .methods.hd_eval import HDEvalState
from .methods.hpss import HPSSState
from .methods.hypoeval import HypoEvalState
from .records import Dataset, RunRecord, jsonable
from .store import Store
from .trust_baselines import (ALPHA, BASELINE_METHODS, PEER_METHODS, BaselineDifference,  # noqa: F401
                              STATISTIC, baseline_difference, baseline_differences, baseline_runs,
                              finite_or_none)


TRAINING_ALPHA = 0.05
"""A judge whose training correlation is not significantly above zero at this level, for the number of items it
rests on and the candidates it was chosen among, is not "ok" (one candidate: the two-sided t-test; K candidates:
:func:`selection_p_value` at ``TRAINING_ALPHA / 2``, the same one-sided level). On the dozen or so items a
selection rests on, unrelated scores give large correlations (at 12 items the two-sided 5% band of a Pearson
under no relation is about +-0.58): a HypoEval hypothesis on Topical-Chat was adopted on a training Pearson of 0.005 over 12 items,
and HypoEval on SF-RES was chosen on 0.27-0.54 and scored the test items at -0.42. A fixed floor (0.1 once)
cannot say this, because what counts as no sign of agreement depends on the number of items."""
N_BOOTSTRAP = 1000
"""Resamples of the paired bootstrap (and of the intervals when a stored summary predates their notes)."""

VERDICTS = ("ok", "not shown to agree", "too few items to say", "warning")
"""What :func:`verdict` can say; only ``"ok"`` is shown as a go-ahead."""

MIN_TEST_ITEMS = 10
"""Fewest scored test items behind an "ok": below, the verdict is "too few items to say" (a README run printed
"ok" for a judge whose test correlation rested on 3 scored items)."""
MAX_CI_WIDTH = 1.0
"""Widest 95% interval of the test correlation behind an "ok" or a "not shown to agree": an interval spanning a
whole unit of correlation (e.g. [-0.3, +0.7]) says nothing either way, so the verdict is "too few items to say"."""

MIN_GROUPS_FOR_SIGN = evidence.MIN_GROUPS_FOR_GROUP_CORRELATION
"""Fewest groups whose interval may call a judge worse than chance; with fewer, the sample level's decides
(:mod:`judge_engine.evidence`, the one rule)."""

UNRECORDED_CANDIDATES = 100
"""Candidates assumed when a method chose among several but its stored state does not say how many (an older
judge): more than any default tries, so the training figure is judged conservatively."""

SELECTION_DRAWS = 20_000
"""Simulated selections behind :func:`selection_p_value` when the figure is the mean of the best few."""


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
    candidates: int = 1
    """K: candidates the method scored on these items before keeping this one (1: nothing was chosen among,
    or the figure is out-of-fold)."""
    top: int = 1
    """The figure is the mean of the best ``top`` of the K candidates (HypoEval's selected hypotheses)."""
    selection: str = ""
    """How the figure pays for the selection, in words (best of K, out-of-fold, ...)."""


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
    """Groups behind a group-level figure; at the sample level, the sources resampled whole (0: items were)."""
    n_systems: int
    resampled: str = ""
    """What the interval resampled (``MetaEvalReport.resampled``): ``groups``, ``items``, "" (none or not recorded)."""


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
    """One of :data:`VERDICTS` (see :func:`verdict`)."""
    reasons: tuple[str, ...]
    """Why the verdict is not "ok", in words, with the figures (empty when ok)."""
    entries: int = 0
    """Generated entries the judge scores with (hypotheses, criteria, nodes; :mod:`judge_engine.judge_flags`)."""
    flagged: tuple[dict[str, Any], ...] = ()
    """Those of them the rubric checks flagged: ``key``, ``text``, ``flags``, and ``accepted_by``/``accepted_at``
    once a person accepted them on the method's page (None until then)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (tuples become lists, NaN is never written: undefined values are None)."""
        out = asdict(self)
        out["baselines"] = [{**asdict(b), "label": b.label} for b in self.baselines]
        return jsonable(out)


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
        parts = tuple((h.text or h.key or "", finite_or_none(h.train_pearson)) for h in hypo.selected)
        scored = [h.train_parsed or 0 for h in hypo.selected]
        # the final bank is what the selection ranked; hypotheses dropped from it by earlier refreshes were
        # ranked on the same items too but are not stored, so K is a lower bound there
        k = max(len(hypo.bank), len(hypo.selected), 1)
        return TrainingFigure(value=hypo.mean_training_pearson,
                              measure=f"mean training Pearson of the {len(hypo.selected)} selected hypotheses",
                              n_items=len(hypo.train_ids), n_scored=min(scored) if scored else 0, parts=parts,
                              candidates=k, top=max(len(hypo.selected), 1),
                              selection=f"best {len(hypo.selected)} of the {k} hypotheses of the final bank")
    if method == "hpss":
        hpss = HPSSState.from_dict(state)
        sel = hpss.selection
        if sel is None:
            return TrainingFigure(None, "the chosen strategy's validation figures were not recorded", 0, 0)
        k, how = _tried(1 if hpss.accepted_by_person else len(state.get("explored") or ()), "strategies evaluated")
        return TrainingFigure(value=finite_or_none(sel.correlation),
                              measure="Spearman of the chosen strategy on the validation items",
                              n_items=sel.n, n_scored=sel.n_scored, candidates=k,
                              selection="fixed by a person" if hpss.accepted_by_person else how)
    if method == "active_critic":
        ac = ActiveCriticState.from_dict(state)
        chosen = ac.chosen_set
        if chosen is None:
            return TrainingFigure(None, "the chosen demonstration set's training figures were not recorded", 0, 0)
        k, how = _tried(len(ac.search), "demonstration sets scored")
        return TrainingFigure(value=chosen.pearson,
                              measure=("training Pearson of the chosen demonstration set"
                                       + (f" (Q = {chosen.q:.2f})" if chosen.q is not None else "")),
                              n_items=chosen.n_items, n_scored=chosen.n_scored, candidates=k, selection=how)
    if method == "hd_eval":
        hd = HDEvalState.from_dict(state)
        return TrainingFigure(value=hd.training_pearson(target),
                              measure="out-of-fold (cross-validated) training Pearson of the aggregator",
                              n_items=len(hd.train_ids), n_scored=len(hd.train_ids), candidates=1,
                              selection="out-of-fold: each item scored by an aggregator fitted without it")
    return None


def _tried(k: int, what: str) -> tuple[int, str]:
    """K and the words for it; a state that does not record K is judged as if it had tried many."""
    if k >= 1:
        return k, f"best of K = {k} {what}"
    return UNRECORDED_CANDIDATES, (f"best of K {what}: K not recorded in this judge, "
                                   f"assumed {UNRECORDED_CANDIDATES} (conservative)")


def selection_p_value(r: float | None, n: int, candidates: int = 1, *, top: int = 1,
                      draws: int = SELECTION_DRAWS, seed: int = 0) -> float:
    """One-sided p-value of a training correlation ``r`` on ``n`` items, kept as the best of ``candidates``.

    Under no relation a Pearson on ``n`` items is distributed as ``2 B - 1`` with ``B ~ Beta((n-2)/2,
    (n-2)/2)`` (the exact law behind :func:`scipy.stats.pearsonr`'s t-test; Spearman's figure is tested
    with the same law, as scipy does). The best of K independent candidates reaches ``r`` with probability
    ``1 - (1 - p1) ** K``, ``p1`` the one-candidate tail. Real candidates score the same items with the same
    model, so they are positively dependent and their best is smaller than that of independent ones: the
    p-value is conservative. With ``top > 1`` (the mean of the best ``top``) the law of the mean of the top
    order statistics has no closed form and is simulated, seeded. NaN when undefined (``n < 3``).
    """
    from scipy import stats

    if r is None or not math.isfinite(r) or n < 3:
        return math.nan
    k, top = max(int(candidates), 1), max(1, min(int(top), int(candidates)))
    law = stats.beta((n - 2) / 2.0, (n - 2) / 2.0, loc=-1.0, scale=2.0)
    if top == 1:
        return float(-np.expm1(k * np.log1p(-law.sf(r)))) if law.sf(r) < 1.0 else 1.0
    null = _top_mean_null(n, k, top, draws, seed)
    return float((null.size - np.searchsorted(null, r, side="left") + 1) / (null.size + 1))


@functools.lru_cache(maxsize=64)
def _top_mean_null(n: int, k: int, top: int, draws: int, seed: int) -> np.ndarray:
    """Sorted simulated means of the best ``top`` of ``k`` unrelated correlations on ``n`` items (cached: a page
    and the calibration bench ask for the same few (n, K) again and again)."""
    from scipy import stats

    law = stats.beta((n - 2) / 2.0, (n - 2) / 2.0, loc=-1.0, scale=2.0)
    null = np.sort(law.rvs(size=(draws, k), random_state=np.random.default_rng(seed)), axis=1)
    return np.sort(null[:, -top:].mean(axis=1))


# --------------------------------------------------------------------------- test figures


def level_figure(level: str, rep: dict[str, Any]) -> TestFigure:
    """The :class:`TestFigure` of one level of a stored summary (``MetaEvalReport.to_dict()``)."""
    ci = rep.get(f"{STATISTIC}_ci") or [None, None]
    return TestFigure(level=level, value=finite_or_none(rep.get(STATISTIC)), ci=(finite_or_none(ci[0]), finite_or_none(ci[1])),
                      ci_note=str(rep.get("ci_note") or ""), n=int(rep.get("n") or 0),
                      n_groups=int(rep.get("n_groups") or 0), n_systems=int(rep.get("n_systems") or 0),
                      resampled=str(rep.get("resampled") or ""))


def test_basis(test: TestFigure | None) -> evidence.Basis | None:
    """What a claim from the test figure may rest on (:func:`judge_engine.evidence.basis_from_counts`; None with
    no figure). A group-level figure counts its groups, a sample-level one the sources it resampled whole."""
    if test is None:
        return None
    grouped = 0 < test.n_groups < test.n
    return evidence.basis_from_counts(test.level, n_items=test.n, n_groups=test.n_groups or test.n, grouped=grouped)


def comparison_level(test: TestFigure | None) -> str:
    """The level a baseline is compared at: the test figure's, but the items' when it has no interval or rests on
    fewer than :data:`MIN_GROUPS_FOR_SIGN` groups (a paired bootstrap over 5 groups called two equal judges
    different in 9% of draws, bench verdicts). The rule is :func:`judge_engine.evidence.basis`'s; with fewer than
    five independent units there the paired bootstrap itself makes no claim."""
    claim = test_basis(test)
    if claim is None or test.ci_note or claim.level is None:
        return "sample"
    return claim.level


# --------------------------------------------------------------------------- the verdict


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:+.2f}"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def training_p_value(training: TrainingFigure) -> float:
    """One-sided p-value of the training figure once its selection is paid for (:func:`selection_p_value`)."""
    return selection_p_value(training.value, training.n_scored, training.candidates, top=training.top)


def _training_shown(training: TrainingFigure, p: float) -> str:
    k = (f"{training.selection}; " if training.selection else "") + (
        f"one-sided {_p(p)} against the best of {training.candidates} unrelated candidates"
        if training.candidates > 1 else f"one-sided {_p(p)}")
    return f"{training.measure} is {_fmt(training.value)} ({training.n_scored} of {training.n_items} items scored, {k})"


def _ci_text(fig: TestFigure) -> str:
    if fig.ci[0] is None or fig.ci[1] is None:
        return fig.ci_note or "no interval"
    return f"95% interval [{fig.ci[0]:+.2f}, {fig.ci[1]:+.2f}]"


def _figure_text(fig: TestFigure) -> str:
    groups = (f", {fig.n_groups} group{'' if fig.n_groups == 1 else 's'}" if fig.level == "group" else
              f", whole sources resampled ({fig.n_groups} sources)" if fig.resampled == "groups" else "")
    return (f"{fig.level}-level {STATISTIC} {_fmt(fig.value)}, {_ci_text(fig)}, on {fig.n} scored "
            f"item{'' if fig.n == 1 else 's'}{groups}")


def _warnings(training: TrainingFigure | None, test: TestFigure | None, sample: TestFigure | None,
              baselines: tuple[BaselineDifference, ...], n: int, missing: int,
              distinct: TestFigure | None = None) -> list[str]:
    """Evidence against the judge: each needs its interval or its test, never a point estimate alone."""
    reasons = []
    if training is not None:
        low = [(text, v) for text, v in training.parts if v is None or v <= 0]
        p = metrics.correlation_p_value(training.value, training.n_scored) if training.value is not None else math.nan
        if training.value is not None and training.value < 0 and not low and p < TRAINING_ALPHA:
            reasons.append(f"anti-correlated on its training items: {training.measure} is {_fmt(training.value)} "
                           f"({training.n_scored} of {training.n_items} items scored, two-sided {_p(p)})")
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
    # from an interval, not the point ([-0.14, +0.15] was once read as "worse than chance"), and from one figure
    # (asking both levels doubled the false alarms): the natural level's, or the items' below MIN_GROUPS_FOR_SIGN
    # groups (a percentile interval over a dozen groups put noise "below zero" in 7-8% of draws, bench verdicts)
    judged = test if test is not None and test.ci[1] is not None and comparison_level(test) == test.level else sample
    claim = test_basis(test)
    if claim is not None and not claim.claim:
        judged = None  # too few independent sources (one article's items): no claim from any level's interval
    # the interval and the items' t-test both: the interval alone called 4.8% [2.7, 8.4] of random judges on
    # SummEval worse than chance at 160 items, nominal 2.5% (issue 63; 99 summaries are exact duplicates)
    items = _items_figure(test, sample, distinct)
    below = items is not None and items.value is not None and _correlation_p(-items.value, items.n) < ALPHA / 2
    if judged is not None and judged.ci[1] is not None and judged.ci[1] < 0 and below:
        reasons.append(f"anti-correlated on the test items (worse than chance): {_figure_text(judged)}"
                       + ("" if judged is items else f"; {_figure_text(items)}, t-test {_p(_correlation_p(-items.value, items.n))}"))
    for b in baselines:
        if b.significantly_below:
            drew = {"groups": ", whole sources resampled", "items": ", items resampled"}.get(b.resampled, "")
            reasons.append(f"significantly below baseline {b.label} on the same split: {STATISTIC} "
                           f"{_fmt(b.diff)} at the {b.level} level (paired bootstrap {_p(b.p)}, {b.n} items{drew})")
    return reasons


def _interval_words(fig: TestFigure) -> str:
    """How the figure's interval stands to zero, in words that match its bounds."""
    low, high = fig.ci
    if high is not None and high < 0:
        # below zero at a level that cannot carry the sign (too few groups): the items' level decided
        return (f"lies below zero, but {fig.n_groups} groups are too few to call it worse than chance (at least "
                f"{MIN_GROUPS_FOR_SIGN}; the items' level decides)" if fig.level == "group" else "lies below zero")
    if low is not None and low <= 0:
        return "reaches zero"
    return "lies above zero"


def _items_figure(test: TestFigure | None, sample: TestFigure | None,
                  distinct: TestFigure | None) -> TestFigure | None:
    """The items' figure the t-tests read: over distinct items where some are exact duplicates (a deterministic
    judge gives a copy the same score, so the copies are one piece of evidence, not two: 10% duplicated items
    raised the t-test's false "worse than chance" from 2.5% to 4%, bench verdicts), else the sample level's."""
    if distinct is not None:
        return distinct
    return sample if sample is not None else (test if test is not None and test.level == "sample" else None)


def distinct_figure(keys: Sequence[str], human: Sequence[float], judge: Sequence[float]) -> TestFigure | None:
    """The items' Pearson over distinct items (the first of each ``key``: an item's input and output), or None when
    no two items are the same (then the sample-level figure is already over distinct items)."""
    seen: set[str] = set()
    keep = []
    for key in keys:
        keep.append(key not in seen)
        seen.add(key)
    if all(keep):
        return None
    h, j = np.asarray(human, dtype=float)[keep], np.asarray(judge, dtype=float)[keep]
    ok = np.isfinite(h) & np.isfinite(j)
    value = metrics.correlation(h[ok], j[ok], STATISTIC) if ok.sum() >= 3 else math.nan
    return TestFigure("sample", finite_or_none(value), (None, None), "distinct items (exact duplicates counted once)",
                      int(ok.sum()), 0, 0)


def _too_few(test: TestFigure | None, n: int) -> str:
    """Why the test figure cannot carry a verdict either way ("" when it can)."""
    if test is None:
        return f"no test figure ({n} test items)"
    if test.n < MIN_TEST_ITEMS:
        return f"{test.n} scored test items (an \"ok\" needs at least {MIN_TEST_ITEMS})"
    if test.ci[0] is None or test.ci[1] is None:
        return f"{_figure_text(test)}: no interval, so no evidence either way"
    if test.ci[1] - test.ci[0] > MAX_CI_WIDTH:
        return (f"{_figure_text(test)}: the interval is {test.ci[1] - test.ci[0]:.2f} wide "
                f"(at most {MAX_CI_WIDTH:.2f} to say anything)")
    return ""


def test_units(dataset: Dataset, test_ids: Sequence[str]) -> tuple[int, int]:
    """(items, interval units) of a test part at the dataset's natural level: groups where whole groups are
    resampled (group and system level, and the sample level where items share a source), else items."""
    group_of = {s.id: s.group_id for s in dataset.samples}
    ids = [i for i in test_ids if i in group_of]
    return len(ids), len({group_of[i] for i in ids})


def split_note(dataset: Dataset, spec: Any) -> str:
    """Before a run starts: why its test split cannot end in "ok" whatever the judge, and what would ("" when it
    can, or when the split cannot be drawn: the run then says why). ``spec`` is a
    :class:`~judge_engine.runs.RunSpec` (sizes and seed)."""
    from . import data

    def drawn(test_size: int | None) -> tuple[int, int] | None:
        try:
            split = data.make_split(dataset, train_size=spec.train_size, test_size=test_size, seed=spec.seed)
        except data.SplitError:
            return None
        return test_units(dataset, split.test_ids)

    got = drawn(spec.test_size)
    if got is None or (got[0] >= MIN_TEST_ITEMS and got[1] >= metrics.MIN_BOOTSTRAP_UNITS):
        return ""
    items, units = got
    unit = "items" if units == items else "groups"
    said = (f"its test split holds {items} items" + ("" if unit == "items" else f" in {units} groups")
            + f", and an \"ok\" needs at least {MIN_TEST_ITEMS} scored test items and an interval over at least "
            f"{metrics.MIN_BOOTSTRAP_UNITS} {unit} ({dataset.natural_level} level), so it can end in \"too few "
            f"items to say\" at best")
    # the smallest test size that concludes, in at most 100 steps (only a split that cannot conclude gets here)
    step = max(1, len(dataset.samples) // 100)
    for size in range(max(MIN_TEST_ITEMS, (spec.test_size or 0) + 1), len(dataset.samples), step):
        enough = drawn(size)
        if enough is not None and enough[0] >= MIN_TEST_ITEMS and enough[1] >= metrics.MIN_BOOTSTRAP_UNITS:
            return f"{said}; a conclusive run needs test items {size} (--test {size})."
    return f"{said}; this dataset with {spec.train_size} training items cannot give one: import more {unit}."


def _correlation_p(r: float, n: int) -> float:
    """One-sided p-value of a correlation ``r`` on ``n`` items being above zero (Student's t, n - 2 df)."""
    from scipy import stats

    if n < 3:
        return 1.0
    if r >= 1:
        return 0.0
    t = r * math.sqrt((n - 2) / max(1e-12, 1 - r * r))
    return float(stats.t.sf(t, n - 2))


def verdict(training: TrainingFigure | None, test: TestFigure | None, sample: TestFigure | None,
            baselines: tuple[BaselineDifference, ...], n: int, missing: int, *,
            distinct: TestFigure | None = None) -> tuple[str, tuple[str, ...]]:
    """The verdict (one of :data:`VERDICTS`) and its reasons, from the figures of a :class:`TrustReport`.

    In order: any warning (:func:`_warnings`) makes it ``"warning"``; else a test figure on too few items, with
    no interval or one wider than :data:`MAX_CI_WIDTH` makes it ``"too few items to say"`` (with the count);
    else a test interval reaching zero, an items' correlation not significantly above zero (t-test, one-sided
    ``ALPHA / 2``), or a training figure not significant at ``TRAINING_ALPHA / 2``
    one-sided once its best-of-K selection is paid for, makes it ``"not shown to agree"`` (with the figure);
    only then ``"ok"``. The calibration bench (:mod:`judge_engine.bench.verdicts`) calls this function.
    """
    reasons = _warnings(training, test, sample, baselines, n, missing, distinct)
    if reasons:
        return "warning", tuple(reasons)
    few = _too_few(test, n)
    if few:
        return "too few items to say", (few,)
    notes = []
    if test is not None and test.ci[0] is not None and test.ci[0] <= 0:
        notes.append(f"not shown to agree on the test items: {_figure_text(test)} {_interval_words(test)}")
    # a percentile interval over 20 items or a handful of groups undercovers (a random judge was "ok" in 7-12% of
    # draws on it alone, bench verdicts), so the items' correlation must also pass its one-sided t-test
    else:
        items = _items_figure(test, sample, distinct)
        if items is not None and items.value is not None and not _correlation_p(items.value, items.n) < ALPHA / 2:
            notes.append(f"not shown to agree on the test items: {_figure_text(items)} is not significantly above "
                         f"zero ({_p(_correlation_p(items.value, items.n))}, t-test on {items.n} items)")
    # a training figure that was not recorded (an older or hand-edited judge) leaves the held-out test to speak
    if training is not None and training.value is not None:
        p = training_p_value(training)
        if not p < TRAINING_ALPHA / 2:
            notes.append(f"not shown to agree on its training items once the selection is paid for: "
                         f"{_training_shown(training, p)}")
    return ("not shown to agree", tuple(notes)) if notes else ("ok", ())


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

    if any("ci_note" not in rep or "resampled" not in rep for rep in summary.levels.values()):
        # a summary written before intervals over too few units were withheld, or before the items' interval
        # resampled whole sources where items share one: measure it again the same way
        summary = runs.summarize(human(), run.aspect, store.load_verdicts(run_id), ledger=run.ledger,
                                 seconds=0.0, n_bootstrap=n_bootstrap)
    levels, natural = summary.levels, summary.level
    test = level_figure(natural, levels[natural]) if natural in levels else None
    sample = level_figure("sample", levels["sample"]) if natural != "sample" and "sample" in levels else None
    n, missing = summary.n, summary.missing
    training = training_figure(run.method, run.judge_state, run.judge_target)
    found = baseline_runs(store, run)
    # a paired bootstrap over fewer units than an interval needs is as meaningless as that interval
    level = comparison_level(test)
    baselines = baseline_differences(store, run, found, level, human(), n_bootstrap) if found else ()
    said, reasons = verdict(training, test, sample, baselines, n, missing,
                            distinct=_run_distinct_figure(store, run, human()))
    entries, flagged = _flagged_entries(store, run)
    said, reasons = open_flags_block(said, reasons, flagged)
    return TrustReport(run_id=int(run_id), method=run.method, statistic=STATISTIC, training=training, test=test,
                       sample=sample, n=n, missing=missing, missing_rate=round(missing / n, 4) if n else 0.0,
                       baselines=baselines, verdict=said, reasons=reasons, entries=entries, flagged=flagged)


def _run_distinct_figure(store: Store, run: RunRecord, dataset: Any) -> TestFigure | None:
    """:func:`distinct_figure` of a run's scored test items (an item is its input, context and output)."""
    index = dataset.by_id()
    rows = [(v, index[v.sample_id]) for v in store.load_verdicts(run.id) if v.sample_id in index]
    human = [s.human.get(run.aspect, math.nan) for _, s in rows]
    judge = [math.nan if v.missing or v.score is None else float(v.score) for v, _ in rows]
    keys = ["\x00".join((s.input, s.context or "", s.output)) for _, s in rows]
    return distinct_figure(keys, human, judge)


def open_flags_block(said: str, reasons: tuple[str, ...], flagged: Sequence[dict[str, Any]]
                     ) -> tuple[str, tuple[str, ...]]:
    """The verdict once the judge's flagged entries are counted (issue 65): an entry the rubric checks flagged
    and no person accepted is named in the reasons, and an "ok" becomes a "warning" until a person accepts it
    (an instruction to the evaluator must never reach a judge unseen; the figures cannot tell a flag's doubt)."""
    waiting = [f for f in flagged if not f.get("accepted_by")]
    if not waiting:
        return said, reasons
    named = "; ".join(
        f"{f.get('key', '')} {str(f.get('text', ''))[:80]!r} ("
        + ", ".join(str(x.get("rule", "")).replace("_", " ") for x in f.get("flags") or ()) + ")" for f in waiting)
    reason = (f"{len(waiting)} of its entries carry rubric-check flags no person has accepted: {named}; accept or "
              "edit them on the method's page")
    return ("warning" if said == "ok" else said), (*reasons, reason)


def _flagged_entries(store: Store, run: Any) -> tuple[int, tuple[dict[str, Any], ...]]:
    """How many entries the run's judge uses, and the flagged ones with who accepted them (if anyone)."""
    from . import curation
    from .judge_flags import flagged_in_judge, judge_entries

    state = run.judge_state or {}
    found = flagged_in_judge(run.method, state)
    accepted = curation.flag_acceptances(store, curation.owner(run.method, run.id), {e.key: e.text for e in found}) \
        if found else {}
    return len(judge_entries(run.method, state)), tuple(
        {"key": e.key, "text": e.text, "flags": [dict(f) for f in e.flags],
         "accepted_by": accepted[e.key].actor if e.key in accepted else None,
         "accepted_at": accepted[e.key].when if e.key in accepted else None} for e in found)


def one_line(report: TrustReport) -> str:
    """``trust: ok`` or ``trust: <verdict> (reason; reason)``: for lists of runs in a terminal.

    Reasons can quote generated text (a hypothesis): control characters become spaces so a reply cannot
    move the cursor or recolour the terminal.
    """
    open_flags = sum(1 for f in report.flagged if not f.get("accepted_by"))
    # a flagged entry in the judge is said even beside "ok": the figures cannot tell a flag's doubt
    flags = (f"; {len(report.flagged)} of its {report.entries} entries flagged, {open_flags} not accepted"
             if report.flagged else "")
    if report.verdict == "ok":
        return "trust: ok" + flags
    text = "; ".join(report.reasons)
    return f"trust: {report.verdict} (" + "".join(ch if ch.isprintable() else " " for ch in text) + ")" + flags

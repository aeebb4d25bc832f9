"""All the probes of one run, its warnings with a line of advice each, and the report in sentences."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from ..records import Dataset, Verdict
from ..records import jsonable  # the reports' JSON rule (NaN written as null)
from ._binary import BinaryAgreement, binary_agreement
from ._collapse import SPREAD_FLOOR, Collapse, collapse
from ._common import ALPHA, fig_text, format_p, probe_level, words
from ._length import LengthBias, length_bias
from ._slices import MIN_SLICE, Disagreements, disagreements
from ._themes import Themes, explanation_themes

LEVEL_NAMES = {"sample": "sample level (over all items)",
               "group": "group level (within each input's outputs, averaged: e.g. SummEval's summary level)"}

ADVICE = {
    "length": "use length-balanced demonstrations, or tell the judge that length is not quality, and read the "
              "longest outputs it over-scores",
    "collapse": "read probability-weighted scores or ask for a finer scale, and say in the prompt what each score "
                "means; check that replies parse",
    "slice": "label more items of that slice and put some among the demonstrations, or say in the rubric what "
             "this slice needs",
    "band": "recalibrate the scores on the training items (a monotone map to the human scale), or add "
            "demonstrations with that human score",
}
"""One line of advice per kind of warning, shown with it on the Compare page and by ``judge-workbench probes``."""


@dataclass(frozen=True)
class ProbeWarning:
    """A probe that found something, in one sentence, with what to do next."""

    kind: str
    """``length``, ``collapse``, ``slice`` or ``band``."""
    text: str
    advice: str


@dataclass(frozen=True)
class ProbeReport:
    """Every probe of one finished run, on its test items both the judge and the humans scored."""

    run_id: int
    aspect: str
    n: int
    """Test items both scored."""
    n_missing: int
    """Test items the judge gave no score (left out of every probe, as of every correlation)."""
    length: LengthBias
    collapse: Collapse
    disagreements: Disagreements
    themes: Themes
    binary: BinaryAgreement | None
    """None when the humans gave more than two values."""
    level: str = "sample"
    """The level the correlations are taken at: the dataset's meta-evaluation level where a probe can follow it."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict; NaN is never written (undefined values are None)."""
        return jsonable(asdict(self))


def probes(dataset: Dataset, aspect: str, verdicts: Sequence[Verdict], *, run_id: int = 0,
           seed: int = 0, level: str | None = None) -> ProbeReport:
    """All the probes of ``verdicts`` against the human scores of ``dataset`` on ``aspect``.

    ``level`` defaults to the dataset's own (``natural_level``), so the probes speak of the same correlation
    as the rest of the page; a level a probe cannot follow falls back to the sample level (see
    :func:`judge_engine.probes.probe_level`).
    """
    index = dataset.by_id()
    rows = [(index[v.sample_id], v) for v in verdicts if v.sample_id in index and v.aspect == aspect]
    both = [(s, v) for s, v in rows if not v.missing and math.isfinite(s.human.get(aspect, math.nan))]
    samples = [s for s, _ in both]
    human = np.array([s.human[aspect] for s in samples], dtype=float)
    judge = np.array([v.score for _, v in both], dtype=float)
    explanations = [v.explanation for _, v in both]
    lengths = [words(s.output) for s in samples]
    groups = [s.group_id for s in samples]
    used = probe_level(level or dataset.natural_level, groups)
    return ProbeReport(
        run_id=int(run_id), aspect=aspect, n=len(both), n_missing=sum(1 for _, v in rows if v.missing),
        length=length_bias(lengths, human, judge, seed=seed, level=used, groups=groups),
        collapse=collapse(human, judge, seed=seed),
        disagreements=disagreements(samples, human, judge, explanations, seed=seed, level=used),
        themes=explanation_themes([s.id for s in samples], human, judge, explanations, seed=seed),
        binary=binary_agreement(human, judge, seed=seed, scale=_scale(dataset, aspect)), level=used)


def _scale(dataset: Dataset, aspect: str) -> tuple[float, float] | None:
    try:
        found = dataset.aspect(aspect)
    except (KeyError, ValueError):
        return None
    return float(found.low), float(found.high)


def probe_run(store: Any, run_id: int, *, seed: int = 0, keep: bool = True) -> ProbeReport:
    """The :class:`ProbeReport` of finished run ``run_id`` (no LLM call).

    Computed once and kept in the store under a fingerprint of everything it reads (:mod:`._stored`): the
    same report is read back until a verdict, a label, the run's human score or the probes' code changes.
    ``keep=False`` computes it afresh and stores nothing.

    Raises
    ------
    ValueError
        When the run is not finished.
    """
    from .. import runs
    from . import _stored

    run = store.run(run_id)
    if run.status != "finished":
        raise ValueError(f"run #{run_id} is {run.status}: only a finished run has verdicts to probe")
    dataset = runs.human_dataset(store, run.dataset, run.human_aggregate)
    verdicts = store.load_verdicts(run_id)
    if not keep:
        return probes(dataset, run.aspect, verdicts, run_id=run_id, seed=seed)
    key = _stored.fingerprint(dataset, run.aspect, verdicts, run_id=run_id, seed=seed, level=None)
    report = _stored.stored(store, run_id, key)
    if report is None:
        report = probes(dataset, run.aspect, verdicts, run_id=run_id, seed=seed)
        _stored.keep(store, run_id, key, report)
    return report


def probe_warnings(report: ProbeReport) -> list[ProbeWarning]:
    """What the probes found that should change how the judge is used, each with one line of advice."""
    out = []
    lb, c, d = report.length, report.collapse, report.disagreements
    if lb.flagged:
        out.append(ProbeWarning("length", f"follows output length more than the humans do (Spearman with length "
                                          f"{fig_text(lb.judge)} against the humans' {fig_text(lb.human)}, "
                                          f"{format_p(lb.excess_p)}; {lb.direction})", ADVICE["length"]))
    if c.collapsed:
        spread = (f"; its scores spread {c.sd_ratio.value:.2f} times as wide as the humans'"
                  if c.sd_ratio.value is not None else "")
        out.append(ProbeWarning("collapse", f"gives {c.judge.distinct} distinct score(s); {c.judge.modal_share:.0%} "
                                            f"of the items got {c.judge.modal:g}{spread}", ADVICE["collapse"]))
    for s in d.flagged:
        kind = "band" if s.test == "bias" else "slice"
        out.append(ProbeWarning(kind, f"{s.by} {s.name} ({s.n} items): {s.finding} than the rest "
                                      f"(permutation test, BH-adjusted q = {s.q:.3f})"
                                if s.test == "error" else
                                f"{s.by} {s.name} ({s.n} items): {s.finding} against the line through all items "
                                f"(permutation test, BH-adjusted q = {s.q:.3f})", ADVICE[kind]))
    return out


def _pct(f: Any) -> str:
    if f.value is None:
        return "n/a (no such human item)"
    low, high = f.ci
    return f"{f.value:.0%} [{low:.0%}, {high:.0%}]" if low is not None and high is not None else f"{f.value:.0%}"


def classifier_text(c: Any) -> str:
    """One pass/fail classifier in words: rates with intervals, then precision, F1 and kappa."""
    def point(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    return (f"true positive rate {_pct(c.true_positive_rate)}, true negative rate {_pct(c.true_negative_rate)}, "
            f"precision {point(c.precision)}, F1 {point(c.f1)}, Cohen's kappa {point(c.kappa)}")


def summary_lines(report: ProbeReport) -> list[str]:
    """The probes in sentences, one per probe (for a terminal or a caption); figures carry n and interval.

    Generated text (explanations, outputs) is not quoted here: the lines name items by id only.
    """
    lines = [f"probes of run #{report.run_id} on {report.aspect}: {report.n} test items scored by both "
             f"the judge and the humans" + (f", {report.n_missing} without a judge score (left out)"
                                            if report.n_missing else "")
             + f"; correlations at the {LEVEL_NAMES.get(report.level, report.level)}"]
    lb = report.length
    if lb.note and lb.judge.value is None:
        lines.append(f"length: {lb.note}")
    else:
        verdict = ("follows length significantly more than the humans do" if lb.flagged
                   else "does not follow length significantly more than the humans do")
        excess = f"{lb.excess:+.2f}" if lb.excess is not None else "undefined"
        lines.append(f"length: the judge {verdict}: Spearman with length in words {fig_text(lb.judge)} against the "
                     f"humans' {fig_text(lb.human)} (difference {excess}, paired bootstrap {format_p(lb.excess_p)}, "
                     f"{lb.n} items); judge-minus-human rank against length {fig_text(lb.residual)} "
                     f"({lb.direction})")
    c = report.collapse
    if c.judge.n:
        ratio = (f"; standard deviation {fig_text(c.sd_ratio).lstrip('+')} times the humans' (collapsed below "
                 f"{SPREAD_FLOOR:g})" if c.sd_ratio.value is not None else f"; {c.note}" if c.note else "")
        lines.append(f"collapse: {c.judge.distinct} distinct judge scores against {c.human.distinct} human ones; "
                     f"its most frequent score ({c.judge.modal:g}) went to {c.judge.modal_share:.0%} of the items"
                     + ratio + (" (collapsed)" if c.collapsed else ""))
    else:
        lines.append(f"collapse: {c.note}")
    d = report.disagreements
    if d.note and not d.slices:
        lines.append(f"disagreements: overall Spearman {fig_text(d.overall)}; {d.note}")
    else:
        found = "; ".join(f"{s.by} {s.name} ({s.n} items): {s.finding}, q = {s.q:.3f}" for s in d.flagged[:3])
        lines.append(f"disagreements: overall Spearman {fig_text(d.overall)}; {len(d.slices)} slices tested against "
                     f"the rest (Benjamini-Hochberg at {ALPHA:g}"
                     + (f", {d.too_small} under {MIN_SLICE} items left out" if d.too_small else "") + "): "
                     + (found or "none differs") + f"; most disagreeing items: {', '.join(x.sample_id for x in d.top[:5])}")
    t = report.themes
    if t.over or t.under:
        for side, themes in (("over-scored", t.over), ("under-scored", t.under)):
            if themes:
                lines.append(f"themes of {side} items' explanations: " + "; ".join(
                    f"{', '.join(th.terms)} ({th.count})" for th in themes))
    if t.note:
        lines.append(f"themes: {t.note}")
    b = report.binary
    if b is not None:
        if b.note:
            lines.append(f"pass/fail: {b.note}")
        else:
            base = f", the humans passed {b.base_rate:.0%}" if b.base_rate is not None else ""
            lines.append(f"pass/fail (human {b.positive:g} is a pass; {b.n} items{base}):")
            for c in (b.natural, b.crossfit):
                if c is not None:
                    lines.append(f"  {c.how}: {classifier_text(c)}")
    for w in probe_warnings(report):
        lines.append(f"warning: the judge {w.text}. Advice: {w.advice}")
    return lines

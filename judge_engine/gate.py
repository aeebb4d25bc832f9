"""A gate for CI: is a new system worse than the old one, by an exported judge, on the items they share?

Both systems' outputs for the same items (joined on their ids) are scored by one judge through the one LLM path
and its cache (:func:`score_system`); :func:`compare_scores` takes the per-item differences ``new - base``, their
mean with a bootstrap interval (whole groups resampled where the items have enough groups:
:func:`judge_engine.metrics.paired_mean_difference`), the items won, lost and tied, and the items without a score
on either side (counted and explained, never made a number). The verdict:

``worse``
    the whole interval lies below ``-margin``: the new system scores lower by more than the margin the user
    allows, beyond what resampling explains. ``judge-workbench compare-systems --fail-if-worse`` exits 1.
``better``
    the whole interval lies above ``+margin``.
``no resolved difference``
    an interval that reaches into ``[-margin, +margin]``.
``cannot tell``
    no interval: too few items scored on both sides, or items from fewer than five sources
    (:mod:`judge_engine.evidence`: items of one source are not independent, and resampling the items of four
    sources failed two systems equal on average in 17.5% of draws). ``--fail-if-worse`` exits 0: nothing is
    claimed either way, and the summary says why.

Items that share a source are grouped by default: the group column where one is given, else items whose input
(and context) repeat (:func:`source_groups`); ``independent=True`` (``--independent``) treats every item as its
own source. The result says which (``resampled`` and the notes).

Its false-alarm rate on two copies of the same system and its power on a planted difference are measured by
``python -m judge_engine.bench gate`` (docs/ci-gate.md). :func:`summary_markdown` and :func:`junit_xml` are what
a CI job shows; both treat ids and model replies as hostile. :func:`assert_not_worse` fails a pytest test with
the summary as its message.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence

from . import evidence
from .metrics import paired_mean_difference
from .records import Sample, Verdict

VERDICTS = ("worse", "better", "no resolved difference", "cannot tell")

CONFIDENCE = 0.95
"""Two-sided level of the interval: the gate fails on its upper bound, so a one-sided 2.5% test."""

N_BOOTSTRAP = 2000

SHOWN_LOSSES = 5
"""Items where the new system lost most, named in the summary."""

TIE_TOLERANCE = 1e-9
"""Per-item differences this close to zero are ties (scores on a judge's scale, rescaled floats)."""


@dataclass(frozen=True)
class ScoredItem:
    """One item's score by the judge for one system."""

    id: str
    """The item's id, shared by both systems' files."""
    score: float | None
    """On the judge's scale; None when the reply gave none."""
    group: str
    """The item's source (``--group-col``); the id itself when the file has no groups."""
    missing_reason: str = ""
    """Why there is no score (the method's words or the server's); "" when there is one."""


@dataclass(frozen=True)
class SystemScores:
    """One system's items as scored by one judge."""

    name: str
    """What the summary calls it ("new", "base", or a file name)."""
    judge: str
    """The judge's fingerprint (:func:`judge_engine.score_files.judge_fingerprint`)."""
    aspect: str
    """The aspect the judge scores."""
    items: tuple[ScoredItem, ...]


@dataclass(frozen=True)
class ItemOutcome:
    """One shared item: both scores and who won."""

    id: str
    group: str
    new: float | None
    base: float | None
    outcome: str
    """``"win"`` (new higher), ``"loss"``, ``"tie"`` or ``"missing"`` (either score absent)."""

    @property
    def diff(self) -> float | None:
        return None if self.new is None or self.base is None else self.new - self.base


@dataclass(frozen=True)
class GateResult:
    """The gate's answer on two systems, with everything the summary says."""

    aspect: str
    judge: str
    verdict: str
    """One of :data:`VERDICTS`."""
    margin: float
    """Allowed drop on the judge's scale: ``worse`` only when the interval is wholly below ``-margin``."""
    diff: float
    """Mean of ``new - base`` over the items scored on both sides (NaN with none)."""
    low: float
    high: float
    confidence: float
    resampled: str
    """``"groups"`` or ``"items"``: what the bootstrap drew."""
    n_shared: int
    """Ids in both files."""
    n_compared: int
    """Shared items scored on both sides."""
    n_groups: int
    only_new: int
    """Ids only in the new file (not scored)."""
    only_base: int
    wins: int
    losses: int
    ties: int
    missing_new: int
    """Shared items the judge gave no score for the new system's output."""
    missing_base: int
    mean_new: float
    mean_base: float
    notes: tuple[str, ...]
    """What the figure does not say on its own (too few items, items resampled, missing scores)."""
    missing_reasons: tuple[tuple[str, str, int], ...]
    """(system, reason, count) of the missing scores, most frequent first."""
    items: tuple[ItemOutcome, ...]

    @property
    def worse(self) -> bool:
        return self.verdict == "worse"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["items"] = [{**asdict(i), "diff": i.diff} for i in self.items]
        for key in ("diff", "low", "high", "mean_new", "mean_base"):
            out[key] = _finite(out[key])
        return out


def _finite(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def system_scores(name: str, judge: str, aspect: str, samples: Sequence[Sample],
                  verdicts: Iterable[Verdict]) -> SystemScores:
    """:class:`SystemScores` of ``samples`` from their verdicts (matched on the sample id)."""
    from .records import missing_reason

    by_id = {v.sample_id: v for v in verdicts}
    items = []
    for s in samples:
        v = by_id.get(s.id)
        if v is None:
            items.append(ScoredItem(s.id, None, s.group_id, "not scored"))
            continue
        items.append(ScoredItem(s.id, None if v.missing else float(v.score), s.group_id, missing_reason(v)))
    return SystemScores(name, judge, aspect, tuple(items))


def shared_ids(new: Iterable[str], base: Iterable[str]) -> list[str]:
    """Ids in both, in the new file's order; ValueError when there is none."""
    base_ids = set(base)
    shared = [i for i in new if i in base_ids]
    if not shared:
        raise ValueError("the two files share no item id: the gate compares the same items in both "
                         "(check --id-col, and that both files hold outputs for the same inputs)")
    return shared


def _check(new: SystemScores, base: SystemScores) -> None:
    for s in (new, base):
        if not s.items:
            raise ValueError(f"the {s.name} file has no items to compare")
    if new.aspect != base.aspect:
        raise ValueError(f"the two score tables are of different aspects ({new.aspect!r} and {base.aspect!r}): "
                         "compare systems by one judge on one aspect")
    if new.judge != base.judge:
        raise ValueError(f"the two score tables were made by different judges ({new.judge} and {base.judge}): "
                         "a difference would be the judges', not the systems'")


def compare_scores(new: SystemScores, base: SystemScores, *, margin: float = 0.0, confidence: float = CONFIDENCE,
                   n_bootstrap: int = N_BOOTSTRAP, seed: int = 0, independent: bool = False) -> GateResult:
    """The gate's verdict on ``new`` against ``base`` (see the module docstring); ValueError on bad input.

    ``independent`` resamples the items whatever their groups (the user says items of a group are independent)."""
    _check(new, base)
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"the margin must be a number of at least 0 on the judge's scale, not {margin!r}")
    base_by_id = {i.id: i for i in base.items}
    new_by_id = {i.id: i for i in new.items}
    ids = shared_ids([i.id for i in new.items], base_by_id)
    outcomes = []
    for i in ids:
        a, b = new_by_id[i], base_by_id[i]
        if a.score is None or b.score is None:
            outcome = "missing"
        elif abs(a.score - b.score) <= TIE_TOLERANCE:
            outcome = "tie"
        else:
            outcome = "win" if a.score > b.score else "loss"
        outcomes.append(ItemOutcome(i, a.group or b.group, a.score, b.score, outcome))
    nan = math.nan
    paired = paired_mean_difference([nan if o.new is None else o.new for o in outcomes],
                                    [nan if o.base is None else o.base for o in outcomes],
                                    groups=None if independent else [o.group for o in outcomes],
                                    n_bootstrap=n_bootstrap,
                                    confidence=confidence, seed=seed)
    if math.isfinite(paired.high) and paired.high < -margin:
        verdict = "worse"
    elif math.isfinite(paired.low) and paired.low > margin:
        verdict = "better"
    elif math.isfinite(paired.low):
        verdict = "no resolved difference"
    else:
        verdict = "cannot tell"
    missing_new = sum(1 for o in outcomes if o.new is None)
    missing_base = sum(1 for o in outcomes if o.base is None)
    notes = [paired.note] if paired.note else []
    if independent:
        notes.append("the items were treated as independent (--independent): their groups were not resampled whole")
    if missing_new or missing_base:
        notes.append(f"{missing_new} shared item(s) have no score for the new system and {missing_base} for the "
                     "base; they are left out of the difference, not counted as any score")
    scored = {o.new for o in outcomes if o.new is not None} | {o.base for o in outcomes if o.base is not None}
    if len(outcomes) > 1 and len(scored) == 1:
        # a judge that cannot vary (the tiny embedded model often answers one score) must not read as a pass
        notes.append(f"the judge gave every scored item of both systems the same score ({scored.pop():g}): it "
                     "cannot tell these systems apart, so this comparison says nothing about them")
    reasons: dict[tuple[str, str], int] = {}
    for system, table in ((new.name, new_by_id), (base.name, base_by_id)):
        for i in ids:
            item = table[i]
            if item.score is None:
                key = (system, item.missing_reason or "no score in the reply")
                reasons[key] = reasons.get(key, 0) + 1
    scored_new = [o.new for o in outcomes if o.new is not None and o.base is not None]
    scored_base = [o.base for o in outcomes if o.new is not None and o.base is not None]
    return GateResult(
        aspect=new.aspect, judge=new.judge, verdict=verdict, margin=float(margin), diff=paired.diff,
        low=paired.low, high=paired.high, confidence=confidence, resampled=paired.resampled, n_shared=len(ids),
        n_compared=paired.n, n_groups=paired.n_groups,
        only_new=len(new_by_id) - len(ids), only_base=len(base_by_id) - len(ids),
        wins=sum(o.outcome == "win" for o in outcomes), losses=sum(o.outcome == "loss" for o in outcomes),
        ties=sum(o.outcome == "tie" for o in outcomes), missing_new=missing_new, missing_base=missing_base,
        mean_new=sum(scored_new) / len(scored_new) if scored_new else nan,
        mean_base=sum(scored_base) / len(scored_base) if scored_base else nan,
        notes=tuple(notes),
        missing_reasons=tuple((s, r, n) for (s, r), n in sorted(reasons.items(), key=lambda kv: -kv[1])),
        items=tuple(outcomes))


# --------------------------------------------------------------------------- scoring both systems

def score_system(judge: Any, name: str, samples: Sequence[Sample], *, llm: Any,
                 progress: Callable[[int, int, str], None] | None = None) -> SystemScores:
    """Score ``samples`` with ``judge`` (a :class:`~judge_engine.methods.Judge`) through the one LLM path.

    :func:`judge_engine.score_files.score_stream` does the scoring, as for ``score``: an item the server refuses
    is missing with the server's reason, and every answer goes through the call cache."""
    from .score_files import SCORE_CHUNK, judge_fingerprint, score_stream

    verdicts: list[Verdict] = []
    chunks = [samples[k:k + SCORE_CHUNK] for k in range(0, len(samples), SCORE_CHUNK)]
    score_stream(judge, chunks, llm=llm, write=verdicts.append, progress=progress, total=len(samples))
    return system_scores(name, judge_fingerprint(judge), judge.aspect["name"], samples, verdicts)


def source_groups(samples: Sequence[Sample]) -> list[Sample]:
    """The samples with their source as group: their own groups where some group holds two items (a group column),
    else their input and context where those repeat across items (outputs of one input share its difficulty),
    else unchanged (every item its own group)."""
    if evidence.is_grouped([s.group_id for s in samples]):
        return list(samples)
    keys = [_source_key(s) for s in samples]
    if not evidence.is_grouped(keys):
        return list(samples)
    return [dataclasses.replace(s, group_id=f"input {key}") for s, key in zip(samples, keys)]


def _source_key(sample: Sample) -> str:
    text = sample.input + "\x00" + (sample.context or "")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def compare_samples(judge: Any, new: Sequence[Sample], base: Sequence[Sample], *, llm: Any, margin: float = 0.0,
                    confidence: float = CONFIDENCE, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0,
                    progress: Callable[[int, int, str], None] | None = None,
                    independent: bool = False) -> GateResult:
    """Score the items ``new`` and ``base`` share (by id) with ``judge`` and compare them: the CLI and the Python
    API both come here. Items in one file only are not scored (they are counted). Items that share a source are
    grouped (:func:`source_groups`) unless ``independent``."""
    for what, samples in (("new", new), ("base", base)):
        if not samples:
            raise ValueError(f"the {what} file has no items")
    new = source_groups(new)
    grouped_by_input = any(s.group_id.startswith("input ") for s in new)
    ids = set(shared_ids([s.id for s in new], [s.id for s in base]))
    new_scored = score_system(judge, "new", [s for s in new if s.id in ids], llm=llm, progress=progress)
    base_scored = score_system(judge, "base", [s for s in base if s.id in ids], llm=llm, progress=progress)
    # the ids in one file only are counted as such: they go back in unscored, outside the shared set
    new_all = SystemScores("new", new_scored.judge, new_scored.aspect,
                           new_scored.items + tuple(ScoredItem(s.id, None, s.group_id, "not shared")
                                                    for s in new if s.id not in ids))
    base_all = SystemScores("base", base_scored.judge, base_scored.aspect,
                            base_scored.items + tuple(ScoredItem(s.id, None, s.group_id, "not shared")
                                                      for s in base if s.id not in ids))
    # both sides take the new file's sources (the same items: one source per id)
    source = {s.id: s.group_id for s in new}
    base_all = SystemScores(base_all.name, base_all.judge, base_all.aspect,
                            tuple(dataclasses.replace(i, group=source.get(i.id, i.group)) for i in base_all.items))
    result = compare_scores(new_all, base_all, margin=margin, confidence=confidence, n_bootstrap=n_bootstrap,
                            seed=seed, independent=independent)
    if grouped_by_input and not independent:
        result = dataclasses.replace(result, notes=result.notes + (
            f"items whose input repeats were grouped by it ({result.n_groups} sources): outputs for one input are "
            "not independent; pass --independent if they are",))
    return result


# --------------------------------------------------------------------------- what a CI job shows

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def md_text(value: Any, limit: int = 80) -> str:
    """Text from outside (an id, a model's words) safe inside a Markdown table cell: no HTML, no Markdown, one
    line, at most ``limit`` characters."""
    text = _CONTROL.sub(" ", str(value))
    text = text if len(text) <= limit else text[:limit - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=True))


def _num(x: float | None, sign: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def headline(r: GateResult) -> str:
    """One line: the verdict and the figure it rests on."""
    interval = f"[{_num(r.low, True)}, {_num(r.high, True)}]" if math.isfinite(r.low) else "(no interval)"
    drew = {"groups": f"{r.n_groups} groups resampled", "items": f"{r.n_compared} items resampled"}.get(
        r.resampled, f"nothing resampled: {r.n_groups} source group(s)")
    return (f"{r.verdict}: new - base = {_num(r.diff, True)} {interval} ({r.confidence:.0%} bootstrap, {drew}; "
            f"margin {r.margin:g}) on {r.n_compared} of {r.n_shared} shared items; "
            f"wins {r.wins}, losses {r.losses}, ties {r.ties}")


def summary_lines(r: GateResult) -> list[str]:
    """The result in plain lines for a terminal (control characters of ids removed)."""
    lines = [headline(r), f"mean score: new {_num(r.mean_new)}, base {_num(r.mean_base)} (aspect {r.aspect}, "
             f"judge {r.judge})",
             f"items: {r.n_shared} shared, {r.only_new} only in the new file, {r.only_base} only in the base file; "
             f"missing scores: new {r.missing_new}, base {r.missing_base}"]
    lines += [f"note: {n}" for n in r.notes]
    lines += [f"missing ({system}): {count} x {reason}" for system, reason, count in r.missing_reasons[:5]]
    return ["".join(ch if ch.isprintable() else " " for ch in line) for line in lines]


def worst_losses(r: GateResult, k: int = SHOWN_LOSSES) -> list[ItemOutcome]:
    losses = [o for o in r.items if o.outcome == "loss"]
    return sorted(losses, key=lambda o: (o.diff, o.id))[:k]


def summary_markdown(r: GateResult) -> str:
    """A short Markdown summary for a CI job's page; every id and reason from outside is escaped."""
    mark = {"worse": "FAIL", "better": "better", "no resolved difference": "no resolved difference",
            "cannot tell": "cannot tell (no claim)"}[r.verdict]
    interval = f"[{_num(r.low, True)}, {_num(r.high, True)}]" if math.isfinite(r.low) else "no interval"
    rows = [("verdict", mark), ("new − base (mean)", f"{_num(r.diff, True)} {interval}"),
            ("interval", f"{r.confidence:.0%} bootstrap over {r.resampled}"), ("margin allowed", f"{r.margin:g}"),
            ("mean score new / base", f"{_num(r.mean_new)} / {_num(r.mean_base)}"),
            ("items compared / shared", f"{r.n_compared} / {r.n_shared}"),
            ("wins / losses / ties", f"{r.wins} / {r.losses} / {r.ties}"),
            ("missing scores new / base", f"{r.missing_new} / {r.missing_base}"),
            ("only in new / only in base", f"{r.only_new} / {r.only_base}")]
    out = [f"### Judge gate on {md_text(r.aspect)}: {mark}", "", "| | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in rows]
    if r.notes:
        out += [""] + [f"- {md_text(n, 400)}" for n in r.notes]
    if r.missing_reasons:
        out += ["", "Missing scores:", ""] + [f"- {md_text(s)}: {n} × {md_text(reason, 160)}"
                                             for s, reason, n in r.missing_reasons[:5]]
    losses = worst_losses(r)
    if losses:
        out += ["", "Largest losses:", "", "| item | base | new |", "|---|---|---|"]
        out += [f"| {md_text(o.id)} | {_num(o.base)} | {_num(o.new)} |" for o in losses]
    return "\n".join(out) + "\n"


def _xml_text(value: Any) -> str:
    """Text XML 1.0 can hold (ElementTree escapes markup but writes control characters no parser reads back)."""
    return _NOT_XML.sub("\ufffd", str(value))


def junit_xml(r: GateResult, *, name: str = "judge-workbench compare-systems") -> str:
    """The result as a JUnit XML report: one test case, failed when the verdict is ``worse``."""
    suite = ET.Element("testsuite", name=_xml_text(name), tests="1", failures=str(int(r.worse)), errors="0",
                       skipped="0")
    props = ET.SubElement(suite, "properties")
    for key in ("verdict", "aspect", "judge", "margin", "diff", "low", "high", "n_compared", "n_shared", "wins",
                "losses", "ties", "missing_new", "missing_base"):
        value = getattr(r, key)
        ET.SubElement(props, "property", name=key,
                      value=_xml_text(_num(value, True) if isinstance(value, float) and key != "margin" else value))
    case = ET.SubElement(suite, "testcase", classname="judge_gate",
                         name=_xml_text(f"new system not worse on {r.aspect} by more than {r.margin:g}"))
    if r.worse:
        failure = ET.SubElement(case, "failure", message=_xml_text(headline(r)), type="SignificantlyWorse")
        failure.text = _xml_text("\n".join(summary_lines(r)))
    out = ET.SubElement(case, "system-out")
    out.text = _xml_text("\n".join(summary_lines(r)))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def assert_not_worse(result: GateResult) -> None:
    """Fail a test (``AssertionError``, which pytest reports with this message) when the gate says ``worse``;
    the message is the plain summary."""
    if result.worse:
        raise AssertionError("\n".join(summary_lines(result)))

"""Turning LLM replies into scores, or into an honest "missing".

Pure functions. A reply that does not contain a score on the expected scale
gives ``nan`` (the caller records it as missing with its raw text); nothing
here ever substitutes a default number.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

BRACKET_PATTERN = re.compile(r"\[\[\s*(-?\d+(?:\.\d+)?)\s*\]\]")
"""``[[4]]`` — the marker our direct prompts ask for."""

LABELLED_PATTERN = re.compile(
    r"(?P<before>\b[A-Za-z]+\s+)?(?P<label>(?:final|overall)(?:\s+(?:score|rating))?|score|rating)"
    r"\s*\**\s*(?:is|=|:)\s*\**\s*(?P<value>-?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?",
    re.IGNORECASE)
"""``Score: 4``, ``rating = 3.5``, ``Final score: 4/5``, ``The overall score is 4``.

Deliberately not ``a score of 5`` (a reply quoting the rubric) and not
``Coherence score: 4`` (a criterion's score, not the overall one): see
:func:`_labelled_score`."""

UNQUALIFIED_BEFORE = frozenset({"the", "my", "our", "your", "its", "this", "a", "an", "i", "final", "overall"})
"""Words that may stand before ``score``/``rating`` without making it some criterion's score."""

NUMBER_PATTERN = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.]*\d)")


def _in_range(x: float, low: float, high: float) -> bool:
    return low <= x <= high


def parse_score(text: str, low: float, high: float, *, key: str | None = None) -> float:
    """Extract a score in ``[low, high]`` from a free-text, JSON or ``[[N]]`` reply.

    Order of preference: ``[[N]]`` markers (the last one), a JSON object's
    ``key``/``score``/``rating`` field, a labelled ``Score: N``, and finally a
    reply that is just a number (possibly ``N/5`` or with trailing words).
    Returns ``nan`` when none yields a number inside the scale.

    Examples
    --------
    >>> parse_score("The summary is coherent. [[4]]", 1, 5)
    4.0
    >>> parse_score('{"score": 3, "why": "ok"}', 1, 5)
    3.0
    >>> import math; math.isnan(parse_score("I cannot rate this.", 1, 5))
    True
    """
    if not text:
        return math.nan
    marks = [float(m) for m in BRACKET_PATTERN.findall(text)]
    if marks:
        return marks[-1] if _in_range(marks[-1], low, high) else math.nan
    obj = parse_json_object(text)
    if isinstance(obj, dict):
        for k in ([key] if key else []) + ["score", "rating", "overall", "overall_score"]:
            if k in obj:
                value = _as_number(obj[k])
                return value if value is not None and _in_range(value, low, high) else math.nan
    labelled = _labelled_score(text, low, high)
    if labelled is not None:
        return labelled
    stripped = text.strip().strip("*").strip()
    # a reply that starts with its number ("4", "4/5", "4 - clear"), but not a list item ("1. Read ...")
    first = re.match(r"^(-?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?(?!\.\s*\S)(?:\W|$)", stripped)
    if first:
        value = float(first.group(1))
        return value if _in_range(value, low, high) else math.nan
    return math.nan


def _labelled_score(text: str, low: float, high: float) -> float | None:
    """The last in-range number labelled as the overall/final score, else the last plain ``Score: N``.

    A label qualified by another word (``Coherence score: 4``) is a
    criterion's score and never read as the overall one.
    """
    overall: list[float] = []
    plain: list[float] = []
    for m in LABELLED_PATTERN.finditer(text):
        value = float(m.group("value"))
        if not _in_range(value, low, high):
            continue
        label = m.group("label").lower()
        before = (m.group("before") or "").strip().lower()
        if label.startswith(("final", "overall")) or before in ("final", "overall"):
            overall.append(value)
        elif not before or before in UNQUALIFIED_BEFORE:
            plain.append(value)
    if overall:
        return overall[-1]
    return plain[-1] if plain else None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        m = re.match(r"^\s*(-?\d+(?:\.\d+)?)", value)
        return float(m.group(1)) if m else None
    return None


def parse_json_object(text: str) -> Any:
    """The first JSON object or array in ``text`` (also inside a ```json fence), or None."""
    if not text:
        return None
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    for cand in candidates:
        for i, ch in enumerate(cand):
            if ch in "{[":
                try:
                    obj, _ = decoder.raw_decode(cand[i:])
                    return obj
                except json.JSONDecodeError:
                    continue
    return None


MIN_FIRST_POSITION_MASS = 0.5
"""Least probability the scale's tokens must hold at the first position for a score to be read there.

A reply that chose no number gives a score from its first position's
alternatives only when the scale's tokens are at least this likely there
together: renormalising a few percent of probability mass into a full score
would report a number the model barely considered. 0.5 means the model
more likely than not started with a score.
"""


@dataclass(frozen=True)
class WeightedReading:
    """A probability-weighted score and where it was read."""

    score: float
    """Expectation over the scale's integers (NaN when nothing could be read)."""
    distribution: dict[int, float] | None
    """The scale's probabilities, renormalised (None when nothing could be read)."""
    source: str
    """``logprobs`` (the position of the chosen number), ``logprobs_first_position`` (no number chosen;
    the first position's alternatives), ``low_mass`` (too little probability on the scale there) or
    ``none`` (no logprobs, or no scale token among them)."""
    mass: float = 0.0
    """Probability the scale's tokens held together at that position, before renormalising."""

    @property
    def from_alternatives(self) -> bool:
        """True when the score comes from a position where the reply chose no number."""
        return self.source == "logprobs_first_position"

    @property
    def missing_reason(self) -> str:
        if self.source == "low_mass":
            return (f"the scale's tokens held {self.mass:.0%} of the probability at the reply's first position "
                    f"(at least {MIN_FIRST_POSITION_MASS:.0%} needed)")
        if self.source == "none":
            return "no score token among the reply's logprobs"
        return ""


def _position_distribution(pos: dict[str, Any], labels: dict[str, int]) -> tuple[dict[int, float] | None, float]:
    dist: dict[int, float] = {}
    for token, lp in (pos.get("top") or {}).items():
        key = (token or "").strip()
        if key in labels and lp is not None and math.isfinite(lp):
            dist[labels[key]] = dist.get(labels[key], 0.0) + math.exp(lp)
    if not dist:
        return None, 0.0
    total = sum(dist.values())
    return {k: v / total for k, v in sorted(dist.items())}, total


def read_weighted(logprobs: Sequence[dict[str, Any]], low: int, high: int, *, first_position: bool = False,
                  min_first_position_mass: float = MIN_FIRST_POSITION_MASS) -> WeightedReading:
    """G-Eval's probability-weighted score, with where it was read and how much probability backs it.

    ``logprobs`` is one completion's list of ``{"token", "logprob", "top"}``
    positions. The score position is the first whose chosen token is a
    number; its top alternatives that are scale integers (compared after
    stripping spaces) are renormalised over the scale.

    With ``first_position`` (for prompts that end with a score cue, so the
    reply's first token is where the score belongs): when no chosen token is
    a number, the scale integers among the first position's alternatives are
    used instead, i.e. the score distribution given that the reply starts
    with a score, but only when they hold at least ``min_first_position_mass``
    of the probability there (:data:`MIN_FIRST_POSITION_MASS`); below it the
    reading is ``low_mass`` and the score NaN.
    """
    labels = {str(k): k for k in range(low, high + 1)}
    for pos in logprobs:
        chosen = (pos.get("token") or "").strip()
        if chosen.isdigit():
            dist, mass = _position_distribution(pos, labels)
            if dist is None:
                return WeightedReading(math.nan, None, "none")
            return WeightedReading(sum(k * p for k, p in dist.items()), dist, "logprobs", mass)
    if first_position and logprobs:
        dist, mass = _position_distribution(logprobs[0], labels)
        if dist is None:
            return WeightedReading(math.nan, None, "none")
        if mass < min_first_position_mass:
            return WeightedReading(math.nan, None, "low_mass", mass)
        return WeightedReading(sum(k * p for k, p in dist.items()), dist, "logprobs_first_position", mass)
    return WeightedReading(math.nan, None, "none")


def scale_distribution(logprobs: Sequence[dict[str, Any]], low: int, high: int, *,
                       first_position: bool = False,
                       min_first_position_mass: float = MIN_FIRST_POSITION_MASS) -> dict[int, float] | None:
    """The scale's probabilities where the reply states its score (see :func:`read_weighted`)."""
    return read_weighted(logprobs, low, high, first_position=first_position,
                         min_first_position_mass=min_first_position_mass).distribution


def weighted_score(logprobs: Sequence[dict[str, Any]], low: int, high: int, *,
                   first_position: bool = False,
                   min_first_position_mass: float = MIN_FIRST_POSITION_MASS) -> tuple[float, dict[int, float] | None]:
    """G-Eval's probability-weighted score: the expectation over the scale's tokens.

    ``first_position``: see :func:`read_weighted`, which also says where the score was read.
    """
    reading = read_weighted(logprobs, low, high, first_position=first_position,
                            min_first_position_mass=min_first_position_mass)
    return reading.score, reading.distribution


def mean_ignoring_missing(values: Sequence[float]) -> float:
    """Mean of the parsed values; nan when none parsed."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan

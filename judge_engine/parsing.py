"""Turning LLM replies into scores, or into an honest "missing".

Pure functions. A reply that does not contain a score on the expected scale
gives ``nan`` (the caller records it as missing with its raw text); nothing
here ever substitutes a default number.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Sequence

BRACKET_PATTERN = re.compile(r"\[\[\s*(-?\d+(?:\.\d+)?)\s*\]\]")
"""``[[4]]`` — the marker our direct prompts ask for."""

LABELLED_PATTERN = re.compile(
    r"(?:score|rating|overall|final(?:\s+score)?)\s*(?:is|of|=|:)?\s*\**\s*(-?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?",
    re.IGNORECASE)
"""``Score: 4``, ``rating = 3.5``, ``Final score: 4/5``."""

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
    labelled = [float(m) for m in LABELLED_PATTERN.findall(text)]
    labelled = [x for x in labelled if _in_range(x, low, high)]
    if labelled:
        return labelled[-1]
    stripped = text.strip().strip("*").strip()
    # a reply that starts with its number ("4", "4/5", "4 - clear"), but not a list item ("1. Read ...")
    first = re.match(r"^(-?\d+(?:\.\d+)?)(?:\s*/\s*\d+)?(?!\.\s*\S)(?:\W|$)", stripped)
    if first:
        value = float(first.group(1))
        return value if _in_range(value, low, high) else math.nan
    return math.nan


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


def _position_distribution(pos: dict[str, Any], labels: dict[str, int]) -> dict[int, float] | None:
    dist: dict[int, float] = {}
    for token, lp in (pos.get("top") or {}).items():
        key = (token or "").strip()
        if key in labels and lp is not None and math.isfinite(lp):
            dist[labels[key]] = dist.get(labels[key], 0.0) + math.exp(lp)
    if not dist:
        return None
    total = sum(dist.values())
    return {k: v / total for k, v in sorted(dist.items())}


def scale_distribution(logprobs: Sequence[dict[str, Any]], low: int, high: int, *,
                       first_position: bool = False) -> dict[int, float] | None:
    """Probabilities of the scale's integers at the position where the reply states its score.

    ``logprobs`` is one completion's list of ``{"token", "logprob", "top"}``
    positions. The score position is the first whose chosen token is a
    number; its top alternatives that are scale integers (compared after
    stripping spaces) are renormalised over the scale. Returns None if no
    chosen token is a number or none of its alternatives is on the scale.

    With ``first_position`` (for prompts that end with a score cue, so the
    reply's first token is where the score belongs): when no chosen token is
    a number, the scale integers among the first position's alternatives are
    used instead, i.e. the score distribution given that the reply starts
    with a score. Still None when none of them is on the scale.
    """
    labels = {str(k): k for k in range(low, high + 1)}
    for pos in logprobs:
        chosen = (pos.get("token") or "").strip()
        if chosen.isdigit():
            return _position_distribution(pos, labels)
    if first_position and logprobs:
        return _position_distribution(logprobs[0], labels)
    return None


def weighted_score(logprobs: Sequence[dict[str, Any]], low: int, high: int, *,
                   first_position: bool = False) -> tuple[float, dict[int, float] | None]:
    """G-Eval's probability-weighted score: the expectation over the scale's tokens.

    ``first_position``: see :func:`scale_distribution`.
    """
    dist = scale_distribution(logprobs, low, high, first_position=first_position)
    if not dist:
        return math.nan, None
    return sum(k * p for k, p in dist.items()), dist


def mean_ignoring_missing(values: Sequence[float]) -> float:
    """Mean of the parsed values; nan when none parsed."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan

"""Replies of no meaning that satisfy a request's JSON schema: what :class:`~.rendering.Recorder` answers.

A rendering counts the requests a method will send. Against empty replies a method takes its path for a
model that says nothing: every call draws its follow-up turn, and a step that needs what the model wrote
(Active-Critic's criteria, HD-Eval's sub-criteria) stops the fit or shrinks the tree. A capable model answers
in the shape asked, and so, under a grammar, does the embedded one; a reply of that shape lets the method take
the path its runs take. Against these replies the rendered requests were, for the commands measured
(2026-11-29, docs/benchmarks.md): HPSS 52 where SmolLM2's run made 50 (4 Topical-Chat items, budget 1) and
2,222 where the stub's paper-default run made 2,223; HD-Eval 60 and 60 (one layer); Active-Critic 43 and 47,
676 and 680. Against empty replies: 38 + 12, 24 + 36, 13 + a judge that scores nothing.

Content is drawn from the prompt's hash, as a greedy model gives the same reply to the same prompt: scores
uniform on their scale (a judge that agrees with nobody, so a method that refuses such a judge stops at its
choice, after its calls), text of plain words drawn at random so that no two entries look alike to the
rubric checks, lists :data:`LIST_FILL` of the way from their fewest items to their most.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

TEXT_FILL = 0.3
"""The share of a text field's ``maxLength`` a reply writes: about what SmolLM2 writes of its bound
(:data:`~judge_engine.runs.estimates.EMBEDDED_REPLY_SHARE`), and the text later prompts quote back."""

LIST_FILL = 0.75
"""Where between ``minItems`` and ``maxItems`` a list's length falls: a model asked for "about five" writes
about five, which a method's schema allows as its largest number (HD-Eval's 2 to ``k`` children)."""

WORDS = tuple((
    "clear order facts detail tone length source claims names dates places numbers events reasons topic focus "
    "flow links steps logic style grammar spelling wording terms context question answer reply turn speaker "
    "listener knowledge evidence support sequence transitions paragraphs sentences opening ending article story "
    "plot characters setting conflict resolution voice pacing imagery dialogue humour empathy politeness "
    "relevance accuracy coverage brevity redundancy specificity novelty interest depth balance fairness "
    "precision consistency structure emphasis audience purpose register vocabulary rhythm cohesion reference "
    "pronouns tense agreement quotes figures units comparisons causes effects examples headline background"
).split())
"""Plain words a text field is drawn from: no praise, no score words, no template slots."""

STATEMENT = re.compile(r"^\^(?P<opener>.*?) \[a-z\]\[a-z0-9 ,;'\]\{(?P<low>\d+),(?P<high>\d+)\}\[\.\]\$$")
""":func:`judge_engine.structured.statement_pattern`: an opener, then a lower-case body, then a full stop."""


def _draw(seed: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big") % n


def _words(seed: str, chars: int) -> str:
    """Words drawn from :data:`WORDS` until ``chars`` characters, never one twice in a row."""
    out: list[str] = []
    i = 0
    while sum(len(w) + 1 for w in out) < chars:
        word = WORDS[_draw(f"{seed}/{i}", len(WORDS))]
        i += 1
        if not out or word != out[-1]:
            out.append(word)
    return " ".join(out)


def _length(low: int, high: int, text_chars: float | None, taken: int = 0) -> int:
    """Characters a text field of ``low`` to ``high`` writes: ``text_chars`` (less ``taken`` by a pattern's opener)
    when the method's replies were measured, else :data:`TEXT_FILL` of its bound."""
    wanted = round(TEXT_FILL * high) if text_chars is None else round(text_chars) - taken
    return min(high, max(low, wanted))


def _text(schema: dict[str, Any], seed: str, text_chars: float | None = None) -> str:
    pattern = schema.get("pattern")
    if pattern:
        statement = STATEMENT.match(str(pattern))
        if statement is None:  # no other pattern is built (structured.py); a reply that breaks it is unread
            return ""
        opener = re.sub(r"\[\\?(.)\]", r"\1", statement.group("opener"))  # literal_pattern, undone
        low, high = int(statement.group("low")) + 1, int(statement.group("high")) + 1
        body = _words(seed, _length(low, high, text_chars, len(opener) + 2))[:high].rstrip()
        return f"{opener} {body}."
    low, high = int(schema.get("minLength", 1)), int(schema.get("maxLength", 400))
    return _words(seed, _length(low, high, text_chars))[:high].rstrip()


def reply_value(schema: dict[str, Any], seed: str, *, text_chars: float | None = None,
                list_fill: float | None = None) -> Any:
    """A value valid under ``schema`` (the subset :mod:`judge_engine.structured` builds), drawn from ``seed``.

    ``text_chars`` and ``list_fill``: the characters of a text field and the fill of a list the method's replies
    were measured to have (:mod:`.reply_lengths`); None: :data:`TEXT_FILL` of each field's bound and
    :data:`LIST_FILL`."""
    shape = {"text_chars": text_chars, "list_fill": list_fill}
    if "enum" in schema:
        return schema["enum"][_draw(seed, len(schema["enum"]))]
    kind = schema.get("type")
    if kind == "object":
        return {key: reply_value(sub, f"{seed}.{key}", **shape) for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        low = int(schema.get("minItems", 1))
        high = int(schema.get("maxItems", max(low, 3)))
        fill = LIST_FILL if list_fill is None else list_fill
        return [reply_value(schema.get("items") or {}, f"{seed}[{i}]", **shape)
                for i in range(math.ceil(low + fill * (high - low) - 1e-9))]
    if kind == "string":
        return _text(schema, seed, text_chars)
    if kind == "integer":
        low, high = int(schema.get("minimum", 1)), int(schema.get("maximum", 5))
        return low + _draw(seed, high - low + 1)
    if kind == "number":
        low, high = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 1.0))
        return round(low + (high - low) * _draw(seed, 1001) / 1000, 3)
    if kind == "boolean":
        return bool(_draw(seed, 2))
    return None

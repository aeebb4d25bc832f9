"""Reading the model's generation and repetition-check replies: JSON first, the free-text parsers as fallback."""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Sequence

from ... import structured as st
from ...parsing import parse_json_object
from ...rubric_checks import MAX_ENTRY_CHARS, is_statement

HYPOTHESIS_PATTERN = re.compile(r"(?is)hypothesis\s*(\d+)\s*[.:)]\s*(.+?)(?=\s*hypothesis\s*\d+\s*[.:)]|\Z)")
"""Our pattern for ``hypothesis1. ...`` lists (the regex of the authors' code breaks on "score of 5. ")."""
NUMBERED_PATTERN = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*•])\s+(.+?)(?=^\s*(?:\d+[.)]|[-*•])\s+|\Z)", re.S)
"""Fallback for small models that number their list "1." instead of "hypothesis1."."""
FINAL_ANSWER_PATTERN = re.compile(r"(?i)final\s+answer\s*[:：]?\s*\**\s*\[?\s*(yes|no)\b")
MIN_HYPOTHESIS_WORDS = 6
"""A hypothesis shorter than this is not a rubric (e.g. a bare score "[[4]]"): the rubric checks refuse it as
``empty`` with this bound (:func:`judge_engine.methods.hypoeval.agents._check_reply`), so it is counted and shown,
not dropped while reading."""
HYPOTHESIS_MIN_CHARS = 20
HYPOTHESIS_MAX_CHARS = MAX_ENTRY_CHARS
"""Length bounds of one hypothesis written in the paper's form (``{"hypotheses": [str, ...]}``): long enough
for a hypothesis that walks through its score bands, as the paper's own do (two of its 45 published ones are over
1,000 characters); the upper bound is the rubric checks' own, so a hypothesis the schema allows is not refused."""
HYPOTHESES_KEY = "hypotheses"
"""The list key of the generation schema: one statement per hypothesis (see :func:`hypotheses_schema`)."""
DROP_RULES = ("beyond_limit", "not_text")
"""Why reading leaves an item of a reply out: more items than the request asked for, or an item that is no text
of the form asked for (a JSON number or list; in the sentence form, an item not starting with the opener). Each left-out item is returned in :attr:`Reading.dropped`, and the run keeps it in its
``rejected`` with the rule and a reason, as the rubric checks' refusals (issue 50: nothing dropped silently)."""
DROPPED_TEXT_CHARS = 2_000
"""How much of a left-out item is kept: enough to read it, not a megabyte reply stored again."""
READ_SOURCES = ("json", "text", "unread")
"""How a generation or repetition-check reply was read: JSON satisfying the schema, the free-text fallback, or
not at all."""


class Reading(NamedTuple):
    """The hypotheses or statements read from one reply, and how they were read."""

    items: list[str]
    source: str
    """One of :data:`READ_SOURCES`: ``json``, ``text`` (a fallback) or ``unread`` (nothing read)."""
    dropped: tuple[dict[str, Any], ...] = ()
    """Items of the reply left out while reading (rule one of :data:`DROP_RULES`), in the ``rejected`` shape."""


def dropped_item(item: Any, rule: str, reason: str) -> dict[str, Any]:
    """A left-out item in the shape of a refused rubric entry (``text``, ``ok``, ``rule``, ``reason``)."""
    import json

    text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > DROPPED_TEXT_CHARS:
        text = text[:DROPPED_TEXT_CHARS] + " [cut]"
    return {"text": text, "ok": False, "rule": rule, "reason": reason}


def _within_limit(items: list[str], limit: int) -> tuple[list[str], tuple[dict[str, Any], ...]]:
    """The first ``limit`` items, and the rest as left out (``beyond_limit``) with their place in the reply."""
    extra = items[limit:]
    return items[:limit], tuple(
        dropped_item(t, "beyond_limit", f"item {limit + i} of {len(items)}: {limit} were asked for, the first "
                                        f"{limit} are used") for i, t in enumerate(extra, 1))


class RepetitionAnswer(NamedTuple):
    """The repetition check's answer for one pair of hypotheses, and how it was read."""

    repetitive: bool | None
    """True: the two say the same; None: the reply gave no answer (counted as not repetitive)."""
    source: str
    """One of :data:`READ_SOURCES`."""


def parse_hypotheses(text: str, limit: int) -> list[str]:
    """Hypotheses from a generation reply: ``hypothesisN.`` items, else a numbered list; at most ``limit``."""
    items = [m.group(2) for m in HYPOTHESIS_PATTERN.finditer(text or "")]
    if not items:
        items = [m.group(1) for m in NUMBERED_PATTERN.finditer(text or "")]
    return _within_limit(_clean_text_items(items), limit)[0]


def _clean_text_items(items: Sequence[str]) -> list[str]:
    """Whitespace joined, list brackets and trailing commas stripped; an item left empty is no item.

    Nothing is dropped for its length, an ellipsis or an exact repeat: the rubric checks refuse a short item,
    the prompt's "when ..." placeholder or a repeat of one already taken (``near_duplicate``) with a reason the
    run keeps, and a published hypothesis may quote "excellent coherence...making it easy".
    """
    out: list[str] = []
    for item in items:
        clean = " ".join(item.split()).strip().strip("[]").strip().rstrip(",").strip()
        if clean:
            out.append(clean)
    return out


def hypotheses_schema(opener: str, n: int, *, min_items: int | None = None) -> dict[str, Any]:
    """The schema of a generation or refinement reply: exactly ``n`` hypotheses (the paper asks for n).

    The paper's form (``opener`` empty): ``{"hypotheses": [str, ...]}``,
    each a hypothesis of its own wording, score bands allowed. The sentence
    form: ``{"hypotheses": ["A good summary ...", ...]}``
    (:func:`judge_engine.structured.statement_list_schema`), each one
    lower-case sentence that starts with ``opener``: the shape a small model
    under a grammar fills with usable facets, where a free list lets it
    drift into the judged texts' content. ``minItems`` = ``n`` makes a
    grammar write ``n`` items; reading accepts fewer (``min_items``).
    """
    least = n if min_items is None else min_items
    if not opener:
        return st.string_list_schema(st.HYPOTHESES, HYPOTHESES_KEY, min_items=least, max_items=n,
                                     min_length=HYPOTHESIS_MIN_CHARS, max_length=HYPOTHESIS_MAX_CHARS)
    return st.statement_list_schema(st.HYPOTHESES, HYPOTHESES_KEY, opener=opener, min_items=least, max_items=n)


def as_statement(text: str, opener: str) -> str | None:
    """``text`` as a statement that starts with ``opener`` (its case as given, one full stop at the end), or
    None when it does not start with the opener."""
    clean = " ".join(str(text).split()).strip().strip("\"'[]").strip().rstrip(",;:").strip()
    if not is_statement(clean, opener):
        return None
    body = clean[len(opener):].strip().rstrip(".!?").strip()
    return f"{opener} {body}." if body else None


def read_statements(text: str, limit: int, opener: str) -> Reading:
    """Statements of a reply and how they were read: ``json``, ``text`` or ``unread``.

    ``json``: the reply satisfies :func:`hypotheses_schema` (at least one
    item). ``text``: a ``hypotheses`` list that breaks the schema (a
    server without constrained decoding: capitals, a length off), or, with
    no such list, the sentences of free text that start with the opener.
    Items that do not start with the opener are not statements (the
    caller falls back to :func:`read_hypotheses`). Exact repeats are kept:
    the rubric checks refuse them, with reason.
    """
    reading = st.read_json(text, hypotheses_schema(opener, limit, min_items=1))
    if reading.ok:
        found, beyond = _within_limit([" ".join(s.split()) for s in reading.value[HYPOTHESES_KEY]], limit)
        return Reading(found, "json", beyond)
    value = parse_json_object(text or "")
    items = value.get(HYPOTHESES_KEY) if isinstance(value, dict) else None
    candidates = ([i for i in items if isinstance(i, str)] if isinstance(items, list)
                  else st.find_statements(text, opener))
    read = [(c, as_statement(c, opener)) for c in candidates]
    found, beyond = _within_limit([s for _, s in read if s], limit)
    if not found:  # the caller reads the reply again as hypotheses: that reading says what it leaves out
        return Reading([], "unread")
    # an item of the reply's own list that is no statement is left out with its reason; sentences of free text
    # that do not start with the opener were never items
    no_opener = tuple(dropped_item(c, "not_text", f'not a sentence that starts with "{opener}"')
                      for c, s in read if s is None and isinstance(items, list))
    return Reading(found, "text", _not_text(items) + no_opener + beyond)


def _not_text(items: Any) -> tuple[dict[str, Any], ...]:
    """The items of a JSON list that are no text (a number, a list, an object), as left out (``not_text``)."""
    if not isinstance(items, list):
        return ()
    return tuple(dropped_item(i, "not_text", f"item {n} of the reply's list is a JSON {type(i).__name__}, not a text")
                 for n, i in enumerate(items, 1) if not isinstance(i, str))


def _clean_items(items: Sequence[Any], limit: int) -> tuple[list[str], tuple[dict[str, Any], ...]]:
    """The text items of a JSON list (see :func:`_clean_text_items`), at most ``limit``, and those left out."""
    found, beyond = _within_limit(_clean_text_items([i for i in items if isinstance(i, str)]), limit)
    return found, _not_text(list(items)) + beyond


def why_unread(text: str) -> str:
    """In words, why no hypothesis could be read from a generation reply (for the empty-bank message)."""
    value = parse_json_object(text or "")
    items = value.get("hypotheses") if isinstance(value, dict) else None
    if not isinstance(items, list) or not items:
        return "no list of hypotheses in the reply"
    texts = [" ".join(str(i).split()) for i in items]
    if any("..." in t for t in texts):
        return "the model repeated the prompt's example with its '...' placeholder instead of writing hypotheses"
    if all(len(t.split()) < MIN_HYPOTHESIS_WORDS for t in texts):
        return f"every item had fewer than {MIN_HYPOTHESIS_WORDS} words"
    return "the items repeated each other"


def read_hypotheses(text: str, limit: int) -> Reading:
    """Hypotheses from a reply and how they were read (one of :data:`READ_SOURCES`).

    The main path is JSON satisfying :func:`hypotheses_schema` (``json``).
    The fallback (``text``) takes a JSON ``hypotheses`` list that breaks the
    schema (a count or length off: a server without constrained decoding),
    else the ``hypothesisN.`` / numbered list of :func:`parse_hypotheses`.
    Nothing is dropped for its length: the rubric checks refuse an item shorter than :data:`MIN_HYPOTHESIS_WORDS`.
    """
    # read with at least one item required: fewer than asked is still a structured reply (the count is the
    # generation schema's job; a reply holding fewer items is not turned into a failure here)
    reading = st.read_json(text, st.string_list_schema(st.HYPOTHESES, "hypotheses", min_items=1, max_items=limit,
                                                       min_length=HYPOTHESIS_MIN_CHARS,
                                                       max_length=HYPOTHESIS_MAX_CHARS))
    if reading.ok:
        found, dropped = _clean_items(reading.value["hypotheses"], limit)
        if found:
            return Reading(found, "json", dropped)
    value = parse_json_object(text or "")
    if isinstance(value, dict) and isinstance(value.get("hypotheses"), list):
        found, dropped = _clean_items(value["hypotheses"], limit)
        if found:
            return Reading(found, "text", dropped)
    items = [m.group(2) for m in HYPOTHESIS_PATTERN.finditer(text or "")] or [
        m.group(1) for m in NUMBERED_PATTERN.finditer(text or "")]
    found, dropped = _within_limit(_clean_text_items(items), limit)
    return Reading(found, "text" if found else "unread", dropped)


def read_repetition(text: str) -> RepetitionAnswer:
    """The repetition check's answer (True = repetitive, None = no answer) and how it was read."""
    reading = st.read_json(text, st.yes_no_schema())
    if reading.ok:
        return RepetitionAnswer(reading.value["answer"] == "yes", "json")
    answer = parse_repetition(text)
    return RepetitionAnswer(answer, "unread" if answer is None else "text")


def parse_repetition(text: str) -> bool | None:
    """True when the reply's final answer is "yes" (repetitive); None when it does not say."""
    answers = FINAL_ANSWER_PATTERN.findall(text or "")
    if not answers:
        return None
    return answers[-1].lower() == "yes"

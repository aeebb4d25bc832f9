"""Reading Active-Critic's criteria replies: the JSON schemas asked for, the free-text parsers a reply falls
back to (a server without structured output, a reply cut off), and the cleaning every reading shares
(placeholders copied from the prompt, prompt labels and repeats left out, with their reasons)."""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from ... import structured
from ...parsing import parse_json_object
from ...rubric_checks import name_key, is_statement, statement_body, statement_name

def _key(name: str) -> str:
    # the words of any script: an ASCII-only key made every Chinese, Japanese, Arabic or Russian name "" and the
    # second such criterion of a reply "repeats the name of an earlier criterion" (issue 65, bench junk-run)
    return name_key(str(name)).replace(" ", "")


STATEMENT_MIN_WORDS = 3
"""A statement's body has at least this many words ("A good summary is short." is one thing said, barely)."""


def statement_criteria(statements: Sequence[Any], opener: str,
                       taken: Sequence[str] = (), *, dropped: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """Criteria (name -> the statement itself) from statements that start with ``opener``.

    The name is :func:`judge_engine.rubric_checks.statement_name`. Names are
    unique (case-insensitive, also against ``taken``): when two statements
    give the same short name, a longer one (up to 12 words, past the first
    comma) tells them apart, else a number is added; a statement said twice is kept once.
    Anything that does not start with the opener, or says fewer than
    :data:`STATEMENT_MIN_WORDS` words after it, is not a criterion statement;
    each such item, and a repeat, is appended to ``dropped`` with its reason
    when a list is given (the free-text fallback passes none: its sentences
    were never items).
    """
    out: dict[str, str] = {}
    used = {t.lower() for t in taken}
    seen: set[str] = set()
    note = dropped.append if dropped is not None else (lambda _: None)
    for raw in statements:
        if not isinstance(raw, str):
            note(_left_out(json.dumps(raw, ensure_ascii=False, default=str), "", "not_text",
                           "an item of the criteria list that is no text"))
            continue
        text = " ".join(raw.split())
        if not is_statement(text, opener) or len(statement_body(text, opener).split()) < STATEMENT_MIN_WORDS:
            note(_left_out(text, "", "not_text", f'not a sentence of at least {STATEMENT_MIN_WORDS} words after '
                                                 f'"{opener}"'))
            continue
        text = text if text.endswith(".") else text + "."
        if text.lower() in seen:
            note(_left_out(text, "", "near_duplicate", "said twice in the reply; kept once"))
            continue
        seen.add(text.lower())
        name = statement_name(text, opener)
        if name.lower() in used:  # the name went up to the first comma: the longer one goes past it
            name = statement_name(re.sub(r"[,;]", "", text), opener, max_words=12)
        base, n = name, 2
        while name.lower() in used:
            name, n = f"{base} ({n})", n + 1
        used.add(name.lower())
        out[name] = text
    return out


PLACEHOLDER_CRITERIA = ("criterion name", "another criterion", "criterion a", "criterion b", "one-sentence definition",
                        "a short name", "a short name of the criterion", "what the criterion asks of a response",
                        "one sentence saying what the criterion asks of a response",
                        "the response stays on the topic of the source.", "the response stays on the topic of the source")
"""The shape examples of our criteria prompts: a reply that copies them has inferred nothing."""


def _left_out(name: Any, definition: Any, rule: str, reason: str) -> dict[str, Any]:
    """A criterion a reply gave that reading leaves out, in the shape of a refused one (``rejected``)."""
    text = f"{name}: {definition}" if str(definition).strip() else str(name)
    text = " ".join(text.split())
    return {"text": text[:2_000] + (" [cut]" if len(text) > 2_000 else ""), "ok": False, "rule": rule,
            "reason": reason, "name": " ".join(str(name).split())[:200]}


def _clean_criteria(obj: Any, opener: str = "", dropped: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """``{name: definition}`` from a criteria object, a list of ``{"name", "definition"}`` items or a list of
    statements that start with ``opener`` (:func:`statement_criteria`).

    Placeholder shapes copied from the prompt and prompt labels are left out;
    a repeated name keeps its first definition. Each item left out is
    appended to ``dropped`` with its rule and reason (issue 50: the run keeps
    it in ``rejected``, nothing is dropped silently).
    """
    dropped = [] if dropped is None else dropped
    if isinstance(obj, list) and any(isinstance(item, str) for item in obj):
        return statement_criteria(obj, opener, dropped=dropped)
    if isinstance(obj, list):
        pairs = [(item.get("name", ""), item.get("definition", "")) for item in obj if isinstance(item, dict)]
        dropped += [_left_out(json.dumps(item, ensure_ascii=False, default=str), "", "not_text",
                              "an item of the criteria list that is no criterion object") for item in obj
                    if not isinstance(item, dict)]
    elif isinstance(obj, dict):
        pairs = list(obj.items())
    else:
        return {}
    out: dict[str, str] = {}
    for name, definition in pairs:
        name = str(name).strip()
        if not name:
            dropped.append(_left_out(name, definition, "empty", "a criterion without a name"))
            continue
        if name.lower() in PLACEHOLDER_CRITERIA or str(definition).strip().lower() in PLACEHOLDER_CRITERIA:
            dropped.append(_left_out(name, definition, "placeholder", "the criteria prompt's own example copied"))
            continue
        if _key(name) in NOT_CRITERIA:
            dropped.append(_left_out(name, definition, "field_name",
                                     f"{name!r} is a label of the prompt or reply, not a criterion"))
            continue
        if isinstance(definition, dict):
            definition = next((v for k, v in definition.items() if str(k).lower() in ("description", "definition")),
                              json.dumps(definition, ensure_ascii=False))
        if _key(name) not in {_key(k) for k in out}:
            out[name] = str(definition).strip()
        else:
            dropped.append(_left_out(name, definition, "near_duplicate",
                                     "repeats the name of an earlier criterion of the reply; its first definition "
                                     "is kept"))
    return out


NOT_CRITERIA = {"observations", "observation", "taskdescription", "task", "source", "response", "context",
                "humanscore", "score", "example", "examples", "criteria", "evaluationcriteria", "note", "output",
                "answer", "explanation", "definition", "name", "title", "id", "category", "type", "desc",
                "description"}
"""Line labels that are parts of our prompts or replies, never criterion names."""
CRITERION_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])?\s*\**\s*([A-Za-z][A-Za-z /&'-]{1,40}?)\s*\**\s*[:\u2013\u2014-]\s*"
                            r"\**\s*(\S.{9,300}?)\s*$")
"""``Name: definition`` as a line of a list (bullets, numbers and bold markers allowed)."""


LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+\**\s*([^:<>]{10,300}?)\s*\**\s*$")
"""A numbered or bulleted line without a ``Name:`` part."""


NAME_TAIL_WORDS = {"and", "or", "to", "the", "of", "a", "an", "in", "on", "for", "with", "that", "is", "are"}
"""Words a name cut from a list item does not end with."""


def parse_criteria_lines(reply: str, *, plain_items: bool = False, opener: str = "") -> dict[str, str]:
    """Criteria written as ``Name: one-sentence definition`` lines (the fallback list format), or as
    statements that start with ``opener`` (:func:`judge_engine.structured.find_statements`).

    A name has at most 5 words, a definition at least 3; prompt labels
    (Source, Response, Observations, ...) and the prompts' placeholder
    shapes are not criteria; a repeated name keeps its first definition.
    With ``plain_items``, a numbered or bulleted line of at least 3 words
    without a name is a criterion too: its first words name it, the whole
    line defines it (for the answer to the list prompt only).
    """
    out = statement_criteria(structured.find_statements(reply, opener), opener)
    for line in (reply or "").splitlines():
        if structured.find_statements(line, opener):
            continue  # read as a statement above
        m = CRITERION_LINE.match(line)
        if not m:
            item = LIST_ITEM.match(line) if plain_items else None
            words = item.group(1).strip().rstrip(".").split() if item else []
            if len(words) >= 3 and "<<<" not in line:
                head = words[:5]
                while len(head) > 1 and head[-1].lower().strip(",;") in NAME_TAIL_WORDS:
                    head = head[:-1]
                name = " ".join(head).rstrip(",;")
                if _key(name) not in {_key(k) for k in out}:
                    out[name] = " ".join(words) + "."
            continue
        name, definition = m.group(1).strip(" '-"), m.group(2).strip().strip('"')
        if (_key(name) in NOT_CRITERIA or len(name.split()) > 5 or len(definition.split()) < 3
                or "<<<" in definition or name.lower() in PLACEHOLDER_CRITERIA
                or definition.lower() in PLACEHOLDER_CRITERIA):
            continue
        if _key(name) not in {_key(k) for k in out}:
            out[name] = definition
    return out


def parse_criteria_and_observations(reply: str, opener: str = "", dropped: list[dict[str, Any]] | None = None
                                    ) -> tuple[dict[str, str], str]:
    """Criteria and observations from an init or refine reply (the free-text fallback).

    Accepts ``{"criteria": ["<opener> ...", ...], "observations": "..."}`` that breaks the schema,
    ``{"criteria": [{"name", "definition"}, ...]}``, ``{"Criteria": {...}, "Observations": "..."}`` and a
    bare ``{name: definition}`` object; without a JSON object, statements that start with ``opener`` and
    ``Name: definition`` lines (:func:`parse_criteria_lines`; a JSON reply cut off by its token limit keeps
    its finished statements). Returns ``({}, "")`` when none is found. Items of a JSON reply left out go to
    ``dropped`` (:func:`_clean_criteria`).
    """
    obj = parse_json_object(reply or "")
    if not isinstance(obj, dict):
        return parse_criteria_lines(reply, opener=opener), ""
    keys = {str(k).lower(): k for k in obj}
    observations = obj.get(keys.get("observations", ""), "") if "observations" in keys else ""
    for key in ("criteria", "qualities"):
        if key in keys:
            return _clean_criteria(obj[keys[key]], opener, dropped), str(observations or "")
    return (_clean_criteria({k: v for k, v in obj.items() if str(k).lower() != "observations"}, opener, dropped),
            str(observations or ""))


MIN_CRITERIA, MAX_CRITERIA = 4, 10
"""§4.1: the criteria set holds 4 to 10 criteria."""
STATEMENT_CHARS = 160
"""Longest criterion statement (the schema's pattern): one sentence, and ten of them fit a reply."""
OBSERVATIONS_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 1200}


def criteria_schema(opener: str, *, key: str = "criteria", observations: bool = False) -> dict[str, Any]:
    """A criteria reply, titled :data:`judge_engine.structured.CRITERIA`: with an ``opener``,
    ``{key: ["<opener> ...", ...]}`` with 4-10 statements (:func:`judge_engine.structured.statement_list_schema`);
    without one (the paper's form), ``{key: [{"name", "definition"}, ...]}`` with 4-10 named criteria
    (:func:`judge_engine.structured.named_items_schema`; §4.1: criteria with their descriptions, as JSON).

    ``observations``: the init step's shape (Eq. 6: observations come with the criteria), an optional
    ``observations`` text after the criteria, so a reply of the plain shape still validates and a reply
    cut off inside its observations keeps every criterion.
    """
    if opener:
        schema = structured.statement_list_schema(structured.CRITERIA, key, opener=opener, min_items=MIN_CRITERIA,
                                                  max_items=MAX_CRITERIA, max_chars=STATEMENT_CHARS)
    else:
        schema = structured.named_items_schema(structured.CRITERIA, key, min_items=MIN_CRITERIA,
                                               max_items=MAX_CRITERIA)
    if not observations:
        return schema
    return structured.object_schema(structured.CRITERIA, {**schema["properties"],
                                                          "observations": OBSERVATIONS_SCHEMA}, required=[key])


def qualities_schema(opener: str) -> dict[str, Any]:
    """The short fallback's reply: ``{"qualities": [...]}`` of statements or (no ``opener``) named criteria,
    read as criteria (its own key, so its requests differ from the paper prompt's in the cache and the
    simulated judge)."""
    return criteria_schema(opener, key="qualities")


def criteria_shape(opener: str) -> str:
    """How the follow-up turn describes the criteria reply (statements with an ``opener``, else named
    criteria): in words, with no example values, which a small model copies into every slot."""
    if not opener:
        return ('a JSON object whose "criteria" list holds 4 to 10 different criteria, each an object with a '
                '"name" of a few words saying which quality it checks and a "definition" of one sentence saying '
                'what a good one does')
    return (f'a JSON object whose "criteria" list holds 4 to 10 different sentences, each starting with "{opener}" '
            f'and saying one concrete thing that a good one does')


def read_qualities(reply: str, opener: str, dropped: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """Criteria (name -> statement or definition) from a :func:`qualities_schema` reply; without that JSON, the
    criteria the free-text parsers find in the reply (:func:`parse_criteria_and_observations`: a server without
    structured output, a reply cut off)."""
    reading = structured.read_json(reply, qualities_schema(opener))
    if reading.ok:
        return _clean_criteria(reading.value["qualities"], opener, dropped)
    return parse_criteria_and_observations(reply, opener, dropped)[0]


def read_criteria(reply: str, schema: dict[str, Any], opener: str = "", dropped: list[dict[str, Any]] | None = None
                  ) -> tuple[dict[str, str], str, str]:
    """A criteria reply -> (criteria, observations, read): the schema's JSON first, then the free-text parsers.

    ``read`` is ``json`` (the reply satisfied the schema), ``text`` (the
    fallback parsers found criteria: statements anywhere in the reply, a
    JSON object of another shape, ``Name: definition`` lines) or
    ``missing``. Placeholder names copied from the prompt are left out, and appended to ``dropped`` with their
    reasons.
    """
    reading = structured.read_json(reply, schema)
    if reading.ok:
        return (_clean_criteria(reading.value["criteria"], opener, dropped),
                str(reading.value.get("observations", "")), "json")
    criteria, observations = parse_criteria_and_observations(reply, opener, dropped)
    return criteria, observations, ("text" if criteria else "missing")

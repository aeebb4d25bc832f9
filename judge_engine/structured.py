"""The JSON schemas of every structured reply the methods ask for, and reading replies back.

A method that wants a structured reply builds its schema here and passes
``as_param(schema)`` as :attr:`GenerationParams.json_schema`; the backend
constrains decoding to it (a grammar in llama.cpp, ``response_format`` on an
OpenAI-compatible server, guided decoding in vLLM) or, where a server
supports none, sends the prompt unchanged. Either way the reply is read with
:func:`read_json`, and only when that gives nothing does the method fall back
to its free-text parser: structure is the main path, regular expressions the
fallback.

Every schema carries a ``title`` naming the kind of reply (the constants
below). The title is part of the request (and so of the cache key), and it
lets tests and the simulated judge of the benchmarks recognise which step of
which method asked, without reading the prompt's wording.

A request asks for no more tokens than the longest reply its schema admits
(:func:`sized_max_tokens`, from :func:`schema_token_bound`): the method's
``*_max_tokens`` parameter is only the ceiling.

Scores are enums of the scale's integers rather than ``minimum``/``maximum``:
every mechanism in use (llama.cpp's schema-to-grammar converter, OpenAI's
strict mode, vLLM's guided decoding) supports ``enum``, and the score's digit
then comes within the first few tokens, where its top alternatives are
returned for probability-weighted scoring.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from .parsing import parse_json_object, parse_score

SCORE = "score"
"""``{"score": N}`` (optionally with an explanation): every score reply."""
GEVAL_STEPS = "geval_steps"
"""``{"steps": [str, ...]}``: G-Eval's auto chain-of-thought."""
HYPOTHESES = "hypoeval_hypotheses"
"""``{"hypotheses": [str, ...]}``: HypoEval's generation and refinement."""
YES_NO = "yes_no"
"""``{"answer": "yes" | "no"}``: HypoEval's repetition check and other yes/no questions."""
DECOMPOSITION = "hd_eval_decomposition"
"""``{"children": [{"name", "definition"}, ...]}``: HD-Eval's criterion decomposition."""
TASK_DESCRIPTION = "active_critic_task"
"""``{"task_description": str}``: Active-Critic's inferred task."""
CRITERIA = "active_critic_criteria"
"""``{"criteria": [{"name", "definition"}, ...]}``: Active-Critic's inferred criteria."""
EXPLAINED_SCORES = "active_critic_explained_scores"
"""Per-criterion scores with explanations and an explained overall score (Active-Critic)."""
HPSS_CRITERIA = "hpss_criteria"
"""``{"criteria": [str, ...]}``: HPSS's generated evaluation criteria."""
HPSS_METRICS = "hpss_metrics"
"""``{"questions": [str, ...]}``: HPSS's generated metric questions."""
HPSS_REFERENCE = "hpss_reference"
"""``{"reference": str}``: HPSS's self-generated reference."""

RUBRIC_PRESENCE_PENALTY = 1.5
""":attr:`GenerationParams.presence_penalty` of every request that generates rubric entries (HypoEval traits,
Active-Critic criteria, HD-Eval children): under a grammar with greedy decoding a small model copies the first
item into every later one, and the penalty on tokens already written makes the items differ. The same
parameter is OpenAI's and vLLM's ``presence_penalty``."""

REPLY_KINDS = (SCORE, GEVAL_STEPS, HYPOTHESES, YES_NO, DECOMPOSITION, TASK_DESCRIPTION, CRITERIA,
               EXPLAINED_SCORES, HPSS_CRITERIA, HPSS_METRICS, HPSS_REFERENCE)


def as_param(schema: dict[str, Any] | None) -> str:
    """Compact JSON text of ``schema`` for :attr:`GenerationParams.json_schema` ("" for None).

    Keys keep their order: the order of ``properties`` is the order a grammar
    makes the model write them (explanation before or after the score), and
    the builders here always produce the same order for the same schema, so
    the text, and the cache key, are stable without sorting.
    """
    if not schema:
        return ""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def schema_of(param: str) -> dict[str, Any] | None:
    """The schema a :attr:`GenerationParams.json_schema` value carries (None for free text)."""
    return json.loads(param) if param else None


def kind_of(param: str) -> str:
    """The reply kind (schema title) of a request's ``json_schema`` ("" for free text)."""
    schema = schema_of(param)
    return str(schema.get("title", "")) if schema else ""


def _object(title: str, properties: dict[str, Any], required: Sequence[str] | None = None) -> dict[str, Any]:
    return {"title": title, "type": "object", "properties": properties,
            "required": list(required if required is not None else properties), "additionalProperties": False}


def _string(min_length: int = 1, max_length: int = 400) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": max_length}


def _list(title: str, key: str, item: dict[str, Any], min_items: int, max_items: int) -> dict[str, Any]:
    """``{key: [item, ...]}`` with ``min_items``..``max_items`` items."""
    return _object(title, {key: {"type": "array", "items": item, "minItems": min_items, "maxItems": max_items}})


def score_value(low: float, high: float, *, integer: bool = True) -> dict[str, Any]:
    """The schema of one score on ``[low, high]``: an enum of the integers, or a bounded number."""
    if integer:
        return {"type": "integer", "enum": list(range(int(low), int(high) + 1))}
    return {"type": "number", "minimum": low, "maximum": high}


def score_schema(low: float, high: float, *, integer: bool = True, explanation: str | None = None,
                 explanation_max: int = 600, title: str = SCORE) -> dict[str, Any]:
    """``{"score": N}`` on the scale; ``explanation="before"`` reasons first, ``"after"`` justifies after.

    Reasoning first keeps chain-of-thought prompts faithful; score first puts
    the digit where its logprobs are returned (probability-weighted scores).
    """
    score = {"score": score_value(low, high, integer=integer)}
    if explanation is None:
        return _object(title, score)
    why = {"explanation": _string(1, explanation_max)}
    if explanation == "before":
        return _object(title, {**why, **score})
    if explanation == "after":
        return _object(title, {**score, **why})
    raise ValueError(f"explanation must be None, 'before' or 'after', not {explanation!r}")


def string_list_schema(title: str, key: str, *, min_items: int, max_items: int, min_length: int = 1,
                       max_length: int = 400) -> dict[str, Any]:
    """``{key: [str, ...]}`` with ``min_items``..``max_items`` strings of bounded length."""
    return _list(title, key, _string(min_length, max_length), min_items, max_items)


def text_schema(title: str, key: str, *, min_length: int = 1, max_length: int = 1200) -> dict[str, Any]:
    """``{key: str}``: one bounded text (a task description, a reference)."""
    return _object(title, {key: _string(min_length, max_length)})


def yes_no_schema(title: str = YES_NO) -> dict[str, Any]:
    """``{"answer": "yes" | "no"}``."""
    return _object(title, {"answer": {"type": "string", "enum": ["yes", "no"]}})


def named_items_schema(title: str, key: str, *, min_items: int, max_items: int, name_max: int = 80,
                       definition_max: int = 400) -> dict[str, Any]:
    """``{key: [{"name": str, "definition": str}, ...]}``: named criteria and sub-criteria, the paper's form
    of HD-Eval and Active-Critic, and what a reply that ignored a :func:`statement_list_schema` may still hold."""
    item = _object("item", {"name": _string(1, name_max), "definition": _string(1, definition_max)})
    item.pop("title")
    return _list(title, key, item, min_items, max_items)


def literal_pattern(text: str) -> str:
    """``text`` as a regular expression that matches it literally, in the subset every grammar converter reads.

    :func:`re.escape` writes ``"\\ "`` for a space, an escape llama.cpp's
    schema-to-grammar converter refuses; a character class is understood by
    every converter in use.
    """
    return "".join(c if c.isalnum() or c == " " else f"[\\{c}]" if c in "]\\^-" else f"[{c}]" for c in text)


STATEMENT_BODY = "[a-z0-9 ,;']"
"""The characters of a statement after its opener's first word: lower-case words, commas and apostrophes. No
capital letter, and a letter first: under a grammar a small model otherwise drifts into proper names and
numbers, content rather than a property. It also confines the form to lower-case ASCII English, one reason the
sentence form is the default only on the embedded model."""


def statement_pattern(opener: str, *, min_chars: int = 12, max_chars: int = 160) -> str:
    """A sentence that starts with ``opener`` ("A good summary") and ends with a full stop."""
    return f"^{literal_pattern(opener)} [a-z]{STATEMENT_BODY}{{{min_chars - 1},{max_chars - 1}}}[.]$"


def statement_list_schema(title: str, key: str, *, opener: str, min_items: int, max_items: int,
                          max_chars: int = 160) -> dict[str, Any]:
    """``{key: ["<opener> ...", ...]}``: criteria written as sentences that start with ``opener``.

    The sentence form for small models (``criteria_form="sentence"``,
    :data:`judge_engine.methods.base.CRITERIA_FORMS`): a name slot invites
    a small model to fill it with whatever noun is at hand (the parent, a
    person, a schema key), while completing "A good summary ..." makes it
    name a property of the text. The name shown beside such a criterion is
    taken from the sentence (:func:`judge_engine.rubric_checks.statement_name`).
    """
    sentence = {"type": "string", "pattern": statement_pattern(opener, max_chars=max_chars)}
    return _list(title, key, sentence, min_items, max_items)


SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def find_statements(text: str, opener: str) -> list[str]:
    """The free-text fallback of :func:`statement_list_schema`: every finished sentence that starts with
    ``opener`` anywhere in a reply, as written.

    Lines of a list (bullets and numbers allowed), running text, JSON strings,
    even the finished items of a JSON reply cut off by its token limit. A
    sentence ends at its first full stop (or ``!``, ``?``), before the next
    opener or at its line's end; inside quotes it must end with a full stop,
    so a JSON item cut off mid-sentence is left out. Text with the prompt's
    ``<<<`` markers is a copied example, not a statement.
    """
    if not opener:
        return []
    start = re.compile(rf"(?<![A-Za-z]){re.escape(opener)}\s", re.IGNORECASE)
    out = []
    for line in (text or "").splitlines():
        for piece in re.split(r'(?<!\\)"', line):  # a JSON string or a plain line
            starts = [m.start() for m in start.finditer(piece)]
            for a, b in zip(starts, starts[1:] + [len(piece)]):
                sentence = piece[a:b]
                end = SENTENCE_END.search(sentence)
                if end:
                    sentence = sentence[:end.end()]
                elif '"' in line:
                    continue  # an unfinished JSON string: cut off by the token limit
                sentence = sentence.strip().rstrip(",;").strip()
                if "<<<" not in sentence:
                    out.append(sentence)
    return out


def object_schema(title: str, properties: dict[str, Any], required: Sequence[str] | None = None) -> dict[str, Any]:
    """A closed object of ``properties`` (all required unless ``required`` says otherwise)."""
    return _object(title, properties, required)


TEXT_CHARS_PER_TOKEN = 2
"""Characters of JSON string text counted as one token by :func:`schema_token_bound`. Measured with the
embedded SmolLM2 tokenizer on the JSON-quoted strings (2026-11): real rubric criteria and hypotheses
(``data/rubrics/real_rubrics.jsonl``, 337 texts) median 5.9 characters a token, the fewest 3.4; the papers'
hypotheses and the rubric-check negatives (``tests/data``) median 4.7-4.9, fewest 3.0; the datasets' texts
(SummEval, HANNA, Topical-Chat, Newsroom, SF-HOT, windows of 160-1,200 characters) median 3.1-4.4, fewest 2.1.
2 leaves 1.5x under the fewest of any rubric text, what the generation schemas hold. Not safe for digit runs
(1 character a token) or non-Latin scripts (Japanese: 0.6): such a reply is cut at the bound."""
WHITESPACE_TOKENS = 2
"""Tokens allowed for the optional whitespace at each place a grammar admits it (llama.cpp's: a space, or a
newline and an indent)."""
NUMBER_TOKENS = 24
"""A number or an integer with no ``enum``: a 64-bit integer's 20 characters and a short fraction (JSON
admits longer numbers; no reply here asks for one)."""
SIZING_MARGIN_TOKENS = 32
"""Added to :func:`schema_token_bound` by :func:`sized_max_tokens`: a code fence around the JSON and a
short lead-in sentence from a server that answers in free text, and the end-of-text token."""


def _text_tokens(chars: int) -> int:
    """A JSON string of ``chars`` characters: its quotes and its text at :data:`TEXT_CHARS_PER_TOKEN`."""
    return 2 + -(-chars // TEXT_CHARS_PER_TOKEN)


def _literal_tokens(value: Any) -> int:
    """A known value (a key, an enum member): a string by :func:`_text_tokens`, anything else (numbers,
    booleans, null) a token per character."""
    return _text_tokens(len(value)) if isinstance(value, str) else len(json.dumps(value))


def _largest(bounds: list[int | None]) -> int | None:
    """The largest of the alternatives' bounds; None when there is none or one of them has none."""
    known = [b for b in bounds if b is not None]
    return max(known) if known and len(known) == len(bounds) else None


def _pattern_chars(pattern: str) -> int | None:
    """Most characters a string matching an anchored ``^...$`` pattern can hold (None: unbounded or unanchored,
    since a JSON Schema pattern that is not anchored matches anywhere in a longer string)."""
    try:
        from re import _parser  # the width computation of re itself (Python >= 3.11)
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse as _parser  # type: ignore[no-redef]
    if not (pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$")):
        return None
    try:
        high = _parser.parse(pattern).getwidth()[1]
    except (re.error, ValueError, TypeError, OverflowError):
        return None
    return None if high >= _parser.MAXREPEAT else int(high)


def _string_tokens(schema: dict[str, Any]) -> int | None:
    limits = [int(schema["maxLength"])] if "maxLength" in schema else []
    if "pattern" in schema:
        chars = _pattern_chars(str(schema["pattern"]))
        limits += [chars] if chars is not None else []
    return _text_tokens(min(limits)) if limits else None


def _tokens_of_type(schema: dict[str, Any], kind: str) -> int | None:
    if kind == "object":
        props = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or "patternProperties" in schema:
            return None
        total = 2 + WHITESPACE_TOKENS  # braces, whitespace after the opening one
        for key, sub in props.items():
            value = schema_token_bound(sub)
            if value is None:
                return None
            total += _literal_tokens(key) + 2 + 2 * WHITESPACE_TOKENS + value  # key, colon and comma, whitespace
        return total
    if kind == "array":
        most, item = schema.get("maxItems"), schema.get("items")
        if most is not None and int(most) == 0:
            return 2 + WHITESPACE_TOKENS
        each = schema_token_bound(item) if isinstance(item, dict) else None
        if most is None or each is None:
            return None
        return 2 + WHITESPACE_TOKENS + int(most) * (each + 1 + WHITESPACE_TOKENS)  # brackets; item, comma, whitespace
    if kind == "string":
        return _string_tokens(schema)
    if kind in ("integer", "number"):
        return NUMBER_TOKENS
    if kind == "boolean":
        return len("false")
    if kind == "null":
        return len("null")
    return None


def schema_token_bound(schema: dict[str, Any] | None) -> int | None:
    """An upper bound on the tokens of the longest JSON document ``schema`` admits; None when it has none.

    Walks the schema: an object counts its braces and, per property, the
    quoted key, colon, comma, whitespace and the value's bound; an array
    ``maxItems`` times its item's bound and separators; a string its
    ``maxLength`` (or the longest match of an anchored ``pattern``) at
    :data:`TEXT_CHARS_PER_TOKEN` characters a token; an ``enum`` or
    ``const`` its longest member; numbers :data:`NUMBER_TOKENS`. Every place
    where whitespace may go gets :data:`WHITESPACE_TOKENS`. None (no bound)
    for a string without a length limit, an array without ``maxItems``, an
    object open to more properties, and any keyword not understood here
    (``$ref``, ``allOf``, ...): the caller then keeps its own limit.

    Examples
    --------
    >>> schema_token_bound(score_schema(1, 5))
    16
    >>> schema_token_bound(string_list_schema("t", "items", min_items=1, max_items=3, max_length=100)) <= 200
    True
    >>> schema_token_bound({"type": "string"}) is None
    True
    """
    if not isinstance(schema, dict) or not schema:
        return None
    if "const" in schema:
        return _literal_tokens(schema["const"])
    if "enum" in schema:
        return _largest([_literal_tokens(v) for v in schema["enum"]])
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches is not None:
        return _largest([schema_token_bound(b) for b in branches])
    kind = schema.get("type")
    if kind is None:
        return None
    return _largest([_tokens_of_type(schema, k) for k in (kind if isinstance(kind, list) else [kind])])



def sized_max_tokens(limit: int, schema: dict[str, Any] | None) -> int:
    """The reply budget of a request for ``schema``: ``limit``, or less when the schema's longest document
    needs less (:func:`schema_token_bound` plus :data:`SIZING_MARGIN_TOKENS`); ``limit`` when it has no bound.

    A method's ``*_max_tokens`` parameter stays the ceiling. On the embedded
    model the grammar already ends a reply where the schema does, except
    inside a string longer than llama.cpp can spell out
    (:data:`judge_engine.llm.base.GRAMMAR_MAX_STRING_LENGTH`); there, and on
    a server that answers in free text or with ``json_object``,
    ``max_tokens`` is what stops a runaway reply, and a smaller one lets a
    server schedule more requests at once.
    """
    bound = schema_token_bound(schema) if schema else None
    return limit if bound is None else min(limit, bound + SIZING_MARGIN_TOKENS)


@dataclass(frozen=True)
class StructuredReading:
    """What :func:`read_json` made of a reply."""

    value: Any
    """The reply's JSON value when it satisfies the schema, else None."""
    error: str = ""
    """Why it was not read (no JSON found, or the first schema violation), "" when it was."""

    @property
    def ok(self) -> bool:
        return self.value is not None


def read_json(text: str, schema: dict[str, Any]) -> StructuredReading:
    """Read a reply as JSON that satisfies ``schema``.

    A constrained reply is the JSON itself; a free-text reply may still hold a
    JSON object (also in a fenced block), found by
    :func:`judge_engine.parsing.parse_json_object`. A reply cut off by its
    token limit, or JSON that breaks the schema (a score off the scale, too
    few items), is not read: the error names why, and the caller falls back
    to its free-text parser or records the item as missing.
    """
    value = parse_json_object(text or "")
    if value is None:
        return StructuredReading(None, "no JSON in the reply")
    schema_json = _schema_json(schema)
    valid = _short_reply_valid(schema_json, text) if len(text) <= SHORT_REPLY_CHARS else \
        _validator(schema_json).is_valid(value)
    if valid:  # the common case; the best error is looked for only when there is one
        return StructuredReading(value)
    from jsonschema.exceptions import best_match

    exc = best_match(_validator(schema_json).iter_errors(value))
    if exc is not None:
        where = "/".join(str(p) for p in exc.absolute_path) or "reply"
        return StructuredReading(None, f"{where}: {exc.message[:200]}")
    return StructuredReading(value)


SHORT_REPLY_CHARS = 256
"""Replies up to this long have their schema check remembered: a judge's score replies are a handful of short
texts said again and again (``{"score": 3}``), and checking each anew was most of the 0.09 ms of CPU a scored
item spent reading its reply (issue 48: ``score``'s CPU per item against a plain client's)."""


@functools.lru_cache(maxsize=4096)
def _short_reply_valid(schema_json: str, text: str) -> bool:
    """Whether the JSON in a short reply satisfies the schema (given as its JSON): a pure function of both."""
    return _validator(schema_json).is_valid(parse_json_object(text))


_SCHEMA_JSON: dict[int, tuple[dict[str, Any], str]] = {}


def _schema_json(schema: dict[str, Any]) -> str:
    """``schema`` as sorted JSON, the key of its validator. A batch's replies share one schema object, so its JSON
    is made once per object: the entry holds the object, so its id cannot name another while it is kept."""
    hit = _SCHEMA_JSON.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    text = json.dumps(schema, sort_keys=True)
    if len(_SCHEMA_JSON) >= 256:
        _SCHEMA_JSON.clear()
    _SCHEMA_JSON[id(schema)] = (schema, text)
    return text


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    """A checked validator of one schema (given as its JSON), made once: what ``jsonschema.validate`` does on
    every call (the schema checked against its meta-schema, then a validator built), which took most of the
    time of reading a short reply."""
    from jsonschema.validators import validator_for

    schema = json.loads(schema_json)
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@dataclass(frozen=True)
class ScoreReading:
    """A score read from one reply, and how."""

    score: float
    """On the judge's scale; NaN when the reply gave none."""
    source: str
    """``json`` (the structured reply), ``text`` (the free-text fallback) or ``missing``."""
    reason: str = ""
    """Why the score is missing ("" when it was read)."""


def read_score(text: str, low: float, high: float, *, schema: dict[str, Any] | None = None,
               key: str = "score") -> ScoreReading:
    """A score reply read as JSON of ``schema`` first (default: :func:`score_schema`), free text second.

    The fallback is :func:`judge_engine.parsing.parse_score` (``[[N]]``,
    a labelled overall score, a reply that starts with its number). A reply
    that gives neither is missing, with the JSON reading's error as the reason.
    """
    reading = read_json(text, schema or score_schema(low, high))
    if reading.ok and key in reading.value:
        return ScoreReading(float(reading.value[key]), "json")
    value = parse_score(text, low, high, key=key)
    if not math.isnan(value):
        return ScoreReading(value, "text")
    why = "empty reply" if not (text or "").strip() else f"no score on the {low:g}-{high:g} scale ({reading.error})"
    return ScoreReading(math.nan, "missing", why)

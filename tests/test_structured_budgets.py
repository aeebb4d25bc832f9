"""Reply budgets sized to the schema (issue #36, item 3): :func:`judge_engine.structured.schema_token_bound` and
:func:`~judge_engine.structured.sized_max_tokens`, and every method's structured requests asking for
``min(parameter, bound + margin)`` tokens.

The bound is checked against the longest documents the methods' schemas admit, built from the papers' own
hypotheses (``tests/data/rubric_paper_examples.jsonl``): in the unit tier with a conservative token count
(:func:`proxy_tokens`), in the model tier with the embedded SmolLM2 tokenizer itself.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from judge_engine import structured as st
from judge_engine.criteria_scoring import criterion_schema, joint_schema, CriterionText
from judge_engine.methods import FitContext, get_method
from judge_engine.methods import active_critic as ac
from judge_engine.methods.geval import STEPS_SCHEMA
from judge_engine.methods.hd_eval.decomposition import decomposition_schema, statement_schema
from judge_engine.methods.hpss.auxiliaries import SCHEMAS as HPSS_SCHEMAS
from judge_engine.methods.hypoeval import hypotheses_schema
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect
from tests.scripted import scripted_llm

OPENER = "A good summary"
TEXT = " ".join(json.loads(line)["text"] for line in
                (Path(__file__).parent / "data" / "rubric_paper_examples.jsonl").read_text().splitlines() if line)
"""The papers' hypotheses and criteria, one running text the maximal documents' strings are cut from."""


def _schemas() -> dict[str, dict[str, Any]]:
    """Every schema a method asks for, at the parameters it is used with (and the widest ones allowed)."""
    out = {"geval steps": STEPS_SCHEMA, "yes/no": st.yes_no_schema(),
           "ac task": ac.TASK_SCHEMA, "ac overall": ac.OSE_SCHEMA, "ac weighted": ac.WEIGHTED_SCHEMA,
           "ac mcse": ac.mcse_schema(["Coherence of the argument", "Fluency", "Relevance to the article",
                                      "Consistency with the source", "Coverage of the key facts"])}
    for n in (1, 3, 5, 10):
        out[f"hypotheses paper n={n}"] = hypotheses_schema("", n)
        out[f"hypotheses sentence n={n}"] = hypotheses_schema(OPENER, n)
    for k in (2, 4, 10):
        out[f"decomposition paper k={k}"] = decomposition_schema(k)
        out[f"decomposition sentence k={k}"] = statement_schema(k, OPENER)
    for opener in ("", OPENER):
        for observations in (False, True):
            out[f"ac criteria {opener or 'paper'} obs={observations}"] = ac.criteria_schema(
                opener, observations=observations)
        out[f"ac qualities {opener or 'paper'}"] = ac.qualities_schema(opener)
    out.update({f"hpss {kind}": schema for kind, schema in HPSS_SCHEMAS.items()})
    for low, high in ((1, 5), (1, 10), (0, 100)):
        for where in (None, "before", "after"):
            out[f"score {low}-{high} explanation={where}"] = st.score_schema(low, high, explanation=where)
    aspect = Aspect("quality", 1, 5, "How good it is.")
    out["criterion score reasoning"] = criterion_schema(aspect, reasoning=True)
    out["joint score"] = joint_schema([CriterionText(f"h{i}", f"hypothesis {i}", "") for i in range(10)], aspect)
    return out


SCHEMAS = _schemas()

STATEMENT = re.compile(r"^\^(?P<opener>.*) \[a-z\](?P<body>\[.*?\])\{(?P<low>\d+),(?P<high>\d+)\}\[\.\]\$$")


def _text(chars: int, offset: int) -> str:
    """``chars`` characters of the papers' text, from ``offset`` on (cycled)."""
    start = offset * 997 % len(TEXT)
    return (TEXT * (chars // len(TEXT) + 2))[start:start + chars]


def _statement(pattern: str, offset: int) -> str:
    """The longest sentence :func:`judge_engine.structured.statement_pattern` admits, in the papers' words."""
    m = STATEMENT.match(pattern)
    assert m, f"not a statement pattern: {pattern}"
    opener = re.sub(r"\[\\?(.)\]", r"\1", m["opener"])
    body_chars = re.compile(m["body"])
    words = "".join(c for c in _text(4000, offset).lower() if body_chars.fullmatch(c))
    body = re.sub(r"^[^a-z]+", "", words)[: int(m["high"]) + 1]
    return f"{opener} {body}."


def maximal_document(schema: dict[str, Any], offset: int = 0) -> Any:
    """A document valid under ``schema`` with every optional part present, every array at ``maxItems`` and
    every string at its longest, in realistic words."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(json.dumps(v)))
    kind = schema["type"]
    if kind == "object":
        return {k: maximal_document(sub, offset + i) for i, (k, sub) in enumerate(schema["properties"].items())}
    if kind == "array":
        return [maximal_document(schema["items"], offset + 13 * i + 1) for i in range(schema["maxItems"])]
    if kind == "string":
        return _statement(schema["pattern"], offset) if "pattern" in schema else _text(schema["maxLength"], offset)
    if kind in ("integer", "number"):
        return schema["maximum"]
    raise AssertionError(f"no maximal document for {schema!r}")


PIECES = re.compile(r" ?[A-Za-z]+|\d| ?[^\sA-Za-z\d]+|\s+")


def proxy_tokens(text: str) -> int:
    """A conservative token count without a tokenizer: a run of letters ceil(len/3) tokens, every digit,
    whitespace run and punctuation mark one. On every text of ``tests/data`` and ``data/rubrics`` (434
    texts) it is at least SmolLM2's count and twice it on average (:func:`test_the_proxy_is_conservative`)."""
    return sum(math.ceil(len(p.strip()) / 3) if p.strip().isalpha()
               else 1 if p.isdigit() or p.isspace() else len(p.strip()) for p in PIECES.findall(text))


def _serialised(doc: Any) -> list[str]:
    """How a reply may write ``doc``: compact, as a grammar writes it, and pretty-printed, as a server may."""
    return [json.dumps(doc, ensure_ascii=False), json.dumps(doc, ensure_ascii=False, indent=2)]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_bound_covers_the_longest_document_of_each_schema(name):
    schema = SCHEMAS[name]
    doc = maximal_document(schema)
    assert st.read_json(json.dumps(doc), schema).ok, "the maximal document satisfies its schema"
    bound = st.schema_token_bound(schema)
    assert bound is not None
    for text in _serialised(doc):
        assert proxy_tokens(text) <= bound, f"{name}: {proxy_tokens(text)} proxy tokens > bound {bound}"


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_bound_covers_the_longest_document_in_smollm2_tokens(name, smollm2):
    schema = SCHEMAS[name]
    for text in _serialised(maximal_document(schema)):
        real = smollm2.count_tokens(text)
        assert real <= proxy_tokens(text) <= st.schema_token_bound(schema), name


@pytest.mark.model
def test_the_proxy_is_conservative(smollm2):
    texts = [json.loads(line)["text"] for f in ("rubric_paper_examples.jsonl", "rubric_negatives.jsonl")
             for line in (Path(__file__).parent / "data" / f).read_text().splitlines() if line]
    assert all(smollm2.count_tokens(json.dumps(t)) <= proxy_tokens(json.dumps(t)) for t in texts)


@pytest.fixture(scope="module")
def smollm2():
    from judge_engine.llm.llamacpp import LlamaCppBackend

    return LlamaCppBackend()


def test_no_bound_without_a_length_limit():
    assert st.schema_token_bound({"type": "string"}) is None
    assert st.schema_token_bound({"type": "array", "items": {"type": "string", "maxLength": 9}}) is None
    assert st.schema_token_bound(st.string_list_schema("t", "k", min_items=1, max_items=3, max_length=10)) is not None
    open_object = {"type": "object", "properties": {"a": {"type": "integer", "enum": [1]}}}
    assert st.schema_token_bound(open_object) is None, "an object open to more properties has no longest document"
    assert st.schema_token_bound({"type": "string", "pattern": "^a+$"}) is None
    assert st.schema_token_bound({"type": "string", "pattern": "a{3}"}) is None, "an unanchored pattern matches anywhere"
    assert st.schema_token_bound({"type": "string", "pattern": "^a{3,7}$"}) == 2 + 4
    assert st.schema_token_bound({"$ref": "#/defs/x"}) is None
    either = {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "string"}]}
    assert st.schema_token_bound(either) is None, "one unbounded alternative makes the whole unbounded"
    assert st.schema_token_bound({"anyOf": [{"type": "string", "maxLength": 40}, {"type": "boolean"}]}) == 22
    assert st.schema_token_bound({"type": ["string", "null"], "maxLength": 40}) == 22
    assert st.schema_token_bound({"const": "yes"}) == st.schema_token_bound({"enum": ["no", "yes"]}) == 4
    assert st.schema_token_bound(None) is None


def test_a_longer_string_limit_gives_a_larger_bound():
    short, long = (st.schema_token_bound(st.text_schema("t", "k", max_length=n)) for n in (100, 1000))
    assert short < long and long - short == 900 // st.TEXT_CHARS_PER_TOKEN
    assert (st.schema_token_bound(st.string_list_schema("t", "k", min_items=1, max_items=6, max_length=50))
            > st.schema_token_bound(st.string_list_schema("t", "k", min_items=1, max_items=3, max_length=50)))


def test_sized_max_tokens_keeps_the_limit_as_the_ceiling():
    schema = st.score_schema(1, 5)
    bound = st.schema_token_bound(schema)
    assert st.sized_max_tokens(1024, schema) == bound + st.SIZING_MARGIN_TOKENS < 1024
    assert st.sized_max_tokens(12, schema) == 12, "a budget already under the bound stays"
    assert st.sized_max_tokens(700, None) == 700 and st.sized_max_tokens(700, {"type": "string"}) == 700


LIMITS = {
    "geval": {st.GEVAL_STEPS: "steps_max_tokens"},
    "hypoeval": {st.HYPOTHESES: "generation_max_tokens", st.YES_NO: "check_max_tokens", st.SCORE: "max_tokens"},
    "hd_eval": {st.DECOMPOSITION: "decompose_max_tokens", st.SCORE: "score_max_tokens"},
    "active_critic": {st.TASK_DESCRIPTION: "max_tokens", st.CRITERIA: "max_tokens",
                      st.EXPLAINED_SCORES: "max_tokens", st.SCORE: "max_tokens"},
    "hpss": {st.HPSS_CRITERIA: "aux_max_tokens", st.GEVAL_STEPS: "aux_max_tokens",
             st.HPSS_METRICS: "aux_max_tokens", st.HPSS_REFERENCE: "aux_max_tokens", st.SCORE: "judge_max_tokens"},
}
"""Per method, the parameter that is the ceiling of each kind of structured request it makes."""
GENERATION = {"geval": {st.GEVAL_STEPS}, "hypoeval": {st.HYPOTHESES}, "hd_eval": {st.DECOMPOSITION},
              "active_critic": {st.TASK_DESCRIPTION, st.CRITERIA, st.EXPLAINED_SCORES},
              "hpss": {st.HPSS_CRITERIA, st.HPSS_REFERENCE}}
"""The generation requests each method's fit must make (so the check below cannot pass on no request)."""
WIDE = {"steps_max_tokens": 4000, "generation_max_tokens": 8000, "check_max_tokens": 4000, "max_tokens": 4000,
        "decompose_max_tokens": 4000, "score_max_tokens": 1000, "aux_max_tokens": 8000, "judge_max_tokens": 8000}
"""Limits far above every bound: each request is then sized by its schema alone."""
CASES = [(name, form, wide) for name in sorted(LIMITS) for form in
         (("sentence", "paper") if name in ("hypoeval", "hd_eval", "active_critic") else (None,))
         for wide in (False, True)]


def _constant_budget(name: str, kind: str, messages, params) -> bool:
    """Requests whose budget is a constant, not a parameter: probability-weighted scores (the positions whose
    alternatives are returned) and the score-alone follow-up turn (except Active-Critic's, sized from
    ``max_tokens``)."""
    follow_up = any(m["role"] == "assistant" for m in messages)
    return params.top_logprobs > 0 or (kind == st.SCORE and follow_up and name != "active_critic")


@pytest.mark.parametrize(("name", "form", "wide"), CASES)
def test_each_structured_request_asks_for_the_parameter_or_the_schema_bound(name, form, wide, tiny_dataset):
    defaults = get_method(name).get_params()
    params = {k: WIDE[k] for k in set(LIMITS[name].values())} if wide else {}
    if form:
        params["criteria_form"] = form
    method = get_method(name, params)
    llm, backend = scripted_llm()  # no cache: every request reaches the backend
    judge = method.fit(tiny_dataset.samples[:6], tiny_dataset.aspects[0],
                       FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    judge.score(tiny_dataset.samples[6:8], llm=llm)
    seen = set()
    for messages, asked in backend.calls:
        kind = st.kind_of(asked.json_schema)
        if kind not in LIMITS[name] or _constant_budget(name, kind, messages, asked):
            continue
        seen.add(kind)
        limit = {**defaults, **params}[LIMITS[name][kind]]
        schema = st.schema_of(asked.json_schema)
        bound = st.schema_token_bound(schema)
        assert asked.max_tokens == min(limit, bound + st.SIZING_MARGIN_TOKENS), (kind, asked.max_tokens, limit, bound)
        if wide:
            assert asked.max_tokens < limit, f"{kind}: sized below the wide limit"
    assert GENERATION[name] <= seen, f"{name} made no {GENERATION[name] - seen} request"


@pytest.mark.parametrize(("form", "old", "new"), [("sentence", 1024, 518), ("paper", 1024, 1024)])
def test_hypoeval_generation_at_the_paper_defaults(form, old, new, tiny_dataset):
    # the issue's case: five sentences do not need 1,024 tokens; five hypotheses of up to 1,000 characters may
    assert get_method("hypoeval").get_params()["generation_max_tokens"] == old
    llm, backend = scripted_llm()
    get_method("hypoeval", {"criteria_form": form}).fit(tiny_dataset.samples[:6], tiny_dataset.aspects[0],
                                                        FitContext(llm=llm, task=TaskInfo.of(tiny_dataset)))
    first = next(p for m, p in backend.calls if st.kind_of(p.json_schema) == st.HYPOTHESES
                 and st.schema_of(p.json_schema)["properties"]["hypotheses"]["maxItems"] == 5)
    assert first.max_tokens == new

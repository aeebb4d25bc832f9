"""Scripted LLMs for tests: :func:`fake_llm` over any scripted replies, and one that answers every schema.

:func:`fake_llm` is the one way a test builds the engine's LLM over a
:class:`~judge_engine.llm.fake.FakeBackend` (a fixed reply or a responder).
Unit tests of one method script their replies by hand; the tests that hold
every method to the same contract need replies that satisfy whatever each
step asks for, without knowing the step (:func:`scripted_llm`: a valid
instance of the request's JSON schema). The instance is deterministic in
(the schema, the prompt), so the same request always gets the same reply.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import Any, Callable

from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.structured import schema_of

WORDS = ("clarity", "accuracy", "detail", "relevance", "fluency", "coverage", "tone", "structure", "focus", "depth")


def schema_instance(schema: dict[str, Any], seed: int, path: str = "", score: float | None = None) -> Any:
    """A value valid under ``schema`` (the subset of JSON Schema that judge_engine.structured builds).

    With ``score``, every numeric enum (a score on a scale) takes the value closest to it.
    """
    if "enum" in schema:
        values = schema["enum"]
        if score is not None and all(isinstance(v, (int, float)) for v in values):
            return min(values, key=lambda v: abs(v - score))
        return values[seed % len(values)]
    if "anyOf" in schema:  # a nullable field (pydantic's Optional): the first form that is not null
        forms = [f for f in schema["anyOf"] if f.get("type") != "null"] or schema["anyOf"]
        return schema_instance(forms[0], seed, path, score)
    kind = schema.get("type")
    if kind == "object":
        return {k: schema_instance(sub, seed + i, f"{path}.{k}", score)
                for i, (k, sub) in enumerate(schema["properties"].items())}
    if kind == "array":
        n = max(schema.get("minItems", 1), min(schema.get("maxItems", 3), 4))
        return [schema_instance(schema["items"], seed + 7 * i + 1, f"{path}[{i}]", score) for i in range(n)]
    if kind == "string":
        word = WORDS[seed % len(WORDS)]
        # the field is named by a number: its name ("hypotheses", "criteria") is not rubric content
        text = f"Higher scores when the {word} of the text is good (field {zlib.crc32(path.encode()) % 1000} {seed})"
        return text[: schema.get("maxLength", len(text))].ljust(schema.get("minLength", 0), ".")
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return bool(seed % 2)
    raise ValueError(f"schema_instance: unsupported schema {schema!r}")


def schema_responder(free_text: str = "[[4]]", oracle=None):
    """Answers a schema request with a valid instance (varied by the prompt), anything else with ``free_text``.

    ``oracle(messages)`` may return the score a good judge would give the sample in the prompt (None when
    there is none): scores then agree with the humans, so methods that refuse a judge disagreeing with
    them (HPSS, HypoEval, Active-Critic) still produce one.
    """

    def respond(messages, params):
        schema = schema_of(params.json_schema)
        if schema is None:
            return free_text
        digest = hashlib.sha256(json.dumps(messages).encode()).digest()
        score = oracle(messages) if oracle else None
        return json.dumps(schema_instance(schema, digest[0] + params.sample_index, score=score))

    return respond


def tiny_oracle(messages) -> float | None:
    """The human score of the conftest ``tiny_dataset`` sample whose output ("output number N") the prompt shows."""
    import re

    numbers = re.findall(r"output number (\d+)", messages[-1]["content"])
    if len(numbers) != 1:
        return None
    return float(1 + (int(numbers[0]) * 7) % 5)


def fake_llm(reply: str | Callable[..., str] | None = None, *, store=None, fake_backend=None, model_id: str = "fake",
             logprobs: bool = False, **config):
    """``(llm, backend)``: the engine's LLM (its one call path; the store's cache when ``store`` is given).

    The backend is a :class:`FakeBackend` answering ``reply(messages, params)``,
    or ``reply`` itself when it is a string; ``fake_backend`` is a test's own
    scripted backend used instead. ``config`` sets :class:`LLMConfig` fields
    (``concurrency``, ``structured``, prices, ...).
    """
    if fake_backend is None:
        respond = reply if callable(reply) else (lambda messages, params: reply)
        fake_backend = FakeBackend(respond, model_id=model_id, logprobs=logprobs)
    return make_llm(LLMConfig(**config), store=store, backend=fake_backend), fake_backend


def scripted_llm(store=None, *, free_text: str = "[[4]]", logprobs: bool = False, oracle=tiny_oracle):
    """``(llm, backend)``: :func:`fake_llm` answering every schema; no cache without a store."""
    return fake_llm(schema_responder(free_text, oracle), store=store, logprobs=logprobs)

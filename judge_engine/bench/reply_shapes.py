"""What a backend's replies hold, per method: the characters of their text fields and how full their lists are.

A rendering (:mod:`judge_engine.runs.rendering`) answers each request in the shape its JSON schema asks for, and
the method's later prompts quote what those replies wrote (HPSS's judge prompts quote its generated criteria,
references and questions). :class:`ReplyTap` wraps a run's backend and keeps each structured reply beside its
schema; :func:`shapes` reads them: the mean characters of a text field and the mean fill of a list between its
``minItems`` and ``maxItems``, which :mod:`judge_engine.runs.reply_lengths` keeps per method for a first estimate.
"""

from __future__ import annotations

import json
import threading
from typing import Any


class ReplyTap:
    """Wraps a backend: every reply to a request with a JSON schema is kept with that schema."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name, self.model_id = inner.name, inner.model_id
        self.supports_logprobs = inner.supports_logprobs
        self.serialises_calls = getattr(inner, "serialises_calls", False)
        self.kept: list[tuple[dict[str, Any], str]] = []
        self._lock = threading.Lock()

    def generate(self, messages, params):
        out = self.inner.generate(messages, params)
        if params.json_schema:
            schema = json.loads(params.json_schema)
            with self._lock:
                self.kept.extend((schema, text) for text in out.texts)
        return out


def _walk(schema: dict[str, Any], value: Any, texts: list[int], fills: list[float], root: dict[str, Any]) -> None:
    if "$ref" in schema:
        schema = (root.get("$defs") or root.get("definitions") or {}).get(schema["$ref"].split("/")[-1], {})
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and isinstance(value, str):
        texts.append(len(value))
    elif kind == "array" and isinstance(value, list):
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        if high is not None and int(high) > low:
            fills.append(min(1.0, max(0.0, (len(value) - low) / (int(high) - low))))
        for item in value:
            _walk(schema.get("items") or {}, item, texts, fills, root)
    elif (kind == "object" or "properties" in schema) and isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                _walk(sub, value[key], texts, fills, root)


def shapes(kept: list[tuple[dict[str, Any], str]]) -> dict[str, Any]:
    """Mean characters of a text field (``text_chars``), mean fill of a list (``list_fill``) and how many of each
    were read, over the replies that parse as JSON."""
    texts: list[int] = []
    fills: list[float] = []
    for schema, text in kept:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        _walk(schema, value, texts, fills, schema)
    return {"text_chars": round(sum(texts) / len(texts), 1) if texts else None, "text_fields": len(texts),
            "list_fill": round(sum(fills) / len(fills), 3) if fills else None, "lists": len(fills)}

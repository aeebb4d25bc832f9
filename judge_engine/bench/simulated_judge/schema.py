"""Reply shapes: a value cut or padded to a JSON schema's limits as a constrained decoder would produce it
(:func:`conform`), a schema filled from the scores a judge gives (:func:`fill_schema`), and the digit
log-probabilities of a scored reply (:func:`_digit_logprobs`)."""

from __future__ import annotations

import math
from typing import Any


def conform(value: Any, schema: dict[str, Any] | None) -> Any:
    """``value`` cut or padded to the schema's limits (array lengths, string lengths), as a constrained
    decoder would have produced it; keys the schema does not list are dropped when it forbids them."""
    if not schema:
        return value
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties") or {}
        if props and schema.get("additionalProperties") is False:
            value = {k: v for k, v in value.items() if k in props}
        return {k: conform(v, props.get(k)) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        items = list(value)[:schema.get("maxItems", len(value))]
        low = schema.get("minItems", 0)
        while items and len(items) < low:
            extra = items[len(items) % len(items)]
            items.append(f"{extra} (also {len(items)})" if isinstance(extra, str) else extra)
        return [conform(v, schema.get("items")) for v in items]
    if kind == "string" and isinstance(value, str):
        value = value[:schema.get("maxLength", len(value))]
        return value + "." * max(0, schema.get("minLength", 0) - len(value))
    return value


def fill_schema(schema: dict[str, Any], scores: dict[str, int], overall: int, text: str) -> Any:
    """A value of ``schema`` (objects, arrays, strings, numbers) whose numbers are scores.

    A number under a property named like a known criterion gets that
    criterion's score, any other number ``overall``; strings get ``text``;
    arrays their minimum number of items (at least one). For schemas this
    module does not know the exact shape of (Active-Critic's explained scores).
    """
    def value(node: dict[str, Any], key: str) -> Any:
        kind = node.get("type")
        if "enum" in node:
            return node["enum"][0] if key not in scores and not isinstance(node["enum"][0], (int, float)) \
                else min(node["enum"], key=lambda x: abs(x - scores.get(key, overall)))
        if kind == "object":
            props = node.get("properties") or {}
            if not props and scores:
                return {k: {"explanation": text, "score": v} for k, v in scores.items()}
            return {k: value(v, k if k in scores else key) for k, v in props.items()}
        if kind == "array":
            return [value(node.get("items") or {}, key) for _ in range(max(1, node.get("minItems", 1)))]
        if kind in ("integer", "number"):
            return scores.get(key, overall)
        if kind == "string":
            return text[:node.get("maxLength", 400)]
        if kind == "boolean":
            return False
        return None
    return value(schema, "")


def _digit_logprobs(text: str, score: int, low: int, high: int) -> tuple[dict[str, Any], ...]:
    """Logprobs like a confident judge: 80% on the score's digit, 10% on each neighbour on the scale.

    Positions before the digit are the reply's leading characters (as chosen tokens); the digit's position
    carries the alternatives, as :func:`judge_engine.parsing.read_weighted` reads them.
    """
    top = {str(score): math.log(0.8)}
    for d in (score - 1, score + 1):
        if low <= d <= high:
            top[str(d)] = math.log(0.1)
    at = text.find(str(score))
    lead = [{"token": ch, "logprob": 0.0, "top": {ch: 0.0}} for ch in text[:max(at, 0)][:14] if not ch.isdigit()]
    return tuple(lead + [{"token": str(score), "logprob": math.log(0.8), "top": top}])

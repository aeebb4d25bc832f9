"""bench/reply_shapes.py: what a backend's structured replies hold, per method (runs/reply_lengths.py's source)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from judge_engine import structured
from judge_engine.bench.reply_shapes import ReplyTap, shapes
from judge_engine.methods.hd_eval.decomposition import decomposition_schema


def test_shapes_reads_text_lengths_and_list_fill_against_the_schema():
    reason = structured.score_schema(1, 5, explanation="before", explanation_max=600)
    children = decomposition_schema(5)  # 2 to 5
    kept = [(reason, json.dumps({"explanation": "x" * 40, "score": 3})),
            (reason, json.dumps({"explanation": "y" * 80, "score": 4})),
            (children, json.dumps({"children": [{"name": "a" * 10, "definition": "b" * 30}] * 3})),
            (reason, "not json")]  # unread: left out
    got = shapes(kept)
    assert got["text_fields"] == 2 + 3 * 2 and got["lists"] == 1
    assert got["text_chars"] == pytest.approx((40 + 80 + 3 * (10 + 30)) / 8, abs=0.1)
    assert got["list_fill"] == pytest.approx((3 - 2) / (5 - 2), abs=1e-3)
    assert shapes([]) == {"text_chars": None, "text_fields": 0, "list_fill": None, "lists": 0}


def test_the_tap_keeps_structured_replies_and_passes_every_reply_through():
    class Inner:
        name, model_id, supports_logprobs = "openai", "m", False

        def generate(self, messages, params):
            return SimpleNamespace(texts=('{"score": 2}',))

    tap = ReplyTap(Inner())
    schema = structured.score_schema(1, 5)
    assert tap.generate([], SimpleNamespace(json_schema=json.dumps(schema))).texts == ('{"score": 2}',)
    assert tap.generate([], SimpleNamespace(json_schema=None)).texts == ('{"score": 2}',)
    assert tap.kept == [(schema, '{"score": 2}')]

"""Token rates: the embedded model's generated tokens a second, free and under a JSON-schema grammar.

Run estimates on the embedded model time a request by its tokens (:mod:`judge_engine.runs.estimates`). The
generation rate they used came from llama.cpp's own counters (``bench cpu-build``), which time the model's
forward passes and leave out sampling, where the grammar of a structured reply is applied to the candidate
tokens. This times whole requests through :class:`judge_engine.llm.llamacpp.LlamaCppBackend`, as a run sends
them: each prompt is read once beforehand (``max_tokens=1``) so that the timed request, which keeps that
prompt's states, is almost all generation. Arms, interleaved:

``free``   no schema (what a server without structured replies would get)
``text``   a reply holding a free-text explanation and a score (HPSS's and Active-Critic's shape)
``score``  a reply holding only a score (direct scoring's, HD-Eval's)

Reported per arm: the median of generated tokens over wall seconds, and the median reply length.
"""

from __future__ import annotations

import json
import time
from typing import Any

from . import med, result
from .busy_machine import ARTICLE, SUMMARY

TEXT_SCHEMA = {"title": "bench_text", "type": "object",
               "properties": {"explanation": {"type": "string", "minLength": 1, "maxLength": 1200},
                              "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
               "required": ["explanation", "score"], "additionalProperties": False}
SCORE_SCHEMA = {"title": "bench_score", "type": "object",
                "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
                "required": ["score"], "additionalProperties": False}
ARMS = {"free": "", "text": json.dumps(TEXT_SCHEMA), "score": json.dumps(SCORE_SCHEMA)}


def add_arguments(parser) -> None:
    parser.add_argument("--repeats", type=int, default=5, help="timed requests per arm")
    parser.add_argument("--max-tokens", type=int, default=300)
    parser.add_argument("--article-repeats", type=int, default=4, help="copies of the article (prompt length)")


def run(*, repeats: int = 5, max_tokens: int = 300, article_repeats: int = 4, **_: Any) -> dict[str, Any]:
    if repeats < 1 or max_tokens < 8 or article_repeats < 1:
        raise ValueError("--repeats and --article-repeats must be at least 1, --max-tokens at least 8")
    from ..llm.base import GenerationParams
    from ..llm.llamacpp import LlamaCppBackend
    from ..structured import read_json

    backend = LlamaCppBackend()
    samples: dict[str, list[tuple[int, float]]] = {arm: [] for arm in ARMS}
    # replies read as their schema asks (the grammar held and max_tokens did not cut them); free text has none
    parsed: dict[str, int | None] = {arm: 0 if ARMS[arm] else None for arm in ARMS}
    prompt_tokens = 0
    for r in range(repeats):
        for arm in (list(ARMS) if r % 2 == 0 else list(ARMS)[::-1]):
            # a new prompt per request (the repeat's number in it), read once untimed: the timed request
            # evaluates only the chat template's last tokens, then generates
            messages = [{"role": "user", "content": f"Summary {r + 1} of {repeats}.\nArticle:\n"
                         f"{ARTICLE * article_repeats}\n\nSummary:\n{SUMMARY}\n\nExplain in detail how well the "
                         "summary's sentences fit together, then score its coherence from 1 to 5."}]
            schema = ARMS[arm]
            backend.generate(messages, GenerationParams(max_tokens=1, json_schema=schema))
            # sampled, not greedy: a greedy small model under a grammar can stop at once or loop
            params = GenerationParams(temperature=0.7, seed=r, max_tokens=max_tokens, json_schema=schema)
            start = time.perf_counter()
            reply = backend.generate(messages, params)
            seconds = time.perf_counter() - start
            prompt_tokens = reply.prompt_tokens
            samples[arm].append((reply.completion_tokens, seconds))
            if schema:
                parsed[arm] += read_json(reply.texts[0], json.loads(schema)).value is not None
    rows = [{"arm": arm, "generated_tokens_per_s": round(med([t / s for t, s in got if s > 0 and t > 0]), 1),
             "median_reply_tokens": med([t for t, _ in got]), "requests": len(got), "schema_valid": parsed[arm]}
            for arm, got in samples.items()]
    summary = {f"{row['arm']}_tokens_per_s": row["generated_tokens_per_s"] for row in rows}
    config = {"repeats": repeats, "max_tokens": max_tokens, "prompt_tokens": prompt_tokens}
    return result("token-rates", config=config, rows=rows, summary=summary,
                  notes=["wall seconds of whole requests whose prompt was read just before (its states kept): "
                         "generation and sampling, the grammar included",
                         "temperature 0.7, one seed per repeat; arms alternate"])


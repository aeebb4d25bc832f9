"""Structured: grammar-constrained vs free-text calls on the embedded model, same prompts.

The same ``n`` direct-scoring prompts of a built-in benchmark (the engine's
own template, SummEval by default) are answered by the embedded llama.cpp
model through :meth:`judge_engine.llm.LLM.complete_many` with the cache off,
in two arms: ``free`` (no schema: today's free-text reply) and ``grammar``
(the aspect's score schema, ``{"score": N}`` with N an enum of the scale,
decoded under the GBNF grammar llama-cpp-python builds from it). Same
``max_tokens``, greedy, top-5 logprobs in both arms (as probability-weighted
scoring asks). The arms are interleaved (A B, B A, ...) and the ratio is the
median over repeats of grammar seconds / free seconds (target <= 1.2).

A ratio of seconds per call mixes two effects: the grammar's own cost per
token (a mask over the vocabulary at every step) and a different number of
generated tokens (a free-text reply may be one digit, or run on to the token
limit; the JSON reply is about ten tokens). Both are reported: seconds per
call and completion tokens per call (on long prompts the prompt's evaluation
dominates either way; a short-prompt dataset such as ``topical_chat`` shows
more of the decoding cost). Also reported: the share of replies
that read as JSON of the schema (:func:`judge_engine.structured.read_json`)
and the share from which a score can be read at all (JSON, else the
free-text parser), per arm; and the one-off cost of converting the schema to
a grammar (cached per schema afterwards).
"""

from __future__ import annotations

import time
from typing import Any

from . import interleaved, judge_messages, med, median_ratio, result


def add_arguments(parser) -> None:
    parser.add_argument("-n", type=int, default=16, help="prompts per arm")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset", default="summeval")
    parser.add_argument("--max-tokens", type=int, default=32)


def run(*, n: int = 16, repeats: int = 3, dataset: str = "summeval", max_tokens: int = 32,
        **_: Any) -> dict[str, Any]:
    import math

    from .. import structured
    from ..data import load_benchmark
    from ..llm import GenerationParams, LLMConfig, Request
    from ..llm.client import LLM
    from ..llm.llamacpp import LlamaCppBackend, grammar_for
    from ..parsing import parse_score

    if n < 1 or repeats < 1 or max_tokens < 1:
        raise ValueError("-n, --repeats and --max-tokens must be at least 1")
    aspect = load_benchmark(dataset).aspects[0]
    messages = judge_messages(dataset, n)
    schema = structured.score_schema(aspect.low, aspect.high,
                                     integer=float(aspect.low).is_integer() and float(aspect.high).is_integer())
    param = structured.as_param(schema)
    start = time.perf_counter()
    grammar_for(param)
    build_s = time.perf_counter() - start

    backend = LlamaCppBackend()
    llm = LLM(LLMConfig(concurrency=1), backend, cache=None)
    base = GenerationParams(max_tokens=max_tokens, top_logprobs=5)
    params = {"free": base, "grammar": base.with_(json_schema=param)}
    last: dict[str, list[Any]] = {}

    def arm(name: str):
        requests = [Request(tuple(m), params[name]) for m in messages]

        def go(_: int) -> None:
            last[name] = llm.complete_many(requests)
        return go

    llm.complete(messages[0], base)  # warm-up: first-call allocations belong to neither arm
    seconds = interleaved({"free": arm("free"), "grammar": arm("grammar")}, repeats)

    def scored(text: str) -> bool:
        reading = structured.read_json(text, schema)
        if reading.ok:
            return True
        return not math.isnan(parse_score(text, aspect.low, aspect.high))

    rows = []
    for name, s in seconds.items():
        outs = last[name]
        rows.append({"arm": name, "median_s": med(s), "s_per_call": med(s) / n,
                     "completion_tokens_per_call": sum(o.completion_tokens for o in outs) / n,
                     "json_share": sum(structured.read_json(o.text, schema).ok for o in outs) / n,
                     "score_read_share": sum(scored(o.text) for o in outs) / n,
                     "modes": sorted({o.structured_mode or "none" for o in outs}),
                     "seconds_per_repeat": s, "example_reply": outs[0].text[:60]})
    ratio = median_ratio(seconds["grammar"], seconds["free"])
    summary = {"grammar_vs_free_seconds_per_call": ratio, "target": "grammar <= 1.2 x free", "met": ratio <= 1.2,
               "grammar_build_s_once_per_schema": build_s}
    return result("structured", config={"n": n, "repeats": repeats, "dataset": dataset, "aspect": aspect.name,
                                        "max_tokens": max_tokens, "model": backend.model_id,
                                        "schema": schema},
                  rows=rows, summary=summary,
                  notes=[("arms interleaved (A B, B A, ...); ratio = grammar seconds / free seconds per repeat, "
                          "median; cache off, concurrency 1, greedy, top-5 logprobs in both arms"),
                         ("a call's seconds are mostly the prompt's evaluation (hundreds of tokens) on the CPU; "
                          "the grammar's share grows with the reply's length"),
                         "shared machine: other agents use the CPU, see load_avg"])

"""Concurrency (issue #9, benchmark 4): the openai backend against a real llama.cpp server.

A ``python -m llama_cpp.server`` serving the embedded SmolLM2 is started on
127.0.0.1 (the ``tests/llama_server.py`` helper). The same ``n`` judge
prompts are sent by a plain sequential ``openai`` client loop and by the
engine (``openai`` backend, cache off) at concurrency 1 / 4 / 16, arms
interleaved. Reported: throughput relative to the plain loop (median over
repeats), p50/p95 latency per request, and the no-loss facts: every request
answered exactly once at the backend (counted calls == n) and every reply
identical to the sequential loop's reply for the same prompt (greedy
decoding), so none was lost, duplicated or swapped.

llama-cpp-python's server (0.3.x) has no parallel-slot option: it answers
one request at a time behind a lock, so higher concurrency can only overlap
HTTP and client work with generation; the numbers say how much.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from . import ROOT, interleaved, judge_messages, med, median_ratio, percentile, result


def add_arguments(parser) -> None:
    parser.add_argument("-n", type=int, default=32, help="requests per arm")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset", default="topical_chat")
    parser.add_argument("--max-tokens", type=int, default=16)


def _server():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.llama_server import LlamaServer, server_available
    why = server_available()
    if why:
        raise RuntimeError(why)
    return LlamaServer()


class _Counting:
    """Wraps a backend and counts the requests it really sends."""

    def __init__(self, backend: Any):
        import threading
        self.inner, self.calls, self._lock = backend, 0, threading.Lock()
        self.name, self.model_id, self.supports_logprobs = backend.name, backend.model_id, backend.supports_logprobs

    def generate(self, messages, params):
        with self._lock:
            self.calls += 1
        return self.inner.generate(messages, params)


def run(*, n: int = 32, levels: list[int] | tuple[int, ...] = (1, 4, 16), repeats: int = 3,
        dataset: str = "topical_chat", max_tokens: int = 16, **_: Any) -> dict[str, Any]:
    import openai

    from ..llm import GenerationParams, LLMConfig, Request
    from ..llm.client import LLM
    from ..llm.openai_backend import OpenAIBackend

    messages = judge_messages(dataset, n)
    params = GenerationParams(max_tokens=max_tokens)
    requests = [Request(tuple(m), params) for m in messages]
    server = _server()
    with server:
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=600)
        latencies: dict[str, list[float]] = {}
        texts: dict[str, list[list[str]]] = {}
        counted: dict[str, list[int]] = {}

        def plain(_: int) -> None:
            out, lat = [], []
            for m in messages:
                start = time.perf_counter()
                reply = client.chat.completions.create(model=server.alias, messages=m, temperature=0.0,
                                                       max_tokens=max_tokens, seed=0)
                lat.append(time.perf_counter() - start)
                out.append(reply.choices[0].message.content or "")
            latencies.setdefault("plain_loop", []).extend(lat)
            texts.setdefault("plain_loop", []).append(out)
            counted.setdefault("plain_loop", []).append(len(out))

        def engine(c: int):
            name = f"engine_c{c}"

            def arm(_: int) -> None:
                backend = _Counting(OpenAIBackend(server.alias, server.base_url, api_key="local", timeout=600))
                llm = LLM(LLMConfig(backend="openai", model=server.alias, base_url=server.base_url, concurrency=c),
                          backend, cache=None)
                out = llm.complete_many(requests)
                latencies.setdefault(name, []).extend(r.latency_s for r in out)
                texts.setdefault(name, []).append([r.text for r in out])
                counted.setdefault(name, []).append(backend.calls)
            return arm

        plain(-1)  # warm-up; its reply list is the reference
        reference = texts.pop("plain_loop")[0]
        latencies.pop("plain_loop")
        counted.pop("plain_loop")
        arms = {"plain_loop": plain, **{f"engine_c{c}": engine(c) for c in levels}}
        seconds = interleaved(arms, repeats)
    rows = []
    for name, s in seconds.items():
        rows.append({"arm": name, "median_s": med(s), "requests_per_s": n / med(s) if med(s) else None,
                     "throughput_vs_plain": median_ratio(seconds["plain_loop"], s),
                     "p50_latency_s": percentile(latencies[name], 50), "p95_latency_s": percentile(latencies[name], 95),
                     "answers_per_repeat": min(len(t) for t in texts[name]),
                     "backend_calls_per_repeat": sorted(set(counted[name])),
                     "same_replies_as_sequential": all(t == reference for t in texts[name])})
    ok = all(r["answers_per_repeat"] == n and r["backend_calls_per_repeat"] == [n] and r["same_replies_as_sequential"]
             for r in rows)
    summary = {"no_request_lost_or_duplicated": ok,
               **{f"engine_c{c}_vs_plain": median_ratio(seconds["plain_loop"], seconds[f"engine_c{c}"])
                  for c in levels},
               "server_parallel_slots": "none: llama_cpp.server 0.3.x serialises requests (no parallel option)"}
    return result("concurrency", config={"n": n, "levels": list(levels), "repeats": repeats, "dataset": dataset,
                                         "max_tokens": max_tokens},
                  rows=rows, summary=summary,
                  notes=["latency of an engine request is the backend's own (time from send to reply, "
                         "including waiting in the server's queue)"])

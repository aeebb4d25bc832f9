"""Concurrency (benchmark 4): the openai backend against a real llama.cpp server.

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

``--server native`` uses llama.cpp's own C++ ``llama-server`` instead (the
binary is not part of any wheel: build its ``llama-server`` target from the
llama.cpp sources, e.g. the ``vendor/llama.cpp`` folder of the
llama-cpp-python sdist, and pass ``--server-binary``). It is restarted for
each level with ``--parallel`` set to that level, and the plain loop runs
against the same server, interleaved with the engine. Decoding several
slots in one batch changes the arithmetic slightly (see the embedded
backend's note on one-token batches), which can change a greedy reply, so
replies that differ from the plain loop's are counted, not taken as swaps;
the calls counted at the backend say whether a request was lost or
duplicated.
"""

from __future__ import annotations

import os
import shutil
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
    parser.add_argument("--server", choices=("llama_cpp", "native"), default="llama_cpp",
                        help="python -m llama_cpp.server (no parallel slots) or llama.cpp's llama-server")
    parser.add_argument("--server-binary", default=os.environ.get("LLAMA_SERVER_BIN", "llama-server"),
                        help="path of llama.cpp's llama-server (with --server native)")


def _server(kind: str = "llama_cpp", *, binary: str = "llama-server", parallel: int = 1):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.llama_server import LlamaServer, server_available
    if kind == "native":
        path = shutil.which(binary)
        if not path:
            raise RuntimeError(f"llama-server not found at {binary!r}: build llama.cpp's llama-server target "
                               "and pass --server-binary PATH")

        class NativeServer(LlamaServer):
            def command(self) -> list[str]:
                threads = str(max(1, min(4, os.cpu_count() or 1)))
                return [path, "--model", str(self.model_path), "--alias", self.alias, "--host", self.host,
                        "--port", str(self.port), "--ctx-size", str(self.n_ctx * parallel),
                        "--parallel", str(parallel), "--threads", threads, "--threads-batch", threads,
                        "--no-webui", *self.extra_args]
        return NativeServer()
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


def _arms(server, messages, requests, params, levels, *, plain_name: str, latencies, texts, counted):
    """The plain sequential loop and one engine arm per level, all against ``server``."""
    import openai

    from ..llm import LLMConfig
    from ..llm.client import LLM
    from ..llm.openai_backend import OpenAIBackend

    client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=600)

    def plain(_: int) -> None:
        out, lat = [], []
        for m in messages:
            start = time.perf_counter()
            reply = client.chat.completions.create(model=server.alias, messages=m, temperature=0.0,
                                                   max_tokens=params.max_tokens, seed=0)
            lat.append(time.perf_counter() - start)
            out.append(reply.choices[0].message.content or "")
        latencies.setdefault(plain_name, []).extend(lat)
        texts.setdefault(plain_name, []).append(out)
        counted.setdefault(plain_name, []).append(len(out))

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

    return {plain_name: plain, **{f"engine_c{c}": engine(c) for c in levels}}


def run(*, n: int = 32, levels: list[int] | tuple[int, ...] = (1, 4, 16), repeats: int = 3,
        dataset: str = "topical_chat", max_tokens: int = 16, server: str = "llama_cpp",
        server_binary: str = "llama-server", **_: Any) -> dict[str, Any]:
    from ..llm import GenerationParams, Request

    messages = judge_messages(dataset, n)
    params = GenerationParams(max_tokens=max_tokens)
    requests = [Request(tuple(m), params) for m in messages]
    latencies: dict[str, list[float]] = {}
    texts: dict[str, list[list[str]]] = {}
    counted: dict[str, list[int]] = {}
    # (plain arm, engine arm) pairs whose throughput ratio is reported, and each plain arm's reference replies
    pairs: list[tuple[str, str]] = []
    reference: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = {}
    groups = [(tuple(levels), "plain_loop", 1)] if server == "llama_cpp" else \
        [((c,), f"plain_loop_p{c}", c) for c in levels]
    for group_levels, plain_name, parallel in groups:
        with _server(server, binary=server_binary, parallel=parallel) as srv:
            arms = _arms(srv, messages, requests, params, group_levels, plain_name=plain_name,
                         latencies=latencies, texts=texts, counted=counted)
            arms[plain_name](-1)  # warm-up; its reply list is the reference
            reference[plain_name] = texts.pop(plain_name)[0]
            latencies.pop(plain_name)
            counted.pop(plain_name)
            seconds.update(interleaved(arms, repeats))
        pairs += [(plain_name, f"engine_c{c}") for c in group_levels]
    plain_of = {engine: plain for plain, engine in pairs} | {plain: plain for plain, _ in pairs}
    rows = []
    for name, s in seconds.items():
        plain = plain_of[name]
        rows.append({"arm": name, "server_parallel_slots": None if server == "llama_cpp" else
                     int(plain.rsplit("_p", 1)[1]),
                     "median_s": med(s), "requests_per_s": n / med(s) if med(s) else None,
                     "throughput_vs_plain": median_ratio(seconds[plain], s),
                     "p50_latency_s": percentile(latencies[name], 50), "p95_latency_s": percentile(latencies[name], 95),
                     "answers_per_repeat": min(len(t) for t in texts[name]),
                     "backend_calls_per_repeat": sorted(set(counted[name])),
                     "same_replies_as_sequential": all(t == reference[plain] for t in texts[name]),
                     "replies_differing_from_sequential": max(sum(a != b for a, b in zip(t, reference[plain]))
                                                              for t in texts[name])})
    complete = all(r["answers_per_repeat"] == n and r["backend_calls_per_repeat"] == [n] for r in rows)
    same = all(r["same_replies_as_sequential"] for r in rows)
    summary = {"no_request_lost_or_duplicated": complete and (same or server == "native"),
               "all_replies_same_as_sequential": same,
               **{f"engine_c{c}_vs_plain": median_ratio(seconds[plain_of[f"engine_c{c}"]], seconds[f"engine_c{c}"])
                  for c in levels},
               "server_parallel_slots": "none: llama_cpp.server 0.3.x serialises requests (no parallel option)"
               if server == "llama_cpp" else "llama-server --parallel set to each level"}
    return result("concurrency", config={"n": n, "levels": list(levels), "repeats": repeats, "dataset": dataset,
                                         "max_tokens": max_tokens, "server": server},
                  rows=rows, summary=summary,
                  notes=["latency of an engine request is the backend's own (time from send to reply, "
                         "including waiting in the server's queue)"])

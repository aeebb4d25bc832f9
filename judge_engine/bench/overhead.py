"""Overhead (benchmark 1): the engine's call path vs raw llama-cpp-python.

The same ``n`` judge prompts (direct-scoring prompts of a built-in benchmark)
are answered three ways on the same loaded ``Llama`` object in this process:
``raw`` calls ``create_chat_completion`` in a loop on one worker thread;
``raw_main`` (with ``--main-thread``) does the same on the main thread; ``engine`` sends them
through :meth:`judge_engine.llm.LLM.complete_many` with the cache off
(``LLM(config, backend, cache=None)``) at concurrency 1; ``engine_c4`` does
the same at the default concurrency (4 threads sharing one llama.cpp
context, which serialises them). The arms are interleaved; the ratio is
engine throughput / raw throughput per repeat, median over repeats
(target >= 0.95).

Why the raw loop runs on a worker thread: on this machine llama.cpp calls
made from the process's main thread were about 9x slower than the same calls
from a worker thread (measured 17.0 s vs 1.9 s for the same two prompts,
alternated three times). The engine always calls the backend from its pool
threads in ``complete_many``, so a raw loop on the main thread would flatter
the engine; ``--main-thread`` measures that arm too.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import interleaved, judge_messages, med, median_ratio, result


def add_arguments(parser) -> None:
    parser.add_argument("-n", type=int, default=16, help="prompts per arm")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dataset", default="topical_chat")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--main-thread", action="store_true", help="also time the raw loop on the main thread")


def run(*, n: int = 16, repeats: int = 5, dataset: str = "topical_chat", max_tokens: int = 16,
        main_thread: bool = False, **_: Any) -> dict[str, Any]:
    from ..llm import GenerationParams, LLMConfig, Request
    from ..llm.client import LLM
    from ..llm.llamacpp import LlamaCppBackend

    messages = judge_messages(dataset, n)
    backend = LlamaCppBackend()
    llama, lock = backend._llama, backend._lock  # the very object the engine calls
    params = GenerationParams(max_tokens=max_tokens)
    requests = [Request(tuple(m), params) for m in messages]
    engines = {"engine": LLM(LLMConfig(concurrency=1), backend, cache=None),
               "engine_c4": LLM(LLMConfig(concurrency=4), backend, cache=None)}
    texts: dict[str, list[str]] = {}

    def raw_loop(name: str) -> None:
        out = []
        for m in messages:
            with lock:
                reply = llama.create_chat_completion(messages=m, temperature=0.0, max_tokens=max_tokens, stop=None,
                                                     seed=0)
            out.append(reply["choices"][0]["message"]["content"] or "")
        texts[name] = out

    def raw(_: int) -> None:  # on one worker thread, as the engine's calls are
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(raw_loop, "raw").result()

    def engine(name: str):
        def arm(_: int) -> None:
            texts[name] = [c.text for c in engines[name].complete_many(requests)]
        return arm

    raw(0)  # warm-up: first-call allocations are nobody's overhead
    arms = {"raw": raw, "engine": engine("engine"), "engine_c4": engine("engine_c4")}
    if main_thread:
        arms["raw_main"] = lambda _: raw_loop("raw_main")
    seconds = interleaved(arms, repeats)
    rows = [{"arm": name, "median_s": med(s), "calls_per_s": n / med(s) if med(s) else None,
             "throughput_vs_raw": median_ratio(seconds["raw"], s), "seconds_per_repeat": s,
             "same_replies_as_raw": texts[name] == texts["raw"]}
            for name, s in seconds.items()]
    ratio = median_ratio(seconds["raw"], seconds["engine"])
    summary = {"engine_vs_raw_throughput": ratio, "raw_main_vs_raw_throughput":
               median_ratio(seconds["raw"], seconds["raw_main"]) if main_thread else None,
               "engine_c4_vs_raw_throughput": median_ratio(seconds["raw"], seconds["engine_c4"]),
               "target": "engine >= 0.95 x raw", "met": ratio >= 0.95}
    return result("overhead", config={"n": n, "repeats": repeats, "dataset": dataset, "max_tokens": max_tokens,
                                      "model": backend.model_id},
                  rows=rows, summary=summary,
                  notes=["arms interleaved (A B C, C B A, ...); ratio = raw seconds / arm seconds per repeat, median",
                         "engine work on top of raw: cache key hashing, fitting the prompt to the context "
                         "(one tokenisation per call), Completion records, ledger"])

"""Prefix reuse (issue #36, item 2): prompt tokens the embedded model evaluates, against the shared-prefix minimum.

The requests are a store's finished LLM calls (``--db``, default the app's
database): every ``llamacpp`` request of its ``llm_cache`` table for the
embedded model (or ``--model``), in the order they were made (``created``;
``--limit`` takes the first N). Each is sent again to the embedded backend in
this process, the call cache off
(:meth:`judge_engine.llm.llamacpp.LlamaCppBackend.generate`, the same call a
run makes), in three arms:

``one_slot``
    ``model.prefix_states = None``: llama-cpp-python reuses the previous
    prompt's KV cache only, less the last :data:`MIN_SUFFIX_TOKENS` (today's
    path before :class:`PrefixStates`).
``prefix_states``
    a fresh :class:`PrefixStates` of ``--budget-mb`` (default: the
    per-process budget, ``JUDGE_WORKBENCH_PREFIX_CACHE_MB`` or 512 MB).
``cold``
    the context reset before every model call: nothing reused, the
    reference every reply is compared with.

Per arm: prompt tokens evaluated (the model's ``evaluated_tokens``, before
and after), wall seconds, the model's busy seconds (the calls' ``latency_s``,
without the wait for the machine-wide lock while another process's model
holds it), and whether every reply (texts and logprobs) is bit-identical to
the cold arm's. The shared-prefix minimum (:func:`shared_prefix_minimum`) is
what a cache holding every earlier prompt would still evaluate: each
prompt's tokens after its longest common prefix with any earlier prompt, and
never fewer than :data:`MIN_SUFFIX_TOKENS`. The goal: prefix states <= 1.2 x
the minimum, with the same replies. The prompts are the token lists the
model was given (recorded in each arm; the cold arm's are the reference),
one per model call (a request asking for ``n`` completions makes ``n``
calls).

Arms interleave over ``--repeats`` (one_slot, prefix_states, cold, then the
reverse, ...); the speedup is the median over repeats of one_slot seconds /
prefix_states seconds. A warm-up call comes first, outside the arms.
"""

from __future__ import annotations

import bisect
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Sequence

from . import interleaved, med, median_ratio, result

ARMS = ("one_slot", "prefix_states", "cold")
GOAL = 1.2
"""Prompt tokens evaluated with prefix states, at most this many times the shared-prefix minimum (issue #36)."""
PROGRESS_EVERY = 20
"""Calls between two progress lines on stderr."""


@dataclass(frozen=True)
class StoredRequest:
    """One request of a store's call cache, rebuilt as it was sent."""

    messages: tuple[dict[str, str], ...]
    """The chat messages (role, content)."""
    params: Any
    """Its :class:`judge_engine.llm.GenerationParams`."""
    structured: str
    """How its schema was honoured (``grammar``, ``off``, ...); "" for a free-text request."""
    texts: tuple[str, ...]
    """The replies stored with it."""


def params_from_fields(stored: dict[str, Any]):
    """The :class:`GenerationParams` whose :meth:`~GenerationParams.cache_fields` are ``stored`` (its inverse)."""
    from ..llm import GenerationParams

    known = {f.name for f in fields(GenerationParams)}
    values = {k: v for k, v in stored.items() if k in known}
    if "stop" in values:
        values["stop"] = tuple(values["stop"])
    return GenerationParams(**values)


def stored_requests(store, *, model_id: str, limit: int = 0) -> tuple[list[StoredRequest], int]:
    """The ``llamacpp`` requests of ``store``'s call cache for ``model_id`` in the order they were made, and how
    many ``llamacpp`` requests of other models were left out; ``limit`` > 0 keeps the first ``limit``."""
    import json

    requests: list[StoredRequest] = []
    other = 0
    from ..store import CallCache

    for row in CallCache(store).entries("llamacpp"):
        if row["model"] != model_id:
            other += 1
            continue
        if limit and len(requests) >= limit:
            continue
        request, response = json.loads(row["request"]), json.loads(row["response"])
        requests.append(StoredRequest(
            messages=tuple({"role": m["role"], "content": m["content"]} for m in request["messages"]),
            params=params_from_fields(request["params"]), structured=str(request.get("structured", "")),
            texts=tuple(response.get("texts", ()))))
    return requests, other


def shared_prefix_minimum(prompts: Sequence[Sequence[int]], *, min_suffix: int | None = None) -> int:
    """Prompt tokens evaluated if every earlier prompt's prefix could be reused.

    The sum over prompts, in order, of ``max(min_suffix, len(p) - L)``, where ``L`` is the longest common
    prefix of ``p`` with any earlier prompt (a prompt shorter than ``min_suffix`` counts its length).
    ``min_suffix`` defaults to :data:`judge_engine.llm.llamacpp.MIN_SUFFIX_TOKENS`. The longest common prefix
    with a set of sequences is the one with a lexicographic neighbour of ``p`` among them, so the earlier
    prompts are kept sorted.

    Examples
    --------
    >>> shared_prefix_minimum([(1, 2, 3, 4, 5), (1, 2, 3, 4, 6), (9, 9, 9), (1, 2, 3, 4, 5)], min_suffix=2)
    12
    """
    from ..llm.llamacpp import MIN_SUFFIX_TOKENS, common_prefix_length

    if min_suffix is None:
        min_suffix = MIN_SUFFIX_TOKENS
    seen: list[tuple[int, ...]] = []
    total = 0
    for prompt in prompts:
        p = tuple(prompt)
        i = bisect.bisect_left(seen, p)
        shared = max([common_prefix_length(p, seen[j]) for j in (i - 1, i) if 0 <= j < len(seen)], default=0)
        total += len(p) - min(shared, max(len(p) - min_suffix, 0))
        if i == len(seen) or seen[i] != p:
            seen.insert(i, p)
    return total


def first_difference(expected: tuple, got: tuple) -> dict[str, Any] | None:
    """Where two replies ``(texts, logprobs)`` first differ (None when bit-identical)."""
    (texts_e, lp_e), (texts_g, lp_g) = expected, got
    if texts_e != texts_g:
        for j, (a, b) in enumerate(zip(texts_e, texts_g)):
            if a != b:
                return {"what": "texts", "completion": j, "expected": a[:120], "got": b[:120]}
        return {"what": "texts", "expected": f"{len(texts_e)} completions", "got": f"{len(texts_g)} completions"}
    if lp_e != lp_g:
        for j, (a, b) in enumerate(zip(lp_e, lp_g)):
            for k, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    return {"what": "logprobs", "completion": j, "position": k, "expected": str(x)[:300],
                            "got": str(y)[:300]}
            if len(a) != len(b):
                return {"what": "logprobs", "completion": j, "expected": f"{len(a)} positions",
                        "got": f"{len(b)} positions"}
        return {"what": "logprobs", "expected": f"{len(lp_e)} completions", "got": f"{len(lp_g)} completions"}
    return None


def add_arguments(parser) -> None:
    parser.add_argument("--db", default=None, help="a workbench database whose runs called the embedded model "
                        "(default: the app's, $JUDGE_WORKBENCH_DB or data/workbench.db)")
    parser.add_argument("--limit", type=int, default=0, help="the first N requests only (default: all)")
    parser.add_argument("--repeats", type=int, default=1, help="arms interleaved this many times")
    parser.add_argument("--budget-mb", type=float, default=None,
                        help="prefix states' budget (default: $JUDGE_WORKBENCH_PREFIX_CACHE_MB, else 512)")
    parser.add_argument("--model", default="", help="GGUF file the requests were made with (default: embedded)")
    parser.add_argument("--n-ctx", type=int, default=4096)


def _progress(arm: str, repeat: int, done: int, total: int) -> None:
    if os.environ.get("JUDGE_BENCH_QUIET") != "1" and (done % PROGRESS_EVERY == 0 or done == total):
        print(f"prefix-reuse: {arm} (repeat {repeat + 1}) {done}/{total} calls", file=sys.stderr, flush=True)


def run(*, db: str | None = None, limit: int = 0, repeats: int = 1, budget_mb: float | None = None, model: str = "",
        n_ctx: int = 4096, **_: Any) -> dict[str, Any]:
    from ..llm.llamacpp import (DEFAULT_PREFIX_CACHE_MB, MIN_SUFFIX_TOKENS, LlamaCppBackend, PrefixStates,
                                embedded_model_path, prefix_cache_bytes)
    from ..store import Store, default_db_path

    db = str(db or default_db_path())
    if repeats < 1 or limit < 0:
        raise ValueError(f"--repeats must be at least 1 and --limit at least 0 (got {repeats}, {limit})")
    if budget_mb is not None and budget_mb <= 0:
        raise ValueError(f"--budget-mb must be positive (got {budget_mb})")
    if not Path(db).is_file():
        raise ValueError(f"--db {db}: no such database file")
    model_id = Path(model).name if model else embedded_model_path().name
    store = Store(db)
    try:
        requests, other_models = stored_requests(store, model_id=model_id, limit=limit)
    finally:
        store.close()
    if not requests:
        raise ValueError(f"--db {db} holds no cached llamacpp request of {model_id}"
                         + (f" ({other_models} of other models)" if other_models else ""))
    budget = int(budget_mb * 2**20) if budget_mb is not None else (prefix_cache_bytes()
                                                                    or DEFAULT_PREFIX_CACHE_MB * 2**20)

    grammar = LlamaCppBackend(model, n_ctx=n_ctx)
    backends = {"grammar": grammar}
    if any(r.structured == "off" for r in requests):
        backends["off"] = LlamaCppBackend(model, n_ctx=n_ctx, structured="off")  # the same loaded model
    llama, lock, worker = grammar._llama, grammar._lock, grammar._worker

    def on_worker(fn) -> Any:
        with lock:
            return worker.submit(fn).result()

    replies: dict[str, list[list[tuple]]] = {a: [] for a in ARMS}
    prompts: dict[str, list[list[tuple[int, ...]]]] = {a: [] for a in ARMS}
    evaluated: dict[str, list[int]] = {a: [] for a in ARMS}
    busy: dict[str, list[float]] = {a: [] for a in ARMS}
    restored: list[int] = []
    kept: list[tuple[int, int]] = []
    original = llama.prefix_states

    def make_arm(name: str):
        def arm(repeat: int) -> None:
            seen: list[tuple[int, ...]] = []
            cold = name == "cold"

            def spy(tokens, *args: Any, **kwargs: Any):
                if cold:
                    llama.reset()
                seen.append(tuple(tokens))
                return type(llama).generate(llama, tokens, *args, **kwargs)

            states = PrefixStates(budget) if name == "prefix_states" else None

            def setup() -> None:
                llama.prefix_states, llama._pending = states, ()
                llama.reset()
                llama.generate = spy

            on_worker(setup)
            before = llama.evaluated_tokens
            out, model_s = [], 0.0
            for i, req in enumerate(requests):
                backend = backends["off" if req.structured == "off" else "grammar"]
                completion = backend.generate(list(req.messages), req.params)
                out.append((completion.texts, completion.logprobs))
                model_s += completion.latency_s
                _progress(name, repeat, i + 1, len(requests))
            evaluated[name].append(llama.evaluated_tokens - before)
            busy[name].append(model_s)
            on_worker(lambda: llama.__dict__.pop("generate", None))
            replies[name].append(out)
            prompts[name].append(seen)
            if states is not None:
                restored.append(states.restored_tokens)
                kept.append((len(states), states.bytes))
        return arm

    try:
        first = requests[0]
        on_worker(lambda: setattr(llama, "prefix_states", None))
        backends["off" if first.structured == "off" else "grammar"].generate(list(first.messages), first.params)
        seconds = interleaved({name: make_arm(name) for name in ARMS}, repeats)
    finally:
        def restore() -> None:
            llama.__dict__.pop("generate", None)
            llama.prefix_states, llama._pending = original, ()
            llama.reset()
        on_worker(restore)

    reference = replies["cold"][0]
    reference_prompts = prompts["cold"][0]
    minimum = shared_prefix_minimum(reference_prompts, min_suffix=MIN_SUFFIX_TOKENS)
    sent = sum(len(p) for p in reference_prompts)
    mismatched: dict[str, int] = {}
    first_mismatch = None
    for name in ARMS:
        bad = set()
        for r, out in enumerate(replies[name]):
            for i, (want, got) in enumerate(zip(reference, out)):
                diff = first_difference(want, got)
                if diff is not None:
                    bad.add(i)
                    if first_mismatch is None:
                        first_mismatch = {"arm": name, "repeat": r, "call": i, **diff}
        mismatched[name] = len(bad)
    same_prompts = all(p == reference_prompts for name in ARMS for p in prompts[name])
    stored_matched = sum(req.texts == texts for req, (texts, _) in zip(requests, reference))

    rows = []
    for name in ARMS:
        tokens = evaluated[name]
        row = {"arm": name, "evaluated_tokens": tokens[0], "x_minimum": tokens[0] / max(minimum, 1),
               "median_s": med(seconds[name]), "s_per_call": med(seconds[name]) / len(requests),
               "model_busy_s": med(busy[name]),
               "mismatched_calls": mismatched[name], "seconds_per_repeat": seconds[name]}
        if len(set(tokens)) > 1:
            row["evaluated_tokens_per_repeat"] = tokens
        if name == "prefix_states":
            row["restored_tokens"] = restored[0]
            row["states_kept"], row["states_mb"] = kept[0][0], kept[0][1] / 2**20
        rows.append(row)
    ratio = evaluated["prefix_states"][0] / max(minimum, 1)
    identical = mismatched["one_slot"] == mismatched["prefix_states"] == mismatched["cold"] == 0
    summary = {"requests": len(requests), "model_calls": len(reference_prompts), "prompt_tokens": sent,
               "shared_prefix_minimum": minimum, "prefix_states_vs_minimum": ratio,
               "one_slot_vs_minimum": evaluated["one_slot"][0] / max(minimum, 1),
               "target": f"prefix states evaluate <= {GOAL} x the shared-prefix minimum, replies bit-identical",
               "met": ratio <= GOAL and identical,
               "speedup_prefix_states_vs_one_slot": median_ratio(seconds["one_slot"], seconds["prefix_states"]),
               "speedup_prefix_states_vs_cold": median_ratio(seconds["cold"], seconds["prefix_states"]),
               "busy_speedup_prefix_states_vs_one_slot": median_ratio(busy["one_slot"], busy["prefix_states"]),
               "identical": identical, "first_mismatch": first_mismatch,
               "same_prompts_in_every_arm": same_prompts,
               "stored_replies_matched": f"{stored_matched} of {len(requests)}"}
    notes = ["cache off: every request reaches the model; arms interleaved (A B C, C B A, ...)",
             f"minimum = sum over model calls of max({MIN_SUFFIX_TOKENS}, prompt tokens after its longest common "
             "prefix with any earlier prompt); a follow-up turn that repeats an earlier reply can be reused from "
             "the one slot below it",
             "identical: texts and logprobs of every call equal to the cold arm's (first repeat), bit for bit",
             "stored_replies_matched: cold texts equal to those the store kept (made by the code of that day)",
             ("wall seconds include the machine-wide lock: its pause after each call and the wait while another "
              "process's model holds it; model_busy_s is the model's own time (the calls' latency_s), which "
              "another process's calls do not inflate; shared machine, see load_avg")]
    if other_models:
        notes.append(f"{other_models} cached llamacpp request(s) of other models left out")
    return result("prefix-reuse",
                  config={"db": str(db), "limit": limit, "repeats": repeats, "budget_mb": budget / 2**20,
                          "model": model_id, "n_ctx": n_ctx},
                  rows=rows, summary=summary, notes=notes)


def markdown(doc: dict[str, Any]) -> str:
    """arm | prompt tokens evaluated | x minimum | wall s | model busy s | s per call | calls differing from cold."""
    s = doc["summary"]
    lines = [f"shared-prefix minimum: {s['shared_prefix_minimum']} of {s['prompt_tokens']} prompt tokens "
             f"({s['model_calls']} model calls, {s['requests']} requests)",
             "", "| arm | prompt tokens evaluated | x minimum | wall s | model busy s | s per call "
             "| calls differing from cold |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in doc["rows"]:
        lines.append(f"| {r['arm']} | {r['evaluated_tokens']} | {r['x_minimum']:.2f} | {r['median_s']:.1f} "
                     f"| {r['model_busy_s']:.1f} | {r['s_per_call']:.3f} | {r['mismatched_calls']} |")
    lines.append(f"\nprefix states vs one slot: {s['speedup_prefix_states_vs_one_slot']:.2f}x faster wall, "
                 f"{s['busy_speedup_prefix_states_vs_one_slot']:.2f}x model busy; identical replies: {s['identical']}")
    return "\n".join(lines)

"""The embedded model timed on this machine before a first estimate (issue 46 item 4).

A first estimate on the embedded model, with no earlier request on it in the store, times tokens at rates
measured on one machine (:data:`.estimates.EMBEDDED_PROMPT_TOKENS_PER_S`,
:data:`.estimates.EMBEDDED_STRUCTURED_TOKENS_PER_S`). A command about to run on the model times it first
(:func:`before_first_estimate`), and :func:`.estimates.embedded_rates` takes that timing while it is fresh.
"""

from __future__ import annotations

import time
from typing import Any

from ..llm import LLM, LLMConfig
from ..llm.base import GenerationParams
from ..store import Store
from ..structured import as_param, score_schema
from .counts import same_backend
from .duration import MIN_CALLS_FOR_TIMING
from .embedded_speed import (EMBEDDED_PROMPT_TOKENS_PER_S, EMBEDDED_STRUCTURED_TOKENS_PER_S, TokenRates,
                             generated_rate, load_slowdown)
from .schema_replies import WORDS

PROBE_PROMPT_WORDS = 700
"""Words of the prompt :func:`time_embedded_model` reads: about 1,000 tokens, the size of a judge's prompt."""
PROBE_REPLY_TOKENS = 64
"""Tokens of the reply it times, an explanation and a score under a grammar (the methods' main path)."""
PROBE_FRESH_S = 600.0
"""A timing stands for the machine this long (then the machine's load may have changed)."""

_PROBED: list[Any] = []  # [monotonic time, prompt tokens a second, generated tokens a second]


def time_embedded_model(llm: Any) -> bool:
    """Time the embedded model behind ``llm`` (an :class:`~judge_engine.llm.LLM`) on this machine now, for
    the first estimates :func:`.estimates.embedded_rates` makes in this process: a prompt of about 1,000 tokens read, then
    a reply under a grammar written after it (the prompt's states kept), by the model's own busy seconds, not
    the time waiting for another run's turn. The rough rates are another machine's: on the machine of
    2026-11-29 evening a 1,085-token prompt was read at 414 tokens a second and 66.4 were generated a second
    under a grammar, where the rates assume 176 and 42.7, so first estimates there were 1.3-2.3x their runs.
    Costs a few seconds of the model, so only a command about to run on the model calls it (``run``, ``score``),
    and only the embedded backend is timed (a scripted one is not a model). False when it was not timed."""
    if getattr(llm.backend, "name", "") != "llamacpp":
        return False
    nonce = time.time_ns()  # a prompt no earlier request shares: all of it is read
    text = " ".join(WORDS[(nonce + 7 * i) % len(WORDS)] for i in range(PROBE_PROMPT_WORDS))
    messages = [{"role": "user", "content": f"Text {nonce}:\n{text}\n\nExplain how clear the text is, then "
                                            "score its clarity from 1 to 5."}]
    timer = LLM(llm.config, llm.backend)  # no cache and its own ledger: none of this is the run's
    read = timer.complete(messages, GenerationParams(max_tokens=1))
    reply = timer.complete(messages, GenerationParams(
        max_tokens=PROBE_REPLY_TOKENS, temperature=0.7, seed=nonce % 1000,
        json_schema=as_param(score_schema(1, 5, explanation="before"))))
    if min(read.prompt_tokens, reply.completion_tokens, read.latency_s, reply.latency_s) <= 0:
        return False
    _PROBED[:] = [time.monotonic(), read.prompt_tokens / read.latency_s, reply.completion_tokens / reply.latency_s]
    return True


def fresh_timing(llm: LLMConfig) -> TokenRates | None:
    """:func:`time_embedded_model`' timing when it is at most :data:`PROBE_FRESH_S` old, for ``llm``'s replies."""
    if not _PROBED or time.monotonic() - _PROBED[0] > PROBE_FRESH_S:
        return None
    prompt_per_s, structured_per_s = _PROBED[1], _PROBED[2]
    generated = structured_per_s * generated_rate(llm) / EMBEDDED_STRUCTURED_TOKENS_PER_S  # free text is faster
    return TokenRates(prompt_per_s, generated,
                      f"rough: the embedded model timed on this machine just now ({prompt_per_s:.0f} prompt and "
                      f"{structured_per_s:.0f} generated tokens a second, under the machine's load); the first run "
                      "measures it")


def before_first_estimate(store: Store, config: LLMConfig, llm: Any = None) -> bool:
    """Time the model (:func:`time_embedded_model`) when ``config`` is the embedded model and none of the store's
    requests measured it: what ``run`` and ``score`` do before their estimate, since they load the model anyway.
    ``llm``: the command's own, when it has one (else one is made as a run makes its own). A model that cannot
    load is not timed; the command reports it, with what to do. Whether it was timed."""
    if not config.embedded or not embedded_rates(store, config).rough:
        return False
    from . import execute  # its make_llm, which a test's scripted backend replaces; after the check, since it
    # imports the whole run machinery, which a server's `score` never uses
    try:
        return time_embedded_model(llm or execute.make_llm(config))
    except Exception:  # noqa: BLE001 - see the docstring: the command reports a model that cannot load
        return False


def embedded_rates(store: Store, llm: LLMConfig) -> TokenRates:
    """The embedded model's tokens per second: from the store's earlier requests on it (their seconds over their
    tokens, a generated token weighing as much as :data:`EMBEDDED_PROMPT_TOKENS_PER_S` /
    :func:`generated_rate` prompt tokens), else as this process timed it on this machine just now
    (:func:`.model_timing.time_embedded_model`), else its speed alone on the machine it was measured on slowed by this
    machine's other work now (:func:`load_slowdown`); the last two are rough and say so.

    A 16-item direct run was estimated at 12 s and took 3 min 22 s under load: its 0.75 s per counted call
    came from first looks whose direct prompts shared a cached prefix on a quiet machine; tokens are what the
    model reads and writes whatever the method."""
    calls = prompt = completion = 0
    seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.calls and run.ledger.prompt_tokens and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger.calls
            prompt += run.ledger.prompt_tokens
            completion += run.ledger.completion_tokens
            seconds += run.ledger.seconds
    if calls >= MIN_CALLS_FOR_TIMING and seconds > 0:
        alone = prompt / EMBEDDED_PROMPT_TOKENS_PER_S + completion / generated_rate(llm)
        slower = seconds / alone
        return TokenRates(EMBEDDED_PROMPT_TOKENS_PER_S / slower, generated_rate(llm) / slower,
                          f"tokens per second of {calls:,} earlier requests on the embedded model", rough=False)
    probed = fresh_timing(llm)
    if probed is not None:
        return probed
    slower, seen = load_slowdown()
    return TokenRates(EMBEDDED_PROMPT_TOKENS_PER_S / slower, generated_rate(llm) / slower,
                      f"rough: the embedded model's tokens per second alone on 2 cores, x{slower:.1f} slower for the "
                      f"machine now ({seen}); the first run measures it")

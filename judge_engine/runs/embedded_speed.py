"""The embedded model's speed on this machine: seconds per counted call of each method's first look, its
tokens per second, and how much slower it runs beside the machine's other work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..llm import LLMConfig

EMBEDDED_SECONDS_PER_CALL = 3.0
"""Seconds per call of the embedded SmolLM2 when this store has no history yet: the median of the alignment
runs on 2 shared CPU cores (2026-11-24, prompts of 300-1,500 tokens, 0.4-7 s per call)."""

EMBEDDED_SECONDS_PER_COUNTED_CALL = {
    "direct": 0.75, "geval": 0.9, "hypoeval": 0.27, "hpss": 0.65, "active_critic": 2.6, "hd_eval": 0.29,
}
"""Wall seconds per counted call (:func:`counted_calls`) of each method's quick first look on the embedded
model with no history in the store yet. A method's count is an upper bound (follow-up turns, retries and
repeated prompts answered by the cache are counted), and its calls range from a 6-token score on a reused
prompt prefix to a 300-token generation, so one speed per backend misjudged a look by 2-4x; measured by
``bench first-look`` (docs/benchmarks.md, "First look") on looks before the ones the docs report, after the
model was loaded without every prompt position's logits (2026-11-27). One speed serves every size of a
method's look: Active-Critic's was 2.2 s on its smallest look, whose 256-token replies are far shorter than
its larger looks' 768, so its default errs high (2.6 s) rather than pick a larger look that would take
minutes longer than its estimate."""

EMBEDDED_BASIS = "measured for the embedded model on 2 CPU cores"

EMBEDDED_SPEED_PARAMS: dict[str, dict[str, Any]] = {
    "hpss": {"judge_max_tokens": 256, "explanation_chars": 100, "example_chars": 400, "aux_max_tokens": 256},
    "active_critic": {"variant": "coarse", "source_chars": 800, "max_tokens": 256, "explanation_chars": 400},
}
"""The parameters that size a request (its reply's bound, the text it quotes) at which a method's
:data:`EMBEDDED_SECONDS_PER_COUNTED_CALL` was measured: the looks the pages chose on the embedded model
(their ``smaller_looks``). Elsewhere the method is timed by its tokens: a command-line HPSS run at its paper
default of 600-character explanations made requests of 1,007 prompt and 138 reply tokens, 8.1 s each, where
the look's speed gave 1.2 s (2026-11-29). The other methods' looks change only how many calls they make."""


EMBEDDED_REFERENCE_CHARS = 1235.0
"""Mean characters of an item (input and output) of Topical-Chat, where
:data:`EMBEDDED_SECONDS_PER_COUNTED_CALL` were measured."""

EMBEDDED_LENGTH_SHARE = {"hypoeval": 0.21, "hpss": 0.84, "active_critic": 0.15, "hd_eval": 0.43}
"""The part of a method's seconds per counted call that grows with its items' length: the embedded model
spends most of a call evaluating the prompt, and how much of the prompt is the item (and is not a prefix
kept from the call before) differs by method. From one look per method on SummEval, whose items are 2.0x
as long as Topical-Chat's (2026-11-27): seconds per counted call 1.21x (HypoEval), 1.85x (HPSS, on a
seeded validation subset), 1.43x (HD-Eval), and for Active-Critic 1.13x once its explanations were bounded
(1.41x before). Direct scoring and G-Eval, small parts of a look,
are not scaled. Shorter items than Topical-Chat's do not make a look faster (WritingPrompt-A, items 0.68x
as long: HPSS 214 s and Active-Critic 179 s against 221 s and 168 s on Topical-Chat), so the factor is
never below 1."""


def length_factor(method: str, item_chars: float) -> float:
    """How much slower the embedded model's counted call of ``method`` is on items of ``item_chars`` mean
    characters than on Topical-Chat's (:data:`EMBEDDED_LENGTH_SHARE`); 1 for items no longer than those."""
    share = EMBEDDED_LENGTH_SHARE.get(method, 0.0)
    return max(1.0, 1.0 + share * (item_chars / EMBEDDED_REFERENCE_CHARS - 1.0))


EMBEDDED_PROMPT_TOKENS_PER_S = 176.0
EMBEDDED_GENERATED_TOKENS_PER_S = 71.7
"""The embedded SmolLM2's prompt and generated tokens per second on this machine's 2 cores with nothing else
running (``bench cpu-build``, docs/benchmarks.md "Portable build", 2026-11-28, load 1.4-2.7): llama.cpp's own
counters, which time the model and not the sampling. Free text generates at that speed through the backend
too (``bench token-rates``: 70.8 a second after a 1,117-token prompt)."""

EMBEDDED_STRUCTURED_TOKENS_PER_S = 42.7
"""The embedded model's generated tokens per second in a reply under a JSON-schema grammar, the main path of
every method (``bench token-rates --article-repeats 14``: whole requests after a 1,117-token prompt, an
explanation and a score; 2026-11-29 17:48 UTC, load 1.2-1.7). The grammar is applied to the candidates of each
token as it is sampled, which :data:`EMBEDDED_GENERATED_TOKENS_PER_S` leaves out; a reply holding only a score
came at 38.8 a second in the same measurement (its 9 tokens carry the request's fixed costs)."""


EMBEDDED_REPLY_SHARE = 0.32
"""The share of a text reply's ``max_tokens`` the embedded SmolLM2 writes, about: a small model under a grammar
writes toward the bounds it is given, and a method sets them by what it asks for (a score with a reason, a list
of criteria). Replies of every request that could hold text, over their allowed tokens, in five first runs on
2026-11-29: HypoEval 0.24 (91 requests), HPSS 0.32 and 0.38 (45, 60), Active-Critic 0.32 and 0.49 (43, 25);
this is their median. Against the flat :data:`~judge_engine.runs.cost.ROUGH_COMPLETION_TOKENS`, HypoEval's
replies were 0.64x and Active-Critic's 2.3-3.5x."""


def generated_rate(llm: LLMConfig) -> float:
    """The embedded model's generated tokens per second alone: under a grammar unless replies are free text."""
    return EMBEDDED_GENERATED_TOKENS_PER_S if llm.structured == "off" else EMBEDDED_STRUCTURED_TOKENS_PER_S

TOKEN_TIMED = ("direct", "geval")
"""Methods whose counted calls are the calls they make (one per item, or G-Eval's samples): their time on the
embedded model is their tokens at its throughput. The fitted methods' counts are upper bounds (2-4x), so
their measured seconds per counted call (:data:`EMBEDDED_SECONDS_PER_COUNTED_CALL`) stay."""

MAX_LOAD_FACTOR = 12.0
"""At most this much slower than alone for the machine's load. Not lower: at load 19-22 on 2 cores (2026-11-29
04:00 UTC) a niced 2-item direct ``score`` on the embedded model, estimated at 35 s with a cap of 4, had used
28 s of CPU and not finished in 6.5 minutes (stopped: it held the model's lock others waited for)."""

THREAD_SCALING = 0.65
"""How the embedded model's time grows with fewer threads: ``(cores / threads) ** THREAD_SCALING``. On 2 cores
a judge request took 1.6x as long on 1 thread beside a spinning process as on 2 threads alone (``bench
busy-machine``, 2026-11-29 10:29 UTC); alone, 1 thread reads a prompt 1.56x and generates 1.3x slower."""


def slowdown_for(cores: int, others: int) -> float:
    """How much slower than alone the embedded model runs beside ``others`` running threads of other processes:
    it computes with the threads they leave (:func:`~judge_engine.llm.threads.threads_for`), each getting its
    share of the cores when there are more threads than cores; at most :data:`MAX_LOAD_FACTOR`. On 2 cores
    1, 1.57, 2.35 and 3.14 for 0-3 others; measured 1, 1.6, 2.7 and 3.1 (``bench busy-machine``)."""
    from ..llm.threads import MAX_THREADS, threads_for

    used = threads_for(cores, others)
    fewer_threads = (min(cores, MAX_THREADS) / used) ** THREAD_SCALING
    share = min(1.0, cores / (used + others))
    return min(MAX_LOAD_FACTOR, fewer_threads / share)


def look_slowdown_for(cores: int, others: int) -> float:
    """How much slower than alone a method runs at its measured seconds per counted call
    (:data:`EMBEDDED_SECONDS_PER_COUNTED_CALL`) beside ``others`` running threads: at least
    :func:`slowdown_for`, and beside any other work at least as slow as with one core fewer. Those speeds are
    the pages' quick looks: three worker processes taking turns on the model with short calls and their own
    work between them. Beside one spinning process on 2 cores a look took 2.1-2.4x as long (HypoEval 274 s,
    HD-Eval 188 s, against 113 s and 88 s alone), beside two 2.2x (HD-Eval 197 s), where a single run's long
    requests took 1.5-1.6x (2026-11-29, docs/benchmarks.md): a look gains more from a second core than one
    long request does. Measured on 2 cores only; elsewhere one core fewer is taken as the least it loses."""
    one_core_fewer = cores / (cores - 1) if others and cores > 1 else 1.0
    return min(MAX_LOAD_FACTOR, max(slowdown_for(cores, others), one_core_fewer))


LOAD_LOOKS = 5
LOAD_LOOK_GAP_S = 0.05
"""An estimate counts the other processes' running threads over this many looks this far apart (the fewest):
the run will compete with the work that holds a core, not with a command that ran for a moment."""


LOAD_REUSE_S = 5.0
"""A reading of the machine serves the estimates made this soon after it (a page estimates several looks)."""

_LOAD_READING: list[Any] = []  # [monotonic time, (cores, others, words)]


def machine_load() -> tuple[int, int, str]:
    """Usable cores, running threads of other processes now, and how that was read: ``/proc`` on Linux, else
    the 1-minute load average (taken as other work: nothing of the run is running yet). Read at most every
    :data:`LOAD_REUSE_S`."""
    import time

    if _LOAD_READING and time.monotonic() - _LOAD_READING[0] < LOAD_REUSE_S:
        return _LOAD_READING[1]
    reading = _read_machine_load()
    _LOAD_READING[:] = [time.monotonic(), reading]
    return reading


def _read_machine_load() -> tuple[int, int, str]:
    import os

    from ..llm.threads import others_now, usable_cores

    cores = usable_cores()
    others = others_now(LOAD_LOOKS, LOAD_LOOK_GAP_S)
    if others is not None:
        return cores, others, f"{others} thread{'s' if others != 1 else ''} of other processes running on {cores} cores"
    load = os.getloadavg()[0]
    return cores, round(load), f"load {load:.1f} on {cores} cores"


def load_slowdown(*, look: bool = False) -> tuple[float, str]:
    """:func:`slowdown_for` the machine now (:func:`machine_load`), or with ``look`` :func:`look_slowdown_for`,
    with what it read."""
    cores, others, seen = machine_load()
    return (look_slowdown_for if look else slowdown_for)(cores, others), seen


@dataclass(frozen=True)
class TokenRates:
    """The embedded model's speed in tokens per second, and where it comes from."""

    prompt_per_s: float
    generated_per_s: float
    basis: str
    rough: bool = True
    """No earlier requests on this store measured it."""

    def seconds(self, prompt_tokens: float, completion_tokens: float) -> float:
        return prompt_tokens / self.prompt_per_s + completion_tokens / self.generated_per_s

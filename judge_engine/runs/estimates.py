"""How much a run will ask of its backend: LLM calls, and the minutes they take."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from ..llm import LLMConfig
from ..methods import METHODS, get_method
from ..records import Dataset, RunEstimate, RunRecord
from ..store import Store
from .launching import same_backend
from .spec import RunSpec, ensure_dataset


def estimate(store: Store, spec: RunSpec) -> dict[str, int]:
    """LLM calls the run will request before any cache hit."""
    dataset = ensure_dataset(store, spec.dataset)
    return _calls(dataset, drawn_sizes(dataset, spec))


def drawn_sizes(dataset: Dataset, spec: RunSpec) -> RunSpec:
    """``spec`` with the sizes of the split its run will draw (:func:`~judge_engine.data.make_split`, seeded:
    the same split whenever it is drawn), for an estimate: test spans at least
    :data:`~judge_engine.data.splits.MIN_TEST_GROUPS` groups with at least 3 items from each, so ``--test 8`` on
    SummEval scores 24 items (when it kept whole articles, 16, and an estimate of 8 was half the time). Drawn from
    the dataset as stored (a run leaves out items without a human score under its aggregate, which can move a
    group boundary); the sizes asked when they cannot be drawn (the run then says why)."""
    if spec.test_size is None:
        return spec
    from .. import data  # pure and cheap, but not needed by every caller of this module

    try:
        split = data.make_split(dataset, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
    except data.SplitError:
        return spec
    return replace(spec, train_size=len(split.train_ids), test_size=len(split.test_ids))


def _calls(dataset: Dataset, spec: RunSpec) -> dict[str, int]:
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    # on a server the judge's own model checks the text a method generates: its requests are counted (issue 65)
    return _method(spec).estimate_calls(spec.train_size, n_test, backend=spec.llm.backend)


def _method(spec: RunSpec):
    """``spec``'s method with its parameters as a fit on its backend reads them."""
    return get_method(spec.method, METHODS[spec.method].params_on(dict(spec.params), spec.llm))


def counted_calls(run: RunRecord) -> int:
    """The calls a stored run's method counts before it starts (its bound), from its parameters and split."""
    if run.split is None or run.method not in METHODS:
        return 0
    llm = LLMConfig.from_dict(run.llm)
    params = METHODS[run.method].params_on(dict(run.params), llm)
    calls = get_method(run.method, params).estimate_calls(len(run.split.train_ids), len(run.split.test_ids),
                                                          backend=llm.backend)
    return int(calls["fit"] + calls["score"])


EMBEDDED_SECONDS_PER_CALL = 3.0
"""Seconds per call of the embedded SmolLM2 when this store has no history yet: the median of the alignment
runs on 2 shared CPU cores (2026-11-24, prompts of 300-1,500 tokens, 0.4-7 s per call)."""

MIN_CALLS_FOR_TIMING = 20
"""Finished calls on a backend before their mean stands for it."""

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


def judged_item_chars(dataset: Dataset, spec: RunSpec) -> float:
    """Mean characters of the items ``spec``'s run reads most: the dataset's mean item, or, for a method that
    reads mostly its shortest training items (:meth:`~judge_engine.methods.Method.shortest_share`, HPSS's
    ``validation_pick``), the mean of the same share of the dataset's shortest items (the split is not
    drawn for an estimate)."""
    share = _method(spec).shortest_share(spec.train_size)
    if share is None:
        return mean_item_chars(dataset)
    lengths = sorted(_item_chars(s) for s in dataset.samples)
    keep = max(1, round(len(lengths) * share))
    return sum(lengths[:keep]) / keep


def _item_chars(sample) -> int:
    return len(sample.input) + len(sample.output)


def mean_item_chars(dataset: Dataset) -> float:
    """Mean characters of an item's input and output."""
    return sum(_item_chars(s) for s in dataset.samples) / max(1, len(dataset.samples))


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
    from .model_timing import fresh_timing  # it reads this module's rates

    probed = fresh_timing(llm)
    if probed is not None:
        return probed
    slower, seen = load_slowdown()
    return TokenRates(EMBEDDED_PROMPT_TOKENS_PER_S / slower, generated_rate(llm) / slower,
                      f"rough: the embedded model's tokens per second alone on 2 cores, x{slower:.1f} slower for the "
                      f"machine now ({seen}); the first run measures it")


def scoring_duration(store: Store, llm: LLMConfig, *, calls: int, prompt_tokens: float, completion_tokens: float,
                     waves: int = 1, new_share: float = 1.0) -> Duration:
    """The wall time of ``calls`` scoring requests of these tokens on ``llm`` (``score``'s estimate): on the
    embedded model its tokens at :func:`embedded_rates`, on a server the seconds per call of earlier runs on it
    (:func:`seconds_per_call`) with the judge's ``waves``; unknown on a server never used from this store."""
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if llm.embedded:
        rates = embedded_rates(store, llm)
        if rates.rough:  # ``new_share``: the prompt tokens the model evaluates (a store's rates already hold it)
            prompt_tokens *= new_share
        per_call = rates.seconds(prompt_tokens, completion_tokens) / max(1, calls)
        return Duration(calls=calls, seconds_per_call=per_call, basis=rates.basis, score_calls=calls)
    per_call, basis = seconds_per_call(store, llm)
    return Duration(calls=calls, seconds_per_call=per_call, basis=basis, score_calls=calls, waves=waves,
                    latency=call_latency(store, llm) or 0.0, parallel=parallel)


HISTORY_RUNS = 5
"""Earlier finished runs of a method on a backend an estimate reads for what its count cannot know."""


def _earlier(store: Store, method: str, llm: LLMConfig) -> list[RunRecord]:
    """The newest :data:`HISTORY_RUNS` finished runs of ``method`` on ``llm``'s backend that made calls."""
    found = []
    for run in store.runs(limit=500):
        if (run.method == method and run.status == "finished" and run.ledger.calls and run.split is not None
                and same_backend(LLMConfig.from_dict(run.llm), llm)):
            found.append(run)
            if len(found) == HISTORY_RUNS:
                break
    return found


def _waves_of(run: RunRecord, events: Sequence[Any]) -> float:
    """The waves a finished run made by its method's count: its steps plus those its replies brought."""
    method = get_method(run.method, METHODS[run.method].params_on(dict(run.params), LLMConfig.from_dict(run.llm)))
    n_train, n_test = len(run.split.train_ids), len(run.split.test_ids)
    waves = method.estimate_waves(n_train, n_test)
    return waves["fit"] + waves["score"] + method.reply_waves(n_train, [(n_train, events)])


def wave_costs(store: Store, spec: RunSpec) -> tuple[float, float]:
    """What the earlier runs of ``spec``'s method on its backend say about waves its count leaves out: the
    waves its replies bring (:meth:`~judge_engine.methods.Method.reply_waves`, HypoEval's refreshes), and the
    seconds per wave they spent beyond their calls and waves (the method's own work between waves: parsing,
    rewards, an aggregator's fit, the events it writes), each at least 0. Without such runs, the waves the
    method expects its replies to bring on a first fit (HypoEval's prior) and no work between waves; both 0 on
    the embedded model, whose seconds per call already hold that work."""
    if spec.llm.backend == "llamacpp":
        return 0.0, 0.0
    earlier = [(run, store.run_events(run.id)) for run in _earlier(store, spec.method, spec.llm)]
    if not earlier:
        return _method(spec).reply_waves(spec.train_size, []), 0.0
    extra = _method(spec).reply_waves(spec.train_size, [(len(r.split.train_ids), ev) for r, ev in earlier])
    residual = waves = 0.0
    for run, events in earlier:
        start = events[0].ts if events else run.created
        if start is None or run.finished is None:
            continue
        parallel = max(1, LLMConfig.from_dict(run.llm).concurrency)
        latency = run.ledger.seconds / run.ledger.calls
        n_waves = _waves_of(run, events)
        modelled = Duration(calls=run.ledger.calls, seconds_per_call=latency / parallel, basis="",
                            waves=round(n_waves), latency=latency, parallel=parallel)
        residual += (run.finished - start) - (modelled.minutes or 0.0) * 60.0
        waves += n_waves
    return extra, max(0.0, residual / waves) if waves else 0.0


SHORT_RUN_MINUTES = 1.5
"""Estimates below this read ``under 2 min``: whole minutes would round them to 1 or 0, which promises too much."""


@dataclass(frozen=True)
class Duration:
    """An estimate of a run's wall time before cache hits."""

    calls: int
    """Requests to fit and to score, together."""
    seconds_per_call: float | None
    """None when nothing is known about this backend's speed yet."""
    basis: str
    """Where the speed comes from, in words."""
    fit_calls: int = 0
    score_calls: int = 0
    waves: int = 0
    """Sequential steps of the run (:meth:`~judge_engine.methods.Method.estimate_waves`): each waits for the
    answers of the one before, so calls in flight do not share its latency."""
    latency: float = 0.0
    """Seconds one call takes on the backend (0: unknown, or calls answered one at a time, where ``calls x
    seconds_per_call`` already counts each whole)."""
    parallel: int = 1
    """Calls in flight at once."""
    wave_overhead: float = 0.0
    """Seconds of the method's own work per wave, beyond its calls (:func:`wave_costs`, from earlier runs)."""
    fixed_seconds: float = 0.0
    """Seconds of the run's own work beyond its calls and waves, whatever their number."""

    @property
    def wave_seconds(self) -> float:
        """What the sequential steps add to ``calls x seconds_per_call`` (the calls' seconds shared by the window).

        A wave of n calls lasts ceil(n / parallel) latencies: at least one, however few its calls, and on average
        about half a latency more than its share of the window. So the run takes the larger of the two: every wave
        one latency, or the calls' shared seconds plus half a latency, less its own share, per wave.
        """
        if self.seconds_per_call is None or not self.latency or self.parallel <= 1:
            return 0.0
        shared = self.calls * self.seconds_per_call
        half_a_latency = self.waves * self.latency * (1.0 - 1.0 / self.parallel) / 2.0
        return max(half_a_latency, self.waves * self.latency - shared) + self.waves * self.wave_overhead

    @property
    def minutes(self) -> float | None:
        if self.seconds_per_call is None:
            return None
        return (self.calls * self.seconds_per_call + self.wave_seconds + self.fixed_seconds) / 60.0

    @property
    def label(self) -> str | None:
        """``about 14 min`` or ``under 2 min`` (see :data:`SHORT_RUN_MINUTES`); None when the speed is unknown.

        The one wording of a run's time: :meth:`describe` and the pages' start forms show it.
        """
        if self.minutes is None:
            return None
        return f"about {self.minutes:.0f} min" if self.minutes >= SHORT_RUN_MINUTES else "under 2 min"

    def describe(self) -> str:
        """E.g. ``about 14 min (3.0 s per call: ...)``."""
        if self.minutes is None:
            return f"{self.calls} requests; {self.basis}"
        waves = f" and {self.waves} steps in turn, +{self.wave_seconds:.0f} s" if self.wave_seconds >= 0.5 else ""
        return f"{self.label} ({self.seconds_per_call:.1f} s per request{waves}: {self.basis})"


def seconds_per_call(store: Store, llm: LLMConfig) -> tuple[float | None, str]:
    """Wall seconds per paid call on this backend, from the ledgers of earlier runs, with where it comes from.

    Calls in flight at once share the wall time, so a ledger's seconds (summed over calls) are divided by the
    backend's concurrency; the embedded model answers one call at a time.
    """
    calls = seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.calls and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger.calls
            seconds += run.ledger.seconds
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if calls >= MIN_CALLS_FOR_TIMING and seconds > 0:
        return seconds / calls / parallel, f"mean of {int(calls)} earlier requests on this backend"
    if llm.backend == "llamacpp" and not llm.model:
        return EMBEDDED_SECONDS_PER_CALL, "typical for the embedded model on 2 CPU cores"
    return None, "no timing on this backend yet (the first run measures it)"


def call_latency(store: Store, llm: LLMConfig) -> float | None:
    """Mean seconds one paid call took on this backend in earlier runs (None before
    :data:`MIN_CALLS_FOR_TIMING` calls): what each sequential wave of a run waits at least."""
    calls = seconds = 0.0
    for run in store.runs(limit=500):
        if run.ledger.calls and same_backend(LLMConfig.from_dict(run.llm), llm):
            calls += run.ledger.calls
            seconds += run.ledger.seconds
    return seconds / calls if calls >= MIN_CALLS_FOR_TIMING and seconds > 0 else None


def method_speed(store: Store, method: str, llm: LLMConfig, *,
                 made: tuple[float, str] | None = None) -> tuple[float | None, str]:
    """Wall seconds per counted call of ``method`` on this backend, with where it comes from.

    From the store's finished runs of the method on the backend when they count enough calls (their ledger
    seconds over the calls their method counted for them); on the embedded model without such runs, its
    measured default (:data:`EMBEDDED_SECONDS_PER_COUNTED_CALL`); else :func:`seconds_per_call` times the
    share of its counted calls the method makes: ``made`` (a run's own, :func:`made_share`, with why) or the
    method's :attr:`~judge_engine.methods.Method.made_share` (1 where not measured: every counted call taken
    as made, an upper bound).
    """
    counted = seconds = 0.0
    for run in store.runs(limit=500):
        if (run.method == method and run.status == "finished" and run.ledger.calls
                and same_backend(LLMConfig.from_dict(run.llm), llm)):
            counted += counted_calls(run)
            seconds += run.ledger.seconds
    parallel = 1 if llm.backend == "llamacpp" else max(1, llm.concurrency)
    if counted >= MIN_CALLS_FOR_TIMING and seconds > 0:
        return seconds / counted / parallel, f"earlier {METHODS[method].title} runs on this backend"
    if llm.embedded and method in EMBEDDED_SECONDS_PER_COUNTED_CALL:
        return EMBEDDED_SECONDS_PER_COUNTED_CALL[method], EMBEDDED_BASIS
    per_call, basis = seconds_per_call(store, llm)
    share = METHODS[method].made_share
    share, why = made or (share, f"x{share:.2f}: the share of its counted requests a fit makes")
    if per_call is None or share >= 1.0:
        return per_call, basis
    return per_call * share, f"{basis}, {why}"


def measured_setting(spec: RunSpec) -> bool:
    """Whether ``spec`` runs with the settings :data:`EMBEDDED_SECONDS_PER_COUNTED_CALL` were measured at: the
    pages' defaults on the embedded model (:func:`~judge_engine.runs.spec.fast_defaults`: scores read from
    the logprobs with no reasoning before them, the sample first in the prompt). The command line's paper
    defaults reason before each score and put the sample last: a HypoEval run at the pages' quick sizes made
    requests of 1,087 prompt and 82 reply tokens, 8.6 s each, where the measured speed gave 1.2 s. HPSS and
    Active-Critic were measured on looks with shorter replies (:data:`EMBEDDED_SPEED_PARAMS`)."""
    from .spec import fast_defaults

    measured_at = {**fast_defaults(spec.method, spec.llm), **EMBEDDED_SPEED_PARAMS.get(spec.method, {})}
    return all(spec.params.get(name) == value for name, value in measured_at.items())


def _counted(calls: dict[str, int]) -> Duration:
    """The method's counted calls as a :class:`Duration` without a speed (what token sizing reads)."""
    return Duration(calls=int(calls["fit"] + calls["score"]), seconds_per_call=None, basis="",
                    fit_calls=int(calls["fit"]), score_calls=int(calls["score"]))


def _token_seconds(store: Store, dataset: Dataset, spec: RunSpec, calls: dict[str, int]) -> tuple[float, str]:
    """Seconds per counted call of ``spec`` on the embedded model from its tokens (:func:`~.cost.request_tokens`:
    the store's earlier runs of the method, else its own prompts) at the model's rates (:func:`embedded_rates`)."""
    from .cost import request_tokens  # cost reads these estimates: imported here

    per_prompt, per_completion, _ = request_tokens(store, dataset, spec, _counted(calls))
    return _at_rates(dataset, spec, calls, per_prompt, per_completion, embedded_rates(store, spec.llm))


def _own_token_seconds(dataset: Dataset, spec: RunSpec, calls: dict[str, int]) -> float:
    """Seconds per counted call of ``spec`` from its own prompts rendered (:func:`~.cost.own_tokens`) at the
    embedded model's speed alone, whatever a store and the machine hold: what
    :func:`_calibrated_token_seconds` compares runs by."""
    from .cost import own_tokens

    per_prompt, per_completion, _ = own_tokens(dataset, spec, _counted(calls))
    alone = TokenRates(EMBEDDED_PROMPT_TOKENS_PER_S, generated_rate(spec.llm), "its speed alone")
    return _at_rates(dataset, spec, calls, per_prompt, per_completion, alone)[0]


def _at_rates(dataset: Dataset, spec: RunSpec, calls: dict[str, int], per_prompt: float, per_completion: float,
              rates: TokenRates) -> tuple[float, str]:
    """Seconds per counted call for these tokens per request at ``rates``: of the prompt tokens, those it does
    not repeat from earlier prompts (a store's own rates already hold that), and the share of its counted calls
    the method makes (:attr:`~judge_engine.methods.Method.made_share`)."""
    from .cost import new_prompt_share

    basis = rates.basis
    if rates.rough:
        share = new_prompt_share(dataset, spec, _counted(calls))
        per_prompt *= share
        if share < 0.95:
            basis = f"{basis}; {share:.0%} of the prompt tokens new to the model (the rest repeat earlier prompts)"
    made, why = made_share(dataset, spec, calls)
    if why:
        basis = f"{basis}; {why}"
    return made * rates.seconds(per_prompt, per_completion), f"its tokens at {basis}"


def made_share(dataset: Dataset, spec: RunSpec, calls: dict[str, int]) -> tuple[float, str]:
    """The share of its counted calls (an upper bound) ``spec``'s run is expected to make, with why: its requests
    as rendered (:func:`~.cost.rendered_calls`, the method run against replies of the shape it asks for) when
    the rendering reached a judge and its scoring and the method's calls do not turn on its replies' agreement
    (:attr:`~judge_engine.methods.Method.calls_follow_agreement`), else the method's measured
    :attr:`~judge_engine.methods.Method.made_share`. ``spec`` has the drawn sizes."""
    from .cost import rendered_calls

    counted = calls["fit"] + calls["score"]
    made = rendered_calls(dataset, spec) if counted and not METHODS[spec.method].calls_follow_agreement else None
    if made is not None:
        share = min(1.0, made / counted)
        return share, (f"x{share:.2f}: {made:,.0f} of its {counted:,} counted requests, as its own fit and judge "
                       f"send them (rendered)" if share < 1.0 else "")
    share = METHODS[spec.method].made_share
    return share, f"x{share:.2f}: the share of its counted requests a fit makes" if share < 1.0 else ""


CALIBRATION_RUNS = 3
"""Earlier runs of a method whose times calibrate its token estimate on the embedded model (the latest)."""


def _calibrated_token_seconds(store: Store, dataset: Dataset, spec: RunSpec,
                              calls: dict[str, int]) -> tuple[float, str] | None:
    """Seconds per counted call of ``spec`` from its own tokens alone (:func:`_own_token_seconds`), times what the
    method's earlier runs on this backend took over the same estimate of theirs; None without such runs.

    Their seconds per counted call alone cannot see the items: a second HD-Eval run on SmolLM2 (4 Topical-Chat
    items, one layer) drew longer items than the first and took 107.5 s where the first's speed gave 66.7 s;
    its own tokens gave 84.4 s, times the first run's 71.0 s of requests over its own 59.2 s: 101.3 s (2026-11-29)."""
    took = alone = 0.0
    used = 0
    for run in store.runs(limit=200):
        if used >= CALIBRATION_RUNS:
            break
        if (run.method != spec.method or run.status != "finished" or not run.ledger.calls or run.split is None
                or not same_backend(LLMConfig.from_dict(run.llm), spec.llm)):
            continue
        earlier = RunSpec(method=run.method, dataset=run.dataset, aspect=run.aspect, params=dict(run.params),
                          train_size=len(run.split.train_ids), test_size=len(run.split.test_ids),
                          seed=run.split.seed, llm=spec.llm)
        try:
            its_dataset = dataset if run.dataset == dataset.name else ensure_dataset(store, run.dataset)
            its_calls = _calls(its_dataset, earlier)
            per_call = _own_token_seconds(its_dataset, earlier, its_calls)
        except (ValueError, KeyError):  # its dataset or aspect is gone: it cannot be compared
            continue
        took += run.ledger.seconds
        alone += per_call * (its_calls["fit"] + its_calls["score"])
        used += 1
    if not used or alone <= 0 or took <= 0:
        return None
    per_call = _own_token_seconds(dataset, spec, calls)
    factor = took / alone
    return per_call * factor, (f"its tokens at the embedded model's speed alone, x{factor:.2f}: what {used} earlier "
                               f"{METHODS[spec.method].title} run(s) on this backend took over the same estimate")


def estimate_duration(store: Store, spec: RunSpec, *, speed: tuple[float | None, str] | None = None,
                      dataset: Dataset | None = None) -> Duration:
    """Requests and minutes ``spec`` will take on its backend before any cache hit.

    ``speed`` is :func:`method_speed` when the caller already has it (a page drawing several estimates). The
    embedded model's measured default is scaled to the dataset's item length (:func:`length_factor`); a
    speed from the store's own runs is taken as it is. ``dataset``: ``spec``'s, when the caller holds it already
    (:func:`~judge_engine.runs.create_run` keeps the estimate with the run and loads the dataset once).
    """
    dataset = dataset or ensure_dataset(store, spec.dataset)
    spec = drawn_sizes(dataset, spec)
    calls = _calls(dataset, spec)
    if speed is None:  # on a server with no run of the method yet, its own rendered share of the count
        made = None if spec.llm.embedded else made_share(dataset, spec, calls)
        speed = method_speed(store, spec.method, spec.llm, made=made)
    per_call, basis = speed
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    by_tokens = spec.method in TOKEN_TIMED or not measured_setting(spec)
    if per_call is not None and basis == EMBEDDED_BASIS and not by_tokens:
        factor = length_factor(spec.method, judged_item_chars(dataset, spec))
        if abs(factor - 1.0) >= 0.05:
            per_call, basis = per_call * factor, f"{EMBEDDED_BASIS}, x{factor:.2f} for this dataset's item length"
        slower, seen = load_slowdown(look=True)  # measured alone: slower beside other work
        per_call, basis = per_call * slower, f"{basis}, x{slower:.1f} for the machine now ({seen})"
    elif per_call is not None and basis == EMBEDDED_BASIS:
        per_call, basis = _token_seconds(store, dataset, spec, calls)
    elif per_call is not None and spec.llm.embedded and by_tokens and spec.method not in TOKEN_TIMED:
        per_call, basis = _calibrated_token_seconds(store, dataset, spec, calls) or (per_call, basis)
    waves = _method(spec).estimate_waves(spec.train_size, n_test)
    extra, overhead = wave_costs(store, spec)
    n_waves = round(waves["fit"] + waves["score"] + extra)
    return Duration(calls=int(calls["fit"] + calls["score"]), seconds_per_call=per_call, basis=basis,
                    fit_calls=int(calls["fit"]), score_calls=int(calls["score"]), waves=n_waves,
                    latency=call_latency(store, spec.llm) or 0.0,
                    parallel=1 if spec.llm.backend == "llamacpp" else max(1, spec.llm.concurrency),
                    wave_overhead=overhead)


RUN_FINISH_SECONDS_ALONE = 0.75
"""Seconds a run on a server takes after its last answer, alone on the machine: ``summarize``'s bootstrap of the
metrics (about 900 resamples of scipy's correlations, one thread). Measured 2026-12-07 23:45-23:50 UTC with 32
threads of other processes running on 2 cores (load 35-42; one thread's share of the cores 1/16.5) on the stub
server, SummEval, 30 + 20 items: 6.7-23.9 s after the last answer (37.8 s under a profiler, 37.7 s of it
``summarize``), so 0.4-1.4 s alone; not modelled before, direct and G-Eval runs of 24-25 requests were
estimated at 0.15-0.57 of their time."""


def finish_seconds(llm: LLMConfig) -> float:
    """:data:`RUN_FINISH_SECONDS_ALONE` at the machine's load now: one thread among the other processes' running
    threads gets its share of the cores (:func:`machine_load`; the embedded model's :func:`slowdown_for`, capped
    for a model's threads, put it at 2.2-4.1x the time of direct and G-Eval runs at load 13). 0 on the embedded
    model, whose estimates are calibrated on whole runs that include it. Added to a time from the run's first
    requests (:func:`timed_by_first_requests`); a time from earlier runs (:func:`estimate_duration`) is left as
    it was: with their seconds per call it landed within 30% of runs on a server (tests), and adding this put a
    HypoEval run at 1.46x."""
    if llm.backend == "llamacpp":
        return 0.0
    cores, others, _ = machine_load()
    return RUN_FINISH_SECONDS_ALONE * max(1.0, (others + 1) / max(1, cores))


def timed_by_first_requests(run: RunRecord, ledger: Any, elapsed: float = 0.0) -> RunEstimate | None:
    """``run``'s estimate with the time its own first requests give, when it had none (a server never used from
    this store: :func:`seconds_per_call` knows nothing of it); None while fewer than :data:`MIN_CALLS_FOR_TIMING`
    requests are answered, or when the estimate has a time already.

    The seconds the run has taken so far (``elapsed``, its start-up and work between calls included), and for the
    requests still to come their share of the whole run at the first requests' mean latency (``ledger``: the run's
    :class:`~judge_engine.llm.client.LedgerTotals` so far) over the calls in flight with the method's waves
    (:class:`Duration`, what :func:`estimate_duration` makes of a backend's earlier requests)."""
    est = run.estimate
    if (est is None or est.seconds is not None or run.split is None or run.method not in METHODS
            or ledger.calls < MIN_CALLS_FOR_TIMING or ledger.seconds <= 0):
        return None
    llm = LLMConfig.from_dict(run.llm)
    if llm.backend == "llamacpp":  # timed by its tokens before it starts (:func:`embedded_rates`)
        return None
    latency = ledger.seconds / ledger.calls
    parallel = max(1, llm.concurrency)
    method = get_method(run.method, METHODS[run.method].params_on(dict(run.params), llm))
    n_train, n_test = len(run.split.train_ids), len(run.split.test_ids)
    waves = method.estimate_waves(n_train, n_test)
    n_waves = round(waves["fit"] + waves["score"] + method.reply_waves(n_train, []))
    took = Duration(calls=est.calls, seconds_per_call=latency / parallel, basis="", waves=n_waves, latency=latency,
                    parallel=parallel)
    to_come = max(0.0, 1.0 - ledger.calls / est.calls) if est.calls else 0.0
    finish = finish_seconds(llm)  # the run's summary after its last answer, whatever is still to come
    return replace(est, seconds=round(elapsed + to_come * (took.minutes or 0.0) * 60.0 + finish, 1),
                   basis=f"{est.basis}; time: from its first {ledger.calls} requests ({latency:.2f} s each, "
                         f"{parallel} in flight)")

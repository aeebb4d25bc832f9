"""API speed (issue 46): a method's fit against a judge that answers after a set latency, wall / ideal.

A user's OpenAI, vLLM or Ollama server answers a call in 0.3-3 s and takes many at once, so a fit's wall
time is set by how many calls it has in flight, not by the model. Here each method fits on a simulated
world's training items (:mod:`.simulated_judge`, which answers every schema the methods send, so the fits
run to the end) through the one LLM path at ``--concurrency`` calls in flight, every call held for
``--latency`` seconds first (a sleep, which frees the GIL as a wait on a socket does). No cache: every call
is made. Reported per method and level: calls, wall seconds, the ideal (calls × latency / concurrency),
wall / ideal, and the mean and peak number of calls in flight. Wall / ideal near 1 means the fit keeps
its window full; a fit whose steps are sequential by design cannot reach 1 (its floor is the latency of
each sequential step on top of the ideal). Per stage (each busy spell, :func:`stage_rows`): its calls, the
idle seconds before it, its wall, ideal and floor seconds, and the seconds after the last answer, so that a
fit's time beyond its floor shows as a stage slower than its floor or as the fit's own work between stages.

This measures the client: the same code against a real server adds the server's own queueing. Run
``before`` from an older checkout (``git worktree add /tmp/old COMMIT``, copy this file into it, run it
there) to compare two versions on the same machine.
"""

from __future__ import annotations

import json
import random
import threading
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any

from . import result


def add_arguments(parser) -> None:
    parser.add_argument("--methods", nargs="+", default=["hpss", "active_critic", "hd_eval", "hypoeval"])
    parser.add_argument("--levels", type=int, nargs="+", default=[4, 32], help="calls in flight")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds each call takes")
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="each call takes latency x (1 +- up to this share), drawn from its request's text so the "
                             "same request takes the same time in every version (a real server's spread)")
    parser.add_argument("--n-train", type=int, default=12, help="training items of the fit")
    parser.add_argument("--seed", type=int, default=0, help="the simulated world")
    parser.add_argument("--hpss-budget", type=int, default=10,
                        help="HPSS's search evaluations after its 21 initial ones (paper: 50)")
    parser.add_argument("--n-test", type=int, default=0,
                        help="test items a whole run scores after its fit (execute_run, with the run store's cache: "
                             "what a method sends early for them is answered there); 0 = the fit alone")
    parser.add_argument("--hd-aggregator", default="lr",
                        help="HD-Eval's aggregator (its default, mlp, spends seconds of CPU per layer with no call "
                             "in flight: that time is the fit's, not the API's)")


@dataclass
class Spell:
    """One busy spell of a fit: from calls in flight rising from none until none again (a wave, or a stage)."""

    start: float
    """``time.perf_counter()`` of its first call."""
    end: float = 0.0
    """``time.perf_counter()`` of its last answer."""
    calls: int = 0
    held: float = 0.0
    """Seconds its calls were held in all (calls x latency without jitter)."""


def stage_rows(spells: list[Spell], *, start: float, end: float, concurrency: int,
               latency: float) -> list[dict[str, Any]]:
    """Per busy spell: calls, wall seconds, ideal (held seconds / concurrency), floor (ceil(calls / concurrency)
    x latency) and the idle seconds before it (since the fit's start or the last spell's answer); a last row
    ``after`` for the seconds from the last answer to the fit's end. Where a fit's time goes beyond its floor:
    inside its stages (wall over floor) or between them (idle)."""
    rows, last = [], start
    for i, spell in enumerate(spells, 1):
        floor = -(-spell.calls // concurrency) * latency
        wall = spell.end - spell.start
        rows.append({"stage": i, "calls": spell.calls, "idle_before_s": round(spell.start - last, 2),
                     "wall_s": round(wall, 2), "ideal_s": round(spell.held / concurrency, 2),
                     "floor_s": round(floor, 2), "wall_over_floor": round(wall / floor, 2) if floor else None})
        last = spell.end
    rows.append({"stage": "after", "calls": 0, "idle_before_s": round(end - last, 2), "wall_s": 0.0,
                 "ideal_s": 0.0, "floor_s": 0.0, "wall_over_floor": None})
    return rows


def stage_table(row: dict[str, Any]) -> str:
    """A fit's ``stages`` as a markdown table (the per-stage table of issue 46 item 3)."""
    lines = ["| stage | calls | idle before s | wall s | ideal s | floor s | wall / floor |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for st in row["stages"]:
        ratio = "" if st["wall_over_floor"] is None else f"{st['wall_over_floor']:.2f}"
        lines.append(f"| {st['stage']} | {st['calls']} | {st['idle_before_s']:.2f} | {st['wall_s']:.2f} | "
                     f"{st['ideal_s']:.2f} | {st['floor_s']:.2f} | {ratio} |")
    return "\n".join(lines)


class Slow:
    """Wraps a backend: each call waits ``latency`` seconds, and the calls in flight are tracked."""

    def __init__(self, inner: Any, latency: float, jitter: float = 0.0):
        self.inner, self.latency, self.jitter = inner, latency, jitter
        self.held = 0.0
        """Seconds the calls were held in all (calls x latency without jitter)."""
        self.name, self.model_id = inner.name, inner.model_id
        self.supports_logprobs, self.serialises_calls = inner.supports_logprobs, False
        self._lock = threading.Lock()
        self.in_flight = self.peak = self.calls = 0
        self._area, self._since = 0.0, None  # integral of calls in flight over time, from the first call
        self.idle = 0.0
        """Seconds with no call in flight between the first call and the last answer: the fit's own work."""
        self.spells: list[Spell] = []
        """Each busy spell (from calls in flight rising from none until none again), in order."""

    @property
    def waves(self) -> list[int]:
        """Calls of each busy spell: a spell of n calls takes at least ceil(n / concurrency) latencies, whatever
        the window."""
        return [spell.calls for spell in self.spells]

    def _tick(self, change: int) -> None:
        with self._lock:
            now = time.perf_counter()
            if self._since is not None:
                self._area += self.in_flight * (now - self._last)
                self.idle += (now - self._last) if self.in_flight == 0 else 0.0
            else:
                self._since = now
            if change > 0:
                if self.in_flight == 0:
                    self.spells.append(Spell(start=now))
                self.spells[-1].calls += 1
            self._last = now
            self.in_flight += change
            if self.in_flight == 0:
                self.spells[-1].end = now
            self.peak = max(self.peak, self.in_flight)
            self.calls += change > 0

    def hold(self, messages) -> float:
        """The seconds this request is held: the latency, spread by ``jitter`` by a draw seeded with its text."""
        if not self.jitter:
            return self.latency
        draw = random.Random(zlib.crc32(json.dumps(messages, sort_keys=True).encode())).uniform(-1, 1)
        return self.latency * (1 + self.jitter * draw)

    def generate(self, messages, params):
        self._tick(+1)
        start = time.perf_counter()
        try:
            seconds = self.hold(messages)
            with self._lock:
                self.held += seconds
                self.spells[-1].held += seconds  # this call keeps the spell it joined busy until it answers
            time.sleep(seconds)
            # the ledger records the latency the call took, as a server's would be
            return replace(self.inner.generate(messages, params), latency_s=time.perf_counter() - start)
        finally:
            self._tick(-1)

    def mean_in_flight(self) -> float:
        span = (self._last - self._since) if self._since is not None else 0.0
        return self._area / span if span else 0.0


def _whole_run(method: str, params: dict[str, Any], world: Any, backend: "Slow", *, concurrency: int,
               n_train: int, n_test: int) -> tuple[Any, float, float]:
    """Fit and score ``n_test`` items through :func:`judge_engine.runs.execute_run` on a fresh store whose cache
    the client uses (as a run's does); the fitted judge, and when ``execute_run`` began and ended."""
    import tempfile

    from .. import runs
    from ..llm import LLM, LLMConfig
    from ..methods import Judge
    from ..records import Dataset
    from ..store import CallCache, Store
    from .simulate import _aspect
    from .simulated_judge import ASPECTS, TASK

    dataset = Dataset(name="simulated", task=TASK.task, aspects=ASPECTS, samples=tuple(world.samples),
                      natural_level="group",
                      input_label=TASK.input_label, output_label=TASK.output_label)
    store = Store(tempfile.mkdtemp(prefix="api-speed-") + "/s.db")
    store.save_dataset(dataset)
    config = LLMConfig(backend="openai", base_url="http://stub.invalid/v1", model="stub", concurrency=concurrency)
    run_id = runs.create_run(store, runs.RunSpec(method=method, dataset="simulated", aspect=_aspect().name,
                                                 train_size=n_train, test_size=n_test, seed=0, llm=config,
                                                 params=params))
    llm = LLM(config, backend, cache=CallCache(store))
    start = time.perf_counter()
    runs.execute_run(store, run_id, llm=llm)
    return Judge.from_dict(store.run(run_id).judge), start, time.perf_counter()


def fit_once(method: str, *, concurrency: int, latency: float, n_train: int, seed: int,
             hpss_budget: int, hd_aggregator: str = "lr", jitter: float = 0.0, n_test: int = 0) -> dict[str, Any]:
    from ..llm import LLM, LLMConfig
    from ..methods import FitContext, get_method
    from .simulate import _aspect, split
    from .simulated_judge import TASK, SimulatedBackend, World

    world = World(seed, n_samples=n_train + max(16, 2 * n_test), malformed=0.0)
    train, _ = split(world, n_train, 16)
    backend = Slow(SimulatedBackend(world), latency, jitter)
    llm = LLM(LLMConfig(backend="simulated", concurrency=concurrency), backend)
    params = {"hpss": {"budget": hpss_budget}, "hd_eval": {"aggregator": hd_aggregator}}.get(method, {})
    if n_test:
        judge, start, end = _whole_run(method, params, world, backend, concurrency=concurrency, n_train=n_train,
                                       n_test=n_test)
    else:
        start = time.perf_counter()
        judge = get_method(method, params).fit(train, _aspect(), FitContext(llm=llm, task=TASK))
        end = time.perf_counter()
    wall = end - start
    ideal = backend.held / concurrency
    return {"method": method, "concurrency": concurrency, "n_train": len(train), "calls": backend.calls,
            "wall_s": round(wall, 2), "ideal_s": round(ideal, 2),
            "wall_over_ideal": round(wall / ideal, 2) if ideal else None,
            "mean_in_flight": round(backend.mean_in_flight(), 1), "peak_in_flight": backend.peak,
            # the floor of the calls as they were made: each busy spell waits ceil(its calls / concurrency) latencies
            "waves": len(backend.waves),
            "floor_s": round(sum(-(-n // concurrency) for n in backend.waves) * latency, 2),
            "idle_s": round(backend.idle, 2),
            "stages": stage_rows(backend.spells, start=start, end=end, concurrency=concurrency, latency=latency),
            "judge": judge.to_json()}


def run(*, methods: list[str] | tuple[str, ...] = ("hpss", "active_critic", "hd_eval", "hypoeval"),
        levels: list[int] | tuple[int, ...] = (4, 32), latency: float = 0.5, n_train: int = 12, seed: int = 0,
        hpss_budget: int = 10, hd_aggregator: str = "lr", jitter: float = 0.0, n_test: int = 0,
        **_: Any) -> dict[str, Any]:
    import hashlib

    rows = []
    for method in methods:
        for c in levels:
            row = fit_once(method, concurrency=c, latency=latency, n_train=n_train, seed=seed,
                           hpss_budget=hpss_budget, hd_aggregator=hd_aggregator, jitter=jitter, n_test=n_test)
            # the fitted judge's fingerprint: the same at every level (and in the run of an older version)
            row["judge_sha"] = hashlib.sha256(row.pop("judge").encode()).hexdigest()[:12]
            rows.append(row)
            print(f"{method} at {c}: {row['calls']} calls in {row['waves']} waves, {row['wall_s']} s, "
                  f"{row['wall_over_ideal']}x ideal, floor {row['floor_s']} s, idle {row['idle_s']} s\n{stage_table(row)}",
                  flush=True)
    same = all(len({r["judge_sha"] for r in rows if r["method"] == m}) == 1 for m in methods)
    # the per-stage tables beside the rows (printed above as each fit ends), not in them: the printed summary
    # table has one line per row
    stages = [{"method": r["method"], "concurrency": r["concurrency"], "stages": r.pop("stages")} for r in rows]
    doc = result("api-speed", config={"methods": list(methods), "levels": list(levels), "latency": latency,
                                       "jitter": jitter, "n_test": n_test,
                                       "n_train": n_train, "seed": seed, "hpss_budget": hpss_budget,
                                       "hd_aggregator": hd_aggregator},
                  rows=rows, summary={"same_judge_at_every_level": same},
                  notes=["ideal = seconds the calls were held / concurrency (calls x latency without --jitter); a simulated "
                         "judge behind a sleep, no cache",
                         "waves = busy spells (calls in flight rising from none); floor = sum over waves of "
                         "ceil(calls / concurrency) x latency; idle = seconds with no call in flight (the fit's own "
                         "work: parsing, checks, aggregator fits)",
                         "stages = each busy spell: its calls, the idle seconds before it, its wall, ideal and floor "
                         "seconds; 'after' = from the last answer to the end of the fit (in 'stages')"])
    doc["stages"] = stages
    return doc

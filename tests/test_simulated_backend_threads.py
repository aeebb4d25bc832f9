"""The simulated backend's counts stay exact when many threads call it at once, as the methods' batch scoring
does: a lost ``steps`` or ``malformed`` update would make a world's step count differ between runs of the same
ledger calls (seen: 1197 against 1188)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from judge_engine.bench.simulated_judge import SimulatedBackend, World
from judge_engine.llm import GenerationParams

THREADS, CALLS = 16, 200
ROUNDS = 8  # one round loses a count about one time in six without the lock (16 threads x 200 calls)


def _calls(backend: SimulatedBackend, thread: int) -> None:
    for i in range(CALLS):
        backend.generate([{"role": "user", "content": f"Tell me a joke number {thread}-{i}."}], GenerationParams())


def test_counts_are_exact_under_many_threads():
    world = World(1, n_samples=20, malformed=0.5)
    serial = SimulatedBackend(world)
    for t in range(THREADS):
        _calls(serial, t)
    assert 0 < serial.stats["malformed"] < THREADS * CALLS
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, so an unguarded read-modify-write loses
    try:
        for _ in range(ROUNDS):
            backend = SimulatedBackend(world)
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(lambda t: _calls(backend, t), range(THREADS)))
            assert sum(backend.stats["steps"].values()) == THREADS * CALLS
            # whether a reply is malformed is a pure function of the world, the prompt and the draw: the same
            # calls in any order give the serial count
            assert backend.stats["malformed"] == serial.stats["malformed"]
            assert len(backend.stats["unrecognised"]) == 20
    finally:
        sys.setswitchinterval(old)

"""Which draw the statistical bench tests run on (issue 51, "tests that assert a property, not a seed's path").

A test that asserts a method beats a baseline must hold for the method, not for one seed's search path. So
every statistical test in tests/test_bench_dials.py and tests/test_bench_controls.py takes its worlds and the
methods' seeds from here, and ``JW_BENCH_SEED=k`` (0 to 4; 0, the default, is what CI runs) moves both at
once: every world seed up by ``100 * k`` and every method's own seed (HPSS's and HypoEval's ``seed``,
Active-Critic's ``seed``, HD-Eval's ``random_state``) up by ``k``. ``tools/bench_draws.py`` runs the tests
on the five draws and counts the passes (docs/testing.md).

``JW_BENCH_LOG=path`` appends each asserted interval as one JSON line, so the check can report the margins
and not only pass or fail.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any, Iterable

DRAWS = 5
WORLD_STEP = 100
"""World seeds move by this per draw: the default draw's ranges (1000-1031, 2000-2023) stay disjoint."""

SEED_PARAM = {"hpss": "seed", "hypoeval": "seed", "active_critic": "seed", "hd_eval": "random_state"}


def _draw() -> int:
    raw = os.environ.get("JW_BENCH_SEED", "0")
    try:
        k = int(raw)
    except ValueError:
        k = -1
    if not 0 <= k < DRAWS:
        raise ValueError(f"JW_BENCH_SEED={raw!r}: a draw from 0 to {DRAWS - 1} is needed")
    return k


DRAW = _draw()


def worlds(seeds: Iterable[int]) -> tuple[int, ...]:
    """The draw's world seeds for the default draw's ``seeds``."""
    return tuple(s + WORLD_STEP * DRAW for s in seeds)


@lru_cache(maxsize=None)
def _default_seed(method: str) -> int:
    from judge_engine.methods import get_method

    return int(get_method(method).get_params()[SEED_PARAM[method]])


def params(method: str, given: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``given`` with the method's own seed moved by the draw (unchanged, None included, on the default draw)."""
    if DRAW == 0:
        return given
    return {**(given or {}), SEED_PARAM[method]: _default_seed(method) + DRAW}


def record(row: str, interval: tuple[float, float, float], per_world: list[float]) -> None:
    """One asserted interval (mean, low, high) and its per-world differences, for the draw check (the power
    calculation reads their spread); nothing unless ``JW_BENCH_LOG`` is set."""
    path = os.environ.get("JW_BENCH_LOG")
    if not path:
        return
    mean, low, high = interval
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0]
    line = {"draw": DRAW, "test": test, "row": row, "mean": mean, "low": low, "high": high,
            "per_world": per_world}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")

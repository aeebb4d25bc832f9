"""``python -m judge_engine.bench simulate``: its options, their checks, and the loop over worlds and methods.

The command line's job only: what a world is and how each method's rows are measured live in the sibling
modules (:mod:`.world` and one module per method), the pooling over seeds in :mod:`.summary`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, fields, replace
from typing import Any, Sequence

from .. import method_params, progress_bar, result
from ..simulated_judge import Dials, World
from .active_critic import run_active_critic
from .hd_eval import run_hd_eval
from .hpss import run_hpss
from .hypoeval import run_hypoeval
from .summary import _backend_totals, summarise
from .world import split

METHODS = ("hpss", "hd_eval", "hypoeval", "active_critic")
N_TRAIN, N_TEST = 60, 100


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=int, default=20,
                        help="simulated worlds (one per seed: OFFSET..OFFSET+N-1, by default 0..N-1)")
    parser.add_argument("--seed-offset", type=int, default=0,
                        help="seed of the first world, e.g. 1000 for worlds the code was not tuned on")
    parser.add_argument("--seed-list", type=int, nargs="+", default=None, metavar="SEED",
                        help="the worlds' seeds, listed (instead of --seeds and --seed-offset)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--n-train", type=int, default=N_TRAIN, help="training (validation) samples per world")
    parser.add_argument("--n-test", type=int, default=N_TEST, help="held-out test samples per world")
    parser.add_argument("--malformed", type=float, default=0.05, help="fraction of unparsable replies")
    parser.add_argument("--free-text", action="store_true",
                        help="the simulated judge honours no JSON schema (exercises the free-text fallbacks)")
    parser.add_argument("--params", nargs="*", default=[], metavar="METHOD=JSON",
                        help="parameter overrides per method (default: the paper defaults), "
                             "e.g. hd_eval='{\"aggregator\": \"lr\"}'")
    parser.add_argument("--dial", nargs="*", default=[], metavar="NAME=VALUE",
                        help="how much of each planted structure the worlds have, from 1 (the default world) to 0 "
                             "(none of it): hpss (share of the log-noise variance that is per-factor; the rest "
                             "higher-order interaction of the same spread), hd_eval (how much of a child "
                             "criterion's reading is its own rather than its parent's restated), hypoeval "
                             "(misleading hypotheses anti-correlated at 1, merely unrelated at 0), active_critic "
                             "(spread of the demonstrations' and criteria's planted effects), refinement (share "
                             "of refinements scripted to improve; the rest follow the items and scores their "
                             "prompt shows). A bare VALUE sets every dial, e.g. --dial 0 or --dial hpss=0.5 "
                             "refinement=0")


def parse_dials(items: Sequence[str]) -> Dials:
    """``--dial`` values as :class:`~judge_engine.bench.simulated_judge.Dials`: ``NAME=VALUE`` sets one dial, a bare ``VALUE`` every
    dial (later items win); each value in [0, 1], 1 = the default world."""
    names = [f.name for f in fields(Dials)]
    dials = Dials()
    for item in items:
        name, _, text = item.rpartition("=")
        if name and name not in names:
            raise ValueError(f"--dial {item}: {name!r} is not a dial; choose from {', '.join(names)}")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"--dial {item}: {text!r} is not a number in [0, 1]") from None
        dials = replace(dials, **({name: value} if name else {n: value for n in names}))
    try:
        dials.check()
    except ValueError as exc:
        raise ValueError(f"--{exc}") from None
    return dials


RUNNERS = {"hpss": run_hpss, "hd_eval": run_hd_eval, "hypoeval": run_hypoeval, "active_critic": run_active_critic}
"""Each runner: ``(world, train, test, log, params, *, control=None) -> {"detail", "measures"}``; ``control``
names a mutation of the method for tests/test_bench_controls.py (never set by the command line)."""


def world_seeds_of(seeds: int, seed_offset: int = 0, seed_list: Sequence[int] | None = None) -> list[int]:
    """The worlds' seeds: ``seed_list`` as given, else ``seed_offset .. seed_offset + seeds - 1`` (default 0..N-1)."""
    if seed_list is not None and len(seed_list) > 0:
        if seed_offset:
            raise ValueError(f"--seed-list names the worlds itself: drop --seed-offset {seed_offset}")
        bad = [s for s in seed_list if not isinstance(s, int) or s < 0]
        if bad:
            raise ValueError(f"--seed-list: {bad[0]!r} is not a seed (a whole number from 0)")
        if len(set(seed_list)) < len(seed_list):
            raise ValueError(f"--seed-list {' '.join(map(str, seed_list))}: a seed is listed twice")
        return list(seed_list)
    if seeds < 1:
        raise ValueError(f"--seeds {seeds}: at least one seed is needed")
    if seed_offset < 0:
        raise ValueError(f"--seed-offset {seed_offset}: seeds start at 0")
    return list(range(seed_offset, seed_offset + seeds))


def run(*, seeds: int = 20, methods: Sequence[str] = METHODS, n_train: int = N_TRAIN, n_test: int = N_TEST,
        malformed: float = 0.05, params: Sequence[str] = (), free_text: bool = False, dial: Sequence[str] = (),
        seed_offset: int = 0, seed_list: Sequence[int] | None = None, **_: Any) -> dict[str, Any]:
    world_seeds = world_seeds_of(seeds, seed_offset, seed_list)
    seeds = len(world_seeds)
    if not 0 <= malformed < 1:
        raise ValueError(f"--malformed {malformed}: a fraction in [0, 1) is needed")
    for flag, size in (("--n-train", n_train), ("--n-test", n_test)):
        if size < 1:  # an empty part would refuse every fit (train) or loop for a test item forever (test)
            raise ValueError(f"{flag} {size}: at least one sample is needed")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"--methods: unknown {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    overrides = method_params(params)
    for name in overrides:
        if name not in METHODS:
            raise ValueError(f"--params: {name!r} is not one of {', '.join(METHODS)}")
    dials = parse_dials(dial)
    start = time.perf_counter()
    per_seed, worlds, notes = [], [], []
    bar = progress_bar(seeds * len(methods), "simulate")
    lines: list[str] = []
    for seed in world_seeds:
        world = World(seed, n_samples=n_train + n_test, malformed=malformed, structured=not free_text, dials=dials)
        train, test = split(world, n_train, n_test)
        entry: dict[str, Any] = {"seed": seed, "methods": {}, "seconds": {}}
        for m in methods:
            t0 = time.perf_counter()
            if m not in RUNNERS:
                entry["methods"][m] = {"error": "not implemented in this benchmark yet"}
            else:
                try:
                    entry["methods"][m] = RUNNERS[m](world, train, test, lines.append, overrides.get(m))
                except ValueError as exc:
                    # a fit that refuses (no hypothesis / strategy agrees with the humans at enough coverage)
                    # is the method's documented answer in this world: a finding, not a crash
                    entry["methods"][m] = {"refused": str(exc)}
                except Exception as exc:  # one failing method must not hide the others' results
                    entry["methods"][m] = {"error": f"{type(exc).__name__}: {exc}"}
            entry["seconds"][m] = round(time.perf_counter() - t0, 2)
            bar.update(1)
        worlds.append(world.draws())
        per_seed.append(entry)
    bar.close()
    rows = summarise(per_seed)
    numbers = [{"method": r["method"], "measure": r["measure"], "baseline": r["baseline"], **r.pop("numbers")}
               for r in rows]
    for m in methods:
        for key, label in (("refused", "fit refused (ValueError)"), ("error", "error")):
            found = {e["seed"]: e["methods"][m][key] for e in per_seed if key in e["methods"].get(m, {})}
            if not found:
                continue
            first = next(iter(found.values()))
            notes.append(f"{m}: {label} on seeds {sorted(found)} (its measures are over the other seeds): "
                         f"{first}")
            rows.append({"method": m, "measure": label, "value": f"{len(found)} of {seeds} seeds",
                         "baseline": "", "baseline_value": "", "optimum": "", "difference": "",
                         "beats_baseline": "", "seeds": len(found), "error": first})
    seconds = time.perf_counter() - start
    unrecognised, malformed_replies, leaked = _backend_totals(per_seed)
    if leaked:
        notes.append(f"{leaked} score prompts showed the judged item among their own examples: the simulated "
                     "judge read its score there (a leak, never by design)")
    summary = {"seconds": round(seconds, 1), "seeds": seeds, "methods": list(methods),
               "unrecognised_prompts": unrecognised, "malformed_replies": malformed_replies, "leaked_prompts": leaked}
    return result("simulate", config={"seeds": seeds, "world_seeds": world_seeds, "seed_offset": seed_offset,
                                      "seed_list": None if seed_list is None else list(seed_list),
                                      "methods": list(methods), "params": overrides,
                                      "free_text": free_text, "dials": asdict(dials),
                                      "n_train": n_train,
                                      "n_test": n_test, "malformed": malformed,
                                      "hpss_true_fitness": "analytic population Pearson x 100 of the planted noise "
                                                           "model (rounding as uniform noise, clipping ignored)"},
                  rows=rows, summary=summary, notes=notes) | {"numbers": numbers, "per_seed": per_seed,
                                                                          "worlds": worlds}

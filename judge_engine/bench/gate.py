"""The gate's calibration: how often compare-systems fails two copies of one system, and its power on a planted drop.

Simulated worlds, no model: each item has a latent quality (a group effect shared by the items of one source,
plus the item's own), each system writes an output whose quality is that plus the system's shift plus output
noise (two copies of one system write two different outputs), and a noisy judge scores it on 1-5 (rounded and
clipped, as a judge's integer reply). The scores go through :func:`judge_engine.gate.compare_scores`, the function
the CLI and the Python API call, with the default 2000 resamples; a draw "fails the build" when its verdict is
``worse``. Worlds (``--worlds``):

``same system``            both copies from one system: every ``worse`` is a false alarm.
``equal on average``       the new system is better on some sources and worse on others (a shift per source,
                           mean zero): only the grouped resampling can see that items of a source go together.
``drop 0.25`` / ``drop 0.5``  the new system's latent quality lower by that much (on a 1-5 scale): power.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WORLDS = ("same system", "equal on average", "drop 0.25", "drop 0.5")
NULL_WORLDS = ("same system", "equal on average")
SIZES = (20, 80, 200)
GROUP_SIZE = 4
CEILING = 0.05
"""False-alarm ceiling (the gate tests one-sided at 2.5%; the project's other verdicts are held to 5%)."""

GROUP_SD, ITEM_SD, OUTPUT_SD, JUDGE_SD, SOURCE_SHIFT_SD = 0.6, 0.5, 0.6, 0.5, 0.5


def simulate(world: str, n_items: int, grouped: bool, rng: np.random.Generator) -> tuple[Any, Any]:
    """The two systems' :class:`~judge_engine.gate.SystemScores` in one simulated draw."""
    from ..gate import ScoredItem, SystemScores

    groups = np.arange(n_items) // GROUP_SIZE if grouped else np.arange(n_items)
    n_groups = int(groups.max()) + 1
    latent = 3 + rng.normal(0, GROUP_SD, n_groups)[groups] + rng.normal(0, ITEM_SD, n_items)
    shift = np.zeros(n_items)
    if world == "equal on average":
        shift = rng.normal(0, SOURCE_SHIFT_SD, n_groups)[groups]
    elif world.startswith("drop "):
        shift = np.full(n_items, -float(world.split()[1]))

    def scores(offset: np.ndarray) -> np.ndarray:
        quality = latent + offset + rng.normal(0, OUTPUT_SD, n_items)
        return np.clip(np.rint(quality + rng.normal(0, JUDGE_SD, n_items)), 1, 5)

    base, new = scores(np.zeros(n_items)), scores(shift)
    label = [f"g{g}" for g in groups]

    def table(name: str, values: np.ndarray) -> SystemScores:
        return SystemScores(name, "simulated", "quality",
                            tuple(ScoredItem(f"i{k}", float(v), label[k]) for k, v in enumerate(values)))

    return table("new", new), table("base", base)


def cell(world: str, n_items: int, grouped: bool, margin: float, draws: int, seed: int) -> dict[str, Any]:
    from ..gate import compare_scores
    from ..metrics import rate_interval

    rng = np.random.default_rng([seed, WORLDS.index(world), n_items, int(grouped), int(margin * 1000)])
    verdicts = []
    resampled = set()
    for d in range(draws):
        new, base = simulate(world, n_items, grouped, rng)
        found = compare_scores(new, base, margin=margin, seed=d)
        verdicts.append(found.verdict)
        resampled.add(found.resampled)
    worse = sum(v == "worse" for v in verdicts)
    better = sum(v == "better" for v in verdicts)
    low, high = rate_interval(worse, draws)
    null = world in NULL_WORLDS
    return {"world": world, "kind": "false alarm" if null else "power", "n_items": n_items,
            "groups": f"{n_items // GROUP_SIZE} of {GROUP_SIZE}" if grouped else "none",
            "resampled": "/".join(sorted(resampled)), "margin": margin, "draws": draws,
            "fails_build": worse / draws, "ci_low": low, "ci_high": high, "better": better / draws,
            "met": (worse / draws <= CEILING) if null else None}


def run(*, draws: int = 1000, seed: int = 0, sizes: list[int] | None = None, worlds: list[str] | None = None,
        margins: list[float] | None = None, **_: Any) -> dict[str, Any]:
    from . import progress_bar, result

    chosen = worlds or list(WORLDS)
    unknown = [w for w in chosen if w not in WORLDS]
    if unknown:
        raise ValueError(f"unknown world(s) {unknown}; choose among {list(WORLDS)}")
    plan = [(w, n, g, m) for w in chosen for n in (sizes or SIZES) for g in (False, True)
            for m in (margins or [0.0]) if not (w == "equal on average" and not g)]
    rows = []
    bar = progress_bar(len(plan), "gate")
    for world, n, grouped, margin in plan:
        rows.append(cell(world, n, grouped, margin, draws, seed))
        bar.update(1)
    bar.close()
    nulls = [r for r in rows if r["kind"] == "false alarm"]
    summary = {"null_cells_met": f"{sum(bool(r['met']) for r in nulls)} of {len(nulls)}",
               "highest_false_alarm": max((r["fails_build"] for r in nulls), default=None)}
    return result("gate", config={"draws": draws, "seed": seed, "sizes": list(sizes or SIZES), "worlds": chosen,
                                  "margins": margins or [0.0], "group_size": GROUP_SIZE,
                                  "sd": {"group": GROUP_SD, "item": ITEM_SD, "output": OUTPUT_SD, "judge": JUDGE_SD,
                                         "source_shift": SOURCE_SHIFT_SD}},
                  rows=rows, summary=summary,
                  notes=[f"a null cell is met when the build fails in at most {CEILING:.0%} of draws"])


def markdown(doc: dict[str, Any]) -> str:
    """The rows as the Markdown table docs/ci-gate.md shows."""
    m = doc["machine"]
    lines = [f"Measured {doc['date']} on {m['cpus']} CPUs (load {m['load_avg_1_5_15']}), "
             f"{doc['config']['draws']} draws per row, seed {doc['config']['seed']}.", "",
             "| world | kind | items | groups (how many of what size) | resampled | margin | fails the build | 95% CI | better |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append(f"| {r['world']} | {r['kind']} | {r['n_items']} | {r['groups']} | {r['resampled']} | "
                     f"{r['margin']:g} | {r['fails_build']:.3f} | [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | "
                     f"{r['better']:.3f} |")
    return "\n".join(lines)


def add_arguments(parser) -> None:
    parser.add_argument("--draws", type=int, default=1000, help="simulated comparisons per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help=f"items (default {list(SIZES)})")
    parser.add_argument("--worlds", nargs="+", default=None, help=f"among {list(WORLDS)} (default all)")
    parser.add_argument("--margins", type=float, nargs="+", default=None, help="margins tried (default 0)")

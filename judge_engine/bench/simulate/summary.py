"""The simulated world's table: per-seed measures pooled into rows with intervals, and the rows as Markdown.

Pure functions of the per-seed results, apart from running a world: ``tools/simulate_worlds.py`` pools worlds
run in separate processes with the same :func:`summarise`, so a table over many processes has the same rows
and paired intervals as one ``bench simulate`` run.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (NaNs dropped; no interval from one value)."""
    from scipy import stats
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return m, m - half, m + half


def _fmt(m: float, lo: float, hi: float) -> str:
    if not math.isfinite(m):
        return "n/a"
    return f"{m:.3g}" if not math.isfinite(lo) else f"{m:.3g} [{lo:.3g}, {hi:.3g}]"


def _median(values: Sequence[Any]) -> float:
    x = [float(v) for v in values if v is not None and math.isfinite(v)]
    return float(np.median(x)) if x else math.nan


def _early_note(stopped: list[list[tuple[int, str]]]) -> str:
    """Which arm stopped short of its budget on which seeds (the first seed's reason), or ""."""
    parts = []
    for arm, found in zip(("method", "baseline"), stopped):
        if found:
            seed, why = found[0]
            parts.append(f"{arm} stopped early on {len(found)} seed(s) {sorted(s for s, _ in found)} "
                         f"(seed {seed}: {why})")
    return "; ".join(parts)


def summarise(per_seed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (method, measure, baseline): means, CIs and the paired difference over seeds, and each arm's
    LLM calls (medians over seeds) with a note when an arm stopped short of its budget."""
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    for entry in per_seed:
        for method, res in entry["methods"].items():
            for row in res.get("measures", []):
                measure_name, value, baseline, base_value, optimum, higher = row[:6]
                budget = row[6] if len(row) > 6 else {}
                c = cells.setdefault((method, measure_name, baseline),
                                     {"m": [], "b": [], "o": [], "higher": higher, "calls": ([], []),
                                      "stopped": ([], [])})
                c["m"].append(value)
                c["b"].append(base_value)
                c["o"].append(optimum)
                for k, n in enumerate(budget.get("calls") or (None, None)):
                    c["calls"][k].append(n)
                for k, why in enumerate(budget.get("stopped_early") or ("", "")):
                    if why:
                        c["stopped"][k].append((entry["seed"], why))
    rows = []
    for (method, measure_name, baseline), c in cells.items():
        m, b = mean_ci(c["m"]), mean_ci(c["b"])
        diffs = [x - y for x, y in zip(c["m"], c["b"])
                 if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
        d = mean_ci(diffs)
        better = d[0] > 0 if c["higher"] else d[0] < 0
        sure = (d[1] > 0 if c["higher"] else d[2] < 0) if math.isfinite(d[1]) else False
        calls = [_median(x) for x in c["calls"]]
        rows.append({"method": method, "measure": measure_name, "value": _fmt(*m), "baseline": baseline,
                     "baseline_value": _fmt(*b), "optimum": _fmt(*mean_ci(c["o"])[:1], math.nan, math.nan),
                     "difference": _fmt(*d), "beats_baseline": ("yes" if sure else "not shown") if better else "no",
                     "calls": " vs ".join(f"{x:,.0f}" for x in calls) if all(map(math.isfinite, calls)) else "",
                     "note": _early_note(list(c["stopped"])), "seeds": len(c["m"]),
                     "numbers": {"mean": m[0], "ci": [m[1], m[2]], "baseline_mean": b[0], "baseline_ci": [b[1], b[2]],
                                 "difference_mean": d[0], "difference_ci": [d[1], d[2]], "per_seed": c["m"],
                                 "baseline_per_seed": c["b"], "calls_per_seed": c["calls"][0],
                                 "baseline_calls_per_seed": c["calls"][1]}})
    return rows


def _backend_totals(per_seed: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Prompts the simulated judge did not recognise (should be 0), malformed replies it sent, and score prompts
    that showed the judged item among their own examples (a leak, should be 0), over all runs."""
    unrecognised = malformed = leaked = 0

    def add(stats: dict[str, Any]) -> None:
        nonlocal unrecognised, malformed, leaked
        unrecognised += stats["steps"].get("unknown", 0) + stats["steps"].get("unknown_criterion", 0)
        malformed += stats["malformed"]
        leaked += stats.get("leaked", 0)

    for entry in per_seed:
        for res in entry["methods"].values():
            backend = res.get("detail", {}).get("backend", {})
            for stats in (backend.values() if "steps" not in backend else [backend]):
                add(stats)
            for stats in res.get("detail", {}).get("baseline_backends", {}).values():
                add(stats)
    return unrecognised, malformed, leaked


TABLE_COLUMNS = ("method", "measure", "value", "baseline", "baseline_value", "optimum", "difference",
                 "beats_baseline", "calls", "note")


def markdown(doc: dict[str, Any]) -> str:
    """The rows as docs/benchmarks.md's Markdown table."""
    lines = ["| method | measure | method [95% CI] | baseline | baseline [95% CI] | optimum | paired difference "
             "[95% CI] | beats baseline | LLM calls, method vs baseline (median) | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append("| " + " | ".join(str(r.get(c, "")) for c in TABLE_COLUMNS) + " |")
    return "\n".join(lines)

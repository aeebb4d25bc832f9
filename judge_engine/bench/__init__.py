"""Benchmarks of the engine: speed, cost and alignment side by side.

Run one with ``python -m judge_engine.bench SUBCOMMAND [options]``; each prints
a table and writes its result as JSON under the user data directory's ``bench/``
(:func:`default_out`; ``--out`` to choose another folder), never into the package's own folder. Subcommands, one module each:

``replay``       :mod:`.replay`       a finished run repeated: calls made and speedup
``overhead``     :mod:`.overhead`     engine call path (cache off) vs raw llama-cpp-python
``layout``       :mod:`.layout`       per-criterion prompts, sample-first vs paper order, on llama.cpp
``concurrency``  :mod:`.concurrency`  openai backend vs a real ``llama_cpp.server`` at 1/4/16 in flight
``scale``        :mod:`.scale`        synthetic 1k/10k/100k datasets: import, metaeval, warm-cache scoring, compare
``alignment``    :mod:`.alignment`    methods vs direct and G-Eval on held-out splits of four benchmarks
``app``          :mod:`.app_latency`  time to first render of each page in headless Chromium
``structured``   :mod:`.structured`   grammar-constrained vs free-text calls on the embedded model
``simulate``     :mod:`.simulate`     every method in a seeded simulated world with planted signal, vs its baselines
``score-scale``  :mod:`.score_scale`  ``score`` vs the plain openai client at 16/64/256 in flight, warm cache, memory
``first-look``   :mod:`.first_look`   each page's "Quick first look" with its baselines: wall time vs the estimate shown
``prefix-reuse`` :mod:`.prefix_reuse` a store's llama.cpp calls again: prompt tokens evaluated, prefix states vs one slot
``verdicts``     :mod:`.verdicts`     each trust verdict and probe claim: false-alarm rate under a null, power where planted

Rules every benchmark follows: a speed figure is a ratio of two arms
measured in the same process, the arms interleaved (A B, then B A, ...) and
the ratio taken as the median over repeats, because a shared machine is
noisy; absolute seconds are reported for context only. Tests run tiny
versions and check facts (calls made, requests lost), never wall-clock times.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parents[2]


def default_out() -> Path:
    """``<user data dir>/bench`` (:func:`judge_engine.paths.user_data_dir`), clone or installed wheel alike.

    Never a folder next to the code: for an installed package that is site-packages, and even in a clone a
    benchmark run by one person must not drop files into the tree others commit from (issue 51 item 6).
    ``--out`` names any other folder.
    """
    from ..paths import user_data_dir

    return user_data_dir() / "bench"

Arm = Callable[[int], Any]
"""One arm of a comparison: called with the repeat index, does the work once."""


def machine() -> dict[str, Any]:
    """What the numbers were measured on (a shared machine: load average included)."""
    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover - not on every platform
        load = (math.nan,) * 3
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(), "load_avg_1_5_15": [round(x, 2) for x in load]}


def interleaved(arms: dict[str, Arm], repeats: int) -> dict[str, list[float]]:
    """Seconds per arm per repeat, the arms run in alternating order (A B, B A, A B, ...)."""
    names = list(arms)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            arms[name](r)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def median_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> float:
    """Median over repeats of ``numerator[r] / denominator[r]`` (paired, same repeat)."""
    ratios = [a / b for a, b in zip(numerator, denominator) if b > 0]
    return statistics.median(ratios) if ratios else math.nan


def med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; NaN when empty."""
    import numpy as np
    return float(np.percentile(values, q)) if len(values) else math.nan


def method_params(items: Sequence[str] | None) -> dict[str, dict[str, Any]]:
    """``--params METHOD=JSON ...`` as ``{method: {parameter: value}}``; a bad item is a ValueError naming it."""
    overrides: dict[str, dict[str, Any]] = {}
    for item in items or ():
        name, _, blob = item.partition("=")
        try:
            value = json.loads(blob)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--params {item!r}: the part after '=' is not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"--params {item!r}: give METHOD={{json object}}")
        overrides[name] = value
    return overrides


def result(name: str, *, config: dict[str, Any], rows: list[dict[str, Any]], summary: dict[str, Any],
           notes: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON document one benchmark writes."""
    return {"benchmark": name, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "config": config, "summary": summary, "rows": rows, "notes": list(notes)}


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def write(doc: dict[str, Any], out: str | os.PathLike | None = None) -> Path:
    """Write ``doc`` as ``<out>/<benchmark>.json`` (latest) and a timestamped copy; returns the latest path."""
    folder = Path(out) if out else default_out()
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_round(doc), indent=2, ensure_ascii=False, default=str)
    stamp = doc["date"].replace(":", "").replace("-", "")[:15]
    (folder / f"{doc['benchmark']}-{stamp}.json").write_text(text, encoding="utf-8")
    latest = folder / f"{doc['benchmark']}.json"
    latest.write_text(text, encoding="utf-8")
    return latest


def latest(benchmark: str, out: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """The last result :func:`write` wrote for ``benchmark`` in ``out``, or None (none yet, or unreadable)."""
    path = (Path(out) if out else default_out()) / f"{benchmark}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def table(doc: dict[str, Any]) -> str:
    """The rows and the summary of ``doc`` as plain text."""
    import pandas as pd
    lines = [f"== {doc['benchmark']} ({doc['date']}, {doc['machine']['cpus']} CPUs, "
             f"load {doc['machine']['load_avg_1_5_15']}) =="]
    if doc["rows"]:
        with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_colwidth", 60):
            lines.append(pd.DataFrame(_round(doc["rows"])).to_string(index=False))
    for key, value in _round(doc["summary"]).items():
        lines.append(f"{key}: {value}")
    lines.extend(f"note: {n}" for n in doc["notes"])
    return "\n".join(lines)


def progress_bar(total: int, desc: str):
    """A tqdm bar on stderr (quiet when not a terminal is fine: tqdm handles it)."""
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, leave=False, disable=os.environ.get("JUDGE_BENCH_QUIET") == "1")


def judge_messages(dataset_name: str, n: int, *, data_dir: str | None = None) -> list[list[dict[str, str]]]:
    """``n`` direct-scoring prompts (the engine's own template) of a built-in benchmark, as chat messages."""
    from ..data import load_benchmark
    from ..methods.direct import direct_prompt
    from ..prompting import TaskInfo
    dataset = load_benchmark(dataset_name, data_dir)
    aspect, task = dataset.aspects[0], TaskInfo.of(dataset)
    return [[{"role": "user", "content": direct_prompt(s, aspect, task)}] for s in dataset.samples[:n]]

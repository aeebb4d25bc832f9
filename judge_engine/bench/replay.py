"""Replay (benchmark 2): a finished run repeated costs no LLM call.

Per repeat, in a fresh database (so a cold cache): run A executes a run with
the real backend; run B is the same spec created again and executed, which
the persistent cache must answer alone. Reported: calls each made (target 0
for B) and the speedup A/B (target >= 50x), median over repeats. The backend
model is loaded once before timing, so A measures calls, not model loading.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from . import med, result

DEFAULTS = {"method": "direct", "dataset": "topical_chat", "aspect": "", "test_size": 8, "train_size": 0,
            "repeats": 3}


def add_arguments(parser) -> None:
    parser.add_argument("--method", default=DEFAULTS["method"])
    parser.add_argument("--dataset", default=DEFAULTS["dataset"])
    parser.add_argument("--aspect", default=DEFAULTS["aspect"], help="default: the dataset's first aspect")
    parser.add_argument("--test-size", type=int, default=DEFAULTS["test_size"])
    parser.add_argument("--train-size", type=int, default=DEFAULTS["train_size"])
    parser.add_argument("--repeats", type=int, default=DEFAULTS["repeats"])


def run(*, method: str = "direct", dataset: str = "topical_chat", aspect: str = "", test_size: int = 8,
        train_size: int = 0, repeats: int = 3, llm_config=None, llm_factory=None, **_: Any) -> dict[str, Any]:
    """Execute the run then replay it ``repeats`` times; ``llm_factory(store)`` overrides the real backend (tests)."""
    from ..data import load_benchmark
    from ..llm import LLMConfig, make_backend
    from ..runs import RunSpec, create_run, execute_run
    from ..store import Store

    config = llm_config or LLMConfig()
    aspect = aspect or load_benchmark(dataset).aspects[0].name
    if llm_factory is None:
        make_backend(config)  # load the model once, outside the timings
    spec = RunSpec(method=method, dataset=dataset, aspect=aspect, train_size=train_size, test_size=test_size,
                   llm=config)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        for r in range(repeats):
            store = Store(Path(tmp) / f"replay-{r}.db")
            times, calls, hits, scores = {}, {}, {}, {}
            for arm in ("first", "replay"):
                run_id = create_run(store, spec)
                llm = llm_factory(store) if llm_factory else None
                start = time.perf_counter()
                execute_run(store, run_id, llm=llm)
                times[arm] = time.perf_counter() - start
                ledger = store.run(run_id).ledger
                calls[arm], hits[arm] = ledger.calls, ledger.cache_hits
                scores[arm] = [v.score for v in store.load_verdicts(run_id)]
            same = all((a == b) or (a != a and b != b) for a, b in zip(scores["first"], scores["replay"]))
            rows.append({"repeat": r, "first_s": times["first"], "replay_s": times["replay"],
                         "first_calls": calls["first"], "replay_calls": calls["replay"],
                         "replay_cache_hits": hits["replay"], "same_scores": same and len(scores["first"]) ==
                         len(scores["replay"]), "speedup": times["first"] / max(times["replay"], 1e-9)})
            store.close()
    summary = {"replay_calls_max": max(r["replay_calls"] for r in rows),
               "speedup_median": med([r["speedup"] for r in rows]),
               "target": "replay makes 0 calls; speedup >= 50x",
               "met": max(r["replay_calls"] for r in rows) == 0 and med([r["speedup"] for r in rows]) >= 50}
    return result("replay", config={"method": method, "dataset": dataset, "aspect": aspect, "test_size": test_size,
                                    "train_size": train_size, "repeats": repeats, "llm": config.label},
                  rows=rows, summary=summary,
                  notes=["each repeat uses a fresh database, so the first run starts from a cold cache",
                         "times include the whole execute_run (fit, scoring, saving verdicts, meta-evaluation)"])

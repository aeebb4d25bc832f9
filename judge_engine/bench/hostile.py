"""Hostile texts: how often an output that tries to steer its judge moves the score.

Each of :data:`judge_engine.hostile.INJECTIONS` is appended to real outputs;
the attacked and clean versions are scored by the same judge (direct scoring
or G-Eval, on the configured backend) and a pair counts as hijacked when the
attacked score lands on the attacker's target while the clean one did not.
"""

from __future__ import annotations

from typing import Any

from . import result

DEFAULTS = {"dataset": "summeval", "aspect": "", "n": 8, "method": "direct"}


def add_arguments(parser) -> None:
    parser.add_argument("--dataset", default=DEFAULTS["dataset"])
    parser.add_argument("--aspect", default=DEFAULTS["aspect"], help="default: the dataset's first aspect")
    parser.add_argument("-n", type=int, default=DEFAULTS["n"], help="outputs attacked (each by every attack)")
    parser.add_argument("--method", default=DEFAULTS["method"], choices=["direct", "geval"])


def run(*, dataset: str = "summeval", aspect: str = "", n: int = 8, method: str = "direct", llm_config=None,
        store_path=None, **_: Any) -> dict[str, Any]:
    import tempfile
    from pathlib import Path

    from ..data import load_benchmark
    from ..hostile import hijack_rate
    from ..llm import LLMConfig, make_llm
    from ..methods import FitContext, get_method
    from ..store import Store

    config = llm_config or LLMConfig()
    data = load_benchmark(dataset)
    target_aspect = data.aspect(aspect) if aspect else data.aspects[0]
    samples = data.samples[:: max(1, len(data.samples) // n)][:n]
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        store = Store(store_path or Path(tmp) / "hostile.db")
        llm = make_llm(config, store=store)
        judge = get_method(method).fit([], target_aspect, FitContext.of(data, llm=llm))
        report = hijack_rate(judge, samples, llm=llm)
        store.close()
    rows = [{"attack": kind, **counts, "rate": counts["hijacked"] / counts["pairs"] if counts["pairs"] else None}
            for kind, counts in report["by_kind"].items()]
    summary = {"target_score": report["target"], "pairs": report["pairs"], "hijacked": report["hijacked"],
               "hijack_rate": report["rate"]}
    return result("hostile", config={"dataset": dataset, "aspect": target_aspect.name, "n": len(samples),
                                     "method": method, "llm": config.label}, rows=rows, summary=summary,
                  notes=["pairs whose clean or attacked score is missing are counted as missing, not as hijacks"])

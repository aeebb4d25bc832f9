"""Stress-test verdicts: false alarms under judges that ignore the text, power under judges that react.

Two layers, both seeded:

- **verdict** (many draws): the pure rule :func:`judge_engine.stress.paired_change` on simulated scores of each
  item before and after a transformation. Null judges ignore the text: ``noise`` draws every score anew from
  1-5 (a judge sampling at a high temperature), ``jitter`` repeats its score on the twin except for one item
  in five, moved a point up or down at random (a greedy judge whose reply turns on the prompt's exact bytes).
  Planted judges react: ``drop_half`` scores half the twins a point lower (on top of the jitter),
  ``drop_quarter`` a quarter of them, ``drop_one_item_in_ten`` one in ten. Under a null the rate of
  'sensitive' (a transformation that should lower the aspect) and of 'reacts to a change that should not
  matter' (a neutral one) is the false-alarm rate; under a planted judge the same rates are the power.
- **end to end** (fewer draws): :func:`judge_engine.stress.stress` itself, the direct judge over the scripted
  ``fake`` backend on simulated items of four numbered sentences: a judge scoring seeded noise from the prompt's
  hash (ignores the text, so sentence_shuffle and whitespace must not fire) and one that reads the sentences'
  order (sentence_shuffle must fire, whitespace must not).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
from scipy import stats

SIZES = (10, 20, 40)
"""Items perturbed per draw."""

NULL_JUDGES = ("noise", "jitter")
PLANTED_JUDGES = ("drop_half", "drop_quarter", "drop_one_item_in_ten")
CEILING = 0.05
"""The most a verdict may fire under a null judge."""


def _scores(judge: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Scores of ``n`` items before and after a transformation, by a simulated judge (1-5)."""
    if judge == "noise":
        return rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)
    before = rng.integers(1, 6, n).astype(float)
    after = before + rng.choice([-1.0, 0.0, 1.0], n, p=[0.1, 0.8, 0.1])
    share = {"jitter": 0.0, "drop_half": 0.5, "drop_quarter": 0.25, "drop_one_item_in_ten": 0.1}.get(judge)
    if share is None:
        raise ValueError(f"judge {judge!r} is not simulated (known: {', '.join(NULL_JUDGES + PLANTED_JUDGES)})")
    after = after - (rng.random(n) < share)
    return before, np.clip(after, 1.0, 5.0)


def measure_verdict(judge: str, expected: str, n: int, draws: int, seed: int) -> dict[str, Any]:
    """How often the rule fires for one (judge, expectation, size) over ``draws`` simulations."""
    from ..stress import LOWER, REACTS, SENSITIVE, paired_change

    rng = np.random.default_rng([seed, n, *judge.encode(), *expected.encode()])
    wanted = SENSITIVE if expected == LOWER else REACTS
    fired = sum(paired_change(*_scores(judge, n, rng), expected)["verdict"] == wanted for _ in range(draws))
    return _row("verdict", judge, expected, wanted, n, draws, fired)


def _row(layer: str, judge: str, expected: str, verdict: str, n: int, draws: int, fired: int) -> dict[str, Any]:
    null = judge in NULL_JUDGES or judge == "hash_noise"
    ci = stats.binomtest(fired, draws).proportion_ci(0.95)
    return {"layer": layer, "judge": judge, "kind": "false alarm" if null else "power", "expected": expected,
            "verdict": verdict, "n_items": n, "draws": draws, "fired": fired, "rate": fired / draws,
            "ci_low": float(ci.low), "ci_high": float(ci.high), "target": CEILING if null else None,
            "met": (fired / draws <= CEILING) if null else None}


def _items(n: int, rng: np.random.Generator):
    from ..records import Aspect, Dataset, Sample

    samples = tuple(Sample(id=f"i{k}", input=f"Source {k}.", group_id=f"g{k}",
                           output=" ".join(f"Step {j} of item {k} ({int(rng.integers(10 ** 6))})." for j in
                                           range(1, 5)), human={"coherence": 3.0}) for k in range(n))
    return Dataset(name="stress-bench", task="toy", aspects=(Aspect("coherence", 1, 5),), samples=samples)


def _output(messages) -> str:
    return re.search(r"<<<OUTPUT>>>\n(.*)\n<<<END OUTPUT>>>", messages[-1]["content"], re.S).group(1)


def _hash_noise(salt: int):
    def respond(messages, params) -> str:  # the same prompt always gets the same score: a greedy judge
        digest = hashlib.sha256(f"{salt}|{messages[-1]['content']}".encode()).digest()
        return f"[[{1 + digest[0] % 5}]]"

    return respond


def _follows_order(salt: int):
    noise = _hash_noise(salt)

    def respond(messages, params) -> str:
        steps = [int(x) for x in re.findall(r"Step (\d+)", _output(messages))]
        out_of_place = sum(1 for a, b in zip(steps, steps[1:]) if b < a)
        wobble = int(noise(messages, params)[2]) % 2  # a point of item-to-item spread
        return f"[[{max(1, 5 - out_of_place - wobble)}]]"

    return respond


def measure_end_to_end(judge: str, n: int, draws: int, seed: int) -> list[dict[str, Any]]:
    """sentence_shuffle and whitespace verdicts of :func:`judge_engine.stress.stress` over ``draws`` worlds."""
    from ..llm import LLMConfig, make_llm
    from ..llm.fake import FakeBackend
    from ..methods import Judge, get_method
    from ..stress import LOWER, NEUTRAL, REACTS, SENSITIVE, stress

    rng = np.random.default_rng([seed, n, *judge.encode()])
    fired = {"sentence_shuffle": 0, "whitespace": 0}
    for _ in range(draws):
        dataset = _items(n, rng)
        salt = int(rng.integers(2 ** 31))
        respond = _hash_noise(salt) if judge == "hash_noise" else _follows_order(salt)
        llm = make_llm(LLMConfig(), backend=FakeBackend(respond))
        fitted = Judge(method="direct", params=get_method("direct").get_params(),
                       aspect=dataset.aspects[0].to_dict(),
                       task={"task": "toy", "input_label": "Source", "output_label": "Output"}, state={})
        report = stress(fitted, dataset.samples, "coherence", llm=llm,
                        transformations=["sentence_shuffle", "whitespace"], seed=int(rng.integers(2 ** 31)))
        for r in report.results:
            fired[r.name] += r.verdict == (SENSITIVE if r.name == "sentence_shuffle" else REACTS)
    return [_row("end to end", judge, LOWER, SENSITIVE, n, draws, fired["sentence_shuffle"]) | {"judge": judge,
             "transformation": "sentence_shuffle"},
            _row("end to end", "hash_noise" if judge == "hash_noise" else judge, NEUTRAL, REACTS, n, draws,
                 fired["whitespace"]) | {"transformation": "whitespace", "kind": "false alarm", "target": CEILING,
                                         "met": fired["whitespace"] / draws <= CEILING}]


def run(*, draws: int = 2000, e2e_draws: int = 100, seed: int = 0, sizes: list[int] | None = None,
        doc_out: str | None = None, **_: Any) -> dict[str, Any]:
    """Every (judge, expectation, size) of the rule, then the end-to-end draws."""
    from ..stress import LOWER, NEUTRAL
    from . import progress_bar, result

    sizes = list(sizes or SIZES)
    jobs = [(j, e, n) for j in NULL_JUDGES + PLANTED_JUDGES for e in (LOWER, NEUTRAL) for n in sizes]
    bar = progress_bar(len(jobs) + 2 * len(sizes), "stress verdicts")
    rows = []
    for j, e, n in jobs:
        rows.append(measure_verdict(j, e, n, draws, seed))
        bar.update(1)
    for judge in ("hash_noise", "follows_order"):
        for n in sizes:
            rows.extend(measure_end_to_end(judge, n, e2e_draws, seed))
            bar.update(1)
    bar.close()
    nulls = [r for r in rows if r["kind"] == "false alarm"]
    summary = {"false_alarm_max": max(r["rate"] for r in nulls),
               "false_alarm_cells_over_ceiling": sum(not r["met"] for r in nulls), "false_alarm_cells": len(nulls)}
    doc = result("stress-calibration", config={"draws": draws, "e2e_draws": e2e_draws, "seed": seed, "sizes": sizes,
                                               "ceiling": CEILING}, rows=rows, summary=summary)
    if doc_out:
        from pathlib import Path

        Path(doc_out).parent.mkdir(parents=True, exist_ok=True)
        Path(doc_out).write_text(markdown(doc) + "\n", encoding="utf-8")
    return doc


def markdown(doc: dict[str, Any]) -> str:
    """The table docs/reliability.md carries: a row per layer, judge and expectation; a column per size."""
    cfg, machine = doc["config"], doc["machine"]
    sizes = cfg["sizes"]
    cells: dict[tuple, dict[int, dict[str, Any]]] = {}
    for r in doc["rows"]:
        key = (r["layer"], r["kind"], r["judge"], r.get("transformation", ""), r["expected"], r["verdict"])
        cells.setdefault(key, {})[r["n_items"]] = r
    lines = [f"Measured {doc['date']} (UTC) with `python -m judge_engine.bench stress-calibration --draws "
             f"{cfg['draws']} --e2e-draws {cfg['e2e_draws']} --seed {cfg['seed']}` on {machine['cpus']} CPUs, load "
             f"average {machine['load_avg_1_5_15']}: rate at which the verdict was given, per number of items "
             "perturbed.", "",
             "| layer | rate of | judge | transformation | expected | verdict | "
             + " | ".join(f"n={n}" for n in sizes) + " | ceiling |",
             "|---|---|---|---|---|---|" + "---|" * len(sizes) + "---|"]
    for (layer, kind, judge, name, expected, verdict), by_n in cells.items():
        shown = " | ".join(f"{by_n[n]['rate']:.3f}" if n in by_n else "" for n in sizes)
        ceiling = f"{CEILING:.2f}" if kind == "false alarm" else ""
        lines.append(f"| {layer} | {kind} | {judge} | {name or '(any)'} | {expected} | {verdict} | {shown} | "
                     f"{ceiling} |")
    s = doc["summary"]
    lines += ["", f"Largest false-alarm rate: {s['false_alarm_max']:.3f}; cells over the {CEILING:.0%} ceiling: "
                  f"{s['false_alarm_cells_over_ceiling']} of {s['false_alarm_cells']}."]
    return "\n".join(lines)


def add_arguments(parser) -> None:
    parser.add_argument("--draws", type=int, default=2000, help="simulations per cell of the rule (default 2000)")
    parser.add_argument("--e2e-draws", type=int, default=100,
                        help="stress tests through the scripted backend per end-to-end cell (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help=f"items perturbed (default {list(SIZES)})")
    parser.add_argument("--out", dest="doc_out", default=None, help="also write the Markdown table to this file")

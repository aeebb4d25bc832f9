"""Alignment table (benchmark 6): each method vs direct scoring and G-Eval.

For each dataset (default SummEval, Topical-Chat, HANNA, SFRES) one seeded
group-disjoint split is made (the same for every method: same train/test
sizes and seed), and every method is fitted on its train part and scored on
its held-out test part through :func:`judge_engine.runs.execute_run`.
Reported per (dataset, method): Spearman and Pearson with bootstrap CIs at
the dataset's natural level (sample level when the test part is too small
for it; groups counted, and the sample-level coefficients beside), parse
failures, how many distinct scores were read (one: the correlation is
undefined), LLM calls, cache hits and seconds.

The defaults are tiny so the command finishes quickly on the embedded model;
scale up with ``--train-size``/``--test-size`` and add methods with
``--methods`` (any registered name; ``--params name='{json}'`` for a small
configuration). The same command runs unchanged against an OpenAI or vLLM
backend with ``--backend openai --model ... --base-url ...``.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from . import method_params, progress_bar, result

DATASETS = ("summeval", "topical_chat", "hanna", "sfres")
METHOD_ORDER = ("direct", "geval", "hypoeval", "hpss", "active_critic", "hd_eval")
"""Row order of the Markdown table: the baselines first, then the methods."""


def add_arguments(parser) -> None:
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", default=["direct", "geval"],
                        help="registered method names, e.g. direct geval hypoeval hpss active_critic hd_eval")
    parser.add_argument("--params", nargs="*", default=[], metavar="METHOD=JSON",
                        help="parameter overrides per method, e.g. geval='{\"n_samples\": 2}'")
    parser.add_argument("--train-size", type=int, default=6)
    parser.add_argument("--test-size", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="llamacpp")
    parser.add_argument("--model", default="")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--db", default="", help="keep the runs in this database (default: a temporary one)")
    parser.add_argument("--fresh", action="store_true",
                        help="start a new table instead of merging these rows into the previous alignment.json")


def run(*, datasets=DATASETS, methods=("direct", "geval"), params=(), train_size: int = 6, test_size: int = 6,
        seed: int = 0, backend: str = "llamacpp", model: str = "", base_url: str = "", concurrency: int = 4,
        db: str = "", llm_factory=None, **_: Any) -> dict[str, Any]:
    """``llm_factory(store)`` replaces the configured backend (tests only)."""
    from ..llm import LLMConfig
    from ..methods import get_method
    from ..runs import RunSpec, create_run, execute_run
    from ..store import Store

    overrides = method_params(params)
    for m in methods:
        get_method(m, overrides.get(m, {}))  # unknown names fail before any work
    config = LLMConfig(backend=backend, model=model, base_url=base_url, concurrency=concurrency)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-align-") as tmp:
        store = Store(Path(db) if db else Path(tmp) / "alignment.db")
        bar = progress_bar(len(datasets) * len(methods), "alignment")
        for name in datasets:
            from ..runs import ensure_dataset
            aspect = ensure_dataset(store, name).aspects[0].name
            for m in methods:
                spec = RunSpec(method=m, dataset=name, aspect=aspect, params=overrides.get(m, {}),
                               train_size=train_size, test_size=test_size, seed=seed, llm=config)
                run_id = create_run(store, spec)
                start = time.perf_counter()
                row: dict[str, Any] = {"dataset": name, "aspect": aspect, "method": m, "run": run_id,
                                       "llm": config.label, "train_size": train_size, "test_size": test_size,
                                       "seed": seed, "params": overrides.get(m, {})}
                try:
                    summary = execute_run(store, run_id, llm=llm_factory(store) if llm_factory else None)
                except Exception as exc:  # one failing method must not hide the others' results
                    row.update({"error": f"{type(exc).__name__}: {exc}", "seconds": time.perf_counter() - start,
                                "warnings": [e.payload.get("code") for e in store.run_events(run_id, kind="warning")]})
                    rows.append(row)
                    bar.update(1)
                    continue
                corr = summary.correlations or {}
                sample = summary.levels.get("sample") or {}
                scores = [v.score for v in store.load_verdicts(run_id) if not v.missing]
                row.update({"level": summary.level, "n": summary.n,
                            "spearman": corr.get("spearman"), "spearman_ci": corr.get("spearman_ci"),
                            "pearson": corr.get("pearson"), "pearson_ci": corr.get("pearson_ci"),
                            "n_groups": corr.get("n_groups"),
                            "sample_spearman": sample.get("spearman"), "sample_pearson": sample.get("pearson"),
                            "parse_failures": summary.parse_failures, "missing": summary.missing,
                            "ci_note": corr.get("ci_note") or "",
                            "warnings": [w.code for w in summary.warnings],
                            "structure": structure_of(store.run(run_id).judge or {}),
                            # a correlation is undefined (None) when every parsed score is the same
                            "distinct_scores": len(set(scores)), "calls": summary.ledger.calls,
                            "cache_hits": summary.ledger.cache_hits, "seconds": time.perf_counter() - start})
                rows.append(row)
                bar.update(1)
        bar.close()
        store.close()
    return result("alignment", config={"datasets": list(datasets), "methods": list(methods), "params": overrides,
                                       "train_size": train_size, "test_size": test_size, "seed": seed,
                                       "llm": config.label},
                  rows=rows, summary={"runs": len(rows), "failed": sum(1 for r in rows if "error" in r)},
                  notes=["every method of a dataset is scored on the same held-out items (same split)",
                         "the embedded SmolLM2-135M is tiny: compare methods against the baselines, not with papers"])


def structure_of(judge: dict[str, Any]) -> dict[str, Any]:
    """What a fitted judge holds, in counts: a hypothesis bank, inferred criteria, the children of each
    expanded tree node, an HPSS strategy's coverage (what #16 asks of every method on a small model)."""
    state = judge.get("state") or {}
    # what the rubric checks refused and what they let through with a flag
    checks = {"rejected": len(state.get("rejected") or []), "flagged": len(state.get("flagged") or [])}
    return {**_structure(judge.get("method"), state), **checks}


def _structure(method: str | None, state: dict[str, Any]) -> dict[str, Any]:
    if method == "hypoeval":
        return {"bank": len(state.get("bank") or []), "selected": len(state.get("selected") or [])}
    if method == "active_critic":
        return {"criteria": len(state.get("criteria") or {})}
    if method == "hd_eval":
        nodes = (state.get("tree") or {}).get("nodes") or []
        children: dict[str, int] = {}
        for node in nodes:
            if node.get("parent") is not None:
                children[node["parent"]] = children.get(node["parent"], 0) + 1
        # every node the fit decomposed: the layer-1 aspects and the nodes chosen by importance
        decomposed = {n["id"] for n in nodes if n.get("parent") is None} | set(state.get("expanded_nodes") or [])
        counts = [children.get(n, 0) for n in sorted(decomposed)]
        return {"nodes": len(nodes), "decomposed": len(counts), "min_children": min(counts, default=None),
                "without_children": sum(1 for c in counts if c == 0)}
    if method == "hpss":
        selection = state.get("selection") or {}
        return {"coverage": selection.get("coverage"), "explored": len(state.get("explored") or [])}
    return {}


def _key(row: dict[str, Any]) -> tuple:
    return tuple(json.dumps(row.get(k), sort_keys=True) for k in
                 ("dataset", "aspect", "method", "llm", "train_size", "test_size", "seed"))


def merge(previous: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the rows of ``previous`` it did not measure again (same dataset, aspect, method,
    backend, sizes and seed), so a table can be filled by several commands; the new rows come last."""
    fresh = {_key(r) for r in doc["rows"]}
    kept = [r for r in previous.get("rows", []) if _key(r) not in fresh]
    rows = kept + doc["rows"]
    config = dict(doc["config"], merged_from=previous.get("date"))
    summary = {"runs": len(rows), "failed": sum(1 for r in rows if "error" in r)}
    return dict(doc, config=config, rows=rows, summary=summary)


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _number(value: Any) -> str:
    value = _finite(value)
    return "n/a" if value is None else f"{value:.2f}"


def _coefficient(row: dict[str, Any], name: str) -> str:
    value, ci = _finite(row.get(name)), row.get(f"{name}_ci") or [None, None]
    if value is None:
        read = row["n"] - row.get("missing", row["parse_failures"])
        return "n/a (no score read)" if not read else f"n/a (all {read} read scores equal)"
    text = _number(value)
    if row["level"] != "sample":
        no_ci = row.get("n_groups") == 1 or row.get("ci_note") or _finite(ci[0]) is None
        text += " (no CI: too few groups)" if no_ci else f" [{_number(ci[0])}, {_number(ci[1])}]"
        return f"{text}; sample {_number(row.get(f'sample_{name}'))}"
    return f"{text} [{_number(ci[0])}, {_number(ci[1])}]"


def markdown(doc: dict[str, Any]) -> str:
    """The rows as docs/benchmarks.md's Markdown table (one line per dataset and method; the backend is named
    beside the method when the rows come from several)."""
    lines = ["| dataset (aspect) | method | level | Spearman [95% CI] | Pearson [95% CI] | n | missing "
             "| calls (cache hits) | seconds |", "|---|---|---|---|---|---|---|---|---|"]
    def order(r: dict[str, Any]) -> tuple:
        rank = METHOD_ORDER.index(r["method"]) if r["method"] in METHOD_ORDER else len(METHOD_ORDER)
        return (DATASETS.index(r["dataset"]) if r["dataset"] in DATASETS else len(DATASETS), r["dataset"],
                r.get("llm", ""), rank, r["method"])

    several_backends = len({r.get("llm") for r in doc["rows"]}) > 1
    for r in sorted(doc["rows"], key=order):
        method = f"{r['method']} ({r.get('llm')})" if several_backends else r["method"]
        head = f"| {r['dataset']} ({r['aspect']}) | {method} |"
        if "error" in r:
            lines.append(f"{head} failed: {r['error']} | | | | | | {r['seconds']:.0f} |")
            continue
        groups = r.get("n_groups") or 0
        level = r["level"] if r["level"] == "sample" or not groups else \
            f"{r['level']} ({groups} group{'s' if groups != 1 else ''})"
        lines.append(f"{head} {level} | {_coefficient(r, 'spearman')} | {_coefficient(r, 'pearson')} | {r['n']} "
                     f"| {r.get('missing', r['parse_failures'])} | {r['calls']} ({r['cache_hits']}) "
                     f"| {r['seconds']:.0f} |")
    return "\n".join(lines)

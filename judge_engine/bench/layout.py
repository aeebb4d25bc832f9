"""Prompt layout (benchmark 3): sample-first vs paper order for per-criterion scoring.

``n`` samples x ``k`` criteria are scored by
:func:`judge_engine.criteria_scoring.score_criteria` on the embedded
llama.cpp model, once with ``layout="paper"`` (instructions and criterion
first, then the sample) and once with ``layout="sample_first"`` (the sample
block first, so consecutive calls on one sample share a long prefix that
llama.cpp keeps in its KV cache). The cache is off, so every call reaches
the model. Reported per arm: wall time, prompt tokens llama.cpp actually
evaluated (its own perf counter ``n_p_eval``, reset before each arm) and
tokens sent, and the correlation of the per-sample mean criterion score with
the human score (:func:`judge_engine.metrics.meta_evaluate`, bootstrap CIs).
Each layout runs at concurrency 1 and, with ``--concurrency C``, at C too
(the embedded backend serialises its calls and takes them in order, so C
no longer changes what llama.cpp sees; the option stays for other
backends). ``follow_ups`` counts cells whose first reply had no readable
score and paid a second turn. Each arm starts from an empty KV cache.

Which samples: ``--pick one_per_group`` (default) takes the first sample
of ``n`` different sources (SummEval: ``n`` different articles), so
sample-first can reuse only the sample's own prefix across its criteria;
``--pick first`` takes the first ``n`` samples, which on SummEval are
summaries of one article, so sample-first also reuses the article across
samples (more saving than a real run gets unless it scores a source's
outputs one after another). Target: sample-first >= 2x faster, its
correlation inside the other's CI.

``--batch-threads T`` sets llama.cpp's threads for multi-token batches for
the duration of the benchmark (the embedded backend otherwise picks its
threads per request from the machine's load, :mod:`judge_engine.llm.threads`). On
a 2-CPU machine shared with other work, two batch threads wait on each
other at every step: a 24-token suffix decode was measured at 7-8 s with
2 batch threads and 0.4-0.9 s with 1, which hits sample-first (whose calls
after the first of a sample are short suffixes) hardest.
"""

from __future__ import annotations

import math
from typing import Any

from . import interleaved, med, median_ratio, result

CRITERIA = (
    ("faithful", "Faithfulness", "Every claim in the summary is supported by the article."),
    ("coverage", "Coverage", "The summary keeps the article's most important points."),
    ("fluency", "Fluency", "Sentences are grammatical and read naturally."),
    ("concise", "Conciseness", "No repetition and no details that do not matter."),
    ("order", "Structure", "Ideas follow one another in a sensible order."),
    ("clarity", "Clarity", "A reader who has not seen the article understands the summary."),
)
"""Generic summary criteria (our wording) used as the K criteria."""
INSTRUCTIONS = "You are grading a summary of a news article on one criterion."
PICKS = ("one_per_group", "first")
"""How the ``n`` samples are chosen (see the module docstring)."""


def add_arguments(parser) -> None:
    parser.add_argument("-n", type=int, default=6, help="samples")
    parser.add_argument("-k", type=int, default=4, help=f"criteria (at most {len(CRITERIA)})")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--dataset", default="summeval")
    parser.add_argument("--concurrency", type=int, default=1, help="a second concurrency measured (besides 1)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--pick", choices=PICKS, default="one_per_group",
                        help="first n samples, or the first sample of n different sources")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first S sources (or samples, --pick first)")
    parser.add_argument("--batch-threads", type=int, default=0,
                        help="llama.cpp threads for multi-token batches during the benchmark (0: as loaded)")


def _perf(llama: Any) -> int:
    import llama_cpp
    return int(llama_cpp.llama_perf_context(llama._ctx.ctx).n_p_eval)


def _reset(llama: Any) -> None:
    import llama_cpp
    llama_cpp.llama_perf_context_reset(llama._ctx.ctx)


def run(*, n: int = 6, k: int = 4, repeats: int = 2, dataset: str = "summeval", concurrency: int = 1,
        bootstrap: int = 1000, pick: str = "one_per_group", batch_threads: int = 0, skip: int = 0,
        **_: Any) -> dict[str, Any]:
    from ..criteria_scoring import CriterionText, ScoringSettings, score_criteria
    from ..data import load_benchmark
    from ..llm import LLMConfig
    from ..llm.client import LLM
    from ..llm.llamacpp import LlamaCppBackend
    from ..metrics import meta_evaluate
    from ..prompting import TaskInfo

    data = load_benchmark(dataset)
    samples, aspect, task = pick_samples(data.samples, n, pick, skip=skip), data.aspects[0], TaskInfo.of(data)
    criteria = [CriterionText(*c) for c in CRITERIA[:k]]
    backend = LlamaCppBackend()
    llama = backend._llama
    levels = sorted({1, concurrency})
    arms = {f"{layout}_c{c}": (layout, c) for c in levels for layout in ("paper", "sample_first")}
    evaluated: dict[str, list[int]] = {a: [] for a in arms}
    sent: dict[str, int] = {}
    calls: dict[str, int] = {}
    scores: dict[str, list[float]] = {}

    def make_arm(name: str):
        layout, c = arms[name]
        llm = LLM(LLMConfig(concurrency=c), backend, cache=None)
        settings = ScoringSettings(layout=layout, reasoning=False, weighted=True, max_tokens=4)

        def arm(_: int) -> None:
            with backend._lock:
                backend._worker.submit(llama.reset).result()  # cold KV cache: no arm inherits another's prefix
                _reset(llama)
            before = llm.ledger.snapshot()
            out = score_criteria(samples, criteria, instructions=INSTRUCTIONS, aspect=aspect, task=task, llm=llm,
                                 settings=settings)
            with backend._lock:
                evaluated[name].append(_perf(llama))
            after = llm.ledger.snapshot()
            sent[name] = after.prompt_tokens - before.prompt_tokens
            calls[name] = after.calls - before.calls
            scores[name] = [_mean([c.score for c in row.values()]) for row in out]
        return arm

    threads = (llama.context_params.n_threads, llama.context_params.n_threads_batch)
    if batch_threads:
        _set_threads(backend, threads[0], batch_threads)
    try:
        seconds = interleaved({name: make_arm(name) for name in arms}, repeats)
    finally:
        if batch_threads:
            _set_threads(backend, threads[0], None)
    human = [s.human.get(aspect.name, math.nan) for s in samples]
    rows = []
    for name, (layout, c) in arms.items():
        rep = meta_evaluate(human, scores[name], level="sample", n_bootstrap=bootstrap).to_dict()
        rows.append({"arm": name, "layout": layout, "concurrency": c, "median_s": med(seconds[name]),
                     "seconds_per_repeat": seconds[name], "prompt_tokens_sent": sent[name],
                     "prompt_tokens_evaluated": med(evaluated[name]),
                     "prompt_tokens_evaluated_per_repeat": evaluated[name],
                     "calls": calls[name], "follow_ups": calls[name] - len(samples) * len(criteria),
                     "missing": sum(1 for x in scores[name] if math.isnan(x)),
                     "pearson": rep["pearson"], "pearson_ci": rep["pearson_ci"],
                     "spearman": rep["spearman"], "spearman_ci": rep["spearman_ci"]})
    by = {r["arm"]: r for r in rows}
    summary: dict[str, Any] = {}
    for c in levels:
        p, s = by[f"paper_c{c}"], by[f"sample_first_c{c}"]
        speed = median_ratio(seconds[f"paper_c{c}"], seconds[f"sample_first_c{c}"])
        inside = _inside(s["spearman"], p["spearman_ci"]) and _inside(p["spearman"], s["spearman_ci"])
        summary[f"speedup_sample_first_c{c}"] = speed
        summary[f"evaluated_token_ratio_c{c}"] = (p["prompt_tokens_evaluated"] / s["prompt_tokens_evaluated"]
                                                  if s["prompt_tokens_evaluated"] else None)
        summary[f"spearman_inside_other_ci_c{c}"] = inside
        summary[f"met_c{c}"] = bool(speed >= 2 and inside)
    summary["target"] = "sample_first >= 2x faster than paper, correlation inside the other's CI"
    return result("layout", config={"n": n, "k": k, "repeats": repeats, "dataset": dataset, "aspect": aspect.name,
                                    "pick": pick, "skip": skip, "sources": len({s.group_id or s.id for s in samples}),
                                    "concurrency_levels": levels, "model": backend.model_id,
                                    "threads": threads[0], "batch_threads": batch_threads or threads[1],
                                    "scoring": "reasoning=False, weighted=True, max_tokens=4"},
                  rows=rows, summary=summary,
                  notes=["prompt_tokens_evaluated is llama.cpp's n_p_eval (reset before each arm): tokens not "
                         "reused from the KV cache of the previous call",
                         "correlation: per-sample mean of the criterion scores vs the human score, sample level"])


def _set_threads(backend: Any, n_threads: int, n_threads_batch: int | None) -> None:
    """Pin the backend's threads (generation, batch) for its next requests, or (``n_threads_batch`` None)
    let them follow the load again (:mod:`judge_engine.llm.threads`)."""
    with backend._lock:
        backend._llama.pinned_threads = None if n_threads_batch is None else (n_threads, n_threads_batch)

def pick_samples(samples, n: int, pick: str = "one_per_group", *, skip: int = 0) -> list:
    """``n`` samples after the first ``skip``: the next ones, or the first of each of ``n`` different sources."""
    if pick == "first":
        return list(samples[skip:skip + n])
    if pick != "one_per_group":
        raise ValueError(f"pick={pick!r} is not allowed; choose one of {list(PICKS)}")
    seen: set = set()
    out = []
    for s in samples:
        source = s.group_id or s.id  # no group: every sample is its own source
        if source not in seen:
            seen.add(source)
            out.append(s)
            if len(out) == skip + n:
                break
    return out[skip:]


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _inside(value: float | None, ci: Any) -> bool:
    if value is None or not ci or ci[0] is None or ci[1] is None:
        return False
    return ci[0] <= value <= ci[1]

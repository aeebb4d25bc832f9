"""Scale (benchmark 5): a synthetic dataset of 1k / 10k / 100k items.

The benchmark makes its own data: items in groups of 10 over 10 systems,
short random texts, a human score 1-5 per item. For each size it measures

* import: building the dataset and saving it in a fresh store (time), and
  peak Python memory of the same import (``tracemalloc``, a second store);
* metaeval: :func:`judge_engine.metrics.meta_evaluate` at sample, group and
  system level with bootstrap CIs;
* warm-cache scoring: a direct-scoring run over every item executed with the
  REAL llama.cpp backend after the exact cache rows of its prompts were
  inserted with the store's ``CallCache.put`` (replies ``[[k]]`` with k the
  human score plus noise), so every call is a cache hit and no model call is
  made; the whole ``execute_run`` is timed (it includes saving verdicts and
  the run summary);
* compare preparation: :func:`judge_engine.compare.align` and
  :func:`~judge_engine.compare.comparison_frame` over two such runs.

The summary gives each stage's growth exponent between consecutive sizes
(time ~ n^e; 1.0 = linear).
"""

from __future__ import annotations

import math
import random
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from . import progress_bar, result

WORDS = ("the report says council budget river school storm market player season data model result team city "
         "plan water road price vote").split()


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for metaeval and compare")
    parser.add_argument("--compare-max-items", type=int, default=100000,
                        help="skip the compare preparation above this size")


def synthetic_dataset(n: int, *, seed: int = 0):
    """``n`` items in groups of 10 over 10 systems with a 1-5 human score."""
    from ..records import Aspect, Dataset, Sample
    rng = random.Random(seed)
    samples = []
    for i in range(n):
        g = i // 10
        text = " ".join(rng.choice(WORDS) for _ in range(12))
        samples.append(Sample(id=f"x{i}", input=f"source {g}: " + " ".join(WORDS[(g + k) % len(WORDS)] for k in range(20)),
                              output=text, group_id=f"g{g}", system_id=f"sys{i % 10}",
                              human={"quality": float(rng.randint(1, 5))}))
    return Dataset(name=f"synthetic_{n}", task="synthetic summarization", aspects=(Aspect("quality", 1, 5, "Overall quality."),),
                   samples=tuple(samples), natural_level="group", input_label="Source", output_label="Summary")


def warm_cache(store, dataset, *, model_id: str, seed: int = 0, max_tokens: int | None = None) -> int:
    """Insert the exact cache rows a direct-scoring run of ``dataset`` will ask for; returns rows.

    The run is a default one, or one with ``params={"max_tokens": max_tokens}``: another reply budget is
    another request, so runs seeded with different ``seed`` and ``max_tokens`` get different scores.
    """
    from ..llm import Completion, GenerationParams, cache_key
    from ..llm.llamacpp import GRAMMAR
    from ..methods.direct import DirectScoring, direct_prompt
    from ..prompting import TaskInfo, judge_scale
    from ..store import CallCache
    from ..structured import as_param, score_schema
    method = DirectScoring() if max_tokens is None else DirectScoring(max_tokens=max_tokens)
    aspect, task = dataset.aspects[0], TaskInfo.of(dataset)
    # the request direct scoring sends: a score schema, honoured by the embedded backend's grammar
    params = GenerationParams(temperature=method.temperature, max_tokens=method.max_tokens,
                              json_schema=as_param(score_schema(*judge_scale(aspect))))
    cache, rng = CallCache(store), random.Random(seed)
    with store.write():  # one transaction: each put nests as a savepoint
        for s in dataset.samples:
            messages = [{"role": "user", "content": direct_prompt(s, aspect, task)}]
            score = min(5, max(1, int(s.human["quality"]) + rng.choice((-1, 0, 0, 1))))
            reply = Completion(texts=(f'{{"score": {score}}}',), prompt_tokens=len(messages[0]["content"]) // 4,
                               completion_tokens=6, model=model_id)
            cache.put(cache_key("llamacpp", model_id, messages, params, structured=GRAMMAR), backend="llamacpp",
                      model=model_id, request={"messages": messages, "params": params.cache_fields(),
                                               "structured": GRAMMAR}, response=reply.to_dict())
    return len(dataset.samples)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run(*, sizes: list[int] | tuple[int, ...] = (1000, 10000, 100000), bootstrap: int = 200,
        compare_max_items: int = 100000, **_: Any) -> dict[str, Any]:
    from .. import compare
    from ..llm import LLMConfig
    from ..llm.llamacpp import embedded_model_path
    from ..metrics import meta_evaluate
    from ..runs import RunSpec, create_run, execute_run
    from ..store import Store

    from ..llm import make_backend
    model_id = embedded_model_path().name
    make_backend(LLMConfig())  # load the model once, outside the timings (the runs below make no call)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        bar = progress_bar(len(sizes), "scale")
        for n in sizes:
            row: dict[str, Any] = {"items": n}
            store = Store(Path(tmp) / f"scale-{n}.db")
            dataset, row["generate_s"] = _timed(lambda: synthetic_dataset(n))
            _, row["import_s"] = _timed(lambda: store.save_dataset(dataset))
            traced = Store(Path(tmp) / f"scale-{n}-traced.db")
            tracemalloc.start()
            traced.save_dataset(synthetic_dataset(n))
            row["import_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            traced.close()
            _, row["load_s"] = _timed(lambda: store.load_dataset(dataset.name))
            human = [s.human["quality"] for s in dataset.samples]
            noisy = [h + random.Random(i).gauss(0, 1) for i, h in enumerate(human)]
            groups = [s.group_id for s in dataset.samples]
            systems = [s.system_id for s in dataset.samples]
            for level in ("sample", "group", "system"):
                _, row[f"metaeval_{level}_s"] = _timed(lambda lv=level: meta_evaluate(
                    human, noisy, level=lv, groups=groups, systems=systems, n_bootstrap=bootstrap))
            _, row["warm_cache_s"] = _timed(lambda: warm_cache(store, dataset, model_id=model_id))
            run_ids = []
            for k in range(2):
                run_id = create_run(store, RunSpec(method="direct", dataset=dataset.name, aspect="quality",
                                                   train_size=0, test_size=None, llm=LLMConfig()))
                _, seconds = _timed(lambda r=run_id: execute_run(store, r))
                run_ids.append(run_id)
                if k == 0:
                    ledger = store.run(run_id).ledger
                    row.update({"score_run_s": seconds, "items_per_s": n / seconds, "llm_calls": ledger.calls,
                                "cache_hits": ledger.cache_hits})
            runs = [store.run(r) for r in run_ids]
            aligned, row["compare_align_s"] = _timed(lambda: compare.align(store, runs))
            row["verdicts"] = len(aligned.ids)
            row["compare_frame_s"], row["compare_rows"] = math.nan, 0
            if n <= compare_max_items:
                frame, row["compare_frame_s"] = _timed(lambda: compare.comparison_frame(
                    store, dataset, aligned, level="group", n_bootstrap=bootstrap))
                row["compare_rows"] = len(frame)
            rows.append(row)
            store.close()
            bar.update(1)
        bar.close()
    summary: dict[str, Any] = {"all_calls_cache_hits": all(r["llm_calls"] == 0 for r in rows)}
    stages = ["import_s", "import_peak_mb", "metaeval_sample_s", "metaeval_group_s", "metaeval_system_s",
              "score_run_s", "compare_align_s", "compare_frame_s"]
    for a, b in zip(rows, rows[1:]):
        span = f"{a['items']}->{b['items']}"
        summary[f"growth_exponent {span}"] = {s: _exponent(a[s], b[s], a["items"], b["items"]) for s in stages}
    return result("scale", config={"sizes": list(sizes), "bootstrap": bootstrap, "model": model_id,
                                   "compare_max_items": compare_max_items},
                  rows=rows, summary=summary,
                  notes=["scoring uses the real llama.cpp backend with every call answered by cache rows "
                         "pre-inserted through CallCache.put for the exact prompts (no model call, no fake backend)",
                         "score_run_s is the whole execute_run, including the run summary's meta-evaluation "
                         "(1000 bootstrap resamples, fixed in runs.summarize)",
                         "growth exponent e: time ~ n^e between consecutive sizes (1.0 = linear)"])


def _exponent(t0: float, t1: float, n0: int, n1: int) -> float:
    if t0 <= 0 or t1 <= 0:
        return math.nan
    return math.log(t1 / t0) / math.log(n1 / n0)

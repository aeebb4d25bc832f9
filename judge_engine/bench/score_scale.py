"""Scoring at scale: ``score`` against the plain ``openai`` client at 16/64/256 in flight, warm cache, memory.

Against :mod:`.stub_server` (an OpenAI-compatible server that answers at once, in its own process),
for each level ``c`` of ``--levels``, interleaved over ``--repeats``:

``plain_cN``   a script as a user would write it with the ``openai`` client: read the JSONL, build each
               item's prompt (the judge's own words), send the same request the engine sends (model,
               messages, temperature, max_tokens, seed, response_format) from ``c`` threads, write a JSON
               line per reply.
``engine_cN``  ``judge-workbench score`` in this process with ``--concurrency c`` and a new call cache
               each repeat, so every call is sent.

The ratio is the median over repeats of plain seconds / engine seconds (target >= 0.9); each repeat's own ratio
is reported beside it, since on a loaded machine one pair a few seconds apart can move by more than the gap. CPU per item
(process CPU time, the stub excluded) says where the time goes on a machine whose cores the client
and the stub share; below the target, the engine's per-item CPU is broken down by thread CPU time
spent in the openai client's call, in the call cache's writes, and in everything else.

``--whole-process`` (issue 64 item 5) times, instead, two child processes from their start to their exit,
start-up included, alternated (A B, B A, ...) in the same window:

``plain_proc_cN``   ``python -c`` a script that imports only ``openai``, reads the items' prompts (rendered here
                    beforehand, the judge's own words) and sends them as above from ``c`` threads, writing a line
                    per reply;
``engine_proc_cN``  ``python -m judge_engine score judge.json items.jsonl --concurrency c`` on a new call cache.

Both use bytecode caches, as an installed package does (``PYTHONDONTWRITEBYTECODE`` is removed), and the stub
checks the request bodies are byte-identical: it keeps the XOR of every body's hash (``bodies_digest``), which the
two arms must share. Each row also gives each arm's start-up (seconds until the stub's first request).

``warm``       the engine scoring the same items again on a filled cache (every call a hit): items/s.
``memory``     with ``--memory-sizes``, peak resident memory of a child process scoring N items, two ways:
               ``scripted`` (the whole scoring path with an in-process backend answering at once, which
               also fills the cache) and ``cli_warm`` (the ``score`` command against the stub on that
               filled cache). Flat memory means the 1,000,000-item peak is at most 1.2x the 10,000-item one.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr
from io import StringIO
from pathlib import Path
from typing import Any

from . import interleaved, med, median_ratio, progress_bar, result

MODEL = "stub-model"


def add_arguments(parser) -> None:
    parser.add_argument("--items", type=int, default=8000, help="items scored per arm and repeat")
    parser.add_argument("--levels", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-sizes", type=int, nargs="*", default=[],
                        help="also measure peak memory at these sizes, e.g. 10000 1000000")
    parser.add_argument("--whole-process", action="store_true",
                        help="time `score` and a plain-client script as whole child processes, start-up included")


def bench_judge():
    """The judge every arm scores with: direct scoring (one call per item, the reply a JSON score)."""
    from ..methods.base import FitContext
    from ..methods.direct import DirectScoring
    from ..prompting import TaskInfo
    from ..records import Aspect

    return DirectScoring().fit([], Aspect("quality", 1, 5, "How good the reply is as the next turn."),
                               FitContext(llm=None, task=TaskInfo(task="dialogue response generation")))


def write_items(path: Path, n: int) -> Path:
    """``n`` dialogue items as JSONL, each text its own (so no two prompts are the same request)."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"item-{i}", "input": f"A: How was the trip to the coast, day {i}?\nB: Long, "
                                "but the sea was worth it.", "output": f"That sounds lovely; what did you see on day "
                                f"{i}?"}) + "\n")
    return path


def _request_kwargs(judge) -> tuple[dict[str, Any], Any]:
    """The chat-completions arguments (beyond messages) the engine sends for this judge, and its schema param."""
    from ..llm.openai_backend import request_schema, structured_request
    from ..structured import as_param, score_schema
    from ..prompting import judge_scale

    schema = as_param(score_schema(*judge_scale(judge.aspect_record)))
    kwargs = dict(model=MODEL, temperature=judge.params["temperature"], max_tokens=judge.params["max_tokens"], n=1,
                  seed=0, **structured_request("json_schema", request_schema(schema)))
    return kwargs, schema


def plain_client(base_url: str, judge, items: Path, out: Path, concurrency: int) -> int:
    """The user's own script: read, prompt, send with ``concurrency`` threads, write. Returns lines written."""
    import openai

    from ..methods.direct import direct_prompt
    from ..records import Sample

    client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=2)
    kwargs, _ = _request_kwargs(judge)
    aspect, task = judge.aspect_record, judge.task_info
    lock = threading.Lock()

    def one(line: str, f) -> None:
        row = json.loads(line)
        sample = Sample(id=row["id"], input=row["input"], output=row["output"], group_id=row["id"])
        reply = client.chat.completions.create(messages=[{"role": "user", "content": direct_prompt(sample, aspect,
                                                                                                   task)}], **kwargs)
        text = json.dumps({"id": row["id"], "reply": reply.choices[0].message.content}) + "\n"
        with lock:
            f.write(text)

    with open(items, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as f, \
            ThreadPoolExecutor(concurrency) as pool:
        for future in [pool.submit(one, line, f) for line in lines if line.strip()]:
            future.result()
    client.close()
    return sum(1 for _ in open(out, encoding="utf-8"))


def engine_score(base_url: str, judge_file: Path, items: Path, out: Path, db: Path, concurrency: int) -> int:
    """``judge-workbench score`` in this process; returns lines written."""
    from ..__main__ import main

    for stale in (out, out.with_name(out.name + ".judge")):
        stale.unlink(missing_ok=True)
    with redirect_stderr(StringIO()) as err:
        code = main(["score", str(judge_file), str(items), "--id-col", "id", "--out", str(out), "--backend", "openai",
                     "--model", MODEL, "--base-url", base_url, "--concurrency", str(concurrency), "--db", str(db),
                     "--quiet"])
    if code != 0:
        raise RuntimeError(f"score exited {code}: {err.getvalue()[-500:]}")
    return sum(1 for _ in open(out, encoding="utf-8"))


def same_scores(plain: Path, engine: Path, judge) -> bool:
    """Whether the engine's verdicts are the plain client's replies read on the judge's scale, item for item."""
    from ..prompting import judge_scale, to_aspect_range

    scale, aspect = judge_scale(judge.aspect_record), judge.aspect_record
    replies = {r["id"]: json.loads(r["reply"])["score"] for r in map(json.loads, open(plain, encoding="utf-8"))}
    verdicts = {r["id"]: r["score"] for r in map(json.loads, open(engine, encoding="utf-8"))}
    return replies.keys() == verdicts.keys() and all(
        abs(to_aspect_range(float(replies[i]), scale, aspect) - verdicts[i]) < 1e-9 for i in replies)


def _cpu_breakdown(base_url: str, judge_file: Path, items: Path, out: Path, db: Path, concurrency: int,
                   n: int) -> dict[str, float]:
    """Engine CPU per item (ms): in the openai client's call, in the cache's writes, and the rest."""
    from ..llm.openai_backend import OpenAIBackend
    from ..store import CallCache

    spent = {"openai_client_call": 0.0, "cache_write": 0.0}
    lock = threading.Lock()

    def timed(name: str, fn):
        def wrapper(*args, **kwargs):
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    spent[name] += time.thread_time() - start
        return wrapper

    generate, put = OpenAIBackend.generate, CallCache.put_many
    OpenAIBackend.generate, CallCache.put_many = timed("openai_client_call", generate), timed("cache_write", put)
    try:
        db.unlink(missing_ok=True)
        start = time.process_time()
        engine_score(base_url, judge_file, items, out, db, concurrency)
        total = time.process_time() - start
    finally:
        OpenAIBackend.generate, CallCache.put_many = generate, put
    per_item = {k: 1000 * v / n for k, v in spent.items()}
    per_item["rest_of_the_engine"] = 1000 * total / n - sum(per_item.values())
    per_item["total"] = 1000 * total / n
    return per_item


def run(*, items: int = 8000, levels: list[int] | tuple[int, ...] = (16, 64, 256), repeats: int = 3,
        memory_sizes: list[int] | tuple[int, ...] = (), whole_process: bool = False, **_: Any) -> dict[str, Any]:
    from .stub_server import StubServer

    if whole_process:
        from .score_processes import run_whole_process

        return run_whole_process(items=items, levels=levels, repeats=repeats)

    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-score-scale-") as tmp, StubServer() as stub:
        folder = Path(tmp)
        judge = bench_judge()
        judge_file = folder / "judge.json"
        judge_file.write_text(judge.to_json(), encoding="utf-8")
        data = write_items(folder / "items.jsonl", items)
        bar = progress_bar(len(levels) * repeats * 2 + 2, "score-scale")
        cpu: dict[str, list[float]] = {}
        lines: dict[str, set[int]] = {}

        def arm(name: str, fn):
            def go(r: int) -> None:
                start = time.process_time()
                lines.setdefault(name, set()).add(fn(r))
                cpu.setdefault(name, []).append(1000 * (time.process_time() - start) / items)
                bar.update(1)
            return go

        arms = {}
        for c in levels:
            arms[f"plain_c{c}"] = arm(f"plain_c{c}", lambda r, c=c: plain_client(
                stub.base_url, judge, data, folder / f"plain-{c}.jsonl", c))
            arms[f"engine_c{c}"] = arm(f"engine_c{c}", lambda r, c=c: engine_score(
                stub.base_url, judge_file, data, folder / f"engine-{c}.jsonl", folder / f"cache-{c}-{r}.db", c))
        seconds = interleaved(arms, repeats)
        for c in levels:
            plain, engine = seconds[f"plain_c{c}"], seconds[f"engine_c{c}"]
            rows.append({"arm": f"c{c}", "concurrency": c, "items": items,
                         "plain_items_per_s": items / med(plain), "engine_items_per_s": items / med(engine),
                         "engine_vs_plain": median_ratio(plain, engine),
                         "ratio_per_repeat": [p / e for p, e in zip(plain, engine)],
                         "plain_cpu_ms_per_item": med(cpu[f"plain_c{c}"]),
                         "engine_cpu_ms_per_item": med(cpu[f"engine_c{c}"]),
                         "lines_written": sorted(lines[f"plain_c{c}"] | lines[f"engine_c{c}"]),
                         "same_scores_as_plain": same_scores(folder / f"plain-{c}.jsonl", folder / f"engine-{c}.jsonl",
                                                             judge)})
        # warm: the last level's first cache already holds every answer
        c = levels[-1]
        warm_db = folder / f"cache-{c}-0.db"
        sent_before = stub.stats()["answered"]
        start = time.perf_counter()
        engine_score(stub.base_url, judge_file, data, folder / "warm.jsonl", warm_db, c)
        warm_s = time.perf_counter() - start
        summary["warm_cache_items_per_s"] = items / warm_s
        summary["warm_cache_calls_sent"] = stub.stats()["answered"] - sent_before
        bar.update(1)
        worst = min(rows, key=lambda r: r["engine_vs_plain"])
        summary["lowest_ratio"] = {"concurrency": worst["concurrency"], "engine_vs_plain": worst["engine_vs_plain"]}
        summary["target_met"] = all(r["engine_vs_plain"] >= 0.9 for r in rows)
        summary["engine_cpu_ms_per_item_at_lowest"] = _cpu_breakdown(
            stub.base_url, judge_file, data, folder / "profiled.jsonl", folder / "profiled.db", worst["concurrency"],
            items)
        bar.update(1)
        bar.close()
        for n in memory_sizes:
            rows.append(memory_row(n, folder, stub.base_url, judge_file))
    memory = {r["items"]: r for r in rows if r["arm"] == "memory"}
    if len(memory) > 1:
        small, large = memory[min(memory)], memory[max(memory)]
        summary["memory_growth"] = {kind: large[f"{kind}_peak_rss_mb"] / small[f"{kind}_peak_rss_mb"]
                                    for kind in ("scripted", "cli_warm")}
        summary["memory_target_met"] = all(v <= 1.2 for v in summary["memory_growth"].values())
    return result("score-scale", config={"items": items, "levels": list(levels), "repeats": repeats,
                                         "memory_sizes": list(memory_sizes), "judge": "direct"},
                  rows=rows, summary=summary,
                  notes=["the stub answers at once in its own process; client and stub share the machine's cores",
                         "engine arm: a new call cache each repeat, so every item is a call; plain arm: the same "
                         "request body (response_format included) from a ThreadPoolExecutor",
                         "cpu_ms_per_item: this process's CPU time per item (all threads; the stub excluded)",
                         "memory: peak resident set (VmHWM) of a child process that scores the items"])


# ---------------------------------------------------------------------------------------------- memory

def memory_row(n: int, folder: Path, base_url: str, judge_file: Path) -> dict[str, Any]:
    """Peak memory of scoring ``n`` items, scripted (fills the cache) then the CLI on the warm cache."""
    data = write_items(folder / f"memory-{n}.jsonl", n)
    db = folder / f"memory-{n}.db"
    scripted = _child(["scripted", str(judge_file), str(data), str(folder / f"memory-{n}-scripted.jsonl"), str(db),
                       base_url])
    warm = _child(["cli_warm", str(judge_file), str(data), str(folder / f"memory-{n}-cli.jsonl"), str(db), base_url])
    db.unlink(missing_ok=True)
    data.unlink(missing_ok=True)
    return {"arm": "memory", "items": n,
            "scripted_peak_rss_mb": scripted["peak_rss_mb"], "scripted_items_per_s": n / scripted["seconds"],
            "cli_warm_peak_rss_mb": warm["peak_rss_mb"], "cli_warm_items_per_s": n / warm["seconds"],
            "lines_written": [scripted["lines"], warm["lines"]]}


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "judge_engine.bench.score_scale", *args], capture_output=True,
                         text=True, env={**os.environ, "OPENAI_API_KEY": "local"})
    if out.returncode != 0:
        raise RuntimeError(f"memory child {args[0]} failed: {out.stderr[-800:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class _InstantBackend:
    """Answers as the stub would, in process: the scoring path's memory without the HTTP client's."""

    name = "openai"
    supports_logprobs = False
    effective_structured_mode = "json_schema"  # the mode the openai backend learns from the stub

    def __init__(self, base_url: str):
        self.model_id = f"{base_url}|{MODEL}"  # the openai backend's, so the CLI run finds these answers

    def generate(self, messages, params):
        from ..llm.base import Completion
        from .stub_server import stub_score

        return Completion(texts=(json.dumps({"score": stub_score(messages)}),), prompt_tokens=100,
                          completion_tokens=6, model=MODEL, structured_mode="json_schema")


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: ru_maxrss would carry the parent's peak across fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child_main(argv: list[str]) -> int:
    kind, judge_file, data, out, db = argv[:5]
    start = time.perf_counter()
    if kind == "scripted":
        from ..export import load_judge
        from ..items import ItemFile
        from ..llm import LLMConfig, make_llm
        from ..score_files import score_file
        from ..store import Store

        exported = load_judge(Path(judge_file))
        llm = make_llm(LLMConfig(backend="openai", model=MODEL, base_url=argv[5], concurrency=32),
                       store=Store(db), backend=_InstantBackend(argv[5]))
        score_file(exported.judge, ItemFile(data, id_col="id"), llm=llm, out=out)
    else:
        engine_score(argv[5], Path(judge_file), Path(data), Path(out), Path(db), 32)
    peak = peak_rss_mb()
    lines = sum(1 for _ in open(out, encoding="utf-8"))
    print(json.dumps({"peak_rss_mb": peak, "seconds": time.perf_counter() - start, "lines": lines}))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))

"""``bench score-scale --whole-process``: ``score`` against a plain ``openai`` script as whole processes (issue 64
item 5), start-up included; see :mod:`.score_scale` for the arms. Out of that module to keep it one job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import med, result
from .score_scale import MODEL, _request_kwargs, bench_judge, write_items

PLAIN_SCRIPT = r"""
import json, sys, threading
from concurrent.futures import ThreadPoolExecutor

import openai

base_url, prompts, kwargs_file, out, concurrency = sys.argv[1:6]
kwargs = json.load(open(kwargs_file, encoding="utf-8"))
client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=2)
lock = threading.Lock()

def one(line, f):
    row = json.loads(line)
    reply = client.chat.completions.create(messages=[{"role": "user", "content": row["prompt"]}], **kwargs)
    text = json.dumps({"id": row["id"], "reply": reply.choices[0].message.content}) + "\n"
    with lock:
        f.write(text)

with open(prompts, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as f, \
        ThreadPoolExecutor(int(concurrency)) as pool:
    for future in [pool.submit(one, line, f) for line in lines if line.strip()]:
        future.result()
"""
"""The user's own script: no engine import, the prompts already written out (a template is an f-string)."""


def write_prompts(judge, items: Path, out: Path) -> Path:
    """Each item's prompt as the engine renders it (``direct_prompt``), one JSON line per item."""
    from ..methods.direct import direct_prompt
    from ..records import Sample

    with open(items, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as f:
        for line in lines:
            row = json.loads(line)
            sample = Sample(id=row["id"], input=row["input"], output=row["output"], group_id=row["id"])
            f.write(json.dumps({"id": row["id"], "prompt": direct_prompt(sample, judge.aspect_record,
                                                                          judge.task_info)}) + "\n")
    return out


def _timed(stub, command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``command`` to its end: wall seconds, seconds to the stub's first request, and what the stub saw."""
    stub.reset()
    started = time.time()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} exited {done.returncode}: {done.stderr[-600:]}")
    seen = stub.stats()
    return {"seconds": wall, "start_s": (seen["first_request_at"] or started) - started,
            "requests": seen["chat_requests"], "bodies_digest": seen["bodies_digest"]}


def run_whole_process(*, items: int, levels, repeats: int) -> dict[str, Any]:
    from .stub_server import StubServer

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OPENAI_API_KEY"] = "local"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]),
                                                    os.environ.get("PYTHONPATH", "")) if p)
    seen: dict[str, list[dict[str, Any]]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-score-processes-") as tmp, StubServer() as stub:
        folder = Path(tmp)
        judge = bench_judge()
        (folder / "judge.json").write_text(judge.to_json(), encoding="utf-8")
        data = write_items(folder / "items.jsonl", items)
        prompts = write_prompts(judge, data, folder / "prompts.jsonl")
        kwargs, _ = _request_kwargs(judge)
        (folder / "kwargs.json").write_text(json.dumps(kwargs), encoding="utf-8")

        def plain(c: int) -> list[str]:
            return [sys.executable, "-c", PLAIN_SCRIPT, stub.base_url, str(prompts), str(folder / "kwargs.json"),
                    str(folder / f"plain-{c}.jsonl"), str(c)]

        def engine(c: int, r: int) -> list[str]:
            out = folder / f"engine-{c}.jsonl"
            for stale in (out, out.with_name(out.name + ".judge")):
                stale.unlink(missing_ok=True)
            return [sys.executable, "-m", "judge_engine", "score", str(folder / "judge.json"), str(data), "--id-col",
                    "id", "--out", str(out), "--backend", "openai", "--model", MODEL, "--base-url", stub.base_url,
                    "--concurrency", str(c), "--db", str(folder / f"cache-{c}-{r}.db"), "--quiet"]

        _timed(stub, engine(levels[0], -1), env)  # warm-up: bytecode caches written, files in the page cache
        for r in range(repeats):
            for c in levels:
                pair = [("plain", plain(c)), ("engine", engine(c, r))]
                for arm, command in (pair if r % 2 == 0 else pair[::-1]):
                    seen.setdefault(f"{arm}_c{c}", []).append(_timed(stub, command, env))
                    loads.append(os.getloadavg()[0])
    rows = []
    for c in levels:
        plain_runs, engine_runs = seen[f"plain_c{c}"], seen[f"engine_c{c}"]
        ps, es = [x["seconds"] for x in plain_runs], [x["seconds"] for x in engine_runs]
        ratios = [p / e for p, e in zip(ps, es)]
        rows.append({"arm": f"c{c}", "concurrency": c, "items": items,
                     "plain_s": med(ps), "engine_s": med(es), "engine_vs_plain": med(ratios),
                     "ratio_per_repeat": ratios,
                     "plain_start_s": med([x["start_s"] for x in plain_runs]),
                     "engine_start_s": med([x["start_s"] for x in engine_runs]),
                     "requests": sorted({x["requests"] for x in plain_runs + engine_runs}),
                     "same_request_bodies": len({x["bodies_digest"] for x in plain_runs + engine_runs}) == 1})
    summary = {"target_met": all(r["engine_vs_plain"] >= 0.9 for r in rows),
               "lowest_ratio": min(r["engine_vs_plain"] for r in rows),
               "load_1min_during": [round(x, 2) for x in loads]}
    return result("score-scale", config={"items": items, "levels": list(levels), "repeats": repeats,
                                         "whole_process": True, "judge": "direct"}, rows=rows, summary=summary,
                  notes=["whole process: each arm a child process timed from its start to its exit",
                         "engine_vs_plain: median over repeats of plain seconds / engine seconds (target >= 0.9)",
                         "same_request_bodies: every run of both arms sent the same bodies (the stub's digest)",
                         "start_s: seconds from the child's start to the stub's first request"])

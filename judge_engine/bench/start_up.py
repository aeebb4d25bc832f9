"""Start-up (issue 67 item 2): seconds from a command's start until its first request reaches the server.

Each arm is a fresh ``python -m judge_engine ...`` child process against :mod:`.stub_server`, which stamps the
wall-clock time of the first chat request it gets (``/stats``; ``/reset`` before each arm); the figure is that
stamp minus the time just before the child was started, so the interpreter's own start, the imports, reading the
file or the dataset, the estimate printed before the first call and everything else a person waits for are in
it. The child is stopped once its first request has arrived (the rest is not start-up); each child asks for a
model name of its own, so a request of an earlier child still queued at the stub is not counted. Commands:

``score``        ``score judge.json items.jsonl`` with the direct judge of :mod:`.score_scale` (``--items`` rows)
``run_<method>`` ``run --method <method> --dataset summeval --aspect coherence --train 30 --test 20`` on a new
                 database each time (so no earlier timing or cache answers anything)
``python``       ``python -c pass``: the interpreter alone, the floor on this machine at this load

With ``--other PATH`` (a checkout of another version, e.g. ``git worktree add /tmp/before COMMIT``) every command
also runs from that tree's ``judge_engine`` (``PYTHONPATH``), the two alternated (A B, B A, ...) in the same
window, and each row gives the median of this tree over the other's and the ratio per repeat: on a shared,
loaded machine the ratio means more than either figure. The children write and use bytecode caches as an
installed package does (``PYTHONDONTWRITEBYTECODE`` is removed; one warm-up run per tree and command first).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import ROOT, med, result

RUN_ARGS = ["--dataset", "summeval", "--aspect", "coherence", "--train", "30", "--test", "20"]


def add_arguments(parser) -> None:
    parser.add_argument("--other", default=None, help="another checkout's root (its judge_engine is compared)")
    parser.add_argument("--commands", nargs="+", default=["python", "score", "run_direct", "run_hpss"],
                        help="python, score, run_<method> (default: python score run_direct run_hpss)")
    parser.add_argument("--items", type=int, default=6000, help="rows of the file `score` is given")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a first request")


def _command(name: str, stub_url: str, folder: Path, db: Path) -> list[str]:
    common = ["--backend", "openai", "--model", db.stem, "--base-url", stub_url, "--db", str(db), "--quiet"]
    if name == "python":
        return [sys.executable, "-c", "pass"]
    if name == "score":
        out = folder / "scored.jsonl"
        for stale in (out, out.with_name(out.name + ".judge")):
            stale.unlink(missing_ok=True)
        return [sys.executable, "-m", "judge_engine", "score", str(folder / "judge.json"), str(folder / "items.jsonl"),
                "--out", str(out), "--concurrency", "64", *common]
    if name.startswith("run_"):
        return [sys.executable, "-m", "judge_engine", "run", "--method", name[len("run_"):], *RUN_ARGS, *common]
    raise ValueError(f"unknown command {name!r}: python, score or run_<method>")


def time_to_first_request(stub, command: list[str], env: dict[str, str], timeout: float,
                          model: str = "", cwd: Path | None = None) -> tuple[float, float]:
    """Seconds from starting ``command`` until the stub got its first chat request for ``model`` (the child is then
    stopped), and the child's CPU seconds (user + system) until it was stopped: on a loaded machine the CPU a
    command spends moves far less than its wall time, which waits for the cores."""
    stub.reset()
    started = time.time()
    # in a folder with no judge_engine: `python -m` puts the working directory first on sys.path, ahead of PYTHONPATH,
    # so run from a clone every child would import the clone's package whichever tree it was meant to time
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    try:
        if command[1:] == ["-c", "pass"]:
            spent = _cpu(child)  # waits for it to end
            return time.time() - started, spent
        while time.time() - started < timeout:
            first = stub.stats()["first_by_model"].get(model)
            if first is not None:
                child.kill()
                return first - started, _cpu(child)
            if child.poll() is not None:
                raise RuntimeError(f"{' '.join(command[2:5])} ended ({child.returncode}) before any request "
                                   "(run the command by hand to see why)")
            time.sleep(0.01)
        raise RuntimeError(f"no request within {timeout:.0f} s from {' '.join(command[2:5])}")
    finally:
        if child.returncode is None:
            child.kill()
            _cpu(child)


_SPENT: dict[int, float] = {}


def _cpu(child: subprocess.Popen) -> float:
    """The CPU seconds of ``child``, waited for until it ends (reaped here, with its resource usage)."""
    if child.pid not in _SPENT:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        _SPENT[child.pid] = usage.ru_utime + usage.ru_stime
    return _SPENT[child.pid]


def run(*, other: str | None = None, commands: list[str] | tuple[str, ...] = ("python", "score", "run_direct"),
        items: int = 6000, repeats: int = 5, timeout: float = 60.0, **_: Any) -> dict[str, Any]:
    from ..data.benchmarks import data_dir_origin
    from .score_scale import bench_judge, write_items
    from .stub_server import StubServer

    trees = {"this": ROOT} | ({"other": Path(other).resolve()} if other else {})
    for tree in trees.values():
        if not (tree / "judge_engine" / "__init__.py").is_file():
            raise ValueError(f"--other {tree} holds no judge_engine package")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["JUDGE_WORKBENCH_DATA"] = str(data_dir_origin()[0])  # the other tree's clone may have no ../shared/data
    env.pop("JUDGE_WORKBENCH_DB", None)
    seconds: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-start-up-") as tmp, StubServer() as stub:
        folder = Path(tmp)
        (folder / "judge.json").write_text(bench_judge().to_json(), encoding="utf-8")
        write_items(folder / "items.jsonl", items)
        arms = [(c, t) for c in commands for t in trees]
        for r in range(-1, repeats):  # -1: the warm-up, which writes the bytecode caches; not counted
            order = arms if r % 2 == 0 else arms[::-1]
            for command, tree in order:
                db = folder / f"{tree}-{command}-{r}.db"
                took, spent = time_to_first_request(stub, _command(command, stub.base_url, folder, db),
                                                    {**env, "PYTHONPATH": str(trees[tree])}, timeout, model=db.stem,
                                                    cwd=folder)
                if r >= 0:
                    seconds.setdefault((command, tree), []).append(took)
                    cpu.setdefault((command, tree), []).append(spent)
            loads.append(os.getloadavg()[0])
    rows = []
    for command in commands:
        mine = seconds[(command, "this")]
        row: dict[str, Any] = {"command": command, "this_median_s": med(mine), "this_min_s": min(mine),
                               "this_s": mine, "this_cpu_s": med(cpu[(command, "this")])}
        if other:
            theirs = seconds[(command, "other")]
            row |= {"other_median_s": med(theirs), "other_min_s": min(theirs), "other_s": theirs,
                    "other_cpu_s": med(cpu[(command, "other")]),
                    "this_over_other": med([a / b for a, b in zip(mine, theirs)]),
                    "ratio_per_repeat": [a / b for a, b in zip(mine, theirs)],
                    "cpu_this_over_other": med(cpu[(command, "this")]) / med(cpu[(command, "other")])}
        rows.append(row)
    return result("start-up", config={"other": other, "commands": list(commands), "items": items,
                                      "repeats": repeats},
                  rows=rows, summary={"load_1min_during": [round(x, 2) for x in loads]},
                  notes=["seconds from starting the child process to the stub's first chat request",
                         "cpu_s: the child's CPU seconds (user + system) until it was stopped, just after that request",
                         "this_over_other < 1: this tree starts sooner; arms alternated in the same window",
                         "python: `python -c pass`, the interpreter alone at this load"])

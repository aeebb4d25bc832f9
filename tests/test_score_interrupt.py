"""Ctrl-C on `score` (issue 64 item 2): at any moment of the run, the imports of its first seconds included, one line
with the command that resumes and exit status 130, never a traceback; requests stuck in flight on a server that
does not answer are left behind instead of waited for (before: still running 300 s after the Ctrl-C, and a second
Ctrl-C printed the message while the process went on). A real process against the stub server, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_engine.bench.stub_server import MODEL, StubServer
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[1]
ENOUGH_S = 60
"""A bound on the wait for the process, so a hung one fails the test instead of holding the suite."""


def _command(tmp_path, stub, n=200):
    judge = tmp_path / "judge.json"
    judge.write_text(DirectScoring().fit([], Aspect("quality", 1, 5, "How good the reply is."),
                                         FitContext(llm=None, task=TaskInfo(task="dialogue"))).to_json(),
                     encoding="utf-8")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"i{k}", "input": f"source {k}", "output": f"reply {k}"}) + "\n"
                             for k in range(n)), encoding="utf-8")
    return [sys.executable, "-m", "judge_engine", "score", str(judge), str(items), "--out", str(tmp_path / "out.jsonl"),
            "--backend", "openai", "--model", MODEL, "--base-url", stub.base_url, "--db", str(tmp_path / "cache.db"),
            "--quiet", "--timeout", "25"]


def _interrupt(command, after_s, *, twice=False):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    if twice:
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, err = process.communicate(timeout=ENOUGH_S)
    return process.returncode, err, time.monotonic() - started


def test_ctrl_c_with_requests_stuck_in_flight_exits_with_the_resume_command(tmp_path):
    with StubServer(hang_containing="*", hang_seconds=40) as stub:
        command = _command(tmp_path, stub)
        code, err, took = _interrupt(command, 4.0, twice=True)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("stopped by Ctrl-C; run the same command again to score the rest"), err
    assert "score" in last and str(tmp_path / "out.jsonl") in last and "--timeout 25" in last
    print(f"\nexited {took:.2f} s after the Ctrl-C with requests stuck in flight")


@pytest.mark.parametrize("after_s", [0.8, 1.5, 2.5])
def test_ctrl_c_during_start_up_is_one_line_never_a_traceback(tmp_path, after_s):
    # before: a Ctrl-C in the first 2.5 s (the imports) printed a 50-67-line traceback. Not sooner than 0.8 s: a
    # Ctrl-C while Python itself starts (its site module, about 0.1 s, longer under load) is Python's own
    with StubServer() as stub:
        code, err, _ = _interrupt(_command(tmp_path, stub, n=20_000), after_s)
    lines = err.strip().splitlines()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert code == 130 and lines and lines[-1].startswith("stopped by Ctrl-C"), (code, err)

"""bench app --loop's pieces that need no app: the CPU it reads from /proc, and a module that loads no Streamlit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_engine.bench import refit_loop

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end:\n    pass\n"


def test_importing_the_loop_benchmark_loads_no_streamlit():
    # judge_engine imports no streamlit; the benchmark drives the app's script only inside time_click
    code = "import sys, judge_engine.bench.refit_loop, judge_engine.bench.app_latency; " \
           "print(sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "[]"


def test_a_child_is_seen_while_it_runs_and_its_cpu_counted_once_it_is_waited_for():
    _, ended_before = refit_loop._process_cpu()
    child = subprocess.Popen([sys.executable, "-c", BURN + "import sys\nsys.stdin.read()\n"], stdin=subprocess.PIPE)
    try:
        assert child.pid in refit_loop._children()
        deadline = time.monotonic() + 120  # it burns 0.3 s of CPU, then waits (long on a loaded machine)
        while refit_loop._ticks(child.pid) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert refit_loop._ticks(child.pid) >= 0.25
    finally:
        child.communicate(b"")
    assert refit_loop._ticks(child.pid) == 0.0  # gone: nothing to read
    assert child.pid not in refit_loop._children()
    assert refit_loop._process_cpu()[1] - ended_before >= 0.25


def test_this_process_cpu_grows_with_its_work():
    before, _ = refit_loop._process_cpu()
    exec(BURN)
    assert refit_loop._process_cpu()[0] - before >= 0.25

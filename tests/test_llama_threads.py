"""The embedded model's thread count follows what else the machine runs (judge_engine.llm.threads)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_engine.llm import threads


def _task(root: Path, pid: int, tid: int, name: str, state: str) -> None:
    folder = root / str(pid) / "task" / str(tid)
    folder.mkdir(parents=True)
    (folder / "stat").write_text(f"{tid} ({name}) {state} 1 {tid} {tid} 0 -1 4194304 100 0 0 0\n")


def test_running_threads_of_other_processes_are_counted_and_own_are_not(tmp_path):
    _task(tmp_path, 10, 10, "python", "R")
    _task(tmp_path, 10, 11, "python", "S")
    _task(tmp_path, 20, 20, "busy (a) R", "R")  # a name with spaces and parentheses: the state follows the last ")"
    _task(tmp_path, 20, 21, "busy", "R")
    _task(tmp_path, 30, 30, "sleeper", "S")
    _task(tmp_path, 99, 99, "us", "R")
    _task(tmp_path, 99, 100, "us", "R")
    (tmp_path / "self").mkdir()  # not a process folder
    assert threads.others_running(tmp_path, own_pid=99) == 3


def test_no_proc_means_unknown(tmp_path):
    assert threads.others_running(tmp_path / "missing") is None


@pytest.mark.parametrize("cores, others, expected", [
    (2, 0, 2), (2, 1, 1), (2, 5, 1), (8, 1, 7), (16, 0, threads.MAX_THREADS), (16, 3, threads.MAX_THREADS - 3),
    (4, None, 4),
])
def test_threads_leave_other_processes_their_cores(cores, others, expected):
    assert threads.threads_for(cores, others) == expected


@pytest.mark.parametrize("fixed, expected", [("3", 3), (" 1 ", 1), ("0", 2), ("two", 2), ("", 2)])
def test_a_fixed_count_from_the_environment_wins_when_it_is_a_positive_integer(fixed, expected):
    assert threads.threads_for(2, 0, fixed) == expected


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads from Linux's /proc")
def test_a_spinning_process_is_seen():
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        deadline = time.monotonic() + 10
        state = ""
        while state != "R" and time.monotonic() < deadline:
            time.sleep(0.05)
            state = Path(f"/proc/{spinner.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state == "R"
        assert (threads.others_now() or 0) >= 1
    finally:
        spinner.kill()
        spinner.wait()


def test_request_threads_reuses_a_recent_count(monkeypatch):
    looks = []
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    monkeypatch.setattr(threads, "others_now", lambda: looks.append(1) or 1)
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    threads._LAST.clear()
    assert threads.request_threads() == 1
    assert threads.request_threads() == 1
    assert len(looks) == 1
    threads._LAST[0] -= threads.REUSE_S + 1  # the count grew old
    assert threads.request_threads() == 1
    assert len(looks) == 2
    # a count that took a second (thousands of threads) is reused for 50 s: counting stays 2% of the time
    threads._LAST[0] -= threads.REUSE_S + 1
    threads._LAST[2] = 1.0
    assert threads.request_threads() == 1
    assert len(looks) == 2
    monkeypatch.setenv(threads.THREADS_ENV, "2")
    assert threads.request_threads() == 2
    threads._LAST.clear()


def test_usable_cores_is_at_least_one():
    assert 1 <= threads.usable_cores() <= (os.cpu_count() or 1)

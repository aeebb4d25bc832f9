"""How many threads the embedded model computes with, given what else the machine is running.

llama.cpp splits every step of a generation across its threads and waits at a barrier until each has
finished its share. When another process holds a core, one of the threads is descheduled and the others
wait for it at every token: on this workplace's 2 cores (SmolLM2, 2026-11-29, docs/benchmarks.md "The
embedded model beside other work") generation went from 83 tokens a second alone to 22 beside one
CPU-bound process with 2 threads, and 67-71 with 1. Alone, 2 threads are faster (83 against 58-68, prompt
176 against 113). So each request counts the threads of other processes that are running at that moment
and leaves them their cores. Results do not depend on the thread count (logprobs bit-identical at 1 and 2
threads, measured), so this changes the time of a request and never its reply.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

THREADS_ENV = "JUDGE_WORKBENCH_LLAMA_THREADS"
"""A fixed thread count for the embedded model (a positive integer), instead of following the load."""

MAX_THREADS = 8
"""Threads beyond this gain little on a model as small as SmolLM2 and take cores from the rest of the machine."""


def usable_cores() -> int:
    """Cores this process may run on (its affinity where the OS tells it, else every core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def others_running(proc: Path = Path("/proc"), own_pid: int | None = None) -> int | None:
    """Threads of other processes that are running or ready to run now (state ``R`` in their ``stat``), or
    None where ``/proc`` cannot tell (not Linux)."""
    own = str(os.getpid() if own_pid is None else own_pid)
    try:
        pids = [entry for entry in os.listdir(proc) if entry.isdigit() and entry != own]
    except OSError:
        return None
    running = 0
    for pid in pids:
        try:
            tasks = os.listdir(proc / pid / "task")
        except OSError:  # the process ended while we looked
            continue
        for tid in tasks:
            try:
                stat = (proc / pid / "task" / tid / "stat").read_bytes()
            except OSError:
                continue
            # the state follows the command name, which is in parentheses and may itself hold spaces
            state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]
            running += state == b"R"
    return running


def threads_for(cores: int, others: int | None, fixed: str | None = None) -> int:
    """Threads for one request: ``fixed`` (:data:`THREADS_ENV`) when it is a positive integer, else every
    usable core up to :data:`MAX_THREADS` less one for each thread of another process running now, at least one.
    ``others`` None (unknown) takes every core, as llama.cpp would."""
    if fixed and fixed.strip().isdigit() and int(fixed) > 0:
        return int(fixed)
    limit = min(cores, MAX_THREADS)
    return max(1, limit - (others or 0))


SAMPLES = 3
SAMPLE_GAP_S = 0.003
"""A process that holds a core is running in every look; a shell command or a kernel worker that woke for a
moment is in one. The fewest of :data:`SAMPLES` looks this far apart is what the request competes with."""

REUSE_S = 2.0
"""A count is reused for this long: short scoring requests come several a second, and one look at ``/proc``
takes about 6 ms with 200 threads on the machine."""

MAX_SHARE_COUNTING = 0.02
"""At most this share of the time goes to counting: on a machine with thousands of threads a count takes
longer, and is then reused for correspondingly longer than :data:`REUSE_S`."""

_LAST: list[float] = []  # [time, threads, seconds the count took] of the latest count, shared by the model's calls
_LAST_LOCK = threading.Lock()


def others_now(looks: int = SAMPLES, gap_s: float = SAMPLE_GAP_S) -> int | None:
    """The fewest threads of other processes running over ``looks`` looks ``gap_s`` apart (None: cannot tell)."""
    counts = []
    for i in range(looks):
        if i:
            time.sleep(gap_s)
        count = others_running()
        if count is None:
            return None
        counts.append(count)
    return min(counts)


def request_threads() -> int:
    """:func:`threads_for` on this machine now (a count at most :data:`REUSE_S` old)."""
    fixed = os.environ.get(THREADS_ENV)
    if fixed:
        return threads_for(usable_cores(), None, fixed)
    with _LAST_LOCK:
        if _LAST and time.monotonic() - _LAST[0] < max(REUSE_S, _LAST[2] / MAX_SHARE_COUNTING):
            return int(_LAST[1])
    start = time.monotonic()
    threads = threads_for(usable_cores(), others_now())
    with _LAST_LOCK:
        _LAST[:] = [time.monotonic(), threads, time.monotonic() - start]
    return threads

"""How a run's worker ended when it could not record that itself: a crash (a signal such as SIGSEGV, or an exit
code) or a deliberate stop, with the step it was at and the last lines of its log.

- :class:`WorkerExit` is one such end; :func:`record_exit` keeps it (and marks the run interrupted with
  :attr:`WorkerExit.reason` in the same transaction), :func:`worker_exits` reads a run's ends, oldest first.
- :func:`repeated_death` finds a run whose worker died by a signal twice in a row at the same step, which a
  resume would most likely repeat; :func:`refusal` says so, with what to do.
- :func:`log_tail` reads a run log after its last :func:`marker` line, with secrets masked, and
  :func:`signal_in_log` finds the signal that faulthandler named there.

The ends live in their own table, ``worker_exits``, created in place by this module's migration set on the
first write (``store.py``, the home of every other table, is at its size limit); only sqlite-utils' table API
touches it.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

from ..sqlite_lib import Database, Migrations

from ..store import LIVE_STATUSES, Store

TABLE = "worker_exits"
DIED, STOPPED = "died", "stopped"
TAIL_LINES = 20
"""Lines of a dead worker's log kept with the run."""
MARKER = "--- judge-workbench:"
"""Starts the line written to a run's log each time a worker starts on it: a tail is read after the last one,
so an earlier crash's output is never taken for this one's."""
FATAL_SIGNALS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
                 "Floating-point exception": "SIGFPE", "Floating point exception": "SIGFPE",
                 "Illegal instruction": "SIGILL"}
"""What faulthandler writes after 'Fatal Python error: ' for each signal it catches -> the signal's name."""
CRASH_SIGNALS = ("SIGSEGV", "SIGILL", "SIGBUS", "SIGABRT", "SIGFPE")
"""Signals a process sends itself when its native code goes wrong (a llama.cpp built for another CPU)."""
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)

exit_migrations = Migrations("judge_engine.worker_exits")


@exit_migrations()
def m001_worker_exits(db: Database) -> None:
    """One row per worker end that the worker did not record itself."""
    db[TABLE].create({"id": int, "run_id": int, "ts": float, "kind": str, "returncode": int, "signal": str,
                      "stage": str, "done": int, "total": int, "log_tail": str, "pid": int, "note": str},
                     pk="id", if_not_exists=True)  # two processes may race to create it: the second keeps it
    db[TABLE].create_index(["run_id", "id"], if_not_exists=True)


@dataclass(frozen=True)
class WorkerExit:
    """One end of a run's worker that the worker did not record itself."""

    run_id: int
    kind: str
    """``died`` (a crash, or an exit without recording an end) or ``stopped`` (someone stopped the run)."""
    ts: float
    returncode: int | None = None
    """The worker's exit status as ``subprocess`` gives it (negative: the signal); None when not known (the
    worker was found gone, e.g. ``judge-workbench run`` itself was killed)."""
    signal: str = ""
    """The signal's name (``SIGSEGV``) when it died by one; read from faulthandler's output when found gone."""
    stage: str = ""
    """The run's stage, done and total when it ended: the step it died at."""
    done: int = 0
    total: int = 0
    log_tail: str = ""
    """The last lines of the worker's output (secrets masked)."""
    pid: int | None = None
    note: str = ""
    """For a stop, who stopped it; for a worker found gone, how its end was learned."""

    @property
    def step(self) -> str:
        """The step in words: ``scoring (step 3 of 9)``."""
        return f"{self.stage or 'starting'} (step {self.done} of {self.total})"

    @property
    def reason(self) -> str:
        """The run's message: ``worker died by SIGSEGV at scoring (step 3 of 9)``."""
        if self.kind == STOPPED:
            return self.note or "stopped"
        if self.signal:
            cause = f"died by {self.signal}" + (" (named in its log)" if self.returncode is None else "")
        elif self.returncode is not None:
            cause = f"exited with code {self.returncode}"
        else:
            cause = "ended without recording why"
        return f"worker {cause} at {self.step}"

    @property
    def last_line(self) -> str:
        """The log's most telling line: faulthandler's 'Fatal Python error: ...' if there is one, else its last."""
        lines = [line.strip() for line in self.log_tail.splitlines() if line.strip()]
        fatal = [line for line in lines if line.startswith("Fatal Python error: ")]
        return (fatal or lines or [""])[-1]


def signal_name(returncode: int | None) -> str:
    """``SIGSEGV`` for a return code of -11 (a process ended by a signal); "" otherwise."""
    if returncode is None or returncode >= 0:
        return ""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def marker(run_id: int, pid: int, when: float | None = None) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if when is None else when))
    return f"{MARKER} run {run_id}, worker {pid}, started {stamp} ---\n"


def secrets_of(env: Mapping[str, str]) -> list[str]:
    """Values of the environment that look like credentials (names with KEY, TOKEN, SECRET or PASSWORD), to be
    masked in any log text kept: an API key travels only in the environment, and nothing written may carry it."""
    return [v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= 8]


def log_tail(path: str | Path, *, lines: int = TAIL_LINES, secrets: list[str] | None = None) -> str:
    """The last ``lines`` lines of the log after its last :func:`marker` line ("" when there is none)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 256_000))  # a tail, not a runaway log read whole
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    start = text.rfind(MARKER)
    if start >= 0:
        text = text[text.find("\n", start) + 1:] if "\n" in text[start:] else ""
    all_lines = text.rstrip().splitlines()
    kept = all_lines[-lines:]
    fatal = [line for line in all_lines[:-lines] if line.startswith("Fatal Python error: ")]
    if fatal:  # faulthandler's first line names the signal: kept above a stack too long for the tail
        kept = [fatal[-1], "..."] + kept[2:]
    text = "\n".join(kept)
    for secret in sorted(secrets if secrets is not None else secrets_of(os.environ), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def signal_in_log(tail: str) -> str:
    """The signal faulthandler named in ``tail`` ('Fatal Python error: Segmentation fault' -> SIGSEGV), or ""."""
    found = ""
    for line in tail.splitlines():
        if line.startswith("Fatal Python error: "):
            found = FATAL_SIGNALS.get(line.removeprefix("Fatal Python error: ").strip(), found)
    return found


def _ensure(store: Store) -> None:
    with store.write() as db:  # BEGIN IMMEDIATE: processes that start at once create the table once
        if exit_migrations.pending(db):
            exit_migrations.apply(db)


def record_exit(store: Store, end: WorkerExit, *, only_if_live: bool = True) -> bool:
    """Keep ``end``; for a death also mark the run ``interrupted`` with :attr:`WorkerExit.reason`. With
    ``only_if_live``, a death is recorded only while the run is still queued or running, checked in the same
    transaction: a worker that recorded its own end (finished, failed, stopped) is not overwritten. Returns
    whether it was recorded."""
    _ensure(store)
    with store.write() as db:
        if end.kind == DIED:
            if only_if_live and store.run(end.run_id).status not in LIVE_STATUSES:
                return False
            store.update_run(end.run_id, status="interrupted", message=end.reason)
        db[TABLE].insert(asdict(end))
    return True


def worker_exits(store: Store, run_id: int) -> list[WorkerExit]:
    """Run ``run_id``'s recorded worker ends, oldest first (none on a database that never had one)."""
    table = store.db[TABLE]
    if not table.exists():
        return []
    fields = WorkerExit.__dataclass_fields__
    return [WorkerExit(**{k: v for k, v in r.items() if k in fields})
            for r in table.rows_where("run_id = ?", [run_id], order_by="id")]


def last_death(store: Store, run_id: int) -> WorkerExit | None:
    """The run's latest end when it was a death (None when it was a stop, or there is none)."""
    ends = worker_exits(store, run_id)
    return ends[-1] if ends and ends[-1].kind == DIED else None


def stop_requested(store: Store, run_id: int, since: float) -> bool:
    """Whether someone stopped run ``run_id`` after ``since`` (the supervisor's start): its worker's end is then
    that stop, not a crash."""
    return any(e.kind == STOPPED and e.ts >= since for e in worker_exits(store, run_id))


def repeated_death(store: Store, run_id: int) -> WorkerExit | None:
    """The latest death when the run's last two worker ends were both deaths by a signal at the same step
    (stage, done, total) and the run still stands where the second left it, which a resume would most likely
    meet a third time; else None."""
    ends = worker_exits(store, run_id)[-2:]
    if len(ends) < 2 or any(e.kind != DIED or not e.signal for e in ends):
        return None
    a, b = ends
    run = store.run(run_id)
    if run.status != "interrupted" or run.message != b.reason:  # it ended otherwise since (a forced resume)
        return None
    return b if (a.stage, a.done, a.total) == (b.stage, b.done, b.total) else None


def refusal(run_id: int, death: WorkerExit, *, cli: bool = True) -> str:
    """Why a resume of run ``run_id`` is refused after :func:`repeated_death`, and what to do."""
    if death.signal in CRASH_SIGNALS:
        why = ("the embedded model's native code (llama.cpp) most likely crashes on this CPU: check the model on "
               "its own, or rebuild llama-cpp-python for a portable CPU baseline with "
               "'make clean-venv && make install'")
    elif death.signal == "SIGKILL":
        why = "something ended it from outside, most often the system running out of memory: free memory first"
    else:
        why = "find the cause in its log first"
    anyway = "resume with --force" if cli else "press Resume anyway"
    return (f"run {run_id}'s worker died by {death.signal} twice at {death.step}; resuming would most likely die "
            f"the same way, so it was not resumed. {why[0].upper()}{why[1:]}; or {anyway} to try again.")

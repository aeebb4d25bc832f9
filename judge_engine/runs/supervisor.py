"""The supervisor of a run's worker: ``python -m judge_engine.runs.supervisor RUN_ID --db PATH --log PATH``.

:func:`judge_engine.runs.start_run` launches it detached in a session of its own, so it outlives the app that
started it. It starts the real worker (``python -m judge_engine resume RUN_ID``) in a process group of its own,
waits for it, and when the worker ends while its run is still queued or running (a worker records every end it
lives through: finished, failed, interrupted) records how it died: the signal (``SIGSEGV``) or exit code, the
step it was at and the last lines of its log (:mod:`.exits`). The run is then ``interrupted`` with that reason.

A deliberate stop is not a crash: :func:`judge_engine.runs.stop_runs` records a ``stopped`` end before it
signals the worker (only the worker and its group: the supervisor's command line is not a worker's), and the
supervisor leaves an end after such a record to it.

A run executed in-process (``judge-workbench run``, or ``resume`` typed in a terminal) has no supervisor: a
fatal signal ends the command itself. :func:`fatal_errors_logged` has faulthandler write the Python stack into
the run's log then, and :func:`found_gone` reads it afterwards (the signal faulthandler named), so ``runs``
tells the crash and ``resume`` records it (:func:`settle`) before deciding whether to resume.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..records import RunRecord
from ..store import Store
from .exits import (DIED, WorkerExit, log_tail, marker, record_exit, secrets_of, signal_in_log, signal_name,
                    stop_requested)
from .workers import _pid_alive

RUN_LOG_ENV = "JUDGE_WORKBENCH_RUN_LOG"
"""Set in a supervised worker's environment to its log, whose marker the supervisor has written."""


def log_path(db_path: str | Path, run_id: int) -> Path:
    """Where run ``run_id``'s worker writes: ``logs/run-N.log`` beside the database."""
    return Path(db_path).parent / "logs" / f"run-{run_id}.log"


def worker_command(db_path: str | Path, run_id: int, *, force: bool = False) -> list[str]:
    return [sys.executable, "-m", "judge_engine", "resume", str(run_id), "--db", str(db_path), "--quiet",
            *(["--force"] if force else [])]


def supervise(db_path: str | Path, run_id: int, log: str | Path, command: list[str], *,
              launched: float | None = None) -> int:
    """Run ``command`` (the worker) with its output appended to ``log``; record its end when it did not.
    Returns the worker's exit status the way a shell gives it (128 + the signal).

    A run stopped since ``launched`` (when :func:`~judge_engine.runs.workers.start_run` started this supervisor)
    gets no worker: a Stop that came while this process was still starting found no worker to signal, and one
    started after it would carry on the run the user had stopped (a first look cancelled 4 s after its start
    left a worker running in a fresh clone's test run at load ~6). Returns 0 then."""
    log = Path(log)
    if launched is not None and stop_requested(Store(db_path), run_id, launched):
        return 0
    started = time.time()
    env = {**os.environ, RUN_LOG_ENV: str(log)}
    with open(log, "ab") as out:
        out.write(marker(run_id, os.getpid(), started).encode())
        out.flush()
        # its own process group: a stop signals the worker and whatever it started, never the supervisor
        worker = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                  process_group=0)
    return ended(db_path, run_id, log, worker.pid, worker.wait(), started, env)


def ended(db_path: str | Path, run_id: int, log: str | Path, pid: int, returncode: int, started: float,
          env: dict[str, str]) -> int:
    """Record how worker ``pid`` of run ``run_id`` ended (``returncode`` as :attr:`subprocess.Popen.returncode`
    gives it: minus the signal) unless the run was stopped since ``started`` or another worker has it now; the
    status the way a shell gives it (128 + the signal)."""
    store = Store(db_path)
    if not stop_requested(store, run_id, started):
        run = store.run(run_id)
        if not (run.pid and run.pid != pid and _pid_alive(run.pid)):  # not another worker's run now
            record_exit(store, WorkerExit(run_id, DIED, time.time(), returncode=returncode,
                                          signal=signal_name(returncode), stage=run.stage, done=run.done,
                                          total=run.total, log_tail=log_tail(log, secrets=secrets_of(env)),
                                          pid=pid))
    return returncode if returncode >= 0 else 128 - returncode


def found_gone(store: Store, run: RunRecord) -> WorkerExit | None:
    """How run ``run``'s worker ended when it is stored ``running`` but its process is gone and nobody recorded
    why (an in-process ``run`` killed, a worker started before supervisors): the signal faulthandler named in
    its log, if any, and the log's last lines. None for any other run."""
    if run.status != "running" or _pid_alive(run.pid):
        return None
    tail = log_tail(log_path(store.path, run.id))
    return WorkerExit(run.id, DIED, time.time(), signal=signal_in_log(tail), stage=run.stage, done=run.done,
                      total=run.total, log_tail=tail, pid=run.pid, note="found gone")


def settle(store: Store, run_id: int) -> WorkerExit | None:
    """Record :func:`found_gone`'s end of run ``run_id`` (a resume does, before deciding); None if none."""
    end = found_gone(store, store.run(run_id))
    return end if end is not None and record_exit(store, end) else None


@contextmanager
def fatal_errors_logged(db_path: str | Path, run_id: int) -> Iterator[None]:
    """faulthandler on while run ``run_id`` executes: a fatal signal (SIGSEGV in native code) writes the Python
    stack of the thread it hit (the one that crashed, not the idle others) to the run's log before the process
    dies. A supervised worker's standard error is
    that log already; in-process (the CLI) the log is opened here, a marker written first, and closed after.
    Where faulthandler was on already (``PYTHONFAULTHANDLER``, pytest) its choice of file is kept."""
    if os.environ.get(RUN_LOG_ENV):
        if not faulthandler.is_enabled():
            faulthandler.enable(all_threads=False)  # the process ends with the run: nothing to undo
        yield
        return
    try:
        path = log_path(db_path, run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        out = open(path, "a", encoding="utf-8")
    except OSError:  # an unwritable folder: the crash goes to standard error as ever
        yield
        return
    with out:
        out.write(marker(run_id, os.getpid()))
        out.flush()
        mine = not faulthandler.is_enabled()
        if mine:
            faulthandler.enable(file=out, all_threads=False)
        try:
            yield
        finally:
            if mine:
                faulthandler.disable()


def _stop_noted(signum: int, frame: object) -> None:
    """SIGINT to the supervisor (a terminal's Ctrl-C, an old-style group stop) is left to the worker, which
    gets it too and records the interrupt; the supervisor goes on waiting to record anything else."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judge_engine.runs.supervisor",
                                     description="execute a run in a worker and record how the worker ended")
    parser.add_argument("run_id", type=int)
    parser.add_argument("--db", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--force", action="store_true", help="resume even after repeated deaths at one step")
    parser.add_argument("--launched", type=float, default=None,
                        help="when the run was started (epoch seconds): a stop recorded since means no worker")
    args = parser.parse_args(argv)
    # a handler, not SIG_IGN: an ignored SIGINT would be inherited by the worker, which then could not be stopped
    signal.signal(signal.SIGINT, _stop_noted)
    return supervise(args.db, args.run_id, args.log, worker_command(args.db, args.run_id, force=args.force),
                     launched=args.launched)


if __name__ == "__main__":
    sys.exit(main())

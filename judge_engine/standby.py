"""A warm worker: ``python -m judge_engine.standby --db PATH``, started before any run needs it.

A program, not part of :mod:`.runs`: it imports what a run's worker imports (the command line, the trust
report), which stand above the runs package; :func:`.runs.workers.keep_standby` starts it by name.

A worker started for a run is a fresh Python that imports the methods, scikit-learn, SciPy and pandas before its
first step: 4.7 s at load 10, 73 % of a HypoEval re-score whose every request is in the cache (its own work took
0.1-0.4 s; issue 62 item 6). :func:`judge_engine.runs.workers.start_run` keeps one of these processes ready per
database: it imports all of that at once, then waits on its standard input for one run. Given one, it does what a
fresh supervisor and worker do (:mod:`.supervisor`): it forks, the child executes the run exactly as ``python -m
judge_engine resume RUN_ID --db PATH`` would (its own process group, its output in the run's log), and the parent
waits for it and records how it ended when the child could not. One run per process: the next one gets the next
standby.

The forked worker's command line is the standby's, so a stop would not find it by ``resume RUN_ID``: it names its
run in its process name instead (:func:`.runs.workers.standby_worker_name`, ``/proc/PID/comm``), which
:func:`judge_engine.runs.workers.is_worker` reads. Linux only; elsewhere every run gets a fresh worker.

The job is one JSON line: ``run_id``, ``launched`` (a stop recorded since means no worker), ``force``, ``log``
(the run's log) and ``env`` (only what the run adds to the environment the standby was started with: an API key
typed in the app, never written anywhere). On standard output it says ``ready`` once it has imported everything
and ``taken`` when it has the run; its output then goes to the run's log. End of input (the app that started it is gone) ends it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

def warm() -> None:
    """Import what a worker needs before its first step (what ``resume`` would import on the way)."""
    from . import __main__ as cli  # noqa: F401  the command a worker runs
    from . import methods, trust  # noqa: F401  every method registered; the run's trust report
    from .runs import cost, execute, summary, supervisor  # noqa: F401
    from .methods import hd_eval, hypoeval  # noqa: F401
    import sklearn.neural_network  # noqa: F401  HD-Eval's aggregators, imported on their first fit
    import sklearn.model_selection  # noqa: F401


def _become_worker(job: dict, db: str) -> int:
    """In the forked child: the run's worker, as ``python -m judge_engine resume`` would be."""
    from . import __main__ as cli
    from .runs.supervisor import RUN_LOG_ENV
    from .runs.workers import standby_worker_name
    os.setpgid(0, 0)  # its own process group: a stop signals the worker and what it started, never the supervisor
    try:
        Path("/proc/self/comm").write_text(standby_worker_name(job["run_id"]))
    except OSError:
        return 70  # no name: a stop could not find this worker (is_worker), so it must not run
    os.environ.update(job.get("env") or {})
    os.environ[RUN_LOG_ENV] = job["log"]
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C semantics: the run records the interrupt
    argv = ["resume", str(job["run_id"]), "--db", db, "--quiet", *(["--force"] if job.get("force") else [])]
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1


def take(job: dict, db: str) -> int:
    """Execute ``job``'s run in a forked worker and record its end when it could not (:func:`.supervisor.ended`).
    Standard output and error already go to the run's log."""
    from .store import Store
    from .runs.exits import marker, stop_requested
    from .runs.supervisor import ended
    run_id = int(job["run_id"])
    store = Store(db)
    stopped = stop_requested(store, run_id, float(job["launched"]))
    store.close()  # before the fork: the worker opens its own connection
    if stopped:
        return 0
    started = time.time()
    sys.stdout.write(marker(run_id, os.getpid(), started))
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker
        code = 1
        try:
            code = _become_worker(job, db)
        except BaseException:  # noqa: BLE001  whatever ends the worker goes to its log, not to the standby
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code if isinstance(code, int) and 0 <= code < 256 else 1)
    _, status = os.waitpid(pid, 0)
    env = {**os.environ, **(job.get("env") or {})}
    return ended(db, run_id, job["log"], pid, os.waitstatus_to_exitcode(status), started, env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m judge_engine.standby",
                                     description="a worker kept warm for the next run of a database")
    parser.add_argument("--db", required=True)
    args = parser.parse_args(argv)
    from .runs.supervisor import _stop_noted
    signal.signal(signal.SIGINT, _stop_noted)  # as the supervisor: a Ctrl-C is the worker's to record
    warm()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # the app that kept it is gone
    job = json.loads(line)
    log = open(job["log"], "ab")
    sys.stdout.write("taken\n")
    sys.stdout.flush()
    # from here on, as a supervisor started for this run: its output and its worker's go to the run's log
    for fd in (1, 2):
        os.dup2(log.fileno(), fd)
    log.close()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return take(job, args.db)


if __name__ == "__main__":
    sys.exit(main())

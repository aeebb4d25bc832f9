"""Worker processes: a run executed in a detached ``python -m judge_engine resume``, and whether it still lives."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..llm import LLMConfig
from ..records import RunRecord
from ..store import Store

HEARTBEAT_STALE_S = 90.0
"""A queued run that no worker picked up within this many seconds is shown as interrupted."""


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (finished child not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def effective_status(run: RunRecord) -> str:
    """The stored status, except that a 'running' run whose worker is gone is 'interrupted'."""
    status = run.status
    if status == "running" and not _pid_alive(run.pid):
        return "interrupted"
    if status == "queued" and time.time() - (run.heartbeat or 0) > HEARTBEAT_STALE_S:
        return "interrupted"  # queued but no worker ever picked it up
    return status


def start_run(db_path: str | Path, run_id: int, *, api_key: str | None = None,
              log_dir: str | Path | None = None) -> subprocess.Popen:
    """Execute run ``run_id`` in a detached worker process (``python -m judge_engine resume``).

    The API key, if any, reaches the worker through its environment only; it
    is not written to the database, the command line or the log.
    """
    db_path = Path(db_path)
    run = Store(db_path).run(run_id)
    env = dict(os.environ)
    if api_key:
        env[LLMConfig.from_dict(run.llm).api_key_env] = api_key
    log_dir = Path(log_dir) if log_dir else db_path.parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / f"run-{run_id}.log", "ab")
    repo = Path(__file__).resolve().parents[2]  # judge_engine/runs/workers.py -> the repository
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "judge_engine", "resume", str(run_id), "--db", str(db_path),
                             "--quiet"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, cwd=str(repo), start_new_session=True)
    log.close()  # the worker holds its own copy
    # reap the worker when it ends, so a long-lived app process does not collect zombies
    threading.Thread(target=proc.wait, name=f"reap-run-{run_id}", daemon=True).start()
    return proc

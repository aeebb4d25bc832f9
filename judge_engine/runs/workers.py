"""Worker processes: a run executed in a detached ``python -m judge_engine resume``, whether it still lives, how
it is stopped, and who else is using a backend that answers one call at a time.

- :func:`start_run` starts the worker under a supervisor that records how it ended when it could not
  (:mod:`.supervisor`); :func:`effective_status` tells a run whose worker died from a live one.
- :func:`stop_run` (:func:`stop_runs` for several at once) interrupts the worker the way Ctrl-C would: the run
  keeps what it computed and resumes later without paying again for a call already made.
- :func:`busy_with` lists the other runs calling the embedded model right now (llama.cpp answers one call at a
  time machine-wide, so they take turns), and :func:`busy_note` says so in words.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..llm import LLMConfig
from ..records import RunRecord
from ..store import LIVE_STATUSES, ReadOnly, Store
from .exits import STOPPED, WorkerExit, record_exit

HEARTBEAT_STALE_S = 90.0
"""A queued run that no worker picked up within this many seconds is shown as interrupted."""


FAST_POLL_S = 0.5
"""Seconds between a page's reads of a run started less than :data:`FAST_POLL_FOR_S` ago: a run whose every
request is in the cache ends within seconds, and a 2 s read made its figures wait up to 2 s more (issue 62 item 6)."""
SLOW_POLL_S = 2.0
"""Seconds between a page's reads of an older live run (each read draws its progress panel again)."""
FAST_POLL_FOR_S = 20.0


def poll_interval(run: RunRecord, now: float | None = None) -> float:
    """How often a page reads live run ``run``: every :data:`FAST_POLL_S` while it is young, then every
    :data:`SLOW_POLL_S`."""
    now = time.time() if now is None else now
    return FAST_POLL_S if now - (run.created or 0.0) < FAST_POLL_FOR_S else SLOW_POLL_S


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


STANDBY_ENV = "JUDGE_WORKBENCH_STANDBY"
"""``0`` in the environment: no warm worker (:mod:`judge_engine.standby`) is kept; every run starts a fresh one."""
_STANDBYS: dict[str, tuple[subprocess.Popen, dict[str, str], list[str]]] = {}
"""Per database, the warm worker this process started, the environment it was started with and the lines it said."""
_STANDBYS_LOCK = threading.Lock()
TAKEN_WAIT_S = 2.0
"""How long :func:`start_run` waits for a standby's answer; a standby still importing reads the run later."""


def _worker_env(db_path: Path) -> tuple[dict[str, str], Path]:
    """A worker's environment (this one, with the repository on the path) and the repository (its folder)."""
    repo = Path(__file__).resolve().parents[2]  # judge_engine/runs/workers.py -> the repository
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    return env, repo


def _standby_wanted() -> bool:
    return os.environ.get(STANDBY_ENV, "1") != "0" and Path("/proc/self/comm").exists()


def keep_standby(db_path: str | Path) -> None:
    """Have a warm worker (:mod:`judge_engine.standby`) ready for the next run of ``db_path`` (nothing when one is, or when
    :data:`STANDBY_ENV` is 0). One per database and process; one of another database is ended."""
    if not _standby_wanted():
        return
    db_path = Path(db_path).resolve()
    env, repo = _worker_env(db_path)
    with _STANDBYS_LOCK:
        kept = _STANDBYS.get(str(db_path))
        if kept is not None and kept[0].poll() is None and kept[1] == env:
            return
        for key in list(_STANDBYS):  # at most one warm process per app: another database's is ended
            proc = _STANDBYS.pop(key)[0]
            if proc.poll() is None and proc.stdin:
                proc.stdin.close()  # end of input: it ends
        proc = subprocess.Popen([sys.executable, "-m", "judge_engine.standby", "--db", str(db_path)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                cwd=str(repo), start_new_session=True)
        threading.Thread(target=proc.wait, name="reap-standby", daemon=True).start()
        _STANDBYS[str(db_path)] = (proc, env, [])


def end_standbys() -> None:
    """End the warm workers this process keeps (end of input: each ends once it has imported)."""
    with _STANDBYS_LOCK:
        for key in list(_STANDBYS):
            proc = _STANDBYS.pop(key)[0]
            if proc.poll() is None and proc.stdin:
                proc.stdin.close()


_ENDED = "(end of output)"


def _said(proc: subprocess.Popen, heard: list[str], line: str, timeout: float) -> bool:
    """Whether warm worker ``proc`` says ``line`` within ``timeout`` seconds (``heard``: its lines so far, read
    byte by byte from its pipe so that nothing waits in a buffer that ``select`` cannot see)."""
    deadline = time.monotonic() + timeout
    partial = ""
    while line not in heard and _ENDED not in heard:
        left = deadline - time.monotonic()
        if left <= 0 or proc.stdout is None or not select.select([proc.stdout], [], [], left)[0]:
            return False
        byte = os.read(proc.stdout.fileno(), 1).decode()
        if not byte:
            heard.append(_ENDED)
            return False
        partial += byte
        if partial.endswith("\n"):
            heard.append(partial.strip())
            partial = ""
    return True


def standby_ready(db_path: str | Path, timeout: float = 0.0) -> bool:
    """Whether the warm worker of ``db_path`` has imported everything (waiting up to ``timeout`` seconds)."""
    with _STANDBYS_LOCK:
        kept = _STANDBYS.get(str(Path(db_path).resolve()))
    return kept is not None and _said(kept[0], kept[2], "ready", timeout)


def _hand_to_standby(db_path: Path, job: dict, env: dict[str, str]) -> subprocess.Popen | None:
    """The warm worker of ``db_path`` that took ``job`` (it is then the run's supervisor), or None when there is
    none ready for this environment."""
    with _STANDBYS_LOCK:
        kept = _STANDBYS.pop(str(db_path.resolve()), None)
    if kept is None:
        return None
    proc, standby_env, heard = kept
    if proc.poll() is not None or standby_env != env or proc.stdin is None or proc.stdout is None:
        if proc.poll() is None and proc.stdin:
            proc.stdin.close()
        return None
    try:
        proc.stdin.write((json.dumps(job) + "\n").encode())
        proc.stdin.close()
    except OSError:  # it ended meanwhile
        return None
    if not _said(proc, heard, "taken", TAKEN_WAIT_S) and (_ENDED in heard or proc.poll() is not None):
        return None  # it ended without taking the run
    return proc  # it took the run, or is still importing and reads it then


def start_run(db_path: str | Path, run_id: int, *, api_key: str | None = None,
              log_dir: str | Path | None = None, force: bool = False) -> subprocess.Popen:
    """Execute run ``run_id`` in a detached worker (``python -m judge_engine resume``) under its supervisor.

    The returned process is the supervisor (:mod:`.supervisor`), detached in a session of its own: it starts
    the worker, outlives the app, and records the worker's end (signal or exit code, step, log tail) when the
    worker could not. ``force`` resumes even a run whose worker died twice at the same step
    (:func:`.exits.repeated_death`). The API key, if any, reaches the worker through its environment only; it
    is not written to the database, the command line or the log.

    A warm worker of this database (:func:`keep_standby`), started with this environment, takes the run when
    there is one: it has imported everything already and is supervisor and worker in one (:mod:`judge_engine.standby`); the
    next run's is started at once.
    """
    db_path = Path(db_path)
    run = Store(db_path).run(run_id)
    env, repo = _worker_env(db_path)
    extra = {LLMConfig.from_dict(run.llm).api_key_env: api_key} if api_key else {}
    log_dir = Path(log_dir) if log_dir else db_path.parent / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"run-{run_id}.log"
    launched = time.time()
    proc = None
    if _standby_wanted():
        proc = _hand_to_standby(db_path, {"run_id": run_id, "launched": launched, "force": force,
                                          "log": str(log_path.resolve()), "env": extra}, env)
    if proc is None:
        log = open(log_path, "ab")
        proc = subprocess.Popen([sys.executable, "-m", "judge_engine.runs.supervisor", str(run_id), "--db",
                                 str(db_path), "--log", str(log_path), "--launched", repr(launched),
                                 *(["--force"] if force else [])],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**env, **extra}, cwd=str(repo), start_new_session=True)
        log.close()  # the supervisor holds its own copy
        # reap the supervisor when it ends, so a long-lived app process does not collect zombies
        threading.Thread(target=proc.wait, name=f"reap-run-{run_id}", daemon=True).start()
    keep_standby(db_path)  # the next run's
    return proc


# --------------------------------------------------------------------------- stopping a run

STOP_EXIT_S = 5.0
"""After SIGKILL, how long :func:`stop_runs` waits for the worker to be gone."""


@dataclass(frozen=True)
class Stopped:
    """What :func:`stop_run` did to one run."""

    run_id: int
    status: str
    """The run's stored status afterwards."""
    stopped: bool
    """True when this call ended the run (it was queued or running); False when it had already ended or
    finished on its own meanwhile."""
    signalled: tuple[int, ...] = ()
    """The worker processes signalled (SIGINT, and SIGKILL for those still there after the grace period)."""
    killed: tuple[int, ...] = ()
    """The worker processes still there after SIGINT (once the run was recorded, or after the grace period),
    ended with SIGKILL."""
    message: str = ""
    """What happened, in words, for the page."""


def _cmdline(pid: int) -> list[str] | None:
    """Process ``pid``'s argv; None when it cannot be read (no such process, or another user's)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None  # a Linux machine without that process
        try:  # no /proc (macOS): ask ps; its answer joins the words with spaces
            out = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.split() or None
    except OSError:
        return None
    return raw.decode("utf-8", "replace").split("\0")[:-1] if raw else None


def _process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def standby_worker_name(run_id: int) -> str:
    """The process name of a warm worker executing run ``run_id`` (set by :mod:`.standby`, at most 15 bytes)."""
    return f"jw-run-{run_id}"[:15]


def _same_file(named: str, pid: int, path: Path) -> bool:
    """Whether ``named`` (a path on process ``pid``'s command line) is ``path``."""
    named_path = Path(named)
    if not named_path.is_absolute():
        try:
            named_path = Path(os.readlink(f"/proc/{pid}/cwd")) / named_path
        except OSError:
            return False
    try:
        return os.path.samefile(named_path, path)
    except OSError:
        return os.path.abspath(named_path) == os.path.abspath(path)


def is_worker(pid: int | None, store: Store, run_id: int) -> bool:
    """Whether process ``pid`` is a worker of run ``run_id`` of ``store``: its command line is ``... resume RUN_ID
    --db PATH`` with PATH the store's file, or a warm worker's of that file (:mod:`judge_engine.standby`) whose process name
    names the run. A pid the system gave to another process since is not."""
    argv = _cmdline(pid) if pid and pid > 0 else None
    if not argv:
        return False
    if not any(argv[i:i + 2] == ["resume", str(run_id)] for i in range(len(argv))) and not (
            "judge_engine.standby" in argv and _process_name(pid) == standby_worker_name(run_id)):
        return False  # neither a worker started for the run nor a warm worker (judge_engine.standby) that took it
    for i, word in enumerate(argv):
        if word == "--db" and i + 1 < len(argv):
            named = argv[i + 1]
        elif word.startswith("--db="):
            named = word.removeprefix("--db=")
        else:
            continue
        if _same_file(named, pid, store.path):
            return True
    return False


def worker_pids(store: Store, run_id: int) -> list[int]:
    """Processes executing run ``run_id`` of ``store`` (:func:`is_worker`), found by their command lines: the
    worker of a queued run that has not recorded its pid yet is among them."""
    found = []
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:  # no /proc: only the run's recorded pid can be checked
        entries = []
    for entry in entries:
        if entry.name.isdigit() and int(entry.name) != os.getpid() and is_worker(int(entry.name), store, run_id):
            found.append(int(entry.name))
    return sorted(found)


def _signal(pid: int, sig: int) -> None:
    try:
        if os.getpgid(pid) == pid:  # a worker leads its own process group: what it started goes with it
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_reason(actor: str = "", when: float | None = None) -> str:
    """The message a stopped run keeps: who stopped it and when."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if when is None else when))
    return f"stopped by {actor or 'someone without a name'} at {stamp}"


def stop_runs(store: Store, run_ids: Iterable[int], *, actor: str = "", reason: str | None = None,
              grace_s: float = 10.0) -> list[Stopped]:
    """Stop the workers of ``run_ids`` and leave none of them queued or running; one :class:`Stopped` each.

    A run still queued or running gets SIGINT to its worker's process group, as Ctrl-C would: ``execute_run``
    records it ``interrupted`` with its ledger, and what it computed stays (the fitted judge, the scored
    items, every LLM answer in the cache, each written in its own transaction), so a resume continues
    without paying again for a call already made. A worker still there once its run is recorded, or after
    ``grace_s`` (one whose threads wait on a reply does not exit), gets SIGKILL: SQLite keeps the store
    consistent through that, and the embedded model's machine lock ends with the process. A run left
    ``queued`` or ``running`` is then set ``interrupted`` with ``reason`` (default: who stopped it and when,
    :func:`stop_reason`), which also replaces the interrupt's own message. Only processes whose command line
    is the run's worker (:func:`is_worker`) are ever signalled, so a recycled pid is left alone; a run that
    had already ended is not touched.
    """
    if store.read_only:  # refused before any signal, not after the worker is gone
        raise ReadOnly(f"{store.read_only} may view this workbench but not change it; nothing was stopped")
    run_ids = list(dict.fromkeys(run_ids))
    reason = reason or stop_reason(actor)
    before = {r: store.run(r) for r in run_ids}
    live = [r for r in run_ids if before[r].status in LIVE_STATUSES]
    workers: dict[int, list[int]] = {}
    for r in live:
        pids = worker_pids(store, r)
        on_record = before[r].pid  # checked too where /proc cannot be scanned
        if on_record and on_record not in pids and is_worker(on_record, store, r):
            pids.append(on_record)
        workers[r] = pids
    for r in live:  # before any signal: the supervisor then records the worker's end as this stop, not a crash
        run = before[r]
        record_exit(store, WorkerExit(r, STOPPED, time.time(), stage=run.stage, done=run.done, total=run.total,
                                      pid=run.pid, note=reason))
    signalled = sorted({p for pids in workers.values() for p in pids})
    for pid in signalled:
        _signal(pid, signal.SIGINT)

    def settled(run_id: int) -> bool:
        return (not any(_pid_alive(p) for p in workers[run_id])
                or store.run(run_id).status not in LIVE_STATUSES)

    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and not all(settled(r) for r in live):
        time.sleep(0.2)
    recorded = {r: store.run(r).status not in LIVE_STATUSES for r in live}  # by the worker, on SIGINT
    killed = []
    for run_id in live:
        for pid in workers[run_id]:
            if _pid_alive(pid) and is_worker(pid, store, run_id):
                _signal(pid, signal.SIGKILL)
                killed.append(pid)
    deadline = time.monotonic() + STOP_EXIT_S
    while time.monotonic() < deadline and any(_pid_alive(p) for p in killed):
        time.sleep(0.05)

    out = []
    for run_id in run_ids:
        run = store.run(run_id)
        if run_id not in workers:
            out.append(Stopped(run_id, run.status, False,
                               message=f"Run #{run_id} had already ended ({run.status}); nothing was stopped."))
            continue
        if run.status in LIVE_STATUSES or (run.status == "interrupted" and run.message.startswith("KeyboardInterrupt")):
            store.update_run(run_id, status="interrupted", message=reason)
            run = store.run(run_id)
        mine = tuple(workers[run_id])
        forced = tuple(p for p in killed if p in mine)
        kept = ("What it computed is kept: resume it from the Runs page to continue without paying again for "
                "the calls already made.")
        if run.status != "interrupted":
            message = f"Run #{run_id} ended ({run.status}) before it could be stopped."
        elif not mine:
            message = f"Run #{run_id} had no worker running; it is now marked interrupted. {kept}"
        elif forced and not recorded[run_id]:
            message = (f"Run #{run_id} stopped (its worker did not stop within {grace_s:g} s of the interrupt and "
                       f"was ended). {kept}")
        else:
            message = f"Run #{run_id} stopped. {kept}"
        out.append(Stopped(run_id, run.status, run.status == "interrupted", mine, forced, message))
    return out


def stop_run(store: Store, run_id: int, *, actor: str = "", reason: str | None = None,
             grace_s: float = 10.0) -> Stopped:
    """Stop run ``run_id``'s worker and record the run ``interrupted`` (see :func:`stop_runs`); its
    :attr:`Stopped.message` says what happened, for the page."""
    return stop_runs(store, [run_id], actor=actor, reason=reason, grace_s=grace_s)[0]


# --------------------------------------------------------------------------- runs that share the model

def serialises_calls(llm: LLMConfig) -> bool:
    """Whether ``llm``'s backend answers one call at a time on this machine, so runs on it take turns.

    llama.cpp in-process: every call holds the machine-wide lock
    (:func:`judge_engine.llm.llamacpp.machine_lock`), whatever the model file. A server
    (openai, vllm) handles concurrent requests itself.
    """
    return llm.backend == "llamacpp"


def busy_with(store: Store, llm: LLMConfig, *, exclude: int | Sequence[int] = ()) -> list[RunRecord]:
    """The runs (other than ``exclude``) calling ``llm``'s model right now, when its backend answers one call
    at a time (:func:`serialises_calls`); newest first, empty for a server.

    A look started meanwhile takes turns with them, call by call, and takes longer than its estimate
    (which assumes the model to itself). Counted: runs whose worker is working (:func:`effective_status`
    ``running``) on any llama.cpp model, since they all hold the same lock.
    """
    if not serialises_calls(llm):
        return []
    skip = {exclude} if isinstance(exclude, int) else set(exclude)
    return [r for r in store.runs(status=("running",), limit=1000)
            if r.id not in skip and serialises_calls(LLMConfig.from_dict(r.llm)) and effective_status(r) == "running"]


def busy_note(busy: Sequence[RunRecord], llm: LLMConfig, *, what: str = "this look", running: bool = False) -> str:
    """The sentence a page shows about ``busy`` (from :func:`busy_with`); empty when there is none.

    ``what`` names the work it is about ("this look", "this run"); ``running`` when that work has
    already started (it is slower while they work) rather than about to start (it will take longer than
    its estimate).
    """
    if not busy:
        return ""
    n = len(busy)
    model = ("the embedded model" if llm.embedded and all(LLMConfig.from_dict(r.llm).embedded for r in busy)
             else "llama.cpp on this machine")
    ids = ", ".join(f"#{r.id}" for r in busy[:5]) + (", ..." if n > 5 else "")
    who = f"{n} {'other ' if running else ''}run{'s are' if n != 1 else ' is'} using {model} now ({ids})"
    then = (f"{what} takes turns with {'them' if n != 1 else 'it'} and goes slower until "
            f"{'they end' if n != 1 else 'it ends'}" if running else f"{what} will take longer than the estimate")
    return f"{who}; it answers one call at a time, so {then}."

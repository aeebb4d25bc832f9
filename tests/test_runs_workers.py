"""Worker processes (:mod:`judge_engine.runs.workers`): a killed worker shows as interrupted and resumes; a finished
one is reaped; a stopped one is gone, its run interrupted and resumable, and nothing but its own worker is ever
signalled; the runs taking turns on the embedded model are counted."""

import os
import signal
import subprocess
import sys
import time

import pytest

from judge_engine.llm import LLMConfig
from judge_engine.runs import (RunSpec, busy_note, busy_with, create_run, effective_status, execute_run, start_run,
                               stop_run)
from judge_engine.runs.workers import is_worker, worker_pids
from judge_engine.store import CallCache, ReadOnly, Store

from held_replies import HoldingHandler, serving

REAL_KILL = os.kill


@pytest.mark.model
def test_killed_worker_process_is_shown_interrupted_and_resumes(tmp_path, shared_data):
    db = tmp_path / "w.db"
    store = Store(db)
    run_id = create_run(store, RunSpec(method="direct", dataset="sfhot", aspect="overall", train_size=5,
                                       test_size=12))
    proc = start_run(db, run_id)
    deadline = time.time() + 300
    while len(store.scored_ids(run_id)) < 3 and time.time() < deadline:
        assert proc.poll() is None, (db.parent / "logs" / f"run-{run_id}.log").read_text()
        time.sleep(0.3)
    os.killpg(store.run(run_id).pid, signal.SIGKILL)  # the worker (and its group), not its supervisor
    proc.wait()  # the supervisor ends once it has recorded the death
    run = store.run(run_id)
    assert effective_status(run) == "interrupted" and run.message.startswith("worker died by SIGKILL at ")
    scored_before = len(store.scored_ids(run_id))
    calls_before = run.ledger.calls
    summary = execute_run(store, run_id)
    n_test = len(run.split.test_ids)  # whole dialogue acts: at least the 12 asked
    assert summary.n == n_test >= 12
    # calls made after the kill are only for items not scored before it (at most one chunk was in flight)
    assert summary.ledger.calls - calls_before <= n_test - scored_before
    assert summary.ledger.calls == len(CallCache(store))  # never the same request twice


def test_a_finished_worker_is_reaped_without_the_caller_waiting(tmp_path, tiny_dataset):
    """A long-lived app starts many workers: each one is reaped when it ends (no zombie processes)."""
    from tests.llama_server import free_port

    db = tmp_path / "reap.db"
    store = Store(db)
    store.save_dataset(tiny_dataset)
    dead_server = LLMConfig(backend="openai", model="m", base_url=f"http://127.0.0.1:{free_port()}/v1",
                            max_retries=0)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3,
                                       test_size=3, llm=dead_server))
    proc = start_run(db, run_id)
    deadline = time.time() + 120
    while proc.returncode is None and time.time() < deadline:  # set by the reaper thread, never by this test
        time.sleep(0.2)
    assert proc.returncode is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(proc.pid, os.WNOHANG)  # already collected: no zombie left
    assert effective_status(store.run(run_id)) == "interrupted"


def test_a_run_whose_worker_is_gone_or_never_came_is_interrupted(store, tiny_dataset):
    from judge_engine.runs.workers import HEARTBEAT_STALE_S

    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=3))
    store.update_run(run_id, heartbeat=time.time())
    assert effective_status(store.run(run_id)) == "queued"  # a worker may still pick it up
    store.update_run(run_id, heartbeat=time.time() - HEARTBEAT_STALE_S - 1)
    assert effective_status(store.run(run_id)) == "interrupted"
    store.update_run(run_id, status="running", pid=os.getpid())
    assert effective_status(store.run(run_id)) == "running"
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its pid names no process now
    store.update_run(run_id, pid=gone.pid)
    assert effective_status(store.run(run_id)) == "interrupted"


# --------------------------------------------------------------------------- stopping a run


class _HalfAnswering(HoldingHandler):
    """The stub answering the first ``answer_first`` prompts and holding every later request open until
    ``release`` is set (tests/held_replies.py); ``answered`` counts the replies sent per prompt."""


@pytest.fixture
def half_answering():
    yield from serving(_HalfAnswering)


@pytest.fixture
def signals(monkeypatch) -> list[tuple[str, int, int]]:
    """Signals the engine sends, recorded instead of sent (signal 0, the liveness probe, still goes through)."""
    sent: list[tuple[str, int, int]] = []

    def kill(pid, sig):
        if sig == 0:
            return REAL_KILL(pid, sig)
        sent.append(("kill", pid, sig))

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append(("killpg", pgid, sig)))
    return sent


@pytest.fixture
def warm_workers(monkeypatch):
    """Warm workers on (:mod:`judge_engine.standby`); the ones this test left are ended after it."""
    from judge_engine.runs.workers import end_standbys

    monkeypatch.setenv("JUDGE_WORKBENCH_STANDBY", "1")
    yield
    end_standbys()


def _run_on_the_stub(db, dataset, base_url, monkeypatch, *, answer_first: int, test_size: int):
    """A store at ``db`` holding ``dataset`` and a direct run of 3 training and ``test_size`` test items on the
    half-answering stub, which answers ``answer_first`` prompts: (db, store, run_id)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-not-checked")
    _HalfAnswering.answer_first = answer_first
    store = Store(db)
    store.save_dataset(dataset)
    llm = LLMConfig(backend="openai", base_url=base_url, model="stub", concurrency=1, max_retries=0, timeout=60)
    run_id = create_run(store, RunSpec(method="direct", dataset=dataset.name, aspect="quality", train_size=3,
                                       test_size=test_size, llm=llm))
    return db, store, run_id


@pytest.mark.parametrize("warm", [False, True], ids=["fresh worker", "warm worker"])
def test_stop_run_ends_a_worker_waiting_on_a_reply_keeps_its_answers_and_the_run_resumes(tmp_path, tiny_dataset,
                                                                                         half_answering, monkeypatch,
                                                                                         warm, request):
    """A real worker, three answers in and held on the fourth: stopped, it is gone, the run is interrupted with
    who stopped it, the store and its cache are sound, and the resume sends only the prompts not yet answered.
    The same for a warm worker (:mod:`judge_engine.standby`), found by its process name."""
    db, store, run_id = _run_on_the_stub(tmp_path / "stop.db", tiny_dataset, half_answering, monkeypatch,
                                         answer_first=3, test_size=9)
    if warm:
        from judge_engine.runs.workers import keep_standby

        request.getfixturevalue("warm_workers")
        keep_standby(db)
    proc = start_run(db, run_id)
    assert ("judge_engine.standby" in proc.args) == warm, proc.args
    log = db.parent / "logs" / f"run-{run_id}.log"
    deadline = time.time() + 120
    while not (_HalfAnswering.held and len(CallCache(store)) == 3) and time.time() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.2)
    assert _HalfAnswering.held and effective_status(store.run(run_id)) == "running", log.read_text()

    worker = store.run(run_id).pid  # start_run's process is the worker's supervisor, which is never signalled
    stopped = stop_run(store, run_id, actor="tester", grace_s=5.0)
    assert stopped.stopped and stopped.status == "interrupted" and stopped.signalled == (worker,) != (proc.pid,)
    assert stopped.message.startswith(f"Run #{run_id} stopped") and "Runs page" in stopped.message
    deadline = time.time() + 10
    while proc.returncode is None and time.time() < deadline:  # set by start_run's reaper thread
        time.sleep(0.1)
    assert proc.returncode is not None and worker_pids(store, run_id) == [], "no worker left"

    fresh = Store(db)
    assert fresh.db.execute("pragma integrity_check").fetchone()[0] == "ok"
    run = fresh.run(run_id)
    assert run.status == effective_status(run) == "interrupted"
    assert run.message.startswith("stopped by tester at "), run.message
    assert len(CallCache(fresh)) == 3, "the answers that came are kept"

    _HalfAnswering.release.set()
    summary = execute_run(fresh, run_id)
    assert fresh.run(run_id).status == "finished" and summary.n == 9
    assert sorted(_HalfAnswering.answered.values()) == [1] * 9, "no answered prompt was asked again"
    assert len(CallCache(fresh)) == 9


def test_a_warm_worker_runs_the_run_in_its_log_and_a_death_is_recorded_as_a_fresh_ones(tmp_path, tiny_dataset,
                                                                                      half_answering, monkeypatch,
                                                                                      warm_workers):
    """A warm worker takes the run (the next one is kept at once), writes to the run's log, is found by its process
    name and nothing else is; killed by SIGKILL, its supervisor records the death as a fresh worker's does."""
    from judge_engine.runs.workers import _STANDBYS, keep_standby, standby_worker_name

    db, store, run_id = _run_on_the_stub(tmp_path / "warm.db", tiny_dataset, half_answering, monkeypatch,
                                         answer_first=2, test_size=6)
    keep_standby(db)
    standby = _STANDBYS[str(db.resolve())][0]
    proc = start_run(db, run_id)
    assert proc is standby, "the warm worker took the run"
    assert _STANDBYS[str(db.resolve())][0] is not standby, "the next run's warm worker is started at once"
    log = db.parent / "logs" / f"run-{run_id}.log"
    deadline = time.time() + 120
    while not _HalfAnswering.held and time.time() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.2)
    worker = store.run(run_id).pid
    assert _HalfAnswering.held and worker != proc.pid, log.read_text()
    assert open(f"/proc/{worker}/comm").read().strip() == standby_worker_name(run_id)
    assert worker_pids(store, run_id) == [worker], "found by its name; its supervisor is not a worker"
    assert not is_worker(worker, store, run_id + 1) and not is_worker(proc.pid, store, run_id)
    os.killpg(worker, signal.SIGKILL)
    assert proc.wait(timeout=60) == 128 + signal.SIGKILL
    run = store.run(run_id)
    assert run.status == "interrupted" and run.message.startswith("worker died by SIGKILL at "), run.message
    assert f"run {run_id}, worker {proc.pid}" in log.read_text(), "the supervisor's marker opens the log"


def test_stopping_a_run_that_already_ended_sends_nothing(store, tiny_dataset, signals):
    from tests.scripted import fake_llm

    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=3))
    execute_run(store, run_id, llm=fake_llm("[[3]]", store=store)[0])
    store.update_run(run_id, pid=os.getpid())  # even a live pid on record is left alone
    before = store.run(run_id)
    stopped = stop_run(store, run_id, actor="tester", grace_s=0.5)
    assert not stopped.stopped and stopped.signalled == () and signals == []
    assert stopped.status == "finished" and "already ended (finished)" in stopped.message
    after = store.run(run_id)
    assert (after.status, after.message, after.version) == (before.status, before.message, before.version)


def test_a_process_that_is_not_the_runs_worker_is_never_signalled(tmp_path, store, tiny_dataset, signals):
    """The run's recorded pid now names another process (a recycled pid), and other processes name another run
    or another store: none is signalled; the run is marked interrupted, saying no worker was running."""
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=3))
    other = tmp_path / "other.db"
    other.touch()
    nap = "import time; time.sleep(60)"
    decoys = [subprocess.Popen(["sleep", "60"], start_new_session=True),  # the recycled pid
              subprocess.Popen([sys.executable, "-c", nap, "resume", str(run_id + 1), "--db", str(store.path)],
                               start_new_session=True),  # another run of this store
              subprocess.Popen([sys.executable, "-c", nap, "resume", str(run_id), "--db", str(other)],
                               start_new_session=True)]  # this run's number in another store
    try:
        store.update_run(run_id, status="running", pid=decoys[0].pid, heartbeat=time.time())
        assert effective_status(store.run(run_id)) == "running"  # the pid is alive: it looks like the worker
        assert not any(is_worker(d.pid, store, run_id) for d in decoys)
        assert is_worker(decoys[1].pid, store, run_id + 1), "the check does recognise a worker's command line"
        stopped = stop_run(store, run_id, actor="tester", grace_s=0.5)
        assert signals == [] and stopped.signalled == ()
        assert all(d.poll() is None for d in decoys), "every decoy still runs"
        assert stopped.stopped and "had no worker running" in stopped.message
        assert store.run(run_id).status == "interrupted" and store.run(run_id).message.startswith("stopped by tester")
    finally:
        for d in decoys:
            REAL_KILL(d.pid, signal.SIGKILL)  # os.kill records instead of sending in this test
            d.wait()


def test_a_viewer_cannot_stop_a_run(store, tiny_dataset, signals):
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=3))
    viewer = Store(store.path, read_only="viewer@example.org")
    with pytest.raises(ReadOnly, match="nothing was stopped"):
        stop_run(viewer, run_id)
    assert signals == [] and store.run(run_id).status == "queued"


# --------------------------------------------------------------------------- runs that share the model


def test_busy_with_counts_the_runs_working_on_the_embedded_model_and_says_so(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    server = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    gone = subprocess.Popen(["true"])
    gone.wait()

    def run(llm: LLMConfig, status: str, pid: int | None) -> int:
        run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3,
                                           test_size=3, llm=llm))
        store.update_run(run_id, status=status, pid=pid, heartbeat=time.time())
        return run_id

    first = run(LLMConfig(), "running", os.getpid())
    second = run(LLMConfig(), "running", os.getpid())
    run(LLMConfig(), "running", gone.pid)  # its worker died: not working
    run(LLMConfig(), "queued", None)  # not started yet
    run(LLMConfig(), "finished", None)
    run(server, "running", os.getpid())  # a server: another machine's business
    embedded = LLMConfig()
    assert [r.id for r in busy_with(store, embedded)] == [second, first]
    assert [r.id for r in busy_with(store, embedded, exclude=second)] == [first]
    assert busy_with(store, LLMConfig(model="/models/other.gguf")) != [], "every llama.cpp model takes the same lock"
    assert busy_with(store, server) == [], "a server handles concurrent requests itself"

    busy = busy_with(store, embedded)
    assert busy_note(busy, embedded) == (f"2 runs are using the embedded model now (#{second}, #{first}); it answers "
                                         "one call at a time, so this look will take longer than the estimate.")
    assert busy_note(busy[1:], embedded, what="this run", running=True) == (
        f"1 other run is using the embedded model now (#{first}); it answers one call at a time, so this run "
        "takes turns with it and goes slower until it ends.")
    assert busy_note([], embedded) == ""

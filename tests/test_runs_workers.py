"""Worker processes (:mod:`judge_engine.runs.workers`): a killed worker shows as interrupted and resumes; a finished
one is reaped."""

import os
import signal
import subprocess
import time

import pytest

from judge_engine.llm import LLMConfig
from judge_engine.runs import RunSpec, create_run, effective_status, execute_run, start_run
from judge_engine.store import CallCache, Store


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
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    run = store.run(run_id)
    assert effective_status(run) == "interrupted"
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

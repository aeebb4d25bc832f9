"""A worker that dies says why (:mod:`judge_engine.runs.supervisor`, :mod:`judge_engine.runs.exits`): a real
worker held on a reply and killed with SIGSEGV or SIGKILL leaves its run interrupted with the signal, the step
and its log's last lines; ``runs`` prints them; a second death by a signal at the same step makes ``resume``
refuse unless forced; a deliberate stop is recorded as the stop; an unsupervised ``resume`` killed by SIGSEGV
is told from faulthandler's lines in the run's log."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge_engine.__main__ import main
from judge_engine.llm import LLMConfig
from judge_engine.runs import RunSpec, create_run, effective_status, start_run, stop_run
from judge_engine.runs.exits import (DIED, STOPPED, WorkerExit, last_death, log_tail, marker, record_exit,
                                     repeated_death, signal_in_log, signal_name, worker_exits)
from judge_engine.store import Store

from held_replies import HoldingHandler, serving

SECRET = "sk-test-never-written-0123456789"


class _Holding(HoldingHandler):
    """The stub answering the first three distinct prompts and holding every other request until ``release`` is
    set (tests/held_replies.py); ``held`` counts the requests it has held."""

    answer_first = 3


@pytest.fixture
def holding(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # in every worker's environment: never in what is kept
    yield from serving(_Holding)


def held_run(tmp_path: Path, url: str, tiny_dataset) -> tuple[Path, Store, int]:
    db = tmp_path / "exits.db"
    store = Store(db)
    store.save_dataset(tiny_dataset)
    llm = LLMConfig(backend="openai", base_url=url, model="stub", concurrency=1, max_retries=0, timeout=60)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=9,
                                       llm=llm))
    return db, store, run_id


def wait_held(store: Store, run_id: int, held_before: int, log: Path) -> int:
    """Wait until the run's worker is held on its fourth prompt; its pid."""
    deadline = time.time() + 120
    while time.time() < deadline:
        run = store.run(run_id)
        if _Holding.held > held_before and run.status == "running" and run.done == 3:
            return run.pid
        time.sleep(0.2)
    raise AssertionError(f"the worker was never held: {store.run(run_id)}\n{log.read_text()}")


def wait_ended(proc: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while proc.returncode is None and time.time() < deadline:  # set by start_run's reaper thread
        time.sleep(0.1)
    assert proc.returncode is not None, "the supervisor did not end with its worker"


def kill_held_worker(db: Path, store: Store, run_id: int, sig: int, **start) -> tuple[subprocess.Popen, int]:
    proc = start_run(db, run_id, **start)
    pid = wait_held(store, run_id, _Holding.held, db.parent / "logs" / f"run-{run_id}.log")
    assert pid != proc.pid, "the worker is not its supervisor"
    os.kill(pid, sig)
    wait_ended(proc)
    return proc, pid


def test_a_worker_killed_by_sigsegv_twice_at_one_step_is_named_and_not_resumed_unless_forced(
        tmp_path, holding, tiny_dataset, capsys):
    db, store, run_id = held_run(tmp_path, holding, tiny_dataset)
    proc, pid = kill_held_worker(db, store, run_id, signal.SIGSEGV)
    assert proc.returncode == 128 + signal.SIGSEGV
    run = store.run(run_id)
    assert run.status == effective_status(run) == "interrupted"
    assert run.message == "worker died by SIGSEGV at scoring (step 3 of 9)"
    death = last_death(store, run_id)
    assert (death.returncode, death.pid) == (-signal.SIGSEGV, pid)
    # faulthandler in the worker wrote the Python stack before the process died
    assert "Fatal Python error: Segmentation fault" in death.log_tail and "File " in death.log_tail
    assert len(death.log_tail.splitlines()) <= 20
    assert repeated_death(store, run_id) is None, "one death is not a pattern"

    assert main(["runs", "--db", str(db)]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith(str(run_id))][0]
    assert "worker died by SIGSEGV at scoring (step 3 of 9)" in line
    assert "log: Fatal Python error: Segmentation fault" in line

    kill_held_worker(db, store, run_id, signal.SIGSEGV)  # resumed as the page's button does: the same crash
    assert len([e for e in worker_exits(store, run_id) if e.kind == DIED]) == 2
    assert main(["resume", str(run_id), "--db", str(db), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "the last lines of its log:" in err and "Fatal Python error: Segmentation fault" in err
    assert f"run {run_id}'s worker died by SIGSEGV twice at scoring (step 3 of 9)" in err
    assert "make clean-venv && make install" in err and "--force" in err and "Traceback" not in err
    assert store.run(run_id).status == "interrupted", "nothing was resumed"

    _Holding.release.set()
    assert main(["resume", str(run_id), "--db", str(db), "--quiet", "--force"]) == 0
    assert store.run(run_id).status == "finished"
    assert repeated_death(store, run_id) is None
    store.close()
    kept = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET.encode() not in kept, "the key is in no database row and no log"


def test_a_worker_killed_by_sigkill_is_named_and_a_stop_is_recorded_as_the_stop(tmp_path, holding, tiny_dataset,
                                                                              capsys):
    db, store, run_id = held_run(tmp_path, holding, tiny_dataset)
    proc, _ = kill_held_worker(db, store, run_id, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGKILL
    assert store.run(run_id).message == "worker died by SIGKILL at scoring (step 3 of 9)"
    assert main(["runs", "--db", str(db)]) == 0
    assert "worker died by SIGKILL at scoring (step 3 of 9)" in capsys.readouterr().out

    proc = start_run(db, run_id)
    pid = wait_held(store, run_id, _Holding.held, db.parent / "logs" / f"run-{run_id}.log")
    stopped = stop_run(store, run_id, actor="tester", grace_s=5.0)
    assert stopped.stopped and stopped.signalled == (pid,), "the worker is signalled, not its supervisor"
    wait_ended(proc)
    run = store.run(run_id)
    assert run.status == "interrupted" and run.message.startswith("stopped by tester at "), run.message
    assert [e.kind for e in worker_exits(store, run_id)] == [DIED, STOPPED], "the stop is no crash"
    assert last_death(store, run_id) is None and repeated_death(store, run_id) is None


def test_an_unsupervised_worker_killed_by_sigsegv_is_told_from_its_log_and_recorded_on_resume(
        tmp_path, holding, tiny_dataset, capsys):
    """What ``judge-workbench run``/``resume`` in a terminal leave when a fatal signal ends them: no supervisor
    records it, but faulthandler's lines in the run's log name the signal."""
    db, store, run_id = held_run(tmp_path, holding, tiny_dataset)
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGE_WORKBENCH_RUN_LOG", "PYTHONFAULTHANDLER")}
    repo = Path(__file__).resolve().parents[1]
    cli = subprocess.Popen([sys.executable, "-m", "judge_engine", "resume", str(run_id), "--db", str(db), "--quiet"],
                           cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pid = wait_held(store, run_id, 0, db.parent / "logs" / f"run-{run_id}.log")
        assert pid == cli.pid
        os.kill(pid, signal.SIGSEGV)
        assert cli.wait(timeout=60) == -signal.SIGSEGV
    finally:
        if cli.poll() is None:
            cli.kill()
    assert store.run(run_id).status == "running" and effective_status(store.run(run_id)) == "interrupted"
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "worker died by SIGSEGV (named in its log) at scoring (step 3 of 9)" in out, out

    _Holding.release.set()
    assert main(["resume", str(run_id), "--db", str(db), "--quiet"]) == 0  # one death: resumed
    (death,) = worker_exits(store, run_id)
    assert (death.kind, death.signal, death.returncode, death.note) == (DIED, "SIGSEGV", None, "found gone")
    assert store.run(run_id).status == "finished"


# --------------------------------------------------------------------------- the pieces


def test_log_tail_reads_after_the_last_marker_and_masks_secrets(tmp_path):
    log = tmp_path / "run-1.log"
    log.write_text("Fatal Python error: Segmentation fault\nold crash\n" + marker(1, 10)
                   + "".join(f"line {i} key={SECRET}\n" for i in range(30)))
    tail = log_tail(log, secrets=[SECRET])
    assert tail.splitlines() == [f"line {i} key=***" for i in range(10, 30)]
    assert signal_in_log(tail) == "", "the earlier worker's crash is not this one's"
    assert log_tail(tmp_path / "missing.log") == ""
    log.write_text(marker(1, 10) + "Fatal Python error: Segmentation fault\n" + "".join(f"  File {i}\n" for i in range(30)))
    tail = log_tail(log).splitlines()
    assert len(tail) == 20 and tail[:2] == ["Fatal Python error: Segmentation fault", "..."], "the signal's line stays"
    assert tail[-1] == "  File 29" and signal_in_log("\n".join(tail)) == "SIGSEGV"
    assert signal_in_log("x\nFatal Python error: Illegal instruction\n") == "SIGILL"
    assert (signal_name(-11), signal_name(-9), signal_name(1), signal_name(None)) == ("SIGSEGV", "SIGKILL", "", "")


def test_deaths_at_different_steps_or_without_a_signal_are_not_a_pattern(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=3))

    def die(sig: str, done: int, code: int | None = -11) -> None:
        store.update_run(run_id, status="running")
        assert record_exit(store, WorkerExit(run_id, DIED, time.time(), returncode=code, signal=sig,
                                             stage="scoring", done=done, total=9))

    die("SIGSEGV", 2)
    die("SIGSEGV", 3)
    assert repeated_death(store, run_id) is None, "another step: it got further"
    die("", 3, code=1)
    assert store.run(run_id).message == "worker exited with code 1 at scoring (step 3 of 9)"
    die("SIGSEGV", 3)
    assert repeated_death(store, run_id) is None, "the death before was no signal"
    die("SIGABRT", 3)
    assert repeated_death(store, run_id).signal == "SIGABRT"
    store.update_run(run_id, status="finished", message="")
    assert repeated_death(store, run_id) is None, "it ended otherwise since"
    assert not record_exit(store, WorkerExit(run_id, DIED, time.time(), returncode=-9, signal="SIGKILL")), \
        "an end the worker recorded itself is not overwritten"
    assert store.run(run_id).status == "finished"


def test_a_run_stopped_before_its_supervisor_starts_the_worker_gets_no_worker(store, tiny_dataset, tmp_path):
    # a Stop that came while the supervisor process was still starting found no worker to signal; the worker
    # started after it would have carried on the stopped run (a first look cancelled 4 s after its start left one)
    from judge_engine.runs.supervisor import supervise

    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=6))
    started = tmp_path / "started"
    worker = [sys.executable, "-c", f"open({str(started)!r}, 'w').close()"]
    launched = time.time()
    record_exit(store, WorkerExit(run_id, STOPPED, launched + 0.5, note="stopped by the test"))
    assert supervise(store.path, run_id, tmp_path / "run.log", worker, launched=launched) == 0
    assert not started.exists()
    # a stop recorded before this launch (an earlier stop, then a resume) does not hold the worker back
    assert supervise(store.path, run_id, tmp_path / "run.log", worker, launched=launched + 1.0) == 0
    assert started.exists()

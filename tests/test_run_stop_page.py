"""AppTest of stopping a run and of the note that other runs share the embedded model (issue #36).

Runs are "running" with this test process's pid, so no worker is spawned: the engine's ``stop_run`` finds no
process whose command line is the run's worker, signals nothing (os.kill/os.killpg record here instead), and
marks the run interrupted, resumable.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine.llm import LLMConfig
from judge_engine.runs import RunSpec, create_run
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"
SERVER = LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1")


@pytest.fixture
def signals(monkeypatch) -> list[tuple]:
    """Signals sent, recorded instead (signal 0, the liveness probe, still goes through)."""
    sent: list[tuple] = []
    real_kill = os.kill
    monkeypatch.setattr(os, "kill", lambda pid, sig: real_kill(pid, sig) if sig == 0 else sent.append((pid, sig)))
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
    return sent


def running(store: Store, method: str, llm: LLMConfig | None = None) -> int:
    """A run shown as running: its recorded worker is this (live) test process."""
    run_id = create_run(store, RunSpec(method=method, dataset="tiny", aspect="quality", train_size=6, test_size=6,
                                       llm=llm or LLMConfig()))
    store.update_run(run_id, status="running", pid=os.getpid(), heartbeat=time.time(), stage="scoring", done=1,
                     total=6)
    return run_id


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plain(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def test_a_method_page_says_the_embedded_model_is_busy_and_its_stop_button_stops_the_run(db, tiny_dataset, signals):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    running(store, "direct", SERVER)  # a server's run: it handles concurrent requests, not counted
    first = running(store, "hypoeval")
    second = running(store, "hypoeval")
    at = open_page("pages/hypoeval.py")
    captions = plain(at.caption)
    # the start form: the quick look and the full run both say they will take longer
    assert any(c.startswith(f"2 runs are using the embedded model now (#{second}, #{first})")
               and c.endswith("so this look will take longer than the estimate.") for c in captions), captions
    assert any(c.startswith("2 runs are using the embedded model now")
               and c.endswith("so this run will take longer than the estimate.") for c in captions), captions
    # the progress of the run shown (the newest): the other one shares the model with it
    assert any(c.startswith(f"1 other run is using the embedded model now (#{first})")
               and "takes turns with it" in c for c in captions), captions

    stop = at.button(key=f"hypoeval_stop_{second}")
    assert stop.label == "Stop run"
    assert "kept" in stop.help and "resume it from the Runs page" in stop.help
    assert "without paying again for the calls already made" in stop.help
    stop.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert signals == [], "this process is not the run's worker: nothing is signalled"
    run = store.run(second)
    assert run.status == "interrupted" and run.message.startswith("stopped by user at "), run.message
    assert any(s.startswith(f"Run #{second} had no worker running; it is now marked interrupted.")
               and "resume it from the Runs page" in s for s in plain(at.success)), plain(at.success)
    assert at.button(key=f"hypoeval_resume_{second}").label == "Resume"
    assert not any(b.key == f"hypoeval_stop_{second}" for b in at.button), "an ended run offers no Stop"
    assert store.run(first).status == "running", "only the run asked for is stopped"
    # the form now counts the one run still at work
    assert any(c.startswith(f"1 run is using the embedded model now (#{first})") for c in plain(at.caption))


def test_the_runs_page_stops_the_run_shown_and_offers_resume(db, tiny_dataset, signals, started):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    other = running(store, "direct")
    run_id = running(store, "direct")
    at = open_page("pages/runs.py")
    assert at.selectbox(key="_w_runs_run_id").value == run_id
    captions = plain(at.caption)
    assert any(c.startswith(f"1 other run is using the embedded model now (#{other})") for c in captions), captions
    assert any(c.startswith("2 runs are using the embedded model now")
               and c.endswith("this run will take longer than the estimate.") for c in captions), captions
    at.button(key=f"runs_stop_{run_id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert signals == [] and store.run(run_id).status == "interrupted"
    assert any(s.startswith(f"Run #{run_id} had no worker running") for s in plain(at.success))
    at.button(key=f"runs_resume_{run_id}").click().run()
    assert started == [run_id], "the stopped run resumes from the Runs page"


def test_no_busy_note_on_a_server_or_when_the_model_is_free(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    at = open_page("pages/runs.py")
    assert not any("using the embedded model" in c for c in plain(at.caption)), "nothing else is running"
    running(store, "direct", SERVER)
    running(store, "direct", SERVER)
    at.session_state["settings_backend"] = "openai"
    at.session_state["settings_base_url"] = SERVER.base_url
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("one call at a time" in c for c in plain(at.caption)), "a server handles concurrent requests"
    assert at.button(key=f"runs_stop_{store.runs()[0].id}").label == "Stop run"

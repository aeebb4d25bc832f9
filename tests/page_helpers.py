"""What the method pages' AppTests share: opening one page of the app, runs that finish in-process on a scripted
LLM, and reading the trust panel's flagged entries.

A page test keeps only what is its page's own (its keys, its scripted replies, its assertions). Runs execute
in-process with :class:`~judge_engine.llm.fake.FakeBackend` (tests only): a real worker process would need a
model, and its timing would make a page test flaky.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import runs
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"

Responder = Callable[[list, dict], str]
"""A scripted LLM: ``(messages, params) -> reply``, as :class:`~judge_engine.llm.fake.FakeBackend` takes it."""


def open_page(page: str, *, timeout: float = 60) -> AppTest:
    """The app opened on ``page`` (e.g. ``"pages/hd_eval.py"``), which rendered without an exception."""
    at = AppTest.from_file(str(APP), default_timeout=timeout).run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def execute(store: Store, run_id: int, responder: Responder, config: LLMConfig | None = None, *,
            model_id: str = "fake"):
    """Run ``run_id`` to its end in this process, every LLM call answered by ``responder`` (``config``: the LLM's
    settings, e.g. one call at a time for a scripted order; ``model_id``: the model the run records, so that runs
    by different scripts do not share cached replies); returns the LLM."""
    llm = make_llm(config or LLMConfig(), store=store, backend=FakeBackend(responder, model_id=model_id))
    execute_run(store, run_id, llm=llm)
    return llm


def finished_run(store: Store, spec: RunSpec, responder: Responder, config: LLMConfig | None = None) -> int:
    """A run of ``spec`` created and executed in-process with ``responder``: its id."""
    run_id = create_run(store, spec)
    execute(store, run_id, responder, config)
    return run_id


def run_started_runs_in_process(monkeypatch: pytest.MonkeyPatch, responder: Responder) -> list[tuple[int, int]]:
    """Runs the page starts execute in-process with ``responder`` (never the real worker).

    Returns, in start order, each run's id and the LLM calls it made (the page reads the finished run when its
    start button's rerun ends).
    """
    calls: list[tuple[int, int]] = []

    def fake_start(db_path, run_id, *, api_key=None, log_dir=None):
        llm = execute(Store(db_path), run_id, responder)
        calls.append((run_id, llm.ledger.snapshot().calls))

    monkeypatch.setattr(runs.launching, "start_run", fake_start)
    return calls


def flagged_rows(at: AppTest) -> dict[str, str]:
    """The trust panel's flagged-entry rows: figure -> value ("accepted by X" or "not accepted")."""
    frame = next(d.value for d in at.dataframe if list(d.value.columns)[:2] == ["figure", "value"])
    return {f.strip(): v for f, v in zip(frame["figure"], frame["value"]) if f.strip().startswith("flagged entry")}

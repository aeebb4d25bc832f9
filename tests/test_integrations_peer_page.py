"""MLflow's own alignment (the ``memalign`` peer) offered where runs start (issue 66 item 7): each method page has
a checkbox that starts MemAlign on exactly the run's split and backend beside it; where MLflow or DSPy is missing
the box is disabled and says why."""

from __future__ import annotations

import pytest

from judge_engine.integrations import memalign_peer
from judge_engine.store import Store
from tests import page_helpers

PAGES = {"hypoeval": "pages/hypoeval.py", "hpss": "pages/hpss.py", "active_critic": "pages/active_critic.py",
         "hd": "pages/hd_eval.py"}


@pytest.fixture(autouse=True)
def _a_key(monkeypatch):
    """Where the embedded model is not installed the default backend is OpenAI's: a key lets a run be started (the
    runs are recorded, not executed)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _start_hypoeval(at, *, peer: bool):
    at.number_input(key="hypoeval_train__tiny").set_value(6)
    at.number_input(key="hypoeval_test__tiny").set_value(6)
    at.checkbox(key="hypoeval_p_weighted").uncheck()
    box = at.checkbox(key="hypoeval_peer")
    (box.check() if peer else box.uncheck()).run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="hypoeval_start").click().run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("prefix", sorted(PAGES))
def test_every_method_page_offers_the_peer_unticked(db, tiny_dataset, prefix):
    Store(db).save_dataset(tiny_dataset)
    at = page_helpers.open_page(PAGES[prefix])
    box = at.checkbox(key=f"{prefix}_peer")
    assert box.value is False and "MemAlign" in box.label and "split and backend" in box.help


def test_the_ticked_peer_starts_memalign_on_the_runs_split_and_backend(db, tiny_dataset, started, monkeypatch):
    monkeypatch.setattr(memalign_peer, "peer_missing", lambda: "")  # offered whether or not DSPy is installed here
    Store(db).save_dataset(tiny_dataset)
    at = page_helpers.open_page(PAGES["hypoeval"])
    _start_hypoeval(at, peer=True)
    store = Store(db)
    made = {r.method: r for r in (store.run(row["id"]) for row in store.list_runs())}
    assert sorted(made) == ["direct", "geval", "hypoeval", "memalign"] and len(started) == 4
    peer, method = made["memalign"], made["hypoeval"]
    assert peer.split.test_ids == method.split.test_ids and peer.split.train_ids == method.split.train_ids
    assert peer.llm == method.llm
    assert any("memalign" in s.value.lower() for s in at.success), [s.value for s in at.success]


def test_unticked_no_peer_is_started(db, tiny_dataset, started, monkeypatch):
    monkeypatch.setattr(memalign_peer, "peer_missing", lambda: "")
    Store(db).save_dataset(tiny_dataset)
    at = page_helpers.open_page(PAGES["hypoeval"])
    _start_hypoeval(at, peer=False)
    assert sorted(r["method"] for r in Store(db).list_runs()) == ["direct", "geval", "hypoeval"]


def test_without_mlflow_or_dspy_the_box_is_disabled_and_says_why(db, tiny_dataset, started, monkeypatch):
    monkeypatch.setattr(memalign_peer, "peer_missing", lambda: "DSPy, which MLflow's MemAlign runs on, is not "
                                                                "installed (pip install dspy; tested with 3.4.1)")
    Store(db).save_dataset(tiny_dataset)
    at = page_helpers.open_page(PAGES["hypoeval"])
    assert at.checkbox(key="hypoeval_peer").disabled
    assert any("peer is unavailable here: DSPy" in c.value.replace("\\", "") for c in at.caption)
    at.button(key="hypoeval_start").click().run()
    assert "memalign" not in {r["method"] for r in Store(db).list_runs()}


def test_peer_missing_names_what_is_absent(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "dspy" else real(name, *a))
    if real("mlflow") is None:
        assert memalign_peer.peer_missing().startswith("MLflow is not installed")
    else:
        assert memalign_peer.peer_missing().startswith("DSPy, which MLflow's MemAlign runs on, is not installed")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert memalign_peer.peer_missing().startswith("MLflow is not installed")

"""AppTest of the Datasets page's aspect-definition editor with two sessions editing the same definition."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"


def _open() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/datasets.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _save(at: AppTest) -> AppTest:
    next(b for b in at.button if b.label == "Save definitions").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _errors(at: AppTest) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]


def test_a_stale_definition_edit_is_refused_with_a_message_and_the_other_edit_kept(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    a, b = _open(), _open()  # two sessions open the same definition
    key = "datasets_def_tiny_quality"
    assert a.text_area(key=key).value == b.text_area(key=key).value == "How good it is."

    a.text_area(key=key).set_value("A: how complete and correct the summary is.")
    _save(a)
    assert store.load_dataset("tiny").aspect("quality").definition == "A: how complete and correct the summary is."

    b.text_area(key=key).set_value("B: how short the summary is.")
    _save(b)
    [message] = _errors(b)
    assert "changed by someone else" in message and "A: how complete and correct" in message, message
    assert store.load_dataset("tiny").aspect("quality").definition == "A: how complete and correct the summary is."
    assert b.text_area(key=key).value == "B: how short the summary is.", "the refused text stays in the box"
    assert [e["actor"] for e in store.audit_log(entity="aspect")] == ["user"]

    # B has now been shown A's text: saving again replaces it knowingly
    _save(b)
    assert not _errors(b)
    assert store.load_dataset("tiny").aspect("quality").definition == "B: how short the summary is."
    assert len(store.audit_log(entity="aspect")) == 2


def test_an_untouched_editor_shows_the_text_someone_else_saved(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    a, b = _open(), _open()
    key = "datasets_def_tiny_quality"
    a.text_area(key=key).set_value("Edited by A.")
    _save(a)
    b.run()  # B typed nothing: its editor now shows A's text, and saving it changes nothing
    assert b.text_area(key=key).value == "Edited by A."
    _save(b)
    assert not _errors(b) and any("No definition changed" in i.value for i in b.info)
    assert store.load_dataset("tiny").aspect("quality").definition == "Edited by A."

"""The Datasets page's "From another tool" tab: read the labels, see the scale, import (issue 66 items 1 and 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine.store import Store
from tests.test_integrations_annotation_tools import label_studio_tasks

APP = Path(__file__).resolve().parents[1] / "app.py"


def _open() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page("pages/datasets.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def _texts(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def test_label_studio_export_is_read_shown_and_imported(db):
    at = _open()
    at.radio(key="datasets_tool").set_value("label-studio").run()
    uploader = next(u for u in at.file_uploader if u.key == "datasets_tool_file_label-studio")
    uploader.set_value(("ls.json", json.dumps(label_studio_tasks()).encode(), "application/json")).run()
    at.text_input(key="datasets_tool_question_label-studio").set_value("quality").run()
    at.text_input(key="datasets_tool_in_label-studio").set_value("prompt").run()
    at.text_input(key="datasets_tool_out_label-studio").set_value("answer").run()
    _ok(at.button(key="datasets_tool_read").click().run())
    assert any("5 items labelled by 2 annotator(s): ann@x.org, user 2" in t for t in _texts(at.success))
    assert any("(no label): 3 (user 2)" in t for t in _texts(at.info))
    assert at.number_input(key="datasets_tool_low").value == pytest.approx(1.0)
    at.number_input(key="datasets_tool_high").set_value(10.0).run()  # the scale is editable
    at.text_input(key="datasets_tool_name").set_value("from-ls").run()
    _ok(at.button(key="datasets_tool_import").click().run())
    dataset = Store(db).load_dataset("from-ls")
    assert len(dataset.samples) == 5 and dataset.aspect("quality").high == pytest.approx(10.0)


def test_a_wrong_field_is_one_message_and_nothing_is_imported(db):
    at = _open()
    at.radio(key="datasets_tool").set_value("label-studio").run()
    uploader = next(u for u in at.file_uploader if u.key == "datasets_tool_file_label-studio")
    uploader.set_value(("ls.json", json.dumps(label_studio_tasks()).encode(), "application/json")).run()
    at.text_input(key="datasets_tool_question_label-studio").set_value("quality").run()
    at.button(key="datasets_tool_read").click().run()
    assert not at.exception and _texts(at.error) == [
        "task 1's data has no 'input'; its keys: 'prompt', 'answer'"]
    assert Store(db).list_datasets() == []


def test_mlflow_traces_are_read_and_imported(db, mlflow_tracking):
    at = _open()
    at.radio(key="datasets_tool").set_value("mlflow").run()
    at.text_input(key="datasets_tool_uri").set_value(mlflow_tracking.uri).run()
    at.text_input(key="datasets_tool_experiment").set_value(mlflow_tracking.experiment).run()
    at.text_input(key="datasets_tool_question").set_value("helpfulness").run()
    _ok(at.button(key="datasets_tool_read").click().run())
    assert any("36 items labelled by 2 annotator(s): alice, bob" in t for t in _texts(at.success))
    assert any("4 trace(s) without a human assessment" in t for t in _texts(at.info))
    _ok(at.button(key="datasets_tool_import").click().run())
    assert len(Store(db).load_dataset(mlflow_tracking.experiment).samples) == 36

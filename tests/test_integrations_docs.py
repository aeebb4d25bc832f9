"""docs/integrations.md: every Python snippet runs as written (a scripted model stands in for the judge's backend);
the inspect_ai and DeepEval ones run in their own environment (tests/test_integrations_frameworks_env.py)."""

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.mlflow_store import alice_score
from tests.scripted import fake_llm, schema_responder
from tests.test_integrations_annotation_tools import label_studio_tasks

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"


def oracle(messages):
    """Alice's score of a logged trace's answer (so a method fitted on the traces finds what she rewards), 4
    for any other text."""
    found = re.findall(r"\(answer (\d+)\)", messages[-1]["content"])
    return float(alice_score(int(found[-1]))) if found else 4.0


def snippet(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- snippet: {re.escape(name)} -->\n```python\n(.*?)```", text, re.DOTALL)
    assert found, f"no snippet {name!r} in {DOC.name}"
    return found.group(1)


def run(name: str) -> tuple[dict, str]:
    scope: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet(name), f"{DOC.name} ({name})", "exec"), scope)
    return scope, out.getvalue()


def test_every_snippet_in_the_doc_is_run_here():
    names = re.findall(r"<!-- snippet: ([\w-]+) -->", DOC.read_text(encoding="utf-8"))
    tested = {"mlflow-in", "label-studio", "mlflow-out", "align"}
    in_frameworks_env = {"inspect", "deepeval"}  # tests/test_integrations_frameworks_env.py runs them there
    assert set(names) == tested | in_frameworks_env


@pytest.fixture
def workbench(tmp_path, monkeypatch, db, tiny_dataset):
    """The folder the snippets run in: the app's default database, a judge file, a scripted backend."""
    from judge_engine import llm as llm_module
    from judge_engine.export import export_judge
    from judge_engine.runs import RunSpec, create_run, execute_run
    from judge_engine.store import Store

    monkeypatch.chdir(tmp_path)
    store = Store(db)
    scripted, backend = fake_llm(schema_responder("[[4]]", oracle), store=store)
    monkeypatch.setattr(llm_module, "make_llm", lambda *args, **kwargs: scripted)
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6))
    execute_run(store, run_id, llm=scripted)
    (tmp_path / "judge.json").write_text(export_judge(store, run_id))
    return store, scripted


@pytest.fixture
def mlruns(workbench, mlflow_tracking, tmp_path):
    shutil.copy(mlflow_tracking.path, tmp_path / "mlruns.db")
    return workbench


def test_label_studio_snippet(workbench, tmp_path):
    (tmp_path / "project-7.json").write_text(json.dumps(label_studio_tasks()))
    _, out = run("label-studio")
    assert "5 items labelled by 2 annotator(s)" in out and "(no label): 3 (user 2)" in out
    assert workbench[0].has_dataset("support-ls")


def test_mlflow_snippets(mlruns, monkeypatch):
    from judge_engine.integrations import mlflow_align

    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "2")
    store, scripted = mlruns
    monkeypatch.setattr(mlflow_align, "make_llm", lambda *args, **kwargs: scripted)
    _, out = run("mlflow-in")
    assert "40 traces -> 36 items labelled by 2 annotator(s) (alice, bob); scale: numeric, 1 to 5" in out
    scope, out = run("mlflow-out")
    assert scope["results"].metrics["quality/mean"] == pytest.approx(4.0)
    scope, out = run("align")
    assert store.run(scope["aligned"].run_id).status == "finished"
    assert out.split()[-1] == "4.0"


def test_promptfoo_assertion(workbench, monkeypatch, tmp_path):
    from judge_engine.integrations import promptfoo_assert

    monkeypatch.setenv(promptfoo_assert.JUDGE_ENV, str(tmp_path / "judge.json"))
    promptfoo_assert._judge.cache_clear()
    got = promptfoo_assert.get_assert("Open settings, press reset.", {"vars": {"input": "How do I reset?"}})
    assert got["pass"] and got["score"] == pytest.approx(0.75) and got["reason"].startswith("4 on 1-5")
    monkeypatch.setenv(promptfoo_assert.PASS_ENV, "0.9")
    assert not promptfoo_assert.get_assert("Open settings.", {"prompt": "How do I reset?"})["pass"]
    promptfoo_assert._judge.cache_clear()

"""AppTest of the HPSS page: estimate, start (worker replaced by an in-process fake-LLM run), live view, results."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import data, structured
from judge_engine import runs as runs_module
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import execute_run
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"
PAGE = "pages/hpss.py"


def responder(messages, params):
    kind = structured.kind_of(params.json_schema)
    replies = {structured.HPSS_METRICS: {"questions": ["Does it mention every slot?"]},
               structured.GEVAL_STEPS: {"steps": ["Read the summary.", "Rate it."]},
               structured.HPSS_CRITERIA: {"criteria": ["sounds natural, like a person."]},
               structured.HPSS_REFERENCE: {"reference": "A reference utterance."}}
    if kind in replies:
        return json.dumps(replies[kind])
    text = messages[-1]["content"]
    return f"Rating: [[{zlib.crc32(text.encode()) % 5 + 1}]]"  # a server that ignores the schema: the fallback


@pytest.fixture
def sfhot_db(tmp_path, shared_data, monkeypatch) -> Path:
    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    monkeypatch.setenv("JUDGE_WORKBENCH_DATA", str(shared_data))
    Store(path).save_dataset(data.load_benchmark("sfhot"))
    return path


@pytest.mark.model  # 'Show the rendered prompt' builds the run's LLM (the embedded model) to read its cached auxiliaries
def test_hpss_page_estimates_starts_and_shows_the_search(sfhot_db, monkeypatch):
    started = []

    def fake_start(db_path, run_id, *, api_key=None, log_dir=None):
        started.append(run_id)
        store = Store(db_path)
        execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(responder)))

    monkeypatch.setattr(runs_module, "start_run", fake_start)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("No HPSS search yet" in i.value for i in at.info)
    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    at.selectbox(key="hpss_aspect").set_value("naturalness")
    at.number_input(key="hpss_train").set_value(8)
    at.number_input(key="hpss_test").set_value(5)
    at.number_input(key="hpss_budget").set_value(6)
    at.form_submit_button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Strategy evaluations"] == "27"
    assert int(metrics["LLM requests to search (at most)"].replace(",", "")) >= 27 * 8
    assert any("quick search" in i.value for i in at.info)  # embedded backend: smaller settings suggested
    at.button(key="hpss_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(started) == 2  # the search and the MT-Bench base prompt on the same split
    store = Store(sfhot_db)
    search, base = (store.get_run(i) for i in started)
    assert search["status"] == "finished" and base["status"] == "finished"
    assert base["params"]["fixed_strategy"] == "5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"
    assert at.selectbox(key="hpss_run_id").value == started[0]
    frames = [d.value for d in at.dataframe]
    history = next(f for f in frames if "fitness (ρ×100×coverage)" in f.columns and "stage" in f.columns)
    assert len(history) == 27 and list(history["#"]) == list(range(1, 28))
    # coverage beside every strategy, and how its replies were read (here: the [[N]] fallback)
    assert history["coverage"].notna().all() and (history["read by fallback"] > 0).all()
    assert (history["read as JSON"] == 0).all()
    assert any(m.label == "Coverage (best)" for m in at.metric)
    assert any("by the free-text fallback" in c.value for c in at.caption)
    comparison = next(f for f in frames if "judge" in f.columns and "95% CI low" in f.columns)
    assert set(comparison["judge"]) == {"HPSS best", "MT-Bench base prompt"}
    assert any("Best validation" in m.label for m in at.metric)
    assert len(at.get("plotly_chart")) >= 2  # fitness curve and advantage heatmap (plus inspect scatter)
    at.button(key="hpss_render").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.code and "[Instruction]" in at.code[0].value and '"score": <your rating>' in at.code[0].value

    # a person edits the best strategy: a new run on the same split with the edit as parameters
    at.selectbox(key=f"hpss_edit_{started[0]}_scale").set_value("10")
    at.text_area(key=f"hpss_edit_{started[0]}_text").set_value("Naturalness: reads like a person wrote it.")
    next(b for b in at.button if b.label.startswith("Save edit")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(started) == 3
    edited = store.get_run(started[2])
    assert edited["status"] == "finished" and edited["split"] == search["split"]
    assert edited["params"]["fixed_strategy"].startswith("10_")
    assert edited["params"]["human_criteria"] == "Naturalness: reads like a person wrote it."
    owner = f"hpss-run-{started[0]}"
    assert {r["name"]: r["version"] for r in store.criteria(owner)} == {"strategy": 2, "human criteria": 2}
    # someone else saves meanwhile: the page's stale edit is refused with a clear message
    row = next(r for r in store.criteria(owner) if r["name"] == "strategy")
    at.selectbox(key=f"hpss_edit_{started[0]}_scale").set_value("3")
    store.save_criterion({k: row[k] for k in ("id", "owner", "name", "definition", "status", "position")},
                         actor="other", expected_version=row["version"])
    next(b for b in at.button if b.label.startswith("Save edit")).click().run()
    assert any("changed by someone else" in e.value.replace("\\", "") for e in at.error)
    assert len(started) == 3


def test_the_page_lists_the_auxiliaries_the_checks_refused(db):
    from judge_engine.records import Dataset
    from judge_engine.runs import RunSpec, create_run
    from tests.test_hpss import ASPECT, TASK, _refusing, _samples

    store = Store(db)
    store.save_dataset(Dataset(name="toy", task=TASK.task, aspects=(ASPECT,), samples=_samples(12),
                               input_label="Article", output_label="Summary"))
    run_id = create_run(store, RunSpec(method="hpss", dataset="toy", aspect="quality", train_size=9, test_size=3,
                                       params={"budget": 0}))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(_refusing)))
    rejected = store.get_run(run_id)["judge"]["state"]["rejected"]
    assert {r["rule"] for r in rejected} >= {"copy", "near_duplicate"}, "the fixture refuses criteria and a step"
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(e.label == f"Auxiliaries the checks refused ({len(rejected)})" for e in at.expander)
    table = next(d.value for d in at.dataframe if "auxiliary" in d.value.columns and "rule" in d.value.columns)
    assert len(table) == len(rejected)
    copy = table[table["rule"] == "copy"].iloc[0]
    assert copy["auxiliary"] == "criteria" and copy["text"] == "Output number 4."
    assert copy["reason"] == "100% of it is copied from a text the prompt showed"
    assert "near duplicate" in set(table["rule"]) and copy["for"].startswith("scale ")

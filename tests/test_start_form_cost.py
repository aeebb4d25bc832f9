"""Issue 46 item 5 in the app: the start form shows the expected cost at the Settings' prices before the start,
and the finished run shows what it cost against that."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from judge_engine import runs as runs_module
from judge_engine.runs import execute_run
from judge_engine.runs.cost import against, dollars
from judge_engine.store import Store
from tests.scripted import fake_llm

APP = Path(__file__).resolve().parent.parent / "app.py"


def test_the_start_form_shows_the_expected_cost_and_the_finished_run_its_cost_against_it(db, tiny_dataset,
                                                                                        monkeypatch):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    started = []

    def fake_start(db_path, run_id, *, api_key=None, log_dir=None):  # the work in-process, on a scripted LLM
        started.append(run_id)
        execute_run(Store(db_path), run_id, llm=fake_llm("[[3]]", store=Store(db_path))[0])

    monkeypatch.setattr(runs_module.launching, "start_run", fake_start)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.session_state["settings_price_prompt"] = 0.5
    at.session_state["settings_price_completion"] = 2.0
    at.switch_page("pages/runs.py").run()
    at.selectbox(key="runs_method").set_value("direct")
    at.number_input(key="runs_train__tiny").set_value(0)
    at.number_input(key="runs_test__tiny").set_value(4).run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    metrics = {m.label: m.value for m in at.metric}
    shown = metrics["Expected cost"]
    assert shown.startswith("$") and float(shown[1:]) > 0
    captions = " ".join(c.value.replace("\\", "") for c in at.caption)  # markdown-escaped
    assert "prompt / $2.00 completion per 1k tokens" in captions and "rough: no earlier run" in captions
    assert store.runs() == []  # shown before anything started

    at.button(key="runs_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run = store.run(started[0])
    assert run.status == "finished" and run.estimate is not None
    assert dollars(run.estimate.dollars) == shown  # the form's figure is the one kept with the run
    captions = [c.value for c in at.caption]
    said = f"Cost of the run: {against(run.ledger, run.estimate)}; 'expected': the estimate made before the start"
    assert any(said in c.replace("\\", "") for c in captions), captions

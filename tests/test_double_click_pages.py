"""One click, one action on the pages (issue 62, part 2), and the bad input around it: a run deleted meanwhile,
a backend that cannot work here, settings kept across sessions (AppTests; workers are recorded, never started).

An AppTest runs one script run per click, as Streamlit runs a double click: the second run sees the button
pressed again with the form unchanged, so it sends the same submission token (pages/ui/once.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import saved_settings
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.runs import RunSpec, create_run
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"


def looked_at() -> Dataset:
    samples = tuple(Sample(id=f"s{i}", input=f"source text {i // 3}", output=f"output number {i}", group_id=f"g{i // 3}",
                           system_id=f"sys{i % 3}", human={"overall": float(1 + (i * 7) % 5)})
                    for i in range(36))
    return Dataset(name="looked", task="toy summarization", samples=samples, natural_level="group",
                   aspects=(Aspect("overall", 1, 5, "Good on the whole."),),
                   input_label="Article", output_label="Summary")


@pytest.fixture
def looked(db) -> Store:
    store = Store(db)
    store.save_dataset(looked_at())
    return store


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page_text(at: AppTest) -> str:
    return " ".join(str(e.value).replace("\\", "") for kind in ("success", "info", "warning", "error", "caption")
                    for e in getattr(at, kind))


def test_start_run_clicked_twice_starts_one_run_and_names_it(looked, started, embedded_installed):
    at = open_page("pages/runs.py")
    for _ in range(2):
        at.button(key="runs_start").click().run()
        assert not at.exception, [e.value for e in at.exception]
    ids = [r.id for r in looked.runs()]
    assert len(ids) == 1 and started == ids
    assert at.selectbox(key="_w_runs_run_id").value == ids[0]
    assert f"Run #{ids[0]} was started by this click already" in page_text(at)
    # a changed setting is a new submission: a deliberate second run starts
    at.number_input(key="runs_split_seed").set_value(1).run()
    at.button(key="runs_start").click().run()
    assert len(looked.runs()) == 2


def test_a_quick_first_look_clicked_twice_starts_one_look(looked, started, embedded_installed):
    at = open_page("pages/hypoeval.py")
    at.button(key="hypoeval_quick").click().run()
    first = [r.id for r in looked.runs()]
    assert first, "the look and its baselines started"
    at.button(key="hypoeval_quick").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [r.id for r in looked.runs()] == first and sorted(started) == sorted(first)


def test_resume_clicked_twice_starts_one_worker(looked, started, embedded_installed):
    run_id = create_run(looked, RunSpec(method="direct", dataset="looked", aspect="overall", train_size=0,
                                        test_size=6))
    looked.update_run(run_id, status="interrupted", message="stopped by a test")
    at = open_page("pages/runs.py")
    at.button(key=f"runs_resume_{run_id}").click().run()
    # the second click lands on the button the first run's page still showed: the session has not yet
    # recorded the resume (the page then waits for the worker instead of offering Resume)
    at.session_state["runs_resumed"] = {}
    at.run()
    at.button(key=f"runs_resume_{run_id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert started == [run_id]


def test_a_click_on_a_run_deleted_meanwhile_says_so(looked, started, embedded_installed):
    run_id = create_run(looked, RunSpec(method="direct", dataset="looked", aspect="overall", train_size=0,
                                        test_size=6))
    looked.update_run(run_id, status="interrupted", message="stopped by a test")
    at = open_page("pages/runs.py")
    with looked.write() as db:  # another session (or a script) deletes it while this page shows it
        db.execute("delete from runs where id = ?", [run_id])
    at.button(key=f"runs_resume_{run_id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"Run #{run_id} no longer exists (it was deleted meanwhile)" in page_text(at)
    assert started == []


def test_a_backend_that_cannot_work_here_is_refused_on_the_page_before_a_run_exists(looked, started, embedded_missing):
    at = open_page("pages/runs.py")
    at.session_state["settings_backend"] = "llamacpp"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = page_text(at)
    assert "The embedded model is not installed here" in text and "Settings" in text
    assert not [b for b in at.button if b.key == "runs_start"], "no Start button for a backend that cannot work"
    assert looked.runs() == []


def test_an_unreachable_server_chosen_on_settings_is_one_message(db, embedded_missing, closed_port):
    at = open_page("pages/settings.py")
    at.selectbox(key="_w_settings_backend").set_value("openai").run()
    at.text_input(key="_w_settings_base_url").set_value(f"http://127.0.0.1:{closed_port}/v1").run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and f"nothing answers at http://127.0.0.1:{closed_port}/v1" in errors[0], errors


def test_settings_stay_for_the_next_session_and_the_key_does_not(db, embedded_missing):
    at = open_page("pages/settings.py")
    assert at.selectbox(key="_w_settings_backend").value == "openai", "a first visit without the embedded model"
    at.text_input(key="_w_settings_base_url").set_value("http://127.0.0.1:9/v1").run()
    at.text_input(key="_w_settings_model_openai").set_value("qwen2.5").run()
    at.number_input(key="_w_settings_concurrency_openai").set_value(7).run()
    at.text_input(key="_w_settings_api_key").set_value("sk-kept-in-session").run()
    assert not at.exception

    again = open_page("pages/settings.py")  # a reload, a new tab or a restart: a new session on the same database
    assert again.selectbox(key="_w_settings_backend").value == "openai"
    assert again.text_input(key="_w_settings_base_url").value == "http://127.0.0.1:9/v1"
    assert again.text_input(key="_w_settings_model_openai").value == "qwen2.5"
    assert again.number_input(key="_w_settings_concurrency_openai").value == 7
    assert again.text_input(key="_w_settings_api_key").value == ""
    assert b"sk-kept-in-session" not in Path(db).read_bytes()
    assert saved_settings.load(Store(db), saved_settings.DATABASE)["settings_model_openai"] == "qwen2.5"


def test_a_first_visit_offers_the_environments_server(db, embedded_missing, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    at = open_page("pages/settings.py")
    assert at.selectbox(key="_w_settings_backend").value == "openai"
    assert at.text_input(key="_w_settings_base_url").value == "http://127.0.0.1:9/v1"
    assert any("The environment sets OPENAI_BASE_URL" in c.value.replace("\\", "") for c in at.caption)


def test_each_database_keeps_its_own_settings(db, tmp_path, embedded_installed):
    other = tmp_path / "other.db"
    saved_settings.save(Store(other), saved_settings.DATABASE, "settings_backend", "vllm")
    at = open_page("pages/settings.py")
    assert at.selectbox(key="_w_settings_backend").value == "llamacpp"
    at.sidebar.text_input[0].set_value(str(other)).run()
    at.switch_page("pages/settings.py").run()
    assert at.selectbox(key="_w_settings_backend").value == "vllm"



def test_a_rescore_clicked_twice_is_one_run_and_a_reload_during_it_loses_nothing(db, tiny_dataset, started):
    from tests.test_hypoeval_page import finished_run

    run_id = finished_run(db, tiny_dataset)
    store = Store(db)
    owner = f"hypoeval:run:{run_id}"
    at = open_page("pages/hypoeval.py")
    curated = store.criteria(owner)  # seeded from the run's bank when its page first opens
    assert curated
    at.button(key="hypoeval_rescore").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [rescore] = [r.id for r in store.runs() if r.id != run_id]
    # the second click of a double click is run on the page the first one replaced: the run it re-scored
    at.session_state["hypoeval_run_id"] = run_id
    at.session_state["_w_hypoeval_run_id"] = run_id
    at.session_state["hypoeval_view"] = "Curate and re-score"
    at.session_state["_w_hypoeval_view"] = "Curate and re-score"
    at.run()
    at.button(key="hypoeval_rescore").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [r.id for r in store.runs() if r.id != run_id] == [rescore] and started == [rescore]
    assert f"Run #{rescore}" in page_text(at) and "was started by this click already" in page_text(at)

    reloaded = open_page("pages/hypoeval.py")  # a reload while the re-score runs: a new session
    assert not reloaded.exception, [e.value for e in reloaded.exception]
    assert reloaded.selectbox(key="_w_hypoeval_run_id").value == rescore, "the re-score is shown, still running"
    assert any(p.text.startswith("queued") for p in reloaded.progress)
    assert len(store.runs()) == 2 and started == [rescore], "a reload starts nothing"
    assert store.criteria(owner) == curated, "the curated hypotheses are as they were"


def test_start_on_an_unreachable_server_is_refused_with_the_fix_and_nothing_is_created(looked, started, closed_port):
    at = open_page("pages/settings.py")
    at.selectbox(key="_w_settings_backend").set_value("openai").run()
    at.text_input(key="_w_settings_base_url").set_value(f"http://127.0.0.1:{closed_port}/v1").run()
    at.switch_page("pages/runs.py").run()
    at.button(key="runs_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("cannot reach its server" in e and "base URL under Settings" in e for e in errors), errors
    assert looked.runs() == [] and started == []


def test_signed_in_people_keep_their_own_settings_and_a_viewer_keeps_none(db, embedded_installed):
    from tests.test_annotate_page import TEAM

    def signed_in(email: str) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.secrets = TEAM
        at.user = {"is_logged_in": True, "email": email}
        at.run()
        at.switch_page("pages/settings.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    ana = signed_in("ana@example.org")
    ana.selectbox(key="_w_settings_backend").set_value("openai").run()
    ana.text_input(key="_w_settings_base_url").set_value("http://127.0.0.1:9/v1").run()
    assert signed_in("ana@example.org").text_input(key="_w_settings_base_url").value == "http://127.0.0.1:9/v1"
    assert signed_in("ben@example.org").selectbox(key="_w_settings_backend").value == "llamacpp", "ana's are hers"
    vic = signed_in("vic@example.org")
    vic.selectbox(key="_w_settings_backend").set_value("vllm").run()
    assert any("not kept for the next visit" in w.value for w in vic.warning)
    assert signed_in("vic@example.org").selectbox(key="_w_settings_backend").value == "llamacpp"
    kept = saved_settings.load(Store(db), saved_settings.DATABASE, saved_settings.user_scope("ana@example.org"))
    assert kept["settings_backend"] == "openai"


def test_no_quick_first_look_is_offered_on_a_backend_that_cannot_work_here(looked, started, embedded_missing):
    at = open_page("pages/hypoeval.py")
    at.session_state["settings_backend"] = "llamacpp"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [b for b in at.button if b.key in ("hypoeval_quick", "hypoeval_start")]
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and "The embedded model is not installed here" in errors[0], errors

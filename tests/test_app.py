"""AppTest smoke and flow tests of the Streamlit pages (fake LLM backend only, never the real model)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import runs as runs_module
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store
from tests.scripted import fake_llm

APP = Path(__file__).resolve().parents[1] / "app.py"
PAGES = ["pages/home.py", "pages/datasets.py", "pages/runs.py", "pages/annotate.py", "pages/settings.py"]
TIMEOUT = 60


@pytest.fixture
def sfhot_db(db, shared_data, monkeypatch) -> Path:
    monkeypatch.setenv("JUDGE_WORKBENCH_DATA", str(shared_data))
    return db


def open_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    return at.run()


def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescape(text: str) -> str:
    """Markdown-escaped message text as the user reads it."""
    return text.replace("\\", "")


def errors(at: AppTest) -> list[str]:
    return [unescape(e.value) for e in at.error]


def by_label(widgets, prefix: str):
    matches = [w for w in widgets if w.label.startswith(prefix)]
    assert matches, f"no widget labelled {prefix!r}; have {[w.label for w in widgets]}"
    return matches[0]


# --------------------------------------------------------------------------- every page


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_an_empty_database(db, page):
    at = open_app()
    assert not at.exception
    goto(at, page)
    assert at.title, "each page has a title"
    # Every page runs inside app.py's frame, even though Streamlit would also auto-discover pages/.
    assert [w.label for w in at.sidebar.text_input] == ["Database file", "Your name"]
    assert db.exists(), "the database is created at $JUDGE_WORKBENCH_DB"


def test_sidebar_shows_database_path_and_backend(db):
    at = open_app()
    assert at.sidebar.text_input[0].value == str(db)
    assert at.sidebar.text_input[1].value == "user"  # who works here ($JUDGE_WORKBENCH_USER in the tests)
    assert any("llamacpp" in t.value for t in at.sidebar.text)
    from judge_engine import __version__

    assert any(c.value == f"Judge Workbench {__version__}" for c in at.sidebar.caption)


# --------------------------------------------------------------------------- datasets


def test_datasets_page_imports_a_builtin_benchmark(sfhot_db):
    at = goto(open_app(), "pages/datasets.py")
    at.selectbox(key="datasets_bench").set_value("sfhot").run()
    at.button(key="datasets_import_bench").click().run()
    assert not at.exception
    assert not at.error
    assert any("Imported sfhot" in unescape(s.value) for s in at.success)
    store = Store(sfhot_db)
    assert store.has_dataset("sfhot")
    assert len(store.load_dataset("sfhot").samples) == 875
    # Now stored: the import button is disabled and the dataset is shown with its histograms.
    assert at.button(key="datasets_import_bench").disabled
    assert at.selectbox(key="_w_datasets_pick").value == "sfhot"
    assert any(t.value.startswith("Task:") for t in at.text)


GOOD_CSV = b"source,summary,score\nThe cat sat.,A cat.,4\nDogs bark loudly.,Dogs bark.,2\nRain today.,It rains.,5\n"
BAD_CSV = b"source,summary,score\nThe cat sat.,A cat.,4\nDogs bark loudly.,Dogs bark.,abc\nRain today.,It rains.,5\n"


def upload(at: AppTest, filename: str, content: bytes, name: str) -> AppTest:
    at.file_uploader[0].set_value((filename, content, "text/csv")).run()
    assert not at.exception
    assert not at.error, errors(at)
    assert by_label(at.selectbox, "Input").value == "source"
    assert by_label(at.selectbox, "Output").value == "summary"
    scores = by_label(at.multiselect, "Human score")
    if scores.value != ["score"]:  # only guessed when the preview's scores all read as numbers
        assert "abc" in content.decode()
        scores.set_value(["score"]).run()
    by_label(at.text_input, "Dataset name").set_value(name).run()
    at.button(key="datasets_import_file").click().run()
    assert not at.exception
    return at


def test_uploaded_table_imports_and_bad_scores_name_row_and_column(db):
    at = goto(open_app(), "pages/datasets.py")
    upload(at, "mine.csv", GOOD_CSV, "mine")
    assert not at.error, errors(at)
    store = Store(db)
    before = store.load_dataset("mine")
    assert [s.human["score"] for s in before.samples] == [4.0, 2.0, 5.0]
    assert list((db.parent / "uploads").glob("*/mine.csv")), "the upload is saved next to the database"

    # A file with a non-numeric score: the error names the row and the column; nothing is stored.
    upload(at, "broken.csv", BAD_CSV, "broken")
    msgs = errors(at)
    assert any("row 3" in m and "column 'score'" in m and "abc" in m for m in msgs), msgs
    assert not store.has_dataset("broken")

    # The same good file under a taken name: a clear message, the stored dataset is untouched.
    upload(at, "again.csv", GOOD_CSV.replace(b"4\n", b"1\n"), "mine")
    assert any("already exists" in m for m in errors(at)), errors(at)
    after = store.load_dataset("mine")
    assert after == before


def test_import_table_helper_keeps_existing_dataset(db, tmp_path):
    from judge_engine.data import DataImportError
    from pages.ui.table_import import ImportColumns, import_table

    store = Store(db)
    columns = ImportColumns(input="source", output="summary", scores=("score",))
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_bytes(GOOD_CSV)
    bad.write_bytes(BAD_CSV)
    dataset, warnings = import_table(store, good, name="mine", columns=columns)
    assert warnings == []
    assert store.load_dataset("mine") == dataset
    with pytest.raises(DataImportError, match=r"bad\.csv, row 3, column 'score'"):
        import_table(store, bad, name="other", columns=columns)
    with pytest.raises(ValueError, match="already exists"):
        import_table(store, good, name="mine", columns=columns)
    assert store.load_dataset("mine") == dataset
    assert not store.has_dataset("other")


def test_stored_dataset_aspect_definition_and_split(db, tmp_path):
    from pages.ui.table_import import ImportColumns, import_table

    store = Store(db)
    path = tmp_path / "t.csv"
    rows = "".join(f"in {i},out {i},{i % 5 + 1},g{i // 2}\n" for i in range(40))
    path.write_text("source,summary,score,doc\n" + rows)
    import_table(store, path, name="t", columns=ImportColumns(input="source", output="summary", scores=("score",),
                                                           group="doc"))
    at = goto(open_app(), "pages/datasets.py")
    at.text_area(key="datasets_def_t_score").set_value("How good it is.")
    by_label(at.button, "Save definitions").click().run()
    assert not at.exception
    assert store.load_dataset("t").aspect("score").definition == "How good it is."
    at.number_input(key="datasets_train_t").set_value(10)
    at.number_input(key="datasets_test_t").set_value(6)
    by_label(at.button, "Make split").click().run()
    assert not at.exception
    (split,) = store.list_splits("t")
    # the test items spread over at least 8 sources (pairs here), so 6 asked become 8 x 2: the page says how many
    assert split["n_train"] == 10 and split["n_test"] >= 6
    assert any(f"10 train, {split['n_test']} test" in unescape(s.value) for s in at.success), \
        [s.value for s in at.success]


# --------------------------------------------------------------------------- runs


def finished_run(db: Path, reply: str = "[[3]]") -> int:
    store = Store(db)
    run_id = create_run(store, RunSpec(method="direct", dataset="sfhot", aspect="overall", train_size=5, test_size=6))
    execute_run(store, run_id, llm=fake_llm(reply, store=store)[0])
    return run_id


def test_runs_page_shows_a_finished_run(sfhot_db):
    run_id = finished_run(sfhot_db)
    n = len(Store(sfhot_db).get_run(run_id)["split"]["test_ids"])  # whole dialogue acts: at least the 6 asked
    assert n >= 6
    at = goto(open_app(), "pages/runs.py")
    assert at.selectbox(key="_w_runs_run_id").value == run_id
    frames = {tuple(d.value.columns): d.value for d in at.dataframe}
    corr = next(v for cols, v in frames.items() if "spearman 95% CI" in cols)
    assert corr["level"].iloc[0] == "sample (natural)", "the natural level comes first"
    assert set(corr.columns) >= {"pearson", "spearman", "kendall", "pearson 95% CI", "n", "missing"}
    verdicts = next(v for cols, v in frames.items() if "raw reply" in cols)
    assert len(verdicts) == n
    assert (verdicts["judge"] == 3).all() and not verdicts["parse failure"].any()
    assert (verdicts["raw reply"] == "[[3]]").all()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Parse failures"] == f"0 of {n}"
    assert int(metrics["LLM calls"]) + int(metrics["Cache hits"]) == n
    # every item got a 3: no correlation is defined, so the run finished but its judge is not shown as trusted
    assert any("Finished" in w.value for w in at.warning) and not any("Finished" in s.value for s in at.success)
    assert any("no test pearson" in unescape(w.value) for w in at.warning)


def _by_number(reply):
    """A scripted judge: ``reply(n)`` is its score of the tiny dataset's "output number n"."""
    import re

    def answer(messages, params):
        return f"[[{reply(int(re.findall(r'number ([0-9]+)', messages[0]['content'])[-1]))}]]"

    return answer


def test_runs_page_trust_is_green_only_for_a_judge_no_check_warns_about(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    human = {int(s.output.split()[-1]): int(s.human["quality"]) for s in tiny_dataset.samples}
    ids = {}
    for name, reply in (("good", lambda n: human[n]), ("anti", lambda n: 6 - human[n])):
        ids[name] = create_run(store, RunSpec("direct", "tiny", "quality", train_size=0, test_size=12,
                                              params={"max_tokens": 32 if name == "good" else 40}))
        answer = _by_number(reply)
        execute_run(store, ids[name], llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(answer)))
    at = goto(open_app(), "pages/runs.py")
    assert at.selectbox(key="_w_runs_run_id").value == ids["anti"]  # the newest first
    assert not any("Finished" in s.value for s in at.success)
    # 12 items from 4 source groups are fewer than five independent units (judge_engine.evidence, issue 63): even a
    # Pearson of -1.00 is no claim of "worse than chance" from them, and the box says there is no evidence
    notes = [unescape(i.value) for i in at.info]
    assert any("too few items to say" in n and "no evidence either way" in n for n in notes), notes
    assert not any("worse than chance" in unescape(w.value) for w in at.warning)
    trust = next(d.value for d in at.dataframe if "rests on" in d.value.columns)
    group = trust[trust["figure"] == "test pearson, group level"].iloc[0]
    assert group["interval / p"].startswith("too few groups") and group["rests on"] == "12 items, 4 groups"
    assert (trust["figure"] == "test pearson, sample level").any(), "the sample level beside the group level"
    at.selectbox(key="_w_runs_run_id").set_value(ids["good"]).run()
    # the judge that gives the humans' own scores draws no warning, but 12 items in 4 groups carry no evidence
    # either way: a blue box that says so, never the green "ok" (issue 49: no "ok" without evidence)
    assert not any("Finished" in w.value for w in at.warning) and not at.success
    assert any("too few items to say" in unescape(i.value) for i in at.info), [i.value for i in at.info]


def test_runs_page_flags_parse_failures(sfhot_db):
    run_id = finished_run(sfhot_db, reply="I cannot say")
    n = len(Store(sfhot_db).get_run(run_id)["split"]["test_ids"])
    at = goto(open_app(), "pages/runs.py")
    verdicts = next(d.value for d in at.dataframe if "raw reply" in d.value.columns)
    assert verdicts["parse failure"].all()
    assert all(math.isnan(x) for x in verdicts["judge"])
    assert {m.label: m.value for m in at.metric}["Parse failures"] == f"{n} of {n}"


def test_runs_form_reviews_then_starts_a_run(sfhot_db, monkeypatch):
    """Review shows the estimate; Start creates the run and hands it to the worker launcher."""
    store = Store(sfhot_db)
    store.save_dataset(__import__("judge_engine.data", fromlist=["load_benchmark"]).load_benchmark("sfhot"))
    started = []

    def fake_start(db_path, run_id, *, api_key=None, log_dir=None):  # runs the work in-process, fake LLM
        started.append((Path(db_path), run_id, api_key))
        execute_run(Store(db_path), run_id, llm=fake_llm("[[3]]", store=Store(db_path))[0])

    monkeypatch.setattr(runs_module.launching, "start_run", fake_start)
    at = open_app()
    at.session_state["settings_api_key"] = "sk-secret-test"
    goto(at, "pages/runs.py")
    at.selectbox(key="runs_aspect__sfhot").set_value("naturalness")
    at.number_input(key="runs_train__sfhot").set_value(5)
    at.number_input(key="runs_test__sfhot").set_value(4).run()
    assert not at.exception and not at.error, errors(at)
    metrics = {m.label: m.value for m in at.metric}
    # the split keeps whole groups, so 4 asked can draw more: the form counts what the run will score (93d8dd2)
    assert int(metrics["LLM requests to score the test items"]) >= 4
    assert metrics["LLM requests to fit"] == "0"
    at.button(key="runs_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(started) == 1
    db_path, run_id, key = started[0]
    assert db_path == sfhot_db and key == "sk-secret-test"
    run = store.get_run(run_id)
    assert run["status"] == "finished" and run["aspect"] == "naturalness"
    assert metrics["LLM requests to score the test items"] == str(len(store.run(run_id).split.test_ids))
    assert "sk-secret-test" not in str(run), "the API key never reaches the database"
    assert at.selectbox(key="_w_runs_run_id").value == run_id
    assert any("spearman 95% CI" in d.value.columns for d in at.dataframe)
    page_text = " ".join(str(e.value) for kind in ("text", "markdown", "caption", "success", "info")
                         for e in getattr(at, kind))
    assert "sk-secret-test" not in page_text


def test_failed_run_shows_message_and_resume(sfhot_db, monkeypatch):
    store = Store(sfhot_db)
    run_id = create_run(store, RunSpec(method="direct", dataset="sfhot", aspect="overall", train_size=5, test_size=6))
    store.update_run(run_id, status="failed", message="LLMError: server said no")
    resumed = []
    # Resume goes through runs.resume (once per click), which starts the worker with launching's start_run
    monkeypatch.setattr(runs_module.launching, "start_run",
                        lambda db_path, rid, *, api_key=None, log_dir=None: resumed.append(rid))
    at = goto(open_app(), "pages/runs.py")
    assert any("server said no" in m for m in errors(at))
    at.button(key=f"runs_resume_{run_id}").click().run()
    assert not at.exception
    assert resumed == [run_id]
    # While the worker starts, the page keeps polling instead of showing the old failure.
    assert [p.text for p in at.progress] == ["starting: preparing (waiting for the worker to start)"]  # no "0/0"
    assert not any("server said no" in m for m in errors(at))


def test_a_run_whose_worker_died_twice_at_one_step_says_so_and_offers_resume_anyway(sfhot_db, monkeypatch):
    import time

    from judge_engine.runs.exits import DIED, WorkerExit, record_exit

    store = Store(sfhot_db)
    run_id = create_run(store, RunSpec(method="direct", dataset="sfhot", aspect="overall", train_size=5, test_size=6))
    for _ in range(2):
        store.update_run(run_id, status="running")
        record_exit(store, WorkerExit(run_id, DIED, time.time(), returncode=-11, signal="SIGSEGV", stage="scoring",
                                      done=3, total=6, log_tail="Fatal Python error: Segmentation fault\n  File x"))
    resumed = []
    monkeypatch.setattr(runs_module.launching, "start_run",
                        lambda db_path, rid, *, api_key=None, log_dir=None, force=False: resumed.append((rid, force)))
    at = goto(open_app(), "pages/runs.py")
    assert any("worker died by SIGSEGV at scoring (step 3 of 6)" in w.value for w in at.warning)
    assert any("twice at scoring (step 3 of 6)" in m and "make clean-venv && make install" in m for m in errors(at))
    assert any(e.label == "The worker's last lines of output" for e in at.expander)
    assert any("Fatal Python error: Segmentation fault" in c.value for c in at.code)
    button = at.button(key=f"runs_resume_{run_id}")
    assert button.label == "Resume anyway"
    button.click().run()
    assert not at.exception and resumed == [(run_id, True)]


# --------------------------------------------------------------------------- settings


def test_settings_persist_across_pages_and_key_stays_in_session(db):
    at = goto(open_app(), "pages/settings.py")
    at.selectbox(key="_w_settings_backend").set_value("openai").run()
    at.text_input(key="_w_settings_base_url").set_value("http://localhost:9/v1").run()
    at.text_input(key="_w_settings_api_key").set_value("sk-do-not-show").run()
    assert not at.exception
    assert at.text_input(key="_w_settings_api_key").proto.type == at.text_input(key="_w_settings_api_key").proto.PASSWORD
    goto(at, "pages/home.py")
    assert any("openai" in t.value and "localhost:9" in t.value for t in at.text)
    shown = " ".join(str(e.value) for kind in ("text", "markdown", "caption", "json") for e in getattr(at, kind))
    assert "sk-do-not-show" not in shown
    goto(at, "pages/settings.py")
    assert at.selectbox(key="_w_settings_backend").value == "openai"
    assert at.text_input(key="_w_settings_api_key").value == "sk-do-not-show"
    at.selectbox(key="_w_settings_backend").set_value("vllm").run()
    assert any("requirements-gpu.txt" in i.value for i in at.info)


def test_database_path_from_the_sidebar_and_a_bad_one_is_reported(db, tmp_path):
    other = tmp_path / "other" / "second.db"
    at = open_app()
    at.sidebar.text_input[0].set_value(str(other)).run()
    assert not at.exception
    assert other.exists(), "the new database is created and used"
    at.sidebar.text_input[0].set_value("/proc/no-such-dir/x.db").run()
    assert not at.exception
    assert any("Cannot open the database" in m for m in errors(at))


def test_test_connection_reports_an_unreachable_server_without_the_key(db):
    at = goto(open_app(), "pages/settings.py")
    at.selectbox(key="_w_settings_backend").set_value("openai").run()
    at.text_input(key="_w_settings_base_url").set_value("http://127.0.0.1:9/v1").run()
    at.text_input(key="_w_settings_api_key").set_value("sk-never-shown").run()
    at.number_input(key="_w_settings_max_retries").set_value(0).run()
    at.button(key="settings_test").click().run()
    assert not at.exception
    messages = errors(at)
    assert messages and "127.0.0.1:9" in messages[0], messages
    assert "sk-never-shown" not in " ".join(messages)

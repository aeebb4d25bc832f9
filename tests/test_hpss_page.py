"""AppTest of the HPSS page: estimate, start (worker replaced by an in-process fake-LLM run), live view, results."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from judge_engine import data, structured
from judge_engine import runs as runs_module
from judge_engine.methods.hpss import HPSS
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import execute_run
from judge_engine.store import Store
from tests import page_helpers

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
    calls = page_helpers.run_started_runs_in_process(monkeypatch, responder)

    def started() -> list[int]:
        return [run_id for run_id, _ in calls]

    at = _open()
    assert any("No HPSS search yet" in i.value for i in at.info)
    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    at.selectbox(key="hpss_aspect__sfhot").set_value("naturalness")
    at.number_input(key="hpss_train__sfhot").set_value(8)
    at.number_input(key="hpss_test__sfhot").set_value(5)
    at.number_input(key="hpss_p_budget").set_value(6).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Strategy evaluations"] == "27"
    assert int(metrics["LLM requests to fit"].replace(",", "")) >= 27 * 8
    # embedded backend: a smaller first look is one click away, with its time
    quick = at.button(key="hpss_quick")
    assert quick.label.startswith("Quick first look (") and "min" in quick.label
    at.button(key="hpss_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(started()) == 2  # the search and the MT-Bench base prompt on the same split
    store = Store(sfhot_db)
    search, base = (store.get_run(i) for i in started())
    assert search["status"] == "finished" and base["status"] == "finished"
    assert base["params"]["fixed_strategy"] == "5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"
    assert at.session_state["hpss_run_id"] == started()[0]
    frames = [d.value for d in at.dataframe]
    history = next(f for f in frames if "fitness (ρ×100×coverage)" in f.columns and "stage" in f.columns)
    assert len(history) == 27 and list(history["#"]) == list(range(1, 28))
    # coverage beside every strategy, and how its replies were read (here: the [[N]] fallback)
    assert history["coverage"].notna().all() and (history["read by fallback"] > 0).all()
    assert (history["read as JSON"] == 0).all()
    assert any(m.label == "Coverage (best)" for m in at.metric)
    assert any("by the free-text fallback" in c.value for c in at.caption)
    comparison = next(f for f in frames if "method" in f.columns and "spearman" in f.columns)
    title = "HPSS (prompting-strategy search)"
    assert dict(zip(comparison["run"], comparison["method"])) == {
        f"#{started()[0]} (this run)": title, f"#{started()[1]}": f"{title} (fixed prompt)"}
    assert any(f"MT-Bench base prompt ({base['params']['fixed_strategy']}) is run #{started()[1]}"
               in c.value.replace("\\", "") for c in at.caption)
    assert any("Best validation" in m.label for m in at.metric)
    assert len(at.get("plotly_chart")) >= 2  # fitness curve and advantage heatmap (plus inspect scatter)
    at.button(key="hpss_render").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.code and "[Instruction]" in at.code[0].value and '"score": <your rating>' in at.code[0].value

    # a person edits the best strategy: a new run on the same split with the edit as parameters
    at.selectbox(key=f"hpss_edit_{started()[0]}_scale").set_value("10")
    at.text_area(key=f"hpss_edit_{started()[0]}_text").set_value("Naturalness: reads like a person wrote it.")
    next(b for b in at.button if b.label.startswith("Save edit")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(started()) == 3
    edited = store.get_run(started()[2])
    assert edited["status"] == "finished" and edited["split"] == search["split"]
    assert edited["params"]["fixed_strategy"].startswith("10_")
    assert edited["params"]["human_criteria"] == "Naturalness: reads like a person wrote it."
    owner = f"hpss:run:{started()[0]}"
    assert {r["name"]: r["version"] for r in store.criteria(owner)} == {"strategy": 2, "human criteria": 2}
    # someone else saves meanwhile: the page's stale edit is refused with a clear message
    row = next(r for r in store.criteria(owner) if r["name"] == "strategy")
    at.selectbox(key=f"hpss_edit_{started()[0]}_scale").set_value("3")
    store.save_criterion({k: row[k] for k in ("id", "owner", "name", "definition", "status", "position")},
                         actor="other", expected_version=row["version"])
    next(b for b in at.button if b.label.startswith("Save edit")).click().run()
    assert any("changed by someone else" in e.value.replace("\\", "") for e in at.error)
    assert len(started()) == 3


def test_the_page_lists_the_auxiliaries_the_checks_refused(db):
    from judge_engine.records import Dataset
    from judge_engine.runs import RunSpec, create_run
    from tests.test_hpss import ASPECT, TASK, _refusing, _samples

    store = Store(db)
    store.save_dataset(Dataset(name="toy", task=TASK.task, aspects=(ASPECT,), samples=_samples(12),
                               input_label="Article", output_label="Summary"))
    run_id = create_run(store, RunSpec(method="hpss", dataset="toy", aspect="quality", train_size=9, test_size=3,
                                       params={"budget": 0}))
    page_helpers.execute(store, run_id, _refusing)
    rejected = store.get_run(run_id)["judge"]["state"]["rejected"]
    assert {r["rule"] for r in rejected} >= {"copy", "near_duplicate"}, "the fixture refuses criteria and a step"
    at = _open()
    assert any(e.label == f"Auxiliaries the checks refused ({len(rejected)})" for e in at.expander)
    table = next(d.value for d in at.dataframe if "auxiliary" in d.value.columns and "rule" in d.value.columns)
    assert len(table) == len(rejected)
    copy = table[table["rule"] == "copy"].iloc[0]
    assert copy["auxiliary"] == "criteria" and copy["text"] == "Output number 4."
    assert copy["reason"] == "100% of it is copied from a text the prompt showed"
    assert "near duplicate" in set(table["rule"]) and copy["for"].startswith("scale ")


# --------------------------------------------------------------------------- the start form (issues #18, #22)


@pytest.fixture
def recorded(monkeypatch) -> list[int]:
    """Runs whose worker the page started (nothing executes: these tests look at what was created)."""
    started: list[int] = []
    monkeypatch.setattr(runs_module.launching, "start_run", lambda db_path, run_id, **kw: started.append(run_id))
    return started


def _open():
    return page_helpers.open_page(PAGE, timeout=120)


def test_switching_the_dataset_resets_the_aspect_field(sfhot_db, tiny_dataset):
    Store(sfhot_db).save_dataset(tiny_dataset)
    at = _open()

    def aspect_field():  # found by its label: the behaviour, whatever the field's key
        return next(s for s in at.selectbox if s.label.startswith("Aspect"))

    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    aspect_field().set_value("overall").run()
    at.selectbox(key="hpss_dataset").set_value("tiny").run()
    assert not at.exception, [e.value for e in at.exception]
    # the new dataset's own aspect, not a value the dataset does not have
    assert aspect_field().options == ["quality"] and aspect_field().value == "quality"
    assert at.selectbox(key="hpss_aspect__tiny").value == "quality"
    assert at.number_input(key="hpss_train__tiny").value <= len(tiny_dataset.samples)
    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    assert not at.exception, [e.value for e in at.exception]
    assert aspect_field().value == "overall", "each dataset keeps its own choice"


def test_every_field_explains_itself_in_words(sfhot_db):
    at = _open()
    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    numbers = list(at.number_input)
    assert len(numbers) >= 10, "split, search and the settings of the paper"
    for field in numbers:
        assert field.help, f"number field {field.label!r} has no help"
    for kind in ("number_input", "selectbox", "multiselect", "checkbox", "radio", "text_area", "button"):
        for field in at.get(kind):
            assert "_" not in field.label, f"{kind} {field.label!r} is labelled with a code name"
    assert all(len(c.label) <= 45 for c in at.checkbox), [c.label for c in at.checkbox]
    assert at.expander and any(e.label == "More settings (paper defaults)" for e in at.expander)


def test_the_quick_first_look_starts_a_small_search_with_its_base_prompt(sfhot_db, recorded):
    at = _open()
    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    at.button(key="hpss_quick").click().run()
    assert not at.exception, [e.value for e in at.exception]
    store = Store(sfhot_db)
    assert len(recorded) == 2, "the search and the MT-Bench base prompt"
    search, base = (store.get_run(i) for i in recorded)
    # the quick parameters, or the smaller look the embedded model's speed asks for (runs.quick_look)
    looks = [{**HPSS.quick_params, **smaller} for smaller in ({}, *HPSS.smaller_looks)]
    assert any(all(search["params"][k] == v for k, v in look.items()) for look in looks), search["params"]
    assert not search["params"].get("fixed_strategy")
    expected = data.make_split(data.load_benchmark("sfhot"), train_size=12, test_size=10, seed=0)
    assert len(search["split"]["train_ids"]) == 12, "12 training items: the search's validation set"
    # 10 test items asked; the split spreads them over at least 8 sources, a few from each (data/splits.py), so
    # it may hold more
    assert search["split"]["test_ids"] == list(expected.test_ids) and len(expected.test_ids) >= 10
    assert base["split"] == search["split"]
    assert base["params"]["validation_size"] == search["params"]["validation_size"], "the search's own settings"
    assert at.session_state["hpss_run_id"] == search["id"]
    assert any("quick first look" in s.value for s in at.success)


def test_the_base_prompt_comparison_runs_on_exactly_the_searchs_split_and_is_reused(sfhot_db, recorded):
    at = _open()
    at.selectbox(key="hpss_dataset").set_value("sfhot").run()
    at.selectbox(key="hpss_aspect__sfhot").set_value("naturalness")
    at.number_input(key="hpss_train__sfhot").set_value(10)
    at.number_input(key="hpss_test__sfhot").set_value(6)
    at.number_input(key="hpss_split_seed").set_value(3)
    at.number_input(key="hpss_p_validation_size").set_value(6)
    at.multiselect(key="hpss_compare").set_value(["MT-Bench base prompt", "direct"]).run()
    at.button(key="hpss_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    store = Store(sfhot_db)
    search, base, direct = (store.get_run(i) for i in recorded)
    expected = data.make_split(data.load_benchmark("sfhot"), train_size=10, test_size=6, seed=3)
    assert search["split"]["seed"] == 3 and search["split"]["test_ids"] == list(expected.test_ids)
    assert base["split"] == search["split"] and direct["split"] == search["split"]
    assert (base["method"], direct["method"]) == ("hpss", "direct")
    assert base["params"]["fixed_strategy"] == "5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"
    assert base["params"]["validation_size"] == 6 and base["params"]["fitness_level"] == search["params"]["fitness_level"]
    # another search on the same split (a different budget): the base prompt and direct runs already there serve it
    at.number_input(key="hpss_p_budget").set_value(20).run()
    at.button(key="hpss_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(recorded) == 4, "only the new search started"
    assert store.get_run(recorded[3])["params"]["budget"] == 20
    assert any("already on this split, reused" in s.value for s in at.success)


def test_a_live_search_shows_its_progress_and_the_strategies_so_far(db, tiny_dataset):
    import os
    import time

    from judge_engine.runs import RunSpec, create_run

    store = Store(db)
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="hpss", dataset="tiny", aspect="quality", train_size=6, test_size=6,
                                       params={"budget": 6}))
    store.update_run(run_id, status="running", pid=os.getpid(), heartbeat=time.time(), done=1, total=27,
                     stage="initialization")
    store.add_event(run_id, "hpss_started", {"search": "hpss", "evaluations": 27, "base": "x",
                                             "validation_ids": ["s0", "s1"], "level": "group"})
    name = "5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"
    store.add_event(run_id, "hpss_evaluated", {
        "index": 1, "stage": "base", "strategy": name, "fitness": 41.5, "correlation": 41.5, "coverage": 1.0,
        "selectable": True, "best_so_far": 41.5, "calls": 12, "unparsed": 0, "missing_aux": 0, "retried": 0,
        "read_json": 6, "read_text": 0, "from_alternatives": 0, "scores": [3, 4]})
    at = _open()
    assert any("initialization (1/27)" in (p.proto.text or "") for p in at.get("progress"))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Strategies evaluated"] == "1 of 27" and metrics["Best validation fitness"] == "41.5"
    history = next(d.value for d in at.dataframe if "stage" in d.value.columns)
    assert list(history["strategy"]) == [name]
    assert not any(s.value == "Best strategy" for s in at.subheader), "no results before the search has a judge"


def test_an_edit_of_the_strategy_can_be_undone_without_losing_its_history(db, tiny_dataset, recorded):
    store, run_id = _finished_run(db, tiny_dataset)
    searched = store.get_run(run_id)["judge"]["state"]["strategy"]
    at = _open()
    at.selectbox(key=f"hpss_edit_{run_id}_scale").set_value("10" if not searched.startswith("10_") else "3")
    next(b for b in at.button if b.label.startswith("Save edit")).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    owner = f"hpss:run:{run_id}"
    assert curation_item(store, owner, "strategy")["definition"] != searched and len(recorded) == 1
    at.button(key=f"hpss_undo_{run_id}_strategy").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    row = curation_item(store, owner, "strategy")
    assert row["definition"] == searched and row["version"] == 3, "the undo is a new version, the edit stays in history"
    assert at.selectbox(key=f"hpss_edit_{run_id}_scale").value == searched.split("_")[0], "the form shows it"
    assert len(recorded) == 1, "an undo starts nothing"
    assert any("back to its previous version" in s.value for s in at.success)
    history = next(d.value for d in at.dataframe if "action" in d.value.columns and "item" in d.value.columns)
    assert list(history["item"]).count("strategy") == 3  # seeded, edited, undone


def _finished_run(db, tiny_dataset) -> tuple[Store, int]:
    """A finished HPSS run (no search: the base strategy) on the tiny dataset, answered by the scripted judge."""
    from judge_engine.runs import RunSpec, create_run
    from tests.scripted import schema_responder, tiny_oracle

    store = Store(db)
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="hpss", dataset="tiny", aspect="quality", train_size=3, test_size=9,
                                       params={"budget": 0}))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store,
                                            backend=FakeBackend(schema_responder(oracle=tiny_oracle), model_id="hp")))
    return store, run_id


def curation_item(store: Store, owner: str, key: str) -> dict:
    return next(r for r in store.criteria(owner) if r["id"] == f"{owner}:{key}")


def test_the_page_lists_the_auxiliaries_used_with_flags_and_why(db, tiny_dataset):
    store, run_id = _finished_run(db, tiny_dataset)
    judge = store.get_run(run_id)["judge"]
    # what the rubric checks keep for an auxiliary they doubted but let through (judge_engine.rubric_checks)
    judge["state"]["flagged"] = [
        {"text": "The experts are very skilled.", "ok": True, "rule": "", "reason": "", "stage": "criteria (scale 5)",
         "kind": "criteria", "key": "scale 5",
         "flags": [{"rule": "about_raters", "reason": "describes the raters, not a quality of the judged text"},
                   {"rule": "no_quality", "reason": "names no quality, judgement or score"}]}]
    store.update_run(run_id, judge=judge)
    at = _open()
    assert any(e.label == "Auxiliaries used with flags (1)" for e in at.expander)
    table = next(d.value for d in at.dataframe if "auxiliary" in d.value.columns and "flags" in d.value.columns)
    assert table.to_dict("records") == [{
        "auxiliary": "criteria", "for": "scale 5", "text": "The experts are very skilled.",
        "flags": "describes the raters, not a quality of the judged text (about raters); "
                 "names no quality, judgement or score (no quality)"}]

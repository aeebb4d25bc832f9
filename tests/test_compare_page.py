"""AppTest of the comparison page with runs made by scripted LLMs."""

import json

import pytest

from judge_engine.llm import make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run
from judge_engine.store import Store
from tests import page_helpers
from tests.scripted import schema_responder, tiny_oracle

@pytest.fixture
def db(tmp_path, monkeypatch, tiny_dataset):
    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    store = Store(path)
    store.save_dataset(tiny_dataset)
    responders = {
        # scored by the prompt's characters (not only its length: one article's outputs differ by a digit)
        "direct": lambda m, p: f"[[{1 + sum(map(ord, m[0]['content'])) % 5}]]",
        "geval": lambda m, p: "1. Read.\n2. Rate." if "evaluation procedure" in m[0]["content"] else "[[3]]",
    }
    for method, params in (("direct", {}), ("geval", {"scoring": "sampling", "n_samples": 2}), ("direct", {})):
        run_id = create_run(store, RunSpec(method=method, dataset="tiny", aspect="quality", params=params,
                                           train_size=3, test_size=9))
        page_helpers.execute(store, run_id, responders[method], model_id=f"fake-{run_id}")
    return path


def open_compare():
    return page_helpers.open_page("pages/compare.py")


def test_three_runs_compared_with_triage_label_next_and_exports(db):
    at = open_compare()
    table = next(d.value for d in at.dataframe if "p vs best" in d.value.columns)
    assert sorted(table["run"]) == [1, 2, 3] and table["best"].sum() == 1
    assert set(table["method"]) == {"direct", "geval"}
    triage = next(d.value for d in at.dataframe if "mean |judge - human| (0-1)" in d.value.columns)
    assert len(triage) == 9
    worst = triage.iloc[0]["item"]
    assert at.selectbox(key="compare_item").value == worst
    assert any(e.label.replace("\\", "").startswith("#1 direct") for e in at.expander)
    assert any("judge spread (0-1)" in d.value.columns for d in at.dataframe)
    assert {b.label for b in at.get("download_button")} >= {"Download judge (JSON model card)",
                                                            "Download report (HTML)"}


def test_a_run_on_other_items_is_only_compared_on_the_common_subset(db, tiny_dataset):
    store = Store(db)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=6, test_size=6,
                                       seed=3))
    page_helpers.execute(store, run_id, lambda m, p: "[[2]]", model_id="other")
    at = open_compare()
    assert len(at.selectbox(key="compare_split").options) == 2
    # switching to the other test items starts from all of their runs (not from an empty selection)
    for index in (1, 0):
        at.selectbox(key="compare_split").select_index(index).run()
        # an empty selection says so in a blue box; the runs' own trust boxes (9 scored items: "too few items to
        # say") are blue too and are not what this checks
        notes = [i.value for i in at.info if "too few items to say" not in i.value]
        assert not at.exception and not notes, notes
        assert at.multiselect[0].value, index
    at.toggle(key="compare_common").set_value(True).run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "p vs best" in d.value.columns)
    assert len(table) == 4
    assert "on the items they share" in at.toggle(key="compare_common").label


def test_empty_database_explains_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(tmp_path / "empty.db"))
    at = open_compare()
    assert any("import one under Datasets" in i.value for i in at.info)


def test_an_annotator_labels_a_suggested_item(db, tiny_dataset):
    at = open_compare()
    item = at.selectbox(key="compare_label_item").value
    at.number_input(key="compare_label_value").set_value(5.0)
    at.button(key="FormSubmitter:compare_label_form-Save score").click().run()
    assert not at.exception
    store = Store(db)
    assert store.load_dataset("tiny") == tiny_dataset  # the imported scores are as they came
    [label] = store.annotations("tiny")
    assert (label.sample, label.value, label.annotator) == (item, 5.0, "user")
    assert store.audit_log(entity="annotation")[0]["entity_id"] == f"tiny/{item}/quality"


def test_transfer_starts_a_scoring_run_on_another_dataset(db, tiny_dataset, monkeypatch):
    from dataclasses import replace

    import judge_engine.runs as runs_module

    store = Store(db)
    store.save_dataset(replace(tiny_dataset, name="other"))
    started = []
    monkeypatch.setattr(runs_module.launching, "start_run", lambda path, run_id, **kw: started.append(run_id))
    at = open_compare()
    at.selectbox(key="compare_transfer_ds").set_value("other")
    at.number_input(key="compare_transfer_n").set_value(6)  # two whole groups of 3 (a test group is never cut)
    at.button(key="FormSubmitter:compare_transfer-Score the target with this judge").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert started, [e.value for e in at.error]
    run = store.get_run(started[0])
    assert run["dataset"] == "other" and run["judge"] is not None and len(run["split"]["test_ids"]) == 6


def test_triage_links_to_the_page_where_a_learned_judge_is_edited(db, tiny_dataset):
    store = Store(db)
    run_id = create_run(store, RunSpec(method="hpss", dataset="tiny", aspect="quality", train_size=3, test_size=9,
                                       params={"budget": 0, "fixed_strategy": None}))
    # ratings that follow the humans: HPSS adopts no strategy that disagrees with them
    page_helpers.execute(store, run_id, schema_responder(oracle=tiny_oracle), model_id="hp")
    at = open_compare()
    assert any(link.proto.page.endswith("hpss.py") or "hpss" in link.label for link in at.get("page_link"))


@pytest.fixture
def hd_db(tmp_path, monkeypatch):
    """An HD-Eval run (linear aggregator) and a direct run on the same split, both by scripted LLMs."""
    from tests.test_hd_eval import _dataset, scripted

    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    store = Store(path)
    store.save_dataset(_dataset())
    ids = {}
    for method, params, responder in (
            ("hd_eval", {"aggregator": "lr", "max_layers": 2, "pi_repeats": 2}, scripted),
            ("direct", {}, lambda m, p: f"[[{1 + len(m[0]['content']) % 5}]]")):
        run_id = create_run(store, RunSpec(method=method, dataset="toy", aspect="clarity", params=params,
                                           train_size=12, test_size=6))
        page_helpers.execute(store, run_id, responder, model_id=f"fake-{method}")
        ids[method] = run_id
    return ids


def _waterfalls(block) -> list:
    import json

    return [c for c in block.get("plotly_chart") if any(t.get("type") == "waterfall"
                                                        for t in json.loads(c.proto.spec).get("data", []))]


def test_triage_draws_the_shap_waterfall_of_an_aggregator_run_only(hd_db):
    at = open_compare()
    item = at.selectbox(key="compare_item").value
    expanders = {e.label.replace("\\", "").split(":")[0]: e for e in at.expander}
    hd, direct = expanders[f"#{hd_db['hd_eval']} hd_eval"], expanders[f"#{hd_db['direct']} direct"]
    assert len(_waterfalls(hd)) == 1 and not _waterfalls(direct)
    assert len(_waterfalls(at)) == 1  # nowhere else either
    assert any("SHAP values of the judge's aggregator" in c.value for c in hd.caption)
    assert item in _waterfalls(hd)[0].proto.spec  # "Why sample <item> got ..."

    # opening another item redraws the waterfall for that item
    other = next(i for i in at.selectbox(key="compare_item").options if i != item)
    at.selectbox(key="compare_item").set_value(other).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(_waterfalls(at)) == 1 and f"Why sample {other} got" in _waterfalls(at)[0].proto.spec


def test_every_compared_run_has_its_trust_box_green_only_when_no_check_warns(db):
    from judge_engine.trust import trust_report

    at = open_compare()
    block = next(e for e in at.expander if e.label.startswith("Trust"))
    boxes = {}
    for kind in ("success", "warning", "info"):
        for box in getattr(block, kind):
            text = box.value.replace("\\", "")
            boxes[int(text.split("#")[1].split()[0])] = (kind, text)
    assert sorted(boxes) == [1, 2, 3]
    store = Store(db)
    for run_id, (kind, text) in boxes.items():
        report = trust_report(store, run_id)
        # "not shown to agree" and "too few items to say" are no go-ahead and no warning either
        assert kind == {"ok": "success", "warning": "warning"}.get(report.verdict, "info")
        assert all(reason[:40] in text for reason in report.reasons)
    assert boxes[2][0] == "warning" and "no test pearson" in boxes[2][1], "G-Eval scored every item 3"


def test_a_rerun_reads_no_verdicts_redoes_no_bootstrap_and_the_report_is_built_on_click(db, monkeypatch):
    from collections import Counter

    from streamlit.runtime.media_file_manager import MediaFileManager

    from judge_engine import figures as plots
    from judge_engine import metrics

    counts: Counter = Counter()

    def count(owner, name):
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *a, **k: counts.update([name]) or real(*a, **k))

    for owner, name in ((Store, "load_verdicts"), (metrics, "meta_evaluate"), (plots, "report_html")):
        count(owner, name)
    deferred = {}
    add_deferred = MediaFileManager.add_deferred

    def keep_callable(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        deferred[file_name] = data_callable
        return add_deferred(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep_callable)
    at = open_compare()
    assert counts["load_verdicts"] >= 3 and counts["meta_evaluate"] >= 3, "the first visit computes"
    assert counts["report_html"] == 0, "the HTML report (with plotly.js inside) is not made on every run"
    counts.clear()
    other = at.selectbox(key="compare_item").options[1]
    at.selectbox(key="compare_item").set_value(other).run()  # a rerun that changes none of the runs
    assert not at.exception, [e.value for e in at.exception]
    assert counts == Counter(), "the same runs' verdicts and bootstrap come from the page's cache"
    assert at.selectbox(key="compare_item").value == other

    report = deferred["comparison-tiny-quality.html"]().decode("utf-8")  # what a click on the button runs
    # the judge card (trust report and probes read the verdicts again) is also made on click, not on each rerun
    exported = at.selectbox(key="compare_export").value
    card = json.loads(deferred[f"judge-run-{exported}.json"]())
    assert card["judge"] and card["probes"]["run_id"] == exported
    assert counts["report_html"] == 1
    assert report.startswith("<!doctype html>") and "Judge comparison: tiny / quality" in report
    assert all(f"#{r} " in report for r in (1, 2, 3)) and report.count("<script") >= 4


def test_the_stress_panel_runs_on_click_and_shows_a_verdict_per_transformation(db, monkeypatch):
    from judge_engine import stress

    # the runs were scored by scripted backends; the stress test's twins are answered by one too, never a model
    monkeypatch.setattr(stress, "make_llm", lambda config, **kw: make_llm(
        config, backend=FakeBackend(lambda m, p: f"[[{1 + len(m[0]['content']) % 5}]]", model_id="stress"), **kw))
    at = open_compare()
    assert any(e.label.startswith("Stress tests") for e in at.expander)
    assert not any("verdict" in d.value.columns for d in at.dataframe)  # nothing is called before the click
    at.button(key="compare_stress_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    expected = stress.default_transformations(stress.load_table(), "quality")
    assert list(table["transformation"]) == expected
    assert set(table["verdict"]) <= set(stress.VERDICTS)
    at.run()  # a rerun of the page shows the kept report without a click
    assert any("verdict" in d.value.columns for d in at.dataframe)


def test_on_one_article_the_page_says_no_evidence_either_way(tmp_path, monkeypatch):
    """Issue 63: a split of one SummEval article (16 summaries) once read "Significantly worse than the best run
    (paired bootstrap, p < 0.05): #5, #4, #3, #2, #1" with zero-width interval bars."""
    from judge_engine.records import Aspect, Dataset, Sample

    # two articles of 16 summaries: one is the test split, the other the training items
    samples = tuple(Sample(id=f"a{i:02d}", input=f"article {i // 16}", output=f"summary {i} " + "x" * (i % 5),
                           group_id=f"doc{i // 16}", system_id=f"sys{i % 16}", human={"quality": float(1 + i % 5)})
                    for i in range(32))
    path = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(path))
    store = Store(path)
    store.save_dataset(Dataset(name="one", task="toy", aspects=(Aspect("quality", 1, 5, "How good it is."),),
                               samples=samples, natural_level="group"))
    responders = [lambda m, p: f"[[{1 + m[0]['content'].split('<<<OUTPUT>>>')[-1].count('x')}]]",
                  lambda m, p: f"[[{1 + len(m[0]['content']) % 5}]]", lambda m, p: "[[3]]"]
    for k, responder in enumerate(responders):
        run_id = create_run(store, RunSpec(method="direct", dataset="one", aspect="quality", train_size=16,
                                           test_size=16))
        page_helpers.execute(store, run_id, responder, model_id=f"fake-{k}")
    at = open_compare()
    table = next(d.value for d in at.dataframe if "p vs best" in d.value.columns)
    assert len(table) == 3 and table["p vs best"].isna().all()
    assert set(table["tested at"]) == {"no test"} and (table["pearson CI"] == "–").all()
    captions = " ".join(c.value for c in at.caption)
    assert "no evidence either way" in captions and "Significantly worse" not in captions
    bars = next(c for c in at.get("plotly_chart") if "error_y" in c.proto.spec and '"Bar"' in c.proto.spec
                or '"type":"bar"' in c.proto.spec)
    assert '"array":[null,null,null]' in bars.proto.spec.replace(" ", "")

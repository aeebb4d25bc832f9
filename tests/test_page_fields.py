"""Every page's fields speak a person's language, reset with the dataset they depend on, and say why not.

Issue #22 points 1, 4, 6, 7 and 11 across the pages built on pages/ui/start_form.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from judge_engine.methods import METHODS
from judge_engine.records import Aspect, Dataset, Sample
from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"
PAGES = ("home", "datasets", "runs", "compare", "annotate", "active_critic", "hd_eval", "hpss", "hypoeval",
         "settings")
CODE_NAMES = {name for cls in METHODS.values() for name in cls.default_params()}


def two_datasets() -> list[Dataset]:
    """Like HANNA and Topical-Chat: they share one aspect, each has its own."""
    def make(name: str, aspects: tuple[str, ...]) -> Dataset:
        samples = [Sample(id=f"{name}{g}-{k}", input=f"source {g} of {name}", output=f"text {g} {k}",
                          group_id=f"g{g}", human={a: float(1 + (g + k + i) % 5) for i, a in enumerate(aspects)})
                   for g in range(12) for k in range(3)]
        return Dataset(name=name, task="summarisation", samples=samples,
                       aspects=[Aspect(a, 1, 5, f"How good the {a} is.") for a in aspects])
    return [make("stories", ("coherence", "surprise", "empathy")), make("chats", ("coherence", "engagement"))]


def open_page(stem: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page(f"pages/{stem}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def widgets(at: AppTest) -> list:
    kinds = ("number_input", "selectbox", "multiselect", "checkbox", "text_input", "text_area", "radio", "slider",
             "toggle", "button")
    return [w for kind in kinds for w in getattr(at, kind)]


@pytest.mark.parametrize("stem", PAGES)
def test_no_field_is_labelled_with_a_code_name_and_every_number_has_help(db, stem):
    store = Store(db)
    for dataset in two_datasets():
        store.save_dataset(dataset)
    at = open_page(stem)
    coded = [w.label for w in widgets(at) if "_" in (w.label or "") or (w.label or "") in CODE_NAMES]
    assert not coded, f"{stem}: fields labelled with code names: {coded}"
    silent = [w.label for w in at.number_input if not (w.help or "").strip()]
    assert not silent, f"{stem}: numeric fields without help: {silent}"
    long = [w.label for w in at.checkbox if len(w.label) > 45]
    assert not long, f"{stem}: checkbox labels a 1,400-pixel window cuts off: {long}"


def test_switching_the_dataset_resets_the_fields_that_depend_on_it(db):
    """Choose the HANNA-like dataset and an aspect only it has, then switch: the form follows the new dataset
    (the old form kept only shared layer-1 aspects, and its disabled button said nothing)."""
    store = Store(db)
    for dataset in two_datasets():
        store.save_dataset(dataset)
    at = open_page("hd_eval")
    at.selectbox(key="hd_dataset").set_value("stories").run()
    at.selectbox(key="hd_aspect__stories").set_value("empathy").run()
    assert at.button(key="hd_start").disabled is False
    at.selectbox(key="hd_dataset").set_value("chats").run()
    assert not at.exception
    assert at.selectbox(key="hd_aspect__chats").options == ["coherence", "engagement"]
    assert at.multiselect(key="hd_layer1__chats").value == ["coherence", "engagement"]
    assert at.button(key="hd_start").disabled is False

    # a disabled button says what is missing
    at.multiselect(key="hd_layer1__chats").set_value(["engagement"]).run()
    assert at.button(key="hd_start").disabled is True
    assert any("Build the tree is unavailable" in c.value and "coherence" in c.value for c in at.caption)
    # back on the first dataset, its own choices are still there
    at.selectbox(key="hd_dataset").set_value("stories").run()
    assert at.selectbox(key="hd_aspect__stories").value == "empathy"


def test_built_in_benchmarks_are_listed_and_imported_when_chosen(db):
    at = open_page("hd_eval")
    options = at.selectbox(key="hd_dataset").options
    assert any(o.startswith("hanna") for o in options) and any(o.startswith("topical_chat") for o in options)
    at.selectbox(key="hd_dataset").set_value("hanna").run()
    assert not at.exception and Store(Path(at.session_state["settings_db_path"])
                                      if "settings_db_path" in at.session_state else db).has_dataset("hanna")


def test_the_faster_layout_is_the_default_on_a_prefix_reusing_backend_and_the_paper_layout_is_named(db):
    Store(db).save_dataset(two_datasets()[0])
    at = open_page("hd_eval")
    layout = at.selectbox(key="hd_p_layout")
    assert layout.value == "sample_first" and "faithful" in layout.format_func("paper")
    assert at.checkbox(key="hd_p_weighted").value is True, "the embedded model scores by logprobs by default"


@pytest.mark.parametrize("stem, key", [("hd_eval", "hd_p_criteria_form"),
                                       ("active_critic", "active_critic_p_criteria_form")])
def test_the_criteria_form_is_decided_by_the_backend_and_the_sentence_form_is_named_for_small_models(db, stem, key):
    Store(db).save_dataset(two_datasets()[0])
    at = open_page(stem)
    form = at.selectbox(key=key)
    assert form.value == "auto" and "embedded" in form.format_func("auto")
    assert "small models" in form.format_func("sentence") and "paper" in form.format_func("paper")


def test_quick_first_look_starts_a_small_run_in_one_click(db, started):
    Store(db).save_dataset(two_datasets()[0])
    at = open_page("hd_eval")
    quick = at.button(key="hd_quick")
    assert "min" in quick.label, quick.label
    quick.click().run()
    assert not at.exception and len(started) == 3, "the tree and its two baselines"
    run = Store(db).get_run(started[0])
    # the quick parameters, or the smaller look the embedded model's speed asks for (runs.quick_look)
    looks = [{**METHODS["hd_eval"].quick_params, **smaller} for smaller in ({}, *METHODS["hd_eval"].smaller_looks)]
    assert any(all(run["params"][k] == v for k, v in look.items()) for look in looks), run["params"]
    assert len(run["split"]["test_ids"]) >= 10 and len(run["split"]["train_ids"]) == 12


def test_every_parameter_has_a_label_in_words():
    """One description per parameter drives the forms, the CLI listing and its errors: each needs words."""
    from judge_engine.methods import describe_parameters

    for name, cls in METHODS.items():
        for doc in describe_parameters(cls):
            assert doc.label != doc.name and "_" not in doc.label and len(doc.label) <= 45, (name, doc.name, doc.label)
        assert set(cls.quick_params) <= set(cls.default_params()), name

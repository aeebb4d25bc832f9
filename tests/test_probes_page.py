"""The probes beside a finished run: on the Runs page (with the stability probe on a click) and on Compare."""

from __future__ import annotations

import re

from judge_engine import probes
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import Store
from tests.test_app import by_label, goto, open_app, unescape


def _finished(store, tiny_dataset, reply, max_tokens=32):
    human = {int(s.output.split()[-1]): int(s.human["quality"]) for s in tiny_dataset.samples}

    def answer(messages, params):
        n = int(re.findall(r"number ([0-9]+)", messages[0]["content"])[-1])
        return f"[[{reply(n, human[n], params)}]]"

    run_id = create_run(store, RunSpec("direct", "tiny", "quality", train_size=0, test_size=12,
                                       params={"max_tokens": max_tokens}))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(answer)))
    return run_id, answer


def test_runs_page_shows_the_probes_and_measures_stability_on_a_click(db, tiny_dataset, monkeypatch):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    # a judge that agrees with the humans when greedy and wobbles by a point when sampled
    run_id, answer = _finished(store, tiny_dataset,
                               lambda n, h, p: h if p.temperature == 0 else max(1, min(5, h + (n + p.seed) % 3 - 1)))
    monkeypatch.setattr(probes, "make_llm", lambda config, **kw: make_llm(config, backend=FakeBackend(answer), **kw))
    calls = store.db["llm_cache"].count
    at = goto(open_app(), "pages/runs.py")
    assert at.selectbox(key="_w_runs_run_id").value == run_id
    assert any(e.label.startswith(f"Where run #{run_id} disagrees with the humans (probes on 12 test items)")
               for e in at.expander)
    lines = [unescape(m.value) for m in at.markdown]
    assert any(line.startswith("- collapse: ") for line in lines) and any("- disagreements: " in x for x in lines)
    # 12 test items make no slice of at least 8 items that leaves others out: none is tested or listed, and the
    # line says how many were too small (a slice of 3 items is never shown as a finding)
    assert not any("q (BH)" in d.value.columns for d in at.dataframe)
    said = next(x for x in lines if x.startswith("- disagreements: "))
    assert f"no slice of at least {probes.MIN_SLICE} items to test" in said and "smaller ones left out" in said
    assert any(x.startswith("- probes of run #") and "correlations at the group level" in x for x in lines)
    assert store.db["llm_cache"].count == calls, "the probes make no call until asked"
    assert any("At most 36 calls" in unescape(c.value) for c in at.caption)
    at.number_input(key="runs_probes_stab_items").set_value(6).run()
    at.number_input(key="runs_probes_stab_repeats").set_value(2).run()
    by_label(at.button, "Measure stability").click().run()
    assert not at.exception, [e.value for e in at.exception]
    said = [unescape(m.value) for m in at.markdown if "stability (sampling" in m.value]
    assert said and "2 repeats of 6 items, 6 scored in every repeat" in said[0]
    assert store.db["llm_cache"].count == calls + 12
    by_label(at.button, "Measure stability").click().run()
    assert store.db["llm_cache"].count == calls + 12, "a second look comes from the cache"


def test_compare_page_shows_each_runs_probes(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    good, _ = _finished(store, tiny_dataset, lambda n, h, p: h)
    flat, _ = _finished(store, tiny_dataset, lambda n, h, p: 3 if n % 6 else 4, max_tokens=40)
    at = goto(open_app(), "pages/compare.py")
    assert not at.exception, [e.value for e in at.exception]
    # every run has its headline row and its warnings; one run's probes are shown in full, any run on a choice
    headline = next(d.value for d in at.dataframe if "follows length" in d.value.columns)
    assert sorted(headline["run"]) == sorted([good, flat])
    assert headline.set_index("run").loc[flat, "collapsed"].startswith("yes")
    assert headline.set_index("run").loc[good, "collapsed"].startswith("no")
    assert len(headline.columns) <= 6, "the headline fits the page without scrolling sideways"
    warned = [unescape(w.value) for w in at.warning]
    assert any(w.startswith(f"Run #{flat} gives 2 distinct score(s)") and "Advice: " in w for w in warned), warned
    shown = at.selectbox(key="compare_probes_run").value
    labels = [e.label for e in at.expander]
    assert sum(label.startswith("Where run #") for label in labels) == 1
    assert any(label.startswith(f"Where run #{shown} disagrees") for label in labels), labels
    other = flat if shown == good else good
    at.selectbox(key="compare_probes_run").set_value(other).run()
    assert any(e.label.startswith(f"Where run #{other} disagrees") for e in at.expander)
    # switched off (or opened with ?probes=off), the page draws no probe; switched on again, they are back
    at.toggle(key="compare_show_probes").set_value(False).run()
    assert not any(e.label.startswith("Where run #") for e in at.expander)
    assert not any("follows length" in d.value.columns for d in at.dataframe)
    at.toggle(key="compare_show_probes").set_value(True).run()
    assert any(e.label.startswith("Where run #") for e in at.expander)
    off = open_app()
    off.query_params["probes"] = "off"
    off = goto(off, "pages/compare.py")
    assert not off.exception and not off.toggle(key="compare_show_probes").value
    assert not any(e.label.startswith("Where run #") for e in off.expander)

"""A finished run's probe report is computed once and kept in the store (judge_engine.probes._stored): read back,
it is the report computed afresh; a new label, an edited verdict or other probe code computes it again."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from judge_engine import probes
from judge_engine.llm import LedgerTotals
from judge_engine.methods import Judge, get_method
from judge_engine.probes import _report, _stored
from judge_engine.records import Aspect, Dataset, Sample, Split, Verdict
from judge_engine.runs import RunSpec, create_run, human_dataset, summarize
from judge_engine.store import Store

N = 72


def _finished_run(store: Store, *, aggregate: str | None = None, seed: int = 3) -> int:
    """A finished direct run on N items of 3 systems: human + noise, one system over-scored, explanations."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=N).astype(float)
    samples = tuple(Sample(id=f"s{i:02d}", input=f"source {i // 3}", output=" ".join(["word"] * int(5 + i % 40)),
                           group_id=f"g{i // 3}", system_id=f"sys{i % 3}", human={"quality": h})
                    for i, h in enumerate(human))
    dataset = Dataset(name="kept", task="toy", aspects=(Aspect("quality", 1, 5),), samples=samples)
    if not store.has_dataset("kept"):
        store.save_dataset(dataset)
    if aggregate:  # every item labelled by a person, whose labels the run is evaluated against
        store.set_human_aggregate("kept", aggregate, actor="tester")
        for s in samples:
            store.add_annotation("kept", s.id, "quality", s.human["quality"], annotator="bo")
    ids = [s.id for s in samples]
    split = Split(dataset="kept", seed=0, train_ids=(), test_ids=tuple(ids))
    judge = Judge(method="direct", params=get_method("direct").get_params(), aspect=dataset.aspects[0].to_dict(),
                  task={"task": "toy"}, state={})
    run_id = create_run(store, RunSpec("direct", "kept", "quality", train_size=0), judge=judge, split=split)
    noise = rng.normal(0, 0.7, size=N)
    verdicts = [Verdict(s.id, "quality", math.nan if i == 5 else
                        round(float(np.clip(s.human["quality"] + noise[i] + (1.5 if s.system_id == "sys2" else 0),
                                            1, 5)), 2),
                        explanation=("too long and repetitive" if i % 2 else "clear and faithful summary"),
                        metadata={"source": "missing"} if i == 5 else {})
                for i, s in enumerate(samples)]
    store.save_verdicts(run_id, verdicts)
    store.update_run(run_id, status="finished", summary=summarize(human_dataset(store, "kept"), "quality",
                                                                  store.load_verdicts(run_id), ledger=LedgerTotals(),
                                                                  seconds=0.0))
    return run_id


def _kept_rows(store: Store, run_id: int) -> list[str]:
    return [r["fingerprint"] for r in store.db.query("select fingerprint from probe_reports where run_id = ?",
                                                     [run_id])]


@pytest.fixture
def computed(monkeypatch):
    """Counts the reports computed (not read back from the store)."""
    calls = []
    real = _report.probes

    def counting(*args, **kwargs):
        calls.append(kwargs.get("run_id"))
        return real(*args, **kwargs)

    monkeypatch.setattr(_report, "probes", counting)
    return calls


def test_a_kept_report_reads_back_as_the_report_computed_afresh(store, computed):
    run_id = _finished_run(store)
    first = probes.probe_run(store, run_id)
    assert computed == [run_id] and len(_kept_rows(store, run_id)) == 1
    again = probes.probe_run(store, run_id)
    assert computed == [run_id], "the second read computes nothing"
    fresh = probes.probe_run(store, run_id, keep=False)
    assert computed == [run_id, run_id]
    # a report worth comparing: slices tested (sys2 over-scored), a missing item, themes of the explanations
    assert fresh.disagreements.slices and fresh.disagreements.flagged and fresh.n_missing == 1
    assert any(s.by == "system" and s.name == "sys2" for s in fresh.disagreements.flagged)
    assert again == fresh and first == fresh
    assert _stored.dumps(again) == _stored.dumps(fresh)
    assert again.to_dict() == fresh.to_dict()
    assert probes.summary_lines(again) == probes.summary_lines(fresh)
    assert probes.probe_warnings(again) == probes.probe_warnings(fresh)
    assert isinstance(again.disagreements.slices, tuple) and isinstance(again.disagreements.slices[0].sample_ids,
                                                                        tuple)


def test_nan_and_numpy_figures_read_back_unchanged():
    report = probes.probes(Dataset(name="x", task="t", aspects=(Aspect("quality", 1, 5),),
                                   samples=tuple(Sample(id=f"a{i}", input="i", output="o", group_id=f"g{i}",
                                                        human={"quality": 3.0}) for i in range(4))),
                           "quality", [Verdict(f"a{i}", "quality", float(i % 2)) for i in range(4)])
    # a NaN and numpy scalars where a probe could leave them: JSON's null would have read back as None
    odd = replace(report, n=np.int64(4), length=replace(report.length, excess=math.nan),
                  disagreements=replace(report.disagreements,
                                        overall=probes.Figure(np.float64(0.25), (np.float64(-0.5), None), 4)))
    back = _stored.loads(_stored.dumps(odd))
    assert math.isnan(back.length.excess) and back.n == 4 and isinstance(back.n, int)
    assert back.disagreements.overall == probes.Figure(0.25, (-0.5, None), 4)
    assert _stored.dumps(back) == _stored.dumps(odd) and probes.summary_lines(back) == probes.summary_lines(odd)


def test_a_new_label_an_edited_verdict_or_other_probe_code_computes_the_report_again(store, computed, monkeypatch):
    run_id = _finished_run(store, aggregate="mean")
    probes.probe_run(store, run_id)
    before = _kept_rows(store, run_id)
    # a person's label changes the mean the run is evaluated against: another fingerprint, computed again
    imported = human_dataset(store, "kept", "imported").by_id()["s00"].human["quality"]
    store.add_annotation("kept", "s00", "quality", 1.0 if imported > 3 else 5.0, annotator="ana")
    relabelled = probes.probe_run(store, run_id)
    after = _kept_rows(store, run_id)
    assert computed == [run_id, run_id] and len(after) == 1 and after != before, "the stale report is dropped"
    assert _stored.dumps(relabelled) == _stored.dumps(probes.probe_run(store, run_id, keep=False))
    # the annotation is kept as entered: storing a derived report never touches people's data
    assert [(a.annotator, a.value) for a in store.annotations("kept", sample="s00", source=None)
            if a.annotator == "ana"] == [("ana", 1.0 if imported > 3 else 5.0)]
    store.save_verdicts(run_id, [Verdict("s01", "quality", 1.0)])
    probes.probe_run(store, run_id)
    assert len(computed) == 4 and _kept_rows(store, run_id) != after
    monkeypatch.setattr(_stored, "code_fingerprint", lambda: "probes of another version")
    probes.probe_run(store, run_id)
    probes.probe_run(store, run_id)
    assert len(computed) == 5, "other probe code computes once, then reads its own report"


def test_a_viewer_computes_the_report_without_keeping_it(store, computed):
    run_id = _finished_run(store)
    viewer = Store(store.path, read_only="viewer")
    report = probes.probe_run(viewer, run_id)
    assert report.n == N - 1 and _kept_rows(store, run_id) == [] and computed == [run_id]


def test_the_apps_worker_keeps_the_probes_of_the_run_it_finished(store, computed, monkeypatch):
    from judge_engine.__main__ import _keep_probes
    from judge_engine.runs.supervisor import RUN_LOG_ENV

    run_id = _finished_run(store)
    monkeypatch.delenv(RUN_LOG_ENV, raising=False)
    _keep_probes(store, run_id)  # a run in a terminal: the first reader computes them
    assert _kept_rows(store, run_id) == []
    monkeypatch.setenv(RUN_LOG_ENV, "worker.log")
    _keep_probes(store, run_id)
    assert len(_kept_rows(store, run_id)) == 1 and computed == [run_id]


def _compare_page(app: str) -> AppTest:
    at = AppTest.from_file(app, default_timeout=120).run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _probe_figures(at: AppTest) -> tuple:
    headline = next(d.value for d in at.dataframe if "follows length" in d.value.columns)
    slices = next(d.value for d in at.dataframe if "q (BH)" in d.value.columns)
    lines = [m.value for m in at.markdown if m.value.startswith("- ")]
    return headline.to_dict("list"), slices.to_dict("list"), lines, [w.value for w in at.warning]


def test_the_compare_page_shows_the_same_probes_kept_or_computed_on_the_visit(tmp_path, monkeypatch, computed):
    from pathlib import Path

    import streamlit as st

    db = tmp_path / "workbench.db"
    monkeypatch.setenv("JUDGE_WORKBENCH_DB", str(db))
    monkeypatch.setenv("JUDGE_WORKBENCH_USER", "tester")
    store = Store(db)
    runs = [_finished_run(store), _finished_run(store, seed=4)]
    app = str(Path(__file__).resolve().parents[1] / "app.py")
    st.cache_data.clear()
    on_the_visit = _probe_figures(_compare_page(app))
    assert sorted(computed) == runs and all(_kept_rows(store, r) for r in runs)
    st.cache_data.clear()
    kept = _probe_figures(_compare_page(app))
    assert sorted(computed) == runs, "the second server's visit reads the kept reports"
    assert kept == on_the_visit
    assert sorted(on_the_visit[0]["run"]) == runs and len(on_the_visit[1]["slice"]) > 0

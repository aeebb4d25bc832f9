"""One way to start a run with its baselines on exactly its split, and to find the runs it compares with."""

import pytest

from judge_engine import runs
from judge_engine.llm import LLMConfig
from judge_engine.records import Split
from judge_engine.runs import Baseline, RunSpec


def test_baselines_run_on_the_runs_split_and_are_reused(store, tiny_dataset, started):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="geval", dataset="tiny", aspect="quality", train_size=3, test_size=6, seed=5,
                   params={"n_samples": 2})
    out = runs.launch(store, spec, baselines=("direct", Baseline("geval")), actor="ann")
    assert [(s.method, s.role, s.reused) for s in out] == [("geval", "run", False), ("direct", "baseline", False),
                                                           ("geval", "baseline", False)]
    assert started == [s.run_id for s in out]
    main = store.get_run(out[0].run_id)
    for s in out[1:]:
        base = store.get_run(s.run_id)
        assert base["split"] == main["split"] and base["actor"] == "ann"
    assert {r.id for r in runs.runs_on_same_split(store, store.run(main["id"]))} == {out[1].run_id, out[2].run_id}

    # a second run on the same split (a re-scoring) finds both baselines and starts nothing new for them
    again = runs.launch(store, spec, split=Split.from_dict(main["split"]), baselines=("direct", "geval"))
    assert [(s.role, s.reused) for s in again] == [("run", False), ("baseline", True), ("baseline", True)]
    assert len(started) == 4


@pytest.mark.parametrize("stopped", ["failed", "interrupted"])
def test_a_baseline_that_stopped_without_finishing_is_started_again_not_reused(stopped, store, tiny_dataset, started):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6, seed=5)
    first = runs.launch(store, spec, baselines=("geval",))
    store.update_run(first[1].run_id, status=stopped, message="worker gone")
    again = runs.launch(store, spec, split=store.run(first[0].run_id).split, baselines=("geval",))
    assert [(s.role, s.reused) for s in again] == [("run", False), ("baseline", False)]
    everything = runs.runs_on_same_split(store, store.run(again[0].run_id), include_failed=True)
    assert first[1].run_id in {r.id for r in everything}
def test_runs_on_another_backend_or_split_are_not_comparable(store, tiny_dataset, started):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6, seed=1)
    first = runs.launch(store, spec)[0].run_id
    other_seed = runs.launch(store, RunSpec(**{**spec.__dict__, "seed": 2}))[0].run_id
    other_model = runs.launch(store, RunSpec(**{**spec.__dict__, "llm": LLMConfig(backend="openai", model="m")}),
                              split=Split.from_dict(store.get_run(first)["split"]),
                              api_key="sk-test")[0].run_id  # api.openai.com is refused without a key
    same = runs.launch(store, spec, split=Split.from_dict(store.get_run(first)["split"]))[0].run_id
    found = {r.id for r in runs.runs_on_same_split(store, store.run(first))}
    assert same in found and other_model not in found
    if store.get_run(other_seed)["split"]["test_ids"] != store.get_run(first)["split"]["test_ids"]:
        assert other_seed not in found


def test_a_refused_spec_creates_nothing(store, tiny_dataset, started):
    store.save_dataset(tiny_dataset)
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        runs.launch(store, RunSpec(method="direct", dataset="tiny", aspect="quality", params={"nope": 1}),
                    baselines=("geval",))
    assert store.list_runs() == [] and started == []


def test_worker_that_cannot_start_is_reported_not_raised(store, tiny_dataset, monkeypatch):
    store.save_dataset(tiny_dataset)

    def refuse(*args, **kwargs):
        raise OSError("no processes left")

    monkeypatch.setattr(runs.launching, "start_run", refuse)
    out = runs.launch(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6))
    assert out[0].worker_error == "no processes left" and store.get_run(out[0].run_id)["status"] == "queued"

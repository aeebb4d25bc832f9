"""Creating a run (:mod:`judge_engine.runs.spec`): the spec is checked and the split fixed before anything runs."""

import pytest

from judge_engine.runs import RunSpec, create_run


def test_a_run_can_reuse_another_runs_exact_split(store, tiny_dataset):
    from judge_engine.records import Split

    store.save_dataset(tiny_dataset)
    first = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6,
                                      seed=4))
    split = Split.from_dict(store.get_run(first)["split"])
    second = create_run(store, RunSpec(method="geval", dataset="tiny", aspect="quality", seed=99), split=split)
    assert store.get_run(second)["split"] == store.get_run(first)["split"]
    with pytest.raises(ValueError, match="unknown item ids"):
        create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality"),
                   split=Split("tiny", 0, ("s0",), ("nope",)))


def test_unknown_aspect_or_bad_params_are_refused_before_anything_runs(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    with pytest.raises(KeyError, match="no aspect 'nope'"):
        create_run(store, RunSpec(method="direct", dataset="tiny", aspect="nope"))
    with pytest.raises(ValueError, match="max_tokens"):
        create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", params={"max_tokens": -1},
                                  train_size=3))
    assert store.list_runs() == []


def test_a_start_checks_and_loads_the_dataset_once(store, tiny_dataset, started, monkeypatch):
    from judge_engine import runs
    from judge_engine.runs import spec as spec_module

    store.save_dataset(tiny_dataset)
    ensured, checked = [], []
    ensure, has = spec_module.ensure_dataset, store.has_dataset
    monkeypatch.setattr(spec_module, "ensure_dataset", lambda s, name: ensured.append(name) or ensure(s, name))
    monkeypatch.setattr(runs.launching, "ensure_dataset", spec_module.ensure_dataset)
    monkeypatch.setattr(runs.creating, "ensure_dataset", spec_module.ensure_dataset)  # create_run looks it up there
    monkeypatch.setattr(store, "has_dataset", lambda name: checked.append(name) or has(name))
    spec = RunSpec(method="geval", dataset="tiny", aspect="quality", train_size=3, test_size=6)
    create_run(store, spec)
    assert ensured == checked == ["tiny"]
    ensured.clear(), checked.clear()
    out = runs.launch(store, spec, baselines=("direct", "geval"))
    assert len(out) == 3 and ensured == checked == ["tiny"], "once for the run and both its baselines"
    with pytest.raises(ValueError, match="not the spec's 'other'"):
        create_run(store, RunSpec(method="direct", dataset="other", aspect="quality"), stored=tiny_dataset)

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

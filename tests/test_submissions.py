"""One click, one action: a submission's token is claimed once in the store (judge_engine.submissions), and
launch/resume start one run and one worker per token (issue 62, part 2)."""

from __future__ import annotations

import threading

import pytest

from judge_engine import runs, submissions
from judge_engine.llm import LLMConfig
from judge_engine.runs import RunSpec, create_run
from judge_engine.store import ReadOnly, Store

# a backend the availability check does not know (the tests' scripted one): launch is not refused for it
SPEC = RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=4,
               llm=LLMConfig(backend="fake"))


@pytest.fixture
def tiny_store(store, tiny_dataset) -> Store:
    store.save_dataset(tiny_dataset)
    return store


def run_ids(store: Store) -> list[int]:
    return [r.id for r in store.runs()]


def test_the_same_token_acts_once_and_returns_the_first_result(store):
    done = []

    def action():
        done.append(1)
        return {"n": len(done)}

    first = submissions.once(store, "t1", "test", action)
    again = submissions.once(store, "t1", "test", action)
    other = submissions.once(store, "t2", "test", action)
    assert first == ({"n": 1}, True)
    assert again == ({"n": 1}, False)
    assert other == ({"n": 2}, True)
    assert done == [1, 1]
    assert submissions.claimed(store, "t1") == {"n": 1}
    assert submissions.claimed(store, "never") is None


def test_an_action_that_fails_leaves_the_token_free_and_writes_nothing(store, tiny_dataset):
    def failing():
        store.save_dataset(tiny_dataset)  # a write inside the transaction, rolled back with the claim
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        submissions.once(store, "t", "test", failing)
    assert submissions.claimed(store, "t") is None
    assert not store.has_dataset("tiny")
    assert submissions.once(store, "t", "test", lambda: {"ok": True}) == ({"ok": True}, True)


def test_an_empty_token_always_acts(store):
    done = []
    for _ in range(2):
        submissions.once(store, "", "test", lambda: done.append(1) or {})
    assert done == [1, 1]


def test_a_viewer_store_claims_nothing(tmp_path):
    Store(tmp_path / "w.db")
    with pytest.raises(ReadOnly):
        submissions.once(Store(tmp_path / "w.db", read_only="viewer@x"), "t", "test", lambda: {})


def test_launch_with_one_token_twice_creates_one_run_and_one_worker(tiny_store, started):
    first = runs.launch(tiny_store, SPEC, token="click-1")
    again = runs.launch(tiny_store, SPEC, token="click-1")
    assert run_ids(tiny_store) == [first[0].run_id]
    assert started == [first[0].run_id], "the second submission starts no worker"
    assert again[0].run_id == first[0].run_id and again[0].repeated and not first[0].repeated
    other = runs.launch(tiny_store, SPEC, token="click-2")
    assert other[0].run_id != first[0].run_id and len(run_ids(tiny_store)) == 2


def test_launch_with_baselines_repeats_them_all_and_creates_none(tiny_store, started):
    first = runs.launch(tiny_store, SPEC, baselines=["geval"], token="look")
    again = runs.launch(tiny_store, SPEC, baselines=["geval"], token="look")
    assert [s.run_id for s in again] == [s.run_id for s in first]
    assert [s.role for s in again] == ["run", "baseline"] and all(s.repeated for s in again)
    assert len(run_ids(tiny_store)) == 2 and len(started) == 2


def test_two_threads_with_one_token_create_one_run(tiny_store, started):
    results: list[list[runs.Started]] = []
    barrier = threading.Barrier(2)

    def click():
        store = Store(tiny_store.path)  # its own connection, as a second script run has
        barrier.wait()
        results.append(runs.launch(store, SPEC, token="same"))

    threads = [threading.Thread(target=click) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(run_ids(tiny_store)) == 1
    assert {r[0].run_id for r in results} == set(run_ids(tiny_store))
    assert sorted(r[0].repeated for r in results) == [False, True]


def test_a_token_whose_run_was_deleted_starts_a_new_run(tiny_store, started):
    first = runs.launch(tiny_store, SPEC, token="t")[0]
    with tiny_store.write() as db:
        db.execute("delete from runs where id = ?", [first.run_id])
    again = runs.launch(tiny_store, SPEC, token="t")[0]
    assert not again.repeated and run_ids(tiny_store) == [again.run_id]


def test_resume_with_one_token_starts_one_worker_and_a_deleted_run_is_named(tiny_store, started):
    run_id = create_run(tiny_store, SPEC)
    tiny_store.update_run(run_id, status="interrupted")
    assert not runs.resume(tiny_store, run_id, token="r").repeated
    assert runs.resume(tiny_store, run_id, token="r").repeated
    assert started == [run_id]
    with tiny_store.write() as db:
        db.execute("delete from runs where id = ?", [run_id])
    with pytest.raises(KeyError, match=f"no run {run_id}"):
        runs.resume(tiny_store, run_id, token="r2")

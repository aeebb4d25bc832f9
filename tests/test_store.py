import math

import pytest

from judge_engine.records import Split, Verdict
from judge_engine.store import CallCache, EditConflict, NotFound, Store


def test_dataset_round_trip(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    back = store.load_dataset("tiny")
    assert back == tiny_dataset
    assert [d["name"] for d in store.list_datasets()] == ["tiny"]


def test_existing_dataset_is_not_overwritten_by_accident(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    with pytest.raises(ValueError, match="already exists"):
        store.save_dataset(tiny_dataset)
    assert len(store.load_dataset("tiny").samples) == 12


def test_missing_dataset_and_run_name_themselves(store):
    with pytest.raises(NotFound, match="no dataset named 'nope'"):
        store.load_dataset("nope")
    with pytest.raises(NotFound, match="no run 42"):
        store.get_run(42)


def test_wal_mode_is_on(store):
    assert next(store.db.query("pragma journal_mode"))["journal_mode"] == "wal"


def _run(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    split = Split("tiny", 0, ("s0", "s1", "s2"), ("s3", "s4", "s5"))
    return store.create_run(method="direct", params={"temperature": 0.0}, dataset="tiny", aspect="quality",
                            split=split, llm={"backend": "llamacpp"})


def test_verdicts_upsert_is_idempotent_and_keeps_missing_as_nan(store, tiny_dataset):
    run_id = _run(store, tiny_dataset)
    verdicts = [Verdict("s3", "quality", 4.0, criteria={"clarity": 3.0}, raw="[[4]]"),
                Verdict("s4", "quality", math.nan, raw="no idea")]
    store.save_verdicts(run_id, verdicts)
    store.save_verdicts(run_id, verdicts)  # a resumed run writing the same rows again
    back = store.load_verdicts(run_id)
    assert [v.sample_id for v in back] == ["s3", "s4"]
    assert back[0].criteria == {"clarity": 3.0}
    assert back[1].missing and back[1].raw == "no idea"
    assert store.scored_ids(run_id) == {"s3", "s4"}


def test_run_update_bumps_version_and_decodes_json(store, tiny_dataset):
    run_id = _run(store, tiny_dataset)
    before = store.get_run(run_id)
    store.update_run(run_id, status="running", ledger={"calls": 3})
    after = store.get_run(run_id)
    assert after["version"] == before["version"] + 1
    assert after["ledger"] == {"calls": 3} and after["split"]["test_ids"] == ["s3", "s4", "s5"]


def test_criterion_versions_conflicts_and_audit(store):
    v1 = store.save_criterion({"id": "c1", "owner": "run:1", "name": "clarity", "definition": "clear"})
    v2 = store.save_criterion({"id": "c1", "name": "clarity", "definition": "very clear"}, actor="ann",
                              expected_version=v1)
    assert v2 == 2
    with pytest.raises(EditConflict, match="changed by someone else"):
        store.save_criterion({"id": "c1", "name": "clarity", "definition": "stale edit"}, expected_version=v1)
    [row] = store.criteria("run:1")
    assert row["definition"] == "very clear" and row["history"][0]["definition"] == "clear"
    assert [a["action"] for a in store.audit_log(entity="criterion")] == ["update", "create"]


def test_call_cache_persists_across_connections(tmp_path):
    path = tmp_path / "c.db"
    CallCache(Store(path)).put("k", backend="b", model="m", request={"x": 1}, response={"texts": ["hi"]})
    again = CallCache(Store(path))
    assert again.get("k") == {"texts": ["hi"]} and again.get("other") is None and len(again) == 1


def test_events_in_order(store, tiny_dataset):
    run_id = _run(store, tiny_dataset)
    store.add_event(run_id, "a", {"n": 1})
    store.add_event(run_id, "b", {"n": 2})
    events = store.events(run_id)
    assert [e["kind"] for e in events] == ["a", "b"]
    assert store.events(run_id, after_id=events[0]["id"])[0]["payload"] == {"n": 2}


def test_a_person_labels_a_sample_and_the_edit_is_audited(store, tiny_dataset):
    """A label is the person's annotation; the imported score stays as it came."""
    from judge_engine.store import NotFound

    store.save_dataset(tiny_dataset)
    imported = tiny_dataset.by_id()["s1"].human["quality"]
    store.set_human_score("tiny", "s1", "quality", 5, actor="ana")
    assert store.load_dataset("tiny").by_id()["s1"].human["quality"] == pytest.approx(imported)
    [label] = store.annotations("tiny")
    assert (label.sample, label.annotator, label.value) == ("s1", "ana", 5.0)
    entry = store.audit_log(entity="annotation")[0]
    assert entry["entity_id"] == "tiny/s1/quality" and entry["actor"] == "ana"
    with pytest.raises(ValueError, match="outside"):
        store.set_human_score("tiny", "s1", "quality", 9)
    with pytest.raises(NotFound):
        store.set_human_score("tiny", "nope", "quality", 3)
    assert len(store.annotations("tiny")) == 1, "a refused label changes nothing"


def test_a_stale_aspect_definition_edit_is_refused_and_the_saved_one_kept(store, tiny_dataset):
    """Two people opened the same definition; the second save, made from the old text, is refused, not lost."""
    store.save_dataset(tiny_dataset)
    opened = store.load_dataset("tiny").aspect("quality").definition
    store.update_aspect_definition("tiny", "quality", "A's definition.", actor="a", expected_definition=opened)
    version = store.list_datasets()[0]["version"]
    store.set_human_score("tiny", "s1", "quality", 2)  # other changes to the dataset do not conflict
    with pytest.raises(EditConflict, match="changed by someone else") as err:
        store.update_aspect_definition("tiny", "quality", "B's definition.", actor="b", expected_definition=opened)
    assert "A's definition." in str(err.value)
    assert store.load_dataset("tiny").aspect("quality").definition == "A's definition."
    assert store.list_datasets()[0]["version"] == version  # a label is an annotation: the dataset is unchanged
    assert [e["actor"] for e in store.audit_log(entity="aspect")] == ["a"]
    # B, now shown A's text, saves over it knowingly
    store.update_aspect_definition("tiny", "quality", "B's definition.", actor="b",
                                   expected_definition="A's definition.")
    assert store.load_dataset("tiny").aspect("quality").definition == "B's definition."
    with pytest.raises(NotFound, match="no aspect"):
        store.update_aspect_definition("tiny", "nope", "x")
    with pytest.raises(NotFound, match="no dataset"):
        store.update_aspect_definition("absent", "quality", "x")


def test_cache_answers_many_keys_in_bulk(tmp_path):
    cache = CallCache(Store(tmp_path / "bulk.db"))
    for i in range(1203):
        cache.put(f"k{i}", backend="b", model="m", request={"i": i}, response={"texts": [str(i)]})
    keys = [f"k{i}" for i in range(0, 1203, 2)] + ["missing", "k0"]
    found = cache.get_many(keys)
    assert set(found) == {f"k{i}" for i in range(0, 1203, 2)} and found["k1202"] == {"texts": ["1202"]}
    assert cache.get_many([]) == {}


OPEN_AT = """
import sys, time
from judge_engine.store import Store
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
try:
    Store(sys.argv[1])
    print("ok")
except Exception as e:
    print(type(e).__name__, e)
"""


def test_processes_that_create_one_new_database_at_once_all_open_it(tmp_path):
    """Ray's workers on one host open the same new file together; each read the migrations as pending and raced to
    apply them ("database is locked" in 10 of 10 tries with four processes before the write lock was taken first).
    Separate interpreters, started together at one wall-clock moment (a spawned pool would re-run whatever script
    an earlier AppTest left as ``__main__``)."""
    import subprocess
    import sys
    import time

    for attempt in range(3):
        path = str(tmp_path / f"new-{attempt}.db")
        at = time.time() + 8.0  # time for four interpreters to import the store first
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, path, str(at)], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for _ in range(4)]
        results = [proc.communicate(timeout=120)[0].strip() for proc in procs]
        assert results == ["ok"] * 4, results
        assert Store(path).runs() == []

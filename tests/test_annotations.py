"""Labels as records: imported scores never change, aggregates, migration of old databases, agreement."""

import json
import math
import re
import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from judge_engine import annotations, data
from judge_engine.annotations import HumanAggregate, parse_aggregate
from judge_engine.records import Annotation, Split
from judge_engine.runs import RunSpec, create_run, human_dataset
from judge_engine.store import ReadOnly, Store


def _digest(store, name):
    return annotations.imported_digest(store.load_dataset(name), store.annotations(name, source="imported"))


def test_a_persons_label_is_kept_apart_and_never_overwrites_the_imported_score(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    before = _digest(store, "tiny")
    imported = store.load_dataset("tiny").by_id()["s1"].human["quality"]
    store.set_human_score("tiny", "s1", "quality", 5.0, actor="ana")  # the old entry point
    store.add_annotation("tiny", "s1", "quality", 2.0, annotator="ben", note="too long")
    assert store.load_dataset("tiny").by_id()["s1"].human["quality"] == pytest.approx(imported)
    assert _digest(store, "tiny") == before
    labels = store.annotations("tiny", sample="s1")
    assert [(a.annotator, a.value, a.note, a.source) for a in labels] == [
        ("ana", 5.0, "", "person"), ("ben", 2.0, "too long", "person")]
    assert [e["actor"] for e in store.audit_log(entity="annotation")] == ["ben", "ana"]


def test_a_label_outside_the_scale_or_without_a_name_is_refused(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    with pytest.raises(ValueError, match="outside the quality scale 1-5"):
        store.add_annotation("tiny", "s1", "quality", 9, annotator="ana")
    with pytest.raises(ValueError, match="annotator's name"):
        store.add_annotation("tiny", "s1", "quality", 3, annotator="  ")
    with pytest.raises(ValueError, match="imported annotator"):
        store.add_annotation("tiny", "s1", "quality", 3, annotator="tiny#rater1")
    assert store.annotations("tiny") == []


def test_per_annotator_lists_are_stored_as_the_imported_raters_labels(store, tiny_dataset):
    samples = tuple(replace(s, annotators={"quality": [1.0, 2.0, 4.0]}) for s in tiny_dataset.samples)
    store.save_dataset(replace(tiny_dataset, samples=samples))
    labels = store.annotations("tiny", source="imported")
    assert len(labels) == 36
    assert sorted({a.annotator for a in labels}) == ["tiny#rater1", "tiny#rater2", "tiny#rater3"]
    assert {a.value for a in labels if a.annotator == "tiny#rater3"} == {4.0}


def test_writingprompt_a_raters_are_imported_as_annotators(store, shared_data):
    dataset = data.load_benchmark("writingprompt_a", shared_data)
    store.save_dataset(dataset)
    labels = store.annotations("writingprompt_a", aspect="cohesive", source="imported")
    first = dataset.samples[0]
    mine = sorted(a.value for a in labels if a.sample == first.id)
    assert mine == sorted(first.annotators["cohesive"])
    agreement = annotations.dataset_agreement(dataset, labels, "cohesive", n_bootstrap=50)
    assert len(agreement.annotators) == len(first.annotators["cohesive"])
    assert -1.0 <= agreement.alpha <= 1.0
    lo, hi = agreement.alpha_ci
    assert lo <= agreement.alpha <= hi or math.isclose(lo, agreement.alpha, abs_tol=0.05)


def test_aggregates(tiny_dataset):
    labels = [Annotation("tiny", "s0", "quality", "ana", 2.0, 1.0), Annotation("tiny", "s0", "quality", "ben", 4.0, 2.0),
              Annotation("tiny", "s0", "quality", "ana", 3.0, 3.0),  # ana changes her mind: her latest counts
              Annotation("tiny", "s1", "quality", "ben", 5.0, 4.0)]
    assert parse_aggregate("annotator:ana") == HumanAggregate("annotator", "ana")
    with pytest.raises(ValueError, match="not a human aggregate"):
        parse_aggregate("median")
    mean = annotations.apply_aggregate(tiny_dataset, labels, "mean").by_id()
    assert mean["s0"].human["quality"] == pytest.approx(3.5)
    assert mean["s1"].human["quality"] == pytest.approx(5.0)
    assert "quality" not in mean["s2"].human  # nobody labelled it
    assert annotations.apply_aggregate(tiny_dataset, labels, "experts", ["ben"]).by_id()["s0"].human["quality"] == \
        pytest.approx(4.0)
    assert annotations.apply_aggregate(tiny_dataset, labels, "annotator:ana").by_id()["s0"].human["quality"] == \
        pytest.approx(3.0)
    assert annotations.apply_aggregate(tiny_dataset, labels, "imported") is tiny_dataset
    assert list(annotations.labelled_counts(labels).items()) == [("ben", 2), ("ana", 1)]


def test_agreement_of_annotators_who_agree_and_who_do_not():
    rng = np.random.default_rng(1)
    truth = rng.integers(1, 6, size=40).astype(float)
    ids = [f"i{k}" for k in range(40)]
    close = [Annotation("d", i, "q", name, float(np.clip(t + rng.normal(0, 0.3), 1, 5)), 0.0)
             for name in ("a", "b", "c") for i, t in zip(ids, truth)]
    noise = [Annotation("d", i, "q", name, float(rng.integers(1, 6)), 0.0)
             for name in ("a", "b", "c") for i in ids]
    good = annotations.agreement(close, "q", ids, n_bootstrap=100)
    bad = annotations.agreement(noise, "q", ids, n_bootstrap=100)
    assert good.alpha > 0.8 and abs(bad.alpha) < 0.3
    assert good.ceiling["pearson"] > 0.85 and abs(bad.ceiling["pearson"]) < 0.4
    lo, hi = good.ceiling_ci["spearman"]
    assert lo < good.ceiling["spearman"] < hi and hi - lo < 0.3
    assert good.n_items == 40 and good.annotators == ("a", "b", "c")


def test_one_annotator_has_no_agreement():
    labels = [Annotation("d", f"i{k}", "q", "a", float(k % 5 + 1), 0.0) for k in range(10)]
    result = annotations.agreement(labels, "q", [f"i{k}" for k in range(10)], n_bootstrap=20)
    assert math.isnan(result.alpha) and math.isnan(result.ceiling["spearman"]) and result.n_items == 0


def test_a_run_records_the_aggregate_and_uses_it(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    first = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=4),
                       actor="ana")
    assert store.get_run(first)["human_aggregate"] == "imported" and store.get_run(first)["actor"] == "ana"
    for k, sid in enumerate(["s0", "s1", "s2", "s3", "s4", "s5"]):
        store.add_annotation("tiny", sid, "quality", 1 + k % 5, annotator="ana")
    store.set_human_aggregate("tiny", "annotator:ana", actor="ana")
    second = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=4))
    run = store.get_run(second)
    assert run["human_aggregate"] == "annotator:ana"
    assert set(run["split"]["test_ids"]) <= {"s0", "s1", "s2", "s3", "s4", "s5"}  # only items she labelled
    used = human_dataset(store, "tiny", run["human_aggregate"]).by_id()
    assert used["s1"].human["quality"] == pytest.approx(2.0)
    # the first run keeps the imported score it was created with
    assert human_dataset(store, "tiny", store.get_run(first)["human_aggregate"]).by_id()["s1"].human["quality"] == \
        pytest.approx(tiny_dataset.by_id()["s1"].human["quality"])
    assert store.audit_log(entity="human_aggregate")[0]["actor"] == "ana"


def test_a_read_only_store_refuses_every_write(tmp_path, tiny_dataset):
    path = tmp_path / "w.db"
    Store(path).save_dataset(tiny_dataset)
    viewer = Store(path, read_only="vic@example.org")
    with pytest.raises(ReadOnly, match="vic@example.org may view"):
        viewer.add_annotation("tiny", "s1", "quality", 3, annotator="vic")
    with pytest.raises(ReadOnly):
        viewer.update_aspect_definition("tiny", "quality", "changed", actor="vic")
    with pytest.raises(ReadOnly):
        viewer.create_run(method="direct", params={}, dataset="tiny", aspect="quality",
                          split=Split("tiny", 0, (), ("s1",)), llm={})
    assert viewer.load_dataset("tiny") == tiny_dataset and viewer.annotations("tiny") == []


def _old_database(path, tiny_dataset):
    """A database as the workbench wrote it before labels were records: migrations 1-2 only, and a label
    written over the imported score by the old set_human_score."""
    from sqlite_utils import Database

    from judge_engine import store_schema as store_module  # the migrations, in order

    db = Database(sqlite3.connect(str(path)))
    store_module.m001_initial(db)
    store_module.m002_dataset_version(db)
    db["_sqlite_migrations"].insert_all(
        [{"migration_set": "judge_engine", "name": n, "applied_at": "2026-01-01"}
         for n in ("m001_initial", "m002_dataset_version")])
    db["datasets"].insert({"name": "tiny", "task": "t", "source": "", "natural_level": "sample", "input_label": "I",
                           "output_label": "O", "context_label": "C", "n_samples": 2, "created": 1.0, "version": 1,
                           "aspects": json.dumps([{"name": "quality", "low": 1, "high": 5, "definition": ""}])})
    for i, (human, raters) in enumerate([({"quality": 5.0}, {"quality": [2.0, 3.0, 4.0]}), ({"quality": 2.0}, {})]):
        db["samples"].insert({"dataset": "tiny", "id": f"s{i}", "input": "", "output": "", "group_id": "g",
                              "system_id": "", "context": None, "reference": None, "human": json.dumps(human),
                              "annotators": json.dumps(raters), "metadata": "{}", "position": i})
    # s0's imported mean was 3.0; "ana" overwrote it with 4.0, then "ben" with 5.0
    db["audit"].insert_all([
        {"ts": 10.0, "actor": "ana", "entity": "human_score", "entity_id": "tiny/s0/quality", "action": "label",
         "before": "3.0", "after": "4.0"},
        {"ts": 20.0, "actor": "ben", "entity": "human_score", "entity_id": "tiny/s0/quality", "action": "label",
         "before": "4.0", "after": "5.0"}])
    db.conn.commit()
    db.conn.close()


def test_migrating_an_old_database_loses_no_value(tmp_path, tiny_dataset):
    path = tmp_path / "old.db"
    _old_database(path, tiny_dataset)
    store = Store(path)
    dataset = store.load_dataset("tiny")
    assert dataset.by_id()["s0"].human["quality"] == pytest.approx(3.0)  # the imported mean is back
    assert dataset.by_id()["s1"].human["quality"] == pytest.approx(2.0)
    assert dataset.by_id()["s0"].annotators == {"quality": [2.0, 3.0, 4.0]}
    people = [(a.annotator, a.value, a.time) for a in store.annotations("tiny", source="person")]
    assert people == [("ana", 4.0, 10.0), ("ben", 5.0, 20.0)]
    raters = sorted(a.value for a in store.annotations("tiny", source="imported"))
    assert raters == [2.0, 3.0, 4.0]
    assert store.human_aggregate("tiny") == "imported"
    assert len(store.audit_log(entity="human_score")) == 2  # the history stays
    Store(path)  # opening again applies nothing twice
    assert len(store.annotations("tiny")) == 5


def test_the_queue_puts_suggestions_then_others_items_first_and_leaves_out_mine(tiny_dataset):
    labels = [Annotation("tiny", "s7", "quality", "ben", 3.0, 1.0), Annotation("tiny", "s2", "quality", "ana", 4.0, 2.0)]
    queue = annotations.annotation_queue(tiny_dataset, "quality", labels, "ana", suggested=["s9", "s2", "s4"],
                                         skipped=["s0"])
    assert queue[:3] == ["s9", "s4", "s7"]  # suggestions (minus hers), then what ben labelled
    assert "s2" not in queue and "s0" not in queue and len(queue) == 10
    assert queue[3:] == ["s1", "s3", "s5", "s6", "s8", "s10", "s11"]


def test_group_resamples_of_the_ceiling_match_recomputing_it_on_the_resampled_items():
    rng = np.random.default_rng(3)
    groups = [f"g{k // 4}" for k in range(32)]
    truth = rng.normal(3, 1, size=32)
    matrix = np.vstack([truth + rng.normal(0, 0.7, size=32) for _ in range(3)])
    matrix[0, 5] = np.nan  # an item one annotator skipped
    from judge_engine import metrics

    codes, _ = metrics._codes(groups, 32, "groups")
    weights = metrics._resample_weights(rng, 8, 5).astype(float)
    fast = annotations._group_ceilings(matrix, codes, 8, weights)
    order = np.argsort(codes, kind="stable")
    for row, got in zip(weights.astype(int), fast):
        idx = np.repeat(order, row[codes[order]])
        # a group drawn twice must count twice: label the copies apart, as resampling whole groups does
        copies = np.concatenate([np.arange(n) for n in row[codes[order]]])
        again = annotations.leave_one_out(matrix[:, idx], level="group",
                                          groups=[f"{groups[i]}#{c}" for i, c in zip(idx, copies)])
        assert got == pytest.approx([again[s] for s in metrics.COEFFICIENTS], nan_ok=True)


def test_execute_run_meta_evaluates_against_the_recorded_aggregate(store, tiny_dataset):
    from judge_engine import metrics
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.llm.fake import FakeBackend
    from judge_engine.runs import execute_run

    store.save_dataset(tiny_dataset)
    mine = {f"s{k}": float(1 + (k * 3) % 5) for k in range(8)}
    for sid, value in mine.items():
        store.add_annotation("tiny", sid, "quality", value, annotator="ana")
    store.set_human_aggregate("tiny", "annotator:ana", actor="ana")
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=8))
    store.set_human_aggregate("tiny", "imported", actor="ana")  # a later change does not touch the recorded run
    def answer(messages, params):  # a judge whose score follows the item number
        n = int(re.search(r"output number (\d+)", messages[-1]["content"]).group(1))
        return f'{{"score": {1 + (n * 2) % 5}}}'

    summary = execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store,
                                                      backend=FakeBackend(answer, model_id="f")))
    verdicts = {v.sample_id: v.score for v in store.load_verdicts(run_id)}
    assert set(verdicts) == set(mine)
    ids = sorted(verdicts)
    expected = metrics.meta_evaluate([mine[i] for i in ids], [verdicts[i] for i in ids], level="sample",
                                     n_bootstrap=10).to_dict()
    assert summary.levels["sample"]["spearman"] == pytest.approx(expected["spearman"], nan_ok=True)
    imported = metrics.meta_evaluate([tiny_dataset.by_id()[i].human["quality"] for i in ids],
                                     [verdicts[i] for i in ids], level="sample", n_bootstrap=10).to_dict()
    assert summary.levels["sample"]["spearman"] != pytest.approx(imported["spearman"], nan_ok=True)

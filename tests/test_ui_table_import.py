"""pages/ui/table_import.py: the import the Datasets page runs, with the columns chosen as one record."""

from __future__ import annotations

import pytest

from judge_engine.store import Store
from pages.ui.table_import import ImportColumns, import_table

TABLE = ("uid,article,summary,fluency,coherence,doc,model,fact,gold\n"
         "a1,first article,a summary,3,4,d1,m1,a fact,the gold one\n"
         "a2,first article,another summary,5,2,d1,m2,,\n"
         "a3,second article,a third,1,5,d2,m1,another fact,gold two\n")


def test_every_chosen_column_reaches_the_dataset_in_its_role(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(TABLE, encoding="utf-8")
    store = Store(tmp_path / "w.db")
    columns = ImportColumns(input="article", output="summary", scores=("fluency", "coherence"), group="doc",
                            system="model", id="uid", context="fact", reference="gold")
    dataset, _ = import_table(store, path, name="mine", columns=columns, task="summarization")
    assert dataset.aspect_names == ["fluency", "coherence"]
    first = dataset.by_id()["a1"]
    assert (first.input, first.output, first.group_id, first.system_id) == ("first article", "a summary", "d1", "m1")
    assert (first.context, first.reference) == ("a fact", "the gold one")
    assert first.human == {"fluency": pytest.approx(3.0), "coherence": pytest.approx(4.0)}
    assert store.load_dataset("mine") == dataset


def test_optional_roles_left_out_are_not_read(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(TABLE, encoding="utf-8")
    dataset, _ = import_table(Store(tmp_path / "w.db"), path, name="mine",
                              columns=ImportColumns(input="article", output="summary", scores=("fluency",)))
    assert {s.id for s in dataset.samples}.isdisjoint({"a1", "a2", "a3"}), "without an id column the row is the id"
    assert len({s.group_id for s in dataset.samples}) == 3, "without a group column every row is its own group"
    assert all(s.context is None and s.reference is None for s in dataset.samples)

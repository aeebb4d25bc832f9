"""Curation: one owner scheme, seeded once, saved against the version seen, undone, history filtered in SQL."""

import sqlite3

import pytest

from judge_engine import curation
from judge_engine.store import EditConflict, NotFound, Store


def test_owner_scheme_is_the_same_for_every_method():
    assert [curation.owner(m, 7) for m in ("hypoeval", "hpss", "active_critic", "hd_eval")] == [
        "hypoeval:run:7", "hpss:run:7", "active_critic:run:7", "hd_eval:run:7"]


def test_seed_once_then_save_undo_and_conflict(store):
    owner = curation.owner("hypoeval", 1)
    assert curation.seed(store, owner, [{"key": "a", "name": "a", "definition": "Fluency", "status": "accepted"},
                                        {"key": "b", "name": "b", "definition": "Clarity", "status": "rejected"}])
    assert not curation.seed(store, owner, [{"key": "c", "name": "c"}]), "a second seed must not add or replace"
    items = curation.items(store, owner)
    assert [(i.key, i.version, i.edited) for i in items] == [("a", 1, False), ("b", 1, False)]

    v = curation.save(store, owner, "a", expected_version=1, actor="ann", definition="Fluency, 1-5")
    assert v == 2 and curation.get(store, owner, "a").definition == "Fluency, 1-5"
    with pytest.raises(EditConflict):  # bob still sees version 1
        curation.save(store, owner, "a", expected_version=1, actor="bob", status="rejected")
    assert curation.get(store, owner, "a").status == "accepted", "a refused save changes nothing"

    assert curation.undo(store, owner, "a", expected_version=2, actor="ann") == 3
    now = curation.get(store, owner, "a")
    assert (now.definition, now.version, len(now.history)) == ("Fluency", 3, 2), "undo is a new version"
    with pytest.raises(ValueError, match="no earlier version"):
        curation.undo(store, owner, "b", expected_version=1, actor="ann")
    with pytest.raises(NotFound, match="'zzz'"):
        curation.save(store, owner, "zzz", expected_version=1, actor="ann", name="x")


def test_a_blank_name_is_refused_and_nothing_is_written(store):
    owner = curation.owner("active_critic", 3)
    curation.seed(store, owner, [{"key": "c1", "name": "Fluency", "definition": "Reads naturally."}])
    with pytest.raises(ValueError, match="a name cannot be empty; 'Fluency' keeps its name"):
        curation.save(store, owner, "c1", expected_version=1, actor="ann", name="  ", definition="")
    with pytest.raises(ValueError, match="needs a name"):
        curation.add(store, owner, "c2", name=" ", actor="ann")
    item = curation.get(store, owner, "c1")
    assert (item.name, item.definition, item.version) == ("Fluency", "Reads naturally.", 1)
    assert [i.key for i in curation.items(store, owner)] == ["c1"]
    assert curation.save(store, owner, "c1", expected_version=1, actor="ann", definition="") == 2, \
        "a blank definition is a person's choice (the name stands for it)"


def test_add_refuses_an_existing_key_and_keeps_parents(store):
    owner = curation.owner("hd_eval", 2)
    curation.seed(store, owner, [{"key": "fluency", "name": "fluency"}])
    curation.add(store, owner, "fluency/grammar", name="grammar", parent="fluency", actor="ann")
    with pytest.raises(EditConflict):
        curation.add(store, owner, "fluency/grammar", name="again", actor="bob")
    child = curation.get(store, owner, "fluency/grammar")
    assert (child.parent, child.position, child.version) == ("fluency", 1, 1)


def test_history_is_filtered_by_owner_before_the_limit(store):
    """An owner's few changes are found even when other owners made many more since (the old pages filtered
    the newest 200 or 500 audit rows after the query, so older edits of a run vanished)."""
    mine, busy = curation.owner("hypoeval", 1), curation.owner("hypoeval", 10)
    curation.seed(store, mine, [{"key": "a", "name": "a"}])
    curation.save(store, mine, "a", expected_version=1, actor="ann", definition="x")
    curation.seed(store, busy, [{"key": f"k{i}", "name": f"k{i}"} for i in range(30)])
    history = curation.history(store, mine, limit=5)
    assert [(c.key, c.actor, c.action) for c in history] == [("a", "ann", "update"), ("a", "engine", "create")]
    # hd_eval's '_' must not match as a wildcard: another owner's prefix that differs there is not ours
    curation.seed(store, "hdxeval:run:1", [{"key": "n", "name": "n"}])
    assert curation.history(store, "hd_eval:run:1") == []


def test_migration_moves_hpss_items_to_the_common_owner(tmp_path):
    path = tmp_path / "old.db"
    Store(path).close()
    con = sqlite3.connect(path)  # rows as the HPSS page wrote them before the owner scheme was one
    con.execute("insert into criteria (id, owner, parent_id, name, definition, status, position, version, history,"
                " updated) values ('hpss-run-3:strategy', 'hpss-run-3', null, 'strategy', 's', 'accepted', 0, 2,"
                " '[]', 0)")
    con.execute("insert into audit (ts, actor, entity, entity_id, action, before, after) values "
                "(0, 'ann', 'criterion', 'hpss-run-3:strategy', 'update', 'null', 'null')")
    con.execute("delete from _sqlite_migrations where name = 'm004_one_curation_owner'")
    con.commit()
    con.close()
    store = Store(path)
    owner = curation.owner("hpss", 3)
    assert [(i.key, i.version) for i in curation.items(store, owner)] == [("strategy", 2)]
    assert [c.actor for c in curation.history(store, owner)] == ["ann"]

"""Curation: the items a person reviews after a run, versioned and audited.

Every method's page curates something its run learned: HypoEval's hypotheses,
Active-Critic's task description and criteria, HD-Eval's tree nodes, HPSS's
strategy and human criteria. Each of those is one row of the store's
``criteria`` table under the run's owner ``<method>:run:<id>``. This module
is the one way to put a run's items there (once), read them, change one
against the version its editor saw, undo a change, and read an owner's
history. Nothing is overwritten: every save keeps the previous state in the
row's history and in the audit log, with who made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .store import EditConflict, NotFound, Store

__all__ = ["CuratedItem", "EditConflict", "accept_flags", "add", "flag_acceptances", "history", "item_id", "items",
           "owner", "save", "seed", "undo"]

ENGINE = "engine"
"""Actor of the rows a finished run puts up for review."""


def owner(method: str, run_id: int) -> str:
    """The owner of a run's curated items: ``<method>:run:<id>``."""
    return f"{method}:run:{int(run_id)}"


def item_id(owner_id: str, key: str) -> str:
    """The store id of item ``key`` of ``owner_id``."""
    return f"{owner_id}:{key}"


@dataclass(frozen=True)
class CuratedItem:
    """One reviewed item as it stands now."""

    owner: str
    key: str
    """Its id within the owner (a hypothesis key, ``task``, a node id, ...)."""
    name: str
    definition: str
    status: str
    """What the method makes of it: accepted/rejected, or a method's own JSON (HD-Eval's node flags)."""
    position: int
    version: int
    """1 for the run's own version; every save adds one."""
    parent: str | None = None
    """Key of the parent item (HD-Eval's tree), None at the top."""
    updated: float = 0.0
    history: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    """Earlier states (name, definition, status, version, updated), oldest first."""

    @property
    def id(self) -> str:
        return item_id(self.owner, self.key)

    @property
    def edited(self) -> bool:
        """Changed since the run put it up (by anyone but the engine's seeding)."""
        return self.version > 1


def _key(owner_id: str, row_id: str | None) -> str | None:
    prefix = owner_id + ":"
    if row_id is None:
        return None
    return row_id[len(prefix):] if row_id.startswith(prefix) else row_id


def _item(owner_id: str, row: dict[str, Any]) -> CuratedItem:
    return CuratedItem(owner=owner_id, key=_key(owner_id, row["id"]) or "", name=row["name"],
                       definition=row["definition"] or "", status=row["status"] or "",
                       position=int(row["position"] or 0), version=int(row["version"]),
                       parent=_key(owner_id, row.get("parent_id")), updated=float(row["updated"] or 0.0),
                       history=tuple(row["history"]))


def items(store: Store, owner_id: str) -> list[CuratedItem]:
    """The owner's items in their order (position, then id)."""
    return [_item(owner_id, row) for row in store.criteria(owner_id)]


def get(store: Store, owner_id: str, key: str) -> CuratedItem:
    """One item; :class:`~judge_engine.store.NotFound` naming it when the owner has no such item."""
    for item in items(store, owner_id):
        if item.key == key:
            return item
    raise NotFound(f"{owner_id} has no item {key!r}")


def seed(store: Store, owner_id: str, proposed: Sequence[dict[str, Any]]) -> bool:
    """Put a finished run's items up for review, once; False when the owner already has items.

    Each entry of ``proposed`` has ``key``, ``name`` and optionally
    ``definition``, ``status`` and ``parent`` (a key). They become version 1,
    saved by the engine, in the given order.
    """
    if store.criteria(owner_id):
        return False
    for position, entry in enumerate(proposed):
        parent = entry.get("parent")
        store.save_criterion({"id": item_id(owner_id, entry["key"]), "owner": owner_id,
                              "parent_id": item_id(owner_id, parent) if parent else None,
                              "name": entry["name"], "definition": entry.get("definition", ""),
                              "status": entry.get("status", "proposed"), "position": position},
                             actor=ENGINE, expected_version=0)
    return True


_UNCHANGED: Any = object()

MAX_TEXT_CHARS = 20_000
"""Longest name or definition a person may save: a rubric entry is a few sentences; a longer paste is a file
pasted by mistake, and it would go into every scoring prompt."""
CONTROL = {chr(c) for c in range(32)} - {"\n", "\r", "\t"}


def text_problem(text: str, what: str) -> str | None:
    """Why ``text`` cannot be saved as a rubric entry's ``what`` (binary, too long), or None."""
    if "\x00" in text or sum(ch in CONTROL for ch in text) > max(2, len(text) // 100):
        return f"the {what} looks like binary data, not text; nothing was saved"
    if len(text) > MAX_TEXT_CHARS:
        return (f"the {what} is {len(text):,} characters long (at most {MAX_TEXT_CHARS:,}); a rubric entry is a "
                "few sentences; nothing was saved")
    return None


def _check_texts(name: str | None, definition: str | None) -> None:
    for text, what in ((name, "name"), (definition, "definition")):
        problem = text_problem(text, what) if text is not None else None
        if problem:
            raise ValueError(problem)


def save(store: Store, owner_id: str, key: str, *, expected_version: int, actor: str,
         name: str | None = None, definition: str | None = None, status: str | None = None,
         parent: Any = _UNCHANGED) -> int:
    """Change one item as a person saw it at ``expected_version``; returns the new version.

    Fields left None keep their value. Raises
    :class:`~judge_engine.store.EditConflict` when someone saved the item
    since that version (nothing is written), NotFound for an unknown key,
    and ValueError for a blank name, a binary or an over-long text (nothing is written).
    """
    current = get(store, owner_id, key)
    if name is not None and not name.strip():
        raise ValueError(f"a name cannot be empty; {current.name!r} keeps its name")
    _check_texts(name, definition)
    row: dict[str, Any] = {"id": current.id, "name": current.name if name is None else name,
                           "definition": current.definition if definition is None else definition,
                           "status": current.status if status is None else status}
    if parent is not _UNCHANGED:
        row["parent_id"] = item_id(owner_id, parent) if parent else None
    return store.save_criterion(row, actor=actor, expected_version=expected_version)


def add(store: Store, owner_id: str, key: str, *, name: str, definition: str = "", status: str = "accepted",
        parent: str | None = None, actor: str) -> int:
    """A person adds an item (version 1, after the existing ones); EditConflict if ``key`` exists, ValueError
    for a blank name, a binary or an over-long text."""
    if not name.strip():
        raise ValueError("a new item needs a name")
    _check_texts(name, definition)
    position = len(store.criteria(owner_id))
    return store.save_criterion({"id": item_id(owner_id, key), "owner": owner_id,
                                 "parent_id": item_id(owner_id, parent) if parent else None, "name": name,
                                 "definition": definition, "status": status, "position": position},
                                actor=actor, expected_version=0)


def undo(store: Store, owner_id: str, key: str, *, expected_version: int, actor: str) -> int:
    """Restore the item's previous state as a new version (the undo is audited like any save).

    ValueError when the item has no earlier state.
    """
    current = get(store, owner_id, key)
    if not current.history:
        raise ValueError(f"{current.name!r} has no earlier version to go back to")
    prev = current.history[-1]
    row = {"id": current.id, "name": prev["name"], "definition": prev["definition"], "status": prev["status"]}
    if "parent_id" in prev:  # states saved before parents were kept in the history keep today's parent
        row["parent_id"] = prev["parent_id"]
    return store.save_criterion(row, actor=actor, expected_version=expected_version)


@dataclass(frozen=True)
class Change:
    """One entry of an owner's history: who changed which item, when, from what to what."""

    when: float
    actor: str
    key: str
    action: str
    before: str
    after: str


def history(store: Store, owner_id: str, *, limit: int = 500) -> list[Change]:
    """The newest ``limit`` changes of the owner's items, newest first (filtered in the query)."""
    return [Change(when=a["ts"], actor=a["actor"], key=_key(owner_id, a["entity_id"]) or "", action=a["action"],
                   before=a["before"], after=a["after"])
            for a in store.audit_log(entity="criterion", owner=owner_id, limit=limit)]


ACCEPT_FLAGS = "accept flagged"
"""Audit action of a person accepting an entry the rubric checks flagged (:mod:`judge_engine.judge_flags`)."""


def accept_flags(store: Store, owner_id: str, key: str, *, text: str, flags: Sequence[dict[str, Any]],
                 actor: str) -> None:
    """Record that ``actor`` accepts entry ``key`` of ``owner_id`` with its flags, as it reads (``text``).

    An audit entry of the owner (who, when, the flags, the text): the entry itself is not changed, so its
    version and a concurrent editor's save are unaffected, and the run's judge stays the one it fitted.
    """
    if not actor.strip():
        raise ValueError("an acceptance needs the name of the person accepting; nothing was recorded")
    store.log_edit(actor, "criterion", item_id(owner_id, key), ACCEPT_FLAGS, {"flags": list(flags)}, text)


def flag_acceptances(store: Store, owner_id: str, texts: dict[str, str]) -> dict[str, Change]:
    """The latest acceptance of each flagged entry in ``texts`` (key -> the text it reads now), by key.

    An acceptance counts only for the text that was accepted: an entry whose text changed since is absent.
    """
    import json

    found: dict[str, Change] = {}
    for change in history(store, owner_id, limit=10_000):  # newest first: the first one seen is the latest
        if change.action == ACCEPT_FLAGS and change.key in texts and change.key not in found:
            try:
                accepted_text = json.loads(change.after)
            except (TypeError, ValueError):
                continue
            if accepted_text == texts[change.key]:
                found[change.key] = change
    return found

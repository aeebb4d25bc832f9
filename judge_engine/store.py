"""SQLite storage through sqlite-utils: the only module that speaks SQL.

One file (``data/workbench.db`` by default, or ``$JUDGE_WORKBENCH_DB``) holds
datasets and samples, splits, runs with their per-sample and per-criterion
scores, criteria with their history, an audit log of human edits, run events,
and the persistent LLM call cache. WAL is on so the app can read while a run
writes; multi-row writes are grouped in ``db.atomic()`` so a crash never
leaves half a write behind; score writes are idempotent upserts keyed by
(run, sample, aspect, criterion), so a resumed run continues instead of
duplicating.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .sqlite_lib import Database

from .llm.client import LedgerTotals
from .paths import DEFAULT_DB_PATH, REPO_ROOT, default_db_path  # noqa: F401 (read as store.default_db_path)
from .records import Annotation, Aspect, Dataset, RunEvent, RunRecord, RunSummary, Sample, Split, Verdict
from .store_schema import (IMPORTED, PERSON, _dumps, _imported_rows, imported_annotator,  # noqa: F401 (store.X)
                           migrations)

RUN_STATUSES = ("queued", "running", "finished", "failed", "interrupted")
TERMINAL_STATUSES = ("finished", "failed")
LIVE_STATUSES = ("queued", "running")
"""A run that is waiting or working: the pages poll it."""
STOPPED_STATUSES = ("failed", "interrupted")
"""A run that ended without finishing: an error, or its worker gone (it can be resumed from its cache)."""


class NotFound(KeyError):
    """A dataset, run or criterion that the store does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else "not found"


class EditConflict(RuntimeError):
    """Someone saved the same item since it was read; nothing was overwritten."""


class ReadOnly(ValueError):
    """A write through a store opened for someone who may only view."""


def _nan_to_none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


class Store:
    """Everything the engine persists, in one SQLite file.

    Connections are per thread (sqlite3 objects must stay on the thread that
    opened them); every public method may be called from any thread.

    Parameters
    ----------
    path : str or Path, optional
        Database file; default :func:`default_db_path`. Parent folders are created.
    read_only : str, optional
        Who may only view (a team deployment's viewer): every write is refused
        with :class:`ReadOnly` naming them, whichever page or function asks.
    """

    def __init__(self, path: str | Path | None = None, *, read_only: str | None = None):
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        db = self.db
        self._use_wal(db)
        self._migrate(db)

    @staticmethod
    def _use_wal(db: Database) -> None:
        """Switch the file to WAL, waiting for another process doing the same: sqlite answers a second switch
        on a new file with "database is locked" at once, without its busy timeout (two Ray actors, a full test
        run)."""
        deadline = time.monotonic() + 60
        while True:
            try:
                db.conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @staticmethod
    def _migrate(db: Database) -> None:
        """Bring the tables up to date, one process at a time.

        Processes that open a new file at once (Ray's workers on one host, the app and a run) would each read the
        migrations as pending and then race to apply them, which sqlite answers with "database is locked" or
        "table already exists". The write lock is taken first, so the others wait through the busy timeout and
        then find nothing left to do; a file already up to date takes no lock.
        """
        if db["_sqlite_migrations"].exists() and not migrations.pending(db):
            return
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            migrations.apply(db)
        except BaseException:
            db.conn.rollback()
            raise
        else:
            db.conn.commit()

    @property
    def db(self) -> Database:
        db = getattr(self._local, "db", None)
        if db is None:
            conn = sqlite3.connect(str(self.path), timeout=60)
            conn.execute("PRAGMA busy_timeout=60000")
            conn.execute("PRAGMA synchronous=NORMAL")
            db = self._local.db = Database(conn)
        return db

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, taken with BEGIN IMMEDIATE.

        Taking the write lock up front lets concurrent writers (LLM worker
        threads, the run process and the app) wait for each other through the
        busy timeout instead of failing with "database is locked" when a read
        transaction cannot be upgraded. Nested use becomes a savepoint.
        """
        if self.read_only:
            raise ReadOnly(f"{self.read_only} may view this workbench but not change it; nothing was saved")
        db = self.db
        if db.conn.in_transaction:
            with db.atomic():
                yield db
            return
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.conn.rollback()
            raise
        else:
            db.conn.commit()

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.conn.close()
            self._local.db = None

    # ------------------------------------------------------------------ datasets
    def save_dataset(self, dataset: Dataset, *, replace: bool = False) -> None:
        """Store a dataset and its samples in one transaction.

        An existing dataset of the same name is kept unless ``replace`` is true,
        so an import never silently overwrites earlier data.
        """
        db = self.db
        if self.has_dataset(dataset.name) and not replace:
            raise ValueError(f"a dataset named {dataset.name!r} already exists; choose another name or replace it")
        now = time.time()
        with self.write():
            db["samples"].delete_where("dataset = ?", [dataset.name])
            # imported labels are replaced with the data they came with; people's labels are kept
            db["annotations"].delete_where("dataset = ? and source = ?", [dataset.name, IMPORTED])
            db["datasets"].upsert({
                "name": dataset.name, "task": dataset.task, "source": dataset.source,
                "natural_level": dataset.natural_level, "input_label": dataset.input_label,
                "output_label": dataset.output_label, "context_label": dataset.context_label,
                "aspects": _dumps([a.to_dict() for a in dataset.aspects]),
                "n_samples": len(dataset.samples), "created": time.time()}, pk="name")
            db["samples"].insert_all(
                ({"dataset": dataset.name, "id": s.id, "input": s.input, "output": s.output,
                  "group_id": s.group_id, "system_id": s.system_id, "context": s.context,
                  "reference": s.reference, "human": _dumps(s.human), "annotators": _dumps(s.annotators),
                  "metadata": _dumps(s.metadata), "position": i} for i, s in enumerate(dataset.samples)),
                batch_size=2000)
            db["annotations"].insert_all(_imported_rows(dataset.name, dataset.samples, now), batch_size=2000)

    def has_dataset(self, name: str) -> bool:
        return bool(list(self.db.query("select 1 from datasets where name = ?", [name])))

    def list_datasets(self) -> list[dict[str, Any]]:
        rows = list(self.db.query("select * from datasets order by created"))
        for r in rows:
            r["aspects"] = json.loads(r["aspects"])
        return rows

    def load_dataset(self, name: str) -> Dataset:
        rows = list(self.db.query("select * from datasets where name = ?", [name]))
        if not rows:
            raise NotFound(f"no dataset named {name!r} in {self.path}")
        d = rows[0]
        samples = tuple(
            Sample(id=r["id"], input=r["input"], output=r["output"], group_id=r["group_id"],
                   system_id=r["system_id"] or "", context=r["context"], reference=r["reference"],
                   human=json.loads(r["human"]), annotators=json.loads(r["annotators"]),
                   metadata=json.loads(r["metadata"]))
            for r in self.db.query("select * from samples where dataset = ? order by position", [name]))
        return Dataset(name=d["name"], task=d["task"], source=d["source"], natural_level=d["natural_level"],
                       input_label=d["input_label"], output_label=d["output_label"],
                       context_label=d["context_label"] or "Context",
                       aspects=tuple(Aspect(**a) for a in json.loads(d["aspects"])), samples=samples)

    def update_aspect_definition(self, dataset: str, aspect: str, definition: str, *, actor: str = "user",
                                 expected_definition: str | None = None) -> None:
        """Replace an aspect's definition (the text prompts use), logged in the audit log.

        ``expected_definition`` is the text the editor started from: when the
        stored text differs (someone saved in between), nothing is written and
        :class:`EditConflict` quotes the stored text. Other changes to the dataset
        (labels, other aspects) do not conflict.
        """
        with self.write():
            rows = list(self.db.query("select * from datasets where name = ?", [dataset]))
            if not rows:
                raise NotFound(f"no dataset named {dataset!r} in {self.path}")
            row = rows[0]
            aspects = json.loads(row["aspects"])
            before = next((a["definition"] for a in aspects if a["name"] == aspect), None)
            if before is None:
                raise NotFound(f"dataset {dataset!r} has no aspect {aspect!r}")
            if expected_definition is not None and expected_definition != before:
                raise EditConflict(f"the definition of {aspect!r} in {dataset!r} was changed by someone else since "
                                   f"you opened it, so your edit was not saved; it now reads: {before}")
            for a in aspects:
                if a["name"] == aspect:
                    a["definition"] = definition
            self.db["datasets"].update(dataset, {"aspects": _dumps(aspects), "version": (row.get("version") or 0) + 1})
            self.log_edit(actor, "aspect", f"{dataset}/{aspect}", "edit", before, definition)

    def _aspect_spec(self, dataset: str, aspect: str) -> dict[str, Any]:
        rows = list(self.db.query("select aspects from datasets where name = ?", [dataset]))
        if not rows:
            raise NotFound(f"no dataset named {dataset!r} in {self.path}")
        spec = next((a for a in json.loads(rows[0]["aspects"]) if a["name"] == aspect), None)
        if spec is None:
            raise NotFound(f"dataset {dataset!r} has no aspect {aspect!r}")
        return spec

    def add_annotation(self, dataset: str, sample_id: str, aspect: str, value: float, *, annotator: str,
                       note: str = "") -> Annotation:
        """Record ``annotator``'s label of one sample as a new annotation, logged in the audit log.

        Nothing is overwritten: neither the imported score nor anyone's earlier
        label (a person who labels an item again adds a newer label; aggregates
        use each person's latest).
        """
        annotator = str(annotator or "").strip()
        if not annotator:
            raise ValueError("a label needs the annotator's name")
        if annotator.startswith(f"{dataset}#rater"):
            raise ValueError(f"{annotator!r} is the name of an imported annotator; choose another name")
        with self.write():
            spec = self._aspect_spec(dataset, aspect)
            if not list(self.db.query("select 1 from samples where dataset = ? and id = ?", [dataset, sample_id])):
                raise NotFound(f"no sample {sample_id!r} in dataset {dataset!r}")
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{value!r} is not a number") from None
            if not (math.isfinite(value) and spec["low"] <= value <= spec["high"]):
                raise ValueError(f"{value:g} is outside the {aspect} scale {spec['low']:g}-{spec['high']:g}")
            label = Annotation(dataset=dataset, sample=sample_id, aspect=aspect, annotator=annotator, value=value,
                               time=time.time(), note=str(note or ""), source=PERSON)
            self.db["annotations"].insert(label.to_dict())
            self.log_edit(annotator, "annotation", f"{dataset}/{sample_id}/{aspect}", "label", None,
                          {"value": value, "note": label.note})
        return label

    def set_human_score(self, dataset: str, sample_id: str, aspect: str, value: float, *,
                        actor: str = "user") -> None:
        """A person's score for one sample: kept as ``actor``'s annotation (see :meth:`add_annotation`).

        The imported score is never changed.
        """
        self.add_annotation(dataset, sample_id, aspect, value, annotator=actor)

    def annotations(self, dataset: str, *, aspect: str | None = None, sample: str | None = None,
                    source: str | None = None) -> list[Annotation]:
        """The labels of ``dataset`` (optionally one aspect, sample or source), oldest first."""
        where, args = ["dataset = ?"], [dataset]
        for column, value in (("aspect", aspect), ("sample", sample), ("source", source)):
            if value is not None:
                where.append(f"[{column}] = ?")
                args.append(value)
        rows = self.db.query(f"select dataset, sample, aspect, annotator, value, time, note, source from annotations "
                             f"where {' and '.join(where)} order by time, id", args)
        return [Annotation(**r) for r in rows]

    def set_expert(self, name: str, expert: bool, *, actor: str) -> None:
        """Mark annotator ``name`` as an expert (or not); the "experts" aggregate uses their labels."""
        with self.write():
            old = list(self.db.query("select expert from annotators where name = ?", [name]))
            self.db["annotators"].upsert({"name": name, "expert": int(bool(expert)), "created": time.time()},
                                         pk="name")
            self.log_edit(actor, "annotator", name, "expert", bool(old[0]["expert"]) if old else None, bool(expert))

    def experts(self) -> set[str]:
        return {r["name"] for r in self.db.query("select name from annotators where expert = 1")}

    def human_aggregate(self, dataset: str) -> str:
        """The human score runs of ``dataset`` use (see :mod:`judge_engine.annotations`); default ``imported``."""
        rows = list(self.db.query("select human_aggregate from datasets where name = ?", [dataset]))
        if not rows:
            raise NotFound(f"no dataset named {dataset!r} in {self.path}")
        return rows[0]["human_aggregate"] or "imported"

    def set_human_aggregate(self, dataset: str, aggregate: str, *, actor: str) -> None:
        """Choose the human score later runs of ``dataset`` use; logged in the audit log."""
        with self.write():
            before = self.human_aggregate(dataset)
            self.db["datasets"].update(dataset, {"human_aggregate": aggregate})
            self.log_edit(actor, "human_aggregate", dataset, "choose", before, aggregate)

    def delete_dataset(self, name: str) -> None:
        """Forget a dataset and its imported labels; people's labels are kept (a re-import finds them)."""
        with self.write():
            self.db["annotations"].delete_where("dataset = ? and source = ?", [name, IMPORTED])
            self.db["samples"].delete_where("dataset = ?", [name])
            self.db["datasets"].delete_where("name = ?", [name])

    # ------------------------------------------------------------------ splits
    def save_split(self, split: Split) -> str:
        split_id = f"{split.dataset}:seed{split.seed}:train{len(split.train_ids)}:test{len(split.test_ids)}"
        with self.write():
            self.db["splits"].upsert({"id": split_id, "dataset": split.dataset, "seed": split.seed,
                                      "train_ids": _dumps(list(split.train_ids)),
                                      "test_ids": _dumps(list(split.test_ids)), "created": time.time()}, pk="id")
        return split_id

    def list_splits(self, dataset: str) -> list[dict[str, Any]]:
        rows = list(self.db.query("select * from splits where dataset = ? order by created", [dataset]))
        for r in rows:
            r["n_train"] = len(json.loads(r.pop("train_ids")))
            r["n_test"] = len(json.loads(r.pop("test_ids")))
        return rows

    # ------------------------------------------------------------------ runs
    def create_run(self, *, method: str, params: dict[str, Any], dataset: str, aspect: str,
                   split: Split, llm: dict[str, Any], judge: dict[str, Any] | None = None,
                   human_aggregate: str = "imported", actor: str = "",
                   estimate: dict[str, Any] | None = None) -> int:
        with self.write():
            table = self.db["runs"].insert({
                "method": method, "params": _dumps(params), "dataset": dataset, "aspect": aspect,
                "split": _dumps(split.to_dict()), "llm": _dumps(llm), "status": "queued", "stage": "",
                "done": 0, "total": 0, "message": "", "pid": None, "heartbeat": time.time(),
                "created": time.time(), "finished": None,
                "judge": None if judge is None else _dumps(judge), "summary": None,
                "ledger": _dumps({}), "version": 0, "human_aggregate": human_aggregate, "actor": actor,
                "estimate": None if estimate is None else _dumps(estimate)})
        return int(table.last_pk)

    def run(self, run_id: int) -> RunRecord:
        """Run ``run_id`` as a typed record (judge and summary included); :class:`NotFound` if there is none."""
        return RunRecord.from_row(self.get_run(run_id))

    def runs(self, *, dataset: str | None = None, status: Sequence[str] | None = None,
             limit: int = 200) -> list[RunRecord]:
        """Runs (of ``dataset``, with a stored status in ``status``), newest first, without their judges (see
        :class:`RunRecord`)."""
        return [RunRecord.from_row(r) for r in self.list_runs(dataset=dataset, status=status, limit=limit)]

    def get_run(self, run_id: int) -> dict[str, Any]:
        """Run ``run_id`` as its row, JSON columns decoded (the pages' form; the engine reads :meth:`run`)."""
        rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        if not rows:
            raise NotFound(f"no run {run_id} in {self.path}")
        return self._decode_run(rows[0])

    @staticmethod
    def _decode_run(r: dict[str, Any]) -> dict[str, Any]:
        for k in ("params", "split", "llm", "judge", "summary", "ledger", "estimate"):
            if r.get(k) is not None:
                r[k] = json.loads(r[k])
        return r

    def list_runs(self, *, dataset: str | None = None, status: Sequence[str] | None = None,
                  limit: int = 200) -> list[dict[str, Any]]:
        conditions, args = [], []
        if dataset:
            conditions.append("dataset = ?")
            args.append(dataset)
        if isinstance(status, str):
            status = (status,)
        if status is not None:
            conditions.append(f"status in ({', '.join('?' * len(status))})" if status else "0")
            args.extend(status)
        where = ("where " + " and ".join(conditions)) if conditions else ""
        rows = self.db.query(f"select id, method, dataset, aspect, status, stage, done, total, message, "
                             f"created, finished, summary, ledger, llm, params, heartbeat, pid, split, version, "
                             f"human_aggregate, actor, estimate "
                             f"from runs {where} "
                             f"order by id desc limit ?", [*args, limit])
        return [self._decode_run(r) for r in rows]

    def update_run(self, run_id: int, **fields: Any) -> None:
        """Set run fields (dict/list values and records such as a ``RunSummary`` are stored as JSON) and bump
        its version."""
        fields = {k: (v.to_dict() if isinstance(v, (RunSummary, LedgerTotals)) else v) for k, v in fields.items()}
        values = {k: (_dumps(v) if isinstance(v, (dict, list)) else v) for k, v in fields.items()}
        sets = ", ".join(f"[{k}] = ?" for k in values)
        with self.write():
            self.db.execute(f"update runs set {sets}, version = version + 1 where id = ?", [*values.values(), run_id])

    def heartbeat(self, run_id: int, **fields: Any) -> None:
        self.update_run(run_id, heartbeat=time.time(), **fields)

    # ------------------------------------------------------------------ scores
    def save_verdicts(self, run_id: int, verdicts: Iterable[Verdict]) -> None:
        """Upsert verdicts (overall score as criterion '', each criterion as its own row)."""
        rows = []
        for v in verdicts:
            rows.append({"run_id": run_id, "sample_id": v.sample_id, "aspect": v.aspect, "criterion": "",
                         "score": _nan_to_none(v.score), "explanation": v.explanation, "raw": v.raw,
                         "metadata": _dumps(v.metadata)})
            for name, score in v.criteria.items():
                rows.append({"run_id": run_id, "sample_id": v.sample_id, "aspect": v.aspect, "criterion": name,
                             "score": _nan_to_none(score), "explanation": "", "raw": "", "metadata": "{}"})
        with self.write():
            self.db["scores"].upsert_all(rows, pk=("run_id", "sample_id", "aspect", "criterion"))

    def scored_ids(self, run_id: int) -> set[str]:
        return {r["sample_id"] for r in self.db.query(
            "select sample_id from scores where run_id = ? and criterion = ''", [run_id])}

    def load_verdicts(self, run_id: int) -> list[Verdict]:
        rows = list(self.db.query("select * from scores where run_id = ? order by rowid", [run_id]))
        criteria: dict[str, dict[str, float]] = {}
        for r in rows:
            if r["criterion"]:
                criteria.setdefault(r["sample_id"], {})[r["criterion"]] = (
                    float("nan") if r["score"] is None else r["score"])
        return [Verdict(sample_id=r["sample_id"], aspect=r["aspect"],
                        score=float("nan") if r["score"] is None else r["score"],
                        criteria=criteria.get(r["sample_id"], {}), explanation=r["explanation"] or "",
                        raw=r["raw"] or "", metadata=json.loads(r["metadata"] or "{}"))
                for r in rows if not r["criterion"]]

    # ------------------------------------------------------------------ events and audit
    def add_event(self, run_id: int, kind: str, payload: dict[str, Any]) -> None:
        with self.write():
            self.db["events"].insert({"run_id": run_id, "ts": time.time(), "kind": kind, "payload": _dumps(payload)})

    def clear_events(self, run_id: int) -> None:
        """Forget a run's events (a fit that starts over writes them again)."""
        with self.write():
            self.db.execute("delete from events where run_id = ?", [run_id])

    def events(self, run_id: int, *, after_id: int = 0) -> list[dict[str, Any]]:
        """The run's events after ``after_id`` as rows (the pages' form; the engine reads :meth:`run_events`)."""
        rows = list(self.db.query("select * from events where run_id = ? and id > ? order by id",
                                  [run_id, after_id]))
        for r in rows:
            r["payload"] = json.loads(r["payload"])
        return rows

    def run_events(self, run_id: int, *, after_id: int = 0, kind: str | None = None) -> list[RunEvent]:
        """The run's events after ``after_id`` (only those of ``kind``, if given), oldest first."""
        return [RunEvent(id=int(r["id"]), run_id=int(r["run_id"]), ts=float(r["ts"]), kind=r["kind"],
                         payload=r["payload"] if isinstance(r["payload"], dict) else {})
                for r in self.events(run_id, after_id=after_id) if kind is None or r["kind"] == kind]

    def log_edit(self, actor: str, entity: str, entity_id: str, action: str, before: Any, after: Any) -> None:
        with self.write():
            self.db["audit"].insert({"ts": time.time(), "actor": actor, "entity": entity, "entity_id": entity_id,
                                     "action": action, "before": _dumps(before), "after": _dumps(after)})

    def audit_log(self, *, entity: str | None = None, owner: str | None = None,
                  limit: int = 200) -> list[dict[str, Any]]:
        """The newest ``limit`` audit entries, of ``entity`` rows and of ids under ``owner`` (``owner:...``).

        The owner filter is part of the query, so an owner's history is never
        cut short by other owners' entries inside the limit.
        """
        clauses, args = [], []
        if entity:
            clauses.append("entity = ?")
            args.append(entity)
        if owner:
            prefix = owner + ":"
            # substr, not LIKE: owners hold '_' (hd_eval), a LIKE wildcard
            clauses.append("substr(entity_id, 1, ?) = ?")
            args += [len(prefix), prefix]
        where = ("where " + " and ".join(clauses)) if clauses else ""
        return list(self.db.query(f"select * from audit {where} order by id desc limit ?", [*args, limit]))

    # ------------------------------------------------------------------ criteria (versioned)
    def save_criterion(self, criterion: dict[str, Any], *, actor: str = "engine",
                       expected_version: int | None = None) -> int:
        """Insert or update a criterion; refuses if ``expected_version`` is stale.

        Returns the new version. The previous text is appended to its history
        and the change written to the audit log in the same transaction.
        """
        with self.write():
            rows = list(self.db.query("select * from criteria where id = ?", [criterion["id"]]))
            old = rows[0] if rows else None
            version = (old["version"] if old else 0)
            if expected_version is not None and expected_version != version:
                raise EditConflict(f"criterion {criterion['name']!r} was changed by someone else "
                                   f"(version {version}, you edited version {expected_version}); reload it")
            history = json.loads(old["history"]) if old else []
            if old:
                history.append({k: old[k] for k in ("name", "definition", "status", "parent_id", "version",
                                                    "updated")})
            row = {"id": criterion["id"], "owner": criterion.get("owner", old["owner"] if old else ""),
                   "parent_id": criterion.get("parent_id", old["parent_id"] if old else None),
                   "name": criterion["name"], "definition": criterion.get("definition", ""),
                   "status": criterion.get("status", "proposed"),
                   "position": criterion.get("position", old["position"] if old else 0),
                   "version": version + 1, "history": _dumps(history), "updated": time.time()}
            self.db["criteria"].upsert(row, pk="id")
            self.log_edit(actor, "criterion", criterion["id"], "update" if old else "create",
                          {k: old[k] for k in ("name", "definition", "status")} if old else None,
                          {k: row[k] for k in ("name", "definition", "status")})
        return version + 1

    def criteria(self, owner: str) -> list[dict[str, Any]]:
        rows = list(self.db.query("select * from criteria where owner = ? order by position, id", [owner]))
        for r in rows:
            r["history"] = json.loads(r["history"])
        return rows


class CallCache:
    """The persistent LLM call cache (the ``llm_cache`` table of a :class:`Store`)."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, key: str) -> dict[str, Any] | None:
        rows = list(self.store.db.query("select response from llm_cache where key = ?", [key]))
        return json.loads(rows[0]["response"]) if rows else None

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cached responses of ``keys`` that are stored, in one query per 500 keys."""
        found: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.store.db.query(f"select key, response from llm_cache where key in ({marks})", chunk):
                found[r["key"]] = json.loads(r["response"])
        return found

    def put(self, key: str, *, backend: str, model: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        self.put_many([(key, request, response)], backend=backend, model=model)

    def put_many(self, rows: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], *, backend: str,
                 model: str) -> None:
        """Store (key, request, response) rows of one backend and model in one write transaction."""
        # plain SQL: sqlite-utils' upsert reads the table's schema on every call, a third of a cached call's
        # cost when a scoring job sends hundreds a second
        now = time.time()
        with self.store.write() as db:
            db.conn.executemany("insert or replace into llm_cache (key, backend, model, request, response, created) "
                                "values (?, ?, ?, ?, ?, ?)",
                                [(key, backend, model, _dumps(request), _dumps(response), now)
                                 for key, request, response in rows])

    def entries(self, backend: str) -> Iterator[dict[str, Any]]:
        """Every cached call of ``backend`` in the order it was made (``model``, ``request`` and ``response``
        as stored JSON text); a batch is written with one timestamp, so the row order keeps it within one."""
        yield from self.store.db.query("select model, request, response from llm_cache where backend = ? "
                                       "order by created, rowid", [backend])

    def __len__(self) -> int:
        return self.store.db["llm_cache"].count

    def iter_keys(self) -> Iterator[str]:
        for r in self.store.db.query("select key from llm_cache"):
            yield r["key"]

"""The database's tables and their migrations, in order (sqlite-utils ``Migrations``), for :mod:`.store`.

Apart from the store's queries so that each file has one job: this one says what the tables are and how an
older database becomes today's; ``store.py`` reads and writes them. Only the store imports it.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any, Iterable, Iterator

from .sqlite_lib import Database, Migrations

from .records import Sample

migrations = Migrations("judge_engine")


@migrations()
def m001_initial(db: Database) -> None:
    db["datasets"].create({"name": str, "task": str, "source": str, "natural_level": str,
                           "input_label": str, "output_label": str, "context_label": str, "aspects": str,
                           "n_samples": int, "created": float}, pk="name")
    db["samples"].create({"dataset": str, "id": str, "input": str, "output": str, "group_id": str,
                          "system_id": str, "context": str, "reference": str, "human": str,
                          "annotators": str, "metadata": str, "position": int},
                         pk=("dataset", "id"))
    db["samples"].create_index(["dataset", "position"])
    db["splits"].create({"id": str, "dataset": str, "seed": int, "train_ids": str, "test_ids": str,
                         "created": float}, pk="id")
    db["runs"].create({"id": int, "method": str, "params": str, "dataset": str, "aspect": str,
                       "split": str, "llm": str, "status": str, "stage": str, "done": int,
                       "total": int, "message": str, "pid": int, "heartbeat": float,
                       "created": float, "finished": float, "judge": str, "summary": str,
                       "ledger": str, "version": int}, pk="id")
    db["scores"].create({"run_id": int, "sample_id": str, "aspect": str, "criterion": str,
                         "score": float, "explanation": str, "raw": str, "metadata": str},
                        pk=("run_id", "sample_id", "aspect", "criterion"))
    db["events"].create({"id": int, "run_id": int, "ts": float, "kind": str, "payload": str}, pk="id")
    db["events"].create_index(["run_id", "id"])
    db["criteria"].create({"id": str, "owner": str, "parent_id": str, "name": str, "definition": str,
                           "status": str, "position": int, "version": int, "history": str,
                           "updated": float}, pk="id")
    db["criteria"].create_index(["owner"])
    db["audit"].create({"id": int, "ts": float, "actor": str, "entity": str, "entity_id": str,
                        "action": str, "before": str, "after": str}, pk="id")
    db["llm_cache"].create({"key": str, "backend": str, "model": str, "request": str,
                            "response": str, "created": float}, pk="key")


@migrations()
def m002_dataset_version(db: Database) -> None:
    """Datasets get a version that every change of their samples or aspects bumps (cache stamps use it)."""
    db["datasets"].add_column("version", int, not_null_default=0)


@migrations()
def m004_one_curation_owner(db: Database) -> None:
    """HPSS curated items move to the owner scheme every method uses, ``<method>:run:<id>``.

    The HPSS page kept its strategy and human criteria under ``hpss-run-<id>``;
    rows, parents and audit entries are renamed so their history follows.
    """
    def renamed(value: str | None) -> str | None:
        if value is None or not value.startswith("hpss-run-"):
            return value
        run_id, sep, rest = value[len("hpss-run-"):].partition(":")
        return f"hpss:run:{run_id}{sep}{rest}"

    for row in list(db.query("select id, owner, parent_id from criteria where owner like 'hpss-run-%'")):
        db.execute("update criteria set id = ?, owner = ?, parent_id = ? where id = ?",
                   [renamed(row["id"]), renamed(row["owner"]), renamed(row["parent_id"]), row["id"]])
    for row in list(db.query("select id, entity_id from audit where entity_id like 'hpss-run-%'")):
        db.execute("update audit set entity_id = ? where id = ?", [renamed(row["entity_id"]), row["id"]])


IMPORTED = "imported"
"""``Annotation.source`` of a label that came with a benchmark or an imported file."""
PERSON = "person"
"""``Annotation.source`` of a label a person gave in the workbench."""


def imported_annotator(dataset: str, index: int) -> str:
    """Name of the ``index``-th (0-based) annotator of an imported per-annotator list."""
    return f"{dataset}#rater{index + 1}"


def _imported_rows(dataset: str, samples: Iterable[Sample], when: float) -> Iterator[dict[str, Any]]:
    """Annotation rows for the per-annotator lists samples were imported with (kept as they came)."""
    for s in samples:
        # labels read from another tool (MLflow, Label Studio, ...) carry their annotators' names
        names = (s.metadata or {}).get("annotator_names") or []
        for aspect, values in (s.annotators or {}).items():
            for i, value in enumerate(values or []):
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    continue
                who = str(names[i]) if len(names) == len(values) else imported_annotator(dataset, i)
                yield {"dataset": dataset, "sample": s.id, "aspect": aspect,
                       "annotator": who, "value": float(value), "time": when,
                       "note": "", "source": IMPORTED}


@migrations()
def m003_annotations(db: Database) -> None:
    """Labels become their own records; the per-dataset human aggregate and each run's are recorded.

    Before this, ``set_human_score`` wrote a person's label over ``samples.human``
    (the audit log kept the value it replaced). Here every such edit becomes
    that person's annotation, and the sample's imported score is put back from
    the oldest audit entry of the edit: no value is lost, and the imported
    score is again what came with the data.
    """
    db["annotations"].create({"id": int, "dataset": str, "sample": str, "aspect": str, "annotator": str,
                              "value": float, "time": float, "note": str, "source": str}, pk="id")
    db["annotations"].create_index(["dataset", "aspect", "sample"])
    db["annotations"].create_index(["dataset", "annotator"])
    db["annotators"].create({"name": str, "expert": int, "created": float}, pk="name")
    db["datasets"].add_column("human_aggregate", str, not_null_default="imported")
    db["runs"].add_column("human_aggregate", str, not_null_default="imported")
    db["runs"].add_column("actor", str, not_null_default="")
    for row in db.query("select name from datasets"):
        samples = [Sample(id=r["id"], input="", output="", group_id="", annotators=json.loads(r["annotators"] or "{}"))
                   for r in db.query("select id, annotators from samples where dataset = ?", [row["name"]])]
        db["annotations"].insert_all(_imported_rows(row["name"], samples, time.time()), batch_size=2000)
    edits = list(db.query("select * from audit where entity = 'human_score' order by id"))
    humans: dict[tuple[str, str], dict[str, Any]] = {}
    restored: set[tuple[str, str, str]] = set()
    for e in edits:
        dataset, _, rest = e["entity_id"].partition("/")
        sample, _, aspect = rest.rpartition("/")
        after = json.loads(e["after"])
        if after is None or not sample:
            continue
        db["annotations"].insert({"dataset": dataset, "sample": sample, "aspect": aspect,
                                  "annotator": e["actor"] or "unknown", "value": float(after), "time": e["ts"],
                                  "note": "label given before labels were kept apart (moved from the sample)",
                                  "source": PERSON})
        if (dataset, sample) not in humans:
            got = list(db.query("select human from samples where dataset = ? and id = ?", [dataset, sample]))
            if not got:
                continue
            humans[(dataset, sample)] = json.loads(got[0]["human"])
        if (dataset, sample, aspect) in restored:
            continue
        restored.add((dataset, sample, aspect))
        before = json.loads(e["before"])  # the oldest edit's "before" is the value that came with the data
        human = humans[(dataset, sample)]
        if before is None:
            human.pop(aspect, None)
        else:
            human[aspect] = before
    for (dataset, sample), human in humans.items():
        db["samples"].update((dataset, sample), {"human": _dumps(human)})


@migrations()
def m005_run_estimate(db: Database) -> None:
    """What a run was expected to cost when it was made (``RunEstimate``), kept to set beside what it cost."""
    db["runs"].add_column("estimate", str)


@migrations()
def m006_submissions_and_settings(db: Database) -> None:
    """A click's token claimed once (:mod:`.submissions`); settings kept per database or user (:mod:`.saved_settings`)."""
    db["submissions"].create({"token": str, "kind": str, "result": str, "actor": str, "created": float}, pk="token")
    db["saved_settings"].create({"scope": str, "name": str, "value": str, "actor": str, "updated": float},
                                pk=("scope", "name"))


@migrations()
def m007_probe_reports(db: Database) -> None:
    """A finished run's probe report, computed once and read back while its fingerprint holds (:mod:`.probes`)."""
    db["probe_reports"].create({"run_id": int, "fingerprint": str, "report": str, "created": float},
                               pk=("run_id", "fingerprint"))


@migrations()
def m008_aggregator_fits(db: Database) -> None:
    """Fitted aggregator models kept for the next process that fits the same ones (:mod:`.runs.kept_fits`)."""
    db.execute("CREATE TABLE IF NOT EXISTS aggregator_fits (key TEXT PRIMARY KEY, model BLOB NOT NULL, "
               "created REAL NOT NULL)")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)

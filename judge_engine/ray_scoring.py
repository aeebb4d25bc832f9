"""Score a file or a directory of items with an exported judge on a Ray cluster (the ``ray`` extra).

``score`` on one machine stops scaling at one process's worth of requests; a Ray Data pipeline spreads the
same work over a cluster: read, one ``map_batches`` stage whose actors each hold the judge and an LLM
client (an OpenAI-compatible endpoint, or a vLLM engine on the actor's GPU), write. See docs/ray.md.

A verdict must not depend on where it was computed, so nothing about scoring is written here. JSON lines,
JSON and CSV/TSV files are read by ``score``'s own reader, :class:`~judge_engine.items.ItemFile`, one Ray
read task per file (:mod:`judge_engine.ray_items`): the same samples, the same rows left out and named in
the same words, and the job goes on past them. Parquet (and :func:`score_dataset`'s own Dataset) rows
become samples by the same :func:`judge_engine.data.row_sample` after control characters are removed.
Every batch goes through ``score``'s per-item path, :func:`~judge_engine.score_files.score_items` (an item
whose request keeps failing is missing with the server's reason), and every output row is
:func:`~judge_engine.score_files.verdict_record`, as in ``score``'s JSON lines, with ``criteria`` as JSON
text (a column of dicts whose keys differ by judge, or that are empty, has no stable Parquet type). The
same ``out_dir`` resumes as ``score``'s ``--out`` does (:mod:`judge_engine.ray_output`).

What differs from ``score``, on purpose:

* The call cache is one SQLite file per host under ``cache_dir`` (or none), shared by that host's actors:
  SQLite is not a cluster database. A re-run finds the answers of the items its host's actors asked.
* The output is a directory of files, one per block (Ray's writers), not one file; a re-run adds files.
* Ids are required (``id_col``): a row number is not stable across a cluster's reads. A repeated id is
  named within a file (Parquet: within a batch); the ids of a directory's files must be unique.

``import judge_engine.ray_scoring`` without Ray installed raises ``ModuleNotFoundError`` naming ``ray``.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import ray  # first: without the extra, the ModuleNotFoundError names "ray" (not pyarrow, which it brings)
import ray.data
import pyarrow as pa

from . import data
from .data import RowColumns
from .export import ExportedJudge, load_judge
from .llm import BACKEND_NAMES, LLMConfig, make_llm
from .methods import Judge
from .records import Sample
from .ray_items import SAMPLE_COL, open_items, read_items, row_to_sample
from .ray_output import JUDGE_MARK, OUTPUT_SUFFIXES, done_ids, mark_output, resume_output, summary
from .score_files import OUTPUT_COLUMNS, failure_watch, score_items, verdict_record

__all__ = ["JUDGE_MARK", "OUTPUT_SCHEMA", "done_ids", "score_dataset", "score_files"]

_ARROW_TYPES = {"id": pa.string(), "aspect": pa.string(), "score": pa.float64(), "missing": pa.bool_(),
                "missing_reason": pa.string(), "explanation": pa.string(), "criteria": pa.string()}

OUTPUT_SCHEMA = pa.schema([(name, _ARROW_TYPES[name]) for name in OUTPUT_COLUMNS])
"""One row per verdict: the fields of ``score``'s output lines, in their order; ``score`` null when missing,
``criteria`` a JSON object as text. Fixed, so that every block (and every Parquet file) of a run has the same
schema. (A field ``score`` gains and this module has no type for stops the import: it is never dropped.)"""

SKIPPED_NAMED = 10
"""Rows left out (no id, no output, a repeated id) that each worker names on standard error; Ray shows them."""

ITEM_FORMATS = {".jsonl": "items", ".ndjson": "items", ".json": "items", ".csv": "items", ".tsv": "items",
                ".parquet": "parquet"}
"""File endings :func:`score_files` reads, and how: Parquet by Ray's reader, the others by ``score``'s
(:class:`~judge_engine.items.ItemFile`: ``.json`` is one JSON list, as ``score`` reads it)."""


def record_sample(record: dict[str, Any], columns: RowColumns) -> Sample:
    """The Sample ``score`` makes of the same record; :class:`~judge_engine.data.DataImportError` (a ValueError)
    saying why for a row ``score`` leaves out (an empty id, no output).

    As :class:`~judge_engine.items.ItemFile` reads a line: control characters removed, then
    :func:`~judge_engine.data.row_sample`. Rows of a distributed read have no row number, hence ``None``."""
    return data.row_sample(None, data.clean_record(record, id_col=columns.id_col), columns, None)


def verdict_rows(verdicts: Iterable[Any]) -> pa.Table:
    """:data:`OUTPUT_SCHEMA` rows of ``verdicts``, each :func:`verdict_record` with its criteria as JSON text."""
    rows = []
    for v in verdicts:
        record = verdict_record(v)
        record["criteria"] = json.dumps(record["criteria"], ensure_ascii=False)  # as score's CSV cell
        rows.append(record)
    return pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA)


def host_cache(cache_dir: str | Path) -> Any:
    """The call cache of this host's actors: one Store file per host in ``cache_dir``.

    Shared by the host's actors (the Store takes concurrent writers: WAL, BEGIN IMMEDIATE, a busy timeout) and found
    again by a re-run's actors on that host, so an item answered before a stop is not paid twice; SQLite is no
    database to share between machines, hence one file per host. Actors that create it at once wait for each other
    in the Store (its tables are made under the write lock)."""
    from .store import Store

    path = Path(cache_dir) / f"worker-{socket.gethostname()}.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return Store(path)


class ScoreBatches:
    """The ``map_batches`` stage: one per actor, holding the judge and its LLM client for the whole run.

    Building them per batch would reload a vLLM engine (or reopen connections and the cache) every few
    hundred rows; an actor builds them once in ``__init__``."""

    def __init__(self, judge: Judge, llm: LLMConfig, columns: RowColumns, cache_dir: str | None = None,
                 done_ids: frozenset[str] = frozenset()):
        store = host_cache(cache_dir) if cache_dir is not None else None
        self.judge, self.columns, self.done_ids = judge, columns, done_ids
        self.llm = make_llm(llm, store=store)
        self.watch = failure_watch(self.llm)  # this actor's answers and failures, as score's job has them
        self.skipped = 0

    def _skip(self, record: Mapping[str, Any], reason: ValueError) -> None:
        self.skipped += 1
        if self.skipped <= SKIPPED_NAMED:
            print(f"skipped: id {record.get(self.columns.id_col)!r}: {reason}", file=sys.stderr)
        elif self.skipped == SKIPPED_NAMED + 1:
            print(f"skipped: more rows than {SKIPPED_NAMED} in this worker; the others are not named",
                  file=sys.stderr)

    def __call__(self, batch: pa.Table) -> pa.Table:
        samples: dict[str, Sample] = {}
        if SAMPLE_COL in batch.column_names:  # read by score's reader (ray_items): checked, unique, named already
            for sid, text in zip(batch.column("id").to_pylist(), batch.column(SAMPLE_COL).to_pylist()):
                if sid not in self.done_ids:
                    samples[sid] = row_to_sample(text)
            return self._scored(samples)
        for record in batch.to_pylist():  # plain Python values, as json.loads gives them to score
            try:
                sample = record_sample(record, self.columns)
                if sample.id in samples:
                    raise ValueError(f"the id {sample.id!r} repeats")
            except ValueError as exc:  # as score does: the row is named and left out, the rest is scored
                self._skip(record, exc)
                continue
            if sample.id not in self.done_ids:
                samples[sample.id] = sample
        return self._scored(samples)

    def _scored(self, samples: dict[str, Sample]) -> pa.Table:
        if not samples:
            return OUTPUT_SCHEMA.empty_table()
        # score's per-item path: an item whose request keeps failing is a missing verdict with the reason, and only
        # a failure of every request (nothing answered) fails the batch
        return verdict_rows(score_items(self.judge, list(samples.values()), llm=self.llm, watch=self.watch))


def _exported(judge: str | Path | Mapping[str, Any] | ExportedJudge) -> ExportedJudge:
    return judge if isinstance(judge, ExportedJudge) else load_judge(judge if isinstance(judge, (str, Path))
                                                                     else dict(judge))


def score_dataset(ds: ray.data.Dataset, judge: str | Path | Mapping[str, Any] | ExportedJudge, *,
                  llm: LLMConfig | None = None, input_col: str = "input", output_col: str = "output",
                  id_col: str = "id", context_col: str | None = None, reference_col: str | None = None,
                  batch_size: int = 256, workers: int = 2, num_cpus: float = 0.5, num_gpus: float = 0,
                  cache_dir: str | Path | None = None,
                  skip_ids_from: str | Path | Sequence[str | Path] | None = None) -> ray.data.Dataset:
    """``ds`` scored by ``judge`` (a path, JSON text or dict :func:`load_judge` reads, or an ExportedJudge):
    a lazy Dataset of :data:`OUTPUT_SCHEMA` rows, one per item scored.

    ``llm`` replaces the backend the judge was made with; each of the ``workers`` actors sends
    ``llm.concurrency`` requests at once, so the endpoint sees up to their product. An actor takes
    ``num_cpus`` (it mostly waits on the endpoint) and ``num_gpus`` (1 for a vLLM engine in the actor).
    ``cache_dir``: the call cache of each host's actors there (``None``: no cache). ``skip_ids_from``: output
    directories of earlier runs of the same judge, whose ids are not scored again.

    Everything that can be checked before a request is sent is (the judge, the backend, the columns,
    the earlier outputs), each with a ``ValueError`` saying what to change.
    """
    exported = _exported(judge)
    config = llm or exported.llm
    _check_options(config, batch_size, workers)
    columns = RowColumns(input_col=input_col, output_col=output_col, id_col=id_col, context_col=context_col,
                         reference_col=reference_col)
    _check_columns(ds, columns)
    done = done_ids(skip_ids_from, exported.judge) if skip_ids_from is not None else frozenset()
    return _scoring_stage(ds, exported.judge, config, columns, batch_size=batch_size, workers=workers,
                          num_cpus=num_cpus, num_gpus=num_gpus, cache_dir=cache_dir, done=done)


def _check_columns(ds: ray.data.Dataset, columns: RowColumns) -> None:
    schema = ds.schema()
    present = list(schema.names) if schema is not None else []
    named = {"input_col": columns.input_col, "output_col": columns.output_col, "id_col": columns.id_col,
             "context_col": columns.context_col, "reference_col": columns.reference_col}
    absent = {role: col for role, col in named.items() if col is not None and col not in present}
    if absent:
        said = ", ".join(f"{role}={col!r}" for role, col in absent.items())
        raise ValueError(f"not a column of the items: {said} (their columns: {', '.join(present) or 'none'})")


def _check_options(config: LLMConfig, batch_size: int, workers: int) -> None:
    if config.backend not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {config.backend!r}; choose one of {', '.join(BACKEND_NAMES)}")
    if batch_size < 1 or workers < 1:
        raise ValueError(f"batch_size and workers must be at least 1 (got {batch_size} and {workers})")


def _scoring_stage(ds: ray.data.Dataset, judge: Judge, config: LLMConfig, columns: RowColumns, *, batch_size: int,
                   workers: int, num_cpus: float, num_gpus: float, cache_dir: str | Path | None,
                   done: frozenset[str]) -> ray.data.Dataset:
    workers = placeable_workers(workers, num_cpus, num_gpus)
    return ds.map_batches(
        ScoreBatches, batch_format="pyarrow", batch_size=batch_size, compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=num_cpus, num_gpus=num_gpus or None,
        fn_constructor_kwargs={"judge": judge, "llm": config, "columns": columns,
                               "cache_dir": str(cache_dir) if cache_dir is not None else None, "done_ids": done})


READ_CPUS = 1
IO_TASK_CPUS = 0.25
"""CPU of a read task and of a write task (they wait on files): the read of a file streams its chunks until the file
ends, and at 1 CPU each, 2 actors of 0.5 and the read held both CPUs of a 2-CPU instance, so no block was written
before the whole file was scored (a run stopped after 130 answers had written 0 verdicts)."""
"""CPUs the read and write tasks need beside the actors: 4 actors of 0.5 CPU on 2 CPUs held both, the read task
waited for one, and the job stalled at 0 rows with no message (issue 64)."""


def placeable_workers(workers: int, num_cpus: float, num_gpus: float = 0) -> int:
    """``workers``, or as many actors as the cluster can place beside its read task, with one line saying so."""
    if not ray.is_initialized():
        return workers
    resources = ray.cluster_resources()
    limits = []
    if num_cpus > 0:
        limits.append(int((resources.get("CPU", 0) - READ_CPUS) // num_cpus))
    if num_gpus > 0:
        limits.append(int(resources.get("GPU", 0) // num_gpus))
    fits = min(limits) if limits else workers
    if fits >= workers:
        return workers
    if fits < 1:
        raise ValueError(f"the cluster cannot place one worker of {num_cpus:g} CPU"
                         + (f" and {num_gpus:g} GPU" if num_gpus else "") + f" beside the read task ({READ_CPUS} "
                         f"CPU): it has {resources.get('CPU', 0):g} CPU, {resources.get('GPU', 0):g} GPU")
    print(f"workers: {fits} instead of {workers}, as many as the cluster places at {num_cpus:g} CPU each"
          + (f" and {num_gpus:g} GPU" if num_gpus else "") + f" while {READ_CPUS} CPU is left for reading "
          f"({resources.get('CPU', 0):g} CPU, {resources.get('GPU', 0):g} GPU)", file=sys.stderr)
    return fits


def item_format(source: str | Path) -> str:
    """``items`` (read by ``score``'s reader) or ``parquet``: what a file is, or what every item file of a directory
    is."""
    source = Path(source)
    if source.is_dir():
        kinds = {ITEM_FORMATS[p.suffix.lower()] for p in _item_paths(source)}
        if len(kinds) != 1:
            found = "both Parquet and other item files" if kinds else "no item file (" + ", ".join(ITEM_FORMATS) + ")"
            raise ValueError(f"{source} holds {found}: give a directory of one kind")
        return kinds.pop()
    if not source.is_file():
        raise ValueError(f"no such file or directory: {source}")
    if source.suffix.lower() not in ITEM_FORMATS:
        raise ValueError(f"{source.name}: Ray reads items from {', '.join(ITEM_FORMATS)} files")
    return ITEM_FORMATS[source.suffix.lower()]


def _item_paths(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    return [p for p in sorted(source.rglob("*"))
            if p.is_file() and p.suffix.lower() in ITEM_FORMATS and not p.name.startswith(("_", "."))]


ACTORS_START_S = 1800
"""Seconds ``score_files`` waits for all its actors to start (each imports the engine and builds its client; minutes
on a loaded machine) before scoring; a cluster that cannot place them all stops with Ray's GetTimeoutError."""


def score_files(source: str | Path, judge: str | Path | Mapping[str, Any] | ExportedJudge, out_dir: str | Path, *,
                fmt: str = "jsonl", retry_missing: bool = False, llm: LLMConfig | None = None,
                input_col: str = "input", output_col: str = "output", id_col: str = "id",
                context_col: str | None = None, reference_col: str | None = None, batch_size: int = 256,
                workers: int = 2, num_cpus: float = 0.5, num_gpus: float = 0, cache_dir: str | Path | None = None,
                skip_ids_from: str | Path | Sequence[str | Path] | None = None) -> dict[str, Any]:
    """Score ``source`` (a file or a directory of .jsonl/.json/.csv/.tsv or of .parquet) on the cluster and write
    the verdicts to the directory ``out_dir`` as ``fmt`` (``jsonl`` or ``parquet``) files, beside a
    :data:`JUDGE_MARK` naming the judge. Returns ``score``'s summary (``out``: the directory).

    Item files other than Parquet are read by ``score``'s own reader (:mod:`judge_engine.ray_items`): a row it
    cannot score is named on standard error as ``score`` names it, and the job goes on. Run again with the same
    ``out_dir``, a job resumes (:mod:`judge_engine.ray_output`): the ids written are kept and not scored again,
    ``retry_missing`` scores the missing ones again. ``skip_ids_from``: other directories of this judge whose ids
    are not scored. The other options are :func:`score_dataset`'s.
    """
    if fmt not in OUTPUT_SUFFIXES:
        raise ValueError(f"unknown output format {fmt!r}; use jsonl or parquet")
    exported = _exported(judge)
    config = llm or exported.llm
    _check_options(config, batch_size, workers)
    out, source = Path(out_dir), Path(source)
    kind = item_format(source)
    paths = _item_paths(source)
    notice = (lambda text: print(text, file=sys.stderr))
    columns = {"input_col": input_col, "output_col": output_col, "id_col": id_col, "context_col": context_col,
               "reference_col": reference_col}
    # the items are checked before the output is touched: a refused job leaves it as it was (retry_missing included)
    if kind == "parquet":
        items, named = ray.data.read_parquet([str(p) for p in paths], num_cpus=IO_TASK_CPUS), None
        _check_columns(items, RowColumns(**columns))
        if len(paths) == 1:  # one file is one block, so one actor: split it so that every worker gets a share
            items = items.repartition(2 * workers)
    else:
        open_items(paths, columns)
    resumed = resume_output(out, exported.judge, fmt, retry_missing=retry_missing, notice=notice)
    if kind != "parquet":  # one block a chunk: every worker gets a share of one file
        items, named = read_items(paths, columns, batch_size, num_cpus=IO_TASK_CPUS)
    done = resumed | (done_ids(skip_ids_from, exported.judge) if skip_ids_from is not None else frozenset())
    # every actor is up before a block is handed out, one block each at a time: the first actor up took every block
    # (Ray hands an actor up to 4 at once) while the others were still starting, and sent every call
    items.context.wait_for_min_actors_s = ACTORS_START_S
    items.context.max_tasks_in_flight_per_actor = 1
    stage = dict(batch_size=batch_size, workers=workers, num_cpus=num_cpus, num_gpus=num_gpus, cache_dir=cache_dir)
    scored = _scoring_stage(items, exported.judge, config, RowColumns(**columns), done=done, **stage)
    # first, so that a run cut before its first file is still known as this judge's
    mark_output(out, exported.judge, fmt)
    light = {"num_cpus": IO_TASK_CPUS}
    if fmt == "parquet":
        scored.write_parquet(str(out), ray_remote_args=light)
    else:
        scored.write_json(str(out), force_ascii=False, ray_remote_args=light)
    report = {"shown": {"skipped": [], "warning": []}, "counts": {"skipped": 0, "warning": 0}, "by_reason": {}}
    if named is not None:
        report = ray.get(named.report.remote())
        ray.kill(named)  # its job is done: a notebook scoring many files keeps no actor per file
    _name_rows(report)
    result = summary(out, resumed, len(done), report)
    print(json.dumps(result, indent=2), file=sys.stderr)
    return {**result, "out": out}


def _name_rows(report: dict[str, Any]) -> None:
    """The rows left out and cleaned, on standard error in ``score``'s words (its first ten, then one line)."""
    more = {"skipped": "skipped: more rows (every one is counted in the summary)",
            "warning": "warning: more rows cleaned (every one is counted in the summary: rows_cleaned)"}
    for kind in ("skipped", "warning"):
        for text in report["shown"][kind]:
            print(f"{kind}: {text}", file=sys.stderr)
        if report["counts"][kind] > len(report["shown"][kind]):
            print(more[kind], file=sys.stderr)

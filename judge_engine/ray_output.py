"""The output directory of a Ray scoring job, and its resume: the same job run again goes on where it stopped.

As ``score`` resumes its ``--out`` file, :func:`judge_engine.ray_scoring.score_files` resumes its directory: the
ids already written by this judge are not scored again, a record cut by a kill is dropped (its item is scored again,
from the call cache), and ``retry_missing`` takes the missing verdicts out so that their items are scored again.
A directory written by another judge, or in the other format, is refused before any request. Ray writes one file
per block (a new name per run), so a re-run adds files beside the earlier ones and the directory's union holds
each id once.

Nothing written is lost: a file is only ever cut at its last whole line (what a kill left half-written), rewritten
whole beside itself and moved over it in one step (``retry_missing``), or, a Parquet file a kill left unreadable,
renamed with a leading ``_`` (readers of the directory leave it out) rather than deleted.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from .methods import Judge
from .score_files import judge_fingerprint

JUDGE_MARK = "_JUDGE"
"""File in an output directory holding the fingerprint of the judge that wrote it, then the format. No extension
and a leading underscore: Ray's, Arrow's and Spark's readers of the directory leave it out."""

OUTPUT_SUFFIXES = {"jsonl": ".json", "parquet": ".parquet"}
"""What Ray names the files of each output format."""


def output_files(directory: Path) -> Iterator[Path]:
    """The verdict files of an output directory (not the mark, not a file set aside with ``_`` or ``.``)."""
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.name.startswith(("_", ".")) and \
                path.suffix.lower() in (".json", ".jsonl", ".parquet"):
            yield path


def mark_output(out: Path, judge: Judge, fmt: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / JUDGE_MARK).write_text(f"{judge_fingerprint(judge)}\n{fmt}\n", encoding="utf-8")


def _mark(directory: Path) -> list[str]:
    mark = directory / JUDGE_MARK
    if not mark.is_file():
        raise ValueError(f"{directory} has no {JUDGE_MARK} file: it was not written by score_files; write to a new "
                         "directory")
    return mark.read_text(encoding="utf-8").split()


def _written_format(directory: Path, mark: list[str]) -> str | None:
    if len(mark) > 1:
        return mark[1]
    suffixes = {p.suffix.lower() for p in output_files(directory)}  # a mark of before formats were recorded
    return "parquet" if ".parquet" in suffixes else ("jsonl" if suffixes else None)


def resume_output(out: Path, judge: Judge, fmt: str, *, retry_missing: bool = False,
                  notice: Callable[[str], None] | None = None) -> frozenset[str]:
    """The ids already in ``out`` by this judge (none for a new or empty directory), after repairing what a kill
    left: a JSON-lines file's cut last line is cut off, an unreadable Parquet file set aside. With
    ``retry_missing`` the missing verdicts are taken out first (their items are scored again)."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return frozenset()
    if not out.is_dir():
        raise ValueError(f"{out} is a file, not a directory: write to a new directory")
    mine, mark = judge_fingerprint(judge), _mark(out)
    theirs = mark[0] if mark else ""
    if theirs != mine:
        raise ValueError(f"{out} was written by judge {theirs}, not by this judge ({mine}): write to a new directory "
                         "(its verdicts are kept as they are)")
    written = _written_format(out, mark)
    if written is not None and written != fmt:
        raise ValueError(f"{out} holds this judge's verdicts as {written}; this run would add {fmt} files to it: "
                         f"run with fmt={written!r}, or write to a new directory")
    for path in output_files(out):
        _repair(path)
    if retry_missing:
        dropped = sum(drop_missing(path) for path in output_files(out))
        if notice:
            notice(f"--retry-missing: the items written missing in {out} are scored again ({dropped})")
    done = done_ids(out, judge)
    if done and notice:
        notice(f"resuming: {len(done)} items are already in {out}; scoring the rest")
    return done


def _repair(path: Path) -> None:
    """Cut a JSON-lines file after its last whole line; set aside a Parquet file that cannot be read."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            pq.read_metadata(path)
        except (OSError, pa.ArrowException) as exc:
            aside = path.with_name(f"_cut-{path.name}")
            path.replace(aside)
            warnings.warn(f"{path} cannot be read ({exc}), a write cut by the stop: set aside as {aside.name}; its "
                          "items are scored again", stacklevel=3)
        return
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb") as f:
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return
        f.seek(0)
        data = f.read()
    whole = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(whole)
    warnings.warn(f"{path}: the last line was cut by the stop; cut off, its item is scored again", stacklevel=3)


def drop_missing(path: Path) -> int:
    """Take the missing verdicts out of one output file; returns how many. The file is written whole beside it and
    moved over it in one step: a stop leaves the old file or the new one."""
    beside = path.with_name(f".{path.name}.retry")
    if path.suffix.lower() == ".parquet":
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        keep = pc.invert(pc.fill_null(table.column("missing"), False))
        dropped = table.num_rows - pc.sum(keep.cast(pa.int64())).as_py() if table.num_rows else 0
        if dropped:
            pq.write_table(table.filter(keep), beside)
    else:
        dropped = 0
        with open(path, encoding="utf-8") as f, open(beside, "w", encoding="utf-8") as new:
            for line in f:
                if line.strip() and json.loads(line).get("missing") is True:
                    dropped += 1
                else:
                    new.write(line)
    if dropped:
        os.replace(beside, path)
    elif beside.exists():
        beside.unlink()
    return dropped


def done_ids(directories: str | Path | Sequence[str | Path], judge: Judge) -> frozenset[str]:
    """The ids in earlier output directories of :func:`~judge_engine.ray_scoring.score_files`, written by this
    same ``judge``.

    A directory written by another judge (or not by ``score_files``) is refused: skipping its ids would leave items
    with another judge's verdicts. A JSON-lines file cut by a crash counts its whole lines; a Parquet file that
    cannot be read counts none and is named in a warning (its items are scored again)."""
    if isinstance(directories, (str, Path)):
        directories = [directories]
    mine, ids = judge_fingerprint(judge), set()
    for directory in map(Path, directories):
        mark = _mark(directory)
        theirs = mark[0] if mark else ""
        if theirs != mine:
            raise ValueError(f"{directory} was written by judge {theirs}, not by this judge ({mine}): its items "
                             "would keep another judge's verdicts")
        for path in output_files(directory):
            if path.suffix.lower() == ".parquet":
                import pyarrow.parquet as pq

                try:
                    ids.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
                except (OSError, pa.ArrowException) as exc:
                    warnings.warn(f"{path} cannot be read ({exc}); its items are scored again: delete it",
                                  stacklevel=2)
            else:
                ids.update(_jsonl_ids(path))
    return frozenset(ids)


def _jsonl_ids(path: Path) -> set[str]:
    ids = set()
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                ids.add(str(json.loads(raw)["id"]))
            except (ValueError, KeyError, TypeError):
                if not raw.endswith(b"\n"):  # the last line, cut by a crash: its item is scored again
                    warnings.warn(f"{path}: the last line is cut off; its item is scored again", stacklevel=3)
                    continue
                raise ValueError(f"{path}, line {n}: not a verdict record") from None
    return ids


def summary(out: Path, resumed: frozenset[str], skipped: int, named: dict[str, Any]) -> dict[str, Any]:
    """``score``'s summary of a finished run from its directory: the items scored now (those not in ``resumed``,
    the ids that were already in ``out``) and how many of them are missing, those ``skipped`` as scored before,
    the rows left out by reason and the rows cleaned (``named``: :meth:`RowsNamed.report`)."""
    items = missing = 0

    def count(ids: list[Any], missing_flags: list[Any]) -> None:
        nonlocal items, missing
        for i, m in zip(ids, missing_flags):
            if str(i) not in resumed:
                items += 1
                missing += m is True
    for path in output_files(out):
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path, columns=["id", "missing"])
            count(table.column("id").to_pylist(), table.column("missing").to_pylist())
        else:
            with open(path, "rb") as f:
                for raw in f:
                    if raw.strip():
                        record = json.loads(raw)
                        count([record["id"]], [record.get("missing")])
    result = {"items": items, "skipped": skipped, "rows_left_out": named["counts"]["skipped"],
              "rows_left_out_by_reason": named["by_reason"], "missing": missing}
    if named["counts"]["warning"]:
        result["rows_cleaned"] = named["counts"]["warning"]
    return result

"""Importing a user's table into the store: the one import the Datasets page and ``datasets import`` share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..records import Dataset
from .dialects import CsvDialect
from .tables import load_table

if TYPE_CHECKING:
    from ..store import Store


@dataclass(frozen=True)
class ImportColumns:
    """Which column of a user's table holds what: the choices of the Datasets page's column mapping.

    Each value is a column name of the file; an optional role left as None is
    not read (see :func:`judge_engine.data.load_table` for what each becomes).
    """

    input: str
    """What the output was generated from (article, dialogue, prompt, ...)."""
    output: str
    """The text the humans scored."""
    scores: tuple[str, ...]
    """The human-score columns, one aspect each, named after its column."""
    group: str | None = None
    """Items sharing a source; None: every row is its own group."""
    system: str | None = None
    """Which system produced the output (for system-level meta-evaluation)."""
    id: str | None = None
    """A sample id; None: the row number."""
    context: str | None = None
    """Extra grounding, e.g. the fact a dialogue response should use."""
    reference: str | None = None
    """A reference output."""


def import_table(store: Store, path: str | Path, *, name: str, columns: ImportColumns,
                 aspect_ranges: dict[str, tuple[float, float]] | None = None, task: str = "",
                 progress: Callable[[int, int], Any] | None = None, dialect: CsvDialect | None = None,
                 duplicates: str = "keep") -> tuple[Dataset, list[str]]:
    """Import a user table into ``store`` under ``name``, reading the ``columns`` chosen; returns (dataset, warnings).

    Raises ``ValueError`` (before reading the file) if the name is empty or
    already taken, and :class:`judge_engine.data.DataImportError` for any
    problem with the file. Nothing is written unless the whole file imports,
    so an existing dataset is never touched. ``dialect`` (None: detected) and
    ``duplicates`` ("keep" or "merge") are passed to :func:`judge_engine.data.load_table`.
    """
    name = check_new_name(store, name)
    warnings: list[str] = []
    dataset = load_table(path, name=name, input_col=columns.input, output_col=columns.output,
                         score_cols=list(columns.scores), group_col=columns.group, system_col=columns.system,
                         id_col=columns.id, context_col=columns.context, reference_col=columns.reference,
                         aspect_ranges=aspect_ranges or None, task=task, progress=progress,
                         warnings=warnings, dialect=dialect, duplicates=duplicates)
    import_dataset(store, dataset)
    return dataset, warnings


def check_new_name(store: Store, name: str) -> str:
    """``name`` stripped; ValueError if it is empty or a stored dataset's (which is kept as it is)."""
    name = name.strip()
    if not name:
        raise ValueError("give the dataset a name")
    if store.has_dataset(name):
        raise ValueError(f"a dataset named {name!r} already exists; choose another name "
                         "(the stored one is kept as it is)")
    return name


def import_dataset(store: Store, dataset: Dataset) -> Dataset:
    """Save a dataset read from a file or another tool (MLflow, Label Studio, Argilla, Langfuse) as a new
    dataset, in one transaction: a name already taken is refused and nothing is written."""
    check_new_name(store, dataset.name)
    store.save_dataset(dataset)  # replace=False: refuses a name taken meanwhile
    return dataset


def rows_read(dataset: Dataset) -> int:
    """Rows of the file the dataset holds: a merged duplicate counts every row merged into it."""
    return sum(len(s.metadata.get("merged_rows") or (0,)) for s in dataset.samples)

"""A finished run's probe report computed once and kept in the store, keyed by a fingerprint of what it reads.

The report is kept as JSON text through :mod:`judge_engine.store_probes` (the ``probe_reports`` table). The
probes' slice tests draw 999 permutations of every item for each of a run's slices (175 slices at 1,600 items
of SummEval-like data): 5-20 s per run, which the Compare page paid on its first visit for every run it showed
(issue 67). A report is derived data, never entered by a person: it is stored under the sha256 of everything
:func:`judge_engine.probes.probes` reads (the run's verdicts, the items' human scores, outputs, groups and
systems, the aspect's scale, the level and seed) and of the code and library versions that compute it, so a
new label, an edited verdict or a changed probe reads as another fingerprint and is computed afresh; a
report of another fingerprint is dropped when the new one is stored. A read-only store (a viewer) computes
without keeping.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..records import Dataset, Verdict

_PACKAGE = Path(__file__).resolve().parents[1]
CODE_FILES = ("probes/*.py", "metrics/*.py", "compare.py", "evidence.py", "records.py")
"""The sources a report's figures come from (the probes and the statistics they call): a change to any of them,
including another helper's change to a statistic, makes every stored report stale."""


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of the probes' sources and of the numerical libraries' versions (their generators and solvers).

    The versions are read from the installed packages' metadata, not by importing them: importing scikit-learn
    to read its version was a second of the Compare page's first visit, whose kept reports need none of it."""
    from importlib.metadata import version

    h = hashlib.sha256(" ".join(f"{name} {version(name)}" for name in ("numpy", "scipy", "scikit-learn")).encode())
    for pattern in CODE_FILES:
        for path in sorted(_PACKAGE.glob(pattern)):
            h.update(path.relative_to(_PACKAGE).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def fingerprint(dataset: Dataset, aspect: str, verdicts: Sequence[Verdict], *, run_id: int, seed: int,
                level: str | None) -> str:
    """sha256 of every input of ``probes(dataset, aspect, verdicts, run_id=..., seed=..., level=...)``, in order."""
    from ._report import _scale

    h = hashlib.sha256(json.dumps([code_fingerprint(), int(run_id), aspect, int(seed), level, dataset.natural_level,
                                   _scale(dataset, aspect)]).encode())
    index = dataset.by_id()
    for v in verdicts:
        s = index.get(v.sample_id)
        row = [v.sample_id, v.aspect, v.score, v.explanation]
        if s is not None:
            row += [s.id, s.human.get(aspect), s.output, s.group_id, s.system_id]
        h.update(json.dumps(row, allow_nan=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def _plain(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"cannot store a {type(x).__name__} in a probe report")


def dumps(report: Any) -> str:
    """The report as JSON that reads back to an equal report (NaN kept as NaN, unlike ``to_dict``)."""
    return json.dumps(dataclasses.asdict(report), allow_nan=True, default=_plain, ensure_ascii=False)


def _decode(kind: Any, value: Any) -> Any:
    """``value`` read from JSON as an instance of ``kind`` (a frozen record, tuple, optional or plain type)."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        if len(options) == 1:
            return _decode(options[0], value)
        return value  # float | int and the like: JSON gave the number as it was written
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in value)
        return tuple(_decode(k, v) for k, v in zip(args, value))
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: _decode(hints[f.name], value[f.name]) for f in dataclasses.fields(kind)
                       if f.name in value})
    if kind is float and isinstance(value, int):
        return float(value)
    return value


def loads(text: str) -> Any:
    """A :class:`~judge_engine.probes.ProbeReport` from :func:`dumps`'s JSON."""
    from ._report import ProbeReport

    return _decode(ProbeReport, json.loads(text))


def stored(store: Any, run_id: int, key: str) -> Any | None:
    """The report kept for ``run_id`` under fingerprint ``key``; None when there is none (or it does not read)."""
    from .. import store_probes

    text = store_probes.get(store, run_id, key)
    if text is None:
        return None
    try:
        return loads(text)
    except (ValueError, TypeError, KeyError):  # written by a version whose records differed: compute again
        return None


def keep(store: Any, run_id: int, key: str, report: Any) -> bool:
    """Keep ``report`` under ``key`` (:func:`judge_engine.store_probes.put`); False when the store is read-only."""
    from .. import store_probes

    return store_probes.put(store, run_id, key, dumps(report))

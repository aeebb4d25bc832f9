"""Which transformation should lower which aspect: a table read from TOML (the packaged one, or a user's file)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._transforms import TRANSFORMATIONS

DEFAULT_TABLE = Path(__file__).with_name("table.toml")
"""The packaged table; ``judge-workbench stress --table FILE`` reads a copy a user edited instead."""

LOWER = "lower"
NEUTRAL = "neutral"
NONE = "none"
EXPECTATIONS = (LOWER, NEUTRAL, NONE)
"""What a transformation should do to an aspect: lower it, not matter, or nothing said (run only when named)."""


@dataclass(frozen=True)
class StressTable:
    """Aspect names and synonyms, and what each transformation should do to which aspect."""

    aspects: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Canonical aspect -> the names it goes by (lower case)."""
    lowers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Transformation -> canonical aspects it should lower."""
    neutral: tuple[str, ...] = ()
    """Transformations that should not matter to any aspect."""
    source: str = ""
    """The file it was read from."""


def _words(name: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", str(name).lower()).split())


def parse_table(doc: dict[str, Any], *, source: str = "") -> StressTable:
    """A :class:`StressTable` from a parsed TOML document; ValueError naming the entry that is wrong."""
    where = f" in {source}" if source else ""
    aspects = doc.get("aspects", {})
    if not isinstance(aspects, dict):
        raise ValueError(f"[aspects]{where} must be a table of aspect = [names]")
    canon: dict[str, tuple[str, ...]] = {}
    for name, names in aspects.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"aspects.{name}{where} must be a list of names, got {names!r}")
        canon[_words(name)] = tuple(dict.fromkeys([_words(name)] + [_words(n) for n in names]))
    lowers: dict[str, tuple[str, ...]] = {}
    neutral: list[str] = []
    entries = doc.get("transformations", {})
    if not isinstance(entries, dict):
        raise ValueError(f"[transformations]{where} must hold one [transformations.NAME] table per transformation")
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise ValueError(f"transformations.{name}{where} must be a table (lowers = [...] or neutral = true)")
        unknown = set(entry) - {"lowers", "neutral"}
        if unknown:
            raise ValueError(f"transformations.{name}{where} has unknown keys {', '.join(sorted(unknown))} "
                             "(known: lowers, neutral)")
        targets = entry.get("lowers", [])
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise ValueError(f"transformations.{name}.lowers{where} must be a list of aspect names")
        bad = [t for t in targets if _words(t) not in canon]
        if bad:
            raise ValueError(f"transformations.{name}.lowers{where} names aspects not under [aspects]: "
                             f"{', '.join(bad)} (known: {', '.join(canon)})")
        if entry.get("neutral") and targets:
            raise ValueError(f"transformations.{name}{where} cannot both lower aspects and be neutral")
        if entry.get("neutral"):
            neutral.append(name)
        else:
            lowers[name] = tuple(_words(t) for t in targets)
    return StressTable(aspects=canon, lowers=lowers, neutral=tuple(neutral), source=source)


def load_table(path: str | Path | None = None) -> StressTable:
    """The table in ``path`` (TOML), or the packaged one; ValueError when it cannot be read or is wrong."""
    where = Path(path).expanduser() if path is not None else DEFAULT_TABLE
    try:
        doc = tomllib.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the stress table {str(where)!r}: {getattr(exc, 'strerror', None) or exc}"
                         ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"the stress table {str(where)!r} is not valid TOML: {exc}") from None
    return parse_table(doc, source=str(where))


def canonical_aspect(table: StressTable, aspect: str) -> str | None:
    """The table's aspect ``aspect`` goes by: an exact name first, then a name found as whole words inside it."""
    wanted = _words(aspect)
    for canon, names in table.aspects.items():
        if wanted in names:
            return canon
    for canon, names in table.aspects.items():
        if any(re.search(rf"\b{re.escape(n)}\b", wanted) for n in names):
            return canon
    return None


def expectation(table: StressTable, name: str, aspect: str) -> str:
    """What transformation ``name`` should do to ``aspect``: :data:`LOWER`, :data:`NEUTRAL` or :data:`NONE`.

    The table decides for the transformations it lists; one it does not list keeps what it was registered with.
    """
    canon = canonical_aspect(table, aspect)
    if name in table.neutral:
        return NEUTRAL
    if name in table.lowers:
        return LOWER if canon in table.lowers[name] else NONE
    record = TRANSFORMATIONS.get(name)
    if record is None:
        return NONE
    if record.neutral:
        return NEUTRAL
    return LOWER if canon is not None and canon in {_words(a) for a in record.lowers} else NONE


def default_transformations(table: StressTable, aspect: str) -> list[str]:
    """The transformations run on ``aspect`` when none are named: those that should lower it, then the neutral
    ones (registered ones included). ValueError when the table knows no such aspect."""
    if canonical_aspect(table, aspect) is None:
        raise ValueError(f"aspect {aspect!r} is not in the stress table {table.source or ''} (its aspects: "
                         f"{', '.join(table.aspects)}): name the transformations to run, or add the aspect's name "
                         "under [aspects] of a copy of the table")
    found = {name: expectation(table, name, aspect) for name in TRANSFORMATIONS}
    return ([n for n, e in found.items() if e == LOWER] + [n for n, e in found.items() if e == NEUTRAL])

"""Rubric checks: how much real rubric text each rule refuses, and how much model junk it still catches.

Positives are rubric text people and strong models wrote for published
evaluations (``rubrics/real_rubrics.jsonl`` in the data folder: BiGGen-Bench
score rubrics and HypoEval's released hypotheses) and the example criteria,
hypotheses and task descriptions of the four papers, in our words
(``tests/data/rubric_paper_examples.jsonl``). Negatives are degenerate
generations collected from the embedded model, each with a label
(``tests/data/rubric_negatives.jsonl``). Every entry goes through the same
entry point a method uses (:func:`judge_engine.rubric_checks.check_entry`,
or :func:`~judge_engine.rubric_checks.check_criterion` for a "Name:
definition" criterion); positives of the hypothesis and criterion kinds go
through :func:`~judge_engine.rubric_checks.check_statement` too, the path
of the sentence form.

Targets: at most 1% of the positives refused on either path, and every
negative of the kinds that must be refused (copies of a shown text,
near-duplicates, placeholders, degenerate repetition) refused.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from . import result

TEST_DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
PAPER_EXAMPLES = TEST_DATA / "rubric_paper_examples.jsonl"
NEGATIVES = TEST_DATA / "rubric_negatives.jsonl"
MAX_POSITIVES_REFUSED = 0.01
"""The target: share of the positives any path may refuse."""
STATEMENT_OPENER = "A good response"
"""The opener the sentence-form path is measured with (a positive seldom starts with it: the body is the text)."""


@dataclass(frozen=True)
class LabelledEntry:
    """One rubric entry of the labelled set."""

    text: str
    kind: str
    positive: bool
    source: str
    label: str = ""
    """For a negative: what is wrong with it (``copy``, ``placeholder``, ...)."""
    must_refuse: bool = False
    """For a negative: whether a check must refuse it (not only flag it)."""
    shown: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()


@dataclass
class Tally:
    """What the checks made of the labelled set."""

    positives: int = 0
    negatives: int = 0
    must_refuse: int = 0
    positives_refused: Counter = field(default_factory=Counter)
    """Refusing rule -> positives it refused (the entry path)."""
    statement_refused: Counter = field(default_factory=Counter)
    """Refusing rule -> positives of the hypothesis and criterion kinds refused by the sentence-form path."""
    statement_checked: int = 0
    positives_flagged: Counter = field(default_factory=Counter)
    negatives_refused: Counter = field(default_factory=Counter)
    negatives_flagged: Counter = field(default_factory=Counter)
    must_refuse_missed: list[LabelledEntry] = field(default_factory=list)
    refused_examples: list[tuple[str, str]] = field(default_factory=list)
    """(rule, text) of positives refused, for the report."""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file; ValueError naming the file when it is missing or not JSON lines."""
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not JSON lines: {exc}") from None


def labelled_set(data_dir: Path | None = None) -> list[LabelledEntry]:
    """The positives (real rubrics, the papers' examples) and the negatives, from their files."""
    from ..data import default_data_dir

    real = (data_dir or default_data_dir()) / "rubrics" / "real_rubrics.jsonl"
    out = [LabelledEntry(r["text"], r["kind"], True, r["source"]) for r in read_jsonl(real)]
    out += [LabelledEntry(r["text"], r["kind"], True, f"{r['source']} (paper example)")
            for r in read_jsonl(PAPER_EXAMPLES)]
    out += [LabelledEntry(r["text"], r["kind"], False, r.get("origin", "embedded model"), r["label"],
                          bool(r["must_refuse"]), tuple(r.get("shown") or ()), tuple(r.get("accepted") or ()))
            for r in read_jsonl(NEGATIVES)]
    return out


def named_parts(text: str) -> tuple[str, str] | None:
    """(name, definition) of a "Name: definition" criterion with a short name, else None."""
    name, sep, definition = text.partition(":")
    if not sep or not definition.strip() or not 0 < len(name.split()) <= 6 or "?" in name:
        return None
    return name.strip(), definition.strip()


def check(entry: LabelledEntry):
    """The verdict of the entry point a method would use for this entry."""
    from ..rubric_checks import check_criterion, check_entry

    parts = named_parts(entry.text) if entry.kind == "criterion" else None
    if parts:
        return check_criterion(*parts, shown=entry.shown, accepted=entry.accepted)
    return check_entry(entry.text, kind=entry.kind, shown=entry.shown, accepted=entry.accepted)


def tally(entries: Sequence[LabelledEntry]) -> Tally:
    """Run every entry through the checks (a pure function of the entries)."""
    from ..rubric_checks import check_statement

    t = Tally()
    for e in entries:
        verdict = check(e)
        if e.positive:
            t.positives += 1
            if not verdict.ok:
                t.positives_refused[verdict.rule] += 1
                t.refused_examples.append((verdict.rule, e.text))
            t.positives_flagged.update(f.rule for f in verdict.flags)
            if e.kind in ("hypothesis", "criterion"):
                t.statement_checked += 1
                said = check_statement(e.text, opener=STATEMENT_OPENER, shown=e.shown, accepted=e.accepted)
                if not said.ok:
                    t.statement_refused[said.rule] += 1
                    t.refused_examples.append((f"{said.rule} (sentence form)", e.text))
            continue
        t.negatives += 1
        t.must_refuse += e.must_refuse
        if verdict.ok:
            t.negatives_flagged.update({f.rule for f in verdict.flags} or {"(passed)"})
            if e.must_refuse:
                t.must_refuse_missed.append(e)
        else:
            t.negatives_refused[verdict.rule] += 1
    return t


def add_arguments(parser) -> None:
    parser.add_argument("--data-dir", default=None, help="the data folder holding rubrics/ (default ../shared/data)")


def run(*, data_dir: str | None = None, **_: Any) -> dict[str, Any]:
    from ..rubric_checks import FLAG_RULES, REFUSING_RULES

    entries = labelled_set(Path(data_dir) if data_dir else None)
    t = tally(entries)
    rows = []
    for rule in (*REFUSING_RULES, *FLAG_RULES):
        refusing = rule in REFUSING_RULES
        rows.append({"rule": rule, "action": "refuses" if refusing else "flags",
                     "positives": (t.positives_refused if refusing else t.positives_flagged)[rule],
                     "positives_sentence_form": t.statement_refused[rule] if refusing else None,
                     "negatives": (t.negatives_refused if refusing else t.negatives_flagged)[rule]})
    refused = sum(t.positives_refused.values())
    said = sum(t.statement_refused.values())
    caught = t.must_refuse - len(t.must_refuse_missed)
    summary = {
        "positives": t.positives, "positives_refused": refused,
        "positives_refused_share": refused / t.positives if t.positives else None,
        "sentence_form_checked": t.statement_checked, "sentence_form_refused": said,
        "sentence_form_refused_share": said / t.statement_checked if t.statement_checked else None,
        "negatives": t.negatives, "negatives_refused": sum(t.negatives_refused.values()),
        "negatives_flagged_only": t.negatives - sum(t.negatives_refused.values()) - t.negatives_flagged["(passed)"],
        "negatives_passed_unflagged": t.negatives_flagged["(passed)"],
        "must_refuse": t.must_refuse, "must_refuse_refused": caught,
        "target": f"positives refused <= {MAX_POSITIVES_REFUSED:.0%} on each path; every must-refuse negative "
                  "refused",
        "target_met": (refused <= MAX_POSITIVES_REFUSED * t.positives
                       and said <= MAX_POSITIVES_REFUSED * t.statement_checked and caught == t.must_refuse),
    }
    notes = [f"refused positive ({rule}): {text[:120]}" for rule, text in t.refused_examples]
    notes += [f"must-refuse negative passed ({e.label}): {e.text[:120]}" for e in t.must_refuse_missed]
    return result("rubric-checks", config={"positives_files": ["rubrics/real_rubrics.jsonl", str(PAPER_EXAMPLES.name)],
                                          "negatives_file": NEGATIVES.name, "statement_opener": STATEMENT_OPENER},
                  rows=rows, summary=summary, notes=notes)

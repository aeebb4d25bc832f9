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

Issue 50 added, written by us: generated-looking junk of the kinds a
capable model's stub answered with (template slots, score lists,
restatements of the aspect, praise, stories, sentences about the raters,
near-copies of a judged text; ``tests/data/rubric_junk.jsonl``, each with
the aspect's words as topics) and rubric entries in 19 other languages
(``tests/data/rubric_foreign.jsonl``, positives).

Targets: at most 1% of the positives refused on either path, at least 95%
of the negatives refused or flagged, and every negative of the kinds that
must be refused (copies of a shown text, near-duplicates, template slots,
score lists, degenerate repetition) refused.
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
JUNK = TEST_DATA / "rubric_junk.jsonl"
FOREIGN = TEST_DATA / "rubric_foreign.jsonl"
MAX_POSITIVES_REFUSED = 0.01
"""The target: share of the positives any path may refuse."""
MIN_JUNK_CAUGHT = 0.95
"""The target: share of the junk (:data:`JUNK`) refused or flagged. The older negatives are sentence-form
statements whose rules need the opener and parent a method passes, which the file does not carry: their share is
reported, not held."""
JUNK_ORIGIN = "written for issue 50 (generated-looking junk, our own)"
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
    topics: tuple[str, ...] = ()
    """The judged text's label and the aspect's name and definition, as a method passes them."""


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
    by_label: dict[str, Counter] = field(default_factory=dict)
    """Label of a negative ("template_slot", "score_list", ...) or "positive" -> refused / flagged / passed."""
    junk_passed: list[LabelledEntry] = field(default_factory=list)
    """Negatives neither refused nor flagged."""
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
    out += [LabelledEntry(r["text"], r["kind"], True, f"{r['source']} ({r['language']})")
            for r in read_jsonl(FOREIGN)]
    out += [LabelledEntry(r["text"], r["kind"], False, r.get("origin", "embedded model"), r["label"],
                          bool(r["must_refuse"]), tuple(r.get("shown") or ()), tuple(r.get("accepted") or ()),
                          tuple(r.get("topics") or ()))
            for path in (NEGATIVES, JUNK) for r in read_jsonl(path)]
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
    output = entry.topics[0] if entry.topics else ""  # the judged text's label first, as a method passes them
    if parts:
        return check_criterion(*parts, shown=entry.shown, accepted=entry.accepted, topics=entry.topics,
                               output=output)
    return check_entry(entry.text, kind=entry.kind, shown=entry.shown, accepted=entry.accepted, topics=entry.topics,
                       output=output)


def tally(entries: Sequence[LabelledEntry]) -> Tally:
    """Run every entry through the checks (a pure function of the entries)."""
    from ..rubric_checks import check_statement

    t = Tally()
    for e in entries:
        verdict = check(e)
        outcome = "refused" if not verdict.ok else "flagged" if verdict.flags else "passed"
        t.by_label.setdefault("positive" if e.positive else e.label, Counter())[outcome] += 1
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
            if not verdict.flags:
                t.junk_passed.append(e)
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
    for rule in dict.fromkeys((*REFUSING_RULES, *FLAG_RULES)):  # model_check both refuses and flags
        refusing = rule in REFUSING_RULES
        rows.append({"rule": rule, "action": "refuses" if refusing else "flags",
                     "positives": (t.positives_refused if refusing else t.positives_flagged)[rule],
                     "positives_sentence_form": t.statement_refused[rule] if refusing else None,
                     "negatives": (t.negatives_refused if refusing else t.negatives_flagged)[rule]})
    refused = sum(t.positives_refused.values())
    said = sum(t.statement_refused.values())
    caught = t.must_refuse - len(t.must_refuse_missed)
    junk = [e for e in entries if not e.positive and e.source == JUNK_ORIGIN]
    junk_caught = len(junk) - sum(e.source == JUNK_ORIGIN for e in t.junk_passed)
    summary = {
        "positives": t.positives, "positives_refused": refused,
        "positives_refused_share": refused / t.positives if t.positives else None,
        "sentence_form_checked": t.statement_checked, "sentence_form_refused": said,
        "sentence_form_refused_share": said / t.statement_checked if t.statement_checked else None,
        "negatives": t.negatives, "negatives_refused": sum(t.negatives_refused.values()),
        "negatives_flagged_only": t.negatives - sum(t.negatives_refused.values()) - t.negatives_flagged["(passed)"],
        "negatives_passed_unflagged": t.negatives_flagged["(passed)"],
        "negatives_refused_or_flagged_share": (t.negatives - len(t.junk_passed)) / t.negatives if t.negatives else None,
        "junk": len(junk), "junk_refused_or_flagged": junk_caught,
        "junk_refused_or_flagged_share": junk_caught / len(junk) if junk else None,
        "must_refuse": t.must_refuse, "must_refuse_refused": caught,
        "by_label": {label: dict(c) for label, c in sorted(t.by_label.items())},
        "target": f"positives refused <= {MAX_POSITIVES_REFUSED:.0%} on each path; negatives refused or flagged >= "
                  f"{MIN_JUNK_CAUGHT:.0%} of {JUNK.name}; every must-refuse negative refused",
        "target_met": (refused <= MAX_POSITIVES_REFUSED * t.positives
                       and said <= MAX_POSITIVES_REFUSED * t.statement_checked and caught == t.must_refuse
                       and junk_caught >= MIN_JUNK_CAUGHT * len(junk)),
    }
    notes = [f"refused positive ({rule}): {text[:120]}" for rule, text in t.refused_examples]
    notes += [f"must-refuse negative passed ({e.label}): {e.text[:120]}" for e in t.must_refuse_missed]
    notes += [f"negative passed unflagged ({e.label}): {e.text[:120]}" for e in t.junk_passed]
    notes += [f"{label}: " + ", ".join(f"{k} {c[k]}" for k in ("refused", "flagged", "passed"))
              for label, c in sorted(t.by_label.items())]
    return result("rubric-checks", config={"positives_files": ["rubrics/real_rubrics.jsonl", PAPER_EXAMPLES.name,
                                                             FOREIGN.name],
                                          "negatives_files": [NEGATIVES.name, JUNK.name], "statement_opener": STATEMENT_OPENER},
                  rows=rows, summary=summary, notes=notes)

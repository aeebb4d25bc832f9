"""Rubric checks on text written apart from the rules (issue 65): a tuning half and a held-out half.

``tests/data/rubric_written_apart.jsonl`` holds 120 junk entries (instructions to the evaluator, hedges,
contradictory pairs, keyword lists, the aspect restated, statements about the scale or the raters, refusals,
placeholders, empty) and 120 real criteria (the papers' forms, code review, markup, formulas), in eight
languages, written before any rule of issue 65 and split at random (``random.Random(65)``) into a tuning half and
a held-out half, committed before the rules changed. Rules are tuned on the tuning half only: this bench names
the entries of the tuning half it gets wrong and only counts those of the held-out half.

Each entry goes through the entry point a method uses (:func:`judge_engine.bench.rubric_checks.check`). A junk
entry is caught when it is refused or flagged; a real entry is wrong when it is refused (its flags are counted
and reported). Shares come with Wilson 95% intervals.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from scipy import stats

from . import result
from .rubric_checks import TEST_DATA, LabelledEntry, check, read_jsonl

WRITTEN_APART = TEST_DATA / "rubric_written_apart.jsonl"
SPLITS = ("tuning", "held_out")
MIN_JUNK_CAUGHT = 0.90
"""The target on the held-out half: share of junk refused or flagged."""
MAX_REAL_REFUSED = 0.02
"""The target on the held-out half: share of real text refused."""


def wilson(successes: int, n: int) -> tuple[float, float] | None:
    """The Wilson 95% interval of ``successes`` of ``n`` (None for n = 0)."""
    if n == 0:
        return None
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def load(path: Path = WRITTEN_APART) -> list[dict[str, Any]]:
    """The entries of the set, each with ``split``, ``positive``, ``category`` and ``language``."""
    return read_jsonl(path)


def verdict_of(record: dict[str, Any], llm: Any = None):
    """The verdict of the entry point a method would use for one record of the set; with ``llm``, combined with
    the model's own check (:mod:`judge_engine.rubric_model_check`) through it."""
    entry = LabelledEntry(record["text"], record["kind"], bool(record["positive"]), record.get("origin", ""),
                          record.get("category", ""), topics=tuple(record.get("topics") or ()))
    verdict = check(entry)
    if llm is None:
        return verdict
    from ..rubric_model_check import ask, combine

    topics = record.get("topics") or ["", ""]
    [said] = ask(llm, [record["text"]], kind=record["kind"], aspect_name=topics[1] if len(topics) > 1 else "")
    return combine(verdict, said)


LABEL_ANSWERS = {"instruction": "instructs_evaluator", "refusal": "refuses", "hedge": "hedges",
                 "contradiction": "contradicts", "keywords": "lists_keywords", "scale_raters": "names_scale_or_raters"}
"""The answer a capable model gives an entry of each kind of junk (the others are not about quality)."""


def label_stub(records: Sequence[dict[str, Any]]):
    """A capable-model stub that answers the check request from the entry's label (issue 65 item 4's measure of
    the plumbing: the schema, the reading, the combination with the rules, through the one LLM path)."""
    from ..llm import LLMConfig, make_llm
    from ..llm.fake import FakeBackend
    from ..rubric_model_check import QUESTIONS

    by_text = {r["text"]: r for r in records}

    def respond(messages, params) -> str:
        content = messages[-1]["content"]
        inside = content.split("<<<ENTRY>>>\n", 1)[-1].split("\n<<<END ENTRY>>>", 1)[0]
        record = by_text.get(inside)
        answers = {q: False for q in QUESTIONS}
        if record is None or record["positive"]:
            answers["about_quality"] = record is not None
        elif record["category"] in LABEL_ANSWERS:
            answers[LABEL_ANSWERS[record["category"]]] = True
        return json.dumps({**answers, "language": record["language"] if record else "unknown", "reason": "stub"})

    return make_llm(LLMConfig(), backend=FakeBackend(respond))


def share(k: int, n: int) -> dict[str, Any]:
    low_high = wilson(k, n)
    return {"k": k, "n": n, "share": k / n if n else None,
            "wilson95": [round(low_high[0], 3), round(low_high[1], 3)] if low_high else None}


def outcome(verdict) -> str:
    return "refused" if not verdict.ok else "flagged" if verdict.flags else "passed"


def measure(records: Sequence[dict[str, Any]], split: str, llm: Any = None) -> dict[str, Any]:
    """Junk caught and real refused or flagged on one half, overall, per kind of junk and per language (with
    ``llm``, rules and the model's own check)."""
    half = [r for r in records if r["split"] == split]
    outcomes = [(r, outcome(verdict_of(r, llm))) for r in half]
    junk = [(r, o) for r, o in outcomes if not r["positive"]]
    real = [(r, o) for r, o in outcomes if r["positive"]]
    per_kind: dict[str, Counter] = {}
    per_language: dict[str, Counter] = {}
    for r, o in junk:
        per_kind.setdefault(r["category"], Counter())[o] += 1
        per_language.setdefault(r["language"], Counter())[o] += 1
    return {
        "junk_caught": share(sum(o != "passed" for _, o in junk), len(junk)),
        "junk_refused": share(sum(o == "refused" for _, o in junk), len(junk)),
        "real_refused": share(sum(o == "refused" for _, o in real), len(real)),
        "real_flagged": share(sum(o == "flagged" for _, o in real), len(real)),
        "junk_by_kind": {k: dict(c) for k, c in sorted(per_kind.items())},
        "junk_by_language": {k: dict(c) for k, c in sorted(per_language.items())},
        "_misses": [(r, o) for r, o in junk if o == "passed"] + [(r, o) for r, o in real if o != "passed"],
    }


def add_arguments(parser) -> None:
    parser.add_argument("--show-held-out", action="store_true",
                        help="also name the held-out entries the checks get wrong (for the final report only)")
    parser.add_argument("--model-stub", action="store_true",
                        help="add the model's own check, served by a stub that answers from the entries' labels")


def run(*, show_held_out: bool = False, model_stub: bool = False, **_: Any) -> dict[str, Any]:
    records = load()
    llm = label_stub(records) if model_stub else None
    halves = {split: measure(records, split, llm) for split in SPLITS}
    notes = []
    for split, m in halves.items():
        misses = m.pop("_misses")
        if split == "tuning" or show_held_out:
            for r, o in misses:
                what = "junk passed" if not r["positive"] else f"real {o}"
                notes.append(f"{split}: {what} ({r['category']}, {r['language']}): {r['text'][:120]}")
    held = halves["held_out"]
    summary = {split: {k: v for k, v in m.items()} for split, m in halves.items()}
    summary["target"] = (f"held-out: junk refused or flagged >= {MIN_JUNK_CAUGHT:.0%}, real refused <= "
                         f"{MAX_REAL_REFUSED:.0%}")
    summary["target_met"] = (held["junk_caught"]["share"] >= MIN_JUNK_CAUGHT
                             and held["real_refused"]["share"] <= MAX_REAL_REFUSED)
    rows = [{"split": split, "junk_caught": f"{m['junk_caught']['k']}/{m['junk_caught']['n']}",
             "junk_caught_wilson95": m["junk_caught"]["wilson95"],
             "real_refused": f"{m['real_refused']['k']}/{m['real_refused']['n']}",
             "real_refused_wilson95": m["real_refused"]["wilson95"],
             "real_flagged": f"{m['real_flagged']['k']}/{m['real_flagged']['n']}"} for split, m in halves.items()]
    return result("rubric-split", config={"file": WRITTEN_APART.name, "model_stub": model_stub}, rows=rows,
                  summary=summary, notes=notes)

"""Views of a run for the page (pure, no I/O): the bank replayed from events, per-hypothesis test scores."""

from __future__ import annotations

from typing import Any, Sequence

from ...records import RunEvent, Verdict
from .replies import READ_SOURCES
from .state import StoredHypothesis

def bank_from_events(events: Sequence[RunEvent | dict[str, Any]]) -> dict[str, Any]:
    """Replay a run's stored events (``Store.run_events``, or the rows of ``Store.events``) into the live
    picture of the bank.

    Returns ``{"hypotheses": [row, ...], "wrong_bank": int, "w_max": int | None,
    "refreshes": int, "refinement_rounds": int, "literature_skipped": bool,
    "parse_failures": int, "selected": [key, ...], "replies": {json, text,
    unread}, "score_sources": {source: n}, "warnings": [warning, ...]}``;
    each row has key, text, origin, reward, n_evaluated, train_pearson,
    coverage (share of training items it scored), fitness (coverage-aware),
    selectable, reason (why not selectable) and status (in bank, dropped,
    duplicate, selected).
    """
    rows: dict[str, dict[str, Any]] = {}

    def fresh() -> dict[str, Any]:
        return {"wrong_bank": 0, "w_max": None, "refreshes": 0, "refinement_rounds": 0,
                "literature_skipped": False, "parse_failures": 0, "selected": [],
                "replies": {k: 0 for k in READ_SOURCES}, "score_sources": {}, "warnings": []}

    view: dict[str, Any] = fresh()

    def row(key: str, **fields: Any) -> dict[str, Any]:
        r = rows.setdefault(key, {"key": key, "text": "", "origin": "", "reward": None, "n_evaluated": 0,
                                  "train_pearson": None, "coverage": None, "fitness": None, "selectable": None,
                                  "reason": "", "status": "in bank"})
        r.update({k: v for k, v in fields.items() if v is not None})
        return r

    for event in events:
        kind, p = (event.kind, event.payload) if isinstance(event, RunEvent) else (event["kind"], event["payload"])
        if kind == "fit_started":  # a resumed run fits again (from the cache): show that fit only
            rows.clear()
            view.update(fresh())
        elif kind in ("hypothesis_proposed", "hypothesis_added"):
            if kind == "hypothesis_added" or p.get("origin") != "wrong_examples":
                row(p["key"], text=p.get("text"), origin=p.get("origin"), reward=p.get("reward"),
                    n_evaluated=p.get("n_evaluated"))
        elif kind == "reward_updated":
            row(p["key"], reward=p.get("reward"), n_evaluated=p.get("n_evaluated"))
        elif kind == "wrong_bank_added":
            view["wrong_bank"], view["w_max"] = p["size"], p.get("w_max")
        elif kind == "bank_refreshed":
            view["wrong_bank"] = 0
            view["refreshes"] += 1
            for key in p.get("dropped", []):
                row(key, status="dropped")
        elif kind == "refinement_round" and not p.get("skipped"):
            view["refinement_rounds"] += 1
        elif kind == "duplicate_removed":
            row(p["key"], status="duplicate")
        elif kind == "literature_skipped":
            view["literature_skipped"] = True
        elif kind == "parse_failures":
            view["parse_failures"] += int(p.get("missing", 0))
        elif kind == "curated_hypotheses":
            keys = p.get("keys", [])
            for key, text, origin in zip(keys, p.get("texts", [None] * len(keys)), p.get("origins", [None] * len(keys))):
                row(key, text=text, origin=origin or "curated")
        elif kind == "hypothesis_evaluated":
            row(p["key"], train_pearson=p.get("train_pearson"), coverage=p.get("coverage"), fitness=p.get("fitness"),
                selectable=p.get("selectable"), reason=p.get("reason"))
        elif kind == "reply_read":
            source = p.get("source", "unread")
            view["replies"][source] = view["replies"].get(source, 0) + 1
        elif kind == "scores_read":
            for source, n in (p.get("sources") or {}).items():
                view["score_sources"][source] = view["score_sources"].get(source, 0) + int(n)
        elif kind == "warning":
            view["warnings"].append({"code": p.get("code", ""), "message": p.get("message", ""),
                                     **({"count": p["count"]} if "count" in p else {})})
        elif kind == "selection":
            view["selected"] = [s["key"] for s in p.get("selected", [])]
            for key in view["selected"]:
                row(key, status="selected")
    view["hypotheses"] = [r for r in rows.values() if r["text"] or r["status"] == "selected"]
    return view


def per_hypothesis_scores(verdicts: Sequence[Verdict], selected: Sequence[StoredHypothesis]) -> dict[str, Any]:
    """Matrix of per-hypothesis scores over test items: ``{"keys", "samples", "scores"}`` (None = missing)."""
    keys = [h.key for h in selected]
    matrix = []
    for v in verdicts:
        by_key = {p["key"]: p["score"] for p in v.metadata.get("per_hypothesis", [])}
        matrix.append([by_key.get(k) for k in keys])
    return {"keys": keys, "samples": [v.sample_id for v in verdicts], "scores": matrix}


def rescored_by(runs: Sequence[Any], run_id: int, text: str) -> Any:
    """The newest HypoEval run after ``run_id`` (``runs``: run records, newest first) started with the hypothesis
    ``text`` among its given ones, i.e. the re-score that measures it (None when none was started)."""
    for r in runs:
        if r.method == "hypoeval" and r.id > run_id and any(
                h.get("text") == text for h in r.params.get("hypotheses") or ()):
            return r
    return None

"""Which of a judge's own entries the rubric checks flagged, and who accepted them (issue 50 item 3).

A generated entry the checks flag (:mod:`judge_engine.rubric_checks`) is not refused: it may be selected
into the judge. It is never chosen silently: the run's summary (:func:`judge_engine.runs.run_warnings`) and
its trust report count the judge's flagged entries, and the method's page marks each with its flags and
asks a person to accept it. An acceptance is an audit entry of the run's curation owner
(:func:`judge_engine.curation.accept_flags`), with who and when; it holds for the text that was accepted,
so an entry edited since is asked about again only if it is flagged again.

"The judge's entries" are what its prompts or aggregator use, not the whole pool it was chosen from:
HypoEval's selected hypotheses, Active-Critic's task description and criteria, HD-Eval's nodes that its
aggregator takes as inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["FlaggedEntry", "judge_entries", "flagged_in_judge"]


@dataclass(frozen=True)
class FlaggedEntry:
    """One entry of a judge with the rubric checks' flags."""

    key: str
    """Its curation key: a hypothesis key, ``task`` or ``c1``, ``c2``, ... (Active-Critic), a node id."""
    text: str
    """The text the flags were raised on."""
    flags: tuple[dict[str, str], ...]
    """``{rule, reason}`` of each flag."""

    def flag_text(self) -> str:
        """"reason (rule); ..." in words."""
        return "; ".join(f"{f.get('reason', '')} ({str(f.get('rule', '')).replace('_', ' ')})" for f in self.flags)


def judge_entries(method: str, state: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (curation key, text) of every entry the judge uses; empty for a method with no generated entries."""
    if method == "hypoeval":
        return [(str(h.get("key") or ""), str(h.get("text") or "")) for h in state.get("selected") or ()]
    if method == "active_critic":
        task = state.get("task_description") or ""
        return ([("task", task)] if task else []) + [
            (f"c{i}", str(name)) for i, name in enumerate((state.get("criteria") or {}).keys(), 1)]
    if method == "hd_eval" and state.get("tree"):
        used = set(state.get("features") or ())
        return [(n["id"], n.get("name") or "") for n in state["tree"].get("nodes") or () if n.get("id") in used]
    return []


def flagged_in_judge(method: str, state: Mapping[str, Any]) -> list[FlaggedEntry]:
    """The judge's entries that carry rubric-check flags, in the judge's order."""
    flagged = state.get("flagged") or ()
    if method == "hypoeval":
        by_text: dict[str, list[dict[str, str]]] = {}
        for f in flagged:
            by_text.setdefault(str(f.get("text") or ""), []).extend(f.get("flags") or [])
        return [FlaggedEntry(key, text, tuple(by_text[text])) for key, text in judge_entries(method, state)
                if by_text.get(text)]
    if method == "active_critic":
        out = []
        task = state.get("task_description") or ""
        for f in flagged:
            if f.get("stage") == "task description" and task and f.get("text") == task and f.get("flags"):
                out.append(FlaggedEntry("task", task, tuple(f["flags"])))
        by_name = {str(f.get("name")): f for f in flagged if f.get("stage") == "criteria" and f.get("flags")}
        for key, name in judge_entries(method, state):
            if key != "task" and name in by_name:
                out.append(FlaggedEntry(key, name, tuple(by_name[name]["flags"])))
        return out
    if method == "hd_eval" and state.get("tree"):
        used = set(state.get("features") or ())
        return [FlaggedEntry(n["id"], n.get("name") or "", tuple(n["flags"])) for n in state["tree"].get("nodes") or ()
                if n.get("id") in used and n.get("flags")]
    return []

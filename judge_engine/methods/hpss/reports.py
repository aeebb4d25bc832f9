"""What an HPSS search says about itself in words: the fit's warnings, why no strategy was adopted, and the
trace a live view reads from the run's events.

Moved out of :mod:`judge_engine.methods.hpss.method` (issue 46 item 7), which re-exports :func:`search_trace`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ... import metrics
from ...records import RunEvent
from ..base import judge_warning
from .advantages import SearchState
from .auxiliaries import Auxiliaries
from .strategy import Strategy


def search_trace(events: Sequence[RunEvent]) -> dict[str, Any]:
    """What a run's events say about its search so far (for a live view).

    ``events`` are the run's events (``Store.run_events``). Returns ``started``
    (payload of ``hpss_started`` or None), ``evaluated`` (payloads in order),
    the latest ``advantages`` and ``population``, ``aux_missing`` counts per
    kind, the ``best`` evaluated payload (None until one is selectable) and
    any ``notes`` (stall, no selectable strategy, a fixed strategy that is not selectable).
    """
    out: dict[str, Any] = {"started": None, "evaluated": [], "advantages": None, "population": None,
                           "aux_missing": {}, "best": None, "notes": []}
    for e in events:
        kind, payload = e.kind, e.payload
        if kind == "hpss_started":
            out["started"] = payload
        elif kind == "hpss_evaluated":
            out["evaluated"].append(payload)
            # only a selectable strategy can be the best (runs from before coverage counted: any defined one)
            if payload.get("fitness") is not None and payload.get("selectable", True) and (
                    out["best"] is None or payload["fitness"] > out["best"]["fitness"]):
                out["best"] = payload
        elif kind == "hpss_advantages":
            out["advantages"] = payload["advantages"]
        elif kind == "hpss_population":
            out["population"] = payload["members"]
        elif kind == "hpss_auxiliary_missing":
            out["aux_missing"][payload["kind"]] = out["aux_missing"].get(payload["kind"], 0) + 1
        elif kind in ("hpss_stalled", "hpss_no_fitness", "hpss_no_judge", "hpss_not_selectable"):
            out["notes"].append(payload["message"])
    return out


def why_not_selectable(sel: metrics.SelectionFitness) -> str:
    """Why a strategy is not selectable, in words."""
    if sel.reason:
        return sel.reason
    return f"Spearman {sel.correlation:+.2f} on the {sel.n_scored} items it scored (above 0 needed)"


def no_judge_message(selection: dict[Strategy, metrics.SelectionFitness], n: int) -> str:
    """Why the search adopted no strategy: how many failed coverage, how many had no positive correlation."""
    low_cover = sum(1 for s in selection.values() if s.reason.startswith("scored"))
    undefined = sum(1 for s in selection.values() if not math.isfinite(s.correlation))
    not_positive = sum(1 for s in selection.values()
                       if not s.reason and math.isfinite(s.correlation) and s.correlation <= 0)
    finite = [s.correlation for s in selection.values() if not s.reason]
    best = f"; the highest Spearman among eligible ones was {max(finite):+.2f}" if finite else ""
    return (f"HPSS adopted no judge: none of the {len(selection)} evaluated strategies scored at least "
            f"{metrics.MIN_SELECTION_COVERAGE:.0%} of the {n} validation items with a Spearman correlation "
            f"above 0 ({low_cover} scored too few items, {undefined} had no defined correlation, "
            f"{not_positive} correlated at or below 0{best}). Try a larger validation set or a stronger model, "
            "or fix a strategy (fixed_strategy) to accept one yourself.")


def fit_warnings(history: Sequence[dict[str, Any]], aux: Auxiliaries, state: "SearchState", budget: int, *,
                  fixed: bool) -> list[dict[str, Any]]:
    """Fit-time warnings for the run summary: readings from alternatives, missing auxiliaries, unselectable
    strategies, a stalled search."""
    out = []
    alternatives = sum(h["from_alternatives"] for h in history)
    if alternatives:
        out.append(judge_warning("scores_from_alternatives", (
            f"{alternatives} validation ratings were read from the alternatives of a follow-up reply that "
            "gave no number (probability-weighted over the scale)"), alternatives))
    missing_aux = sum(aux.failures.values())
    if missing_aux:
        out.append(judge_warning("auxiliary_missing", (
            "auxiliary generations with nothing usable: " + ", ".join(f"{k} {v}" for k, v in aux.failures.items())
            + "; the items that needed them were not scored"), missing_aux))
    unselectable = sum(1 for h in history if not h["selectable"])
    if unselectable and not fixed:
        out.append(judge_warning("strategies_not_selectable", (
            f"{unselectable} of {len(history)} evaluated strategies were not selectable (too few validation "
            "items scored, or a Spearman at or below 0)"), unselectable))
    if not fixed and state.cost < budget:
        out.append(judge_warning("search_stalled", (
            f"the search stopped after {len(history)} evaluations, before its budget: every proposal was an "
            "already explored strategy")))
    return out

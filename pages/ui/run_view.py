"""What every method page shows about its runs: the picker, live progress (with Stop), the baseline table, edit
history.

The engine decides what is comparable (:func:`judge_engine.runs.runs_on_same_split`)
and what curation history is (:mod:`judge_engine.curation`); these pieces
only draw it, the same way on every page.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import pandas as pd
import streamlit as st

from judge_engine import curation, runs
from judge_engine.llm import LLMConfig
from judge_engine.methods import METHODS
from judge_engine.records import RunEvent, RunRecord, RunSummary
from judge_engine.runs import effective_status
from judge_engine.runs.cost import against
from judge_engine.runs.exits import WorkerExit, last_death, refusal, repeated_death
from judge_engine.runs.supervisor import found_gone
from judge_engine.store import NotFound, Store
from pages.ui import auth, messages, once, session, tables, trust, widgets

EventLines = Callable[[list[RunEvent]], list[str]]
"""Turns a run's events into the lines its progress panel shows (newest last)."""
LiveView = Callable[[Any, RunRecord], None]
"""Draws what a method shows of a run as it grows (store, run), below the progress, at every poll."""


def deleted_meanwhile(store: Store, key: str, ids: list[int]) -> None:
    """Says so when the run this page showed (the session value ``key``) was deleted since: a click on it
    (Resume, Stop, a re-score) then finds the page without it, and one message says why."""
    shown = st.session_state.get(key)
    if not isinstance(shown, int) or shown in ids:
        return
    try:
        store.get_run(shown)
    except NotFound:
        st.warning(f"Run #{shown} no longer exists (it was deleted meanwhile); nothing was done to it.")
        st.session_state.pop(key, None)
        st.session_state.pop(f"_w_{key}", None)


def pick_run(method: str, key: str, *, label: str = "Run", keep: Callable[[RunRecord], bool] | None = None,
             empty: str = "No run yet: start one above.") -> RunRecord | None:
    """The method's runs, newest first; the chosen one (judge included), or None with ``empty`` shown.

    ``keep`` sees each run as :meth:`Store.runs` reads it: without its judge.
    """
    store = session.get_store()
    found = [r for r in store.runs(limit=500) if r.method == method and (keep is None or keep(r))]
    deleted_meanwhile(store, key, [r.id for r in found])
    if not found:
        st.info(empty)
        return None
    ids = [r.id for r in found]
    if st.session_state.get(key) not in ids:
        widgets.set_value(key, ids[0])
    labels = {r.id: tables.run_label(r) for r in found}
    run_id = widgets.bound(st.selectbox, label, key, options=ids, format_func=labels.get,
                          help="Newest first. A run started on this page shows up here at once.")
    try:
        return store.run(run_id)
    except NotFound:  # deleted between the list and this read
        st.warning(f"Run #{run_id} no longer exists (it was deleted meanwhile); choose another.")
        return None


STOP_HELP = ("Interrupts the run's worker, as Ctrl-C would. What it already computed is kept (the fitted judge, "
             "the scored items and every LLM answer in the cache): resume it from the Runs page to continue "
             "without paying again for the calls already made.")


def resume(store: Store, run: RunRecord, *, force: bool, key: str) -> None:
    """Resume ``run`` once however fast Resume is clicked (:func:`judge_engine.runs.resume` with a token that
    holds the run's version, so a run that stops again can be resumed again); the page is drawn again."""
    token = once.token(f"{key}_resume_{run.id}", (run.id, run.version, force))
    try:
        started = runs.resume(store, run.id, api_key=session.api_key(), force=force, token=token, reach=True)
    except NotFound:
        st.error(f"Run #{run.id} no longer exists (it was deleted meanwhile); nothing was started.")
        return
    except ValueError as exc:
        st.error(messages.escape_markdown(f"Run #{run.id} was not resumed: {exc}"))
        return
    if started.worker_error:
        st.error(messages.escape_markdown(f"The worker could not start: {started.worker_error}"))
        return
    # the Runs page holds its progress panel open this long after a resume, while the worker starts
    st.session_state.setdefault("runs_resumed", {})[run.id] = time.time()
    st.rerun()


def stop_button(run_id: int, *, key: str) -> None:
    """Stop run ``run_id`` (queued or running) through the engine; the outcome is flashed beside the panel
    (:func:`stopped_message`) and the page drawn again."""
    if not st.button("Stop run", key=f"{key}_stop_{run_id}", help=STOP_HELP):
        return
    actor = auth.actor()  # a viewer is refused here, before any signal
    with st.spinner(f"Stopping run #{run_id}..."):
        try:  # a second click finds the run ended by the first: stop_run then touches nothing and says so
            stopped = runs.stop_run(session.get_store(), run_id, actor=actor)
        except NotFound:
            st.error(f"Run #{run_id} no longer exists (it was deleted meanwhile); nothing was stopped.")
            return
    messages.flash("success" if stopped.stopped else "info", stopped.message, at=f"run_stopped_{run_id}")
    st.rerun()


def stopped_message(run_id: int) -> None:
    """Where :func:`stop_button`'s outcome appears: at the top of the run's panel."""
    messages.show_flash(at=f"run_stopped_{run_id}")


def worker_death(store: Store, run: RunRecord) -> WorkerExit | None:
    """How ``run``'s worker died, when that is the run's last word: the end its supervisor recorded, or one found
    now (stored running, its process gone); None for a run that ended otherwise."""
    death = found_gone(store, run) or last_death(store, run.id)
    return death if death is not None and run.message in ("", death.reason) else None


def death_details(store: Store, run: RunRecord, death: WorkerExit | None) -> bool:
    """The dead worker's last lines of output, in an expander; and, when it died by a signal twice at the same
    step (:func:`judge_engine.runs.exits.repeated_death`), why a resume would most likely die again and what to
    do. Returns True then: the page's Resume becomes Resume anyway."""
    if death is None:
        return False
    if death.log_tail:
        with st.expander("The worker's last lines of output"):
            st.code(death.log_tail, language=None)
    repeated = repeated_death(store, run.id)
    if repeated is not None:
        st.error(messages.escape_markdown(refusal(run.id, repeated, cli=False)))
    return repeated is not None


def cost_caption(run: RunRecord) -> None:
    """What the run cost so far beside what was expected when it was made (issue 46 item 5)."""
    made_before = (" (the run was made before estimates were kept)" if not run.estimate else
                   "; 'expected': the estimate made before the start, which counts every request as new (requests "
                   "answered by the cache are free and not counted here)")
    so_far = "so far" if run.status in tables.LIVE_STATUSES else "of the run"
    st.caption(messages.escape_markdown(f"Cost {so_far}: {against(run.ledger, run.estimate)}{made_before}."))


def sharing_note(store: Store, run: RunRecord) -> None:
    """Says so when other runs are using the same one-call-at-a-time model as ``run`` right now
    (:func:`judge_engine.runs.busy_with`): it takes turns with them and goes slower."""
    llm = LLMConfig.from_dict(run.llm)
    note = runs.busy_note(runs.busy_with(store, llm, exclude=run.id), llm, what="this run", running=True)
    if note:
        st.caption(messages.escape_markdown(note))


def progress_text(status: str, stage: str, done: int, total: int) -> str:
    """A live run's progress in words: its stage and steps done; "preparing" before it has counted its steps
    (never "0/0")."""
    if not total:
        return f"{status}: preparing" + (f" ({stage})" if stage and stage not in ("starting", status) else "")
    return f"{status}: {stage or 'working'} ({done}/{total})"


def progress(run_id: int, *, lines: EventLines | None = None, live_view: LiveView | None = None, key: str) -> str:
    """Progress of a run, redrawn every 2 s while it is live; returns its status at the first draw.

    ``live_view`` draws the method's own view of the run (e.g. HypoEval's
    bank) at every poll. When the run finishes while the page is open, the
    whole page is drawn again so its results appear. A live run offers Stop (:func:`stop_button`) and
    says when other runs share its model (:func:`sharing_note`). A failed or interrupted run says why and
    offers Resume (what was done is kept; cached calls are free), except a run whose method found no
    judge (a ``ValueError`` from ``fit``), which says so and offers none.
    """
    try:
        first_run = session.get_store().run(run_id)
    except NotFound:
        st.warning(f"Run #{run_id} no longer exists (it was deleted meanwhile).")
        return ""
    first = effective_status(first_run)
    live = first in tables.LIVE_STATUSES
    every = runs.poll_interval(first_run)  # fast while the run is young: a run answered by the cache ends in seconds

    @st.fragment(run_every=f"{every}s" if live else None)
    def panel() -> None:
        store = session.get_store()
        try:
            run = store.run(run_id)
        except NotFound:
            st.warning(f"Run #{run_id} no longer exists (it was deleted meanwhile).")
            return
        status = effective_status(run)
        if status in tables.LIVE_STATUSES and runs.poll_interval(run) > every:
            st.rerun()  # once, when the run is no longer young: the page then reads it at the slower pace
        stopped_message(run_id)
        if status in tables.LIVE_STATUSES:
            done, total = run.done, run.total
            st.progress(min(1.0, done / total) if total else 0.0,
                        text=messages.escape_markdown(progress_text(status, run.stage, done, total)))
            if lines is not None:
                for line in lines(store.run_events(run_id))[-8:]:
                    st.text(line)
            ledger = run.ledger  # llm.LedgerTotals: all 0 before the run's first call
            st.caption(f"{ledger.calls:,} requests sent to the model, {ledger.cache_hits:,} answered from the "
                       f"cache (free), {ledger.prompt_tokens:,} prompt tokens. You can leave this page; the run "
                       "continues.")
            cost_caption(run)
            sharing_note(store, run)
            stop_button(run_id, key=key)
        elif status == "finished":
            if live:  # it finished while this page was open: draw the results
                st.rerun()
            trust.finished_box(trust.run_trust(store, run), f"Run #{run_id} finished.")
            cost_caption(run)
        elif status == "failed" and (why := runs.ended_without_judge(run)):
            st.error(messages.escape_markdown(
                f"Run #{run_id} ended without a judge: {why} Resuming would "
                "reach the same end; change the settings (or the data) and start a new run."))
        else:
            death = worker_death(store, run)
            reason = run.message or (death.reason if death else "the worker stopped")
            st.warning(messages.escape_markdown(f"Run #{run_id} {status}: {reason}. "
                                    "Resume continues where it stopped; calls already made are not paid again."))
            force = death_details(store, run, death)
            if st.button("Resume anyway" if force else "Resume", key=f"{key}_resume_{run_id}"):
                resume(store, run, force=force, key=key)
        if live_view is not None:
            live_view(store, run)

    panel()
    return first


def baseline_table(run: RunRecord, *, key: str, methods: tuple[str, ...] | None = None) -> None:
    """The run's test correlations beside every finished run on exactly its items, human score and backend."""
    others = [r for r in runs.runs_on_same_split(session.get_store(), run, methods=methods) if r.status == "finished"]
    rows = []
    for r in [run] + others:
        summary = r.summary or RunSummary()
        c = summary.levels.get(summary.level) or summary.correlations or {}
        title = METHODS[r.method].title if r.method in METHODS else r.method
        if r.params.get("fixed_strategy"):
            title += " (fixed prompt)"
        rows.append({"run": f"#{r.id}" + (" (this run)" if r.id == run.id else ""), "method": title,
                     "level": summary.level if r.summary else "", "pearson": c.get("pearson"),
                     "spearman": c.get("spearman"), "kendall": c.get("kendall"), "scored": summary.scored,
                     "missing": summary.missing})
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"{key}_baselines",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("pearson", "spearman", "kendall")})
    if not others:
        st.caption("No finished run on exactly these test items, human score and backend yet (a baseline "
                   "started with this run appears here when it finishes).")
    else:
        st.caption("Every finished run scored on exactly these test items, against the same human score, by the "
                   "same model; correlations at the dataset's natural level.")


def history_table(owner_id: str, *, key: str, limit: int = 500) -> None:
    """Who changed which curated item of a run, when, from what to what (newest first)."""
    changes = curation.history(session.get_store(), owner_id, limit=limit)
    if not changes:
        return
    with st.expander(f"Edit history ({len(changes)} changes)"):
        st.dataframe(pd.DataFrame([{"when": tables.fmt_time(c.when), "who": c.actor, "item": c.key,
                                    "action": c.action, "before": c.before, "after": c.after} for c in changes]),
                     hide_index=True, key=f"{key}_history")

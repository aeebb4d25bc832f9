"""The stress-test panel: does a finished run's judge score perturbed test items lower (:mod:`judge_engine.stress`)?

It makes new calls (each perturbed twin is a new prompt), so it starts only on a click, after saying how many.
The report is kept in the session per run version, settings and seed, so a rerun of the page shows it again
without recomputing; a second click with the same settings is answered by the LLM call cache.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from judge_engine import stress
from judge_engine.llm import LLMError
from judge_engine.methods import get_method
from judge_engine.records import RunRecord
from judge_engine.store import Store
from pages.ui.messages import escape_markdown

VERDICT_COLOURS = {
    stress.SENSITIVE: "background-color: #d4edda",  # green: it noticed what it must
    stress.STEADY: "background-color: #d4edda",
    stress.NOT_SHOWN: "background-color: #fff3cd",  # amber: blind to it, or too few items to tell
    stress.TOO_FEW: "background-color: #e2e3e5",
    stress.REACTS: "background-color: #f8d7da",  # red: moved by a change that should not matter
    stress.NO_EXPECTATION: "",
}


def report_frame(report: stress.StressReport) -> pd.DataFrame:
    """One row per transformation: what it does, what it should do, the figures and the verdict."""

    def pct(x: float | None) -> str:
        return "–" if x is None else f"{x:.0%}"

    rows = []
    for r in report.results:
        ci = r.mean_change_ci
        rows.append({"transformation": r.name, "what it does": r.description, "should": r.expected,
                     "verdict": r.verdict, "items": r.n,
                     "scored lower": pct(r.share_lower)
                     + (f" [{pct(r.share_lower_ci[0])}, {pct(r.share_lower_ci[1])}]" if r.share_lower_ci[0]
                        is not None else ""),
                     "mean change [95% CI]": "–" if r.mean_change is None else f"{r.mean_change:+.2f}"
                     + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci[0] is not None else ""),
                     "missing": r.missing, "unchanged": r.unchanged})
    return pd.DataFrame(rows, columns=["transformation", "what it does", "should", "verdict", "items",
                                       "scored lower", "mean change [95% CI]", "missing", "unchanged"])


def _colour(frame: pd.DataFrame):
    return frame.style.map(lambda v: VERDICT_COLOURS.get(v, ""), subset=["verdict"])


def stress_panel(store: Store, run: RunRecord, *, key: str) -> None:
    """Choose transformations, run them on click with a progress bar, show the table with coloured verdicts."""
    if run.status != "finished" or run.split is None:
        st.caption(escape_markdown(f"Run #{run.id} is {run.status}: only a finished run can be stress-tested."))
        return
    table = stress.load_table()
    try:
        defaults = stress.default_transformations(table, run.aspect)
    except ValueError:  # an aspect the table does not know: the user names the transformations
        defaults = []
        st.caption(escape_markdown(f"The stress table does not know the aspect {run.aspect!r}: choose the "
                                   "transformations to run (reported without an expected direction unless "
                                   "neutral)."))
    names = st.multiselect("Transformations", list(stress.TRANSFORMATIONS), default=defaults, key=f"{key}_names",
                           format_func=lambda n: f"{n} ({stress.expectation(table, n, run.aspect)})",
                           help="Which should lower which aspect is the table judge_engine/stress/table.toml; "
                                "the CLI takes an edited copy (judge-workbench stress --table FILE).")
    c1, c2 = st.columns(2)
    n_test = len(run.split.test_ids)
    items = int(c1.number_input("Items", 1, max(1, n_test), min(stress.STRESS_ITEMS, max(1, n_test)),
                                key=f"{key}_items"))
    seed = int(c2.number_input("Seed", 0, 10_000, 0, key=f"{key}_seed"))
    per_pass = int(get_method(run.method, (run.judge or {}).get("params")).estimate_calls(0, items).get("score",
                                                                                                        items))
    st.caption(escape_markdown(f"At most {per_pass * (len(names) + 1)} calls on the run's backend (the items as "
                               "they are come from the cache); a second look with the same settings costs nothing."))
    kept = f"{key}_report_{run.id}_{int(run.version or 0)}_{'|'.join(names)}_{items}_{seed}"
    if st.button("Run stress test", key=f"{key}_go", disabled=not names):
        bar = st.progress(0.0, text="stress test")

        def progress(done: int, total: int, stage: str) -> None:
            bar.progress(min(1.0, done / total) if total else 1.0, text=stage)

        try:
            st.session_state[kept] = stress.stress_run(store, run.id, transformations=names, table=table,
                                                       items=items, seed=seed, progress=progress)
        except (LLMError, ValueError, KeyError) as exc:  # a backend that is down, a transformation that raises
            st.error(escape_markdown(f"The stress test stopped: {exc}"))
            return
        finally:
            bar.empty()
    report = st.session_state.get(kept)
    if report is None:
        return
    st.dataframe(_colour(report_frame(report)), hide_index=True, key=f"{key}_table")
    st.caption(escape_markdown(stress.stress_lines(report)[0] + ". Sensitive: the whole 95% interval of the mean "
                               "change is below zero; steady: a change that should not matter did not move the "
                               "scores (two-sided p >= 0.025)."))
    for r in report.results:
        if r.verdict == stress.REACTS:
            st.warning(escape_markdown(f"Run #{run.id}'s judge reacts to {r.name} ({r.description}), a change that "
                                       "should not matter."))
        elif r.verdict == stress.NOT_SHOWN:
            st.warning(escape_markdown(f"Run #{run.id}'s judge is not shown to notice {r.name} "
                                       f"({r.description}), which should lower {run.aspect}."))

"""The probes panel: where and why a finished judge disagrees with the humans (:mod:`judge_engine.probes`).

Shown beside the trust panel on the Runs page and for each run on the Compare page. Everything but the
stability probe is computed from the stored verdicts (no call) and cached per run version; the stability
probe makes new calls, so it starts only on a click, after saying how many.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from judge_engine import probes, store_probes
from judge_engine.llm import LLMError
from judge_engine.methods import get_method
from judge_engine.records import RunRecord
from judge_engine.store import Store
from pages.ui.messages import escape_markdown


@st.cache_data(max_entries=64, show_spinner="Probing the judge's verdicts...")
def _probes(path: str, run_id: int, version: int, inputs: tuple) -> probes.ProbeReport:
    # computed once per run and kept in the store (probe_run), read back while its fingerprint holds: this
    # cache only spares the reading on a rerun
    return probes.probe_run(Store(path), run_id)


def run_probes(store: Store, run: RunRecord) -> probes.ProbeReport | None:
    """The probe report of a finished ``run`` (cached until the run, its dataset or its labels change); None with a
    caption otherwise."""
    if run.status != "finished":
        return None
    try:
        return _probes(str(store.path), run.id, int(run.version or 0), store_probes.inputs_stamp(store, run.dataset))
    except (ValueError, KeyError) as exc:  # a dataset deleted since: say so, no traceback
        st.caption(escape_markdown(f"No probes for run #{run.id}: {exc}"))
        return None


def _figure(f: probes.Figure) -> str:
    return probes.fig_text(f)


def slices_frame(report: probes.ProbeReport) -> pd.DataFrame:
    """One row per slice tested against the rest, flagged ones first (:func:`judge_engine.probes.disagreements`)."""
    rows = [{"by": s.by, "slice": s.name, "items": s.n, "finding": s.finding if s.flagged else "no difference",
             "q (BH)": round(s.q, 4), "p": round(s.p, 4), "Spearman inside [95% CI]": _figure(s.spearman),
             "mean |rank difference|": s.mean_abs_rank_difference}
            for s in report.disagreements.slices]
    return pd.DataFrame(rows, columns=["by", "slice", "items", "finding", "q (BH)", "p", "Spearman inside [95% CI]",
                                       "mean |rank difference|"])


def items_frame(items: list[probes.Disagreement]) -> pd.DataFrame:
    """Items with both scores, the judge's explanation and the output (all shown as plain text cells)."""
    return pd.DataFrame([{"item": d.sample_id, "human": d.human, "judge": d.judge,
                          "rank difference": d.rank_difference, "explanation": d.explanation[:500],
                          "output": d.output[:500]} for d in items],
                        columns=["item", "human", "judge", "rank difference", "explanation", "output"])


def _slice_items(report: probes.ProbeReport, chosen: probes.Slice, verdicts: dict[str, Any]) -> pd.DataFrame:
    top = {d.sample_id: d for d in report.disagreements.top}
    rows = [top.get(i) or verdicts.get(i) for i in chosen.sample_ids]
    return items_frame([r for r in rows if r is not None])


def headline_frame(reports: dict[int, probes.ProbeReport]) -> pd.DataFrame:
    """One row per run, a few short columns so it fits the page: what each probe found (the Compare overview).

    Only slices that survive the Benjamini-Hochberg correction are named; the others are counted in the panel.
    """
    rows = []
    for run_id, r in reports.items():
        flagged = r.disagreements.flagged
        ratio = r.collapse.sd_ratio.value
        rows.append({"run": run_id, "items": r.n, f"Spearman ({r.level})": _figure(r.disagreements.overall),
                     "follows length": "yes" if r.length.flagged else "no",
                     "collapsed": ("yes" if r.collapse.collapsed else "no")
                     + (f" (sd x{ratio:.2f})" if ratio is not None else ""),
                     "slices that differ": "none" if not flagged else
                     f"{flagged[0].by} {flagged[0].name}" + (f" +{len(flagged) - 1}" if len(flagged) > 1 else "")})
    return pd.DataFrame(rows)


def probe_warnings(run: RunRecord, report: probes.ProbeReport) -> None:
    """The probes' warnings of one run, each with one line of advice (length, collapse, slices)."""
    for w in probes.probe_warnings(report):
        st.warning(escape_markdown(f"Run #{run.id} {w.text}.") + "  \n" + escape_markdown(f"Advice: {w.advice}."))


def probes_panel(store: Store, run: RunRecord, *, key: str, report: probes.ProbeReport | None = None,
                 warnings: bool = True) -> None:
    """Every probe of a finished run, in an expander; ``key`` makes its widgets unique on the page.

    ``report`` when the caller holds it already; ``warnings=False`` when the caller showed them."""
    report = report or run_probes(store, run)
    if report is None:
        return
    with st.expander(f"Where run #{run.id} disagrees with the humans (probes on {report.n} test items)"):
        for line in probes.summary_lines(report):
            st.markdown("- " + escape_markdown(line))
        if warnings:
            probe_warnings(run, report)
        d = report.disagreements
        if d.slices:
            st.markdown("**Slices tested against the rest of the items, those that differ first**")
            st.dataframe(slices_frame(report), hide_index=True)
            names = [f"{s.by}: {s.name} ({s.n} items)" for s in d.slices]
            # closed until asked: a slice of a large run holds hundreds of items with their texts, and four runs'
            # worth of them drawn on every visit cost the Compare page more than every probe together
            picked = st.selectbox("Open a slice", names, index=None, placeholder="Choose a slice to see its items",
                                  key=f"{key}_slice")
            if picked is not None:
                chosen = d.slices[names.index(picked)]
                st.dataframe(_slice_items(report, chosen, _all_items(store, run)), hide_index=True)
        if d.top:
            st.markdown("**The items it ranks furthest from the humans**")
            st.dataframe(items_frame(list(d.top)), hide_index=True)
        t = report.themes
        for side, themes in (("over-scored", t.over), ("under-scored", t.under)):
            if themes:
                st.markdown(f"**What the explanations of {side} items talk about**")
                st.dataframe(pd.DataFrame([{"theme": ", ".join(th.terms), "explanations": th.count,
                                            "examples": ", ".join(th.examples)} for th in themes]),
                             hide_index=True)
        stability_section(store, run, report, key=key)


@st.cache_data(max_entries=16, show_spinner=False)
def _items(path: str, run_id: int, version: int) -> dict[str, probes.Disagreement]:
    from judge_engine import runs

    s = Store(path)
    run = s.run(run_id)
    dataset = runs.human_dataset(s, run.dataset, run.human_aggregate)
    index = dataset.by_id()
    out = {}
    for v in s.load_verdicts(run_id):
        sample = index.get(v.sample_id)
        if sample is None or v.missing or run.aspect not in sample.human:
            continue
        out[v.sample_id] = probes.Disagreement(v.sample_id, float(sample.human[run.aspect]), float(v.score),
                                               float("nan"), v.explanation, sample.output)
    return out


def _all_items(store: Store, run: RunRecord) -> dict[str, probes.Disagreement]:
    return _items(str(store.path), run.id, int(run.version or 0))


def stability_section(store: Store, run: RunRecord, report: probes.ProbeReport, *, key: str) -> None:
    """The stability probe: new calls, so it runs on a click, after saying how many; draws are cached."""
    st.markdown("**Stability** (re-scores a sample of the test items, varying one thing)")
    from judge_engine.methods import METHODS

    varies = ["sampling"] + (["order"] if METHODS[run.method].ordered_state else [])
    vary = st.radio("Vary between repeats", varies, horizontal=True, key=f"{key}_stab_vary",
                    format_func=lambda v: {"sampling": "sampling (temperature 0.7, a seed each)",
                                           "order": "order of the items inside the prompts (greedy)"}[v],
                    help="Reported apart, so an effect of position shows as such.")
    c1, c2 = st.columns(2)
    items = int(c1.number_input("Items", 2, max(2, report.n + report.n_missing),
                                min(probes.STABILITY_ITEMS, max(2, report.n + report.n_missing)),
                                key=f"{key}_stab_items"))
    repeats = int(c2.number_input("Repeats", 2, 10, probes.STABILITY_REPEATS, key=f"{key}_stab_repeats"))
    calls = probes.stability_calls(get_method(run.method, (run.judge or {}).get("params")), items, repeats)
    st.caption(escape_markdown(f"At most {calls} calls on the run's backend; draws asked before come from the "
                               "cache, so a second look costs nothing and an interrupted one resumes."))
    if not st.button("Measure stability", key=f"{key}_stab_go"):
        return
    bar = st.progress(0.0, text="stability")

    def progress(done: int, total: int, stage: str) -> None:
        bar.progress(min(1.0, done / total) if total else 1.0, text=stage)

    try:
        found = probes.probe_stability(store, run.id, items=items, repeats=repeats, vary=vary, progress=progress)
    except (LLMError, ValueError, KeyError) as exc:  # a backend that is down, a run changed since: no traceback
        st.error(escape_markdown(f"The stability probe stopped: {exc}"))
        return
    bar.empty()
    for line in probes.stability_lines(found):
        if line.startswith("warning:"):
            st.warning(escape_markdown(line))
        else:
            st.markdown("- " + escape_markdown(line))

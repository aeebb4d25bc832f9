"""The trust panel: whether to rely on a finished judge (:mod:`judge_engine.trust`), shown beside its result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from judge_engine.records import RunRecord
from judge_engine.store import Store
from pages.ui.glossary import plural
from pages.ui.messages import escape_markdown
from pages.ui.tables import _ci

if TYPE_CHECKING:  # for the annotations only: judge_engine.trust (and compare under it) loads when _trust computes
    # a report, not with every page that shows one
    from judge_engine.trust import TrustReport


@st.cache_data(max_entries=64, show_spinner=False)
def _trust(path: str, run_id: int, stamp: tuple[Any, ...]) -> TrustReport:
    from judge_engine.trust import trust_report

    return trust_report(Store(path), run_id)


def run_trust(store: Store, run: RunRecord) -> TrustReport | None:
    """The :class:`judge_engine.trust.TrustReport` of a finished ``run``; None when it has none (not finished).

    Cached until the run or any finished run of its dataset (a new baseline on the same split) changes.
    """
    if run.status != "finished":
        return None
    others = tuple((r.id, r.version, r.status) for r in store.runs(dataset=run.dataset, limit=10_000))
    # an acceptance of a flagged entry changes no run version but does change the report's flagged rows
    from judge_engine import curation

    accepted = tuple(c.when for c in curation.history(store, curation.owner(run.method, run.id))
                     if c.action == curation.ACCEPT_FLAGS)
    try:
        return _trust(str(store.path), run.id, (run.version, others, accepted))
    except (ValueError, KeyError) as exc:  # a dataset deleted since, a run without verdicts: say so, no traceback
        st.caption(escape_markdown(f"No trust report for run #{run.id}: {exc}"))
        return None


def _fig(x: float | None) -> str:
    return "undefined" if x is None else f"{x:+.3f}"


def trust_frame(report: TrustReport) -> pd.DataFrame:
    """The figures behind a trust verdict: one row each, all as text (the table mixes correlations and counts)."""
    rows = []
    t = report.training
    if t is not None:
        from judge_engine.trust import training_p_value

        p = training_p_value(t)
        # K beside the figure: a best of 11 on 27 items is not the evidence one candidate's figure would be
        rows.append({"figure": f"training: {t.measure}", "value": _fig(t.value),
                     "interval / p": "" if p != p else (f"one-sided p = {p:.3f}" if p >= 0.001 else "p < 0.001")
                     + f" (best of {plural(t.candidates, 'candidate')} tried)",
                     "rests on": f"{t.n_scored} of {t.n_items} items scored"
                     + (f"; {t.selection}" if t.selection else "")})
        for text, value in t.parts:
            rows.append({"figure": f"  hypothesis: {text[:120]}", "value": _fig(value), "interval / p": "",
                         "rests on": ""})
    else:
        rows.append({"figure": "training", "value": "none", "interval / p": "",
                     "rests on": "this method learns nothing from the training items"})
    for fig in (report.test, report.sample):
        if fig is None:
            continue
        groups = f", {plural(fig.n_groups, 'group')}" if fig.level == "group" else (
            f", {plural(fig.n_systems, 'system')}" if fig.level == "system" else
            f" from {plural(fig.n_groups, 'source')}, whole sources resampled" if fig.resampled == "groups" else "")
        rows.append({"figure": f"test {report.statistic}, {fig.level} level", "value": _fig(fig.value),
                     "interval / p": fig.ci_note or _ci(list(fig.ci)), "rests on": f"{plural(fig.n, 'item')}{groups}"})
    rows.append({"figure": "missing test scores", "value": f"{report.missing_rate:.0%}", "interval / p": "",
                 "rests on": f"{report.missing} of {report.n} items"})
    for f in report.flagged:  # a flag is no figure, but the judge rests on the entry: said with who accepted it
        rows.append({"figure": f"  flagged entry {f.get('key')}: {str(f.get('text') or '')[:120]}",
                     "value": f"accepted by {f['accepted_by']}" if f.get("accepted_by") else "not accepted",
                     "interval / p": "", "rests on": "; ".join(str(x.get("rule") or "") for x in f.get("flags") or ())})
    for b in report.baselines:
        drew = {"groups": ", whole sources resampled", "items": ", items resampled",
                "nothing": ": too few sources for a test (no evidence either way)"}.get(b.resampled, "")
        rows.append({"figure": f"minus baseline {b.label} ({b.level} level)", "value": _fig(b.diff),
                     "interval / p": "" if b.p is None else f"p = {b.p:.3f}: " + baseline_words(b.p, b.significantly_below),
                     "rests on": f"{plural(b.n, 'item')} on the same split{drew}"})
    return pd.DataFrame(rows, columns=["figure", "value", "interval / p", "rests on"])


def baseline_words(p: float, below: bool) -> str:
    """What a paired test's p beside a difference from a baseline says, in words."""
    if below:
        return "significantly below the baseline"
    if p < 0.05:
        return "significantly different from the baseline"
    return "no significant difference (a gap this size often arises by chance on these items)"


TRUST_COLUMNS = {
    "figure": "What is measured: the training figure the judge was chosen on, its test correlation with the "
              "humans, its missing scores, flagged entries, and its difference from each baseline.",
    "value": "The figure: a correlation (+1 = same order as the humans, 0 = none), a share, or a difference of "
             "correlations (negative = below the baseline).",
    "interval / p": "95% bootstrap interval of the figure, or a p-value: the chance of a figure at least this "
                    "far from zero (or from the baseline) if there were no real effect; small (< 0.05) = "
                    "unlikely to be chance. A baseline's p is adjusted for the number of baselines compared "
                    "(Holm), since any one of them below would warn.",
    "rests on": "The items (and groups: inputs with several outputs) the figure is computed on.",
}


def trust_panel(report: TrustReport | None, *, compact: bool = False) -> None:
    """Whether to trust a finished judge: a green box only when no check warns, the reasons otherwise, the figures.

    ``compact`` (one run among several, e.g. the Compare page): the box and a one-line caption, no table.
    """
    if report is None:
        return
    name = f"Run #{report.run_id} ({report.method})"
    if report.verdict == "ok":
        base = (f"not significantly below {len(report.baselines)} baseline run(s) on the same split"
                if report.baselines else "no baseline run on the same split to compare with")
        corr = ("the test interval is above zero and the training figure is significant for the "
                f"{report.training.candidates} candidate(s) tried" if report.training
                else "the test interval is above zero")
        st.success(escape_markdown(f"{name}: trust ok: {corr}; {base}."))
    elif report.verdict != "warning":
        # no evidence either way is not a warning about the judge, but it is no go-ahead either
        st.info(escape_markdown(f"{name}: {report.verdict}:") + "\n"
                + "\n".join(f"- {escape_markdown(r)}" for r in report.reasons))
    else:
        # reasons can quote generated text (a hypothesis): escaped, never rendered as Markdown
        st.warning(escape_markdown(f"{name}: do not rely on this judge without a closer look:") + "\n"
                   + "\n".join(f"- {escape_markdown(r)}" for r in report.reasons))
    if compact:
        test = report.test
        st.caption(escape_markdown(f"test {report.statistic} ({test.level if test else '-'}) "
                         f"{_fig(test.value if test else None)}; missing {report.missing} of {report.n}"
                         + (f"; training {_fig(report.training.value)} on {report.training.n_scored} items"
                            if report.training else "")))
        return
    # no key: a keyed table made a later button click on the HPSS page go unseen in AppTest
    st.dataframe(trust_frame(report), hide_index=True,
                 column_config={c: st.column_config.TextColumn(help=h) for c, h in TRUST_COLUMNS.items()})
    st.caption("Training: the correlation the judge was chosen on, on the items named, tested against the best of "
               "the K candidates the method tried (unrelated candidates included) or measured out-of-fold. "
               "Test: at the dataset's "
               "natural level with a 95% bootstrap interval, or none when too few groups stand behind it (the "
               "sample level is then shown beside it). Baselines: direct scoring and G-Eval runs on the same test "
               "items and backend, paired bootstrap of the difference.")


def finished_box(report: TrustReport | None, text: str) -> None:
    """A run's "finished" notice: green only when its trust report does not warn."""
    if report is not None and report.verdict == "warning":
        st.warning(escape_markdown(f"{text} The trust checks warn about this judge (see the reasons with its "
                                   "results)."))
    elif report is not None and report.verdict != "ok":
        st.info(escape_markdown(f"{text} Trust: {report.verdict} (see the reasons with its results)."))
    else:
        st.success(escape_markdown(text))

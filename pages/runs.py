"""Runs: start a baseline run, follow its progress, and read its meta-evaluation."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("Runs")

import inspect
import json
import time

from judge_engine import export, figures
from judge_engine.llm import LLMConfig
from judge_engine.methods import METHODS, describe_parameters, get_method
from judge_engine.records import RunRecord
from judge_engine.runs import RunSpec, fast_defaults, effective_status
from judge_engine.store import NotFound
from pages.ui import (app_frame, messages, probes, readers, run_view, session, start_form, tables, trust,
                      widgets)
from pages.ui import glossary


# After Resume, keep polling this long while the worker starts and marks the run running.
RESUME_GRACE_S = 30.0

store = session.get_store()

messages.show_flash()


# --------------------------------------------------------------------------- start a run
def summary_line(cls) -> str:
    return (inspect.getdoc(cls) or "").split("\n\n")[0]


def json_parameters(method: str, text: str) -> dict:
    """The parameters typed as JSON; ValueError naming the field and the problem."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"Other parameters (JSON): {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(value, dict):
        raise ValueError("Other parameters (JSON) must be an object such as {\"name\": value}")
    get_method(method, value)  # an unknown name is refused with the method's parameters and a close match
    return value


st.subheader("Start a run")
c1, c2 = st.columns(2)
dataset = start_form.choose_dataset("runs", slot=c1)
method = c2.selectbox("Method", list(METHODS), key="runs_method", format_func=lambda m: METHODS[m].title or m,
                      help="Each method's parameters, paper defaults and allowed values: "
                           "python -m judge_engine methods NAME")
st.caption(messages.escape_markdown(summary_line(METHODS[method])))
if dataset is not None:
    aspect = start_form.choose_aspect("runs", dataset)
    split = start_form.split_fields("runs", dataset, train=30, test=20)
    drawable = start_form.other_parameters(method, ())
    with st.expander("Method parameters (paper defaults)", expanded=len(drawable) <= 6):
        params = start_form.parameter_fields(method, f"runs_{method}", drawable,
                                             values=fast_defaults(method, session.llm_config()))
        rest = [d.name for d in describe_parameters(METHODS[method]) if not start_form.drawable(d)]
        extra_text = st.text_area("Other parameters (JSON)", key=f"runs_json_{method}", height=68,
                                  disabled=not rest, placeholder="{}",
                                  help="Parameters that are lists or texts, as a JSON object"
                                       + (f": {', '.join(rest)}." if rest else " (this method has none)."))
    try:
        extra = json_parameters(method, extra_text)
    except ValueError as exc:
        st.error(messages.escape_markdown(str(exc)))
    else:
        spec = RunSpec(method=method, dataset=dataset.name, aspect=aspect.name,
                       params={**start_form.changed(method, params), **extra}, train_size=split.train_size,
                       test_size=split.test_size, seed=split.seed, llm=session.llm_config())
        if start_form.estimate_box(spec) is not None and start_form.start_button("Start run", "runs_start"):
            run_id = start_form.start(spec, key="runs_start")
            if run_id is not None:
                widgets.set_value("runs_run_id", run_id)
                st.rerun()


# --------------------------------------------------------------------------- one run
def resumed_recently(run_id: int) -> bool:
    return time.time() - st.session_state.get("runs_resumed", {}).get(run_id, 0.0) < RESUME_GRACE_S


def resume(run: RunRecord, *, force: bool = False) -> None:
    """Resume ``run`` once however fast Resume is clicked; force only when asked: a run whose worker died twice at
    one step (run_view.death_details)."""
    run_view.resume(store, run, force=force, key="runs")


def progress_panel(run_id: int) -> None:
    """Status, progress and cost so far; polls every 2 s while the run is live."""
    first = store.run(run_id)
    live = effective_status(first) in tables.LIVE_STATUSES or resumed_recently(run_id)

    @st.fragment(run_every="2s" if live else None)
    def panel() -> None:
        try:
            run = session.get_store().run(run_id)
        except NotFound:
            st.warning(f"Run #{run_id} no longer exists (it was deleted meanwhile).")
            return
        status = effective_status(run)
        waiting = status not in tables.LIVE_STATUSES and status != "finished" and resumed_recently(run_id)
        ledger = run.ledger  # llm.LedgerTotals: all 0 before the run's first call
        run_view.stopped_message(run_id)
        if status in tables.LIVE_STATUSES or waiting:
            done, total = run.done, run.total
            stage = "waiting for the worker to start" if waiting else (run.stage or status)
            st.progress(min(1.0, done / total) if total else 0.0,
                        text=run_view.progress_text(status if not waiting else "starting", stage, done, total))
            age = time.time() - (run.heartbeat or time.time())
            st.caption(f"Last heartbeat {age:.0f} s ago. You can leave this page; the run continues.")
            if status in tables.LIVE_STATUSES:
                run_view.sharing_note(session.get_store(), run)
                run_view.stop_button(run_id, key="runs")
        elif status == "finished":
            seconds = run.summary.seconds if run.summary else 0.0
            trust.finished_box(trust.run_trust(session.get_store(), run), f"Finished ({seconds:.1f} s of work).")
        else:
            death = run_view.worker_death(session.get_store(), run)
            text = run.message or (death.reason if death else "The worker stopped before the run finished.")
            (st.error if status == "failed" else st.warning)(messages.escape_markdown(f"Run {status}: {text}"))
            force = run_view.death_details(session.get_store(), run, death)
            st.caption("Resume continues where it stopped: the fitted judge and scored samples are kept and "
                       "cached LLM calls are not paid again.")
            if st.button("Resume anyway" if force else "Resume", key=f"runs_resume_{run_id}", type="primary"):
                resume(run, force=force)
        if status != "finished":
            m = st.columns(5)
            m[0].metric("LLM calls", ledger.calls, help=glossary.HELP["LLM calls"])
            m[1].metric("Cache hits", ledger.cache_hits, help=glossary.HELP["Cache hits"])
            m[2].metric("Prompt tokens", ledger.prompt_tokens, help=glossary.HELP["Prompt tokens"])
            m[3].metric("Completion tokens", ledger.completion_tokens, help=glossary.HELP["Completion tokens"])
            m[4].metric("Cost ($)", f"{float(ledger.dollars):.4f}", help=glossary.HELP["Cost ($)"])
            run_view.cost_caption(run)
        if live and status not in tables.LIVE_STATUSES and not waiting:
            st.rerun()  # the run just ended: redraw the page once with its results

    panel()


def results(run: RunRecord) -> None:
    """Meta-evaluation, cost, scatter and verdicts of a finished run."""
    summary = run.summary
    if summary is None:
        st.warning("This run has no summary.")
        return
    st.markdown("#### Can this judge be trusted?")
    trust.trust_panel(trust.run_trust(store, run))
    probes.probes_panel(store, run, key="runs_probes")
    st.markdown("#### Correlation with human scores")
    frame = tables.correlation_frame(summary)
    if frame.empty:
        st.warning("No correlation could be computed (no verdict with a score?).")
    else:
        st.dataframe(frame, hide_index=True, key=f"runs_corr_{run.id}",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("pearson", "spearman", "kendall")})
        st.caption("95% bootstrap percentile intervals. The natural level is the one the papers report for this "
                   "dataset. Items without a judge score are excluded, never imputed.")
        defined = any((c or {}).get(k) is not None for c in summary.levels.values()
                      for k in ("pearson", "spearman", "kendall"))
        if defined:
            st.plotly_chart(figures.correlation_bars(summary.levels, natural=summary.level),
                            key=f"runs_bars_{run.id}")
        else:
            st.info("No correlation is defined: the judge gave (almost) every item the same score, or too few "
                    "replies parsed.")

    n = summary.n
    for warning in summary.warnings:
        st.warning(messages.escape_markdown(warning.message))
    m = st.columns(4)
    m[0].metric("Missing scores", f"{summary.missing} of {n}",
                help="Test items without a score (the reasons are listed above); they are excluded from the "
                     "correlations, never imputed.")
    m[1].metric("Parse failures", f"{summary.parse_failures} of {n}",
                help="Replies that were there but gave no score that could be read.")
    m[2].metric("Seconds", f"{float(summary.seconds):.1f}", help=glossary.HELP["Seconds"])
    m[3].metric("Cost ($)", f"{float(summary.ledger.dollars):.4f}", help=glossary.HELP["Cost ($)"])
    m = st.columns(4)
    m[0].metric("LLM calls", summary.ledger.calls, help=glossary.HELP["LLM calls"])
    m[1].metric("Cache hits", summary.ledger.cache_hits, help=glossary.HELP["Cache hits"])
    m[2].metric("Prompt tokens", summary.ledger.prompt_tokens, help=glossary.HELP["Prompt tokens"])
    m[3].metric("Completion tokens", summary.ledger.completion_tokens, help=glossary.HELP["Completion tokens"])
    run_view.cost_caption(run)

    try:
        dataset = readers.human_dataset(store, run.dataset, run.human_aggregate)
    except NotFound:
        dataset = None
        st.warning(messages.escape_markdown(f"Dataset {run.dataset} is no longer stored; human scores cannot be shown."))
    verdicts = readers.load_verdicts(store, run)
    table = tables.verdicts_frame(dataset, run.aspect, verdicts)
    if dataset is not None:
        aspect = dataset.aspect(run.aspect)
        st.plotly_chart(figures.human_vs_judge_scatter(
            table["human"].tolist(), table["judge"].tolist(), ids=table["sample id"].tolist(),
            aspect=aspect.name, low=aspect.low, high=aspect.high), key=f"runs_scatter_{run.id}")

    st.markdown("#### Verdicts")
    st.dataframe(table, hide_index=True, key=f"runs_verdicts_{run.id}",
                 column_config={"parse failure": st.column_config.CheckboxColumn(),
                                "human": st.column_config.NumberColumn(format="%.3f"),
                                "judge": st.column_config.NumberColumn(format="%.3f")})
    # the engine's table (the same as `python -m judge_engine verdicts`): texts and replies are hostile, and
    # its CSV neutralises every cell a spreadsheet would run as a formula
    download = export.verdicts_text(export.build_verdict_table(dataset, run.aspect, verdicts), "csv")
    st.download_button("Download verdicts (CSV)", download.encode("utf-8"),
                       file_name=f"run-{run.id}-verdicts.csv", mime="text/csv", key=f"runs_dl_{run.id}")
    st.caption(messages.escape_markdown("The CSV has the item's input and output, human and judge scores, why a score is missing, the raw "
               "reply, the explanation and any per-criterion scores. A text that begins with =, +, -, @, a tab or "
               "a carriage return gets a leading ' so a spreadsheet shows it instead of running it."))


# --------------------------------------------------------------------------- all runs
st.subheader("All runs")
runs = store.runs(limit=200)
run_view.deleted_meanwhile(store, "runs_run_id", [r.id for r in runs])
if not runs:
    st.info("No run yet.")
else:
    st.dataframe(tables.runs_frame(runs), hide_index=True, key="runs_table",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("pearson", "spearman", "kendall")})
    ids = [r.id for r in runs]
    labels = {r.id: tables.run_label(r) for r in runs}
    if st.session_state.get("runs_run_id") not in ids:
        widgets.set_value("runs_run_id", ids[0])
    run_id = widgets.bound(st.selectbox, "Show run", "runs_run_id", options=ids, format_func=labels.get)
    try:
        run = store.run(run_id)
    except NotFound:  # deleted between the list and this read
        st.warning(f"Run #{run_id} no longer exists (it was deleted meanwhile); choose another.")
        st.stop()
    title = METHODS[run.method].title if run.method in METHODS else run.method
    st.subheader(messages.escape_markdown(f"Run #{run_id}: {title} on {run.dataset} / {run.aspect}"))
    split = run.split
    st.text(f"Backend {LLMConfig.from_dict(run.llm).label}; "
            f"{len(split.train_ids) if split else 0} train / {len(split.test_ids) if split else 0} test items "
            f"(seed {split.seed if split else 0}); created {tables.fmt_time(run.created)}")
    with st.expander("Method parameters"):
        st.json(run.params)
    progress_panel(run_id)
    if effective_status(run) == "finished":
        results(run)

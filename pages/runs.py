"""Runs: start a baseline run, follow its progress, and read its meta-evaluation."""

import inspect
import json
import time

import streamlit as st

from judge_engine import data, export, figures
from judge_engine.data import DataImportError, SplitError
from judge_engine.llm import LLMConfig
from judge_engine.methods import METHODS
from judge_engine.runs import RunSpec, create_run, effective_status, estimate, start_run
from judge_engine.store import NotFound
from pages import common

common.require_frame()

# After Resume, keep polling this long while the worker starts and marks the run running.
RESUME_GRACE_S = 30.0

store = common.get_store()

st.title("Runs")
common.show_flash()


# --------------------------------------------------------------------------- method parameters
def param_widget(method: str, cls, pname: str, default, doc: str):
    """An input for one method parameter, chosen from its default's type and its constraint."""
    constraint = getattr(cls, "_parameter_constraints", {}).get(pname)
    key = f"runs_param_{method}_{pname}"
    choices = getattr(constraint, "values", None)
    low, high = getattr(constraint, "low", None), getattr(constraint, "high", None)
    if choices:
        choices = list(choices)
        return st.selectbox(pname, choices, index=choices.index(default) if default in choices else 0,
                            key=key, help=doc or None)
    if isinstance(default, bool):
        return st.checkbox(pname, value=default, key=key, help=doc or None)
    if isinstance(default, int):
        return int(st.number_input(pname, value=default, step=1, key=key, help=doc or None,
                                   min_value=None if low is None else int(low),
                                   max_value=None if high is None else int(high)))
    if isinstance(default, float):
        return float(st.number_input(pname, value=default, step=0.1, format="%.3f", key=key, help=doc or None,
                                     min_value=None if low is None else float(low),
                                     max_value=None if high is None else float(high)))
    if isinstance(default, str):
        return st.text_input(pname, value=default, key=key, help=doc or None)
    text = st.text_input(f"{pname} (JSON)", value=json.dumps(default), key=key, help=doc or None)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"{pname}: {text!r} is not valid JSON") from None


def param_docs(cls) -> dict[str, str]:
    """Parameter descriptions from the numpydoc ``Parameters`` section of a method's docstring."""
    docs: dict[str, str] = {}
    lines = (inspect.getdoc(cls) or "").splitlines()
    current = None
    in_params = False
    for i, line in enumerate(lines):
        if line.strip() == "Parameters" and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            in_params = True
            continue
        if not in_params or set(line.strip()) == {"-"}:
            continue
        if line and not line.startswith(" "):
            if " : " not in line and line.strip() and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
                break  # next section
            current = line.split(" : ")[0].strip()
            docs[current] = ""
        elif current and line.strip():
            docs[current] = (docs[current] + " " + line.strip()).strip()
    return docs


def summary_line(cls) -> str:
    return (inspect.getdoc(cls) or "").split("\n\n")[0]


# --------------------------------------------------------------------------- start a run
st.subheader("Start a baseline run")
dataset_rows = store.list_datasets()
if not dataset_rows:
    st.info("No dataset stored yet. Import a built-in benchmark or upload a file first.")
    st.page_link("pages/datasets.py", label="Go to Datasets", icon=":material/table_chart:")
else:
    names = [r["name"] for r in dataset_rows]
    c1, c2 = st.columns(2)
    ds_name = c1.selectbox("Dataset", names, key="runs_dataset")
    method_names = list(METHODS)
    method = c2.selectbox("Method", method_names, key="runs_method",
                          format_func=lambda m: f"{METHODS[m].title or m} ({m})")
    cls = METHODS[method]
    st.caption(summary_line(cls))
    aspects = next(r["aspects"] for r in dataset_rows if r["name"] == ds_name)
    docs = param_docs(cls)

    with st.form("runs_form"):
        aspect = st.selectbox("Aspect", [a["name"] for a in aspects], key="runs_aspect",
                              format_func=lambda n: next(f"{n} ({a['low']:g}-{a['high']:g})"
                                                         for a in aspects if a["name"] == n))
        c = st.columns(3)
        train_size = c[0].number_input("Train size", min_value=0, value=30, step=1, key="runs_train",
                                       help="Human-scored items the method may learn from.")
        test_size = c[1].number_input("Test size", min_value=1, value=20, step=1, key="runs_test",
                                      help="Held-out items the judge scores and is meta-evaluated on. Test takes whole "
                                           "groups, so it may hold a few more items than asked.")
        seed = c[2].number_input("Seed", min_value=0, value=0, step=1, key="runs_seed")
        st.markdown("**Method parameters** (defaults are the paper's values)")
        params, param_error = {}, None
        pcols = st.columns(3)
        for i, (pname, default) in enumerate(cls.default_params().items()):
            with pcols[i % 3]:
                try:
                    params[pname] = param_widget(method, cls, pname, default, docs.get(pname, ""))
                except ValueError as exc:
                    param_error = str(exc)
        reviewed = st.form_submit_button("Review run")

    if reviewed:
        st.session_state.pop("runs_draft", None)
        if param_error:
            st.error(common.plain(param_error))
        else:
            changed = {k: v for k, v in params.items() if v != cls.default_params().get(k)}
            spec = RunSpec(method=method, dataset=ds_name, aspect=aspect, params=changed,
                           train_size=int(train_size), test_size=int(test_size), seed=int(seed),
                           llm=common.llm_config())
            try:
                dataset = common.load_dataset(store, ds_name)
                split = data.make_split(dataset, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
                calls = estimate(store, spec)
            except (SplitError, ValueError, NotFound) as exc:
                st.error(common.plain(str(exc)))
            else:
                st.session_state["runs_draft"] = {"spec": spec, "calls": calls, "n_train": len(split.train_ids),
                                                  "n_test": len(split.test_ids)}

    draft = st.session_state.get("runs_draft")
    if draft and (draft["spec"].dataset, draft["spec"].method) != (ds_name, method):
        st.session_state.pop("runs_draft", None)  # the choice above changed: review again
        draft = None
    if draft:
        spec = draft["spec"]
        calls = draft["calls"]
        with st.container(border=True):
            st.markdown("**Review**")
            st.text(f"{METHODS[spec.method].title or spec.method} on {spec.dataset} / {spec.aspect}: "
                    f"{draft['n_train']} train and {draft['n_test']} test items (seed {spec.seed}), "
                    f"backend {spec.llm.label}")
            if spec.params:
                st.text(f"Parameters changed from the defaults: {json.dumps(spec.params)}")
            total = sum(calls.values())
            m = st.columns(3)
            m[0].metric("LLM requests to fit", calls.get("fit", 0))
            m[1].metric("LLM requests to score", calls.get("score", 0))
            m[2].metric("Total (before cache hits)", total)
            if spec.llm.backend == "llamacpp":
                st.caption(f"The embedded model answers one request at a time, about 1-3 s each on this CPU: "
                           f"roughly {max(1, round(total * 2 / 60))} min (longer when a method asks for several "
                           "completions per request). Requests already in the cache cost nothing.")
            b1, b2 = st.columns([1, 5])
            start = b1.button("Start run", key="runs_start", type="primary")
            if b2.button("Discard", key="runs_discard"):
                st.session_state.pop("runs_draft", None)
                st.rerun()
            if start:
                try:
                    run_id = create_run(store, spec, actor=common.actor())
                except (SplitError, DataImportError, ValueError, NotFound) as exc:
                    st.error(common.plain(str(exc)))
                else:
                    try:
                        start_run(store.path, run_id, api_key=common.api_key())
                    except OSError as exc:
                        common.flash("error", f"Run #{run_id} was created but its worker could not start: {exc}. "
                                              "Use Resume below to try again.")
                    else:
                        common.flash("success", f"Started run #{run_id}.")
                    st.session_state.pop("runs_draft", None)
                    common.set_value("runs_run_id", run_id)
                    st.rerun()


# --------------------------------------------------------------------------- one run
def resumed_recently(run_id: int) -> bool:
    return time.time() - st.session_state.get("runs_resumed", {}).get(run_id, 0.0) < RESUME_GRACE_S


def resume(run_id: int) -> None:
    try:
        start_run(store.path, run_id, api_key=common.api_key())
    except OSError as exc:
        st.error(common.plain(f"Could not start a worker: {exc}"))
        return
    st.session_state.setdefault("runs_resumed", {})[run_id] = time.time()
    st.rerun()


def progress_panel(run_id: int) -> None:
    """Status, progress and cost so far; polls every 2 s while the run is live."""
    first = store.get_run(run_id)
    live = effective_status(first) in common.LIVE_STATUSES or resumed_recently(run_id)

    @st.fragment(run_every="2s" if live else None)
    def panel() -> None:
        run = common.get_store().get_run(run_id)
        status = effective_status(run)
        waiting = status not in common.LIVE_STATUSES and status != "finished" and resumed_recently(run_id)
        ledger = run.get("ledger") or {}
        if status in common.LIVE_STATUSES or waiting:
            done, total = int(run.get("done") or 0), int(run.get("total") or 0)
            stage = "waiting for the worker to start" if waiting else (run.get("stage") or status)
            st.progress(min(1.0, done / total) if total else 0.0,
                        text=f"{status if not waiting else 'starting'}: {stage} ({done}/{total})")
            age = time.time() - (run.get("heartbeat") or time.time())
            st.caption(f"Last heartbeat {age:.0f} s ago. You can leave this page; the run continues.")
        elif status == "finished":
            common.finished_box(common.run_trust(common.get_store(), run),
                                f"Finished ({(run.get('summary') or {}).get('seconds', 0):.1f} s of work).")
        else:
            text = run.get("message") or "The worker stopped before the run finished."
            (st.error if status == "failed" else st.warning)(common.plain(f"Run {status}: {text}"))
            st.caption("Resume continues where it stopped: the fitted judge and scored samples are kept and "
                       "cached LLM calls are not paid again.")
            if st.button("Resume", key=f"runs_resume_{run_id}", type="primary"):
                resume(run_id)
        if status != "finished":
            m = st.columns(5)
            m[0].metric("LLM calls", ledger.get("calls", 0))
            m[1].metric("Cache hits", ledger.get("cache_hits", 0))
            m[2].metric("Prompt tokens", ledger.get("prompt_tokens", 0))
            m[3].metric("Completion tokens", ledger.get("completion_tokens", 0))
            m[4].metric("Cost ($)", f"{float(ledger.get('dollars', 0) or 0):.4f}")
        if live and status not in common.LIVE_STATUSES and not waiting:
            st.rerun()  # the run just ended: redraw the page once with its results

    panel()


def results(run: dict) -> None:
    """Meta-evaluation, cost, scatter and verdicts of a finished run."""
    summary = run.get("summary") or {}
    if not summary:
        st.warning("This run has no summary.")
        return
    st.markdown("#### Can this judge be trusted?")
    common.trust_panel(common.run_trust(store, run))
    st.markdown("#### Correlation with human scores")
    frame = common.correlation_frame(summary)
    if frame.empty:
        st.warning("No correlation could be computed (no verdict with a score?).")
    else:
        st.dataframe(frame, hide_index=True, key=f"runs_corr_{run['id']}",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("pearson", "spearman", "kendall")})
        st.caption("95% bootstrap percentile intervals. The natural level is the one the papers report for this "
                   "dataset. Items without a judge score are excluded, never imputed.")
        defined = any((c or {}).get(k) is not None for c in summary["levels"].values()
                      for k in ("pearson", "spearman", "kendall"))
        if defined:
            st.plotly_chart(figures.correlation_bars(summary["levels"], natural=summary.get("level")),
                            key=f"runs_bars_{run['id']}")
        else:
            st.info("No correlation is defined: the judge gave (almost) every item the same score, or too few "
                    "replies parsed.")

    n = summary.get("n", 0)
    for warning in summary.get("warnings") or []:
        st.warning(common.plain(warning.get("message", "")))
    m = st.columns(4)
    m[0].metric("Missing scores", f"{summary.get('missing', summary.get('parse_failures', 0))} of {n}",
                help="Test items without a score (the reasons are listed above); they are excluded from the "
                     "correlations, never imputed.")
    m[1].metric("Parse failures", f"{summary.get('parse_failures', 0)} of {n}",
                help="Replies that were there but gave no score that could be read.")
    m[2].metric("Seconds", f"{float(summary.get('seconds', 0) or 0):.1f}")
    m[3].metric("Cost ($)", f"{float(summary.get('dollars', 0) or 0):.4f}")
    m = st.columns(4)
    m[0].metric("LLM calls", summary.get("calls", 0))
    m[1].metric("Cache hits", summary.get("cache_hits", 0))
    m[2].metric("Prompt tokens", summary.get("prompt_tokens", 0))
    m[3].metric("Completion tokens", summary.get("completion_tokens", 0))

    try:
        dataset = common.human_dataset(store, run["dataset"], run.get("human_aggregate") or "imported")
    except NotFound:
        dataset = None
        st.warning(common.plain(f"Dataset {run['dataset']} is no longer stored; human scores cannot be shown."))
    verdicts = common.load_verdicts(store, run)
    table = common.verdicts_frame(dataset, run["aspect"], verdicts)
    if dataset is not None:
        aspect = dataset.aspect(run["aspect"])
        st.plotly_chart(figures.human_vs_judge_scatter(
            table["human"].tolist(), table["judge"].tolist(), ids=table["sample id"].tolist(),
            aspect=aspect.name, low=aspect.low, high=aspect.high), key=f"runs_scatter_{run['id']}")

    st.markdown("#### Verdicts")
    st.dataframe(table, hide_index=True, key=f"runs_verdicts_{run['id']}",
                 column_config={"parse failure": st.column_config.CheckboxColumn(),
                                "human": st.column_config.NumberColumn(format="%.3f"),
                                "judge": st.column_config.NumberColumn(format="%.3f")})
    # the engine's table (the same as `python -m judge_engine verdicts`): texts and replies are hostile, and
    # its CSV neutralises every cell a spreadsheet would run as a formula
    download = export.verdicts_text(export.build_verdict_table(dataset, run["aspect"], verdicts), "csv")
    st.download_button("Download verdicts (CSV)", download.encode("utf-8"),
                       file_name=f"run-{run['id']}-verdicts.csv", mime="text/csv", key=f"runs_dl_{run['id']}")
    st.caption(common.plain("The CSV has the item's input and output, human and judge scores, why a score is missing, the raw "
               "reply, the explanation and any per-criterion scores. A text that begins with =, +, -, @, a tab or "
               "a carriage return gets a leading ' so a spreadsheet shows it instead of running it."))


# --------------------------------------------------------------------------- all runs
st.subheader("All runs")
runs = store.list_runs(limit=200)
if not runs:
    st.info("No run yet.")
else:
    st.dataframe(common.runs_frame(runs), hide_index=True, key="runs_table",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("pearson", "spearman", "kendall")})
    ids = [r["id"] for r in runs]
    labels = {r["id"]: common.run_label(r) for r in runs}
    if st.session_state.get("runs_run_id") not in ids:
        common.set_value("runs_run_id", ids[0])
    run_id = common.bound(st.selectbox, "Show run", "runs_run_id", options=ids, format_func=labels.get)
    run = store.get_run(run_id)
    title = METHODS[run["method"]].title if run["method"] in METHODS else run["method"]
    st.subheader(common.plain(f"Run #{run_id}: {title} on {run['dataset']} / {run['aspect']}"))
    split = run.get("split") or {}
    st.text(f"Backend {LLMConfig.from_dict(run['llm']).label}; "
            f"{len(split.get('train_ids', []))} train / {len(split.get('test_ids', []))} test items "
            f"(seed {split.get('seed', 0)}); created {common.fmt_time(run.get('created'))}")
    with st.expander("Method parameters"):
        st.json(run.get("params") or {})
    progress_panel(run_id)
    if effective_status(run) == "finished":
        results(run)

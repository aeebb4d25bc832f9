"""HypoEval: configure and start a run, watch the hypothesis bank grow, curate hypotheses, re-score, compare."""

import json
import math
from typing import Sequence

import plotly.express as px
import streamlit as st

from judge_engine import data
from judge_engine import figures as plots
from judge_engine.data import SplitError
from judge_engine.llm import LLMConfig
from judge_engine.methods import METHODS, Judge
from judge_engine.methods import hypoeval as he
from judge_engine.records import Split
from judge_engine.runs import RunSpec, effective_status, estimate, start_run
from judge_engine.store import EditConflict, NotFound
from pages import common

common.require_frame()

METHOD = "hypoeval"
BASELINES = ("direct", "geval")
PAPER_PARAMS = ("n_train", "n_init", "n_init_hypotheses", "top_k", "w_max", "n_refine", "max_bank", "n_selected",
                "alpha", "theta", "max_tokens", "refine_start", "union_mode")

store = common.get_store()
cls = METHODS[METHOD]
defaults = cls.default_params()

st.title("HypoEval")
st.caption("Hypothesis-guided evaluation: a bank of one-trait rubrics grown from a few human scores (and optional "
           "literature notes), the best ones by training Pearson kept, and a text's score the mean of its "
           "per-hypothesis scores.")
common.show_flash()


def parse_notes(text: str) -> list[dict[str, str]]:
    """Literature notes typed as blocks separated by a line '---'; a block's first line is its title."""
    notes = []
    for block in text.split("\n---"):
        lines = block.strip().strip("-").strip().splitlines()
        if lines and "\n".join(lines[1:]).strip():
            notes.append({"title": lines[0].strip(), "text": "\n".join(lines[1:]).strip()})
    return notes


def start(specs: list[RunSpec], split: Split | None = None, labels: Sequence[str] = ()) -> list[int]:
    """Create and start runs in the background (on ``split`` when given); returns their ids.

    Each started run is announced once, with its label (e.g. " (baseline)").
    """
    labels = list(labels) + [""] * (len(specs) - len(labels))
    ids = [common.launch(store, spec, split=split, label=label) for spec, label in zip(specs, labels)]
    if None in ids:
        raise ValueError("a run could not be created (see the message above)")
    return ids


# --------------------------------------------------------------------------- configure and start
st.subheader("Start a HypoEval run")
dataset_rows = store.list_datasets()
if not dataset_rows:
    st.info("No dataset stored yet. Import a built-in benchmark (e.g. SummEval) first.")
    st.page_link("pages/datasets.py", label="Go to Datasets", icon=":material/table_chart:")
else:
    names = [r["name"] for r in dataset_rows]
    ds_name = st.selectbox("Dataset", names, key="hypoeval_dataset")
    aspects = next(r["aspects"] for r in dataset_rows if r["name"] == ds_name)
    with st.form("hypoeval_form"):
        aspect = st.selectbox("Aspect", [a["name"] for a in aspects], key="hypoeval_aspect")
        definition = next((a.get("definition") or "") for a in aspects if a["name"] == aspect)
        st.caption(common.plain(f"Definition used in the prompts: {definition or '(none: the aspect name)'} "
                                "(edit it on the Datasets page)."))
        c = st.columns(3)
        train_size = c[0].number_input("Train size (|S_tr|)", min_value=2, value=30, step=1, key="hypoeval_train")
        test_size = c[1].number_input("Test size", min_value=1, value=20, step=1, key="hypoeval_test")
        seed = c[2].number_input("Seed", min_value=0, value=0, step=1, key="hypoeval_seed")
        c = st.columns(3)
        layout = c[0].selectbox("Prompt layout", list(he.LAYOUTS), key="hypoeval_layout",
                                help="paper: hypothesis then sample; sample_first: the sample first, so prefix "
                                     "caching computes it once per sample.")
        joint = c[1].checkbox("Score all selected hypotheses in one call per test item", key="hypoeval_joint")
        baselines = c[2].checkbox("Also run direct scoring and G-Eval on the same split", value=True,
                                  key="hypoeval_baselines")
        weighted = st.checkbox(
            "Score first, probability-weighted from logprobs (recommended for the embedded model)",
            value=common.llm_config().backend == "llamacpp", key="hypoeval_weighted",
            help="The paper asks for reasoning before each 1-5 score. A tiny model rarely ends its reasoning with a "
                 "score, so this asks for the score alone and takes the expected value over the scale's tokens.")
        st.text(f"Backend: {common.llm_config().label} (change it under Settings)")
        st.markdown("**Paper parameters** (defaults are the paper's values)")
        params = {}
        pcols = st.columns(4)
        for i, name in enumerate(PAPER_PARAMS):
            default = defaults[name]
            with pcols[i % 4]:
                constraint = cls._parameter_constraints.get(name)
                if getattr(constraint, "values", None):
                    params[name] = st.selectbox(name, list(constraint.values), key=f"hypoeval_p_{name}")
                elif isinstance(default, int):
                    params[name] = int(st.number_input(name, value=default, step=1, key=f"hypoeval_p_{name}"))
                else:
                    params[name] = float(st.number_input(name, value=float(default), step=0.05, format="%.3f",
                                                         key=f"hypoeval_p_{name}"))
        notes_text = st.text_area(
            "Literature notes or annotation guidelines (optional)", key="hypoeval_notes", height=120,
            help="One note per block: first line the title, then its text; separate notes with a line '---'. "
                 "Without notes the literature steps are skipped.")
        reviewed = st.form_submit_button("Review run")

    if reviewed:
        notes = parse_notes(notes_text)
        changed = {k: v for k, v in params.items() if v != defaults[k]}
        changed.update({"layout": layout, "joint": joint} if (layout, joint) != ("paper", False) else {})
        if weighted:
            changed.update({"reasoning": False, "weighted": True})
        if notes:
            changed["literature"] = notes
        spec = RunSpec(method=METHOD, dataset=ds_name, aspect=aspect, params=changed, train_size=int(train_size),
                       test_size=int(test_size), seed=int(seed), llm=common.llm_config())
        try:
            calls = estimate(store, spec)
            split = data.make_split(common.load_dataset(store, ds_name), train_size=spec.train_size,
                                    test_size=spec.test_size, seed=spec.seed)
        except (SplitError, ValueError, NotFound) as exc:
            st.error(common.plain(str(exc)))
        else:
            st.session_state["hypoeval_draft"] = {"spec": spec, "calls": calls, "baselines": baselines,
                                                  "n_train": len(split.train_ids), "n_test": len(split.test_ids)}

    draft = st.session_state.get("hypoeval_draft")
    if draft:
        spec, calls = draft["spec"], draft["calls"]
        with st.container(border=True):
            st.markdown("**Estimate before starting** (the paper's cost model, before cache hits)")
            st.text(f"{spec.dataset} / {spec.aspect}: {draft['n_train']} train items (HypoEval uses at most "
                    f"{spec.params.get('n_train', defaults['n_train'])}), {draft['n_test']} test items, "
                    f"backend {spec.llm.label}")
            m = st.columns(3)
            m[0].metric("LLM requests to fit", calls["fit"])
            m[1].metric("LLM requests to score", calls["score"])
            m[2].metric("Total", calls["fit"] + calls["score"])
            if not spec.params.get("literature"):
                st.caption("No literature notes: literature refinement rounds and literature-only hypotheses "
                           "will be skipped.")
            if st.button("Start run", type="primary", key="hypoeval_start"):
                specs = [spec] + ([RunSpec(method=b, dataset=spec.dataset, aspect=spec.aspect,
                                           train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed,
                                           llm=spec.llm) for b in BASELINES] if draft["baselines"] else [])
                try:
                    ids = start(specs, labels=[" (HypoEval)"] + [f" (baseline: {METHODS[b].title})"
                                                                  for b in BASELINES])
                except (SplitError, ValueError, NotFound) as exc:
                    st.error(common.plain(str(exc)))
                else:
                    st.session_state.pop("hypoeval_draft", None)
                    common.set_value("hypoeval_run_id", ids[0])
                    st.rerun()


# --------------------------------------------------------------------------- watch a run
def bank_table(view: dict) -> None:
    rows = [{"status": r["status"], "origin": r["origin"], "reward": r["reward"], "times evaluated": r["n_evaluated"],
             "train pearson": r["train_pearson"], "coverage": r.get("coverage"), "fitness": r.get("fitness"),
             "why not selectable": r.get("reason") or "", "hypothesis": r["text"], "key": r["key"]}
            for r in view["hypotheses"]]
    st.dataframe(rows, hide_index=True,
                 column_config={"reward": st.column_config.NumberColumn(format="%.3f"),
                                "train pearson": st.column_config.NumberColumn(format="%.3f"),
                                "coverage": st.column_config.NumberColumn(
                                    format="%.2f", help="Share of the training items this hypothesis scored"),
                                "fitness": st.column_config.NumberColumn(
                                    format="%.3f", help="Pearson x coverage; only positive ones are selected"),
                                "hypothesis": st.column_config.TextColumn(width="large")})


def show_warnings(warnings: Sequence[dict]) -> None:
    """Fit-time warnings (empty bank, fewer selected, a person's accepted hypotheses kept) in words."""
    for w in warnings:
        st.warning(common.plain(f"{str(w.get('code', '')).replace('_', ' ').capitalize()}: {w.get('message', '')}"))


def replies_caption(view: dict) -> str:
    r = view["replies"]
    scores = view["score_sources"]
    read = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(scores.items()) if n) or "none yet"
    return (f"Generation and repetition-check replies: {r.get('json', 0)} read as JSON, {r.get('text', 0)} by the "
            f"free-text fallback, {r.get('unread', 0)} unreadable. Training scores read from: {read}.")


def live_panel(run_id: int) -> None:
    """Progress and the hypothesis bank as it grows; polls the store every 2 s while the run is live."""
    live = effective_status(store.get_run(run_id)) in common.LIVE_STATUSES

    @st.fragment(run_every="2s" if live else None)
    def panel() -> None:
        s = common.get_store()
        run = s.get_run(run_id)
        status = effective_status(run)
        view = he.bank_from_events(s.events(run_id))
        if status in common.LIVE_STATUSES:
            done, total = int(run.get("done") or 0), int(run.get("total") or 0)
            st.progress(min(1.0, done / total) if total else 0.0, text=f"{status}: {run.get('stage')} ({done}/{total})")
        elif status == "finished":
            common.finished_box(common.run_trust(s, run), "Finished.")
        else:
            st.warning(common.plain(f"Run {status}: {run.get('message') or 'stopped'}"))
            if st.button("Resume", key=f"hypoeval_resume_{run_id}"):
                start_run(store.path, run_id, api_key=common.api_key())
                st.rerun()
        m = st.columns(5)
        m[0].metric("Hypotheses seen", len(view["hypotheses"]))
        w_max = view["w_max"] or (run.get("params") or {}).get("w_max", defaults["w_max"])
        m[1].metric("Wrong-example bank", f"{view['wrong_bank']} / {w_max}")
        m[2].metric("Bank refreshes", view["refreshes"])
        m[3].metric("Refinement rounds", view["refinement_rounds"])
        m[4].metric("Unparsed replies", view["parse_failures"])
        st.caption(replies_caption(view))
        show_warnings(view["warnings"])
        if view["literature_skipped"]:
            st.caption("No literature notes were given: literature steps were skipped.")
        bank_table(view)
        ledger = run.get("ledger") or {}
        st.caption(f"LLM calls {ledger.get('calls', 0)}, cache hits {ledger.get('cache_hits', 0)}, "
                   f"prompt tokens {ledger.get('prompt_tokens', 0)}, completion tokens "
                   f"{ledger.get('completion_tokens', 0)}, {float(ledger.get('seconds', 0) or 0):.0f} s in calls")
        if live and status not in common.LIVE_STATUSES:
            st.rerun()

    panel()


# --------------------------------------------------------------------------- curate
def owner_of(run_id: int) -> str:
    return f"hypoeval:run:{run_id}"


def seed_criteria(run: dict, judge: Judge) -> None:
    """Put the run's bank into the versioned criteria store once (selected ones accepted)."""
    owner = owner_of(run["id"])
    if store.criteria(owner):
        return
    selected = {h["key"] for h in judge.state.get("selected", [])}
    for pos, h in enumerate(judge.state.get("bank", [])):
        store.save_criterion({"id": f"{owner}:{h['key']}", "owner": owner, "name": h["key"],
                              "definition": h["text"], "position": pos,
                              "status": "accepted" if h["key"] in selected else "rejected"}, actor="engine")


def rejected_by_checks(judge: Judge, rows: Sequence[dict]) -> list[dict]:
    """The generated hypotheses the rubric checks refused and nobody has restored yet."""
    present = {r["definition"] for r in rows}
    seen: set[str] = set()
    out = []
    for r in judge.state.get("rejected", []):
        if r["text"] not in present and r["text"] not in seen:
            seen.add(r["text"])
            out.append(r)
    return out


# session value: id of the hypothesis saved last, drawn open so the person keeps their place
OPEN_KEY = "hypoeval_open"


def curate(run: dict, judge: Judge) -> None:
    seed_criteria(run, judge)
    owner = owner_of(run["id"])
    bank = {h["key"]: h for h in judge.state.get("bank", [])}
    rows = store.criteria(owner)
    st.caption("Accepted hypotheses are the ones a re-scoring run uses. Every save is versioned and audited; "
               "a stale edit (someone saved in between) is refused.")
    for row in rows:
        info = bank.get(row["name"], {})
        # the version this person started from: a save against it fails if someone saved in between
        seen_key = f"hypoeval_seen_{row['id']}"
        seen = st.session_state.setdefault(seen_key, row["version"])
        mark = "✅" if row["status"] == "accepted" else "⛔"
        pearson = info.get("train_pearson")
        origin = info.get("origin", "added by a person") if row["definition"] == info.get("text", row["definition"]) \
            else f"edited by a person (was {info.get('origin', 'added')})"
        coverage = info.get("coverage")
        label = f"{mark} v{row['version']} · {origin}" + (
            f" · train r {pearson:.3f}" if pearson is not None else "") + (
            f" · coverage {coverage:.0%}" if coverage is not None else "")
        # the item saved last is drawn open: its label changes with the version, and a changed expander
        # would otherwise come back closed after the Save's rerun
        with st.expander(f"{label} · {row['definition'][:80]}",
                         expanded=st.session_state.get(OPEN_KEY) == row["id"]):
            with st.form(f"hypoeval_edit_{row['id']}"):
                text = st.text_area("Hypothesis", value=row["definition"], key=f"hypoeval_text_{row['id']}")
                status = st.radio("Status", ["accepted", "rejected"], horizontal=True,
                                  index=0 if row["status"] == "accepted" else 1, key=f"hypoeval_status_{row['id']}")
                saved = st.form_submit_button("Save")
            common.show_flash(at=f"hypoeval:{row['id']}")  # "Saved." beside the form, not at the page top
            change = None
            if saved:
                change = {"id": row["id"], "name": row["name"], "definition": text.strip(), "status": status}
            if row["history"] and st.button("Undo last change", key=f"hypoeval_undo_{row['id']}"):
                prev = row["history"][-1]
                change = {"id": row["id"], "name": prev["name"], "definition": prev["definition"],
                          "status": prev["status"]}
            if change:
                st.session_state[OPEN_KEY] = row["id"]
                try:
                    version = store.save_criterion(change, actor=common.actor(), expected_version=seen)
                except EditConflict as exc:
                    st.error(common.plain(f"Not saved: {exc}. The latest text is: {row['definition']}"))
                    st.session_state[seen_key] = row["version"]  # saving again now overwrites that version knowingly
                else:
                    st.session_state[seen_key] = version
                    st.session_state.pop(f"hypoeval_text_{row['id']}", None)
                    st.session_state.pop(f"hypoeval_status_{row['id']}", None)
                    common.flash("success", "Saved.", at=f"hypoeval:{row['id']}")
                    st.rerun()
    restorable = rejected_by_checks(judge, rows)
    if restorable:
        with st.expander(f"Rejected by the rubric checks ({len(restorable)})"):
            st.caption("Generated hypotheses refused before use: copies of a text the model was shown, "
                       "near-duplicates, empty, repetitive or over-long ones, and ones naming no quality. "
                       "Restore one to accept it yourself; the audit log records who did.")
            for i, r in enumerate(restorable):
                st.text(f"{r['text'][:300]}\n→ {r.get('rule', '')}: {r.get('reason', '')}")
                if st.button("Restore", key=f"hypoeval_restore_{i}"):
                    key = he.hypothesis_key(r["text"])
                    store.save_criterion({"id": f"{owner}:{key}", "owner": owner, "name": key,
                                          "definition": r["text"], "status": "accepted",
                                          "position": len(rows)}, actor=common.actor())
                    common.flash("success", "Restored and accepted.")
                    st.rerun()
    with st.form("hypoeval_add"):
        new = st.text_area("Add a hypothesis (a rubric for one trait, describing each score)", key="hypoeval_new")
        if st.form_submit_button("Add") and new.strip():
            key = he.hypothesis_key(new.strip())
            store.save_criterion({"id": f"{owner}:{key}", "owner": owner, "name": key, "definition": new.strip(),
                                  "status": "accepted", "position": len(rows)}, actor=common.actor())
            st.session_state[OPEN_KEY] = f"{owner}:{key}"  # the new hypothesis is drawn open, ready to refine
            st.rerun()
    accepted = [r["definition"] for r in store.criteria(owner) if r["status"] == "accepted"]
    st.text(f"{len(accepted)} accepted hypotheses.")
    if st.button("Re-score with the accepted hypotheses", type="primary", key="hypoeval_rescore",
                 disabled=not accepted):
        try:
            origins = {h["text"]: h["origin"] for h in bank.values()}
            params = {**run["params"], "hypotheses": [{"text": t, "origin": origins.get(t, "curated")}
                                                      for t in accepted],
                      "n_selected": len(accepted)}
            ids = start([RunSpec(method=METHOD, dataset=run["dataset"], aspect=run["aspect"], params=params,
                                 seed=run["split"]["seed"], llm=LLMConfig.from_dict(run["llm"]))],
                        split=Split.from_dict(run["split"]),  # same items and backend: unchanged calls are cached
                        labels=[" (re-scoring: unchanged hypotheses come from the cache)"])
        except (SplitError, ValueError, NotFound) as exc:
            st.error(common.plain(str(exc)))
        else:
            common.set_value("hypoeval_run_id", ids[0])
            common.set_value("hypoeval_view", "Results")  # a new run: its results are what comes next
            st.rerun()
    audit = [a for a in store.audit_log(entity="criterion", limit=200) if a["entity_id"].startswith(owner + ":")]
    if audit:
        with st.expander("Edit history (audit log)"):
            st.dataframe([{"when": common.fmt_time(a["ts"]), "who": a["actor"], "action": a["action"],
                           "before": a["before"], "after": a["after"]} for a in audit], hide_index=True)


# --------------------------------------------------------------------------- results
def results(run: dict, judge: Judge) -> None:
    summary = run.get("summary") or {}
    common.trust_panel(common.run_trust(store, run))
    st.markdown("#### Test correlations beside the baselines on the same split")
    same = [r for r in store.list_runs(dataset=run["dataset"]) if r["aspect"] == run["aspect"]
            and r["status"] == "finished" and r["method"] in BASELINES
            and (r.get("split") or {}).get("test_ids") == run["split"]["test_ids"]]
    for r in [run] + same:
        title = METHODS[r["method"]].title if r["method"] in METHODS else r["method"]
        st.markdown(f"**{common.plain(title)}** (run #{r['id']})")
        st.dataframe(common.correlation_frame(r.get("summary") or {}), hide_index=True,
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("pearson", "spearman", "kendall")})
    if not same:
        st.caption("No finished direct or G-Eval run on this split yet.")
    if summary.get("levels"):
        st.plotly_chart(plots.correlation_bars(summary["levels"], natural=summary.get("level")),
                        key=f"hypoeval_bars_{run['id']}")
    m = st.columns(5)
    m[0].metric("LLM calls", summary.get("calls", 0))
    m[1].metric("Cache hits", summary.get("cache_hits", 0))
    m[2].metric("Prompt tokens", summary.get("prompt_tokens", 0))
    m[3].metric("Seconds", f"{float(summary.get('seconds', 0) or 0):.1f}")
    m[4].metric("Missing verdicts", f"{summary.get('parse_failures', 0)} of {summary.get('n', 0)}")

    dataset = common.load_dataset(store, run["dataset"])
    verdicts = common.load_verdicts(store, run)
    sources: dict[str, int] = {}
    for v in verdicts:
        for p in v.metadata.get("per_hypothesis", []):
            source = p.get("source") or "unknown"
            sources[source] = sources.get(source, 0) + 1
    if sources:
        st.caption("Test scores (per hypothesis) read from: " + ", ".join(
            f"{n} {k.replace('_', ' ')}" for k, n in sorted(sources.items())) + (
            " — scores from the first position's alternatives are flagged: the reply chose no number"
            if sources.get("logprobs_first_position") else ""))
    table = common.verdicts_frame(dataset, run["aspect"], verdicts)
    aspect = dataset.aspect(run["aspect"])
    st.plotly_chart(plots.human_vs_judge_scatter(table["human"].tolist(), table["judge"].tolist(),
                                                 ids=table["sample id"].tolist(), aspect=aspect.name,
                                                 low=aspect.low, high=aspect.high), key=f"hypoeval_scatter_{run['id']}")
    selected = judge.state.get("selected", [])
    matrix = he.per_hypothesis_scores(verdicts, selected)
    if matrix["keys"] and matrix["samples"]:
        st.markdown("#### Per-hypothesis scores over the test items")
        z = [[math.nan if x is None else x for x in row] for row in matrix["scores"]]
        fig = px.imshow(z, x=matrix["keys"], y=matrix["samples"], aspect="auto", color_continuous_scale="Viridis",
                        labels={"x": "hypothesis", "y": "test item", "color": "score"})
        st.plotly_chart(fig, key=f"hypoeval_heatmap_{run['id']}")
    st.markdown("#### Read one item")
    if verdicts:
        texts = {h["key"]: h["text"] for h in selected}
        sample_id = st.selectbox("Test item", [v.sample_id for v in verdicts], key=f"hypoeval_item_{run['id']}")
        verdict = next(v for v in verdicts if v.sample_id == sample_id)
        sample = dataset.by_id().get(sample_id)
        if sample is not None:
            human = sample.human.get(aspect.name)
            st.text(f"Human {'missing' if human is None else f'{human:.2f}'} · judge "
                    f"{'missing' if verdict.missing else f'{verdict.score:.2f}'}")
            with st.expander("Text judged"):
                st.text(sample.output)
        for p in verdict.metadata.get("per_hypothesis", []):
            shown = "missing" if p["score"] is None else f"{p['score']:.2f}"
            st.markdown(f"**{common.plain(p['key'])}** — score {shown}")
            st.caption(common.plain(texts.get(p["key"], "")))
            if p.get("explanation"):
                st.text(p["explanation"])


# --------------------------------------------------------------------------- pick a run
st.subheader("HypoEval runs")
runs = [r for r in store.list_runs(limit=200) if r["method"] == METHOD]
if not runs:
    st.info("No HypoEval run yet.")
else:
    ids = [r["id"] for r in runs]
    if st.session_state.get("hypoeval_run_id") not in ids:
        common.set_value("hypoeval_run_id", ids[0])
    run_id = common.bound(st.selectbox, "Show run", "hypoeval_run_id", options=ids,
                          format_func={r["id"]: common.run_label(r) for r in runs}.get)
    run = store.get_run(run_id)
    with st.expander("Parameters"):
        st.json(run.get("params") or {})
    live_panel(run_id)
    if effective_status(run) == "finished" and run.get("judge"):
        judge = Judge.from_dict(run["judge"])
        st.markdown("#### Selected hypotheses")
        show_warnings(judge.state.get("warnings", []))
        st.dataframe([{"key": h["key"], "origin": h["origin"], "train pearson": h.get("train_pearson"),
                       "coverage": h.get("coverage"), "fitness": h.get("fitness"),
                       "chosen by": h.get("accepted_by") or "selection",
                       "reward": h.get("reward"), "hypothesis": h["text"]} for h in judge.state.get("selected", [])],
                     hide_index=True, column_config={"hypothesis": st.column_config.TextColumn(width="large"),
                                                     "coverage": st.column_config.NumberColumn(format="%.2f")})
        tab_results, tab_curate = common.remembered_tabs(["Results", "Curate and re-score"], "hypoeval_view")
        with tab_results:
            results(run, judge)
        with tab_curate:
            curate(run, judge)
        with st.expander("Judge (JSON)"):
            st.download_button("Download judge", json.dumps(judge.to_dict(), indent=2).encode("utf-8"),
                               file_name=f"hypoeval-run-{run_id}.json", key="hypoeval_dl")

"""HypoEval: configure and start a run, watch the hypothesis bank grow, curate hypotheses, re-score, compare."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("HypoEval")

import json
from typing import Sequence

from judge_engine import curation, runs
from judge_engine import figures as plots
from judge_engine.llm import LLMConfig
from judge_engine.methods import METHODS, Judge
from judge_engine.methods import hypoeval as he
from judge_engine.records import RunRecord, RunSummary
from judge_engine.runs import RunSpec, fast_defaults, effective_status
from judge_engine.store import EditConflict
from pages.ui import (app_frame, auth, messages, once, readers, rubric_flags, run_view, session, start_form, tables,
                      trust, widgets)
from pages.ui import glossary


METHOD = "hypoeval"
MAIN_PARAMETERS = ("n_init_hypotheses", "top_k", "w_max", "n_refine", "max_bank", "n_selected", "layout", "joint",
                   "weighted", "reasoning")

store = session.get_store()
cls = METHODS[METHOD]
defaults = cls.default_params()

st.caption("Hypothesis-guided evaluation: a bank of one-trait rubrics grown from a few human scores (and optional "
           "literature notes), the best ones by training Pearson kept, and a text's score the mean of its "
           "per-hypothesis scores.")
messages.show_flash()


def parse_notes(text: str) -> list[dict[str, str]]:
    """Literature notes typed as blocks separated by a line '---'; a block's first line is its title."""
    notes = []
    for block in text.split("\n---"):
        lines = block.strip().strip("-").strip().splitlines()
        if lines and "\n".join(lines[1:]).strip():
            notes.append({"title": lines[0].strip(), "text": "\n".join(lines[1:]).strip()})
    return notes


# --------------------------------------------------------------------------- configure and start
st.subheader("Start a HypoEval run")
c = st.columns(2)
dataset = start_form.choose_dataset(METHOD, slot=c[0])
if dataset is not None:
    with c[1]:
        aspect = start_form.choose_aspect(METHOD, dataset)
    # the training items are the method's S_tr: one field, passed as n_train too
    split = start_form.split_fields(METHOD, dataset, train=defaults["n_train"], test=20,
                                    train_help="HypoEval learns from at most 30 (the paper's |S_tr|).")
    params = start_form.parameter_fields(
        METHOD, METHOD, MAIN_PARAMETERS, values=fast_defaults(METHOD, session.llm_config()),
        turned_off_by={"reasoning": ("weighted", "probability-weighted scores need the score alone, with no "
                                                 "reasoning before it")})
    with st.expander("More settings (paper defaults)"):
        params |= start_form.parameter_fields(
            METHOD, METHOD, start_form.other_parameters(METHOD, MAIN_PARAMETERS + ("n_train",)))
    notes_text = st.text_area(
        "Literature notes or annotation guidelines (optional)", key=start_form.dependent_key(METHOD, dataset.name,
                                                                                          "notes"), height=120,
        help="One note per block: first line the title, then its text; separate notes with a line '---'. "
             "Without notes the literature steps are skipped.")
    baselines = st.checkbox("Run the baselines too", value=True, key="hypoeval_baselines",
                            help="Direct scoring and G-Eval on exactly this run's split and backend, for the "
                                 "comparison under Results.")
    peer = start_form.peer_checkbox("hypoeval")
    chosen = start_form.changed(METHOD, {**params, "n_train": min(split.train_size, 1000)})
    notes = parse_notes(notes_text)
    if notes:
        chosen["literature"] = notes
    spec = RunSpec(method=METHOD, dataset=dataset.name, aspect=aspect.name, params=chosen,
                   train_size=split.train_size, test_size=split.test_size, seed=split.seed, llm=session.llm_config())
    with_baselines = (runs.BASELINES if baselines else ()) + peer
    quick_id = start_form.quick_start(METHOD, spec, key="hypoeval_quick", baselines=with_baselines)
    if quick_id is not None:  # drawn again with the look chosen below and its "Started run #N" at the top
        widgets.set_value("hypoeval_run_id", quick_id)
        st.rerun()
    if start_form.estimate_box(spec) is not None:
        if not notes:
            st.caption("No literature notes: literature refinement rounds and literature-only hypotheses "
                       "will be skipped.")
        if start_form.start_button("Start run", "hypoeval_start"):
            run_id = start_form.start(spec, baselines=with_baselines, label=" (HypoEval)")
            if run_id is not None:
                widgets.set_value("hypoeval_run_id", run_id)
                st.rerun()


# --------------------------------------------------------------------------- watch a run
COLUMN_HELP = {
    "reward": "How well the hypothesis has scored the training items it was tried on so far (its agreement with "
              "the human scores, with a bonus for being tried less often): the bank keeps the best by reward.",
    "times evaluated": "Training items this hypothesis has scored so far.",
    "train pearson": "Pearson correlation of its scores with the human scores on the training items (+1 = same "
                     "order, 0 = none).",
    "coverage": "Share of the training items this hypothesis scored (a reply without a score is missing)",
    "fitness": "Training Pearson x coverage: a hypothesis that scored few items ranks lower; only positive ones "
               "are selected.",
}  # what the bank's number columns mean (the live bank and the selected hypotheses)

FLAGS_HELP = ("Doubts of the rubric checks that did not refuse the hypothesis: it was used, and selection by "
              "training correlation kept or dropped it as any other")


def bank_table(view: dict, flags: dict[str, list[dict]]) -> None:
    """The bank as a table; ``flags``: the rubric checks' flags by hypothesis text (:func:`rubric_flags.flags_by`)."""
    rows = [{"status": r["status"], "origin": r["origin"], "reward": r["reward"], "times evaluated": r["n_evaluated"],
             "train pearson": r["train_pearson"], "coverage": r.get("coverage"), "fitness": r.get("fitness"),
             "why not selectable": r.get("reason") or "", "rubric flags": rubric_flags.flag_text(flags.get(r["text"])),
             "hypothesis": r["text"], "key": r["key"]}
            for r in view["hypotheses"]]
    st.dataframe(rows, hide_index=True,
                 column_config={"reward": st.column_config.NumberColumn(format="%.3f", help=COLUMN_HELP["reward"]),
                                "times evaluated": st.column_config.NumberColumn(help=COLUMN_HELP["times evaluated"]),
                                "train pearson": st.column_config.NumberColumn(format="%.3f",
                                                                               help=COLUMN_HELP["train pearson"]),
                                "coverage": st.column_config.NumberColumn(format="%.2f", help=COLUMN_HELP["coverage"]),
                                "fitness": st.column_config.NumberColumn(format="%.3f", help=COLUMN_HELP["fitness"]),
                                "rubric flags": st.column_config.TextColumn(help=FLAGS_HELP),
                                "hypothesis": st.column_config.TextColumn(width="large")})


def show_warnings(warnings: Sequence[dict]) -> None:
    """Fit-time warnings (empty bank, fewer selected, a person's accepted hypotheses kept) in words."""
    for w in warnings:
        st.warning(messages.escape_markdown(f"{str(w.get('code', '')).replace('_', ' ').capitalize()}: {w.get('message', '')}"))


def replies_caption(view: dict) -> str:
    r = view["replies"]
    scores = view["score_sources"]
    read = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(scores.items()) if n) or "none yet"
    return (f"Generation and repetition-check replies: {r.get('json', 0)} read as JSON, {r.get('text', 0)} by the "
            f"free-text fallback, {r.get('unread', 0)} unreadable. Training scores read from: {read}.")


def bank_view(s, run: RunRecord) -> None:
    """The hypothesis bank as it grows (drawn at every poll of the progress panel)."""
    view = he.bank_from_events(s.run_events(run.id))
    m = st.columns(5)
    m[0].metric("Hypotheses seen", len(view["hypotheses"]), help=glossary.HELP["Hypotheses seen"])
    w_max = view["w_max"] or run.params.get("w_max", defaults["w_max"])
    m[1].metric("Wrong-example bank", f"{view['wrong_bank']} / {w_max}", help=glossary.HELP["Wrong-example bank"])
    m[2].metric("Bank refreshes", view["refreshes"], help=glossary.HELP["Bank refreshes"])
    m[3].metric("Refinement rounds", view["refinement_rounds"], help=glossary.HELP["Refinement rounds"])
    m[4].metric("Unparsed replies", view["parse_failures"], help=glossary.HELP["Unparsed replies"])
    st.caption(replies_caption(view))
    st.caption(rubric_flags.checked_by(run.llm))  # the rules alone on the embedded model, said so (issue 65)
    show_warnings(view["warnings"])
    if view["literature_skipped"]:
        st.caption("No literature notes were given: literature steps were skipped.")
    # the flags are in the judge: a finished run's bank shows them
    flagged = he.HypoEvalState.from_judge(Judge.from_dict(run.judge)).flagged if run.judge else ()
    bank_table(view, rubric_flags.flags_by(flagged))
    ledger = run.ledger  # llm.LedgerTotals so far: all 0 before the first call
    st.caption(f"LLM calls {ledger.calls}, cache hits {ledger.cache_hits}, "
               f"prompt tokens {ledger.prompt_tokens}, completion tokens "
               f"{ledger.completion_tokens}, {float(ledger.seconds):.0f} s in calls")


# --------------------------------------------------------------------------- curate
def seed_criteria(run: RunRecord, state: he.HypoEvalState) -> str:
    """Put the run's bank up for review once (selected ones accepted); returns the owner of its items."""
    owner = curation.owner(METHOD, run.id)
    selected = set(state.selected_keys)
    curation.seed(store, owner, [{"key": h.key, "name": h.key, "definition": h.text,
                                  "status": "accepted" if h.key in selected else "rejected"}
                                 for h in state.bank])
    return owner


def rejected_by_checks(state: he.HypoEvalState, items: Sequence[curation.CuratedItem]) -> list[dict]:
    """The generated hypotheses the rubric checks refused and nobody has restored yet."""
    present = {i.definition for i in items}
    seen: set[str] = set()
    out = []
    for r in state.rejected:
        if r["text"] not in present and r["text"] not in seen:
            seen.add(r["text"])
            out.append(r)
    return out


# session value: key of the hypothesis saved last, drawn open so the person keeps their place
OPEN_KEY = "hypoeval_open"


def add_hypothesis(owner: str, text: str) -> None:
    key = he.hypothesis_key(text)
    who = auth.actor()
    try:  # once per click: a double click's second run finds the text added and says nothing more
        once.submit(store, f"hypoeval_add_{owner}", (owner, text), "hypothesis",
                    lambda: curation.add(store, owner, key, name=key, definition=text, status="accepted", actor=who))
    except EditConflict:
        messages.flash("warning", "That hypothesis is already in the list.")
    except ValueError as exc:  # binary or megabytes pasted: nothing was saved
        messages.flash("error", f"Not added: {exc}.")
    else:
        st.session_state[OPEN_KEY] = key  # drawn open, ready to refine
    st.rerun()


def figures_text(run: RunRecord, info: he.StoredHypothesis | None, text: str) -> str:
    """A hypothesis's training figures in words: this run's, or "pending" for a text this run never scored
    (edited or added), with where its re-score stands (issue 62 item 4: never the old text's figures)."""
    if info is not None and info.text == text:
        return (f"train r {info.train_pearson:.3f}" if info.train_pearson is not None else "train r undefined") + (
            f" · coverage {info.coverage:.0%}" if info.coverage is not None else "")
    later = he.rescored_by(store.runs(limit=500), run.id, text)
    if later is None:
        return "train r pending: saved, not scored yet (re-score to measure it)"
    status = effective_status(later)
    if status == "finished":
        return f"train r pending here: measured by re-score run #{later.id} (pick it above)"
    if status in tables.LIVE_STATUSES:
        return f"train r pending: re-score run #{later.id} is measuring it"
    return f"train r pending: re-score run #{later.id} is {status} (resume it under Runs)"


def curate(run: RunRecord, state: he.HypoEvalState) -> None:
    owner = seed_criteria(run, state)
    flagged = rubric_flags.flags_by(state.flagged)  # by text: an edited hypothesis is no longer flagged
    items = curation.items(store, owner)
    st.caption("Accepted hypotheses are the ones a re-scoring run uses. Every save is versioned and audited; "
               "a stale edit (someone saved in between) is refused.")
    for item in items:
        info = state.hypothesis(item.name)
        # the version this person started from: a save against it fails if someone saved in between
        seen_key = f"hypoeval_seen_{item.id}"
        seen = st.session_state.setdefault(seen_key, item.version)
        mark = "✅" if item.status == "accepted" else "⛔"
        if info is None:
            origin = "added by a person"
        else:
            origin = info.origin if item.definition == info.text else f"edited by a person (was {info.origin})"
        flags = flagged.get(item.definition, [])
        label = f"{mark} v{item.version} · {origin} · {figures_text(run, info, item.definition)}" + (
            " · ⚠ flagged" if flags else "")
        # the item saved last is drawn open: its label changes with the version, and a changed expander
        # would otherwise come back closed after the Save's rerun
        with st.expander(f"{label} · {item.definition[:80]}", expanded=st.session_state.get(OPEN_KEY) == item.key):
            if flags:
                st.caption(rubric_flags.flag_caption(flags))
                rubric_flags.accept_control(store, owner, item.key, item.definition, flags,
                                            widget_key=f"hypoeval_accept_{item.id}")
            with st.form(f"hypoeval_edit_{item.id}"):
                text = st.text_area("Hypothesis", value=item.definition, key=f"hypoeval_text_{item.id}")
                status = st.radio("Status", ["accepted", "rejected"], horizontal=True,
                                  index=0 if item.status == "accepted" else 1, key=f"hypoeval_status_{item.id}")
                saved = st.form_submit_button("Save")
            messages.show_flash(at=f"hypoeval:{item.id}")  # "Saved." beside the form, not at the page top
            # keyed by the version it undoes: a double click's second run draws the button of the next version,
            # so one click undoes one change
            undo = bool(item.history) and st.button("Undo last change", key=f"hypoeval_undo_{item.id}_v{item.version}")
            if saved and not undo and not text.strip():
                st.session_state[OPEN_KEY] = item.key
                st.error("Not saved: a hypothesis cannot be empty. To leave it out of the judge, set its status to "
                         "rejected.")
            elif saved or undo:
                st.session_state[OPEN_KEY] = item.key
                try:
                    if undo:
                        version = curation.undo(store, owner, item.key, expected_version=seen, actor=auth.actor())
                    else:
                        who = auth.actor()
                        version, _ = once.submit(
                            store, f"hypoeval_save_{item.id}", (owner, item.key, text.strip(), status), "hypothesis",
                            lambda: curation.save(store, owner, item.key, expected_version=seen, actor=who,
                                                  definition=text.strip(), status=status))
                except EditConflict as exc:
                    st.error(messages.escape_markdown(f"Not saved: {exc}. The latest text is: {item.definition}"))
                    st.session_state[seen_key] = item.version  # saving again now overwrites that version knowingly
                except ValueError as exc:  # binary or megabytes pasted: the hypothesis keeps its text
                    st.error(messages.escape_markdown(f"Not saved: {exc}."))
                else:
                    st.session_state[seen_key] = version
                    st.session_state.pop(f"hypoeval_text_{item.id}", None)
                    st.session_state.pop(f"hypoeval_status_{item.id}", None)
                    new_text = not undo and text.strip() != item.definition
                    messages.flash("success", f"Saved as version {version}." + (
                        " Its training figures read pending until a re-score measures the new text."
                        if new_text else ""), at=f"hypoeval:{item.id}")
                    st.rerun()
    restorable = rejected_by_checks(state, items)
    if restorable:
        with st.expander(f"Rejected by the rubric checks ({len(restorable)})"):
            st.caption("Generated hypotheses refused before use: copies of a text the model was shown, "
                       "near-duplicates, empty, repetitive or over-long ones, ones naming no quality, and ones "
                       "the judge's own model said order the evaluator or refuse. Restore one to accept it "
                       "yourself, a rule's refusal or the model's alike; the audit log records who did.")
            for i, r in enumerate(restorable):
                st.text(f"{r['text'][:300]}\n→ {rubric_flags.refusal_text(r)}")
                if st.button("Restore", key=f"hypoeval_restore_{i}"):
                    messages.flash("success", "Restored and accepted.")
                    add_hypothesis(owner, r["text"])
    with st.form("hypoeval_add"):
        new = st.text_area("Add a hypothesis (a rubric for one trait, describing each score)", key="hypoeval_new")
        if st.form_submit_button("Add") and new.strip():
            add_hypothesis(owner, new.strip())
    accepted = [i.definition for i in curation.items(store, owner) if i.status == "accepted"]
    st.text(f"{len(accepted)} accepted hypotheses.")
    runs.keep_standby(store.path)  # a warm worker for the re-score: no imports after the click (issue 62 item 6)
    if start_form.start_button("Re-score with the accepted hypotheses", "hypoeval_rescore",
                               missing="" if accepted else "accept at least one hypothesis"):
        origins = {h.text: h.origin for h in state.bank}
        params = {**run.params, "hypotheses": [{"text": t, "origin": origins.get(t, "curated")} for t in accepted],
                  "n_selected": len(accepted)}
        new_id = start_form.start(RunSpec(method=METHOD, dataset=run.dataset, aspect=run.aspect, params=params,
                                          seed=run.split.seed, llm=LLMConfig.from_dict(run.llm)),
                                  split=run.split,  # same items and backend: cached calls free
                                  label=" (re-scoring: unchanged hypotheses come from the cache)")
        if new_id is not None:
            widgets.set_value("hypoeval_run_id", new_id)
            widgets.set_value("hypoeval_view", "Results")  # a new run: its results are what comes next
            st.rerun()
    run_view.history_table(owner, key="hypoeval")


# --------------------------------------------------------------------------- results
def results(run: RunRecord, state: he.HypoEvalState) -> None:
    summary = run.summary or RunSummary()  # a finished run without one shows zeros and no correlations
    trust.trust_panel(trust.run_trust(store, run))
    st.markdown("#### Test correlations beside the baselines on the same split")
    run_view.baseline_table(run, key=f"hypoeval_{run.id}")
    with st.expander("This run's correlations at every level, with confidence intervals"):
        st.dataframe(tables.correlation_frame(summary), hide_index=True,
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("pearson", "spearman", "kendall")})
    if summary.levels:
        st.plotly_chart(plots.correlation_bars(summary.levels, natural=summary.level),
                        key=f"hypoeval_bars_{run.id}")
    m = st.columns(5)
    m[0].metric("LLM calls", summary.ledger.calls, help=glossary.HELP["LLM calls"])
    m[1].metric("Cache hits", summary.ledger.cache_hits, help=glossary.HELP["Cache hits"])
    m[2].metric("Prompt tokens", summary.ledger.prompt_tokens, help=glossary.HELP["Prompt tokens"])
    m[3].metric("Seconds", f"{float(summary.seconds):.1f}", help=glossary.HELP["Seconds"])
    m[4].metric("Missing verdicts", f"{summary.parse_failures} of {summary.n}", help=glossary.HELP["Missing verdicts"])

    dataset = readers.load_dataset(store, run.dataset)
    verdicts = readers.load_verdicts(store, run)
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
    table = tables.verdicts_frame(dataset, run.aspect, verdicts)
    aspect = dataset.aspect(run.aspect)
    st.plotly_chart(plots.human_vs_judge_scatter(table["human"].tolist(), table["judge"].tolist(),
                                                 ids=table["sample id"].tolist(), aspect=aspect.name,
                                                 low=aspect.low, high=aspect.high), key=f"hypoeval_scatter_{run.id}")
    matrix = he.per_hypothesis_scores(verdicts, state.selected)
    if matrix["keys"] and matrix["samples"]:
        st.markdown("#### Per-hypothesis scores over the test items")
        st.plotly_chart(plots.per_hypothesis_heatmap(matrix["scores"], hypotheses=matrix["keys"],
                                                     items=matrix["samples"]), key=f"hypoeval_heatmap_{run.id}")
    st.markdown("#### Read one item")
    if verdicts:
        texts = {h.key: h.text for h in state.selected}
        sample_id = st.selectbox("Test item", [v.sample_id for v in verdicts], key=f"hypoeval_item_{run.id}")
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
            st.markdown(f"**{messages.escape_markdown(p['key'])}** — score {shown}")
            st.caption(messages.escape_markdown(texts.get(p["key"], "")))
            if p.get("explanation"):
                st.text(p["explanation"])


# --------------------------------------------------------------------------- pick a run
st.subheader("HypoEval runs")
run = run_view.pick_run(METHOD, "hypoeval_run_id", label="Show run", empty="No HypoEval run yet.")
if run is not None:
    run_id = run.id
    with st.expander("Parameters"):
        st.json(run.params)
    run_view.progress(run_id, live_view=bank_view, key="hypoeval")
    if effective_status(run) == "finished" and run.judge:
        judge = Judge.from_dict(run.judge)
        state = he.HypoEvalState.from_judge(judge)
        st.markdown("#### Selected hypotheses")
        show_warnings(state.warnings)
        selected_flags = rubric_flags.flags_by(state.flagged)
        # who accepted a flagged one (issue 50 item 3): a flagged entry is never in the judge unremarked
        accepted = curation.flag_acceptances(store, curation.owner(METHOD, run.id),
                                             {h.key: h.text for h in state.selected if selected_flags.get(h.text)})
        st.dataframe([{"key": h.key, "origin": h.origin, "train pearson": h.train_pearson,
                       "coverage": h.coverage, "fitness": h.fitness,
                       "chosen by": h.accepted_by or "selection",
                       "reward": h.reward, "rubric flags": rubric_flags.flag_text(selected_flags.get(h.text)),
                       "flags accepted by": accepted[h.key].actor if h.key in accepted else (
                           "not yet (Curate)" if selected_flags.get(h.text) else ""),
                       "hypothesis": h.text} for h in state.selected],
                     hide_index=True, column_config={"hypothesis": st.column_config.TextColumn(width="large"),
                                                     "coverage": st.column_config.NumberColumn(
                                                         format="%.2f", help=COLUMN_HELP["coverage"]),
                                                     "train pearson": st.column_config.NumberColumn(
                                                         format="%.3f", help=COLUMN_HELP["train pearson"]),
                                                     "fitness": st.column_config.NumberColumn(
                                                         format="%.3f", help=COLUMN_HELP["fitness"]),
                                                     "reward": st.column_config.NumberColumn(
                                                         format="%.3f", help=COLUMN_HELP["reward"]),
                                                     "rubric flags": st.column_config.TextColumn(help=FLAGS_HELP)})
        tab_results, tab_curate = widgets.remembered_tabs(["Results", "Curate and re-score"], "hypoeval_view")
        with tab_results:
            results(run, state)
        with tab_curate:
            curate(run, state)
        with st.expander("Judge (JSON)"):
            st.download_button("Download judge", json.dumps(judge.to_dict(), indent=2).encode("utf-8"),
                               file_name=f"hypoeval-run-{run_id}.json", key="hypoeval_dl")

"""Active-Critic: infer the task and criteria from scored examples, correct them, score with explanations.

Configure and start a run (the paper's 25% / 75% split by default), watch
stage 1 as it happens (observations per mini-batch, the task description
taking shape, criteria added and refined), edit the inferred task
description and criteria (versioned, audited, undoable), start a new run from
the edits, and read each test item's explained scores next to the baselines.
"""

from __future__ import annotations

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("Active-Critic")

import math

import pandas as pd

from judge_engine import curation, runs
from judge_engine.llm import LLMConfig
from judge_engine.methods import Judge
from judge_engine.methods.active_critic import ActiveCriticState, edited_judge
from judge_engine.records import RunEvent, RunRecord, RunSummary
from judge_engine.runs import RunSpec, fast_defaults, effective_status
from judge_engine.store import EditConflict
from pages.ui import (app_frame, auth, messages, once, readers, rubric_flags, run_view, session, start_form, tables,
                      trust, widgets)
from pages.ui import glossary


METHOD = "active_critic"
# the fields a first run is tuned by; the others sit under "More settings (paper defaults)"
MAIN_PARAMETERS = ("variant", "n_candidates", "n_demos", "eval_subsample", "max_batches", "max_tokens", "weighted",
                   "no_positive_set")
PAPER_TRAIN_SHARE = 0.25  # the paper trains on 25% of the items and tests on the other 75%
TASK = "task"  # curated key of the task description; the criteria are c1, c2, ... (the keys stored runs have)
RUN_KEY = "ac_run_id"  # session value: the run shown below the start form

store = session.get_store()
st.caption("The judge infers the task and its evaluation criteria from human-scored examples, picks its "
           "demonstrations by correlation on the training split, and explains every score "
           "(Xu, Hu and Jiang, 2024). You can correct what it inferred and rerun from your edits.")
messages.show_flash()


# --------------------------------------------------------------------------- configure and start

st.subheader("New run")
c = st.columns(2)
dataset = start_form.choose_dataset(METHOD, slot=c[0])
if dataset is not None:
    if "overall" in dataset.aspect_names:  # the paper learns the overall score; any aspect works
        st.session_state.setdefault(start_form.dependent_key(METHOD, dataset.name, "aspect"), "overall")
    with c[1]:
        aspect = start_form.choose_aspect(METHOD, dataset)
    n = len(dataset.samples)
    paper_train = max(2, round(n * PAPER_TRAIN_SHARE))
    split = start_form.split_fields(METHOD, dataset, train=paper_train, test=max(1, n - paper_train),
                                    train_help="The paper learns from 25% of the items and tests on the other 75%.")
    params = start_form.parameter_fields(METHOD, METHOD, MAIN_PARAMETERS,
                                         values=fast_defaults(METHOD, session.llm_config()))
    with st.expander("More settings (paper defaults)"):
        params |= start_form.parameter_fields(METHOD, METHOD, start_form.other_parameters(METHOD, MAIN_PARAMETERS))
    baselines = st.checkbox("Run the baselines too", value=True, key=f"{METHOD}_baselines",
                            help="Direct scoring and G-Eval on exactly this run's split and backend, for the "
                                 "comparison under Results (ones already there are reused).")
    peer = start_form.peer_checkbox(METHOD)
    spec = RunSpec(method=METHOD, dataset=dataset.name, aspect=aspect.name, params=start_form.changed(METHOD, params),
                   train_size=split.train_size, test_size=split.test_size, seed=split.seed, llm=session.llm_config())
    with_baselines = (runs.BASELINES if baselines else ()) + peer
    started_id = start_form.quick_start(METHOD, spec, key=f"{METHOD}_quick", baselines=with_baselines)
    spec_refused = start_form.estimate_box(spec) is None
    if start_form.start_button("Start run", f"{METHOD}_start",
                               missing="the configuration was refused (see the message above)" if spec_refused else ""):
        started_id = start_form.start(spec, baselines=with_baselines, label=" (Active-Critic)")
    if started_id is not None:
        widgets.set_value(RUN_KEY, started_id)
        st.rerun()


# --------------------------------------------------------------------------- stage 1, live

def stage_one(events: list[RunEvent]) -> None:
    """Observations per batch, the task description versions, the criteria timeline, the demo search."""
    by_kind: dict[str, list[dict]] = {}  # event kind -> payloads, oldest first
    for e in events:
        by_kind.setdefault(e.kind, []).append(e.payload)
    descriptions = by_kind.get("task_description", [])
    st.markdown("**Task description**")
    if descriptions:
        st.text(descriptions[-1]["text"] or "(empty)")
        if len(descriptions) > 1:
            with st.expander(f"{len(descriptions)} versions"):
                for d in descriptions:
                    st.text(f"v{d['version']} ({'every batch merged' if d.get('ensemble') else 'batch ' + str(d['batch'])}): "
                            f"{d['text']}")
    else:
        st.caption("Not yet inferred.")
    observations = by_kind.get("task_observation", [])
    if observations:
        with st.expander(f"Observations on {len(observations)} mini-batch(es)"):
            for o in observations:
                st.markdown(f"*Batch {o['batch']}*" + (" — COMPLETE" f" ({o['streak']} in a row)" if o["complete"] else ""))
                if not o["complete"]:
                    st.text(o["text"])
    criteria_events = by_kind.get("criteria", [])
    st.markdown("**Criteria**")
    if criteria_events:
        latest = criteria_events[-1]["criteria"]
        st.dataframe(pd.DataFrame({"criterion": list(latest), "definition": list(latest.values())}),
                     hide_index=True, key="ac_live_criteria")
        rows = [{"iteration": c["iteration"], "action": c["action"], "added": ", ".join(c.get("added", [])),
                 "refined": ", ".join(c.get("refined", [])), "removed": ", ".join(c.get("removed", [])),
                 "parsed": c.get("parsed", True)} for c in criteria_events]
        completes = sum(1 for o in by_kind.get("criteria_observation", []) if o["complete"])
        with st.expander(f"How the criteria changed ({len(rows)} step(s), {completes} COMPLETE answer(s))"):
            st.dataframe(pd.DataFrame(rows), hide_index=True, key="ac_live_timeline")
    else:
        st.caption("Not yet inferred.")
    candidates = by_kind.get("candidate", [])
    if candidates:
        st.markdown("**Demonstration search** (Q = Pearson + Spearman + Kendall on the training items each set "
                    "scored; ranked by Q x coverage)")
        st.dataframe(pd.DataFrame([candidate_row(c) for c in candidates]), hide_index=True, key="ac_live_candidates")
        st.caption("A set is selected on its own only when it scored at least 80% of its items and Q > 0. "
                   "Coverage = items scored / items tried; a Q resting on few items means little.")
    selected = by_kind.get("demos_selected", [])
    if selected and selected[-1].get("candidate") is not None:
        s = selected[-1]
        st.caption(f"Selected: candidate {s['candidate']} (Q {fmt(s.get('q'))} on {s.get('n_scored', '?')} of "
                   f"{s.get('n_items', '?')} items).")
    reads = read_counts(by_kind)
    if any(reads.values()):
        st.caption(f"Replies read as JSON: {reads['json']}; by the free-text fallback: {reads['fallback']}; "
                   f"unreadable: {reads['missing']}.")
    for w in by_kind.get("warning", []):
        st.warning(messages.escape_markdown(f"{w.get('code')}: {w.get('message')}"))
    failures = by_kind.get("parse_failure", [])
    if failures:
        st.warning(messages.escape_markdown("Unreadable replies: " + "; ".join(
            f"{f['stage']}: {f.get('count', f.get('note', ''))}" for f in failures)))


def fmt(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def candidate_row(c: dict) -> dict:
    """One demonstration set as a table row, its coverage beside its Q."""
    items = c.get("n_items", c.get("n_scored"))  # runs before coverage was recorded: n_scored meant items tried
    scored = c.get("n_scored", 0) if "n_items" in c else (items or 0) - (c.get("n_missing") or 0)
    return {"candidate": c.get("candidate"), "kind": c.get("kind"), "Q": c.get("q"),
            "coverage": f"{scored}/{items}" if items else "—", "Q x coverage": c.get("fitness"),
            "selectable": c.get("selectable"), "why not": c.get("not_selectable_because", ""),
            "pearson": c.get("pearson"), "spearman": c.get("spearman"), "kendall": c.get("kendall"),
            "retried": c.get("n_retried"), "demos": ", ".join(c.get("demo_ids") or [])}


def read_counts(by_kind: dict[str, list[dict]]) -> dict[str, int]:
    """Replies of stage 1 and the demo search read as JSON, by the fallback parsers, or not at all."""
    out = {"json": 0, "fallback": 0, "missing": 0}
    for kind in ("task_description", "criteria"):
        for e in by_kind.get(kind, []):
            read = e.get("read")
            if read:
                out["json" if read == "json" else "missing" if read == "missing" else "fallback"] += 1
    for c in by_kind.get("candidate", []):
        for key in out:
            out[key] += (c.get("reads") or {}).get(key, 0)
    return out


def stage_one_view(s, run: RunRecord) -> None:
    """Stage 1 of ``run`` as far as its events go (drawn at every poll of the progress panel)."""
    stage_one(s.run_events(run.id))


# --------------------------------------------------------------------------- pick a run

st.divider()
run = run_view.pick_run(METHOD, RUN_KEY, empty="No Active-Critic run yet: start one above.")
if run is None:
    st.stop()
run_id = run.id
st.subheader(f"Run #{run_id}: stage 1")
run_view.progress(run_id, live_view=stage_one_view, key="ac")
if not run.judge:
    st.stop()
judge = Judge.from_dict(run.judge)
learned = ActiveCriticState.from_judge(judge)  # what stage 1 and the search found, typed


# --------------------------------------------------------------------------- correct the task and criteria

def seed_items(run_id: int) -> str:
    """Put the run's task description and criteria up for review, once; returns the owner of its items."""
    owner = curation.owner(METHOD, run_id)
    curation.seed(store, owner, [{"key": TASK, "name": "Task description", "status": "inferred",
                                  "definition": learned.task_description}]
                  + [{"key": f"c{i}", "name": name, "definition": definition, "status": "inferred"}
                     for i, (name, definition) in enumerate(learned.criteria.items(), 1)])
    return owner


def next_key(items: list[curation.CuratedItem]) -> str:
    """A criterion key no item of the run has (c1, c2, ...: the keys stored runs already use)."""
    used = [int(i.key[1:]) for i in items if i.key[:1] == "c" and i.key[1:].isdigit()]
    return f"c{max(used, default=0) + 1}"


def forget_fields(items: list[curation.CuratedItem]) -> None:
    """Drop the form's typed values, so it shows the stored text again on the next run."""
    for key in [f"ac_task_{run_id}", f"ac_add_name_{run_id}", f"ac_add_def_{run_id}"] + [
            f"ac_{field}_{i.id}" for i in items for field in ("name", "def", "rm")]:
        st.session_state.pop(key, None)


def restore_refused(owner: str, items: list[curation.CuratedItem], entry: dict) -> None:
    """A refused entry taken back by a person, as a rule's or the model's refusal alike: a criterion is added (its
    name and definition), a task description replaces the current one; saved and audited under their name."""
    text, name = str(entry.get("text") or ""), str(entry.get("name") or "").strip()
    who = auth.actor()
    try:
        if entry.get("stage") == "task description":
            curation.save(store, owner, TASK, expected_version=next(i.version for i in items if i.key == TASK),
                          actor=who, definition=text, status="edited")
        else:
            definition = text[len(name) + 2:] if name and text.startswith(f"{name}: ") else text
            once.submit(store, f"ac_restore_{run_id}", (owner, name, definition), "criterion",
                        lambda: curation.add(store, owner, next_key(items), name=name or "restored criterion",
                                             definition=definition, status="added", actor=who))
    except (EditConflict, ValueError) as exc:  # a viewer, a stale task description, a text the store refuses
        messages.flash("error", f"Not restored: {exc}", at="ac_refused")
    else:
        st.session_state.pop(f"ac_seen_versions_{run_id}", None)
        forget_fields(items)
        messages.flash("success", f"Restored {name or 'the task description'!r}; a run from the edits uses it.",
                       at="ac_refused")
    st.rerun()


def refused_panel(owner: str, items: list[curation.CuratedItem]) -> None:
    """What the checks refused of stage 1 (the rules' and the judge's own model's refusals, each with its reason
    and labelled by which), with a Restore for each a person wants anyway."""
    refused = [r for r in learned.rejected if str(r.get("stage") or "").startswith(("criteria", "task description",
                                                                                     "scores on the training"))]
    messages.show_flash(at="ac_refused")
    if not refused:
        return
    present = {i.definition for i in items} | {f"{i.name}: {i.definition}" for i in items}
    with st.expander(f"Refused by the checks ({len(refused)})"):
        st.caption("Inferred criteria and task descriptions refused before use: by a rule (a copy, a near-duplicate, "
                   "a template left in, ...), on their training scores, or by the judge's own model (an order to the "
                   "evaluator, a refusal). Restore one to use it anyway, a rule's refusal or the model's alike; the "
                   "audit log records who did.")
        for i, r in enumerate(refused):
            c = st.columns([5, 1])
            restored = r.get("text") in present
            c[0].markdown(f"**{messages.escape_markdown(str(r.get('name') or r.get('stage') or ''))}** · "
                          f"{messages.escape_markdown(str(r.get('text') or '')[:300])}  \n"
                          f":gray[{messages.escape_markdown(rubric_flags.refusal_text(r))}"
                          f"{' · restored' if restored else ''}]")
            if c[1].button("Restore", key=f"ac_restore_{run_id}_{i}", disabled=restored):
                restore_refused(owner, items, r)


st.subheader("Correct the task description and criteria")
st.caption(rubric_flags.checked_by(run.llm))  # the rules alone on the embedded model, said so (issue 65)
owner = seed_items(run_id)
items = curation.items(store, owner)
by_key = {i.key: i for i in items}
# The version of each item this person started from: a save is checked against it, so a change someone else
# saved meanwhile is refused with a message instead of silently overwritten.
seen: dict[str, int] = st.session_state.setdefault(f"ac_seen_versions_{run_id}", {i.key: i.version for i in items})
task = by_key[TASK]
criteria_items = [i for i in items if i.key != TASK]
# the rubric checks' doubts about what stage 1 inferred, shown while an item keeps the text they were raised on
flagged = learned.flagged
task_flags = rubric_flags.flags_by([f for f in flagged if f.get("stage") == "task description"]).get(task.definition)
criterion_flags = rubric_flags.flags_by([f for f in flagged if f.get("stage") == "criteria"], "name")
inferred = learned.criteria

with st.form(f"ac_edit_{run_id}"):
    new_task = st.text_area("Task description", value=task.definition, key=f"ac_task_{run_id}")
    if task_flags:
        st.caption(rubric_flags.flag_caption(task_flags))
    edits = {}
    for item in criteria_items:
        c = st.columns([2, 6, 1])
        name = c[0].text_input("Criterion", value=item.name, key=f"ac_name_{item.id}")
        definition = c[1].text_input("Definition", value=item.definition, key=f"ac_def_{item.id}")
        removed = c[2].checkbox("Remove", value=item.status == "removed", key=f"ac_rm_{item.id}",
                                help="Leave it out of a run from the edits; untick to bring it back.")
        if item.name in criterion_flags and inferred.get(item.name) == item.definition:
            c[1].caption(rubric_flags.flag_caption(criterion_flags[item.name]))
        edits[item.key] = (name.strip(), definition.strip(), "removed" if removed else item.status)
    c = st.columns([2, 6, 1])
    add_name = c[0].text_input("New criterion", key=f"ac_add_name_{run_id}")
    add_def = c[1].text_input("Its definition", key=f"ac_add_def_{run_id}")
    saved = st.form_submit_button("Save edits")

messages.show_flash(at="ac_edit")  # the outcome of a Save beside the form: the person stays where they edit
if saved:
    changes = []
    if new_task != task.definition:
        changes.append((TASK, {"definition": new_task, "status": "edited"}))
    for item in criteria_items:
        name, definition, status = edits[item.key]
        if (name, definition, status) != (item.name, item.definition, item.status):
            changes.append((item.key, {"name": name, "definition": definition,
                                       "status": status if status == "removed" else "edited"}))
    try:
        for key, change in changes:
            seen[key] = curation.save(store, owner, key, expected_version=seen.get(key, by_key[key].version),
                                      actor=auth.actor(), **change)
        if add_name.strip():
            who = auth.actor()
            once.submit(store, f"ac_add_{run_id}", (owner, add_name.strip(), add_def.strip()), "criterion",
                        lambda: curation.add(store, owner, next_key(items), name=add_name.strip(),
                                             definition=add_def.strip(), status="added", actor=who))
            changes.append(("new", {}))
    except EditConflict as exc:
        st.error(messages.escape_markdown(f"{exc}. Your other changes before it were saved; press Reload to see the "
                              "current text, then edit again."))
    except ValueError as exc:  # a blank name, a binary or over-long text: the criterion keeps its own
        st.error(messages.escape_markdown(f"Not saved: {exc}. Your other changes before it were saved; correct it, "
                                        "or tick Remove to leave it out."))
    else:
        st.session_state.pop(f"ac_seen_versions_{run_id}", None)
        forget_fields(items)
        messages.flash("success", f"Saved {len(changes)} change(s)." if changes else "Nothing changed.", at="ac_edit")
        st.rerun()

undoable = [i for i in items if i.history]
c = st.columns([4, 1, 1], vertical_alignment="bottom")
if undoable:
    pick = c[0].selectbox("Undo the last change of", [i.key for i in undoable], key=f"ac_undo_pick_{run_id}",
                          format_func=lambda k: f"{by_key[k].name or k} (version {by_key[k].version})",
                          help="Restores the item's previous text as a new version; the undo is audited too.")
    if c[1].button("Undo", key=f"ac_undo_{run_id}"):
        try:
            curation.undo(store, owner, pick, expected_version=seen.get(pick, by_key[pick].version),
                          actor=auth.actor())
        except (EditConflict, ValueError) as exc:
            st.error(messages.escape_markdown(f"Not undone: {exc}. Press Reload to see the current text."))
        else:
            st.session_state.pop(f"ac_seen_versions_{run_id}", None)
            forget_fields(items)
            messages.flash("success", f"Undid the last change of {by_key[pick].name!r}.", at="ac_edit")
            st.rerun()
if c[2].button("Reload", key=f"ac_reload_{run_id}", help="Show the text as stored now (others' saves included)."):
    st.session_state.pop(f"ac_seen_versions_{run_id}", None)
    forget_fields(items)
    st.rerun()
run_view.history_table(owner, key=f"ac_{run_id}")
refused_panel(owner, items)
# the judge's flagged task description and criteria: a person accepts them, or edits them above (issue 50 item 3)
rubric_flags.judge_flags_panel(store, run, widget_prefix="ac")

items = curation.items(store, owner)
edited_task = next(i.definition for i in items if i.key == TASK)
edited_criteria = {i.name: i.definition for i in items if i.key != TASK and i.status != "removed" and i.name}
changed = edited_task != learned.task_description or edited_criteria != learned.criteria
missing = "" if changed else "no saved edit differs from the run's own task description and criteria"
b = st.columns(2)
with b[0]:
    refit = start_form.start_button("New run from the edits (redo the demo search)", "ac_refit", missing=missing)
with b[1]:
    rescore = start_form.start_button("Score the test split with the edited judge (keep the demos)", "ac_rescore",
                                      missing=missing)
st.caption("Both use exactly this run's split and backend: unchanged LLM calls come from the cache.")
if refit or rescore:
    split = run.split
    params = {**run.params, "task_description": edited_task, "criteria": edited_criteria}
    spec = RunSpec(method=METHOD, dataset=run.dataset, aspect=run.aspect, params=params,
                   train_size=len(split.train_ids), test_size=len(split.test_ids), seed=split.seed,
                   llm=LLMConfig.from_dict(run.llm))
    rescored = None
    if rescore:  # the fitted judge with the person's text: no stage 1, no demo search
        rescored = edited_judge(judge, params=params, task_description=edited_task, criteria=edited_criteria)
    new_id = start_form.start(spec, judge=rescored, split=split, label=f" from the edits of run #{run_id}")
    if new_id is not None:
        widgets.set_value(RUN_KEY, new_id)
        st.rerun()

if effective_status(run) != "finished":
    st.stop()


# --------------------------------------------------------------------------- results

st.subheader("Results on the test split")
summary = run.summary or RunSummary()  # a finished run without one shows zeros and no correlations
trust.trust_panel(trust.run_trust(store, run))


st.markdown("**Test correlations beside the baselines on the same split**")
run_view.baseline_table(run, key=f"ac_{run_id}")
levels = tables.correlation_frame(summary)
if levels.empty:
    st.info("No correlation is defined yet (too few items scored, or constant scores).")
else:
    with st.expander("This run's correlations at every level, with 95% bootstrap intervals"):
        st.dataframe(levels, hide_index=True, key="ac_levels")
st.caption(f"This run: {summary.ledger.calls} LLM calls, {summary.ledger.cache_hits} cache hits, "
           f"{summary.ledger.prompt_tokens + summary.ledger.completion_tokens} tokens, "
           f"{float(summary.seconds):.0f} s, {summary.parse_failures} missing scores.")

verdicts = readers.load_verdicts(store, run)
ds = readers.load_dataset(store, run.dataset)
index = ds.by_id()
aspect = ds.aspect(run.aspect)
st.dataframe(tables.verdicts_frame(ds, run.aspect, verdicts), hide_index=True, key="ac_verdicts")
sources: dict[str, int] = {}
for v in verdicts:
    sources[v.metadata.get("source", "?")] = sources.get(v.metadata.get("source", "?"), 0) + 1
if sources:
    st.caption("Where the test scores came from: " + ", ".join(f"{k} {n}" for k, n in sorted(sources.items()))
               + " (json = structured reply, text = free-text fallback, logprobs_first_position = read from the "
                 "alternatives of a reply that chose no digit).")
for w in learned.warnings:
    st.warning(messages.escape_markdown(f"{w.get('code')}: {w.get('message')}"))
n_crit_missing = sum(len(v.metadata.get("missing_criteria") or []) for v in verdicts)
n_crit = sum(len(v.metadata.get("criteria_100") or {}) for v in verdicts)
if n_crit:
    st.caption(f"Criterion scores that could not be read: {n_crit_missing} of {n_crit} (missing, never imputed). "
               f"Overall scores missing: {sum(1 for v in verdicts if v.missing)} of {len(verdicts)}.")
n_refused = sum(1 for v in verdicts if v.metadata.get("explanation_rejected"))
if n_refused:
    st.warning(f"{n_refused} of {len(verdicts)} explanations were empty or one line repeated over and over: they "
               "are not shown as the judge's explanation (each item's reply is kept under Raw reply).")

if verdicts:
    pick = st.selectbox("Test item", [v.sample_id for v in verdicts], key=f"ac_item_{run_id}")
    v = next(v for v in verdicts if v.sample_id == pick)
    sample = index.get(pick)
    c = st.columns(3)
    human = sample.human.get(aspect.name) if sample else None
    c[0].metric("Human score", "—" if human is None else f"{human:.2f}", help=glossary.HELP["Human score"])
    c[1].metric("Judge score", "missing" if v.missing else f"{v.score:.2f}", help=glossary.HELP["Judge score"])
    c[2].metric("Judge 0-100", "—" if v.metadata.get("overall_100") is None else f"{v.metadata['overall_100']:g}", help=glossary.HELP["Judge 0-100"])
    st.markdown("**Overall explanation and error analysis**")
    refused = v.metadata.get("explanation_rejected")
    if refused:
        st.caption(messages.escape_markdown(f"Not shown: the explanation was rejected ({refused})."))
        with st.expander("Raw reply"):
            st.text(v.raw)
    else:
        st.text(v.explanation or "(none)")
    crit100 = v.metadata.get("criteria_100") or {}
    if crit100:
        st.dataframe(pd.DataFrame([{"criterion": name, "score (0-100)": crit100.get(name),
                                    f"score ({aspect.low:g}-{aspect.high:g})":
                                        None if math.isnan(v.criteria.get(name, math.nan)) else v.criteria[name],
                                    "explanation": (v.metadata.get("criteria_explanations") or {}).get(name, "")}
                                   for name in crit100]), hide_index=True, key="ac_item_criteria")
    if sample:
        with st.expander("The item"):
            st.text(sample.input[:4000])
            st.text(sample.output)

st.markdown("**Demonstrations that won the search**")
demos = learned.demos
if demos:
    st.dataframe(pd.DataFrame([{"sample": d["sample_id"], "kind": d["kind"], "human 0-100": round(d["human_100"], 2),
                                "judge 0-100": d.get("overall"), "response": d["output"][:200]} for d in demos]),
                 hide_index=True, key="ac_demos_table")
else:
    st.caption("Zero-shot won (no demonstrations).")
st.download_button("Download the judge (JSON)", judge.to_json().encode("utf-8"),
                   file_name=f"active-critic-run-{run_id}.json", mime="application/json", key="ac_download")

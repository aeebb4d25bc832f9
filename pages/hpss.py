"""HPSS page: configure a prompting-strategy search, watch it live, inspect strategies, compare on test."""

from __future__ import annotations

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("HPSS: prompting-strategy search")

from typing import Any, Sequence

import pandas as pd

from judge_engine import curation, runs
from judge_engine.figures import human_vs_judge_scatter
from judge_engine.figures.hpss import FITNESS, X_AXES, advantage_heatmap, fitness_figure, history_frame
from judge_engine.llm import LLMError, make_llm
from judge_engine.llm.base import LLMConfig
from judge_engine.methods import METHODS, Judge
from judge_engine.methods.hpss import (FACTOR_NAMES, FACTOR_TITLES, FACTOR_VALUES, HPSS, VALUE_TITLES, HPSSState,
                                       base_strategy, describe, parse_strategy, search_trace, strategy_name)
from judge_engine.metrics import SelectionFitness
from judge_engine.records import Aspect, Dataset, RunRecord
from judge_engine.runs import Baseline, RunSpec
from judge_engine.store import EditConflict
from pages.ui import (app_frame, auth, messages, readers, rubric_flags, run_view, session, start_form, tables, trust,
                      widgets)
from pages.ui import glossary


METHOD = "hpss"
MAIN_PARAMETERS = ("search", "budget", "validation_size", "fitness_level")
BASE_PROMPT = "MT-Bench base prompt"
COMPARISONS = (BASE_PROMPT,) + runs.BASELINES
# parameters that only steer the search: a fixed-strategy comparison run leaves them at their defaults, so one
# base-prompt run on a split serves every search on it (the engine reuses a comparable baseline)
SEARCH_ONLY = ("search", "budget", "population", "mutations", "exploit_prob", "temperature", "exploration_weight")

store = session.get_store()
messages.show_flash()

st.caption("Searches 12,960 judge prompts (8 factors) for the one whose scores agree best with human scores "
           "on a validation split (Wen et al., 2025). The run's training items are the validation set.")


def comparisons(chosen: Sequence[str], params: dict[str, Any], aspect: Aspect) -> list[Baseline]:
    """The chosen comparison runs, as baselines the engine starts on exactly the search's split.

    The MT-Bench base prompt is HPSS itself with the search's starting
    strategy fixed and the search's other settings (validation items,
    level, reply limits), so it differs from the search in the prompt only.
    """
    out = []
    for name in chosen:
        if name == BASE_PROMPT:
            kept = {k: v for k, v in params.items() if k not in SEARCH_ONLY}
            base = strategy_name(base_strategy(aspect, params.get("base_scale")))
            out.append(Baseline(METHOD, {**kept, "fixed_strategy": base}, BASE_PROMPT))
        else:
            out.append(Baseline(name))
    return out


def comparison_title(name: str) -> str:
    return name if name == BASE_PROMPT else METHODS[name].title


# --------------------------------------------------------------------------- configure and start

st.subheader("Start a search")
c = st.columns(2)
dataset = start_form.choose_dataset(METHOD, slot=c[0])
if dataset is not None:
    with c[1]:
        aspect = start_form.choose_aspect(METHOD, dataset)
    split = start_form.split_fields(
        METHOD, dataset, train=30, test=40,
        train_help="For HPSS they are the search's validation set: every candidate prompt is scored on them "
                   "(or on a seeded subset of them, see Validation items).")
    params = start_form.parameter_fields(METHOD, METHOD, MAIN_PARAMETERS, columns=4)
    with st.expander("More settings (paper defaults)"):
        params |= start_form.parameter_fields(METHOD, METHOD, start_form.other_parameters(METHOD, MAIN_PARAMETERS))
    compare = st.multiselect(
        "Also score the same test items with", COMPARISONS, default=[BASE_PROMPT], key="hpss_compare",
        format_func=comparison_title,
        help="Comparison runs on exactly this search's split and backend. The MT-Bench base prompt is the "
             "search's starting prompt, scored without searching; direct scoring and G-Eval are the papers' "
             "usual baselines. One already on this split is reused.")
    peer = start_form.peer_checkbox("hpss")
    chosen = start_form.changed(METHOD, params)
    spec = RunSpec(method=METHOD, dataset=dataset.name, aspect=aspect.name, params=chosen,
                   train_size=split.train_size, test_size=split.test_size, seed=split.seed, llm=session.llm_config())
    quick_id = start_form.quick_start(METHOD, spec, key="hpss_quick",
                                      baselines=lambda quick: comparisons(compare, quick, aspect) + list(peer))
    if quick_id is not None:
        widgets.set_value("hpss_run_id", quick_id)
        st.rerun()
    st.metric("Strategy evaluations", HPSS(**params).n_evaluations(),
              help="Prompts scored on the validation items: the 21 of initialization plus the strategies "
                   "evaluated after it (stepwise greedy: always 21).")
    if start_form.estimate_box(spec) is not None:
        if start_form.start_button("Start search", "hpss_start"):
            run_id = start_form.start(spec, baselines=comparisons(compare, chosen, aspect) + list(peer), label=" (HPSS search)")
            if run_id is not None:
                widgets.set_value("hpss_run_id", run_id)
                st.rerun()


# --------------------------------------------------------------------------- the search as it runs

COVERAGE_NOTE = ("Fitness counts the validation items a strategy failed to score: below 80% scored it is not "
                 "eligible (no fitness), otherwise ρ×100 × coverage. Only a selectable strategy (eligible, ρ > 0) "
                 "is adopted automatically.")


def search_view(s: Any, run: RunRecord) -> None:
    """The search so far: best fitness, the fitness curve, factor advantages, population, every strategy.

    Drawn by the progress panel at every poll while the run is live, and once when it is done (``run`` is the
    panel's run).
    """
    trace = search_trace(s.run_events(run.id))
    ledger = run.ledger  # llm.LedgerTotals: all 0 before the run's first call
    c1, c2, c3, c4 = st.columns(4)
    best = trace["best"]
    c1.metric("Best validation fitness", "–" if best is None else f"{best['fitness']:.1f}", help=COVERAGE_NOTE)
    c2.metric("Strategies evaluated",
              f"{len(trace['evaluated'])} of {(trace['started'] or {}).get('evaluations') or '?'}",
              help=glossary.HELP["Strategies evaluated"])
    c3.metric("LLM calls", ledger.calls, help=glossary.HELP["LLM calls"])
    c4.metric("Cache hits", ledger.cache_hits, help=glossary.HELP["Cache hits"])
    for note in trace["notes"]:
        st.warning(messages.escape_markdown(note))
    if trace["aux_missing"]:
        st.caption("Auxiliary replies with nothing usable (recorded as missing): "
                   + ", ".join(f"{k}: {v}" for k, v in trace["aux_missing"].items()))
    if not trace["evaluated"]:
        return
    frame = history_frame(trace["evaluated"])
    x = st.radio("x axis", list(X_AXES), horizontal=True, key="hpss_x")
    st.plotly_chart(fitness_figure(frame, x=x), key="hpss_fitness_chart")
    if trace["advantages"]:
        st.plotly_chart(advantage_heatmap(trace["advantages"]), key="hpss_adv_chart")
    if trace["population"]:
        st.caption("Current population")
        st.dataframe(pd.DataFrame([{FITNESS: m["fitness"], **describe(parse_strategy(m["strategy"]))}
                                   for m in trace["population"]]), hide_index=True)
    st.caption("Evaluated strategies. " + COVERAGE_NOTE)
    st.dataframe(frame, hide_index=True)


# --------------------------------------------------------------------------- best strategy and results


def _coverage(s: SelectionFitness | None) -> str:
    return "–" if s is None else f"{s.n_scored} of {s.n} items ({s.coverage:.0%})"


def best_strategy(run: RunRecord, judge: Judge) -> None:
    state = HPSSState.from_judge(judge)
    st.subheader("Best strategy")
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Validation fitness (best)", "–" if state.fitness is None else f"{state.fitness:.1f}",
              help=COVERAGE_NOTE)
    c2.metric("Coverage (best)", _coverage(state.selection), help=glossary.HELP["Coverage (best)"])
    c3.metric("Validation fitness (MT-Bench base)",
              "–" if state.base_fitness is None else f"{state.base_fitness:.1f}", help=COVERAGE_NOTE)
    c4.metric("Coverage (MT-Bench base)", _coverage(state.base_selection), help=glossary.HELP["Coverage (MT-Bench base)"])
    readings = state.readings
    if readings:
        st.caption(f"Validation ratings read as JSON: {readings.get('json', 0)} · by the free-text fallback: "
                   f"{readings.get('text', 0)} · probability-weighted from a follow-up: {readings.get('logprobs', 0)} "
                   f"(of them from alternatives: {readings.get('from_alternatives', 0)}) · missing: "
                   f"{readings.get('missing', 0)}")
    aux_readings = state.auxiliary_readings
    if aux_readings:
        st.caption("Auxiliary replies (criteria, steps, questions, references the prompts use), read as JSON, by "
                   "the free-text fallback, or missing: " + "; ".join(
                       f"{k} {v.get('json', 0)} JSON, {v.get('text', 0)} fallback, {v.get('missing', 0)} missing"
                       for k, v in aux_readings.items()))
    if state.accepted_by_person:
        st.caption("This strategy was fixed by a person, not selected by the search.")
    for w in state.warnings:
        st.warning(messages.escape_markdown(w["message"]))
    refused_aux = state.rejected
    if refused_aux:
        with st.expander(f"Auxiliaries the checks refused ({len(refused_aux)})"):
            st.caption("Generated criteria, AutoCoT steps, metrics questions or references that were empty, "
                       "repeated, too long, copied from a text the prompt showed, or (criteria) named no quality. "
                       "A refused auxiliary was not used: the strategies needing it went without a score on those "
                       "items. A step or question that repeated an earlier one was left out of its list.")
            st.dataframe(pd.DataFrame([{"auxiliary": r.get("kind"), "for": r.get("key"),
                                        "rule": str(r.get("rule", "")).replace("_", " "), "reason": r.get("reason"),
                                        "text": str(r.get("text", ""))[:300]} for r in refused_aux]),
                         hide_index=True)
    flagged_aux = state.flagged
    if flagged_aux:
        with st.expander(f"Auxiliaries used with flags ({len(flagged_aux)})"):
            st.caption("Generated auxiliaries the rubric checks doubted but did not refuse: they were used, and the "
                       "search's fitness decided whether the strategies using them won. The flags say why they are "
                       "doubtful (e.g. criteria that name no quality, or talk about the raters or the scoring).")
            st.dataframe(pd.DataFrame([{"auxiliary": r.get("kind"), "for": r.get("key"),
                                        "flags": rubric_flags.flag_text(r.get("flags")),
                                        "text": str(r.get("text", ""))[:300]} for r in flagged_aux]),
                         hide_index=True)
    st.dataframe(pd.DataFrame([{"factor": k, "value": v} for k, v in state.readable.items()]), hide_index=True)
    st.download_button("Export judge (JSON)", judge.to_json(), file_name=f"hpss-judge-{run.id}.json",
                       key="hpss_export")


def results(run: RunRecord, judge: Judge, run_dataset: Dataset) -> None:
    st.subheader("Test split")
    run_view.baseline_table(run, key=f"hpss_{run.id}")
    base = HPSSState.from_judge(judge).base_strategy
    named = [r.id for r in runs.runs_on_same_split(store, run, methods=(METHOD,))
             if r.params.get("fixed_strategy") == base]
    if named:
        st.caption(messages.escape_markdown(f"The {BASE_PROMPT} ({base}) is run " + ", ".join(f"#{i}" for i in named)
                                + ": the search's starting prompt, scored without searching."))
    trust.trust_panel(trust.run_trust(store, run))
    st.caption("Correlations of the best strategy at every level")
    st.dataframe(tables.correlation_frame(run.summary), hide_index=True)
    st.caption("Test verdicts")
    st.dataframe(tables.verdicts_frame(run_dataset, run.aspect, readers.load_verdicts(store, run)),
                 hide_index=True)


# --------------------------------------------------------------------------- inspect any strategy


def inspect(run: RunRecord, judge: Judge, run_dataset: Dataset) -> None:
    st.subheader("Inspect a strategy")
    trace = search_trace(store.run_events(run.id))
    evaluated = {e["strategy"]: e for e in trace["evaluated"]}
    val_ids = (trace["started"] or {}).get("validation_ids") or list(HPSSState.from_judge(judge).validation_ids)
    if not (evaluated and val_ids):
        return
    order = sorted(evaluated, key=lambda k: -(evaluated[k]["fitness"] if evaluated[k]["fitness"] is not None
                                              else -1e9))

    def _label(k: str) -> str:
        e = evaluated[k]
        cover = "" if e.get("coverage") is None else f" · coverage {e['coverage']:.0%}"
        mark = "" if e.get("selectable", True) else " · not selectable"
        return f"{e['fitness']}{cover}{mark} · {k}"

    chosen = st.selectbox("Strategy", order, key="hpss_inspect", format_func=_label)
    entry = evaluated[chosen]
    index = run_dataset.by_id()
    human = [index[i].human.get(run.aspect) for i in val_ids]
    run_aspect = run_dataset.aspect(run.aspect)
    st.plotly_chart(human_vs_judge_scatter(human, entry["scores"], ids=val_ids, aspect=run.aspect,
                                           low=run_aspect.low, high=run_aspect.high,
                                           title=f"Validation scores of {chosen}"), key="hpss_inspect_scatter")
    item = st.selectbox("Validation item", val_ids, key="hpss_inspect_item")
    if st.button("Show the rendered prompt", key="hpss_render"):
        try:
            llm = make_llm(LLMConfig.from_dict(run.llm), store=store, api_key=session.api_key())
            prompt = HPSS.render(judge, index[item], llm=llm, strategy=chosen,
                                 pool=[index[i] for i in val_ids], leave_out=True)
        except LLMError as exc:
            st.error(messages.escape_markdown(str(exc)))
        else:
            if prompt is None:
                st.warning("An auxiliary this strategy needs is missing for this item (its reply had no usable "
                           "content), so the item was not scored.")
            else:
                st.code(prompt, language=None, wrap_lines=True)


# --------------------------------------------------------------------------- edit and re-score


def curate(run: RunRecord, judge: Judge, run_dataset: Dataset) -> None:
    """The strategy and the human criteria, versioned under the run; a save re-scores the test split."""
    run_id = run.id
    st.subheader("Edit the strategy and re-score")
    st.caption("Your edit becomes the parameters of a new run on the same split (fixed strategy, human criteria): "
               "every prompt the edit leaves unchanged is answered by the cache. Edits are versioned and audited.")
    owner = curation.owner(METHOD, run_id)
    curation.seed(store, owner, [  # first visit: the search's result is version 1
        {"key": "strategy", "name": "strategy", "definition": HPSSState.from_judge(judge).strategy,
         "status": "accepted"},
        {"key": "criteria", "name": "human criteria", "status": "accepted",
         "definition": judge.params.get("human_criteria") or run_dataset.aspect(run.aspect).definition}])
    strategy_item, criteria_item = curation.get(store, owner, "strategy"), curation.get(store, owner, "criteria")
    current = dict(zip(FACTOR_NAMES, parse_strategy(strategy_item.definition)))
    seen_key = f"hpss_edit_{run_id}_versions"  # the versions this person's form shows: a newer save is a conflict
    seen = st.session_state.setdefault(seen_key, (strategy_item.version, criteria_item.version))
    with st.form("hpss_edit"):
        cols = st.columns(4)
        chosen_values = {}
        for i, f in enumerate(FACTOR_NAMES):
            values = list(FACTOR_VALUES[f])
            chosen_values[f] = cols[i % 4].selectbox(FACTOR_TITLES[f], values, index=values.index(current[f]),
                                                     format_func=VALUE_TITLES[f].get, key=f"hpss_edit_{run_id}_{f}")
        criteria_text = st.text_area("Human-written criteria (used when the criteria factor is human-written)",
                                     criteria_item.definition, key=f"hpss_edit_{run_id}_text")
        st.caption(f"Editing strategy version {seen[0]} · criteria version {seen[1]}")
        submitted = st.form_submit_button("Save edit and re-score the test split")
    messages.show_flash(at="hpss_edit")  # the outcome of a Save beside the form: the person stays where they edit
    if submitted:
        new_strategy = strategy_name(tuple(chosen_values[f] for f in FACTOR_NAMES))
        new_criteria = criteria_text.strip()
        try:
            # both checked before either is written: the re-score uses both, so neither may be stale
            for item, version in ((strategy_item, seen[0]), (criteria_item, seen[1])):
                if item.version != version:
                    raise EditConflict(f"the {item.name} was changed by someone else (version {item.version}, "
                                       f"you edited version {version})")
            sv = seen[0] if new_strategy == strategy_item.definition else curation.save(
                store, owner, "strategy", expected_version=seen[0], actor=auth.actor(), definition=new_strategy)
            cv = seen[1] if new_criteria == criteria_item.definition else curation.save(
                store, owner, "criteria", expected_version=seen[1], actor=auth.actor(), definition=new_criteria)
        except EditConflict as exc:
            st.session_state[seen_key] = (curation.get(store, owner, "strategy").version,
                                          curation.get(store, owner, "criteria").version)
            st.error(messages.escape_markdown(f"{exc}. Your edit was not saved; the form now edits the latest version."))
        else:
            st.session_state[seen_key] = (sv, cv)
            split = run.split
            edited = RunSpec(method=METHOD, dataset=run.dataset, aspect=run.aspect,
                             params={**run.params, "fixed_strategy": new_strategy,
                                     "human_criteria": new_criteria or None},
                             train_size=len(split.train_ids), test_size=len(split.test_ids), seed=split.seed,
                             llm=LLMConfig.from_dict(run.llm))
            new_id = start_form.start(edited, split=split,  # same items and backend: unchanged prompts are cached
                                      label=f" with strategy {new_strategy}")
            if new_id is not None:
                messages.flash("success", f"Saved the edit (strategy version {sv}, criteria version {cv}) and "
                                        f"started run #{new_id}.", at="hpss_edit")
                st.rerun()
    undo_edit(owner, run_id, [strategy_item, criteria_item], seen_key)
    run_view.history_table(owner, key="hpss")


def undo_edit(owner: str, run_id: int, items: list[curation.CuratedItem], seen_key: str) -> None:
    """One Undo per edited item: its previous state comes back as a new version (re-score with Save)."""
    undoable = [(i, item) for i, item in enumerate(items) if item.history]
    if not undoable:
        return
    for col, (i, item) in zip(st.columns(len(undoable)), undoable):
        if not col.button(f"Undo the last {item.name} change", key=f"hpss_undo_{run_id}_{item.key}"):
            continue
        seen = st.session_state[seen_key]
        try:
            curation.undo(store, owner, item.key, expected_version=seen[i], actor=auth.actor())
        except (EditConflict, ValueError) as exc:
            st.error(messages.escape_markdown(f"Not undone: {exc}."))
            return
        st.session_state[seen_key] = tuple(curation.get(store, owner, it.key).version for it in items)
        # the form's fields hold the undone values: drop them so they are drawn from the restored version
        for key in [f"hpss_edit_{run_id}_{f}" for f in FACTOR_NAMES] + [f"hpss_edit_{run_id}_text"]:
            st.session_state.pop(key, None)
        messages.flash("success", f"The {item.name} is back to its previous version; save to re-score with it.",
                     at="hpss_edit")
        st.rerun()


# --------------------------------------------------------------------------- pick a search


def is_search(run: RunRecord) -> bool:
    """A search, not a run of one fixed prompt (the base-prompt comparison or a person's edit); ``run`` is what
    the picker lists."""
    return not run.params.get("fixed_strategy")


st.subheader("Searches")
picked = run_view.pick_run(METHOD, "hpss_run_id", label="Search run", keep=is_search,
                           empty="No HPSS search yet: configure one above and start it.")
if picked is not None:
    run_view.progress(picked.id, live_view=search_view, key="hpss")
    if picked.judge:  # a judge is kept even when scoring the test split failed: inspect and edit it
        judge = Judge.from_dict(picked.judge)
        run_dataset = readers.load_dataset(store, picked.dataset)
        best_strategy(picked, judge)
        if picked.summary is not None:
            results(picked, judge, run_dataset)
        inspect(picked, judge, run_dataset)
        curate(picked, judge, run_dataset)

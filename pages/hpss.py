"""HPSS page: configure a prompting-strategy search, watch it live, inspect strategies, compare on test."""

from __future__ import annotations

import dataclasses

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from judge_engine import data, runs
from judge_engine.figures import human_vs_judge_scatter
from judge_engine.llm import LLMError, make_llm
from judge_engine.llm.base import LLMConfig
from judge_engine.methods import Judge
from judge_engine.methods.hpss import (FACTOR_NAMES, FACTOR_TITLES, FACTOR_VALUES, HPSS, VALUE_TITLES, base_strategy,
                                      describe, parse_strategy, search_trace, strategy_name)
from judge_engine.records import Split
from judge_engine.store import EditConflict
from pages import common

common.require_frame()
store = common.get_store()
common.show_flash()

st.title("HPSS: prompting-strategy search")
st.caption("Searches 12,960 judge prompts (8 factors) for the one whose scores agree best with human scores "
           "on a validation split (Wen et al., 2025). The run's train split is the validation set.")

# --------------------------------------------------------------------------- configure

names = sorted({r["name"] for r in store.list_datasets()} | set(data.BENCHMARKS))
defaults = HPSS.default_params()
c1, c2 = st.columns(2)
dataset_name = c1.selectbox("Dataset", names, key="hpss_dataset")
try:
    dataset = runs.ensure_dataset(store, dataset_name)
except (ValueError, OSError) as exc:
    st.error(common.plain(str(exc)))
    st.stop()
aspect_name = c2.selectbox("Aspect", dataset.aspect_names, key="hpss_aspect")
with st.form("hpss_form"):
    search = st.selectbox("Search", ["hpss", "greedy", "stepwise_greedy"], key="hpss_search",
                          help="hpss: the paper's search; greedy / stepwise_greedy: its baselines, same machinery")
    c1, c2, c3, c4 = st.columns(4)
    train = c1.number_input("Validation size (train split)", 4, len(dataset.samples), min(30, len(dataset.samples) // 2),
                            key="hpss_train")
    test = c2.number_input("Test size", 1, len(dataset.samples), min(40, len(dataset.samples) // 2), key="hpss_test")
    budget = c3.number_input("Budget after initialization", 0, 1000, defaults["budget"], key="hpss_budget")
    seed = c4.number_input("Seed", 0, 10_000, 0, key="hpss_seed")
    with st.expander("Search hyperparameters (paper defaults)"):
        c1, c2, c3, c4, c5 = st.columns(5)
        population = c1.number_input("Population k", 1, 50, defaults["population"], key="hpss_population")
        mutations = c2.number_input("Mutations g", 1, 10, defaults["mutations"], key="hpss_mutations")
        rho = c3.number_input("Exploit ρ", 0.0, 1.0, defaults["exploit_prob"], key="hpss_rho")
        tau = c4.number_input("Temperature τ", 0.01, 100.0, defaults["temperature"], key="hpss_tau")
        lam = c5.number_input("Exploration λ", 0.0, 100.0, defaults["exploration_weight"], key="hpss_lambda")
        c1, c2, c3 = st.columns(3)
        subset = c1.number_input("Validation subset (0 = whole train split)", 0, 10_000, 0, key="hpss_subset")
        judge_tokens = c2.number_input("Judge reply tokens", 8, 4096, defaults["judge_max_tokens"],
                                       key="hpss_judge_tokens")
        aux_tokens = c3.number_input("Auxiliary reply tokens", 8, 4096, defaults["aux_max_tokens"],
                                     key="hpss_aux_tokens")
    compare = st.multiselect("Also score the same test split with", ["MT-Bench base prompt", "direct", "geval"],
                             default=["MT-Bench base prompt"], key="hpss_compare")
    st.caption(f"Backend: {common.llm_config().label} (change it under Settings)")
    reviewed = st.form_submit_button("Review estimate")

aspect = dataset.aspect(aspect_name)
params = {"search": search, "budget": int(budget), "population": int(population), "mutations": int(mutations),
          "exploit_prob": float(rho), "temperature": float(tau), "exploration_weight": float(lam),
          "validation_size": int(subset) or None, "judge_max_tokens": int(judge_tokens),
          "aux_max_tokens": int(aux_tokens),
          "fitness_level": "group" if dataset.natural_level == "group" else "sample"}
spec = runs.RunSpec(method="hpss", dataset=dataset.name, aspect=aspect.name, params=params, train_size=int(train),
                    test_size=int(test), seed=int(seed), llm=common.llm_config())

try:
    est = runs.estimate(store, spec)
except ValueError as exc:
    st.error(common.plain(str(exc)))
    st.stop()
slow = spec.llm.backend == "llamacpp"
c1, c2, c3 = st.columns(3)
c1.metric("Strategy evaluations", HPSS(**params).n_evaluations())
c2.metric("LLM requests to search (at most)", f"{est['fit']:,}")
c3.metric("LLM requests to score test (at most)", f"{est['score']:,}")
if slow:
    small = {**params, "validation_size": min(int(train), 8), "budget": min(int(budget), 9)}
    small_est = HPSS(**small).estimate_calls(int(train), int(test))
    st.info(f"The embedded model takes about 1-3 s per request. A quick search: validation subset "
            f"{small['validation_size']}, budget {small['budget']} → about {small_est['fit']:,} requests "
            f"(≈ {small_est['fit'] * 2 // 60} min). Identical prompts are never paid twice (cache).")

if st.button("Start search", key="hpss_start", type="primary"):
    try:
        run_id = runs.create_run(store, spec, actor=common.actor())
        started = [run_id]
        base = strategy_name(base_strategy(aspect))
        for label in compare:
            if label == "MT-Bench base prompt":
                other = dataclasses.replace(spec, params={**params, "fixed_strategy": base})
            else:
                other = dataclasses.replace(spec, method=label, params={})
            started.append(runs.create_run(store, other, actor=common.actor()))
        for rid in started:
            runs.start_run(store.path, rid, api_key=common.api_key())
        st.session_state["hpss_run_id"] = run_id
        common.flash("success", f"Started run #{run_id}" + (
            f" and comparison runs {', '.join(f'#{i}' for i in started[1:])} ({', '.join(compare)})." if compare
            else "."))
        st.rerun()
    except (ValueError, OSError) as exc:
        st.error(common.plain(str(exc)))

# --------------------------------------------------------------------------- pick a run

hpss_runs = [r for r in store.list_runs() if r["method"] == "hpss" and not (r.get("params") or {}).get("fixed_strategy")]
if not hpss_runs:
    st.info("No HPSS search yet: configure one above and start it.")
    st.stop()
ids = [r["id"] for r in hpss_runs]
if st.session_state.get("hpss_run_id") not in ids:
    st.session_state["hpss_run_id"] = ids[0]
labels = {r["id"]: common.run_label(r) for r in hpss_runs}
run_id = st.selectbox("Search run", ids, format_func=labels.get, key="hpss_run_id")


def advantage_heatmap(advantages: dict[str, dict[str, float]]) -> go.Figure:
    rows = [FACTOR_TITLES[f] for f in FACTOR_NAMES]
    width = max(len(v) for v in advantages.values())
    z, text = [], []
    for f in FACTOR_NAMES:
        values = list(advantages.get(f, {}).items())
        z.append([a for _, a in values] + [None] * (width - len(values)))
        text.append([VALUE_TITLES[f][v] for v, _ in values] + [""] * (width - len(values)))
    fig = go.Figure(go.Heatmap(z=z, y=rows, text=text, texttemplate="%{text}<br>%{z:.1f}", colorscale="RdBu",
                               zmid=0, showscale=True))
    fig.update_layout(title="Advantage per factor value (Spearman × 100)", height=380, xaxis_visible=False,
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


FITNESS = "fitness (ρ×100×coverage)"
COVERAGE_NOTE = ("Fitness counts the validation items a strategy failed to score: below 80% scored it is not "
                 "eligible (no fitness), otherwise ρ×100 × coverage. Only a selectable strategy (eligible, ρ > 0) "
                 "is adopted automatically.")


def history_frame(evaluated: list[dict]) -> pd.DataFrame:
    rows = []
    for e in evaluated:
        row = {"#": e["index"], "stage": e["stage"], FITNESS: e["fitness"],
               "ρ×100 (items scored)": e.get("correlation", e["fitness"]), "coverage": e.get("coverage"),
               "selectable": e.get("selectable", e["fitness"] is not None),
               "best so far": e["best_so_far"], "calls": e["calls"], "asked again": e.get("retried", 0),
               "read as JSON": e.get("read_json"), "read by fallback": e.get("read_text"),
               "from alternatives": e.get("from_alternatives"), "unparsed": e["unparsed"],
               "missing auxiliary": e["missing_aux"]}
        row.update(describe(parse_strategy(e["strategy"])))
        row["strategy"] = e["strategy"]
        rows.append(row)
    return pd.DataFrame(rows)


@st.fragment(run_every="2s" if runs.effective_status(store.get_run(run_id)) in common.LIVE_STATUSES else None)
def live_panel() -> None:
    run = store.get_run(run_id)
    status = runs.effective_status(run)
    trace = search_trace(store.events(run_id))
    total = (trace["started"] or {}).get("evaluations") or 1
    done = len(trace["evaluated"])
    ledger = run.get("ledger") or {}
    st.progress(min(1.0, done / total), text=f"{status}: {done} of {total} strategies evaluated · {run.get('stage') or ''}")
    c1, c2, c3, c4 = st.columns(4)
    best = trace["best"]
    c1.metric("Best validation fitness", "–" if best is None else f"{best['fitness']:.1f}",
              help=COVERAGE_NOTE)
    c2.metric("Strategies evaluated", done)
    c3.metric("LLM calls", ledger.get("calls", 0))
    c4.metric("Cache hits", ledger.get("cache_hits", 0))
    if run.get("message"):
        st.error(common.plain(run["message"]))
    for note in trace["notes"]:
        st.warning(common.plain(note))
    if trace["aux_missing"]:
        st.caption("Auxiliary replies with nothing usable (recorded as missing): "
                   + ", ".join(f"{k}: {v}" for k, v in trace["aux_missing"].items()))
    if trace["evaluated"]:
        frame = history_frame(trace["evaluated"])
        x = st.radio("x axis", ["evaluation", "LLM calls"], horizontal=True, key="hpss_x")
        xcol = "#" if x == "evaluation" else "calls"
        fig = px.scatter(frame, x=xcol, y=FITNESS, color="stage", hover_data=["strategy", "coverage"],
                         title="Validation fitness per evaluated strategy")
        fig.add_trace(go.Scatter(x=frame[xcol], y=frame["best so far"], mode="lines", name="best so far",
                                 line_shape="hv"))
        st.plotly_chart(fig, key="hpss_fitness_chart")
        if trace["advantages"]:
            st.plotly_chart(advantage_heatmap(trace["advantages"]), key="hpss_adv_chart")
        if trace["population"]:
            st.caption("Current population")
            st.dataframe(pd.DataFrame([{FITNESS: m["fitness"], **describe(parse_strategy(m["strategy"]))}
                                       for m in trace["population"]]), hide_index=True)
        st.caption("Evaluated strategies. " + COVERAGE_NOTE)
        st.dataframe(frame, hide_index=True)
    if status in common.LIVE_STATUSES:
        st.session_state["hpss_was_live"] = True
    elif st.session_state.pop("hpss_was_live", False):
        st.rerun()


live_panel()

run = store.get_run(run_id)
if run.get("judge") is None:
    st.stop()

# --------------------------------------------------------------------------- best strategy and results

judge = Judge.from_dict(run["judge"])
state = judge.state
st.subheader("Best strategy")
sel, base_sel = state.get("selection") or {}, state.get("base_selection") or {}


def _coverage(s: dict) -> str:
    return "–" if not s else f"{s.get('n_scored')} of {s.get('n')} items ({s.get('coverage', 0):.0%})"


c1, c2, c3, c4 = st.columns(4)
c1.metric("Validation fitness (best)", "–" if state.get("fitness") is None else f"{state['fitness']:.1f}",
          help=COVERAGE_NOTE)
c2.metric("Coverage (best)", _coverage(sel))
c3.metric("Validation fitness (MT-Bench base)",
          "–" if state.get("base_fitness") is None else f"{state['base_fitness']:.1f}")
c4.metric("Coverage (MT-Bench base)", _coverage(base_sel))
readings = state.get("readings") or {}
if readings:
    st.caption(f"Validation ratings read as JSON: {readings.get('json', 0)} · by the free-text fallback: "
               f"{readings.get('text', 0)} · probability-weighted from a follow-up: {readings.get('logprobs', 0)} "
               f"(of them from alternatives: {readings.get('from_alternatives', 0)}) · missing: "
               f"{readings.get('missing', 0)}")
aux_readings = state.get("auxiliary_readings") or {}
if aux_readings:
    st.caption("Auxiliary replies (JSON / fallback / missing): " + ", ".join(
        f"{k} {v.get('json', 0)}/{v.get('text', 0)}/{v.get('missing', 0)}" for k, v in aux_readings.items()))
if state.get("accepted_by_person"):
    st.caption("This strategy was fixed by a person, not selected by the search.")
for w in state.get("warnings") or []:
    st.warning(common.plain(w["message"]))
refused_aux = state.get("rejected") or []
if refused_aux:
    with st.expander(f"Auxiliaries the checks refused ({len(refused_aux)})"):
        st.caption("Generated criteria, AutoCoT steps, metrics questions or references that were empty, repeated, "
                   "too long, copied from a text the prompt showed, or (criteria) named no quality. A refused "
                   "auxiliary was not used: the strategies needing it went without a score on those items. "
                   "A step or question that repeated an earlier one was left out of its list.")
        st.dataframe(pd.DataFrame([{"auxiliary": r.get("kind"), "for": r.get("key"),
                                    "rule": str(r.get("rule", "")).replace("_", " "), "reason": r.get("reason"),
                                    "text": str(r.get("text", ""))[:300]} for r in refused_aux]),
                     hide_index=True)
st.dataframe(pd.DataFrame([{"factor": k, "value": v} for k, v in state["readable"].items()]), hide_index=True)
st.download_button("Export judge (JSON)", judge.to_json(), file_name=f"hpss-judge-{run_id}.json",
                   key="hpss_export")

run_dataset = common.load_dataset(store, run["dataset"])
if run.get("summary"):
    st.subheader("Test split")
    same = [r for r in store.list_runs(dataset=run["dataset"]) if r["aspect"] == run["aspect"]
            and r.get("split") == run.get("split") and r.get("summary")]
    rows = []
    for r in same:
        fixed = (r.get("params") or {}).get("fixed_strategy")
        label = ("HPSS best" if r["id"] == run_id else "MT-Bench base prompt" if fixed == state["base_strategy"]
                 else f"hpss fixed {fixed}" if fixed else r["method"])
        if r["method"] == "hpss" and not fixed and r["id"] != run_id:
            continue
        corr = (r["summary"].get("correlations") or {})
        ci = corr.get("spearman_ci") or [None, None]
        rows.append({"run": r["id"], "judge": label, "level": r["summary"].get("level"),
                     "spearman": corr.get("spearman"), "95% CI low": ci[0], "95% CI high": ci[1],
                     "pearson": corr.get("pearson"), "missing": r["summary"].get("parse_failures"),
                     "calls": r["summary"].get("calls"), "cache hits": r["summary"].get("cache_hits"),
                     "prompt tokens": r["summary"].get("prompt_tokens"),
                     "completion tokens": r["summary"].get("completion_tokens"),
                     "seconds": r["summary"].get("seconds")})
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    common.trust_panel(common.run_trust(store, run))
    st.caption("Correlations of the best strategy at every level")
    st.dataframe(common.correlation_frame(run["summary"]), hide_index=True)
    st.caption("Test verdicts")
    st.dataframe(common.verdicts_frame(run_dataset, run["aspect"], common.load_verdicts(store, run)),
                 hide_index=True)

# --------------------------------------------------------------------------- inspect any strategy

st.subheader("Inspect a strategy")
trace = search_trace(store.events(run_id))
evaluated = {e["strategy"]: e for e in trace["evaluated"]}
val_ids = (trace["started"] or {}).get("validation_ids") or state.get("validation_ids") or []
if evaluated and val_ids:
    order = sorted(evaluated, key=lambda k: -(evaluated[k]["fitness"] if evaluated[k]["fitness"] is not None else -1e9))
    def _label(k: str) -> str:
        e = evaluated[k]
        cover = "" if e.get("coverage") is None else f" · coverage {e['coverage']:.0%}"
        mark = "" if e.get("selectable", True) else " · not selectable"
        return f"{e['fitness']}{cover}{mark} · {k}"

    chosen = st.selectbox("Strategy", order, key="hpss_inspect", format_func=_label)
    entry = evaluated[chosen]
    index = run_dataset.by_id()
    human = [index[i].human.get(run["aspect"]) for i in val_ids]
    run_aspect = run_dataset.aspect(run["aspect"])
    st.plotly_chart(human_vs_judge_scatter(human, entry["scores"], ids=val_ids, aspect=run["aspect"],
                                           low=run_aspect.low, high=run_aspect.high,
                                           title=f"Validation scores of {chosen}"), key="hpss_inspect_scatter")
    item = st.selectbox("Validation item", val_ids, key="hpss_inspect_item")
    if st.button("Show the rendered prompt", key="hpss_render"):
        try:
            llm = make_llm(LLMConfig.from_dict(run["llm"]), store=store, api_key=common.api_key())
            prompt = HPSS.render(judge, index[item], llm=llm, strategy=chosen,
                                 pool=[index[i] for i in val_ids], leave_out=True)
        except LLMError as exc:
            st.error(common.plain(str(exc)))
        else:
            if prompt is None:
                st.warning("An auxiliary this strategy needs is missing for this item (its reply had no usable "
                           "content), so the item was not scored.")
            else:
                st.code(prompt, language=None, wrap_lines=True)

# --------------------------------------------------------------------------- edit and re-score

st.subheader("Edit the strategy and re-score")
st.caption("Your edit becomes the parameters of a new run on the same split (fixed strategy, human criteria): "
           "every prompt the edit leaves unchanged is answered by the cache. Edits are versioned and audited.")
owner = f"hpss-run-{run_id}"
stored = {r["id"]: r for r in store.criteria(owner)}
if f"{owner}:strategy" not in stored:  # first visit: the search's result is version 1
    store.save_criterion({"id": f"{owner}:strategy", "owner": owner, "name": "strategy",
                          "definition": state["strategy"], "status": "accepted", "position": 0})
    store.save_criterion({"id": f"{owner}:criteria", "owner": owner, "name": "human criteria",
                          "definition": judge.params.get("human_criteria") or run_dataset.aspect(run["aspect"]).definition,
                          "status": "accepted", "position": 1})
    stored = {r["id"]: r for r in store.criteria(owner)}
strategy_row, criteria_row = stored[f"{owner}:strategy"], stored[f"{owner}:criteria"]
current = dict(zip(FACTOR_NAMES, parse_strategy(strategy_row["definition"])))
seen_key = f"hpss_edit_{run_id}_versions"  # the versions this person's form shows: a newer save is a conflict
seen = st.session_state.setdefault(seen_key, (strategy_row["version"], criteria_row["version"]))
with st.form("hpss_edit"):
    cols = st.columns(4)
    chosen_values = {}
    for i, f in enumerate(FACTOR_NAMES):
        values = list(FACTOR_VALUES[f])
        chosen_values[f] = cols[i % 4].selectbox(FACTOR_TITLES[f], values, index=values.index(current[f]),
                                                 format_func=VALUE_TITLES[f].get, key=f"hpss_edit_{run_id}_{f}")
    criteria_text = st.text_area("Human-written criteria (used when the criteria factor is human-written)",
                                 criteria_row["definition"], key=f"hpss_edit_{run_id}_text")
    st.caption(f"Editing strategy version {seen[0]} · criteria version {seen[1]}")
    submitted = st.form_submit_button("Save edit and re-score the test split")
common.show_flash(at="hpss_edit")  # the outcome of a Save beside the form: the person stays where they edit
if submitted:
    new_strategy = strategy_name(tuple(chosen_values[f] for f in FACTOR_NAMES))
    try:
        if seen[1] != criteria_row["version"]:  # check both before writing either
            raise EditConflict(f"the criteria were changed by someone else (version {criteria_row['version']}, "
                               f"you edited version {seen[1]}); reload them")
        sv = store.save_criterion({**{k: strategy_row[k] for k in ("id", "owner", "name", "status", "position")},
                                   "definition": new_strategy}, actor=common.actor(), expected_version=seen[0])
        cv = store.save_criterion({**{k: criteria_row[k] for k in ("id", "owner", "name", "status", "position")},
                                   "definition": criteria_text.strip()}, actor=common.actor(), expected_version=seen[1])
    except EditConflict as exc:
        st.session_state[seen_key] = (strategy_row["version"], criteria_row["version"])
        st.error(common.plain(f"{exc}. Your edit was not saved; the form now edits the latest version."))
    else:
        st.session_state[seen_key] = (sv, cv)
        split = Split.from_dict(run["split"])
        edited = runs.RunSpec(method="hpss", dataset=run["dataset"], aspect=run["aspect"],
                              params={**run["params"], "fixed_strategy": new_strategy,
                                      "human_criteria": criteria_text.strip() or None},
                              train_size=len(split.train_ids), test_size=len(split.test_ids), seed=split.seed,
                              llm=LLMConfig.from_dict(run["llm"]))
        try:
            new_id = runs.create_run(store, edited, actor=common.actor())
            runs.start_run(store.path, new_id, api_key=common.api_key())
        except (ValueError, OSError) as exc:
            st.error(common.plain(str(exc)))
        else:
            common.flash("success", f"Saved the edit and started run #{new_id} with strategy {new_strategy}",
                         at="hpss_edit")
            st.rerun()
audit = store.audit_log(entity="criterion", limit=50)
audit = [a for a in audit if str(a["entity_id"]).startswith(owner + ":")]
if audit:
    with st.expander(f"Edit history ({len(audit)})"):
        st.dataframe(pd.DataFrame([{"when": common.fmt_time(a["ts"]), "who": a["actor"], "what": a["entity_id"],
                                    "before": a["before"], "after": a["after"]} for a in audit]), hide_index=True)

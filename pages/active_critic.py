"""Active-Critic: infer the task and criteria from scored examples, correct them, score with explanations.

Configure and start a run (the paper's 25% / 75% split by default), watch
stage 1 as it happens (observations per mini-batch, the task description
taking shape, criteria added and refined), edit the inferred task
description and criteria (versioned, audited), start a new run from the
edits, and read each test item's explained scores next to the baselines.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pandas as pd
import streamlit as st

from judge_engine import data
from judge_engine.methods import METHODS, Judge
from judge_engine.runs import RunSpec, effective_status, ensure_dataset, estimate
from judge_engine.store import EditConflict, NotFound
from pages import common

common.require_frame()

METHOD = "active_critic"
BASELINES = ("direct", "geval")

st.title("Active-Critic")
st.caption("The judge infers the task and its evaluation criteria from human-scored examples, picks its "
           "demonstrations by correlation on the training split, and explains every score "
           "(Xu, Hu and Jiang, 2024). You can correct what it inferred and rerun from your edits.")
store = common.get_store()
common.show_flash()


# --------------------------------------------------------------------------- helpers

def owner(run_id: int) -> str:
    return f"active_critic:run:{run_id}"


def split_spec(dataset, split: dict) -> tuple[int, int, int]:
    """(train_size, test_size, seed) that rebuild a stored split with ``data.make_split``."""
    train, test, seed = list(split["train_ids"]), list(split["test_ids"]), int(split["seed"])
    for size in range(len(train), 0, -1):
        again = data.make_split(dataset, train_size=size, test_size=len(test), seed=seed)
        if list(again.train_ids) == train and list(again.test_ids) == test:
            return size, len(test), seed
    return len(train), len(test), seed


def start(spec: RunSpec, *, judge: Judge | None = None, label: str = "") -> int | None:
    return common.launch(store, spec, judge=judge, label=label)


# --------------------------------------------------------------------------- configure

st.subheader("New run")
stored = sorted(r["name"] for r in store.list_datasets())
names = stored + [b for b in data.BENCHMARKS if b not in stored]
c1, c2 = st.columns(2)
ds_name = c1.selectbox("Dataset", names, key="ac_dataset")
try:
    dataset = ensure_dataset(store, ds_name)
except (ValueError, OSError, NotFound) as exc:
    st.error(common.plain(str(exc)))
    st.stop()
aspect_name = c2.selectbox("Aspect (the overall quality score the judge learns)", dataset.aspect_names,
                           index=dataset.aspect_names.index("overall") if "overall" in dataset.aspect_names else 0,
                           key="ac_aspect", help="The paper learns the overall score; any aspect works.")

with st.form("ac_form"):
    c = st.columns(4)
    share = c[0].slider("Train share (%)", 5, 90, 25, key="ac_share",
                        help="The paper trains on 25% and tests on the other 75% (grouped split).")
    max_test = c[1].number_input("Max test items (0 = all the rest)", min_value=0, value=0, step=1, key="ac_max_test")
    variant = c[2].radio("Variant", ["fine", "coarse"], key="ac_variant", horizontal=True,
                         help="Fine: every criterion scored, then the overall score (2 calls per item). "
                              "Coarse: the overall score with the criteria listed (1 call).")
    seed = c[3].number_input("Seed", min_value=0, value=0, step=1, key="ac_seed")
    c = st.columns(4)
    k = c[0].number_input("Candidate demo sets K", min_value=1, max_value=100, value=11, key="ac_k",
                          help="Random search over demonstration sets (paper: 11).")
    n_demos = c[1].number_input("Demos per set (0 = by task: 3, or 8 for data-to-text)", min_value=0, max_value=16,
                                value=0, key="ac_demos")
    subsample = c[2].number_input("Score candidates on at most N training items (0 = all)", min_value=0, value=0,
                                  key="ac_subsample", help="Not in the paper: for slow backends.")
    max_batches = c[3].number_input("Max mini-batches", min_value=1, max_value=100, value=25, key="ac_batches")
    c = st.columns(4)
    max_tokens = c[0].number_input("Reply tokens", min_value=16, max_value=8192,
                                   value=METHODS[METHOD].default_params()["max_tokens"], key="ac_max_tokens",
                                   help="Length budget of every reply (task, criteria, scores with explanations). "
                                        "A small local model rarely stops by itself: a lower budget is much faster.")
    weighted = c[1].checkbox("Overall score probability-weighted (recommended for the embedded model)",
                             value=common.llm_config().backend == "llamacpp", key="ac_weighted",
                             help="Not in the paper: after each explained score, one more turn asks for a 1-9 digit "
                                  "and its probability-weighted value (from logprobs) becomes the 0-100 score. "
                                  "Small models rarely state a usable 0-100 number.")
    keep_zero_shot = c[2].checkbox("Keep zero-shot if no demonstration set agrees with the humans", value=False,
                                   key="ac_keep_zero_shot",
                                   help="By default a run whose every candidate, zero-shot included, correlates at or "
                                        "below zero with the human scores on the training split (or scores under "
                                        "80% of its items) ends with a message and no judge. Tick this to keep the "
                                        "zero-shot judge anyway; the judge then carries a warning.")
    baselines = st.checkbox("Also run direct scoring and G-Eval on the same split", value=True, key="ac_baselines")
    st.caption(f"Backend: {common.llm_config().label} (change it under Settings).")
    reviewed = st.form_submit_button("Review")

if reviewed:
    n = len(dataset.samples)
    train_size = max(1, round(n * share / 100))
    params = {"variant": variant, "n_candidates": int(k), "max_batches": int(max_batches), "seed": int(seed),
              "max_tokens": int(max_tokens), "weighted": bool(weighted),
              "no_positive_set": "zero_shot" if keep_zero_shot else "fail"}
    if n_demos:
        params["n_demos"] = int(n_demos)
    if subsample:
        params["eval_subsample"] = int(subsample)
    defaults = METHODS[METHOD].default_params()
    params = {key: v for key, v in params.items() if v != defaults.get(key)}
    spec = RunSpec(method=METHOD, dataset=ds_name, aspect=aspect_name, params=params, train_size=train_size,
                   test_size=int(max_test) or None, seed=int(seed), llm=common.llm_config())
    try:
        split = data.make_split(dataset, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
        calls = estimate(store, replace(spec, train_size=len(split.train_ids), test_size=len(split.test_ids)))
    except (ValueError, NotFound) as exc:
        st.error(common.plain(str(exc)))
    else:
        st.session_state["ac_draft"] = {"spec": spec, "calls": calls, "n_train": len(split.train_ids),
                                        "n_test": len(split.test_ids), "baselines": baselines}

draft = st.session_state.get("ac_draft")
if draft:
    spec = draft["spec"]
    with st.container(border=True):
        st.text(f"{draft['n_train']} train / {draft['n_test']} test items of {spec.dataset} ({spec.aspect}), "
                f"seed {spec.seed}; parameters changed from the paper's: {json.dumps(spec.params) or '{}'}")
        m = st.columns(3)
        m[0].metric("LLM requests to fit (at most)", draft["calls"]["fit"],
                    help="Upper bound, counting every follow-up a reply may need (the criteria's JSON retry and "
                         "list prompt, one score follow-up per item). Stage 1 stops early on COMPLETE.")
        m[1].metric("LLM requests to score", draft["calls"]["score"],
                    help="Upper bound: per item the explained scores and at most one follow-up turn.")
        base = draft["n_test"] * 2 + 1 if draft["baselines"] else 0
        m[2].metric("Baselines (direct + G-Eval)", base)
        if spec.llm.backend == "llamacpp":
            total = sum(draft["calls"].values()) + base
            st.caption(f"The embedded model takes about 1-3 s per request: roughly {max(1, round(total * 2 / 60))} "
                       "min. Lower K or score candidates on a subsample to go faster. Cached requests are free.")
        if st.button("Start", key="ac_start", type="primary"):
            run_id = start(spec)
            if run_id is not None:
                if draft["baselines"]:
                    for name in BASELINES:
                        start(replace(spec, method=name, params={}), label=f" ({name})")
                st.session_state.pop("ac_draft", None)
                common.set_value("ac_run_id", run_id)
                st.rerun()


# --------------------------------------------------------------------------- pick a run

runs = [r for r in store.list_runs() if r["method"] == METHOD]
st.divider()
if not runs:
    st.info("No Active-Critic run yet.")
    st.stop()
ids = [r["id"] for r in runs]
common.init_state()
st.session_state.setdefault("ac_run_id", ids[0])
if st.session_state["ac_run_id"] not in ids:
    common.set_value("ac_run_id", ids[0])
run_id = common.bound(st.selectbox, "Run", "ac_run_id", options=ids, format_func=lambda i: common.run_label(
    next(r for r in runs if r["id"] == i)))


# --------------------------------------------------------------------------- stage 1, live

def stage_one(events: list[dict]) -> None:
    """Observations per batch, the task description versions, the criteria timeline, the demo search."""
    by_kind: dict[str, list[dict]] = {}
    for e in events:
        by_kind.setdefault(e["kind"], []).append(e["payload"])
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
        st.warning(common.plain(f"{w.get('code')}: {w.get('message')}"))
    failures = by_kind.get("parse_failure", [])
    if failures:
        st.warning(common.plain("Unreadable replies: " + "; ".join(
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


first = store.get_run(run_id)
live = effective_status(first) in common.LIVE_STATUSES


@st.fragment(run_every="2s" if live else None)
def progress_panel() -> None:
    run = common.get_store().get_run(run_id)
    status = effective_status(run)
    done, total = int(run.get("done") or 0), int(run.get("total") or 0)
    if status in common.LIVE_STATUSES:
        st.progress(min(1.0, done / total) if total else 0.0, text=f"{status}: {run.get('stage') or ''} ({done}/{total})")
    elif status == "finished":
        common.finished_box(common.run_trust(common.get_store(), run), f"Run #{run_id} finished.")
    else:
        st.warning(common.plain(f"Run #{run_id} {status}: {run.get('message') or ''} "
                                "(resume it from the Runs page; cached calls are free)."))
    ledger = run.get("ledger") or {}
    m = st.columns(4)
    m[0].metric("LLM calls", ledger.get("calls", 0))
    m[1].metric("Cache hits", ledger.get("cache_hits", 0))
    m[2].metric("Tokens", int(ledger.get("prompt_tokens", 0) or 0) + int(ledger.get("completion_tokens", 0) or 0))
    m[3].metric("Cost ($)", f"{float(ledger.get('dollars', 0) or 0):.4f}")
    stage_one(common.get_store().events(run_id))
    if live and status not in common.LIVE_STATUSES:
        st.rerun()


st.subheader(f"Run #{run_id}: stage 1")
progress_panel()

run = store.get_run(run_id)
if not run.get("judge"):
    st.stop()
judge = Judge.from_dict(run["judge"])


# --------------------------------------------------------------------------- edit

def stored_criteria(run_id: int) -> dict[str, dict]:
    """The run's task description and criteria as versioned rows, created from the judge on first view."""
    rows = {r["id"]: r for r in store.criteria(owner(run_id))}
    if not rows:
        store.save_criterion({"id": f"{owner(run_id)}:task", "owner": owner(run_id), "name": "Task description",
                              "definition": judge.state.get("task_description") or "", "status": "inferred",
                              "position": 0}, actor="active_critic")
        for i, (name, definition) in enumerate(judge.state.get("criteria", {}).items(), 1):
            store.save_criterion({"id": f"{owner(run_id)}:c{i}", "owner": owner(run_id), "name": name,
                                  "definition": definition, "status": "inferred", "position": i}, actor="active_critic")
        rows = {r["id"]: r for r in store.criteria(owner(run_id))}
    return rows


st.subheader("Correct the task description and criteria")
rows = stored_criteria(run_id)
seen_key = f"ac_seen_versions_{run_id}"
if seen_key not in st.session_state:
    st.session_state[seen_key] = {rid: r["version"] for rid, r in rows.items()}
seen = st.session_state[seen_key]
task_id = f"{owner(run_id)}:task"
criteria_rows = [r for rid, r in rows.items() if rid != task_id]

with st.form(f"ac_edit_{run_id}"):
    new_task = st.text_area("Task description", value=rows[task_id]["definition"], key=f"ac_task_{run_id}")
    edits = {}
    for r in criteria_rows:
        c = st.columns([2, 6, 1])
        name = c[0].text_input("Criterion", value=r["name"], key=f"ac_name_{r['id']}")
        definition = c[1].text_input("Definition", value=r["definition"], key=f"ac_def_{r['id']}")
        removed = c[2].checkbox("Remove", value=r["status"] == "removed", key=f"ac_rm_{r['id']}")
        edits[r["id"]] = (name, definition, "removed" if removed else r["status"])
    c = st.columns([2, 6, 1])
    add_name = c[0].text_input("New criterion", key=f"ac_add_name_{run_id}")
    add_def = c[1].text_input("Its definition", key=f"ac_add_def_{run_id}")
    saved = st.form_submit_button("Save edits")

common.show_flash(at="ac_edit")  # the outcome of a Save beside the form: the person stays where they edit
if saved:
    changes = []
    if new_task != rows[task_id]["definition"]:
        changes.append(({**rows[task_id], "definition": new_task, "status": "edited"}, seen.get(task_id)))
    for r in criteria_rows:
        name, definition, status = edits[r["id"]]
        if (name, definition, status) != (r["name"], r["definition"], r["status"]):
            changes.append(({**r, "name": name.strip(), "definition": definition.strip(),
                             "status": status if status == "removed" else "edited"}, seen.get(r["id"])))
    if add_name.strip():
        changes.append(({"id": f"{owner(run_id)}:c{len(rows) + 1}", "owner": owner(run_id), "name": add_name.strip(),
                         "definition": add_def.strip(), "status": "added", "position": len(rows) + 1}, None))
    try:
        for row, expected in changes:
            store.save_criterion({k: row[k] for k in ("id", "owner", "name", "definition", "status", "position")
                                  if k in row}, actor=common.actor(), expected_version=expected if expected else None)
    except EditConflict as exc:
        st.error(common.plain(f"{exc}. Your other changes before it were saved; press Reload to see the "
                              "current text, then edit again."))
    else:
        st.session_state.pop(seen_key, None)
        common.flash("success", f"Saved {len(changes)} change(s)." if changes else "Nothing changed.", at="ac_edit")
        st.rerun()
if st.button("Reload", key=f"ac_reload_{run_id}"):
    st.session_state.pop(seen_key, None)
    st.rerun()

rows = {r["id"]: r for r in store.criteria(owner(run_id))}
edited_task = rows[task_id]["definition"]
edited_criteria = {r["name"]: r["definition"] for rid, r in rows.items() if rid != task_id and r["status"] != "removed"
                   and r["name"]}
history = [a for a in store.audit_log(entity="criterion", limit=500) if str(a["entity_id"]).startswith(owner(run_id))]
if history:
    with st.expander(f"Audit log ({len(history)} change(s))"):
        st.dataframe(pd.DataFrame([{"when": common.fmt_time(a.get("ts")), "who": a.get("actor"),
                                    "action": a.get("action"), "item": a.get("entity_id", "").rsplit(":", 1)[-1],
                                    "before": a.get("before"), "after": a.get("after")} for a in history]),
                     hide_index=True, key="ac_audit")

changed = edited_task != (judge.state.get("task_description") or "") or edited_criteria != judge.state.get("criteria")
b = st.columns(2)
refit = b[0].button("New run from the edits (redo the demo search)", key="ac_refit", disabled=not changed,
                    help="Stage 1 is replaced by your text; unchanged LLM calls come from the cache.")
rescore = b[1].button("Score the test split with the edited judge (keep the demos)", key="ac_rescore",
                      disabled=not changed)
if refit or rescore:
    ds = common.load_dataset(store, run["dataset"])
    train_size, test_size, split_seed = split_spec(ds, run["split"])
    params = {**run["params"], "task_description": edited_task, "criteria": edited_criteria}
    spec = RunSpec(method=METHOD, dataset=run["dataset"], aspect=run["aspect"], params=params, train_size=train_size,
                   test_size=test_size, seed=split_seed, llm=common.llm_config())
    edited_judge = None
    if rescore:
        edited_judge = Judge(**{**judge.to_dict(), "params": params,
                                "state": {**judge.state, "task_description": edited_task, "criteria": edited_criteria}})
    new_id = start(spec, judge=edited_judge, label=f" from the edits of run #{run_id}")
    if new_id is not None:
        common.set_value("ac_run_id", new_id)
        st.rerun()

if effective_status(run) != "finished":
    st.stop()


# --------------------------------------------------------------------------- results

st.subheader("Results on the test split")
summary = run.get("summary") or {}
common.trust_panel(common.run_trust(store, run))


def same_split(other: dict) -> bool:
    return other["dataset"] == run["dataset"] and other["aspect"] == run["aspect"] and \
        other["split"]["test_ids"] == run["split"]["test_ids"] and other["llm"] == run["llm"]


compare = [run] + [r for r in store.list_runs(dataset=run["dataset"]) if r["method"] in BASELINES
                   and r["status"] == "finished" and same_split(store.get_run(r["id"]))]
table = []
for r in compare:
    full = store.get_run(r["id"])
    frame = common.correlation_frame(full.get("summary") or {})
    if frame.empty:
        continue
    row = frame.iloc[0].to_dict()
    s = full.get("summary") or {}
    table.append({"run": f"#{r['id']} {METHODS[r['method']].title}", **row,
                  "calls": s.get("calls"), "cache hits": s.get("cache_hits"),
                  "tokens": (s.get("prompt_tokens") or 0) + (s.get("completion_tokens") or 0),
                  "seconds": s.get("seconds"), "parse failures": s.get("parse_failures")})
if table:
    st.dataframe(pd.DataFrame(table), hide_index=True, key="ac_compare")
    st.caption("First row of each run: its natural meta-evaluation level, 95% bootstrap intervals. Baselines are "
               "direct scoring and G-Eval runs on the same test items and backend.")
else:
    st.info("No correlation is defined yet (too few items scored, or constant scores).")

verdicts = common.load_verdicts(store, run)
ds = common.load_dataset(store, run["dataset"])
index = ds.by_id()
aspect = ds.aspect(run["aspect"])
st.dataframe(common.verdicts_frame(ds, run["aspect"], verdicts), hide_index=True, key="ac_verdicts")
sources: dict[str, int] = {}
for v in verdicts:
    sources[v.metadata.get("source", "?")] = sources.get(v.metadata.get("source", "?"), 0) + 1
if sources:
    st.caption("Where the test scores came from: " + ", ".join(f"{k} {n}" for k, n in sorted(sources.items()))
               + " (json = structured reply, text = free-text fallback, logprobs_first_position = read from the "
                 "alternatives of a reply that chose no digit).")
for w in judge.state.get("warnings") or []:
    st.warning(common.plain(f"{w.get('code')}: {w.get('message')}"))
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
    c[0].metric("Human score", "—" if human is None else f"{human:.2f}")
    c[1].metric("Judge score", "missing" if v.missing else f"{v.score:.2f}")
    c[2].metric("Judge 0-100", "—" if v.metadata.get("overall_100") is None else f"{v.metadata['overall_100']:g}")
    st.markdown("**Overall explanation and error analysis**")
    refused = v.metadata.get("explanation_rejected")
    if refused:
        st.caption(common.plain(f"Not shown: the explanation was rejected ({refused})."))
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
demos = judge.state.get("demos") or []
if demos:
    st.dataframe(pd.DataFrame([{"sample": d["sample_id"], "kind": d["kind"], "human 0-100": round(d["human_100"], 2),
                                "judge 0-100": d.get("overall"), "response": d["output"][:200]} for d in demos]),
                 hide_index=True, key="ac_demos_table")
else:
    st.caption("Zero-shot won (no demonstrations).")
st.download_button("Download the judge (JSON)", judge.to_json().encode("utf-8"),
                   file_name=f"active-critic-run-{run_id}.json", mime="application/json", key="ac_download")

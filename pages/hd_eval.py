"""HD-Eval: build a criteria tree with the LLM, review and edit it, see what each edit does, run the next round."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("HD-Eval criteria tree")

import json
import pandas as pd

from judge_engine import figures as plots
from judge_engine import runs
from judge_engine.aggregate import Aggregator
from judge_engine.explain import Explanation, explain_prediction, shap_values
from judge_engine.figures import (explanation_figure, importance_figure, layer_correlation_figure, node_score_histogram, provenance,
                                  shap_bar_figure, tree_sunburst)
from judge_engine.llm import LLMConfig
from judge_engine.methods import Judge
from judge_engine.methods.hd_eval import (HDEval, HDEvalState, RefitPreview, add_node, edit_node, load_tree, next_round_tree,
                                          node_summary, refit_preview, scored_by, seed_tree, stale_nodes, tree_index,
                                          tree_owner, undo_node)
from judge_engine.records import RunEvent
from judge_engine.runs import RunSpec, fast_defaults, estimate
from judge_engine.store import EditConflict
from pages.ui import (app_frame, auth, messages, once, readers, rubric_flags, run_view, session, start_form, tables,
                      trust, widgets)
from pages.ui import glossary


store = session.get_store()
st.caption("Hierarchical criteria decomposition (Liu et al., 2024): the human aspects are split into finer criteria "
           "by the LLM, every criterion is scored 1-5, and a white-box model trained on your human scores "
           "aggregates them. Review the tree, edit it, and run the next round: only what you changed is scored again.")
messages.show_flash()

MAIN_PARAMETERS = ("max_layers", "k_child", "k_expand", "aggregator", "layout", "weighted")


def tree_events(events: list[RunEvent]) -> list[str]:
    """The tree growing, one line per step."""
    out = []
    for e in events:
        p = e.payload
        if e.kind == "decomposed":
            out.append(f"layer {p['layer']}: {p['parent']} → {', '.join(p['children']) or 'no usable reply'}")
        elif e.kind == "layer_scored":
            out.append(f"layer {p['layer']}: scored {len(p['criteria'])} criteria")
        elif e.kind == "expansion_chosen":
            out.append(f"layer {p['layer']}: expanding {', '.join(p['chosen']) or 'nothing'} ({p['reason']})"
                       + (f"; not eligible (scored on too few items): {', '.join(p['ineligible'])}"
                          if p.get("ineligible") else ""))
        elif e.kind == "aggregator_fitted":
            out.append(f"layer {p['layer']}: aggregator refit on {p['features']} criteria")
    return out


# --------------------------------------------------------------------------- round 1
with st.expander("Start a new tree (round 1)", expanded=not any(r.method == "hd_eval" for r in store.runs())):
    c = st.columns(2)
    dataset = start_form.choose_dataset("hd", slot=c[0])
    if dataset is not None:
        with c[1]:
            aspect = start_form.choose_aspect("hd", dataset, label="Aspect to report")
        names = dataset.aspect_names
        layer1 = st.multiselect("Layer-1 aspects (the aggregator's targets)", names, default=names,
                                key=start_form.dependent_key("hd", dataset.name, "layer1"),
                                help="The human aspects the tree starts from; the aggregator learns all of them "
                                     "at once. The aspect to report must be one of them.")
        split = start_form.split_fields("hd", dataset, train=20, test=10)
        params = start_form.parameter_fields("hd_eval", "hd", MAIN_PARAMETERS,
                                             values=fast_defaults("hd_eval", session.llm_config()))
        with st.expander("More settings (paper defaults)"):
            params |= start_form.parameter_fields(
                "hd_eval", "hd", start_form.other_parameters("hd_eval", MAIN_PARAMETERS + ("aspects",)))
        baselines = st.checkbox("Run the baselines too", value=True, key="hd_baselines",
                                help="Direct scoring and G-Eval on exactly this run's split and backend, for the "
                                     "comparison under the test results.")
        peer = start_form.peer_checkbox("hd")
        guides = {}
        with st.popover("Expert guidelines per aspect (optional)"):
            for name in layer1:
                text = st.text_area(name, key=start_form.dependent_key("hd", dataset.name, f"guide_{name}"), height=68)
                if text.strip():
                    guides[name] = text.strip()
        chosen = start_form.changed("hd_eval", params)
        # aspects explicit, so the estimate counts the real number of aspects
        chosen |= {"aspects": layer1, "guidelines": guides or None}
        spec = RunSpec(method="hd_eval", dataset=dataset.name, aspect=aspect.name, params=chosen,
                       train_size=split.train_size, test_size=split.test_size, seed=split.seed, llm=session.llm_config())
        missing = ("choose at least one layer-1 aspect" if not layer1 else
                   f"the aspect to report, {aspect.name}, is not among the layer-1 aspects; add it or report "
                   "another aspect" if aspect.name not in layer1 else "")
        with_baselines = (runs.BASELINES if baselines else ()) + peer
        if not missing:
            quick_id = start_form.quick_start("hd_eval", spec, key="hd_quick", baselines=with_baselines)
            if quick_id is not None:  # drawn again with the look chosen and its "Started run #N" at the top
                widgets.set_value("hd_run", quick_id)
                st.rerun()
            start_form.estimate_box(spec)
        if start_form.start_button("Build the tree", "hd_start", missing=missing):
            run_id = start_form.start(spec, baselines=with_baselines, label=" (HD-Eval)")
            if run_id is not None:
                widgets.set_value("hd_run", run_id)
                st.rerun()


# --------------------------------------------------------------------------- pick a run
run = run_view.pick_run("hd_eval", "hd_run", label="HD-Eval run", empty="No HD-Eval run yet: build a tree above.")
if run is None:
    st.stop()
run_id = run.id
status = run_view.progress(run_id, lines=tree_events, key="hd")
if not run.judge:
    st.stop()

judge = Judge.from_dict(run.judge)
settings = HDEval.settings_of(judge.params)  # the parameters this round used
state = HDEvalState.from_judge(judge)
target = judge.aspect["name"]
if seed_tree(store, run_id, state.tree):
    st.toast("The fitted tree is now editable; every change is versioned.")
edited_tree = load_tree(store, run_id)
tree, versions = edited_tree.tree, edited_tree.versions
# The version each node had when this session last drew it: an edit is checked against what the person saw,
# so a change saved meanwhile by another session is reported instead of silently overwritten.
seen = st.session_state.setdefault(f"hd_seen_{run_id}", {})


def expected(node_id: str) -> int:
    return seen.get(node_id, versions[node_id])


def node_flags(node: dict) -> list[dict]:
    """The rubric checks' flags on a generated node, while it still has the text they were raised on."""
    raised = fitted.get(node["id"]) or {}
    if (raised.get("name"), raised.get("definition")) != (node["name"], node["definition"]):
        return []
    return raised.get("flags") or []


nodes = {n["id"]: n for n in tree["nodes"]}
fitted = state.fitted_nodes  # the generated nodes, with the rubric checks' flags
layers = tree_index(next_round_tree(tree))
# an edited or added node's fitted figures describe another text: they read "pending" until a round scores it
stale = stale_nodes(judge, tree)
later_rounds = [r for r in store.runs(limit=500) if r.method == "hd_eval" and r.id > run_id]
importance = {k: v for k, v in state.importance.items() if k not in stale}
top_importance = max([max(0.0, v["importance"]) for v in importance.values()] or [0.0]) or 1.0

# --------------------------------------------------------------------------- the tree
st.subheader(f"Round of run #{run_id}: {run.dataset} / {target}")
left, right = st.columns([3, 2])
with left:
    st.plotly_chart(tree_sunburst(tree, importance, root=run.dataset), key="hd_sunburst")
    st.caption("Inner ring: human aspects. Colour: permutation importance (darker = more important); "
               "grey: removed from the aggregator. Click a segment to zoom; hover for the definition.")
with right:
    st.markdown("**Correlation by layer** (out-of-fold on the training split)")
    st.plotly_chart(layer_correlation_figure(list(state.layers), target), key="hd_layers")
    st.caption(f"{len(state.features)} criteria feed the aggregator; {state.n_missing_scores} criterion scores did "
               "not parse and were imputed with the training mean.")
    reads, dec_reads = state.reads, state.decomposition_reads
    if reads or dec_reads:
        st.caption(f"Training scores read as JSON: {reads.get('json', 0)}, by the free-text fallback: "
                   f"{reads.get('text', 0)}, probability-weighted: {reads.get('logprobs', 0)}, from a reply's "
                   f"alternatives: {reads.get('logprobs_first_position', 0)}, missing: {reads.get('missing', 0)}. "
                   f"Decompositions read as JSON: {dec_reads.get('json', 0)}, by the fallback: "
                   f"{dec_reads.get('text', 0)}, unusable: {dec_reads.get('none', 0)}.")
for warning in state.warnings:
    st.warning(messages.escape_markdown(f"{warning.get('code')}: {warning.get('message')}"))


def save(node_id: str, message: str, **changes) -> None:
    # the outcome is shown where the person works: under the node, or atop its aspect when the node left the tree
    at = f"hd_aspect:{aspect_of(node_id)}" if changes.get("deleted") else f"hd_node:{node_id}"
    try:
        edit_node(store, run_id, node_id, expected_version=expected(node_id), actor=auth.actor(), **changes)
    except EditConflict as exc:
        messages.flash("error", f"Not saved: {exc}. The tree now shows their version; apply your change again "
                              "if you still want it.", at=at)
    except ValueError as exc:
        messages.flash("error", str(exc), at=at)
    else:
        messages.flash("success", message, at=at)
        st.session_state["hd_last_edit"] = run_id
    st.session_state[OPEN_NODE] = node_id
    st.session_state[OPEN_DELETED] = changes.get("deleted") is False  # a restore: keep the list open for the next
    st.rerun()


IMPORTANCE_HELP = ("Permutation importance: how much the aggregator's out-of-fold fit of the human scores drops when "
                   "this criterion's scores are shuffled (training split). 'No measurable effect': its interval over "
                   "the repeats includes zero. 'Scored': the share of training items whose reply gave a score. "
                   "'Pending': the node was edited or added after this fit, so its figures wait for the next round.")


def importance_text(node_id: str, value: float, cover: float | None) -> str:
    """An importance in words: its value, or "no measurable effect" when its interval crosses zero."""
    entry = state.importance.get(node_id, {})
    shown = ("no measurable effect" if plots.crosses_zero(entry.get("importance"), entry.get("std"))
             else f"importance {value:.3f}")
    return shown + ("" if cover is None else f" · scored {cover:.0%}")


# session values (comments, not docstrings: Streamlit's magic would draw a bare string on the page)
OPEN_NODE = "hd_open_node"  # the node edited last; the aspect holding it is drawn open after the Save's rerun
OPEN_DELETED = "hd_open_deleted"  # True after a restore, so the list of deleted nodes stays open for the next one
CLOSE = "hd_close_popover"  # key of the popover to draw closed on the next run (its form was just saved)


def popover(slot, label: str, key: str, help: str):
    """An Edit/Add popover whose open state the server tracks, so that a Save can close it.

    A plain popover is opened and closed by the browser only and stays open over the tree after its form is
    saved. This one reports opening (a rerun), and the run after a save draws it closed.
    """
    if st.session_state.get(CLOSE) == key:
        del st.session_state[CLOSE]
        st.session_state[key] = False  # allowed: the popover is not drawn yet in this run
    return slot.popover(label, help=help, key=key, on_change="rerun")


def aspect_of(node_id: str) -> str:
    """The human aspect (tree root) above ``node_id``."""
    while nodes.get(node_id, {}).get("parent") is not None:
        node_id = nodes[node_id]["parent"]
    return node_id


def node_editor(node: dict, edit_slot, add_slot) -> None:
    nid = node["id"]
    edit_key = f"hd_pop_edit_{run_id}_{nid}"
    with popover(edit_slot, "Edit", edit_key, "Edit, move, prune from the aggregator, or mark for (re)decomposition"):
        with st.form(f"hd_edit_{run_id}_{nid}"):
            name = st.text_input("Name", node["name"])
            definition = st.text_area("Definition", node["definition"], height=90)
            others = [i for i in layers if i != nid and not i.startswith(nid + "/")]
            parent = node.get("parent")
            new_parent = st.selectbox("Parent", others, index=others.index(parent) if parent in others else 0,
                                      format_func=lambda i: f"{'  ' * (layers[i]['layer'] - 1)}{nodes[i]['name']}",
                                      disabled=parent is None)
            in_agg = st.checkbox("Feeds the aggregator", node.get("in_aggregator", True))
            expand = st.checkbox("Decompose it in the next round", node.get("expand", False))
            redo = st.checkbox("Ask the LLM for a fresh decomposition of it", bool(node.get("redecompose")))
            if st.form_submit_button("Save", type="primary"):
                changes = {}
                if name.strip() != node["name"] or definition.strip() != node["definition"]:
                    changes.update(name=name.strip(), definition=definition.strip())
                if parent is not None and new_parent != parent:
                    changes["parent"] = new_parent
                if in_agg != node.get("in_aggregator", True):
                    changes["in_aggregator"] = in_agg
                if expand != node.get("expand", False):
                    changes["expand"] = expand
                if redo != bool(node.get("redecompose")):
                    changes["redecompose"] = int(node.get("redecompose") or 0) + 1 if redo else 0
                if changes:
                    st.session_state[CLOSE] = edit_key
                    save(nid, f"Saved {node['name']!r}.", **changes)
    add_key = f"hd_pop_add_{run_id}_{nid}"
    with popover(add_slot, "Add", add_key, "Add a child criterion"):
        with st.form(f"hd_add_{run_id}_{nid}", clear_on_submit=True):
            name = st.text_input("Name of the new criterion")
            definition = st.text_area("Definition", height=80)
            if st.form_submit_button("Add", type="primary"):
                if not name.strip():
                    st.error("Give the criterion a name.")
                else:
                    who = auth.actor()
                    new_id, _ = once.submit(store, f"hd_add_{run_id}_{nid}", (run_id, nid, name, definition),
                                            "criterion", lambda: add_node(store, run_id, nid, name, definition,
                                                                          actor=who))
                    messages.flash("success", f"Added {name.strip()!r} under {node['name']!r}.", at=f"hd_node:{new_id}")
                    st.session_state["hd_last_edit"] = run_id
                    st.session_state[OPEN_NODE] = nid
                    st.session_state[CLOSE] = add_key
                    st.rerun()


def pending_text(node: dict) -> str:
    """Where an edited node's figures stand: saved, being scored by a round, or refitted by one."""
    round_ = scored_by(later_rounds, run_id, node)
    if round_ is None:
        return "pending: saved, not scored yet (run the next round)"
    status = runs.effective_status(round_)
    if status == "finished":
        return f"pending here: refitted in run #{round_.id} (pick it above)"
    if status in tables.LIVE_STATUSES:
        return f"pending: run #{round_.id} is scoring it"
    return f"pending: run #{round_.id}, which scores it, is {status} (resume it under Runs)"


def node_row(node: dict, depth: int) -> None:
    nid = node["id"]
    cols = st.columns([0.001 + 0.4 * depth, 5, 1.6, 1, 1, 1, 1], vertical_alignment="center")
    pruned = not node.get("in_aggregator", True)
    badges = [provenance(node)] + (["not in aggregator"] if pruned else []) \
        + (["will expand"] if node.get("expand") else []) + (["will re-decompose"] if node.get("redecompose") else [])
    name = f"~~{messages.escape_markdown(node['name'])}~~" if pruned else f"**{messages.escape_markdown(node['name'])}**"
    name = ("↳ " if depth else "") + name
    cols[1].markdown(f"{name} · {messages.escape_markdown(node['definition'])}  \n:gray[{' · '.join(badges)}]")
    flags = node_flags(node)
    if flags:
        cols[1].caption(rubric_flags.flag_caption(flags))
    value = state.node_importance(nid)
    cover = state.coverage.get(nid)
    if nid in stale:
        cols[2].caption(pending_text(node), help=IMPORTANCE_HELP)
    elif value is None:
        cols[2].caption("not an input of the aggregator", help=IMPORTANCE_HELP)
    else:
        # coverage beside every candidate: importance on mostly imputed scores says little (not expanded below 80%)
        cols[2].progress(min(1.0, max(0.0, value) / top_importance), text=importance_text(nid, value, cover))
    node_editor(node, cols[3], cols[4])
    messages.show_flash(at=f"hd_node:{nid}")  # the outcome of this node's last save, under it
    if cols[5].button("Undo", key=f"hd_undo_{run_id}_{nid}", help="Restore the previous version",
                      disabled=versions[nid] <= 1):
        try:
            undo_node(store, run_id, nid, expected_version=expected(nid), actor=auth.actor())
        except (EditConflict, ValueError) as exc:
            messages.flash("error", f"Not undone: {exc}", at=f"hd_node:{nid}")
        else:
            messages.flash("success", f"Restored the previous version of {node['name']!r}.", at=f"hd_node:{nid}")
            st.session_state["hd_last_edit"] = run_id
        st.session_state[OPEN_NODE] = nid
        st.rerun()
    if node.get("parent") is not None and cols[6].button("Delete", key=f"hd_del_{run_id}_{nid}",
                                                         help="Delete (undo or restore brings it back)"):
        save(nid, f"Deleted {node['name']!r} (undo brings it back).", deleted=True)


def subtree(parent_id: str, depth: int) -> None:
    for child in [n for n in tree["nodes"] if n.get("parent") == parent_id and not n.get("deleted")]:
        node_row(child, depth)
        subtree(child["id"], depth + 1)


st.markdown("#### Review and edit the tree")
st.caption("Accept a node by leaving it as is. Every change is saved as a new version (Undo restores the previous "
           "one) and written to the audit log; if someone else changed the node meanwhile, you are told instead of "
           "overwriting their edit. 'Flagged' under a generated node: a doubt of the rubric checks that did not "
           "refuse it, so it is in the tree; read why, and edit or delete it if the doubt holds.")
st.caption(rubric_flags.checked_by(run.llm))  # the rules alone on the embedded model, said so (issue 65)
for aspect_node in [n for n in tree["nodes"] if n.get("parent") is None]:
    label = f"{aspect_node['name']} · {len([i for i in layers if i.startswith(aspect_node['id'] + '/')])} sub-criteria"
    # open: the target aspect, and the aspect holding the node edited last (a changed label, e.g. one more
    # sub-criterion, would otherwise come back closed after the Save's rerun)
    edited = st.session_state.get(OPEN_NODE)
    with st.expander(label, expanded=aspect_node["id"] == target
                     or (edited in nodes and aspect_of(edited) == aspect_node["id"])):
        messages.show_flash(at=f"hd_aspect:{aspect_node['id']}")
        node_row(aspect_node, 0)
        subtree(aspect_node["id"], 1)

deleted = [n for n in tree["nodes"] if n.get("deleted")]
if deleted:
    with st.expander(f"Deleted nodes ({len(deleted)})", expanded=bool(st.session_state.get(OPEN_DELETED))):
        for n in deleted:
            c1, c2 = st.columns([5, 1])
            c1.markdown(f"~~{messages.escape_markdown(n['name'])}~~ · {messages.escape_markdown(n['definition'])}")
            if c2.button("Restore", key=f"hd_restore_{run_id}_{n['id']}"):
                save(n["id"], f"Restored {n['name']!r}.", deleted=False)

refused = state.refused_children
if refused:
    with st.expander(f"Sub-criteria the checks refused ({len(refused)})"):
        st.caption("The LLM proposed these children, but the rubric checks refused them (a copy of a judged text, "
                   "a near-duplicate of a sibling or of a node already in the tree, empty, repeated, too long, or "
                   "naming no quality), or the judge's own model said it orders the evaluator or refuses, so they "
                   "are not in the tree. Restore one to add it as a child node, a rule's refusal or the model's "
                   "alike: the next round scores it.")
        for i, r in enumerate(refused):
            parent = nodes.get(r["parent"])
            restored = any(n.get("parent") == r["parent"] and n["name"] == r.get("name") and not n.get("deleted")
                           for n in tree["nodes"])
            c1, c2 = st.columns([5, 1])
            c1.markdown(f"**{messages.escape_markdown(r.get('name') or '')}** · {messages.escape_markdown((r.get('definition') or '')[:300])}"
                        f"  \n:gray[under {messages.escape_markdown(parent['name'] if parent else r['parent'])} · "
                        f"{messages.escape_markdown(rubric_flags.refusal_text(r))}"
                        f"{' · restored' if restored else ''}]")
            if c2.button("Restore", key=f"hd_restore_refused_{run_id}_{i}",
                         disabled=restored or parent is None or bool(parent.get("deleted")),
                         help="Add it as a child of its parent (saved and audited under your name)"):
                name = (r.get("name") or "").strip() or "restored criterion"
                add_node(store, run_id, r["parent"], name, r.get("definition") or "", actor=auth.actor())
                messages.flash("success", f"Restored {name!r} under {parent['name']!r}; the next round scores it.")
                st.session_state["hd_last_edit"] = run_id
                st.rerun()

# --------------------------------------------------------------------------- what the edits did
@st.cache_data(show_spinner="Refitting the aggregator with your edits...", max_entries=16)
def cached_preview(run_key: int, version: int, tree_json: str) -> RefitPreview:
    # keyed by the run's version and the edited tree: a rerun of the page (every click) does not refit again
    return refit_preview(judge, json.loads(tree_json))


preview = cached_preview(run_id, run.version, json.dumps(tree, sort_keys=True))
st.markdown("#### Aggregator refit with your edits (training split, out of fold)")
m = st.columns(4)
for i, stat in enumerate(("pearson", "spearman")):
    before, after = preview.before.get(stat), preview.after.get(stat)
    m[i].metric(f"{stat.capitalize()} of {target}", "n/a" if after is None else f"{after:.3f}",
                None if before is None or after is None else f"{after - before:+.3f} vs the fitted tree",
                help=f"{stat.capitalize()} correlation of the refit aggregator's out-of-fold predictions with the "
                     f"human {target} scores of the training items (1 = same order, 0 = none); the change is "
                     "against the tree as this run fitted it. n/a: undefined (e.g. constant predictions).")
m[2].metric("Criteria in the refit", len(preview.features), help=glossary.HELP["Criteria in the refit"])
m[3].metric("Waiting for scores", len(preview.pending), help=glossary.HELP["Waiting for scores"])
if preview.pending:
    st.caption("Edited, moved and added nodes have no scores yet: the next round scores them "
               f"({', '.join(nodes[p]['name'] for p in preview.pending if p in nodes)}).")

next_tree = next_round_tree(tree)
next_params = {**run.params, "criteria_tree": next_tree}
spec = RunSpec(method="hd_eval", dataset=run.dataset, aspect=target, params=next_params,
               train_size=len(run.split.train_ids), test_size=len(run.split.test_ids),
               seed=run.split.seed, llm=LLMConfig.from_dict(run.llm))
c1, c2 = st.columns([2, 3])
runs.keep_standby(store.path)  # a warm worker for the next round: no imports after the click (issue 62 item 6)
max_layers = int(c2.number_input("Layers for the next round", 1, 5, settings.max_layers,
                                 key=f"hd_next_L_{run_id}",
                                 help="How deep the next round's tree may grow; nodes marked for decomposition are "
                                      "split up to this depth. The paper uses 3."))
spec = RunSpec(**{**spec.__dict__, "params": {**next_params, "max_layers": max_layers}})
try:
    calls = estimate(store, spec)
    c2.caption(f"Next round: at most {calls['fit']} + {calls['score']} LLM requests before cache hits; "
               "unchanged nodes are answered by the cache.")
except ValueError as exc:
    c2.error(messages.escape_markdown(str(exc)))
with c1:
    if start_form.start_button("Run next round with this tree", f"hd_next_{run_id}",
                               missing="this round is still running" if status in tables.LIVE_STATUSES else ""):
        # the same items and backend: unchanged nodes are answered by the cache
        new_id = start_form.start(spec, split=run.split, label=" (next round)")
        if new_id is not None:
            widgets.set_value("hd_run", new_id)
            st.rerun()

# the aggregator's flagged inputs: a person accepts them, or edits the node (issue 50 item 3)
rubric_flags.judge_flags_panel(store, run, widget_prefix="hd")

# --------------------------------------------------------------------------- node details
st.markdown("#### A node up close")
agg_state = state.target_aggregator_state
agg = state.target_aggregator()
labels = {i: nodes[i]["name"] if i in nodes else i for i in agg.features}
pick = st.selectbox("Node", [i for i in layers], key=f"hd_node_{run_id}",
                    format_func=lambda i: f"{'· ' * (layers[i]['layer'] - 1)}{nodes[i]['name']}")
node = nodes[pick]
d1, d2 = st.columns([2, 3])
d1.markdown(f"**{messages.escape_markdown(node['name'])}** ({provenance(node)}, layer {layers[pick]['layer']})  \n"
            f"{messages.escape_markdown(node['definition'])}")
if picked_flags := node_flags(node):
    d1.caption(rubric_flags.flag_caption(picked_flags))
detail = None if pick in stale else node_summary(judge, pick)
if pick in stale:
    d2.info(f"Correlation, importance and training scores: {pending_text(node)}. This run's figures were "
            "measured on the node's earlier text.")
elif detail is not None:
    r = detail.correlation["pearson"]
    d1.markdown(f"Pearson with human {target}: **{r:.3f}**" if r is not None
                else f"Pearson with human {target}: n/a (constant scores)")
    if plots.crosses_zero(detail.importance, detail.importance_std):
        d1.markdown(f"Permutation importance: **no measurable effect** ({detail.importance or 0:.3f} ± "
                    f"{detail.importance_std or 0:.3f}: the interval includes zero)", help=IMPORTANCE_HELP)
    else:
        d1.markdown(f"Permutation importance: **{detail.importance or 0:.3f}** ± {detail.importance_std or 0:.3f}",
                    help=IMPORTANCE_HELP)
    d1.caption(f"{detail.missing} training scores did not parse (imputed).")
    d2.plotly_chart(node_score_histogram(detail.scores), key=f"hd_hist_{pick}")
else:
    d2.info("This node has no training scores in this round (new, edited, or removed from the aggregator).")

# --------------------------------------------------------------------------- explainability
st.markdown("#### Why the aggregator scores as it does")
if importance:
    imp_frame = pd.DataFrame.from_dict(importance, orient="index")
    imp_frame = imp_frame[imp_frame.index.isin(agg.features)]
    st.plotly_chart(importance_figure(imp_frame, labels=labels), key="hd_pi")

verdicts = readers.load_verdicts(store, run)


@st.cache_data(show_spinner="Computing SHAP values...", max_entries=8)
def cached_shap(run_key: int, state_json: str, rows_json: str, ids: tuple[str, ...]) -> dict:
    a = Aggregator.from_state(json.loads(state_json))
    x, _ = a.impute(json.loads(rows_json))
    return {t: (f, f.attrs["base_value"]) for t, f in shap_values(a, x, sample_ids=list(ids)).items()}


@st.cache_data(show_spinner="Explaining the item...", max_entries=32)
def cached_explanation(run_key: int, state_json: str, row_json: str, item: str, target: str,
                       scale: tuple[float, float]) -> Explanation:
    a = Aggregator.from_state(json.loads(state_json))
    return explain_prediction(a, json.loads(row_json), target, sample_id=item, scale=scale)


scored = [v for v in verdicts if not v.missing]
# SHAP values of an MLP are model-agnostic permutations: seconds to minutes on a busy CPU (40 s of a 56 s first
# visit at load 16), which held every figure after them back; they are computed when asked, once per run
SHAP_ASKED = f"hd_shap_{run_id}"
if scored and agg.model is not None and agg.kind == "nn" and not st.session_state.get(SHAP_ASKED):
    st.caption("SHAP values of the MLP aggregator take a while to compute (a permutation explainer).")
    if st.button("Compute SHAP values", key=f"hd_shap_button_{run_id}",
                 help="Per test item: how much each criterion moved its predicted score from the average."):
        st.session_state[SHAP_ASKED] = True
        st.rerun()
elif scored and agg.model is not None:
    frames = cached_shap(run_id, json.dumps(agg_state), json.dumps([v.criteria for v in scored]),
                         tuple(v.sample_id for v in scored))
    if target in frames:
        frame, base = frames[target]
        frame.attrs["base_value"] = base
        s1, s2 = st.columns(2)
        s1.plotly_chart(shap_bar_figure(frame, title=f"Mean |SHAP| on {target} (test items)", labels=labels),
                        key="hd_shap_bar")
        item = s2.selectbox("Test item", [v.sample_id for v in scored], key=f"hd_item_{run_id}")
        row = next(v.criteria for v in scored if v.sample_id == item)
        why = cached_explanation(run_id, json.dumps(agg_state), json.dumps(row), item, target,
                                 (float(judge.aspect["low"]), float(judge.aspect["high"])))
        s2.plotly_chart(explanation_figure(why, labels=labels), key="hd_waterfall")
else:
    st.caption("SHAP values appear once the run has scored test items.")

# --------------------------------------------------------------------------- test results
st.markdown("#### Test split")
if run.summary is not None:
    trust.trust_panel(trust.run_trust(store, run))
    dataset = readers.load_dataset(store, run.dataset)
    frame = tables.verdicts_frame(dataset, target, verdicts)
    t1, t2 = st.columns(2)
    t1.plotly_chart(plots.human_vs_judge_scatter(frame["human"].tolist(), frame["judge"].tolist(),
                                                 ids=frame["sample id"].tolist(), aspect=target,
                                                 low=judge.aspect["low"], high=judge.aspect["high"]),
                    key="hd_scatter")
    with t2:
        run_view.baseline_table(run, key="hd")
    with st.expander("This run's correlations with confidence intervals"):
        st.dataframe(tables.correlation_frame(run.summary), hide_index=True)
    imputed = [(v.sample_id, int(v.metadata.get("imputed_criteria", 0)), int(v.metadata.get("n_criteria", 0)),
                v.missing, v.metadata.get("missing_reason", "")) for v in verdicts]
    n_imputed = sum(1 for _, k, _, _, _ in imputed if k)
    limit = settings.max_imputed_fraction
    st.caption(f"{n_imputed} of {len(imputed)} test items had criteria imputed with training means; an item with "
               f"more than {limit:.0%} of its criteria imputed gets no score.")
    if n_imputed:
        with st.expander("Imputed criteria per test item"):
            st.dataframe(pd.DataFrame([{"item": i, "imputed criteria": f"{k} of {n}",
                                        "scored": not gone, "why missing": why}
                                       for i, k, n, gone, why in imputed if k]), hide_index=True)

run_view.history_table(tree_owner(run_id), key="hd")

seen.clear()
seen.update(versions)  # what this session has now shown

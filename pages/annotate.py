"""Annotate: a queue of items to label (judges' disagreements first), agreement from the labels, who did what."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("Annotate")

import pandas as pd
from judge_engine import annotations, compare
from judge_engine.store import NotFound
from pages.ui import app_frame, auth, item_view, messages, once, readers, session, tables


store = session.get_store()

messages.show_flash()
st.caption("Label items one after the other: type a score and press Enter. Your labels are kept as yours; the "
           "scores the data came with are never changed. Which human score runs use is chosen per dataset below.")

datasets = store.list_datasets()
if not datasets:
    st.info("No dataset yet: import one under Datasets first.")
    st.stop()

me = auth.identity()
c1, c2 = st.columns(2)
ds_name = c1.selectbox("Dataset", [d["name"] for d in datasets], key="annotate_dataset")
aspect_names = [a["name"] for a in next(d["aspects"] for d in datasets if d["name"] == ds_name)]
aspect_name = c2.selectbox("Aspect", aspect_names, key="annotate_aspect")
dataset = readers.load_dataset(store, ds_name)
aspect = dataset.aspect(aspect_name)
labels = store.annotations(ds_name, aspect=aspect_name)
blind = st.toggle("Hide other people's scores of an item until I have given mine", value=True,
                  key="annotate_blind")


def suggestions() -> list[str]:
    """The Compare page's Label-next items: where the finished runs on the same test items disagree most."""
    runs = compare.finished_runs(store, ds_name, aspect_name)
    if not runs:
        return []
    group = next(iter(compare.runs_by_split(runs).values()))
    if len(group) < 2:
        return []
    aligned = compare.align(store, group)
    return compare.label_next(dataset, aligned, k=len(aligned.ids))["item"].tolist()


skipped = st.session_state.setdefault(f"annotate_skipped_{ds_name}_{aspect_name}", [])
suggested = suggestions()
queue = annotations.annotation_queue(dataset, aspect_name, labels, me, suggested=suggested, skipped=skipped)
mine = {a.sample for a in labels if a.annotator == me}
st.caption(messages.escape_markdown(f"{len(mine)} items labelled by you ({me}); {len(queue)} in your queue"
                        + (f", the first {len([i for i in suggested if i in queue])} where judges disagree most."
                           if suggested else ". (With two finished runs on the same items, the items where they "
                           "disagree most come first.)")))

# --------------------------------------------------------------------------- the next item
if not queue:
    st.success("Nothing left to label on this aspect.")
else:
    item = queue[0]
    sample = dataset.by_id()[item]
    with st.container(border=True):
        st.markdown(f"**Item {messages.escape_markdown(item)}**")
        item_view.show_item_texts(dataset, sample)
        if aspect.definition:
            st.caption(messages.escape_markdown(f"{aspect.name}: {aspect.definition}"))
        others = [a for a in annotations.latest(labels) if a.sample == item and a.annotator != me]
        if not blind and others:
            st.caption(messages.escape_markdown("Others' scores: " + ", ".join(f"{a.annotator} {a.value:g}" for a in others)))
    # keyed by the item: the second click of a double Enter names the form of the item the person saw, which
    # is not drawn again once it is labelled, so it cannot label the next item with the same score
    with st.form(f"annotate_form_{item}", clear_on_submit=True):
        value = st.number_input(messages.escape_markdown(f"Your {aspect.name} score ({aspect.low:g}-{aspect.high:g}), "
                                             "then Enter"), min_value=float(aspect.low), max_value=float(aspect.high),
                                value=None, step=1.0, key="annotate_value",
                                help="Your own label, kept beside the others' under your name; it never replaces "
                                     "an imported score. Enter saves it and moves to the next item.")
        note = st.text_input("Note (optional)", key="annotate_note", max_chars=500)
        c1, c2 = st.columns([1, 6])
        save = c1.form_submit_button("Save", type="primary")
        skip = c2.form_submit_button("Skip")
    if save:
        if value is None:
            st.error("Type a score first (or Skip).")
        else:
            try:
                who = auth.actor()
                once.submit(store, "annotate_save", (ds_name, item, aspect_name, float(value), note), "annotation",
                            lambda: store.add_annotation(ds_name, item, aspect_name, value, annotator=who,
                                                         note=note).value)
            except (ValueError, NotFound) as exc:
                st.error(messages.escape_markdown(str(exc)))
            else:
                st.session_state["annotate_last"] = (ds_name, aspect_name, item, float(value))
                st.rerun()
    elif skip:
        skipped.append(item)
        st.rerun()

last = st.session_state.get("annotate_last")
if last and last[:2] == (ds_name, aspect_name):
    _, _, last_item, last_value = last
    others = [a for a in annotations.latest(labels) if a.sample == last_item and a.annotator != me]
    st.caption(messages.escape_markdown(f"Saved {last_value:g} for {last_item}. "
                            + ("Others gave it: " + ", ".join(f"{a.annotator} {a.value:g}" for a in others)
                               if others else "Nobody else has labelled it yet.")))

# --------------------------------------------------------------------------- who labelled how much
st.subheader("Labels so far")
counts = annotations.labelled_counts(labels, source=None)
if counts:
    st.dataframe(pd.DataFrame([{"annotator": k, "items labelled": v} for k, v in counts.items()]), hide_index=True,
                 key="annotate_counts")
else:
    st.caption("No labels on this aspect yet.")

# --------------------------------------------------------------------------- agreement
st.subheader("Agreement")
pools = {"everyone's labels (imported raters and people)": None, "people's labels only": "person",
         "imported raters only": "imported"}
c1, c2 = st.columns(2)
pool = c1.selectbox("Labels", list(pools), key="annotate_pool")
n_boot = c2.select_slider("Bootstrap resamples", [100, 200, 500], value=200, key="annotate_boot")
chosen = [a for a in labels if pools[pool] is None or a.source == pools[pool]]
if not chosen:
    st.caption("No labels in this pool yet.")
else:
    labelled_ids = [s.id for s in dataset.samples if any(a.sample == s.id for a in chosen)]
    result = annotations.dataset_agreement(dataset, chosen, aspect_name, labelled_ids, aggregate="mean",
                                           n_bootstrap=int(n_boot))
    st.dataframe(pd.DataFrame([tables.agreement_row(result)]), hide_index=True, key="annotate_agreement")
    if result.n_items < 3:
        st.caption("Agreement needs at least three items labelled by two or more annotators.")

# --------------------------------------------------------------------------- which human score runs use
st.subheader("The human score runs use")
names = sorted({a.annotator for a in store.annotations(ds_name)})
options = ["imported", "mean", "experts", *[f"annotator:{n}" for n in names]]
current = store.human_aggregate(ds_name)
if current not in options:
    options.append(current)
with st.form("annotate_aggregate_form"):
    pick = st.selectbox("Runs of this dataset are trained and meta-evaluated against", options,
                        index=options.index(current), key="annotate_aggregate",
                        format_func=lambda o: annotations.parse_aggregate(o).label)
    experts = st.multiselect("Experts (for the experts' mean)", names, default=sorted(store.experts() & set(names)),
                             key="annotate_experts")
    if st.form_submit_button("Save choice"):
        who = auth.actor()
        try:
            for n in names:
                if (n in experts) != (n in store.experts()):
                    store.set_expert(n, n in experts, actor=who)
            if pick != current:
                store.set_human_aggregate(ds_name, pick, actor=who)
        except (ValueError, NotFound) as exc:
            st.error(messages.escape_markdown(str(exc)))
        else:
            messages.flash("success", f"Runs of {ds_name} started from now on use "
                                      f"{annotations.parse_aggregate(pick).label}; each run records it.")
            st.rerun()
st.caption(messages.escape_markdown(f"Now: {annotations.parse_aggregate(current).label}. A run keeps the choice it was started "
                        "with, so its results can be reproduced."))

# --------------------------------------------------------------------------- activity
st.subheader("Who did what")
log = store.audit_log(limit=100)
if log:
    st.dataframe(pd.DataFrame([{"when": tables.fmt_time(e["ts"]), "who": e["actor"], "what": e["entity"],
                                "item": e["entity_id"], "action": e["action"], "after": e["after"]} for e in log]),
                 hide_index=True, key="annotate_audit")
else:
    st.caption("Nothing edited yet.")

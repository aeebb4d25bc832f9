"""Compare: every finished run on the same items side by side, where judges fail, what to label, export."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("Compare methods")

import functools
import zlib

from judge_engine import annotations, compare, export
from judge_engine import figures as plots
from judge_engine.methods import Judge
from judge_engine.records import RunRecord
from judge_engine.runs import RunSpec
from judge_engine.store import NotFound
from pages.ui import (app_frame, auth, messages, once, probes, readers, session, start_form, stress, tables,
                      trust)
from pages.ui import glossary
from pages.ui.item_view import show_item_texts


# where each learned judge is edited by a person (a comment, not a docstring: Streamlit's magic would draw a bare
# string on the page)
METHOD_PAGES = {"hypoeval": "pages/hypoeval.py", "hpss": "pages/hpss.py", "active_critic": "pages/active_critic.py",
                "hd_eval": "pages/hd_eval.py"}

store = session.get_store()

messages.show_flash()
st.caption("Runs are compared on exactly the same test items. Correlations come with 95% bootstrap intervals; "
           "each run is tested against the best one with a paired bootstrap on the same items, where the items hold "
           "enough independent sources for a claim (said under the table).")

datasets = store.list_datasets()
if not datasets:
    st.info("No dataset yet: import one under Datasets, then start runs of several methods on it.")
    st.stop()

# open on the dataset and aspect with the most finished runs
finished_all = [r for r in store.runs(limit=10_000) if r.status == "finished"]
counts: dict[tuple[str, str], int] = {}
for r in finished_all:
    counts[(r.dataset, r.aspect)] = counts.get((r.dataset, r.aspect), 0) + 1
busiest = max(counts, key=counts.get) if counts else (None, None)
c1, c2 = st.columns(2)
ds_names = [d["name"] for d in datasets]
ds_name = c1.selectbox("Dataset", ds_names, key="compare_dataset",
                       index=ds_names.index(busiest[0]) if busiest[0] in ds_names else 0)
aspect_names = [a["name"] for a in next(d["aspects"] for d in datasets if d["name"] == ds_name)]
aspect = c2.selectbox("Aspect", aspect_names, key="compare_aspect",
                      index=aspect_names.index(busiest[1]) if ds_name == busiest[0] and busiest[1] in aspect_names
                      else 0)
finished = compare.finished_runs(store, ds_name, aspect)
if not finished:
    st.info("No finished run on this dataset and aspect yet. Start runs under Runs or a method's page.")
    st.stop()

by_split = compare.runs_by_split(finished)


def split_label(runs: list[RunRecord]) -> str:
    """What a set of test items is: its size and seed (all its runs share them) and the runs on it."""
    split = runs[0].split
    return (f"{len(split.test_ids) if split else 0} test items (seed {split.seed if split else None}), "
            f"{len(runs)} run(s): {', '.join(sorted({r.method for r in runs}))}")


split_labels = {key: split_label(runs) for key, runs in by_split.items()}
common_subset = st.toggle("Compare runs from different splits on the items they share", key="compare_common",
                          help="Off: only runs scored on exactly the same test items are compared.")
if common_subset:
    candidates, scope = finished, "shared"
else:
    keys = list(by_split)
    pick = st.selectbox("Test items", range(len(keys)), format_func=lambda i: split_labels[keys[i]],
                        key="compare_split")
    split = keys[pick or 0]
    candidates, scope = by_split[split], zlib.crc32(repr(split).encode())
labels = {r.id: f"#{r.id} {r.method} ({tables.fmt_time(r.created)})" for r in candidates}
# one selection per set of test items: switching to other items starts from all of their runs
chosen_ids = st.multiselect("Runs", list(labels), default=list(labels), format_func=labels.get,
                            key=f"compare_runs_{ds_name}_{aspect}_{scope}")
chosen = [r for r in candidates if r.id in chosen_ids]
if not chosen:
    st.info("Choose at least one run.")
    st.stop()

used = sorted({r.human_aggregate for r in chosen})
if len(used) > 1:
    st.error(messages.escape_markdown("These runs were evaluated against different human scores ("
                          + "; ".join(annotations.parse_aggregate(u).label for u in used)
                          + "): choose runs that used the same one."))
    st.stop()
aggregate = used[0]
# what identifies the runs' verdicts: a run's version changes whenever its verdicts or summary do
run_versions = tuple((r.id, r.version) for r in chosen)


@st.cache_data(max_entries=16, show_spinner="Lining up the runs' verdicts...")
def _align(db: str, run_versions: tuple, common_subset: bool) -> compare.Aligned:
    """The runs' verdicts on their common items, read once per version of the runs (not on every rerun)."""
    s = session.get_store()
    return compare.align(s, [s.run(rid) for rid, _ in run_versions], common_subset=common_subset)


try:
    dataset = readers.human_dataset(store, ds_name, aggregate)
    aligned = _align(str(store.path), run_versions, common_subset)
except (compare.NotComparable, NotFound) as exc:
    st.error(messages.escape_markdown(str(exc)))
    st.stop()
if not aligned.ids:
    st.warning("These runs share no scored item.")
    st.stop()

levels = compare.available_levels(dataset, aligned.ids)
natural = dataset.natural_level if dataset.natural_level in levels else "sample"
c1, c2, c3 = st.columns(3)
level = c1.selectbox("Level", levels, index=levels.index(natural), key="compare_level",
                     format_func=lambda lv: f"{lv} (natural)" if lv == natural else lv)
statistic = c2.selectbox("Statistic", list(compare.STATISTICS), index=1, key="compare_stat")
n_bootstrap = c3.select_slider("Bootstrap resamples", [200, 500, 1000], value=500, key="compare_boot",
                               help="Resamples behind each confidence interval and paired test: more is steadier "
                                    "and slower.")


@st.cache_data(max_entries=16, show_spinner="Computing correlations and paired tests...")
def _table(db: str, run_versions: tuple, level: str, statistic: str, n_bootstrap: int, common_subset: bool,
           aggregate: str, n_labels: int, last_label: float, _dataset, _aligned: compare.Aligned):
    """The comparison table, computed once per (runs' versions, settings, labels): its bootstrap resamples are
    the page's heaviest work. ``_dataset`` and ``_aligned`` are what the other arguments identify (Streamlit
    does not hash arguments whose name starts with an underscore)."""
    return compare.comparison_frame(session.get_store(), _dataset, _aligned, level=level, statistic=statistic,
                                    n_bootstrap=n_bootstrap)


stored_labels = store.annotations(ds_name, aspect=aspect)
last_label = max((a.time for a in stored_labels), default=0.0)
frame = _table(str(store.path), run_versions, level, statistic, n_bootstrap, common_subset, aggregate,
               len(stored_labels), last_label, dataset, aligned)


@st.cache_data(max_entries=16, show_spinner="Computing the annotators' agreement...")
def _agreement(db: str, ds: str, aspect: str, ids: tuple, level: str, aggregate: str, n_labels: int,
               last: float) -> annotations.Agreement:
    """Agreement of the labels the runs are evaluated on: the imported raters' for the imported score,
    else the labels the aggregate is made of (everyone's for one annotator's, who has no agreement alone)."""
    s = session.get_store()
    chosen_aggregate = annotations.parse_aggregate(aggregate)
    pool = s.annotations(ds, aspect=aspect, source="imported" if chosen_aggregate.kind == "imported" else None)
    if chosen_aggregate.kind == "annotator":
        chosen_aggregate = annotations.HumanAggregate("mean")
    return annotations.dataset_agreement(readers.human_dataset(s, ds, aggregate), pool, aspect, list(ids),
                                         aggregate=chosen_aggregate, experts=s.experts(), level=level,
                                         n_bootstrap=200)


agreement = _agreement(str(store.path), ds_name, aspect, aligned.ids, level, aggregate, len(stored_labels),
                       last_label)
ceiling = ({m: (None if v != v else v) for m, v in agreement.ceiling.items()}
           if agreement.n_items >= 3 else None)

st.subheader(f"{len(chosen)} run(s) on {len(aligned.ids)} items")
show = frame.copy()
for m in compare.STATISTICS:
    show[f"{m} CI"] = show[f"{m} CI"].map(lambda ci: "–" if not ci or ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]")
if ceiling and ceiling.get(statistic) is not None:  # each judge's correlation beside the ceiling of its labels
    show.insert(list(show.columns).index(f"{statistic} CI") + 1, f"human ceiling ({statistic})", ceiling[statistic])
st.dataframe(show, hide_index=True, key="compare_table",
             column_config={**{m: st.column_config.NumberColumn(format="%.3f") for m in compare.STATISTICS},
                            "failure rate": st.column_config.NumberColumn(format="percent"),
                            f"Δ{statistic} vs best": st.column_config.NumberColumn(format="%.3f"),
                            f"human ceiling ({statistic})": st.column_config.NumberColumn(format="%.3f"),
                            "p vs best": st.column_config.NumberColumn(format="%.3f"),
                            "dollars": st.column_config.NumberColumn(format="$%.4f")})
st.caption(messages.escape_markdown(f"Human score: {annotations.parse_aggregate(aggregate).label}."))
if ceiling and ceiling.get(statistic) is not None:
    lo, hi = agreement.ceiling_ci[statistic]
    a_lo, a_hi = agreement.alpha_ci
    st.caption(messages.escape_markdown(
        f"Human ceiling of these labels ({len(agreement.annotators)} annotators on {agreement.n_items} items, each "
        f"against the mean of the others, {level} level): {statistic} {ceiling[statistic]:.3f}"
        + (f" [{lo:.3f}, {hi:.3f}]" if lo == lo else "")
        + (f"; Krippendorff's alpha (interval) {agreement.alpha:.3f}" if agreement.alpha == agreement.alpha else "")
        + (f" [{a_lo:.3f}, {a_hi:.3f}]" if a_lo == a_lo else "")
        + ". A judge at the ceiling agrees with these annotators as well as they agree with each other."))
for r in chosen:  # what each run's figures alone do not say (empty bank, imputed criteria, missing scores, ...)
    for warning in r.summary.warnings if r.summary else ():
        st.warning(messages.escape_markdown(f"#{r.id} {r.method}: {warning.message}"))
with st.expander("Trust: each judge against its own training figure and its baselines", expanded=True):
    for r in chosen:  # the same report as the Runs page, compact: green only when no check warns
        trust.trust_panel(trust.run_trust(store, r), compact=True)
# where each one disagrees: length, collapse, slices, explanation themes (no call until asked); on by default,
# and ?probes=off opens the page without them (a lighter link to share, and how the benchmark times their cost).
# Drawn here but filled at the end of the script: a run whose probes are not kept yet computes them (seconds at
# 1,600 items), and the plots and tables below are drawn meanwhile
probes_slot = st.container()
# does each judge notice degradations it must see? new calls, so it runs on a click, for one run at a time
with st.expander("Stress tests: does a judge score perturbed outputs lower?"):
    stressed = st.selectbox("Stress-test run", [r.id for r in chosen], key="compare_stress_run",
                            format_func=lambda i: f"#{i} {next(r.method for r in chosen if r.id == i)}")
    if stressed is not None:
        stress.stress_panel(store, next(r for r in chosen if r.id == stressed), key="compare_stress")
# what the intervals and tests rest on (judge_engine.evidence): on too few independent units there is no claim
st.caption(messages.escape_markdown(compare.frame_evidence(frame)))
worse = frame[frame["significantly worse"]]
if len(worse):
    st.caption(messages.escape_markdown(
        f"Significantly worse than the best run (paired bootstrap at the {worse['tested at'].iloc[0]} level, "
        "p < 0.05): " + ", ".join(f"#{r}" for r in worse["run"])))

figures = [plots.comparison_bars(frame, statistic=statistic,
                                 ceiling=(ceiling or {}).get(statistic)),
           plots.correlation_vs_cost(frame, statistic=statistic, cost="score calls")]
c1, c2 = st.columns(2)
c1.plotly_chart(figures[0], key="compare_bars")
c2.plotly_chart(figures[1], key="compare_cost")
index = dataset.by_id()
human = [index[i].human.get(aspect) for i in aligned.ids]
scores = {compare.short_run_label(r): aligned.scores[r.id].tolist() for r in chosen}
a = dataset.aspect(aspect)
figures += [plots.scatter_grid(human, scores, low=a.low, high=a.high), plots.score_histograms(human, scores)]
st.plotly_chart(figures[2], key="compare_grid")
st.plotly_chart(figures[3], key="compare_hist")

# --------------------------------------------------------------------------- triage
st.subheader("Where the judges fail")
triage = compare.disagreement_frame(dataset, aligned)
st.dataframe(triage.head(50), hide_index=True, key="compare_triage",
             column_config={c: st.column_config.NumberColumn(format="%.2f") for c in triage.columns
                            if c not in ("item", "group", "system")})
item = st.selectbox("Open an item (worst first)", triage["item"].tolist(), key="compare_item")


@st.cache_data(max_entries=32, show_spinner="Explaining the aggregator's score...")
def _explanation(db: str, run_id: int, run_version: int, item: str) -> compare.ItemExplanation | None:
    return compare.item_explanation(session.get_store(), run_id, item)


if item:
    sample = dataset.by_id()[item]
    with st.container(border=True):
        show_item_texts(dataset, sample)
        st.metric("Human score", f"{sample.human.get(aspect, float('nan')):.2f}", help=glossary.HELP["Human score"])
        for r in chosen:
            v = aligned.verdicts[r.id].get(item)
            if v is None:
                continue
            score = "missing (reply did not parse)" if v.missing else f"{v.score:.2f}"
            with st.expander(messages.escape_markdown(f"{compare.short_run_label(r)}: {score}")):
                if v.criteria:
                    st.dataframe([{"criterion": k, "score": x} for k, x in v.criteria.items()], hide_index=True)
                if v.explanation:
                    st.text(v.explanation)
                why = (_explanation(str(store.path), r.id, r.version, item)
                       if v.criteria and not v.missing else None)
                if why is not None:
                    st.plotly_chart(plots.shap_waterfall_figure(why.shap, item, labels=why.labels),
                                    key=f"compare_waterfall_{r.id}")
                    unscored = ", ".join(why.labels.get(f, f) for f in why.imputed)
                    st.caption(messages.escape_markdown(
                        f"SHAP values of the judge's aggregator: how far each criterion's score moved {why.target} "
                        "from the base value." + (f" Not scored, filled with the training mean: {unscored}."
                                                  if unscored else "")))
                st.caption("Raw reply")
                st.text(v.raw[:3000])
        st.caption("To fix what misled a judge, open its method page (rubrics, criteria trees and inferred "
                   "criteria are edited there) and rerun.")
        for method in sorted({r.method for r in chosen} & set(METHOD_PAGES)):
            st.page_link(METHOD_PAGES[method], label=f"Edit the {method} judge", icon=":material/edit:")

# --------------------------------------------------------------------------- label next
if len(chosen) >= 2:
    st.subheader("Label next")
    st.caption("Items where the judges disagree most with each other, spread over groups: a human score there "
               "tells you most about which judge to trust.")
    suggestions = compare.label_next(dataset, aligned, k=10)
    st.dataframe(suggestions, hide_index=True, key="compare_label_next",
                 column_config={"judge spread (0-1)": st.column_config.NumberColumn(format="%.3f")})
    with st.form("compare_label_form"):
        st.markdown("**Score an item yourself** (kept as your label, beside the imported score, which never "
                    "changes; the Annotate page has the whole queue and chooses which human score runs use)")
        to_label = st.selectbox("Item", suggestions["item"].tolist(), key="compare_label_item")
        if to_label:
            sample = dataset.by_id()[to_label]
            st.text(sample.output[:3000])
            current = sample.human.get(aspect)
            st.caption(f"Human score ({annotations.parse_aggregate(aggregate).kind}): {current:g}"
                       if current is not None and current == current else "No human score yet.")
        value = st.number_input(messages.escape_markdown(f"Your {aspect} score ({a.low:g}-{a.high:g})"), min_value=float(a.low),
                                max_value=float(a.high), value=None, step=1.0, key="compare_label_value",
                                help="Your own label, kept beside the others' under your name; it never replaces "
                                     "an imported score.")
        if st.form_submit_button("Save score"):
            if value is None or not to_label:
                st.error("Enter a score first.")
            else:
                try:
                    who = auth.actor()
                    once.submit(store, "compare_label_save", (ds_name, to_label, aspect, float(value)), "annotation",
                                lambda: store.add_annotation(ds_name, to_label, aspect, value, annotator=who).value)
                except (ValueError, NotFound) as exc:
                    st.error(messages.escape_markdown(str(exc)))
                else:
                    messages.flash("success", f"Saved your label {value:g} for {to_label}.")
                    st.rerun()

# --------------------------------------------------------------------------- export
def _report_bytes(title: str, tables: dict, figures: list, notes: list) -> bytes:
    return plots.report_html(title, tables, figures, notes=notes).encode("utf-8")


st.subheader("Export")
best_id = int(frame.loc[frame["best"], "run"].iloc[0]) if frame["best"].any() else chosen[0].id
export_id = st.selectbox("Judge to export", [r.id for r in chosen], index=[r.id for r in chosen].index(best_id),
                         format_func=lambda rid: labels.get(rid, str(rid)) + ("  (best)" if rid == best_id else ""),
                         key="compare_export")
c1, c2 = st.columns(2)
# made on click too: the card carries the trust report and the probes, which read the run's verdicts again
c1.download_button("Download judge (JSON model card)",
                   functools.partial(lambda rid: export.export_judge(store, rid).encode("utf-8"), export_id),
                   file_name=f"judge-run-{export_id}.json", mime="application/json", key="compare_dl_judge")
# made when the button is clicked (Streamlit calls it then), not on every rerun: the report embeds plotly.js
# (about 5 MB), which the browser fetched on every visit while the plots waited; the arguments are bound now
report = functools.partial(_report_bytes, f"Judge comparison: {ds_name} / {aspect}",
                           {"Runs": show, "Worst-judged items": triage.head(20)}, figures,
                           [f"{len(aligned.ids)} items, {level} level, {n_bootstrap} bootstrap resamples."])
c2.download_button("Download report (HTML)", report, file_name=f"comparison-{ds_name}-{aspect}.html",
                   mime="text/html", key="compare_dl_report")
# --------------------------------------------------------------------------- transfer
st.subheader("Transfer")
targets = compare.transfer_targets(store, ds_name)
if not targets:
    st.caption("Import another dataset (e.g. Newsroom for SummEval, WritingPrompt-A for HANNA) to test how a judge "
               "transfers.")
else:
    with st.form("compare_transfer"):
        c1, c2, c3 = st.columns(3)
        target_ds = c1.selectbox("Target dataset", list(targets), key="compare_transfer_ds")
        target_aspect = c2.selectbox("Target aspect (same quality, maybe another name)",
                                     sorted({x for v in targets.values() for x in v}), key="compare_transfer_aspect")
        n_items = c3.number_input("Items to score", min_value=2, value=40, step=10, key="compare_transfer_n",
                                  help="Items of the target dataset the judge scores (whole groups, so maybe a few "
                                       "more); its agreement with the target's humans is measured on them.")
        st.caption(messages.escape_markdown(f"Applies the judge chosen above (run #{export_id}) unchanged; no refitting. "
                                f"Backend: {session.llm_config().label}."))
        if st.form_submit_button("Score the target with this judge"):
            source = store.run(export_id)
            try:
                target = readers.load_dataset(store, target_ds).aspect(target_aspect)
                judge = compare.transfer_judge(Judge.from_dict(source.judge), target)
            except (KeyError, ValueError, NotFound) as exc:
                st.error(messages.escape_markdown(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)))
            else:
                run_id = start_form.start(RunSpec(method=source.method, dataset=target_ds, aspect=target.name,
                                                  train_size=0, test_size=int(n_items), llm=session.llm_config()),
                                          judge=judge, label=f" (transfer to {target_ds} / {target.name}; follow it "
                                                             "under Runs, then compare it here on that dataset)")
                if run_id is not None:
                    st.rerun()

st.caption("Score new data with an exported judge: `python -m judge_engine score judge.json new.jsonl --out "
           "scores.jsonl`.")


def _draw_probes() -> None:
    show_probes = st.toggle("Where each judge disagrees with the humans (probes)", key="compare_show_probes",
                            value=st.query_params.get("probes", "on") != "off")
    if not show_probes:
        return
    # every run's headline figures and warnings, and one run's probes in full: four runs' tables of slices and
    # items drawn at once made the probes a fifth of the page's time at 1,600 items
    reports = {r.id: rep for r in chosen if (rep := probes.run_probes(store, r)) is not None}
    if not reports:
        return
    # six short columns: the headline fits the page without scrolling sideways (issue 49)
    st.dataframe(probes.headline_frame(reports), hide_index=True, key="compare_probes_headline")
    for r in chosen:
        if r.id in reports:
            probes.probe_warnings(r, reports[r.id])
    by_id = {r.id: r for r in chosen}
    detail = st.selectbox("Probes in full of", list(reports), key="compare_probes_run",
                          format_func=lambda i: f"#{i} {by_id[i].method}")
    probes.probes_panel(store, by_id[detail], key=f"compare_probes_{detail}", report=reports[detail],
                        warnings=False)


with probes_slot:
    _draw_probes()

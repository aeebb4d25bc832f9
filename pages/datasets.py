"""Datasets: import a built-in benchmark or your own file, browse a stored dataset, edit aspects, make splits."""

# ruff: noqa: E402 - the page's heading is drawn before the engine's imports: a page's first visit in a server
# imports them (seconds on a loaded machine) and its heading waited for them (issue 67)
import streamlit as st

from pages.ui import app_frame

app_frame.require_frame()
st.title("Datasets")

import pandas as pd
from judge_engine import data, figures
from judge_engine.data import DataImportError, SplitError
from judge_engine.store import EditConflict
from pages.ui import (app_frame, auth, fetch_offer, messages, readers, session, table_import, tables,
                      tool_import, uploads, widgets)
from pages.ui import glossary


store = session.get_store()

messages.show_flash()

TABS = ["Built-in benchmarks", "Upload a file", "Stored datasets", "From another tool"]
if "datasets_goto_tab" in st.session_state:  # after an import, open the new dataset
    st.session_state["datasets_tab"] = st.session_state.pop("datasets_goto_tab")
tab_bench, tab_upload, tab_stored, tab_tools = st.tabs(TABS, key="datasets_tab", on_change="rerun")

# --------------------------------------------------------------------------- built-in benchmarks
with tab_bench:
    where, why = data.data_dir_origin()
    here = set(data.available_benchmarks())
    st.caption(messages.escape_markdown(f"Benchmark files are read from {where} ({why}); set {data.DATA_DIR_ENV} "
                                        "to read them from another folder."))
    name = st.selectbox("Benchmark", list(data.BENCHMARKS), key="datasets_bench",
                        format_func=lambda n: f"{n}: {data.BENCHMARKS[n].task}"
                                              + ("" if n in here else " (not downloaded)"))
    spec = data.BENCHMARKS[name]
    st.text(spec.description)
    st.dataframe(pd.DataFrame([{"aspect": a.name, "scale": f"{a.low:g}-{a.high:g}", "definition": a.definition}
                               for a in spec.aspects]), hide_index=True)
    st.caption(f"Natural meta-evaluation level: {spec.natural_level}.")
    stored = store.has_dataset(name)
    if stored:
        st.info(messages.escape_markdown(f"'{name}' is already in the database; open it under Stored datasets."))
    elif name not in here:
        fetch_offer.offer(name, key="datasets_fetch_bench")
    if name in here and st.button("Import benchmark", key="datasets_import_bench", type="primary", disabled=stored):
        try:
            with st.spinner(f"Reading {name}..."):
                dataset = data.load_benchmark(name)
                store.save_dataset(dataset)
        except (DataImportError, ValueError) as exc:
            st.error(messages.escape_markdown(str(exc)))
        else:
            messages.flash("success", f"Imported {name}: {len(dataset.samples)} samples, "
                                      f"aspects {', '.join(dataset.aspect_names)}.")
            widgets.set_value("datasets_pick", name)
            st.session_state["datasets_goto_tab"] = TABS[2]
            st.rerun()

# --------------------------------------------------------------------------- upload
with tab_upload:
    st.caption("A CSV/TSV, JSONL or JSON list with one scored output per row: the input it was generated from, "
               "the output, and one or more columns of human scores.")
    n_upload = st.session_state.setdefault("datasets_upload_n", 0)
    upload = st.file_uploader("Data file", type=["csv", "tsv", "jsonl", "ndjson", "json"],
                              key=f"datasets_upload_{n_upload}")
    if upload is not None:
        path = uploads.save_upload(store.path, upload.name, upload.getvalue())
        fkey = path.parent.name  # widgets reset when another file is uploaded
        columns, preview, dialect = [], [], None
        try:
            detected = data.detect_dialect(path)  # None for JSON / JSONL
        except DataImportError as exc:
            st.error(messages.escape_markdown(str(exc)))
            detected, readable = None, False
        else:
            readable = True
        if detected is not None:
            st.markdown("**File format**")
            st.caption(messages.escape_markdown(f"Detected {detected.describe()}. If the preview below looks wrong "
                                    "(everything in one column, scores not read as numbers), change it here."))
            f1, f2, f3 = st.columns(3)
            separator = f1.selectbox("Separator", list(data.SEPARATORS), format_func=data.SEPARATORS.get,
                                     index=list(data.SEPARATORS).index(detected.delimiter),
                                     key=f"datasets_sep_{fkey}")
            quote = f2.selectbox("Quote", list(data.QUOTES), format_func=data.QUOTES.get,
                                 index=list(data.QUOTES).index(detected.quotechar), key=f"datasets_quote_{fkey}")
            decimal = f3.selectbox("Decimal mark", list(data.DECIMAL_MARKS), format_func=data.DECIMAL_MARKS.get,
                                   index=list(data.DECIMAL_MARKS).index(detected.decimal),
                                   key=f"datasets_decimal_{fkey}",
                                   help="A decimal comma (3,5) is possible only when cells are not separated "
                                        "by commas.")
            try:
                dialect = data.CsvDialect(separator, quote, decimal)
            except ValueError as exc:
                st.error(messages.escape_markdown(f"{exc}: choose another separator or the dot as decimal mark."))
                readable = False
        if readable:
            try:
                table = data.preview_table(path, dialect=dialect)
            except DataImportError as exc:
                st.error(messages.escape_markdown(str(exc)))
            else:
                columns, preview = table.columns, table.rows
                for warning in table.warnings:
                    st.warning(messages.escape_markdown(warning))
        if columns:
            st.caption(messages.escape_markdown(f"First rows of {upload.name}:"))
            st.dataframe(table_import.preview_frame(preview, columns), hide_index=True)
            none = "(none)"
            optional = [none, *columns]

            taken: list[str] = []  # a column guessed for one role is not guessed again for another

            def pick(label, role, guess, *, required=False, help=None):
                opts = columns if required else optional
                free = [c for c in columns if c not in taken]
                default = guess if guess in opts else ((free or opts)[0] if required else none)
                value = st.selectbox(label, opts, index=opts.index(default), key=f"datasets_map_{role}_{fkey}",
                                     help=help)
                taken.append(value)
                return None if value == none else value

            st.markdown("**Column mapping**")
            c1, c2 = st.columns(2)
            with c1:
                input_col = pick("Input (what the output was generated from)", "input", table_import.guess_column(
                    columns, [r"input", r"source", r"src", r"article", r"document", r"prompt", r"dialogue.*",
                              r"context", r"question", r"data"]), required=True)
                output_col = pick("Output (the text humans scored)", "output", table_import.guess_column(
                    [c for c in columns if c != input_col],
                    [r"output", r"out", r"summary", r"response", r"reply", r"story", r"answer", r"generation",
                     r"hypothesis", r"candidate", r"tgt", r"target", r"text"]), required=True)
                group_col = pick("Group (optional)", "group", table_import.guess_column(
                    columns, [r"group.*", r"doc_?id", r"source_?id", r"prompt_?id", r"context_?id"]),
                    help="Outputs for the same input share a group; splits never cut a group. "
                         "Without it every row is its own group.")
                system_col = pick("System (optional)", "system", table_import.guess_column(
                    columns, [r"system.*", r"model.*", r"sys_?id"]))
            with c2:
                id_col = pick("Id (optional)", "id", table_import.guess_column(columns, [r"id", r"sample_?id", r"item_?id"]),
                              help="Without it the row number is the id.")
                context_col = pick("Context (optional)", "context", None)
                reference_col = pick("Reference output (optional)", "reference", table_import.guess_column(
                    columns, [r"reference", r"ref", r"gold"]))
            mapped = {input_col, output_col, group_col, system_col, id_col, context_col, reference_col}
            guesses = [c for c in table_import.numeric_columns(columns, preview, dialect.decimal if dialect else ".")
                       if c not in mapped]
            score_cols = st.multiselect("Human score columns (one aspect each)", columns, default=guesses,
                                        key=f"datasets_map_scores_{fkey}")
            ranges = {}
            if score_cols:
                with st.expander("Score scales (optional; default: the lowest and highest score in the file)"):
                    for col in score_cols:
                        r1, r2 = st.columns(2)
                        low = r1.number_input(messages.escape_markdown(f"{col}: lowest possible"), value=None, key=f"datasets_low_{fkey}_{col}")
                        high = r2.number_input(messages.escape_markdown(f"{col}: highest possible"), value=None,
                                               key=f"datasets_high_{fkey}_{col}")
                        if low is not None and high is not None:
                            ranges[col] = (low, high)
            duplicates = "keep"
            try:
                repeated = table_import.duplicate_rows(path, input_col, output_col, dialect)
            except DataImportError:
                repeated = []  # the import below names the problem
            if repeated:
                st.warning(messages.escape_markdown(data.duplicates_warning(path, repeated, merged=None)))
                duplicates = st.radio(
                    "Duplicate items", list(data.DUPLICATE_CHOICES), horizontal=True, key=f"datasets_dups_{fkey}",
                    format_func={"keep": "Keep them as separate samples",
                                 "merge": "Merge each into one sample (scores averaged, each row's score kept "
                                          "as an annotator's)"}.get)
            ds_name = st.text_input("Dataset name", value=uploads.dataset_name_from(upload.name),
                                    key=f"datasets_name_{fkey}")
            task = st.text_input("Task (optional, used in prompts)", key=f"datasets_task_{fkey}",
                                 placeholder="e.g. summarization of product reviews")
            if ds_name.strip() and store.has_dataset(ds_name.strip()):
                st.warning(messages.escape_markdown(f"A dataset named '{ds_name.strip()}' is already stored. "
                                        "Choose another name to import this file."))
            if st.button("Import file", key="datasets_import_file", type="primary"):
                bar = st.progress(0.0, text="Reading rows...")
                try:
                    roles = table_import.ImportColumns(
                        input=input_col, output=output_col, scores=tuple(score_cols), group=group_col,
                        system=system_col, id=id_col, context=context_col, reference=reference_col)
                    dataset, warnings = table_import.import_table(
                        store, path, name=ds_name, columns=roles, aspect_ranges=ranges,
                        task=task.strip(), dialect=dialect, duplicates=duplicates,
                        progress=lambda done, total: bar.progress(done / max(total, 1), text=f"{done}/{total} rows"))
                except (DataImportError, ValueError) as exc:
                    bar.empty()
                    st.error(messages.escape_markdown(str(exc)))
                else:
                    messages.flash("success", f"Imported '{dataset.name}': {len(dataset.samples)} samples, "
                                              f"aspects {', '.join(dataset.aspect_names)}.")
                    for w in warnings:
                        messages.flash("warning", w)
                    st.session_state["datasets_upload_n"] = n_upload + 1  # clears the uploader
                    widgets.set_value("datasets_pick", dataset.name)
                    st.session_state["datasets_goto_tab"] = TABS[2]
                    st.rerun()

# --------------------------------------------------------------------------- labels from another tool
with tab_tools:
    def _open_imported() -> None:
        st.session_state["datasets_goto_tab"] = TABS[2]
        st.rerun()

    tool_import.render(store, on_imported=_open_imported)

# --------------------------------------------------------------------------- stored datasets
with tab_stored:
    rows = store.list_datasets()
    if not rows:
        st.info("No dataset stored yet: import a benchmark or upload a file.")
    else:
        st.dataframe(tables.datasets_frame(rows), hide_index=True)
        names = [r["name"] for r in rows]
        if st.session_state.get("datasets_pick") not in names:
            widgets.set_value("datasets_pick", names[-1])
        name = widgets.bound(st.selectbox, "Dataset", "datasets_pick", options=names)
        dataset = readers.load_dataset(store, name)
        n_groups = len({s.group_id for s in dataset.samples})
        n_systems = len({s.system_id for s in dataset.samples if s.system_id})
        m = st.columns(4)
        m[0].metric("Samples", len(dataset.samples), help=glossary.HELP["Samples"])
        m[1].metric("Groups", n_groups, help=glossary.HELP["Groups"])
        m[2].metric("Systems", n_systems, help=glossary.HELP["Systems"])
        m[3].metric("Natural level", dataset.natural_level, help=glossary.HELP["Natural level"])
        if dataset.task:
            st.text(f"Task: {dataset.task}")
        st.caption(messages.escape_markdown(f"Source: {dataset.source}"))

        st.markdown("**First samples**")
        st.dataframe(tables.samples_frame(dataset, limit=50), hide_index=True)

        st.markdown("**Human scores**")
        st.plotly_chart(figures.human_histograms(dataset), key=f"datasets_hist_{name}")

        st.markdown("**Aspect definitions**")
        st.caption("Prompts describe each aspect with this text. Edits are saved to the database (and logged). "
                   "A save made from a text someone else has changed since is refused, never overwrites theirs.")
        # the text each editor started from: the store refuses a save against it once someone saved in between
        seen = st.session_state.setdefault("datasets_seen_defs", {})
        for a in dataset.aspects:
            seen_key, widget = f"{name}/{a.name}", f"datasets_def_{name}_{a.name}"
            if seen.get(seen_key) != a.definition and st.session_state.get(widget, seen.get(seen_key)) == seen.get(
                    seen_key):  # changed elsewhere and nothing typed here (yet): show the stored text
                seen[seen_key] = a.definition
                st.session_state.pop(widget, None)
        with st.form(f"datasets_aspects_{name}"):
            edited = {}
            for a in dataset.aspects:
                edited[a.name] = st.text_area(messages.escape_markdown(f"{a.name} (scale {a.low:g}-{a.high:g})"),
                                              value=seen[f"{name}/{a.name}"], key=f"datasets_def_{name}_{a.name}",
                                              height=80)
            if st.form_submit_button("Save definitions"):
                saved, refused = [], []
                for a in dataset.aspects:
                    seen_key, text = f"{name}/{a.name}", edited[a.name].strip()
                    if text == seen[seen_key].strip():
                        continue  # not edited in this session
                    try:
                        store.update_aspect_definition(name, a.name, text, actor=auth.actor(), expected_definition=seen[seen_key])
                    except EditConflict as exc:
                        refused.append(str(exc))
                        # shown their text now: saving again replaces it knowingly
                        seen[seen_key] = store.load_dataset(name).aspect(a.name).definition
                    else:
                        saved.append(a.name)
                        seen[seen_key] = text
                        st.session_state.pop(f"datasets_def_{name}_{a.name}", None)
                if refused:
                    for message in refused:
                        st.error(messages.escape_markdown(f"Not saved: {message}. Your text is still in the box: copy what "
                                              "you need from theirs, then save again to replace it."))
                    if saved:
                        st.success(messages.escape_markdown(f"Saved {len(saved)} definition(s): {', '.join(saved)}."))
                else:
                    messages.flash("success" if saved else "info",
                                   f"Saved {len(saved)} definition(s): {', '.join(saved)}." if saved
                                   else "No definition changed.")
                    st.rerun()

        st.markdown("**Train/test split**")
        st.caption("Test takes whole groups (never cut, so it may hold a few more items than asked); train is drawn "
                   "at random from the other groups, one item per group as far as they go. No group is in both. "
                   "Runs build the same split from the same sizes and seed.")
        with st.form(f"datasets_split_{name}"):
            c = st.columns(3)
            train_size = c[0].number_input("Training items", min_value=0, value=30, step=1,
                                           key=f"datasets_train_{name}",
                                           help="Human-scored items a method learns from.")
            test_size = c[1].number_input("Test items (empty = all the rest)", min_value=1, value=None, step=1,
                                          key=f"datasets_test_{name}",
                                          help="Items a judge is measured on; whole groups, so maybe a few more.")
            seed = c[2].number_input("Split seed", min_value=0, value=0, step=1, key=f"datasets_seed_{name}",
                                     help="The same seed and sizes give the same split on every page and run.")
            if st.form_submit_button("Make split"):
                try:
                    split = data.make_split(dataset, train_size=int(train_size),
                                            test_size=None if test_size is None else int(test_size), seed=int(seed))
                except SplitError as exc:
                    st.error(messages.escape_markdown(str(exc)))
                else:
                    split_id = store.save_split(split)
                    st.success(messages.escape_markdown(f"Saved split {split_id}: {len(split.train_ids)} train, "
                                            f"{len(split.test_ids)} test items."))
        splits = store.list_splits(name)
        if splits:
            st.dataframe(pd.DataFrame([{"split": s["id"], "seed": s["seed"], "train": s["n_train"],
                                        "test": s["n_test"], "created": tables.fmt_time(s["created"])}
                                       for s in splits]), hide_index=True)
        else:
            st.caption("No split saved yet.")

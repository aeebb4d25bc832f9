"""The Datasets page's "From another tool" tab: MLflow traces, Label Studio, Argilla and Langfuse exports.

The page reads the labels first and shows what it found (items, annotators, what is left out) and the scale the
values map to, editable; the import then saves exactly that (judge_engine.integrations, docs/integrations.md).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from judge_engine.integrations.labels import LabelImportError, value_scale
from pages.ui import messages, uploads, widgets

TOOLS = {"mlflow": "MLflow traces", "label-studio": "Label Studio export", "argilla": "Argilla export",
         "langfuse": "Langfuse scores"}


def _read(tool: str, form: dict[str, Any]) -> Any:
    if tool == "mlflow":
        from judge_engine.integrations.mlflow_traces import read_traces

        return read_traces(form["uri"], form["experiment"], form["question"])
    from judge_engine.integrations.annotation_exports import read_tool

    return read_tool(tool, form["path"], question=form["question"] or None, input_key=form["input_key"],
                     output_key=form["output_key"], traces=form.get("traces"))


def _left_out(read: Any) -> list[str]:
    if hasattr(read, "left_out"):
        return list(read.left_out)
    out = []
    if read.without:
        out.append(f"{len(read.without)} trace(s) without a human assessment, left out: "
                   f"{', '.join(read.without[:10])}{' ...' if len(read.without) > 10 else ''}")
    if read.not_human:
        out.append(f"{read.not_human} assessment(s) by an LLM judge or code (not labels)")
    return out


def render(store: Any, *, on_imported: Any) -> None:
    st.caption("Labels your team keeps elsewhere: each annotator's label is kept under their own name, the item's "
               "score is their mean. Read them first, check the scale, then import.")
    tool = st.radio("From", list(TOOLS), format_func=TOOLS.get, horizontal=True, key="datasets_tool")
    form: dict[str, Any] = {}
    if tool == "mlflow":
        form["uri"] = st.text_input("Tracking URI", placeholder="sqlite:///mlruns.db or http://localhost:5000",
                                    key="datasets_tool_uri")
        form["experiment"] = st.text_input("Experiment", key="datasets_tool_experiment")
        form["question"] = st.text_input("Assessment name", placeholder="e.g. helpfulness",
                                         key="datasets_tool_question")
    else:
        upload = st.file_uploader("Export file", type=["json", "jsonl", "csv"], key=f"datasets_tool_file_{tool}")
        if upload is not None:
            form["path"] = str(uploads.save_upload(store.path, upload.name, upload.getvalue()))
        if tool == "langfuse":
            traces = st.file_uploader("Trace export (id, input, output)", type=["json", "jsonl", "csv"],
                                      key="datasets_tool_traces")
            if traces is not None:
                form["traces"] = str(uploads.save_upload(store.path, traces.name, traces.getvalue()))
        label = {"label-studio": "Control (rating, number or choices; empty: the only one)",
                 "argilla": "Question", "langfuse": "Score name"}[tool]
        form["question"] = st.text_input(label, key=f"datasets_tool_question_{tool}")
        k1, k2 = st.columns(2)
        form["input_key"] = k1.text_input("Input field", value="input", key=f"datasets_tool_in_{tool}")
        form["output_key"] = k2.text_input("Output field", value="output", key=f"datasets_tool_out_{tool}")
    ready = all(form.get(k) for k in (("uri", "experiment", "question") if tool == "mlflow" else ("path",)))
    if st.button("Read labels", key="datasets_tool_read", disabled=not ready):
        try:
            read = _read(tool, form)
            scale = value_scale([lb.value for lb in read.labels], what=form.get("question") or "the labels")
        except (LabelImportError, ValueError, ImportError) as exc:
            st.session_state.pop("datasets_tool_read_result", None)
            st.error(messages.escape_markdown(str(exc)))
        else:
            st.session_state["datasets_tool_read_result"] = (tool, dict(form), read, scale)
    found = st.session_state.get("datasets_tool_read_result")
    if not found or found[0] != tool or found[1] != form:
        return
    _, _, read, scale = found
    annotators = sorted({lb.annotator for lb in read.labels})
    st.success(messages.escape_markdown(f"{len({lb.item for lb in read.labels})} items labelled by "
                                        f"{len(annotators)} annotator(s): {', '.join(annotators)}."))
    for line in _left_out(read):
        st.info(messages.escape_markdown(line))
    mapping, value_range = None, None
    if scale.kind == "numeric":
        s1, s2 = st.columns(2)
        low = s1.number_input("Scale: lowest possible", value=scale.low, key="datasets_tool_low")
        high = s2.number_input("Scale: highest possible", value=scale.high, key="datasets_tool_high")
        value_range = (low, high)
    else:
        st.markdown(f"**Scale** ({scale.kind}): the number each value stands for")
        edited = st.data_editor(pd.DataFrame({"value": list(scale.mapping), "number": list(scale.mapping.values())}),
                                disabled=["value"], hide_index=True, key="datasets_tool_mapping")
        mapping = dict(zip(edited["value"], edited["number"]))
    name = st.text_input("Dataset name", value=form.get("experiment") or uploads.dataset_name_from(
        form.get("path", "labels").rsplit("/", 1)[-1]), key="datasets_tool_name")
    if st.button("Import labels", key="datasets_tool_import", type="primary"):
        try:
            if tool == "mlflow":
                from judge_engine.integrations.mlflow_traces import import_mlflow

                done = import_mlflow(store, form["uri"], form["experiment"], form["question"], name=name,
                                     mapping=mapping, value_range=value_range)
            else:
                from judge_engine.integrations.annotation_exports import import_labels

                done = import_labels(store, tool, form["path"], name=name, question=form["question"] or None,
                                     input_key=form["input_key"], output_key=form["output_key"],
                                     traces=form.get("traces"), mapping=mapping, value_range=value_range)
        except (LabelImportError, ValueError, ImportError) as exc:
            st.error(messages.escape_markdown(str(exc)))
        else:
            st.session_state.pop("datasets_tool_read_result", None)
            messages.flash("success", f"Imported '{done.dataset.name}': {done.summary()}")
            widgets.set_value("datasets_pick", done.dataset.name)
            on_imported()

"""Home: what the workbench is for, the active backend, stored datasets and recent runs."""

from pages.ui import app_frame

app_frame.require_frame()  # before the imports below: a direct link on a fresh server runs this file alone

import streamlit as st

from pages.ui import app_frame, messages, session, tables

store = session.get_store()

st.title("Judge Workbench")
st.markdown(
    "Build and compare **LLM-as-a-judge** evaluators against human scores. Import a dataset of "
    "human-scored outputs, run a judging method on a held-out test split, and see how well the "
    "judge's scores correlate with the humans' (Pearson, Spearman and Kendall, with bootstrap "
    "confidence intervals), what it cost and where its replies failed to parse."
)

st.subheader("Backend")
config = session.llm_config()
st.text(config.label)
st.caption("Change it under Settings. The backend is only contacted when you ask for it.")
session.check_backend_button("Check backend", key="home_check")

st.subheader("Datasets")
datasets = store.list_datasets()
if datasets:
    st.dataframe(tables.datasets_frame(datasets), hide_index=True)
else:
    st.info("No dataset yet: import a built-in benchmark or upload your own file.")
st.page_link("pages/datasets.py", label="Go to Datasets", icon=":material/table_chart:")

st.subheader("Recent runs")
runs = store.runs(limit=10)
if runs:
    st.dataframe(tables.runs_frame(runs), hide_index=True,
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("pearson", "spearman", "kendall")})
else:
    st.info("No run yet: start a baseline run to meta-evaluate a judge.")
st.page_link("pages/runs.py", label="Go to Runs", icon=":material/play_circle:")
st.caption(messages.escape_markdown(f"Database: {store.path}"))

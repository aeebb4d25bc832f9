"""An item's texts as the pages show them: input, context when there is one, output, each under the dataset's own
label (markdown-escaped: labels and texts come from imported files) and cut to a length a page can hold."""

from __future__ import annotations

import streamlit as st

from judge_engine.records import Dataset, Sample
from pages.ui import messages


def show_item_texts(dataset: Dataset, sample: Sample) -> None:
    """The item's input, context and output, labelled; the caller frames them (a bordered container)."""
    st.markdown(f"**{messages.escape_markdown(dataset.input_label)}**")
    st.text(sample.input[:4000])
    if sample.context:
        st.markdown(f"**{messages.escape_markdown(dataset.context_label)}**")
        st.text(sample.context[:2000])
    st.markdown(f"**{messages.escape_markdown(dataset.output_label)}**")
    st.text(sample.output[:4000])

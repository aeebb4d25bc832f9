"""An item's texts as the pages show them: input, context when there is one, output, each under the dataset's own
label (markdown-escaped: labels and texts come from imported files) and cut to a length a page can hold."""

from __future__ import annotations

import streamlit as st

from judge_engine.records import Dataset, Sample
from pages.ui import messages


def show_item_texts(dataset: Dataset, sample: Sample) -> None:
    """The item's input, context and output, labelled; the caller frames them (a bordered container). A text cut
    to fit says so, so nobody labels an item believing they saw all of it."""
    _labelled(dataset.input_label, sample.input, 4000)
    if sample.context:
        _labelled(dataset.context_label, sample.context, 2000)
    _labelled(dataset.output_label, sample.output, 4000)


def _labelled(label: str, text: str, limit: int) -> None:
    cut = f" (the first {limit:,} of {len(text):,} characters)" if len(text) > limit else ""
    st.markdown(f"**{messages.escape_markdown(label)}**{cut}")
    st.text(text[:limit])

"""The offer to download a built-in benchmark that is not here: its source and license named, a button, progress.

Shared by the Datasets page and the start form, so a benchmark that is simply not downloaded reads the same
everywhere ("not downloaded", with the offer) instead of an error.
"""

from __future__ import annotations

import streamlit as st

from judge_engine import data
from judge_engine.data import fetch
from pages.ui import messages


def size_label(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def is_here(name: str) -> bool:
    """Whether built-in benchmark ``name`` has its files in the data folder."""
    return data.benchmark_path(name).is_file()


def offer(name: str, *, key: str) -> None:
    """Says that built-in benchmark ``name`` is not downloaded and where it comes from; a button downloads it
    into the data folder with a progress bar, then reruns the page (which then finds it here)."""
    spec = data.BENCHMARKS[name]
    source = spec.source
    where, why = data.data_dir_origin()
    mirror = fetch.mirror_url()
    st.info(messages.escape_markdown(
        f"{name} is not downloaded (looked in {where}, {why}). It is published in {source.repository} "
        f"({source.origin}; license: {source.license}; {size_label(source.size)})"
        + (f"; it will be fetched from the mirror {mirror}." if mirror else ".")))
    if st.button(f"Download {name} ({size_label(source.size)})", key=key, type="primary"):
        bar = st.progress(0.0, text=f"Downloading {name}...")

        def progress(done: int, total: int) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=f"{name}: {done:,} of {total:,} bytes")

        try:
            fetch.fetch_benchmark(name, where, progress=progress)
        except ValueError as exc:  # FetchError: one sentence naming the URL or folder; nothing stored changed
            bar.empty()
            st.error(messages.escape_markdown(str(exc)))
            return
        messages.flash("success", f"Downloaded {name} into {where}.")
        st.rerun()

"""Text the pages show: Markdown escaping and the messages that survive a rerun.

:func:`escape_markdown` makes ``st.error``/``st.success`` show any text (a file
name, a generated hypothesis, an exception) literally; :func:`flash` queues a
message for the next run of the page and :func:`show_flash` draws it, at the
top or beside the Save that caused it.
"""

from __future__ import annotations

import re

import streamlit as st


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~$:])")
_MD_LINE_START = re.compile(r"^(\s*)(\d*)([-+=>.)])", re.MULTILINE)


def escape_markdown(text: str) -> str:
    """Escape Markdown so that ``st.error``/``st.success`` show ``text`` literally.

    Escapes emphasis, code, links, HTML-looking tags, headings, tables,
    strikethrough, LaTeX (``$``), Streamlit's ``:color[...]``/``:icon:``
    directives and list markers at the start of a line.
    """
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    return _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2) + "\\" + m.group(3), escaped)


def flash(kind: str, text: str, *, at: str | None = None) -> None:
    """Queue a message for the next run of the page (survives ``st.rerun()``).

    With ``at``, the message is shown where the page calls ``show_flash(at)``
    (beside the Save that caused it) instead of at the top: a person curating
    far down a page sees the outcome where they are, and nothing is inserted
    above them that would push the list they are reading down.
    """
    if at is None:
        st.session_state.setdefault("_flash", []).append((kind, text))
    else:
        st.session_state.setdefault("_flash_at", {})[at] = (kind, text)


def show_flash(at: str | None = None) -> None:
    """Show and clear the queued messages: the page-top ones, or with ``at`` the ones queued for that place.

    Called without ``at`` at the top of every page run, it also hands the
    placed messages to this run; a placed message whose place was not drawn
    in that run (the item is gone) is shown at the top of the next one, so
    no message is lost.
    """
    if at is not None:
        # always one placeholder, message or not: the elements after it keep their places between runs, so the
        # browser does not hand one item's open/closed state to its neighbour
        box = st.empty()
        kind, text = st.session_state.get("_flash_now", {}).pop(at, (None, None))
        if kind:
            getattr(box, kind)(escape_markdown(text))
        return
    for kind, text in list(st.session_state.pop("_flash", [])) + list(
            st.session_state.pop("_flash_now", {}).values()):
        getattr(st, kind)(escape_markdown(text))
    st.session_state["_flash_now"] = st.session_state.pop("_flash_at", {})

"""Widgets bound to session values, so a setting or a chosen tab survives a visit to another page."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from pages.ui.session import init_state, remember_setting


def widget_key(key: str) -> str:
    """Key of the widget that edits the session value ``key``.

    Streamlit drops a widget's state when the widget is not drawn (e.g. on
    another page), so each setting lives under its own key and its widget
    under ``_w_<key>``, initialised from it; :func:`keep` copies edits back.
    """
    init_state()
    wkey = f"_w_{key}"
    if wkey not in st.session_state:
        st.session_state[wkey] = st.session_state[key]
    return wkey


def keep(key: str) -> None:
    """``on_change`` callback: store the widget's new value under ``key`` (and keep a Settings value for the next
    visit, :func:`pages.ui.session.remember_setting`).

    The widget's value may be gone: a double click's first script run set the value from code
    (:func:`set_value` drops the widget's copy) and the second run's callbacks come before the widget is drawn
    again. The value set from code then stands.
    """
    wkey = f"_w_{key}"
    if wkey not in st.session_state:
        return
    st.session_state[key] = st.session_state[wkey]
    remember_setting(key)


def bound(widget: Callable[..., Any], label: str, key: str, **kwargs: Any) -> Any:
    """Draw ``widget(label, ...)`` bound to the session value ``key`` (see :func:`widget_key`)."""
    return widget(label, key=widget_key(key), on_change=keep, args=(key,), **kwargs)


def set_value(key: str, value: Any) -> None:
    """Set a bound session value from code (before its widget is drawn in this run)."""
    st.session_state[key] = value
    st.session_state.pop(f"_w_{key}", None)


# --------------------------------------------------------------------------- keeping a curator's place


def remembered_tabs(labels: list[str], key: str) -> Any:
    """``st.tabs(labels)`` that stay on the tab the person chose whenever the page reruns.

    Plain tabs are chosen in the browser only: the rerun after a Save, which
    shows a message above them, brings back the first tab, and the person
    loses the list they were curating. These tabs report the choice to the
    server (``on_change``), which keeps it in the session value ``key`` (see
    :func:`bound`) and draws that tab open on every run, also after a visit
    to another page.
    """
    st.session_state.setdefault(key, labels[0])
    if st.session_state[key] not in labels:
        set_value(key, labels[0])
    return st.tabs(labels, key=widget_key(key), on_change=keep, args=(key,))

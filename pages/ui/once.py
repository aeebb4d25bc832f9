"""A button's submission token: the same click sent twice is one submission (see :mod:`judge_engine.submissions`).

Streamlit runs a double click as two script runs, one after the other, both seeing the button pressed: the
second one starts before the page the first one drew reaches the browser. Each button that starts, stops,
saves or re-scores hands :func:`token` what it would submit; the token stays the same while that content
stays the same, so the second run of a double click (0.1 s or 1 s later) sends the token the first one
used, and the store does the action once. A new token is issued when the content changes (another
setting, another label, the run's next version), so a person who changes something and clicks again gets
a new action; a reload (a new session) issues new tokens too.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any, Callable

import streamlit as st

from judge_engine import submissions
from judge_engine.store import Store
from pages.ui import auth

_TOKENS = "_submission_tokens"
"""Session key: button key -> (fingerprint of the content, token)."""


def fingerprint(content: Any) -> str:
    """A stable digest of ``content`` (records, dicts, numbers and texts; their ``repr`` is deterministic)."""
    return hashlib.sha256(repr(content).encode("utf-8", "surrogatepass")).hexdigest()


def token(key: str, content: Any) -> str:
    """The submission token of the button ``key`` for ``content``: the same while ``content`` is the same."""
    tokens: dict[str, tuple[str, str]] = st.session_state.setdefault(_TOKENS, {})
    digest = fingerprint(content)
    held = tokens.get(key)
    if held is None or held[0] != digest:
        held = tokens[key] = (digest, uuid.uuid4().hex)
    return held[1]


def submit(store: Store, key: str, content: Any, kind: str, action: Callable[[], Any]) -> tuple[Any, bool]:
    """Do ``action`` (a save) once for the button ``key`` submitting ``content``: ``(what it returned, True)``,
    or, for the second click of a double click, ``(what the first returned, False)`` without doing it again.

    ``action``'s return value must be JSON-native (it is kept with the token); it runs inside the store's
    write transaction with the token's row (:func:`judge_engine.submissions.once`), so it must write through
    ``store`` (another connection would wait for that transaction's lock).
    """
    result, first = submissions.once(store, token(key, content), kind, lambda: {"value": action()},
                                     actor=auth.identity())
    return result["value"], first

"""The session's settings: their defaults, the database file and store, the LLM backend.

Session keys start with ``settings_``. The backend settings (:data:`KEPT`) are kept in the database
(:mod:`judge_engine.saved_settings`): for everyone who opens it, or for the signed-in person in a team
deployment, so a reload, a new tab or a restart finds them again. A first visit starts on a backend that
works here (:func:`judge_engine.llm.availability.first_choice`). The API key typed on the Settings page
lives in ``st.session_state`` only. It is handed to
:func:`judge_engine.runs.start_run` and :func:`judge_engine.llm.check_connection`
and never written anywhere else.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import streamlit as st

from judge_engine.llm import (BACKEND_NAMES, STRUCTURED_MODES, LLMConfig, LLMError, check_connection,
                              default_concurrency)
from judge_engine import saved_settings
from judge_engine.llm.availability import first_choice
from judge_engine.store import ReadOnly, Store, default_db_path
from pages.ui.auth import can_edit, identity, team_mode
from pages.ui.messages import escape_markdown


_CONFIG_DEFAULTS = LLMConfig()

SETTINGS_DEFAULTS: dict[str, Any] = {
    "settings_backend": _CONFIG_DEFAULTS.backend,
    "settings_model_llamacpp": "",
    "settings_model_openai": "gpt-4o-mini",
    "settings_model_vllm": "",
    "settings_base_url": "",
    "settings_api_key_env": _CONFIG_DEFAULTS.api_key_env,
    "settings_api_key": "",
    # one in-flight count per backend, each starting at the engine's default for it (32 on a server, 4 on the
    # embedded model), so choosing a server does not leave it at the embedded model's pace
    **{f"settings_concurrency_{b}": default_concurrency(b) for b in BACKEND_NAMES},
    "settings_timeout": float(_CONFIG_DEFAULTS.timeout),
    "settings_max_retries": _CONFIG_DEFAULTS.max_retries,
    "settings_n_ctx": _CONFIG_DEFAULTS.n_ctx,
    "settings_structured": _CONFIG_DEFAULTS.structured,
    "settings_price_prompt": float(_CONFIG_DEFAULTS.price_prompt_per_1k),
    "settings_price_completion": float(_CONFIG_DEFAULTS.price_completion_per_1k),
}
"""Session settings and their defaults (the database path is added at run time)."""

BACKEND_HELP = {
    "llamacpp": "Embedded llama.cpp model on this machine (default: SmolLM2-135M-Instruct, no server needed).",
    "openai": "Any OpenAI-compatible server: api.openai.com, a vLLM or llama.cpp server, LM Studio, ...",
    "vllm": "vLLM's offline engine inside the worker process (needs a CUDA GPU).",
}


KEPT = tuple(k for k in SETTINGS_DEFAULTS if not saved_settings.is_secret(k))
"""The settings kept in the database for the next visit (all but the API key)."""
_LOADED = "_settings_loaded_for"
"""Session key: the (database, scope) whose kept settings this session holds."""


def _scope() -> str:
    """Where this session's settings are kept: the signed-in person's own in a team deployment, else the database's."""
    name = identity() if team_mode() else ""
    return saved_settings.user_scope(name) if name else saved_settings.DATABASE


def _load_kept(path: str, scope: str) -> None:
    """This session's settings from the database ``path`` (``scope``'s over the database's), else the first
    visit's: a backend that works here. A database that cannot be opened leaves the defaults (the page that
    opens it says why)."""
    s = st.session_state
    s[_LOADED] = (path, scope)
    first = first_choice()
    values = {**SETTINGS_DEFAULTS, "settings_backend": first["backend"], "settings_base_url": first["base_url"]}
    try:
        store = Store(Path(path).expanduser() if path.strip() else default_db_path())
        values.update({k: v for k, v in saved_settings.load(store, saved_settings.DATABASE, scope).items()
                       if k in KEPT})
    except (OSError, sqlite3.Error):
        pass
    for key in KEPT:
        s[key] = values[key]
        s.pop(f"_w_{key}", None)  # its widget is drawn again from the kept value


def init_state() -> None:
    """Give every setting its value for this session (called by ``app.py`` on each run): the kept one, else the
    first visit's default; again when the database or the signed-in person changes."""
    s = st.session_state
    s.setdefault("settings_db_path", str(default_db_path()))
    if s.get(_LOADED) != (str(s["settings_db_path"]), _scope()):
        _load_kept(str(s["settings_db_path"]), _scope())
    for key, value in SETTINGS_DEFAULTS.items():
        s.setdefault(key, value)


def remember_setting(key: str) -> None:
    """Keep the session's value of ``key`` in the database for the next visit, when it is one of :data:`KEPT`.

    A viewer's or an unwritable database's change lasts for this session only, and says so."""
    if key not in KEPT:
        return
    try:
        saved_settings.save(Store(db_path(), read_only=None if can_edit() else identity()), _scope(), key,
                            st.session_state[key], actor=identity())
    except (ReadOnly, OSError, sqlite3.Error) as exc:
        st.session_state["settings_not_kept"] = str(exc)


def db_path() -> Path:
    """The database file of this session (sidebar setting; default ``default_db_path()``)."""
    init_state()
    text = str(st.session_state["settings_db_path"]).strip()
    return Path(text).expanduser() if text else default_db_path()


def get_store() -> Store:
    """Open the session's database; shows an error and stops the page if it cannot be opened.

    A team deployment's viewer gets a read-only store: whatever page or
    engine function tries to save through it is refused (see
    :class:`judge_engine.store.ReadOnly`).
    """
    path = db_path()
    try:
        return Store(path, read_only=None if can_edit() else identity())
    except (OSError, sqlite3.Error) as exc:
        st.error(escape_markdown(f"Cannot open the database {path}: {exc}. Change the path in the sidebar."))
        st.stop()
        raise  # unreachable: st.stop() raises


def llm_config() -> LLMConfig:
    """The :class:`LLMConfig` built from the Settings page (no secret in it)."""
    init_state()
    s = st.session_state
    backend = s["settings_backend"] if s["settings_backend"] in BACKEND_NAMES else _CONFIG_DEFAULTS.backend
    return LLMConfig(
        backend=backend,
        model=str(s.get(f"settings_model_{backend}", "")).strip(),
        base_url=str(s["settings_base_url"]).strip() if backend == "openai" else "",
        api_key_env=str(s["settings_api_key_env"]).strip() or _CONFIG_DEFAULTS.api_key_env,
        concurrency=int(s[f"settings_concurrency_{backend}"]),
        timeout=float(s["settings_timeout"]),
        max_retries=int(s["settings_max_retries"]),
        n_ctx=int(s["settings_n_ctx"]),
        structured=s["settings_structured"] if s["settings_structured"] in STRUCTURED_MODES
        else _CONFIG_DEFAULTS.structured,
        price_prompt_per_1k=float(s["settings_price_prompt"]),
        price_completion_per_1k=float(s["settings_price_completion"]),
    )


def api_key() -> str | None:
    """The API key typed for this session, or None (the backend then reads its environment variable)."""
    init_state()
    key = str(st.session_state.get("settings_api_key") or "").strip()
    return key or None


def check_backend_button(label: str, *, key: str, primary: bool = False) -> None:
    """A button that sends one short request to the session's backend and shows the answer or the error."""
    if not st.button(label, key=key, type="primary" if primary else "secondary"):
        return
    with st.spinner("Sending one short request..."):
        try:
            st.success(escape_markdown(check_connection(llm_config(), api_key=api_key())))
        except LLMError as exc:
            st.error(escape_markdown(str(exc)))
        except Exception as exc:  # noqa: BLE001 - any backend failure is shown, not raised
            st.error(escape_markdown(f"{type(exc).__name__}: {exc}"))

"""Sign-in: who works in this session and whether they may change anything.

Local use: a display name (``$JUDGE_WORKBENCH_USER``, else the name last chosen in the sidebar, kept in a
small file beside the database, else the operating-system account name; asked for only when there is none)
and the editor role. Team deployment (an ``[auth]`` section in
``.streamlit/secrets.toml``): OpenID Connect sign-in through ``st.login``, and
the role from the ``[workbench]`` allow-lists of editors and viewers.
:func:`actor` is the one place that decides who may save.
"""

from __future__ import annotations

import getpass
import os
from typing import Any

import streamlit as st

from pages.ui.messages import escape_markdown


IDENTITY_KEY = "identity_name"
"""The session's display name (local use) or signed-in identity (team deployment)."""
ROLE_KEY = "identity_role"
"""``editor`` or ``viewer``."""
USER_ENV = "JUDGE_WORKBENCH_USER"
"""A display name for local use that is then not asked for (scripts, tests)."""


def _secrets_section(name: str) -> dict[str, Any]:
    """A section of ``.streamlit/secrets.toml``; empty when there is no secrets file (local use).

    A secrets file that exists but cannot be read fails closed: the page says
    why and stops, rather than opening a team deployment without sign-in.
    """
    try:
        return dict(st.secrets[name]) if name in st.secrets else {}
    except Exception as exc:  # noqa: BLE001 - Streamlit raises its own error types here
        if getattr(exc, "error_id", None) == "no-secrets-found":
            return {}
        st.error(escape_markdown(f"The secrets file cannot be read ({exc}), so sign-in cannot be set up; the workbench "
                       "stays closed until it is fixed."))
        st.stop()
        raise  # unreachable: st.stop() raises


def team_mode() -> bool:
    """True when ``.streamlit/secrets.toml`` has an ``[auth]`` section: sign-in through OpenID Connect."""
    return bool(_secrets_section("auth"))


def role_of(email: str, allow: dict[str, Any]) -> str | None:
    """``editor``, ``viewer`` or None (not allowed in) for ``email`` under the ``[workbench]`` allow-list.

    ``editors`` and ``viewers`` are lists of e-mail addresses (case does not
    matter); ``"*"`` in a list lets every signed-in person in with that role.
    Someone in both lists is an editor.
    """
    email = (email or "").strip().lower()
    for role in ("editor", "viewer"):
        names = {str(x).strip().lower() for x in allow.get(f"{role}s") or []}
        if email and (email in names or "*" in names):
            return role
    return None


def sign_in() -> None:
    """Establish who works in this session; called by ``app.py`` before any page.

    Team deployment (``[auth]`` in secrets): not signed in, the page offers
    sign-in (``st.login``) and stops; signed in but on neither allow-list
    (``[workbench] editors`` / ``viewers``), it says so and offers sign-out.
    Local use: the display name comes from ``$JUDGE_WORKBENCH_USER``, else the name last chosen in the
    sidebar (:func:`remembered_name`), else the operating-system account; it is asked for only when none of
    them gives one, so a reload does not ask again.
    """
    if team_mode():
        if not st.user.is_logged_in:
            st.title("Judge Workbench")
            st.write("Sign in to work on this workbench.")
            if st.button("Sign in", key="identity_login", type="primary"):
                st.login()
            st.stop()
        email = str(st.user.get("email") or "")
        role = role_of(email, _secrets_section("workbench"))
        if role is None:
            st.error(escape_markdown(f"{email or 'This account'} is not on this workbench's list of editors or viewers. "
                           "Ask whoever runs it to add you."))
            if st.button("Sign out", key="identity_logout_refused"):
                st.logout()
            st.stop()
        st.session_state[IDENTITY_KEY] = email
        st.session_state[ROLE_KEY] = role
        return
    st.session_state[ROLE_KEY] = "editor"
    if st.session_state.get(IDENTITY_KEY):
        return
    preset = os.environ.get(USER_ENV, "").strip()
    if preset:
        st.session_state[IDENTITY_KEY] = preset
        return
    name = remembered_name() or _login_name()
    if name:
        st.session_state[IDENTITY_KEY] = name
        return
    st.title("Judge Workbench")
    with st.form("identity_form"):
        name = st.text_input("Your name (recorded with every label, edit and run you make)",
                             value=_login_name(), key="identity_input", max_chars=80)
        if st.form_submit_button("Continue", type="primary"):
            if name.strip():
                st.session_state[IDENTITY_KEY] = name.strip()
                remember_name()
                st.rerun()
            st.error("Enter a name first.")
    st.stop()


def _remembered_path() -> Any:
    from pages.ui.session import db_path

    path = db_path()
    return path.with_name(path.name + ".user")


def remembered_name() -> str:
    """The display name last chosen with this database (local use); empty when none was."""
    try:
        return " ".join(_remembered_path().read_text(encoding="utf-8").split())[:80]
    except (OSError, UnicodeDecodeError):
        return ""


def remember_name() -> None:
    """Keep the session's display name beside the database, so a reload or a restart does not ask again."""
    name = " ".join(str(st.session_state.get(IDENTITY_KEY) or "").split())[:80]
    if not name or team_mode():
        return
    try:
        _remembered_path().write_text(name + "\n", encoding="utf-8")
    except OSError:  # a read-only folder: the name lasts for this session only
        pass


def _login_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def identity() -> str:
    """Who works in this session (display name or signed-in e-mail); empty before :func:`sign_in`."""
    return str(st.session_state.get(IDENTITY_KEY) or os.environ.get(USER_ENV, "") or "")


def can_edit() -> bool:
    """False for a team deployment's viewer."""
    return st.session_state.get(ROLE_KEY, "editor") != "viewer" or not team_mode()


def actor() -> str:
    """The name every save records, for the one place that decides who may save.

    A viewer (or a session without a name) is refused here with one message
    and the page stops, before anything is written.
    """
    if not can_edit():
        st.error(escape_markdown(f"{identity()} may view this workbench but not change it; nothing was saved."))
        st.stop()
    name = identity()
    if not name:
        st.error("Give your name first (sidebar), so your change says who made it.")
        st.stop()
    return name


def identity_sidebar() -> None:
    """Who is working, their role, and (local use) a way to change the name; sign-out in a team deployment."""
    if team_mode():
        st.caption(escape_markdown(f"Signed in as {identity()} ({st.session_state.get(ROLE_KEY, '')})"))
        if st.button("Sign out", key="identity_logout"):
            st.logout()
        return
    st.text_input("Your name", key="identity_name", on_change=remember_name,
                  help="Recorded with every label, edit and run you make; kept for the next visit.")

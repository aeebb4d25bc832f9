"""Settings that stay: the backend and how it is reached, kept per database and per signed-in user.

Part of the store: the SQL here touches the ``saved_settings`` table only. It lives beside
:mod:`judge_engine.store` because that module is at the project's 700-line limit.

A scope is :data:`DATABASE` (everyone using this database file: local use) or :func:`user_scope` (one
signed-in person of a team deployment, over the database's values). A secret is never kept: a name that
holds ``api_key`` (other than ``api_key_env``, the name of the variable the key is read from) is refused
before anything is written, so an API key stays in the environment or in one browser session.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .store import Store

__all__ = ["DATABASE", "is_secret", "load", "save", "user_scope"]

DATABASE = "database"
"""The scope of settings shared by everyone who opens this database file."""


def user_scope(identity: str) -> str:
    """The scope of one signed-in person's own settings."""
    return f"user:{identity.strip().lower()}"


def is_secret(name: str) -> bool:
    """Whether ``name`` holds a secret that is never written to the database (an API key)."""
    return "api_key" in name and not name.endswith("api_key_env")


def load(store: Store, *scopes: str) -> dict[str, Any]:
    """The values kept under ``scopes``, a later scope's value over an earlier one's (a user's over the
    database's); a value that is not JSON (written by hand) is left out."""
    values: dict[str, Any] = {}
    for scope in scopes:
        for row in store.db.query("select name, value from saved_settings where scope = ?", [scope]):
            try:
                values[row["name"]] = json.loads(row["value"])
            except (TypeError, ValueError):
                continue
    return {k: v for k, v in values.items() if not is_secret(k)}


def save(store: Store, scope: str, name: str, value: Any, *, actor: str = "") -> None:
    """Keep ``value`` for ``name`` under ``scope``; ValueError for a secret, before anything is written."""
    if is_secret(name):
        raise ValueError(f"{name} is a secret: it is kept in the environment or this session, never in the database")
    with store.write() as db:
        db.execute("insert or replace into saved_settings (scope, name, value, actor, updated) values (?, ?, ?, ?, ?)",
                   [scope, name, json.dumps(value), actor, time.time()])

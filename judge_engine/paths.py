"""Where the package keeps its files: the database's default place and, for an installed package, its own folder.

Here rather than in :mod:`judge_engine.store` so that ``judge-workbench --help`` names the database file
without importing the store (sqlite-utils brings pandas with it)."""

from __future__ import annotations

import os
from pathlib import Path


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/judge-workbench`` (``~/.local/share/judge-workbench`` when unset): the database of an
    installed package (:func:`judge_engine.store.default_db_path`) and the embedded model's check
    (:mod:`judge_engine.llm.model_check`)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "judge-workbench"


REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB_PATH = REPO_ROOT / "data" / "workbench.db"


def default_db_path() -> Path:
    """``$JUDGE_WORKBENCH_DB`` if set; else ``data/workbench.db`` in the clone the package runs from; else, for
    an installed package (whose folder may not be writable, and is replaced on upgrade),
    ``$XDG_DATA_HOME/judge-workbench/workbench.db`` (``~/.local/share/...`` when unset)."""
    env = os.environ.get("JUDGE_WORKBENCH_DB")
    if env:
        return Path(env)
    if (REPO_ROOT / "app.py").is_file() and (REPO_ROOT / "judge_engine").is_dir():
        return DEFAULT_DB_PATH
    return user_data_dir() / "workbench.db"


def db_help() -> str:
    """``--db``'s help, naming the file used without it: a clone keeps ``data/workbench.db`` but an installed
    package a file in the user's data folder (:func:`default_db_path` decides)."""
    where = str(default_db_path()).replace("%", "%%")  # argparse formats help text with %
    if os.environ.get("JUDGE_WORKBENCH_DB"):
        return f"database file (default: {where}, from $JUDGE_WORKBENCH_DB)"
    return f"database file (default: {where}; $JUDGE_WORKBENCH_DB sets another)"

"""Where an installed package keeps its own files, outside any clone."""

from __future__ import annotations

import os
from pathlib import Path


def user_data_dir() -> Path:
    """``$XDG_DATA_HOME/judge-workbench`` (``~/.local/share/judge-workbench`` when unset): the database of an
    installed package (:func:`judge_engine.store.default_db_path`) and the embedded model's check
    (:mod:`judge_engine.llm.model_check`)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "judge-workbench"

"""Environment variables set for a block and restored after it, as they were (absent ones removed again).

MLflow and litellm read their settings (retries, endpoints) from the process's environment only, so the
integrations set them around the one call that needs them (:mod:`.mlflow_traces`, :mod:`.openai_bridge`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping


@contextmanager
def environment(values: Mapping[str, str], *, defaults: Mapping[str, str] | None = None) -> Iterator[None]:
    """``values`` set in ``os.environ`` for the block, ``defaults`` only where unset; every one of them restored
    to what it was after (unset again when it was unset), also when the block raises."""
    defaults = defaults or {}
    saved = {key: os.environ.get(key) for key in (*values, *defaults)}
    os.environ.update(values)
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

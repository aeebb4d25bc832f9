"""Environment variables set for a block and restored after it, as they were (absent ones removed again).

MLflow and litellm read their settings (retries, endpoints) from the process's environment only, so the
integrations set them around the one call that needs them (:mod:`.integrations.mlflow_traces`,
:mod:`.integrations.openai_bridge`); benchmarks point the engine somewhere (a database, a thread count) the same
way.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping


_ENVIRONMENT_LOCK = threading.RLock()
"""The process has one environment: two blocks on two threads (two sessions of the app importing from MLflow)
would each restore what the other set. One block at a time; a block may hold another on its own thread."""


@contextmanager
def environment(values: Mapping[str, str] | None = None, *, defaults: Mapping[str, str] | None = None,
                restored: Iterable[str] = ()) -> Iterator[None]:
    """``values`` set in ``os.environ`` for the block, ``defaults`` only where unset; every one of them, and each
    name in ``restored`` (a variable the block itself may set), restored to what it was after (unset again when
    it was unset), also when the block raises."""
    values, defaults = values or {}, defaults or {}
    with _ENVIRONMENT_LOCK:
        saved = {key: os.environ.get(key) for key in (*values, *defaults, *restored)}
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

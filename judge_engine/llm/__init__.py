"""One LLM call path for every method.

``make_llm(config, store=...)`` returns an :class:`LLM` whose ``complete`` and
``complete_many`` go through the persistent cache and the cost ledger. The
backends are registered by name and import their heavy library only when
built: ``llamacpp`` (embedded SmolLM2 by default), ``openai`` (any
OpenAI-compatible server) and ``vllm`` (offline engine on a GPU host).
``fake`` is for unit tests only and is never chosen implicitly.
"""

from __future__ import annotations

from typing import Any

from .base import (BACKEND_NAMES, Backend, BackendUnavailable, Completion, GenerationParams, LLMConfig,
                   LLMError, Message, Request, cache_key)
from .client import LLM, Ledger

__all__ = ["BACKEND_NAMES", "Backend", "BackendUnavailable", "Completion", "GenerationParams", "LLM",
           "LLMConfig", "LLMError", "Ledger", "Message", "Request", "cache_key", "make_backend", "make_llm",
           "check_connection"]


def make_backend(config: LLMConfig, *, api_key: str | None = None) -> Backend:
    """Build the backend ``config.backend`` names (never falls back to another one)."""
    if config.backend == "llamacpp":
        from .llamacpp import LlamaCppBackend
        return LlamaCppBackend(config.model, n_ctx=config.n_ctx)
    if config.backend == "openai":
        from .openai_backend import OpenAIBackend
        return OpenAIBackend(config.model, config.base_url, api_key=api_key, api_key_env=config.api_key_env,
                             timeout=config.timeout, max_retries=config.max_retries)
    if config.backend == "vllm":
        from .vllm_backend import VLLMBackend
        return VLLMBackend(config.model)
    raise LLMError(f"unknown backend {config.backend!r}; choose one of {', '.join(BACKEND_NAMES)}")


def make_llm(config: LLMConfig, *, store: Any = None, api_key: str | None = None,
             ledger: Ledger | None = None, backend: Backend | None = None) -> LLM:
    """An :class:`LLM` for ``config`` whose calls are cached in ``store`` (a :class:`judge_engine.store.Store`)."""
    from ..store import CallCache
    cache = CallCache(store) if store is not None else None
    return LLM(config, backend or make_backend(config, api_key=api_key), cache=cache, ledger=ledger)


def check_connection(config: LLMConfig, *, api_key: str | None = None) -> str:
    """Send one tiny uncached request; return a one-line success message or raise :class:`LLMError`."""
    backend = make_backend(config, api_key=api_key)
    out = backend.generate([{"role": "user", "content": "Say OK."}], GenerationParams(max_tokens=4))
    return f"{config.label} answered {out.text.strip()[:40]!r} in {out.latency_s:.2f}s"

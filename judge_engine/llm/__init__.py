"""One LLM call path for every method.

``make_llm(config, store=...)`` returns an :class:`LLM` whose ``complete`` and
``complete_many`` go through the persistent cache and the cost ledger. The
backends are registered by name and import their heavy library only when
built: ``llamacpp`` (embedded SmolLM2 by default), ``openai`` (any
OpenAI-compatible server) and ``vllm`` (offline engine on a GPU host).
``fake`` is for unit tests only and is never chosen implicitly.

A request whose :attr:`GenerationParams.json_schema` is set is constrained
to that schema by each backend's native mechanism (a llama.cpp grammar, an
OpenAI-compatible ``response_format`` or ``guided_json``, vLLM guided
decoding), as ``LLMConfig.structured`` says; :attr:`Completion.structured_mode`
records how, and that mode is part of the request's cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import (BACKEND_NAMES, DEFAULT_IN_FLIGHT, FREE_TEXT, STRUCTURED_HELP, STRUCTURED_MODES, Backend, BackendUnavailable,
                   Completion, EmbeddedModelUnavailable, GenerationParams, LLMConfig, LLMError, Message, RateLimited,
                   Request, RequestFailed, RequestRejected, SendingStopped, cache_key, default_concurrency)
from .client import LLM, Ledger, LedgerTotals

__all__ = ["BACKEND_NAMES", "DEFAULT_IN_FLIGHT", "default_concurrency", "STRUCTURED_HELP", "STRUCTURED_MODES", "ConnectionCheck", "Backend",
           "BackendUnavailable", "Completion", "EmbeddedModelUnavailable", "GenerationParams", "LLM",
           "LLMConfig", "LLMError", "Ledger", "LedgerTotals", "Message", "RateLimited", "Request", "RequestFailed", "RequestRejected", "SendingStopped", "cache_key", "make_backend",
           "make_llm",
           "check_connection", "connection_check", "describe_structured_mode"]


def make_backend(config: LLMConfig, *, api_key: str | None = None) -> Backend:
    """Build the backend ``config.backend`` names (never falls back to another one)."""
    if config.structured not in STRUCTURED_MODES:
        raise LLMError(f"unknown structured-reply mode {config.structured!r}; choose one of "
                       f"{', '.join(STRUCTURED_MODES)}")
    if config.backend == "llamacpp":
        from .llamacpp import LlamaCppBackend
        return LlamaCppBackend(config.model, n_ctx=config.n_ctx, structured=config.structured)
    if config.backend == "openai":
        from .openai_backend import OpenAIBackend
        return OpenAIBackend(config.model, config.base_url, api_key=api_key, api_key_env=config.api_key_env,
                             timeout=config.timeout, max_retries=config.max_retries, structured=config.structured)
    if config.backend == "vllm":
        from .vllm_backend import VLLMBackend
        return VLLMBackend(config.model, structured=config.structured)
    raise LLMError(f"unknown backend {config.backend!r}; choose one of {', '.join(BACKEND_NAMES)}")


def make_llm(config: LLMConfig, *, store: Any = None, api_key: str | None = None,
             ledger: Ledger | None = None, backend: Backend | None = None) -> LLM:
    """An :class:`LLM` for ``config`` whose calls are cached in ``store`` (a :class:`judge_engine.store.Store`)."""
    from ..store import CallCache
    cache = CallCache(store) if store is not None else None
    return LLM(config, backend or make_backend(config, api_key=api_key), cache=cache, ledger=ledger)


@dataclass(frozen=True)
class ConnectionCheck:
    """What :func:`connection_check` found."""

    message: str
    """One line: who answered what, how fast, and how structured replies are honoured."""
    structured_mode: str
    """The backend's effective structured mode after the check (e.g. the format a server accepted)."""


_PROBE_SCHEMA = {"title": "connection_check", "type": "object",
                 "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                 "required": ["answer"], "additionalProperties": False}


def connection_check(config: LLMConfig, *, api_key: str | None = None) -> ConnectionCheck:
    """Send one tiny free-text request and one tiny schema request, both uncached.

    The second one lets ``auto`` learn which structured format the server
    accepts (json_schema, json_object, guided_json, or none: free text), so
    Settings can show it. Raises :class:`LLMError` when the backend fails.
    """
    import json

    backend = make_backend(config, api_key=api_key)
    out = backend.generate([{"role": "user", "content": "Say OK."}], GenerationParams(max_tokens=4))
    message = f"{config.label} answered {out.text.strip()[:40]!r} in {out.latency_s:.2f}s"
    mode = getattr(backend, "effective_structured_mode", None) or ""
    if config.structured != "off":
        probe = GenerationParams(max_tokens=12, json_schema=json.dumps(_PROBE_SCHEMA, sort_keys=True))
        mode = backend.generate([{"role": "user", "content": "Is 2 larger than 1? Answer yes or no."}],
                                probe).structured_mode or mode
    return ConnectionCheck(f"{message}; structured replies: {describe_structured_mode(config.structured, mode)}",
                           mode)


def describe_structured_mode(configured: str, effective: str) -> str:
    """Plain words for how schema requests are honoured (``configured`` = the setting)."""
    if effective == "off" or configured == "off":
        return "off (free text, as configured)"
    if effective == FREE_TEXT:
        return "none of json_schema, json_object, guided_json accepted: free text, parsed as before"
    words = {"grammar": "llama.cpp grammar from the schema", "guided_decoding": "vLLM guided decoding",
             "structured_outputs": "vLLM structured outputs"}
    if effective in words:
        return words[effective]
    if effective:
        how = "accepted" if configured == "auto" else "as configured"
        return f"{effective} ({how}: {STRUCTURED_HELP.get(effective, '')})"
    return f"{configured} (not yet tried)"


def check_connection(config: LLMConfig, *, api_key: str | None = None) -> str:
    """Send a tiny free-text and a tiny schema request; return a one-line message or raise :class:`LLMError`."""
    return connection_check(config, api_key=api_key).message

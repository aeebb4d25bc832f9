"""The records and the backend contract of the one LLM call path.

Every method in the engine talks to a language model through
:class:`judge_engine.llm.LLM`, which takes chat messages and
:class:`GenerationParams` and returns a :class:`Completion`. A backend only
knows how to produce an uncached completion; caching, the cost ledger and
bounded concurrency live in the client, once for all backends.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Callable, Protocol

Message = dict[str, str]
"""A chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

BACKEND_NAMES = ("llamacpp", "openai", "vllm")
"""Backends a user can choose. ``fake`` exists for unit tests only and is never offered."""

STRUCTURED_MODES = ("auto", "json_schema", "json_object", "guided_json", "off")
"""How a JSON schema is sent: ``json_schema`` = OpenAI's ``response_format`` (OpenAI, vLLM, Ollama);
``json_object`` = ``response_format`` of type json_object carrying a ``schema`` (llama_cpp.server);
``guided_json`` = vLLM's extra body field; ``off`` = never (free-text parsing only); ``auto`` = the
backend's native mechanism (a grammar in-process) or the first mode the server accepts."""


class LLMError(RuntimeError):
    """A backend failed in a way a user can act on; the message says how."""


class BackendUnavailable(LLMError):
    """The backend cannot be reached or started (server down, package missing)."""


@dataclass(frozen=True)
class LLMConfig:
    """Which model answers and how it is reached.

    The API key is deliberately not a field: it is read from the environment
    (``api_key_env``) or handed to the client for the session only, so a
    config can be stored with a run without ever holding a secret.
    """

    backend: str = "llamacpp"
    """One of :data:`BACKEND_NAMES`."""
    model: str = ""
    """Model name for openai/vllm; for llamacpp an optional path to a GGUF file (empty = embedded SmolLM2)."""
    base_url: str = ""
    """OpenAI-compatible endpoint (empty = api.openai.com)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable the key is read from when none is given for the session."""
    concurrency: int = 4
    """Requests in flight at once (the embedded model serialises them anyway)."""
    timeout: float = 120.0
    """Seconds before one request is abandoned (then retried by the client)."""
    max_retries: int = 3
    """Retries with exponential backoff on connection errors, 429 and 5xx."""
    n_ctx: int = 4096
    """Context window for the embedded llama.cpp model."""
    structured: str = "auto"
    """How a request's JSON schema reaches the server (see :data:`STRUCTURED_MODES`); ``off`` = free text only."""
    price_prompt_per_1k: float = 0.0
    """Dollars per 1,000 prompt tokens, for the cost ledger (0 = free)."""
    price_completion_per_1k: float = 0.0
    """Dollars per 1,000 completion tokens."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LLMConfig":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    @property
    def label(self) -> str:
        model = self.model or "SmolLM2-135M-Instruct (embedded)"
        where = f" @ {self.base_url}" if self.base_url else ""
        return f"{self.backend}: {model}{where}"


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters of one request; all of them are part of the cache key."""

    temperature: float = 0.0
    max_tokens: int = 256
    n: int = 1
    """Completions per request."""
    stop: tuple[str, ...] = ()
    seed: int = 0
    top_logprobs: int = 0
    """Alternatives returned per position for the first tokens (0 = no logprobs)."""
    sample_index: int = 0
    """Distinguishes repeated stochastic draws of the same prompt in the cache; never sent."""
    json_schema: str = ""
    """The reply's JSON schema as canonical JSON text (:func:`judge_engine.structured.as_param`); empty = free text.
    A backend constrains the reply to it by its native mechanism, or sends the prompt unchanged where the
    server supports none (the caller then parses the free text)."""

    def cache_fields(self) -> dict[str, Any]:
        # a shallow copy: every field is a number or a tuple of strings (asdict's deep copy was a third of
        # the time of answering a batch from the cache)
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["stop"] = list(self.stop)
        if self.n == 1 and self.temperature == 0:
            d.pop("sample_index")  # greedy single draws are the same whatever the index
        if not self.json_schema:
            d.pop("json_schema")  # free-text requests keep the keys they had before schemas existed
        return d

    def with_(self, **changes: Any) -> "GenerationParams":
        return replace(self, **changes)


LOGPROB_POSITIONS = 16
"""How many leading completion tokens keep their top-k alternatives."""


@dataclass(frozen=True)
class Completion:
    """What one request returned."""

    texts: tuple[str, ...]
    """One text per requested completion (``n``)."""
    logprobs: tuple[tuple[dict[str, Any], ...], ...] = ()
    """Per completion, per leading token: ``{"token": str, "logprob": float, "top": {token: logprob}}``."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    """Seconds the backend took (0 when served from the cache)."""
    model: str = ""
    cached: bool = False
    """True when this came from the persistent cache and cost nothing."""
    truncated_chars: int = 0
    """Characters of judged text cut to fit the model's context (see :mod:`judge_engine.llm.fit`)."""

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    def to_dict(self) -> dict[str, Any]:
        return {"texts": list(self.texts), "logprobs": [list(c) for c in self.logprobs],
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "latency_s": self.latency_s, "model": self.model, "truncated_chars": self.truncated_chars}

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, cached: bool = False) -> "Completion":
        return cls(texts=tuple(d["texts"]), logprobs=tuple(tuple(c) for c in d.get("logprobs", [])),
                   prompt_tokens=int(d.get("prompt_tokens", 0)),
                   completion_tokens=int(d.get("completion_tokens", 0)),
                   latency_s=float(d.get("latency_s", 0.0)), model=d.get("model", ""), cached=cached,
                   truncated_chars=int(d.get("truncated_chars", 0)))


@dataclass(frozen=True)
class Request:
    """One chat request: messages plus sampling parameters."""

    messages: tuple[Message, ...]
    params: GenerationParams = field(default_factory=GenerationParams)


class Backend(Protocol):
    """What a backend provides: uncached generation and an identity for the cache key."""

    name: str
    model_id: str
    """Identifies the model in cache keys (file name, or base URL + model name)."""
    supports_logprobs: bool

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion: ...


def cache_key(backend: str, model_id: str, messages: list[Message] | tuple[Message, ...],
              params: GenerationParams) -> str:
    """Hash of everything that determines a reply (not timeouts, retries or concurrency)."""
    payload = {"backend": backend, "model": model_id,
               "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
               "params": params.cache_fields()}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def logprobs_from_openai(content: list[Any] | None) -> tuple[dict[str, Any], ...]:
    """Normalise OpenAI-style ``choice.logprobs.content`` (objects or dicts) to our format."""
    if not content:
        return ()
    out = []
    for item in content[:LOGPROB_POSITIONS]:
        get = item.get if isinstance(item, dict) else (lambda k, _i=item: getattr(_i, k, None))
        top = {}
        for alt in get("top_logprobs") or []:
            aget = alt.get if isinstance(alt, dict) else (lambda k, _a=alt: getattr(_a, k, None))
            top[aget("token")] = float(aget("logprob"))
        out.append({"token": get("token"), "logprob": float(get("logprob")), "top": top})
    return tuple(out)


Responder = Callable[[list[Message], GenerationParams], str]

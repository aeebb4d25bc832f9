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
import re
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
backend's native mechanism (a grammar in-process) or the first mode the server accepts.

The three wire formats only concern the openai backend; the in-process backends (llamacpp, vllm) use
their native mechanism for every mode but ``off``."""

AUTO_ORDER = ("json_schema", "json_object", "guided_json")
"""The modes ``auto`` tries on an OpenAI-compatible server, in this order: the documented OpenAI format
first (OpenAI, vLLM, Ollama), then llama_cpp.server's, then vLLM's older extra field (which servers that
do not know it may ignore silently, so it comes last)."""

FREE_TEXT = "free_text"
"""The effective mode of ``auto`` on a server that accepted none of :data:`AUTO_ORDER`: the prompt is sent
unchanged and the caller parses free text. (A configured ``off`` stays ``off``: the two are cached apart,
so switching from ``off`` to ``auto`` never serves a free-text reply from the cache.)"""

STRUCTURED_HELP = {
    "auto": "the backend's own mechanism in-process (a llama.cpp grammar, vLLM guided decoding); on a server, "
            "the first format it accepts: json_schema, then json_object, then guided_json, else free text",
    "json_schema": "response_format of type json_schema (OpenAI, vLLM serve, Ollama)",
    "json_object": "response_format of type json_object with a schema (python -m llama_cpp.server)",
    "guided_json": "vLLM's guided_json request field (older vLLM servers)",
    "off": "never send a schema: every reply is parsed from free text",
}
"""One line per structured mode, for the Settings page and error messages."""


class LLMError(RuntimeError):
    """A backend failed in a way a user can act on; the message says how."""


class BackendUnavailable(LLMError):
    """The backend cannot be reached or started (server down, package missing)."""


class EmbeddedModelUnavailable(BackendUnavailable):
    """The embedded (llama.cpp) model cannot run here: its file is missing or not a GGUF model, or a test load in a
    child process failed or crashed (:mod:`judge_engine.llm.model_check`). The message names what happened and the
    command that fixes it."""


class RateLimited(BackendUnavailable):
    """The server answered 429 after the client's own retries: fewer requests at once, and a pause, may help."""


class SendingStopped(LLMError):
    """The run was stopped (:meth:`~judge_engine.llm.LLM.cancel_queued`): requests not yet sent were dropped. Not
    an item's failure: code that makes a failed request a missing item lets this one through."""


class RequestFailed(BackendUnavailable):
    """This one request kept failing after the client's retries (a 5xx, a timeout, a reply that is not a chat
    completion). Whether that is the item's problem or the server's is told by the other items: ``score`` writes
    the item missing while others are answered and stops when none is (:mod:`judge_engine.item_failures`).

    ``kind`` is a short name of the failure for the summary (``server error 500``, ``timeout``) and ``reason`` the
    server's own words where it gave some."""

    def __init__(self, message: str, *, kind: str, reason: str = "", timed_out: bool = False):
        super().__init__(message)
        self.kind, self.reason, self.timed_out = kind, reason or message, timed_out


class RequestRejected(LLMError):
    """The server refused this one request (400, 413 or 422: a prompt over the model's context, content it
    will not judge, a request it cannot read) while it answers others: the item is missing, not the job stopped.

    ``status`` is the HTTP status and ``reason`` the server's own words, for the item's ``missing_reason``."""

    def __init__(self, message: str, *, status: int, reason: str):
        super().__init__(message)
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class InFlight:
    """Requests a backend is sent at once by default: while fitting (``run``, the pages, the Python API) and
    while scoring a file (``score``)."""

    fit: int
    score: int


DEFAULT_IN_FLIGHT = {"openai": InFlight(fit=32, score=32), "vllm": InFlight(fit=32, score=32),
                     "llamacpp": InFlight(fit=4, score=1)}
"""The one table of default in-flight counts (issue 46 item 2). A server batches what it is sent at once, so
``run``, the pages and the API start at 32 as ``score`` does; the 429 governor (:mod:`judge_engine.llm.rate`)
lowers it while the server says too many. The embedded model answers one request at a time behind its
machine-wide lock: 4 while fitting and 1 while scoring, the values it had before this table."""

OTHER_IN_FLIGHT = InFlight(fit=4, score=4)
"""Backends not in the table (the tests' ``fake``, the benchmarks' ``simulated``)."""


def default_concurrency(backend: str, *, scoring: bool = False) -> int:
    """Requests in flight by default on ``backend``, fitting or (``scoring``) scoring a file."""
    in_flight = DEFAULT_IN_FLIGHT.get(backend, OTHER_IN_FLIGHT)
    return in_flight.score if scoring else in_flight.fit


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
    concurrency: int | None = None
    """Requests in flight at once; None (the default) = the backend's fitting default
    (:func:`default_concurrency`: 32 on openai and vllm, 4 on the embedded model, which serialises them anyway).
    Always a number once the config is made."""
    timeout: float = 30.0
    """Seconds before one request is abandoned (then retried by the client): an HTTP client's usual order, so a
    server that stops answering is named within a minute (issue 64; it was 120 s, 3 retries: 10 minutes)."""
    max_retries: int = 2
    """Retries with exponential backoff on connection errors, 429 and 5xx."""
    rate_limit_patience: float = 600.0
    """Seconds one request keeps being tried, with fewer requests in flight and growing pauses, while the server
    answers 429 after those retries (:mod:`judge_engine.llm.rate`); then the run pauses and can be resumed."""
    n_ctx: int = 4096
    """Context window for the embedded llama.cpp model."""
    structured: str = "auto"
    """How a request's JSON schema reaches the server (see :data:`STRUCTURED_MODES`); ``off`` = free text only."""
    price_prompt_per_1k: float = 0.0
    """Dollars per 1,000 prompt tokens, for the cost ledger (0 = free)."""
    price_completion_per_1k: float = 0.0
    """Dollars per 1,000 completion tokens."""

    def __post_init__(self) -> None:
        # the default depends on the backend, which a field default cannot see; a stored config keeps its number
        if self.concurrency is None:
            object.__setattr__(self, "concurrency", default_concurrency(self.backend))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LLMConfig":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    @property
    def reuses_prompt_prefix(self) -> bool:
        """Whether a prompt that begins like the previous one is cheaper: llama.cpp keeps its KV cache between
        calls, vLLM caches prefixes, OpenAI caches long prompts and llama.cpp/vLLM servers behind the openai
        backend do the same. The sample-first layout was measured 3.08x faster with the same correlation on
        the embedded model (docs/benchmarks.md, layout benchmark)."""
        return self.backend in ("llamacpp", "vllm", "openai")

    @property
    def embedded(self) -> bool:
        """Whether this is the embedded SmolLM2-135M (llama.cpp with no model file of the user's): the one backend
        whose tiny model needs the methods' constrained sentence form (:data:`judge_engine.methods.base.
        CRITERIA_FORMS`)."""
        return self.backend == "llamacpp" and not self.model

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
    presence_penalty: float = 0.0
    """Penalty on tokens already in the reply (OpenAI's ``presence_penalty``; 0 = none). Rubric generation sets
    it: under a grammar and greedy decoding a small model otherwise writes the first list item again and again,
    while with it the items differ. Only sent when not 0."""
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
        if not self.presence_penalty:
            d.pop("presence_penalty")  # requests without a penalty keep the cache keys they had before it existed
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
    structured_mode: str = ""
    """How the request's JSON schema was honoured: ``grammar`` (llama.cpp), ``json_schema``,
    ``json_object``, ``guided_json`` (openai backend), ``structured_outputs`` or ``guided_decoding``
    (vLLM offline), ``off`` / :data:`FREE_TEXT` (sent unchanged); "" for a request without a schema."""

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""

    def to_dict(self) -> dict[str, Any]:
        d = {"texts": list(self.texts), "logprobs": [list(c) for c in self.logprobs],
             "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
             "latency_s": self.latency_s, "model": self.model, "truncated_chars": self.truncated_chars}
        if self.structured_mode:  # free-text replies are stored as they were before schemas existed
            d["structured_mode"] = self.structured_mode
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, cached: bool = False) -> "Completion":
        return cls(texts=tuple(d["texts"]), logprobs=tuple(tuple(c) for c in d.get("logprobs", [])),
                   prompt_tokens=int(d.get("prompt_tokens", 0)),
                   completion_tokens=int(d.get("completion_tokens", 0)),
                   latency_s=float(d.get("latency_s", 0.0)), model=d.get("model", ""), cached=cached,
                   truncated_chars=int(d.get("truncated_chars", 0)),
                   structured_mode=str(d.get("structured_mode", "")))


@dataclass(frozen=True)
class Request:
    """One chat request: messages plus sampling parameters."""

    messages: tuple[Message, ...]
    params: GenerationParams = field(default_factory=GenerationParams)


class Backend(Protocol):
    """What a backend provides: uncached generation and an identity for the cache key.

    Optional, read with ``getattr`` by the client:

    ``effective_structured_mode`` (str or None)
        How a request with a JSON schema is honoured now (see :attr:`Completion.structured_mode`);
        None while ``auto`` has not yet learned what the server accepts. Part of the cache key of
        schema requests: a reply constrained differently is a different reply.
    ``structured_candidates`` (tuple of str)
        While the mode is unknown, the modes it may turn out to be, in the order ``auto`` tries them
        (the client looks each one up in the cache before calling).
    ``generate_many(pairs)``
        Answers a list of ``(messages, params)`` in one engine call (vLLM offline batches them).
    ``max_batch`` (int)
        Requests per ``generate_many`` call.
    """

    name: str
    model_id: str
    """Identifies the model in cache keys (file name, or base URL + model name)."""
    supports_logprobs: bool

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion: ...


def cache_key(backend: str, model_id: str, messages: list[Message] | tuple[Message, ...],
              params: GenerationParams, structured: str = "") -> str:
    """Hash of everything that determines a reply (not timeouts, retries or concurrency).

    ``structured`` is how a schema request was (or will be) honoured (a backend's
    ``effective_structured_mode``); it enters the key only when ``params`` carries a schema, so the
    keys of free-text requests are the ones they had before structured replies existed.
    """
    payload = {"backend": backend, "model": model_id,
               "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
               "params": params.cache_fields()}
    if params.json_schema and structured:
        payload["structured"] = structured
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


GRAMMAR_MAX_STRING_LENGTH = 600
"""Longest ``maxLength`` spelled out in a grammar. llama.cpp writes ``maxLength: n`` as n nested optional
characters and aborts the whole process on such a grammar past about a thousand ("number of rules ...
exceeds sane defaults", measured at 1,200; 800 worked): in-process, and in ``llama_cpp.server``, which died
on Active-Critic's 1,200-character task description. A longer bound is left to ``max_tokens`` while
decoding and checked by :func:`judge_engine.structured.read_json` on the reply."""


def grammar_schema(schema: Any) -> Any:
    """``schema`` with every string ``maxLength`` above :data:`GRAMMAR_MAX_STRING_LENGTH` dropped."""
    if isinstance(schema, list):
        return [grammar_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: grammar_schema(v) for k, v in schema.items()}
    if out.get("type") == "string" and int(out.get("maxLength", 0)) > GRAMMAR_MAX_STRING_LENGTH:
        out.pop("maxLength")
    return out


def request_schema(json_schema: str) -> dict[str, Any] | None:
    """The schema of a :attr:`GenerationParams.json_schema` text, ready to send (None for free text).

    The text is canonical JSON with sorted keys, which puts every object's
    ``properties`` in alphabetical order; decoders that follow the schema
    (llama.cpp's grammar, OpenAI's strict mode, vLLM's guided decoding) emit
    properties in that order, so "explanation before score" would silently
    become alphabetical. The ``required`` list keeps the order the method
    asked for (a list is never sorted), so properties are put back in that
    order, recursively; properties not required follow in their own order.
    """
    if not json_schema:
        return None
    return _ordered(json.loads(json_schema))


def _ordered(node: Any) -> Any:
    if isinstance(node, list):
        return [_ordered(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _ordered(v) for k, v in node.items()}
    props = out.get("properties")
    if isinstance(props, dict) and isinstance(out.get("required"), list):
        first = [k for k in out["required"] if k in props]
        out["properties"] = {k: props[k] for k in first + [k for k in props if k not in first]}
    return out


def schema_name(schema: dict[str, Any]) -> str:
    """A ``response_format`` name for ``schema``: its title (a-z, A-Z, 0-9, _ and -, at most 64), else ``reply``."""
    title = re.sub(r"[^A-Za-z0-9_-]+", "_", str(schema.get("title") or "")).strip("_")[:64]
    return title or "reply"


Responder = Callable[[list[Message], GenerationParams], str]

"""Any OpenAI-compatible server through the official ``openai`` client.

OpenAI itself, ``vllm serve``, ``python -m llama_cpp.server`` and Ollama all
speak this protocol. Timeouts and retries with exponential backoff on
connection errors, 429 and 5xx are the client's own. The key comes from the
environment or from the app's session and is never stored or printed.

Structured replies: a request with a JSON schema is sent in the format the
``structured`` setting names (see :data:`judge_engine.llm.base.STRUCTURED_MODES`):

``json_schema``
    ``response_format={"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``, the
    documented OpenAI format, also understood by ``vllm serve`` and Ollama. ``strict`` is true only
    when the schema fits OpenAI's strict subset (:func:`strict_compatible`): every object closed with
    all its properties required, and no keyword outside the subset. Our text fields carry
    ``minLength``/``maxLength``, which strict mode rejects, so those schemas go with ``strict: false``
    unchanged rather than stripped: the reply is checked against the full schema afterwards anyway
    (:func:`judge_engine.structured.read_json`).
``json_object``
    ``response_format={"type": "json_object", "schema": schema}`` (``llama_cpp.server``).
``guided_json``
    ``extra_body={"guided_json": schema}`` (vLLM's own field).
``auto``
    Tries them in that order. A 400 or 422 to a structured request (or a 5xx whose message names the
    format: llama_cpp.server answers an unknown ``response_format`` type with a 500, not retried while
    ``auto`` is learning) moves on to the next format and,
    after the last, sends the prompt unchanged (free text). The first format that succeeds is kept
    for the life of the backend, like a refusal of logprobs; if even the free-text request fails, the
    error was not about the format, nothing is learned and the error is raised.

:attr:`OpenAIBackend.effective_structured_mode` says which format is in use
(None until ``auto`` has sent its first schema request) and each
:class:`~judge_engine.llm.base.Completion` says how it was answered; the
client puts that mode into the cache key of schema requests.
"""

from __future__ import annotations

import json
import importlib.util
import os
import sys
import threading
import time
from typing import Any

from .base import (AUTO_ORDER, FREE_TEXT, BackendUnavailable, Completion, GenerationParams, LLMError, Message,
                   RateLimited, RequestFailed, RequestRejected, STRUCTURED_HELP, grammar_schema, logprobs_from_openai, request_schema, schema_name)

STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
    "definitions", "title", "description", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems"})
"""JSON-schema keywords OpenAI's strict structured outputs accept (its documented subset)."""

SETTING_STATUSES = frozenset({401, 403, 404, 429})
"""4xx statuses about every request, not one: a bad key (401), no access (403), a model name the server does not
serve (404), too many at once (429, paced by :mod:`judge_engine.llm.rate`). Any other 4xx refuses one request (too
long, content refused, unreadable): the item is marked missing with the server's reason
(:class:`~judge_engine.llm.base.RequestRejected`)."""


class OpenAIBackend:
    """Chat completions against ``base_url`` (empty = api.openai.com)."""

    name = "openai"

    def __init__(self, model: str, base_url: str = "", *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, max_retries: int = 3,
                 structured: str = "auto"):
        if importlib.util.find_spec("openai") is None:  # pragma: no cover
            raise BackendUnavailable("the openai package is not installed: pip install -r requirements.txt")
        if not model:
            raise LLMError("the openai backend needs a model name (e.g. gpt-4o-mini, or the name your server serves)")
        key = api_key or os.environ.get(api_key_env) or ("not-needed" if base_url else None)
        if not key:
            raise LLMError(f"no API key: set {api_key_env} or type one in Settings (kept for this session only)")
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.answers_429 = 0
        """Every 429 the server sent, those the openai client retried on its own included (they never reach
        the call path's :class:`~judge_engine.llm.rate.RateGovernor`, which sees only the last of a series)."""
        self._count_lock = threading.Lock()
        self._client_args = {"api_key": key, "base_url": base_url or None, "timeout": timeout,
                             "max_retries": max_retries}
        self._client_lock = threading.Lock()
        self.model_id = f"{base_url or 'openai'}|{model}"
        self.supports_logprobs = True  # set to False the first time a server refuses logprobs
        self.structured = structured
        self.effective_structured_mode: str | None = None if structured == "auto" else structured
        """The format schema requests go in; None until ``auto`` has learned what the server accepts."""
        self._mode_lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        """The openai package and its client, made on first use: a run answered by the cache alone never needs
        them, and importing openai took 1.4 s of an 11 s cache-only round at load 5 (issue 62 item 6)."""
        if name not in ("client", "_openai", "_response_class"):
            raise AttributeError(name)
        with self.__dict__["_client_lock"]:
            if "client" not in self.__dict__:
                import openai

                http = openai.DefaultHttpxClient(event_hooks={"response": [self._saw]})  # the client's own defaults
                self.__dict__["_response_class"] = _response_class(http)
                self.__dict__["_openai"] = openai
                self.__dict__["client"] = openai.OpenAI(**self.__dict__["_client_args"], http_client=http)
        return self.__dict__[name]

    def _saw(self, response: Any) -> None:
        if response.status_code == 429:
            with self._count_lock:
                self.answers_429 += 1

    @property
    def structured_candidates(self) -> tuple[str, ...]:
        """While ``auto`` is unresolved: the modes it may end with, in the order it tries them."""
        return () if self.effective_structured_mode else (*AUTO_ORDER, FREE_TEXT)

    @property
    def where(self) -> str:
        return self.base_url or "api.openai.com"

    def _explain(self, exc: Exception) -> LLMError:
        o = self._openai
        if isinstance(exc, o.APITimeoutError):
            return RequestFailed(f"the LLM server at {self.where} did not answer in time ({self.timeout:g} s a "
                                 f"request, {self.max_retries} retries; --timeout and --retries set them)",
                                 kind="timeout", timed_out=True)
        if isinstance(exc, o.APIConnectionError):
            return BackendUnavailable(f"cannot reach the LLM server at {self.where}: is it running?")
        if isinstance(exc, o.AuthenticationError):
            return LLMError(f"the server at {self.where} rejected the API key (401)")
        if isinstance(exc, o.PermissionDeniedError):
            return LLMError(f"the server at {self.where} refused access with this API key (403): {_server_reason(exc)}")
        if isinstance(exc, o.NotFoundError):
            return LLMError(f"model {self.model!r} was not found at {self.where}{self._available_models()}")
        if isinstance(exc, o.RateLimitError):  # the call path sends fewer at once and tries again
            return RateLimited(f"rate limited by {self.where} (429) after {self.max_retries} retries")
        if isinstance(exc, o.APIStatusError) and exc.status_code >= 500:
            return RequestFailed(f"the server at {self.where} kept failing ({exc.status_code}) after "
                                 f"{self.max_retries} retries: {_short(exc)}", kind=f"server error {exc.status_code}",
                                 reason=f"server error ({exc.status_code}) after {self.max_retries} retries: "
                                        f"{_server_reason(exc)}")
        if isinstance(exc, o.APIStatusError) and 400 <= exc.status_code < 500 and \
                exc.status_code not in SETTING_STATUSES:
            reason = _server_reason(exc)
            return RequestRejected(f"the server at {self.where} refused a request ({exc.status_code}): {reason}",
                                   status=exc.status_code, reason=reason)
        if isinstance(exc, o.APIStatusError):
            return LLMError(f"the server at {self.where} answered {exc.status_code}: {_short(exc)}")
        return LLMError(f"request to {self.where} failed: {type(exc).__name__}")

    def _available_models(self) -> str:
        try:
            names = [m.id for m in self.client.models.list().data][:10]
        except Exception:
            return ""
        return f"; it serves: {', '.join(names)}" if names else ""

    def list_models(self) -> list[str]:
        try:
            return [m.id for m in self.client.models.list().data]
        except Exception as exc:
            raise self._explain(exc) from None

    def _modes_to_try(self) -> tuple[str, ...]:
        mode = self.effective_structured_mode
        return (mode,) if mode else (*AUTO_ORDER, FREE_TEXT)

    def _learn(self, mode: str) -> None:
        """Keep the first format the server accepted (``auto`` only)."""
        with self._mode_lock:
            if self.effective_structured_mode is None:
                self.effective_structured_mode = mode

    def _create(self, messages: list[Message], params: GenerationParams, n: int, seed: int) -> tuple[Any, str]:
        """One chat-completions call; returns the response (its JSON) and how its schema was sent ("" without one)."""
        schema = request_schema(params.json_schema)
        modes = self._modes_to_try() if schema else ("",)
        i = 0
        # While auto is learning, a format is tried without the client's retries: llama_cpp.server answers a
        # format it does not know with a 500, which would otherwise be retried with backoff. Any failure that
        # is not about the format is then sent again with the retries.
        probing = len(modes) > 1
        while True:
            mode = modes[i]
            kwargs: dict[str, Any] = dict(model=self.model, messages=messages, temperature=params.temperature,
                                          max_tokens=params.max_tokens, n=n, seed=seed)
            if params.stop:
                kwargs["stop"] = list(params.stop)
            if params.presence_penalty:
                kwargs["presence_penalty"] = params.presence_penalty
            if params.top_logprobs and self.supports_logprobs:
                kwargs.update(logprobs=True, top_logprobs=min(params.top_logprobs, 20))
            kwargs.update(structured_request(mode, schema))
            structured = mode not in ("", "off", FREE_TEXT)
            client = self.client.with_options(max_retries=0) if probing and structured else self.client
            try:
                raw = _post_chat(client, kwargs, self._response_class)
            except self._openai.APIStatusError as exc:
                text = str(exc).lower()
                status = exc.status_code
                refused = status in (400, 422) or (status >= 500 and structured and _about_structure(text))
                if not refused:
                    if probing and structured and (status >= 500 or status in (408, 409, 429)):
                        probing = False  # a transient failure while learning: the same request, with retries
                        continue
                    raise self._explain(exc) from None
                if "logprobs" in kwargs and "logprob" in text and not _about_structure(text):
                    self.supports_logprobs = False
                    continue
                if not structured:
                    raise self._explain(exc) from None
                if "invalid schema" in text:
                    # the server knows the format but not this schema: this request goes as free text
                    if self.structured == "auto":
                        self._learn(mode)
                    modes, i = (FREE_TEXT,), 0
                    continue
                if self.structured != "auto" or len(modes) == 1:
                    # a fixed mode, or the one auto has settled on: a refusal that is not about the format is
                    # about this request (its prompt over the context, its content), not a format to walk past
                    if not _about_structure(text):
                        raise self._explain(exc) from None
                    if self.structured == "auto":  # settled, yet refused for this request's schema: free text
                        modes, i = (FREE_TEXT,), 0
                        continue
                    raise LLMError(f"the server at {self.where} refused structured replies sent as {mode} "
                                   f"({STRUCTURED_HELP.get(mode, mode)}): {_short(exc)}. Choose another "
                                   "structured-reply mode in Settings (auto tries each format, then free text).") \
                        from None
                i += 1  # auto: the next format, free text last
                continue
            except self._openai.OpenAIError as exc:
                if probing and structured:
                    probing = False
                    continue
                raise self._explain(exc) from None
            try:
                out = json.loads(raw.content)
            except ValueError:
                raise RequestFailed(f"the server at {self.where} answered with something that is not JSON",
                                    kind="reply not JSON") from None
            if not isinstance(out, dict):
                raise RequestFailed(f"the server at {self.where} answered with JSON that is not a chat completion",
                                    kind="reply not a chat completion")
            if schema and (mode != FREE_TEXT or len(modes) > 1):  # a walk that ended in free text learns it too
                self._learn(mode)
            return out, mode

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        start = time.perf_counter()
        texts: list[str] = []
        logprobs: list[tuple[dict[str, Any], ...]] = []
        prompt_tokens = completion_tokens = 0
        seed = params.seed + params.sample_index * params.n
        mode = ""
        while len(texts) < params.n:  # some servers return fewer choices than asked: ask again
            out, mode = self._create(messages, params, params.n - len(texts), seed + len(texts))
            choices = out.get("choices")
            if not choices or not isinstance(choices, list):
                raise RequestFailed(f"the server at {self.where} returned no choices", kind="reply not a chat completion")
            for choice in choices:
                message = choice.get("message") or {}
                texts.append(message.get("content") or "")
                lp = choice.get("logprobs")
                logprobs.append(logprobs_from_openai(lp.get("content") if isinstance(lp, dict) else None))
            usage = out.get("usage") or {}
            prompt_tokens += usage.get("prompt_tokens") or 0
            completion_tokens += usage.get("completion_tokens") or 0
        texts, logprobs = texts[: params.n], logprobs[: params.n]
        has_lp = params.top_logprobs and any(logprobs)
        return Completion(texts=tuple(texts), logprobs=tuple(logprobs) if has_lp else (),
                          prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          latency_s=time.perf_counter() - start, model=self.model, structured_mode=mode)


CHAT_FIELDS = ("model", "messages", "logprobs", "max_tokens", "n", "presence_penalty", "response_format", "seed",
               "stop", "temperature", "top_logprobs")
"""The chat-completions fields the backend sends, in the order the client's typed ``chat.completions.create``
writes them: a request body is byte for byte the one a script using the client sends."""


def _post_chat(client: Any, kwargs: dict[str, Any], response_class: type) -> Any:
    """``POST /chat/completions`` through the client's own ``post`` (its retries, timeout, key and error classes),
    the reply the HTTP client's own response (``response_class``, which ``post`` returns as it is), read as JSON by
    the caller.

    Not ``chat.completions.create``: that walks the arguments against the SDK's typed parameters (``maybe_transform``)
    and then builds the typed response model, 0.6-0.7 ms of CPU a call against 1.6-1.7 ms for the whole request
    this way (600 calls one at a time to the bench stub, 2026-12-08, load 31): at hundreds of requests in flight the
    client's CPU is what limits a scoring job (issue 64 item 5). The fields are plain JSON, which that walk leaves
    as they are, so the body is the same."""
    unknown = set(kwargs) - {*CHAT_FIELDS, "extra_body"}
    if unknown:  # a field added to the request but not here would be dropped without a word
        raise ValueError(f"chat request fields not in CHAT_FIELDS: {', '.join(sorted(unknown))}")
    body = {name: kwargs[name] for name in CHAT_FIELDS if name in kwargs}
    options: dict[str, Any] = {"security": {"bearer_auth": True}}  # the key, as create sends it
    if "extra_body" in kwargs:
        options["extra_json"] = kwargs["extra_body"]
    return client.post("/chat/completions", body=body, options=options, cast_to=response_class)


def _response_class(http: Any) -> type:
    """The response class of the HTTP library under ``http`` (httpx, or httpx2 for newer openai releases)."""
    library = next(c for c in type(http).__mro__ if not c.__module__.startswith("openai")).__module__
    return sys.modules[library.partition(".")[0]].Response


def structured_request(mode: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The chat-completions arguments that carry ``schema`` in format ``mode`` (none for free text)."""
    if schema is None or mode in ("", "off", FREE_TEXT):
        return {}
    if mode == "json_schema":
        spec: dict[str, Any] = {"name": schema_name(schema), "schema": schema, "strict": strict_compatible(schema)}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    # the servers behind these two formats build a grammar from the schema (llama_cpp.server, vLLM): long
    # string bounds are left out of it, as in-process (llama_cpp.server died on a 1,200-character bound)
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": grammar_schema(schema)}}
    if mode == "guided_json":
        return {"extra_body": {"guided_json": grammar_schema(schema)}}
    raise LLMError(f"unknown structured-reply mode {mode!r}")


def strict_compatible(schema: Any) -> bool:
    """True when ``schema`` fits OpenAI's strict subset: closed objects, all properties required,
    only :data:`STRICT_KEYWORDS` (a schema that does not is sent with ``strict: false``)."""
    if isinstance(schema, list):
        return all(strict_compatible(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if any(k not in STRICT_KEYWORDS for k in schema):
        return False
    props = schema.get("properties")
    if isinstance(props, dict) or schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(props or {}):
            return False
        if not all(strict_compatible(v) for v in (props or {}).values()):
            return False
    for key in ("items", "anyOf", "$defs", "definitions"):
        sub = schema.get(key)
        if isinstance(sub, dict) and key in ("$defs", "definitions"):
            if not all(strict_compatible(v) for v in sub.values()):
                return False
        elif sub is not None and not strict_compatible(sub):
            return False
    return True


def _about_structure(text: str) -> bool:
    """Whether an error message is about how the reply's structure was requested."""
    return any(w in text for w in ("response_format", "json_schema", "json_object", "guided_json", "schema"))


def _short(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return text[:300]


def _server_reason(exc: Exception) -> str:
    """The server's own message in an error reply (OpenAI's ``{"error": {"message"}}``, vLLM's ``{"message"}``),
    else the client's text of the error."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else inner if isinstance(inner, str) else None
    return str(message)[:300] if message else _short(exc)

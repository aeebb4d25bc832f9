"""Any OpenAI-compatible server through the official ``openai`` client.

OpenAI itself, ``vllm serve``, ``python -m llama_cpp.server`` and Ollama all
speak this protocol. Timeouts and retries with exponential backoff on
connection errors, 429 and 5xx are the client's own. The key comes from the
environment or from the app's session and is never stored or printed.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .base import BackendUnavailable, Completion, GenerationParams, LLMError, Message, logprobs_from_openai


class OpenAIBackend:
    """Chat completions against ``base_url`` (empty = api.openai.com)."""

    name = "openai"

    def __init__(self, model: str, base_url: str = "", *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, max_retries: int = 3):
        try:
            import openai
        except ImportError as exc:  # pragma: no cover
            raise BackendUnavailable("the openai package is not installed: pip install -r requirements.txt") from exc
        if not model:
            raise LLMError("the openai backend needs a model name (e.g. gpt-4o-mini, or the name your server serves)")
        self._openai = openai
        key = api_key or os.environ.get(api_key_env) or ("not-needed" if base_url else None)
        if not key:
            raise LLMError(f"no API key: set {api_key_env} or type one in Settings (kept for this session only)")
        self.model = model
        self.base_url = base_url
        self.client = openai.OpenAI(api_key=key, base_url=base_url or None, timeout=timeout, max_retries=max_retries)
        self.model_id = f"{base_url or 'openai'}|{model}"
        self.supports_logprobs = True  # set to False the first time a server refuses logprobs

    @property
    def where(self) -> str:
        return self.base_url or "api.openai.com"

    def _explain(self, exc: Exception) -> LLMError:
        o = self._openai
        if isinstance(exc, o.APITimeoutError):
            return BackendUnavailable(f"the LLM server at {self.where} did not answer in time (timeout)")
        if isinstance(exc, o.APIConnectionError):
            return BackendUnavailable(f"cannot reach the LLM server at {self.where}: is it running?")
        if isinstance(exc, o.AuthenticationError):
            return LLMError(f"the server at {self.where} rejected the API key (401)")
        if isinstance(exc, o.NotFoundError):
            return LLMError(f"model {self.model!r} was not found at {self.where}{self._available_models()}")
        if isinstance(exc, o.RateLimitError):  # transient: the run pauses and can be resumed
            return BackendUnavailable(f"rate limited by {self.where} (429) after retries; "
                                      "try a lower concurrency, then resume")
        if isinstance(exc, o.APIStatusError) and exc.status_code >= 500:
            return BackendUnavailable(f"the server at {self.where} kept failing ({exc.status_code}) after "
                                      f"retries: {_short(exc)}")
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

    def _create(self, messages: list[Message], params: GenerationParams, n: int, seed: int) -> Any:
        kwargs: dict[str, Any] = dict(model=self.model, messages=messages, temperature=params.temperature,
                                      max_tokens=params.max_tokens, n=n, seed=seed)
        if params.stop:
            kwargs["stop"] = list(params.stop)
        if params.top_logprobs and self.supports_logprobs:
            kwargs.update(logprobs=True, top_logprobs=min(params.top_logprobs, 20))
        try:
            return self.client.chat.completions.create(**kwargs)
        except self._openai.BadRequestError as exc:
            if "logprobs" in kwargs and "logprob" in str(exc).lower():
                self.supports_logprobs = False
                return self._create(messages, params, n, seed)
            raise self._explain(exc) from None
        except self._openai.OpenAIError as exc:
            raise self._explain(exc) from None

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        start = time.perf_counter()
        texts: list[str] = []
        logprobs: list[tuple[dict[str, Any], ...]] = []
        prompt_tokens = completion_tokens = 0
        seed = params.seed + params.sample_index * params.n
        while len(texts) < params.n:  # some servers return fewer choices than asked: ask again
            out = self._create(messages, params, params.n - len(texts), seed + len(texts))
            if not out.choices:
                raise LLMError(f"the server at {self.where} returned no choices")
            for choice in out.choices:
                texts.append(choice.message.content or "")
                lp = getattr(choice, "logprobs", None)
                logprobs.append(logprobs_from_openai(getattr(lp, "content", None) if lp else None))
            if out.usage:
                prompt_tokens += out.usage.prompt_tokens or 0
                completion_tokens += out.usage.completion_tokens or 0
        texts, logprobs = texts[: params.n], logprobs[: params.n]
        has_lp = params.top_logprobs and any(logprobs)
        return Completion(texts=tuple(texts), logprobs=tuple(logprobs) if has_lp else (),
                          prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          latency_s=time.perf_counter() - start, model=self.model)


def _short(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    return text[:300]

"""A scripted backend for unit tests only; never offered by the app or a benchmark."""

from __future__ import annotations

import math
from typing import Any

from .base import Completion, GenerationParams, Message, Responder


class FakeBackend:
    """Answers with ``responder(messages, params)``; counts the calls it receives.

    ``logprobs`` may map a reply text to a ``{token: probability}`` dict used as
    the top alternatives of the first token.
    """

    name = "fake"

    def __init__(self, responder: Responder, *, model_id: str = "fake", logprobs: bool = False):
        self.responder = responder
        self.model_id = model_id
        self.supports_logprobs = logprobs
        self.calls: list[tuple[list[Message], GenerationParams]] = []

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        self.calls.append((messages, params))
        texts = tuple(self.responder(messages, params.with_(sample_index=params.sample_index * params.n + i))
                      for i in range(params.n))
        logprobs: tuple[Any, ...] = ()
        if self.supports_logprobs and params.top_logprobs:
            logprobs = tuple(_first_token_logprobs(t) for t in texts)
        return Completion(texts=texts, logprobs=logprobs, prompt_tokens=sum(len(m["content"]) // 4 for m in messages),
                          completion_tokens=sum(len(t) // 4 for t in texts), latency_s=0.001, model=self.model_id)


def _first_token_logprobs(text: str) -> tuple[dict[str, Any], ...]:
    """A distribution that puts 70% on the reply's first character and 10% on its neighbours."""
    first = text.strip()[:1] or " "
    top = {first: math.log(0.7)}
    if first.isdigit():
        for d in (int(first) - 1, int(first) + 1):
            if 1 <= d <= 9:
                top[str(d)] = math.log(0.1)
    return ({"token": first, "logprob": math.log(0.7), "top": top},)

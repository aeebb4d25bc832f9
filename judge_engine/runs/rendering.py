"""The prompts a fit or a judge would send, rendered on real items without calling a model (issue 46).

An estimate of tokens before the first run of a method guessed them from the item's length, which missed
what a method puts around its items (HPSS's paper defaults show ten examples in every judge prompt: 3x
low). Here the method itself builds its requests: its fit, or a fitted judge's scoring, runs through the
one LLM path against :class:`Recorder`, a backend that keeps the size of every request and answers each
with an empty reply. An empty reply is what a model that says nothing sends, so the method takes its
ordinary path for an unread reply (its follow-up turn, its missing score); nothing it returns is kept, only
the sizes of what it sent. No cache is read or written and no ledger is kept beyond the one made here.

A fit that needs what the model says (HypoEval's hypotheses, Active-Critic's explanations) stops or
shrinks early against empty replies, so its rendering is only a part of its requests; the caller reads
:attr:`Rendered.requests` against the method's own count and says which it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..llm import LLM, LLMConfig
from ..llm.base import Completion, GenerationParams, Message

RENDER_CAP = 4000
"""Requests recorded at most: a fit rendered past this stops (HPSS's paper defaults send about 3,000)."""

CHARS_PER_TOKEN = 4.0
"""Characters of English text per token in the tokenizers of GPT-4o, Llama 3 and SmolLM2, roughly."""

PER_MESSAGE_TOKENS = 4
"""Tokens a chat template adds around each message (role markers), about."""


class _Enough(Exception):
    """Raised by :class:`Recorder` once :data:`RENDER_CAP` requests are recorded."""


class Recorder:
    """A backend of the one LLM path that records each request's size and answers nothing (empty replies).

    Only for rendering prompts: its replies are never read as scores (:func:`render` keeps the sizes alone).
    """

    name = "render"
    model_id = "render"
    supports_logprobs = False

    def __init__(self, cap: int = RENDER_CAP):
        self.cap = cap
        self.prompt_tokens: list[float] = []
        self.max_tokens: list[int] = []

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        if len(self.prompt_tokens) >= self.cap:
            raise _Enough()
        self.prompt_tokens.append(sum(len(m["content"]) / CHARS_PER_TOKEN + PER_MESSAGE_TOKENS for m in messages))
        self.max_tokens.append(params.max_tokens * params.n)
        return Completion(texts=("",) * params.n, logprobs=(), prompt_tokens=0, completion_tokens=0, latency_s=0.0,
                          model=self.model_id)


@dataclass(frozen=True)
class Rendered:
    """What a fit or a scoring sent when every reply was empty."""

    requests: int
    """Requests recorded (each follow-up turn one more)."""
    prompt_tokens: float
    """Their prompt tokens, summed (characters over :data:`CHARS_PER_TOKEN`)."""
    finished: bool
    """False when the method stopped early (an error for want of a reply, or :data:`RENDER_CAP`)."""
    max_tokens: int = 0
    """Their reply lengths allowed (``max_tokens`` x draws), summed: what their replies cannot exceed."""
    judge: Any = None
    """What ``work`` returned when it finished (a fit's judge, whose scoring can be rendered next)."""

    @property
    def per_request(self) -> float:
        return self.prompt_tokens / self.requests if self.requests else 0.0

    def completion_per_request(self, typical: float) -> float:
        """``typical`` reply tokens, or fewer where the requests allow fewer."""
        return min(typical, self.max_tokens / self.requests) if self.requests else typical


def render(work: Callable[[LLM], Any], config: LLMConfig | None = None, *, cap: int = RENDER_CAP) -> Rendered:
    """Run ``work(llm)`` against a :class:`Recorder` and return the sizes of what it sent.

    ``config`` sets what the method reads from the backend's settings (its concurrency, structured replies);
    the requests go to the recorder whatever its backend. Any error the method raises for want of an answer
    ends the rendering (it is the method's reaction to silence, not a fault of the estimate).
    """
    recorder = Recorder(cap)
    result = None
    try:
        result = work(LLM(config or LLMConfig(backend="openai"), recorder))
        finished = True
    except Exception:  # a method may refuse to go on without replies: what it sent so far counts
        finished = False
    return Rendered(requests=len(recorder.prompt_tokens), prompt_tokens=sum(recorder.prompt_tokens),
                    finished=finished, max_tokens=sum(recorder.max_tokens), judge=result)


def render_scoring(judge: Any, samples: Sequence[Any], config: LLMConfig | None = None) -> Rendered:
    """The requests ``judge`` sends to score ``samples`` (a few of the items to score), rendered."""
    return render(lambda llm: judge.score(list(samples), llm=llm), config)


def render_fit(method: Any, train: Sequence[Any], aspect: Any, dataset: Any, config: LLMConfig | None = None,
               *, cap: int = RENDER_CAP) -> Rendered:
    """The requests ``method``'s fit sends on ``train`` (the dataset's first training-sized items), rendered."""
    from ..methods import FitContext

    return render(lambda llm: method.fit(list(train), aspect, FitContext.of(dataset, llm=llm)), config, cap=cap)

"""The prompts a fit or a judge would send, rendered on real items without calling a model (issue 46).

An estimate of tokens before the first run of a method guessed them from the item's length, which missed
what a method puts around its items (HPSS's paper defaults show ten examples in every judge prompt: 3x
low). Here the method itself builds its requests: its fit, or a fitted judge's scoring, runs through the
one LLM path against :class:`Recorder`, a backend that keeps the size of every request and answers a request
for JSON with a reply of its schema's shape and no meaning (:mod:`.schema_replies`), and free text with an
empty reply. The method takes the path its runs take (no follow-up turn after a reply that parses); nothing
it returns is kept, only the sizes of what it sent, so its requests are also the count a run makes.
No cache is read or written and no ledger is kept beyond the one made here.

A fit whose choice needs replies that agree with the humans (HypoEval's hypotheses) stops there against
these, and one asked for free text gets nothing to read, so its rendering may be only a part of its
requests; the caller reads :attr:`Rendered.finished` and :attr:`Rendered.requests` against the method's own
count and says which it used.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .. import rubric_model_check
from ..llm import LLM, LLMConfig
from ..llm.base import Completion, GenerationParams, Message
from .reply_lengths import reply_shape
from .schema_replies import reply_value

RENDER_CAP = 4000
"""Requests recorded at most: a fit rendered past this stops (HPSS's paper defaults send about 3,000)."""

CHARS_PER_TOKEN = 4.0
"""Characters of English text per token in the tokenizers of GPT-4o, Llama 3 and SmolLM2, roughly."""

PER_MESSAGE_TOKENS = 4
"""Tokens a chat template adds around each message (role markers), about."""


KEPT_PREFIXES = 16
"""Earlier prompts whose prefix a new prompt is taken to reuse, at most: about what the embedded backend keeps
of 1,000-token prompts in its KV states (:class:`~judge_engine.llm.llamacpp.PrefixStates`, 512 MB, about
22,000 tokens of SmolLM2)."""


SCORE_REPLY_TOKENS = 8
"""Tokens of a reply whose schema holds no text, only numbers, choices or booleans: ``{"score": 4}`` is 7 in
SmolLM2's tokenizer (a direct judge on SummEval: 105 completion tokens over 15 requests, 2026-11-29)."""


def score_only(json_schema: str) -> bool:
    """Whether a request's reply schema leaves no room for text: every property a number, a choice or a flag."""
    try:
        schema = json.loads(json_schema)
    except ValueError:
        return False
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not properties:
        return False
    return all(isinstance(p, dict) and ("enum" in p or p.get("type") in ("integer", "number", "boolean"))
               for p in properties.values())


class _Enough(Exception):
    """Raised by :class:`Recorder` once :data:`RENDER_CAP` requests are recorded."""


@dataclass(frozen=True)
class RenderedRequest:
    """One request a method sent to the :class:`Recorder`, by its size."""

    prompt_tokens: float
    """Its messages' characters over :data:`CHARS_PER_TOKEN`, plus :data:`PER_MESSAGE_TOKENS` each."""
    new_tokens: float
    """Its prompt tokens after the longest prefix it shares with one of the :data:`KEPT_PREFIXES` prompts before
    it: what a model that keeps earlier prompts' states evaluates (the embedded backend)."""
    max_tokens: int
    """Its reply length allowed (``max_tokens`` x draws)."""
    score_reply_tokens: float | None
    """:data:`SCORE_REPLY_TOKENS` x draws when its schema leaves room for a score only (:func:`score_only`), else
    None (a reply that can hold text)."""
    follow_up: bool
    """Whether it follows a reply of the model in the same conversation (a follow-up turn)."""


class Recorder:
    """A backend of the one LLM path that records each request's size and answers it in the shape it asks for
    with no meaning (:func:`~.schema_replies.reply_value`; free text: an empty reply).

    Only for rendering prompts: its replies are never read as scores (:func:`render` keeps the sizes alone).
    """

    name = "render"
    model_id = "render"
    supports_logprobs = False

    def __init__(self, cap: int = RENDER_CAP, salt: str = "", stands_for: str = "",
                 shape: tuple[float | None, float | None] = (None, None)):
        self.cap = cap
        # the characters of a text field and the fill of a list the method's replies were measured to have
        # (:func:`~.reply_lengths.reply_shape`): its later prompts quote those replies at their length
        self.text_chars, self.list_fill = shape
        self.salt = salt  # another salt, other replies to the same prompts
        # the backend the rendering stands for: whether the judge's own model checks generated text there
        # (:func:`judge_engine.rubric_model_check.runs_on`), so its requests are rendered where a run sends them
        self.stands_for = stands_for
        self.sent: list[RenderedRequest] = []
        self._recent: list[str] = []  # the last KEPT_PREFIXES prompts, sorted, for their shared prefixes
        self._order: list[str] = []

    def _new_chars(self, text: str) -> int:
        """Characters of ``text`` after its longest common prefix with one of the recent prompts: what a model
        that keeps those prompts' states evaluates (in sorted order the longest shares its neighbours')."""
        at = bisect.bisect_left(self._recent, text)
        shared = max((len(os.path.commonprefix([text, self._recent[i]]))
                      for i in (at - 1, at) if 0 <= i < len(self._recent)), default=0)
        bisect.insort(self._recent, text)
        self._order.append(text)
        if len(self._order) > KEPT_PREFIXES:
            self._recent.pop(bisect.bisect_left(self._recent, self._order.pop(0)))
        return len(text) - shared

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        if len(self.sent) >= self.cap:
            raise _Enough()
        prompt = sum(len(m["content"]) / CHARS_PER_TOKEN + PER_MESSAGE_TOKENS for m in messages)
        text = "".join(f"\x00{m['role']}\x00{m['content']}" for m in messages)
        short = params.json_schema and score_only(params.json_schema)
        self.sent.append(RenderedRequest(
            prompt_tokens=prompt,
            new_tokens=min(prompt, self._new_chars(text) / CHARS_PER_TOKEN + PER_MESSAGE_TOKENS),
            max_tokens=params.max_tokens * params.n,
            score_reply_tokens=min(SCORE_REPLY_TOKENS, params.max_tokens) * params.n if short else None,
            follow_up=any(m["role"] == "assistant" for m in messages)))
        texts = ("",) * params.n
        if params.json_schema:  # the same prompt gets the same reply, as from a greedy model
            schema, digest = json.loads(params.json_schema), hashlib.sha256(text.encode()).hexdigest()
            texts = tuple(json.dumps(reply_value(schema, f"{self.salt}{digest}#{params.sample_index + i}",
                                                     text_chars=self.text_chars, list_fill=self.list_fill))
                          for i in range(params.n))
            if schema.get("title") == rubric_model_check.TITLE:  # drawn yes/no answers would refuse real entries
                texts = (rubric_model_check.passing_reply(),) * params.n
        return Completion(texts=texts, logprobs=(), prompt_tokens=0, completion_tokens=0, latency_s=0.0,
                          model=self.model_id)


@dataclass(frozen=True)
class Rendered:
    """What a fit or a scoring sent to the :class:`Recorder`."""

    sent: tuple[RenderedRequest, ...]
    """Each request, in the order sent (each follow-up turn one more)."""
    finished: bool
    """False when the method stopped early (an error for want of a reply, or :data:`RENDER_CAP`)."""
    judge: Any = None
    """What ``work`` returned when it finished (a fit's judge, whose scoring can be rendered next)."""

    @property
    def requests(self) -> int:
        return len(self.sent)

    @property
    def prompt_tokens(self) -> float:
        return sum(r.prompt_tokens for r in self.sent)

    @property
    def per_request(self) -> float:
        return self.prompt_tokens / self.requests if self.requests else 0.0

    @property
    def new_share(self) -> float:
        """The share of the prompt tokens a model that keeps earlier prompts' states evaluates (1: none shared)."""
        prompt = self.prompt_tokens
        return sum(r.new_tokens for r in self.sent) / prompt if prompt else 1.0

    def completion_per_request(self, typical: float, *, bound_share: float | None = None) -> float:
        """``typical`` reply tokens, or fewer where the requests allow fewer; a reply that can hold only a score
        counts :data:`SCORE_REPLY_TOKENS`. ``bound_share``: a reply that can hold text is instead that share of
        what its own request allows, for a model that writes toward the bounds it is given (the embedded
        model: :data:`~judge_engine.runs.estimates.EMBEDDED_REPLY_SHARE`)."""
        if not self.sent:
            return typical
        if bound_share is not None:
            # over first turns only: a follow-up turn asks again for a score an empty reply did not give, which
            # a model that writes its reply seldom needs, so its short reply does not stand for the others
            firsts = [bound_share * r.max_tokens if r.score_reply_tokens is None else r.score_reply_tokens
                      for r in self.sent if not r.follow_up]
            if firsts:
                return sum(firsts) / len(firsts)
        text_reply = min(typical, sum(r.max_tokens for r in self.sent) / self.requests)
        return sum(text_reply if r.score_reply_tokens is None else r.score_reply_tokens
                   for r in self.sent) / self.requests


def render(work: Callable[[LLM], Any], config: LLMConfig | None = None, *, cap: int = RENDER_CAP,
           salt: str = "", method: str = "") -> Rendered:
    """Run ``work(llm)`` against a :class:`Recorder` and return the sizes of what it sent.

    ``config`` sets what the method reads from the backend's settings (its concurrency, structured replies);
    the requests go to the recorder whatever its backend. Any error the method raises for want of an answer
    ends the rendering (it is the method's reaction to silence, not a fault of the estimate). ``method``: whose
    replies' measured shape (:func:`~.reply_lengths.reply_shape`) the recorder writes on a server.
    """
    config = config or LLMConfig(backend="openai")
    shape = (None, None) if config.embedded else reply_shape(method)
    recorder = Recorder(cap, salt, stands_for=config.backend, shape=shape)
    result = None
    try:
        result = work(LLM(config, recorder))
        finished = True
    except Exception:  # a method may refuse to go on without replies: what it sent so far counts
        finished = False
    return Rendered(tuple(recorder.sent), finished=finished, judge=result)


def render_scoring(judge: Any, samples: Sequence[Any], config: LLMConfig | None = None) -> Rendered:
    """The requests ``judge`` sends to score ``samples`` (a few of the items to score), rendered."""
    return render(lambda llm: judge.score(list(samples), llm=llm), config, method=getattr(judge, "method", ""))


FIT_ATTEMPTS = 3
"""Renderings of a fit, each with other replies, until one reaches a judge. Replies of no meaning agree with the
humans by chance, and a fit that finds no candidate agreeing stops at its choice (Active-Critic with two
candidate sets on 4 SummEval items did, with the first replies); its calls were all made, but the judge's
scoring, and so the run's count, is not known without a judge."""


def render_fit(method: Any, train: Sequence[Any], aspect: Any, dataset: Any, config: LLMConfig | None = None,
               *, cap: int = RENDER_CAP) -> Rendered:
    """The requests ``method``'s fit sends on ``train`` (the split's training items), rendered: the first of
    :data:`FIT_ATTEMPTS` renderings that reaches a judge, else the last."""
    from ..methods import FitContext

    for attempt in range(FIT_ATTEMPTS):
        rendered = render(lambda llm: method.fit(list(train), aspect, FitContext.of(dataset, llm=llm)), config,
                          cap=cap, salt=f"{attempt}:" if attempt else "", method=getattr(method, "name", ""))
        if rendered.finished or rendered.requests >= cap:
            break
    return rendered

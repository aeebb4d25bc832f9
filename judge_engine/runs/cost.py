"""What a run is expected to cost before its first call, and what it cost against that (issue 46 item 5).

Tokens per request are :mod:`.request_tokens`' (the store's earlier runs of the method, else its own prompts
rendered, else rough); ``score`` is estimated the same way from the judge's own scoring requests on the file's
first items (:func:`expected_scoring`). Requests are the method's own count
(:func:`judge_engine.runs.estimate_duration`, an upper bound) at the share of it the run is expected to send
(:func:`.request_tokens.made_share`: as rendered, else as measured for the method), before cache hits.
Prices are the run's own (``LLMConfig.price_prompt_per_1k`` and ``price_completion_per_1k``).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..llm import LLMConfig
from ..llm.client import LedgerTotals
from ..records import Dataset, RunEstimate, Sample
from ..store import Store
from . import rendering
from .counts import drawn_sizes
from .duration import Duration
from .estimates import estimate_duration, scoring_duration
from .request_tokens import (ROUGH_COMPLETION_TOKENS, made_share, reply_share, request_tokens,
                             tokens_per_request)
from .spec import RunSpec, ensure_dataset


def price(llm: LLMConfig, prompt_tokens: float, completion_tokens: float) -> float:
    """Dollars for these tokens at ``llm``'s prices per 1,000."""
    return (prompt_tokens * llm.price_prompt_per_1k + completion_tokens * llm.price_completion_per_1k) / 1000.0


def expected(store: Store, spec: RunSpec, *, duration: Duration | None = None,
             dataset: Dataset | None = None) -> RunEstimate:
    """Requests, tokens, dollars and minutes ``spec`` will take before any cache hit.

    ``duration``: :func:`estimate_duration` of ``spec`` when the caller already has it; ``dataset``: ``spec``'s
    when the caller holds it (it is loaded once per start).
    """
    if duration is None or dataset is None:
        dataset = dataset or ensure_dataset(store, spec.dataset)
        duration = duration or estimate_duration(store, spec, dataset=dataset)
    per_prompt, per_completion, basis = request_tokens(store, dataset, spec, duration)
    # the requests it will send: its count (an upper bound) at the share its fit makes, tokens at theirs
    share, _ = made_share(dataset, drawn_sizes(dataset, spec), {"fit": duration.fit_calls,
                                                                 "score": duration.score_calls})
    calls = round(share * duration.calls)
    prompt, completion = round(calls * per_prompt), round(calls * per_completion)
    return RunEstimate(calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                       dollars=round(price(spec.llm, prompt, completion), 6),
                       seconds=None if duration.minutes is None else round(duration.minutes * 60.0, 1),
                       basis=basis if duration.minutes is None else f"{basis}; time: {duration.basis}")


RENDERED_ITEMS = 4
"""Items of the file whose scoring requests are rendered for ``score``'s estimate (the judge's prompts differ
by item only in the item's text)."""

def expected_scoring(store: Store, judge: Any, llm: LLMConfig, first: Sequence[Sample], n_items: int) -> RunEstimate:
    """Requests, tokens, dollars and seconds scoring ``n_items`` items with ``judge`` on ``llm`` will take
    before any cache hit, from its requests rendered on ``first`` (the file's first items).

    Requests per item are the rendered ones (a follow-up turn only where the judge always sends one: the
    rendering's replies parse); completion tokens per request are those of the store's earlier runs of the judge's
    method, else about :data:`ROUGH_COMPLETION_TOKENS`. The time is :func:`.estimates.scoring_duration`.
    """
    rendered = rendering.render_scoring(judge, first[:RENDERED_ITEMS], llm)
    shown = max(1, min(len(first), RENDERED_ITEMS))
    calls = round(rendered.requests / shown * n_items)
    measured = tokens_per_request(store, judge.method)
    per_completion = (measured[1] if measured else
                      rendered.completion_per_request(ROUGH_COMPLETION_TOKENS, bound_share=reply_share(llm)))
    prompt, completion = round(calls * rendered.per_request), round(calls * per_completion)
    duration = scoring_duration(store, llm, calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                                waves=_method_waves(judge), new_share=rendered.new_share)
    basis = (f"the judge's own requests rendered on {shown} of the items (no model called), replies that parse; "
             f"completion tokens {'of earlier runs of this method' if measured else 'rough'}")
    return RunEstimate(calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                       dollars=round(price(llm, prompt, completion), 6),
                       seconds=None if duration.minutes is None else round(duration.minutes * 60.0, 1),
                       basis=f"{basis}; time: {duration.basis}")


def _method_waves(judge: Any) -> int:
    from ..methods import get_method

    try:
        return int(get_method(judge.method, dict(judge.params)).estimate_waves(0, 1)["score"])
    except (ValueError, TypeError, KeyError):  # a judge's params from an older version: scoring is one wave
        return 1


def tokens(n: float) -> str:
    """``6.29M``, ``81k`` or ``950``."""
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    return f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n:,.0f}"


def dollars(x: float) -> str:
    return f"${x:,.2f}" if x >= 1 or x == 0 else f"${x:.4f}"


def price_per_1k(x: float) -> str:
    """A price as typed, every digit kept (``$0.00015``, ``$2.00``): rounded, a user cannot read back what they
    set, and two prices a tenth apart print alike."""
    if x >= 1 or x == 0:
        return f"${x:,.2f}"
    return "$" + f"{x:.12f}".rstrip("0")


def describe(estimate: RunEstimate, llm: LLMConfig) -> str:
    """E.g. ``2,223 requests, 6.29M prompt and 220k completion tokens: $0.98 at $0.15 / $0.60 per 1k``."""
    head = (f"{estimate.calls:,} requests, {tokens(estimate.prompt_tokens)} prompt and "
            f"{tokens(estimate.completion_tokens)} completion tokens")
    if not (llm.price_prompt_per_1k or llm.price_completion_per_1k):
        return f"{head}: no price set (--price-prompt / --price-completion, or Settings)"
    return (f"{head}: {dollars(estimate.dollars)} at {price_per_1k(llm.price_prompt_per_1k)} prompt / "
            f"{price_per_1k(llm.price_completion_per_1k)} completion per 1k tokens")


def against(ledger: LedgerTotals, estimate: RunEstimate | None, *, wall: float | None = None) -> str:
    """What a run cost, and beside it what was expected: ``2,100 requests (2,223 expected), ...``; with ``wall``
    (seconds it took) also the time against the estimate's."""
    def part(actual: str, wanted: str | None) -> str:
        return actual if wanted is None else f"{actual} ({wanted} expected)"

    e = estimate
    took = [] if wall is None else [part(f"{wall:.1f} s", None if e is None or e.seconds is None
                                         else f"{e.seconds:.1f} s")]
    return ", ".join([
        part(f"{ledger.calls:,} requests", None if e is None else f"{e.calls:,}"),
        part(f"{tokens(ledger.prompt_tokens)} prompt tokens", None if e is None else tokens(e.prompt_tokens)),
        part(f"{tokens(ledger.completion_tokens)} completion tokens",
             None if e is None else tokens(e.completion_tokens)),
        part(dollars(ledger.dollars), None if e is None else dollars(e.dollars)),
    ] + took)

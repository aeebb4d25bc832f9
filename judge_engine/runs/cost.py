"""What a run is expected to cost before its first call, and what it cost against that (issue 46 item 5).

Tokens per request come from the store's earlier runs of the same method (their ledgers: tokens over the
requests actually sent); with none, from the item's length at about four characters a token plus the
method's instructions, which is rough and says so. Requests are the method's own count
(:func:`judge_engine.runs.estimate_duration`), an upper bound before cache hits, so the tokens and dollars
are too. Prices are the run's own (``LLMConfig.price_prompt_per_1k`` and ``price_completion_per_1k``).
"""

from __future__ import annotations

from ..llm import LLMConfig
from ..llm.client import LedgerTotals
from ..records import Dataset, RunEstimate
from ..store import Store
from .estimates import MIN_CALLS_FOR_TIMING, Duration, estimate_duration, judged_item_chars
from .spec import RunSpec, ensure_dataset

CHARS_PER_TOKEN = 4.0
"""Characters of English text per token in the tokenizers of GPT-4o, Llama 3 and SmolLM2, roughly."""

ROUGH_INSTRUCTION_CHARS = 1500.0
"""Characters of a request around its item (task, aspect definition, rubric or criteria, reply format) when
no earlier run measured the method: the shorter prompts of direct scoring and G-Eval are 1,000-2,000."""

ROUGH_COMPLETION_TOKENS = 100.0
"""Tokens of a reply when no earlier run measured the method: a score with a short reason."""


def price(llm: LLMConfig, prompt_tokens: float, completion_tokens: float) -> float:
    """Dollars for these tokens at ``llm``'s prices per 1,000."""
    return (prompt_tokens * llm.price_prompt_per_1k + completion_tokens * llm.price_completion_per_1k) / 1000.0


def tokens_per_request(store: Store, method: str, limit: int = 500) -> tuple[float, float, str] | None:
    """Prompt and completion tokens per request sent, from the store's runs of ``method`` on any backend that
    sent enough requests (tokenizers differ by about 10-20%); None when there are none."""
    calls = prompt = completion = 0
    for run in store.runs(limit=limit):
        if run.method == method and run.ledger.calls and run.ledger.prompt_tokens:
            calls += run.ledger.calls
            prompt += run.ledger.prompt_tokens
            completion += run.ledger.completion_tokens
    if calls < MIN_CALLS_FOR_TIMING:
        return None
    return prompt / calls, completion / calls, f"tokens per request of {calls:,} earlier requests of this method"


def expected(store: Store, spec: RunSpec, *, duration: Duration | None = None,
             dataset: Dataset | None = None) -> RunEstimate:
    """Requests, tokens, dollars and minutes ``spec`` will take before any cache hit.

    ``duration``: :func:`estimate_duration` of ``spec`` when the caller already has it; ``dataset``: ``spec``'s
    when the caller holds it (it is loaded once per start).
    """
    if duration is None or dataset is None:
        dataset = dataset or ensure_dataset(store, spec.dataset)
        duration = duration or estimate_duration(store, spec, dataset=dataset)
    measured = tokens_per_request(store, spec.method)
    if measured is None:
        chars = judged_item_chars(dataset, spec) + ROUGH_INSTRUCTION_CHARS
        measured = (chars / CHARS_PER_TOKEN, ROUGH_COMPLETION_TOKENS,
                    "rough: no earlier run of this method, so the item's length at about 4 characters a token "
                    "plus the instructions; the first run measures it")
    per_prompt, per_completion, basis = measured
    prompt, completion = round(duration.calls * per_prompt), round(duration.calls * per_completion)
    return RunEstimate(calls=duration.calls, prompt_tokens=prompt, completion_tokens=completion,
                       dollars=round(price(spec.llm, prompt, completion), 6),
                       seconds=None if duration.minutes is None else round(duration.minutes * 60.0, 1), basis=basis)


def tokens(n: float) -> str:
    """``6.29M``, ``81k`` or ``950``."""
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    return f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n:,.0f}"


def dollars(x: float) -> str:
    return f"${x:,.2f}" if x >= 1 or x == 0 else f"${x:.4f}"


def describe(estimate: RunEstimate, llm: LLMConfig) -> str:
    """E.g. ``2,223 requests, 6.29M prompt and 220k completion tokens: $0.98 at $0.15 / $0.60 per 1k``."""
    head = (f"{estimate.calls:,} requests, {tokens(estimate.prompt_tokens)} prompt and "
            f"{tokens(estimate.completion_tokens)} completion tokens")
    if not (llm.price_prompt_per_1k or llm.price_completion_per_1k):
        return f"{head}: no price set (--price-prompt / --price-completion, or Settings)"
    return (f"{head}: {dollars(estimate.dollars)} at {dollars(llm.price_prompt_per_1k)} prompt / "
            f"{dollars(llm.price_completion_per_1k)} completion per 1k tokens")


def against(ledger: LedgerTotals, estimate: RunEstimate | None) -> str:
    """What a run cost, and beside it what was expected: ``2,100 requests (2,223 expected), ...``."""
    def part(actual: str, wanted: str | None) -> str:
        return actual if wanted is None else f"{actual} ({wanted} expected)"

    e = estimate
    return ", ".join([
        part(f"{ledger.calls:,} requests", None if e is None else f"{e.calls:,}"),
        part(f"{tokens(ledger.prompt_tokens)} prompt tokens", None if e is None else tokens(e.prompt_tokens)),
        part(f"{tokens(ledger.completion_tokens)} completion tokens",
             None if e is None else tokens(e.completion_tokens)),
        part(dollars(ledger.dollars), None if e is None else dollars(e.dollars)),
    ])

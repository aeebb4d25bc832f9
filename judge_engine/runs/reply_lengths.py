"""Reply tokens per request each method's runs were measured to get from a server, for a first estimate.

A rendering (:mod:`.rendering`) knows a reply's bound but not its length: a score-only schema is counted at
:data:`~.rendering.SCORE_REPLY_TOKENS`, and a reply that can hold text was counted at a rough 100 tokens, which
put HPSS's completion tokens at 2.95x and HypoEval's at 3.63x what their runs took, Active-Critic's at 0.75x.
These are what whole runs took, over all their requests (fit and scoring together), so a first run on a server
is estimated at its method's measured reply length; once the store holds runs of the method, their own tokens
per request are used instead (:func:`~.cost.tokens_per_request`).

Measured 2026-12-07 23:43-23:55 UTC (``python -m judge_engine.bench estimate-waves --never-seen --n-train 30
--n-test 20``, load 25-42): the OpenAI-compatible stub server (:mod:`judge_engine.bench.stub_server`) answering
SummEval coherence as a judge that follows the humans in each request's JSON schema, its usage counted by the
stub's stand-in tokenizer; the methods at estimate-waves' parameters (HD-Eval's ``lr`` aggregator, HPSS budget 4,
HypoEval's quick look). A real model writes longer reasons than the stub's short sentences: measure again
against one when it is at hand.
"""

from __future__ import annotations

COMPLETION_TOKENS_PER_REQUEST = {
    "direct": 7.0,        # 24 requests, {"score": k}
    "geval": 9.5,         # 25
    "hd_eval": 9.2,       # 1,378: criteria scores; its decompositions are few
    "hpss": 33.9,         # 836: explanations with scores, generated criteria and references
    "hypoeval": 52.2,     # 322: hypotheses and per-hypothesis reasons
    "active_critic": 134.0,  # 677: criteria, critiques with their scores
}
"""Completion tokens per request of each method's whole run on the stub server (see the module docstring)."""


def measured_completion(method: str) -> float | None:
    """:data:`COMPLETION_TOKENS_PER_REQUEST` of ``method``; None for a method not measured."""
    return COMPLETION_TOKENS_PER_REQUEST.get(method)

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
    "hypoeval": 43.1,     # 626: hypotheses and per-hypothesis reasons (52.2 over 322 while the stub called
                          # every pair of hypotheses a repetition, which left one to score; 2026-12-08 02:33 UTC)
    "active_critic": 134.0,  # 677: criteria, critiques with their scores
}
"""Completion tokens per request of each method's whole run on the stub server (see the module docstring)."""


def measured_completion(method: str) -> float | None:
    """:data:`COMPLETION_TOKENS_PER_REQUEST` of ``method``; None for a method not measured."""
    return COMPLETION_TOKENS_PER_REQUEST.get(method)


TEXT_CHARS_PER_FIELD: dict[str, float] = {
    "geval": 74.7,          # 3 fields: its evaluation steps
    "hd_eval": 68.2,        # 84: sub-criteria names and definitions
    "hpss": 77.2,           # 870: criteria, references, questions, explanations
    "hypoeval": 70.7,       # 446: hypotheses, reasons
    "active_critic": 77.8,  # 1,686: task description, criteria, critiques
}
"""Mean characters of a text field in each method's structured replies on the stub server: what a rendering's
replies write, so the method's later prompts quote text of that length (HPSS's judge prompts quote its
generated criteria, references and questions). Before, every field was written at
:data:`~.schema_replies.TEXT_FILL` of its bound (30% of HPSS's 600-character explanations: 180 characters where
the stub writes 77). Direct scoring's replies hold no text field. Measured with :mod:`judge_engine.bench.reply_shapes`
(``estimate-waves --never-seen --n-train 30 --n-test 20 --levels 32``, 2026-12-08 02:19-02:25 UTC, load 14-30,
SummEval coherence: the tuning half; HANNA engagement is held out)."""

LIST_FILL: dict[str, float] = {
    "geval": 0.0,           # 1 list
    "hd_eval": 0.5,         # 7: children, 3 of 2-4
    "hpss": 0.957,          # 32
    "active_critic": 0.0,   # 6
}
"""Mean fill of each method's lists between their ``minItems`` and ``maxItems`` on the stub server (the same run):
how many criteria, children or questions a rendering's replies hold. At
:data:`~.schema_replies.LIST_FILL` (0.75) HD-Eval's rendered tree had 4 children to a parent where the stub's
has 3, and its requests were estimated at 1.28x. HypoEval's lists have no room (none measured)."""


def reply_shape(method: str) -> tuple[float | None, float | None]:
    """:data:`TEXT_CHARS_PER_FIELD` and :data:`LIST_FILL` of ``method`` (None where not measured)."""
    return TEXT_CHARS_PER_FIELD.get(method), LIST_FILL.get(method)

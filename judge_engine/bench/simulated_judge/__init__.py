"""A seeded simulated judge with planted signal, for the ``simulate`` benchmark and tests only.

The only model we can run (SmolLM2-135M) is too small to show whether an
algorithm finds what it should, so the benchmark runs every method against a
simulated world whose optimum is known. A :class:`World` is made per seed:

* samples with unique, recognisable output texts (``[sim-item-NNNN]``),
  grouped by source, each with latent sub-criteria ``z`` (standard normal)
  and human scores on three aspects built from the latents with planted
  weights (some zero) plus annotator noise;
* planted prompt effects per method (see :meth:`World.draws`, written to the
  benchmark JSON): HPSS factor-value effects and pairwise interactions on the
  judge's noise; a HypoEval hypothesis pool of helpful, useless and
  misleading rubrics; HD-Eval sub-criteria tied to one latent or to none;
  Active-Critic criteria and demonstration effects;
* a budget of malformed replies: a seeded fraction of all replies is
  unparsable, so missing scores and coverage-aware selection are exercised.

:class:`SimulatedBackend` is a backend of the one LLM call path
(``generate(messages, params) -> Completion``). It recognises which step of
which method asks: from the JSON schema's title when ``params.json_schema``
is set (then it answers JSON of that shape), else from the prompt's fixed
template text (then it answers in the free-text format the prompt asks for).
Every recogniser is in the section "Recognisers" below, with the marker
texts it relies on in :data:`MARKERS`, so a change of a template's wording
needs one edit there; an HPSS judge prompt's strategy is read by
:func:`judge_engine.methods.hpss.strategy.read_strategy`, the exact inverse of the
template builder. Samples are found by their output text, hypotheses by
their whole text, sub-criteria by their name, never by position. With
``World(structured=False)`` the backend ignores every schema, as a server
without constrained decoding would, so the methods' free-text fallbacks run.

The simulated score of a scoring prompt is the human score on the judge's
scale plus noise (plus a bias where planted) whose size depends on the
prompt's planted features, rounded to the scale. Noise is a pure function of
(seed, prompt), as a greedy model's reply would be: the same prompt gets the
same answer whatever was asked before it. Direct-scoring and G-Eval prompts (the papers'
external baselines) are answered as a plain judge would: the named aspect's human level plus noise of
sd :data:`PLAIN_JUDGE_SD`, with no planted effect of their wording. A scoring prompt that shows the judged
item a second time, among its own in-context examples or demonstrations next to its human score, is
answered with that score (:meth:`World.shows_judged_item`), as a real model would copy it: a method that
leaks the answer into its own prompt gets a figure it did not earn, visible in the table and counted in
``stats["leaked"]``, instead of a judge blind to the leak hiding it.

Never offered by the app: this module lives under ``judge_engine.bench``.
"""

from __future__ import annotations

# The module was split by job (issue 46 item 7: no module over 700 lines); every name imported from
# judge_engine.bench.simulated_judge stays importable from here. A monkeypatch must target the submodule that
# reads the name, not this package.
from .backend import SimulatedBackend
from .recognise import (
    AC_DEFINITIONS,
    MARKERS,
    Step,
    ac_statement,
    ac_statement_body,
    read_hpss_strategy,
    recognise,
)
from .schema import conform, fill_schema
from .world import World
from .world_parts import (
    ASPECTS,
    DEFAULT_DIALS,
    OPENER,
    PLAIN_JUDGE_SD,
    TARGET,
    TASK,
    Dials,
    Node,
    PoolHypothesis,
    higher_order_part,
)

__all__ = [
    "AC_DEFINITIONS", "ASPECTS", "DEFAULT_DIALS", "MARKERS", "OPENER", "PLAIN_JUDGE_SD", "TARGET", "TASK", "Dials",
    "Node", "PoolHypothesis", "SimulatedBackend", "Step", "World", "ac_statement", "ac_statement_body", "conform",
    "fill_schema", "higher_order_part", "read_hpss_strategy", "recognise",
]

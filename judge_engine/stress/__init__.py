"""Stress tests: does a judge react to degradations it must see, and ignore changes that should not matter?

A judge that agrees with thirty human scores can still be blind to what its aspect is about: a coherence judge
that does not notice shuffled sentences, a fluency judge that does not notice typos. A stress test needs no new
labels. Each test item's output is perturbed by transformations whose effect is known (:mod:`._transforms`:
sentence shuffle, typos, truncation, another group's output, repeated sentences, an irrelevant passage,
swapped names and numbers; and whitespace and synonyms, which should not matter); the item and its twin are
scored by the judge through the one LLM path and its cache; per transformation the share of items scored lower,
the mean change with a paired t interval and a verdict are reported (:func:`stress`, :func:`stress_run`).

Which transformation should lower which aspect is a TOML table a user can copy and edit (:func:`load_table`,
the packaged ``table.toml``); :func:`register_transformation` adds one written in Python. The verdicts' false
alarms under a judge that ignores the text, and their power under one that reacts, are measured by
``python -m judge_engine.bench stress-calibration`` (docs/reliability.md, "Stress tests").
"""

from ..llm import make_llm  # noqa: F401  (stress_run reads it here, where tests swap it)
from ._report import (ALPHA, ALPHA_NEUTRAL, MIN_PAIRS, NO_EXPECTATION, NOT_SHOWN, REACTS, SENSITIVE, STEADY, STRESS_ITEMS, TOO_FEW,
                      VERDICTS, StressReport, TransformationResult, paired_change, resolve, result_line, stress,
                      stress_lines, stress_run, twins, verdict)
from ._table import (DEFAULT_TABLE, EXPECTATIONS, LOWER, NEUTRAL, NONE, StressTable, canonical_aspect,
                     default_transformations, expectation, load_table, parse_table)
from ._transforms import (BUILT_IN, TRANSFORMATIONS, Perturb, StressContext, Transformation, register_transformation,
                          sentences, unregister_transformation)

__all__ = [
    "ALPHA", "ALPHA_NEUTRAL", "BUILT_IN", "DEFAULT_TABLE", "EXPECTATIONS", "LOWER", "MIN_PAIRS", "NEUTRAL", "NONE", "NOT_SHOWN",
    "NO_EXPECTATION", "Perturb", "REACTS", "SENSITIVE", "STEADY", "STRESS_ITEMS", "StressContext", "StressReport",
    "StressTable", "TOO_FEW", "TRANSFORMATIONS", "Transformation", "TransformationResult", "VERDICTS",
    "canonical_aspect", "default_transformations", "expectation", "load_table", "paired_change", "parse_table",
    "register_transformation", "resolve", "result_line", "sentences", "stress", "stress_lines", "stress_run", "twins",
    "unregister_transformation", "verdict",
]

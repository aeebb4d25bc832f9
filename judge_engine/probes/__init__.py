"""Where and why a finished judge disagrees with the humans: probes over its stored verdicts.

The trust report (:mod:`judge_engine.trust`) says whether a judge agrees with the humans. The probes say
what it follows besides them and where it goes wrong, on the same held-out items, without a new call:

- :func:`length_bias` — does the judge follow output length more than the humans do?
- :func:`collapse` — how many distinct scores did it give, how often its most frequent one, and how wide its
  spread is beside the humans'?
- :func:`disagreements` — the items it ranks furthest from the humans, and slices (system, group, length
  tercile, human score band) tested against the rest, Benjamini-Hochberg corrected;
- :func:`explanation_themes` — what the explanations of over- and under-scored items talk about (TF-IDF
  terms clustered with k-means);
- :func:`binary_agreement` — for an aspect humans scored 0/1, agreement, Cohen's kappa and the true
  positive and negative rates at a threshold chosen on other items than those it is measured on.

Each function is pure, over arrays of the items both sides scored, and returns a frozen record that says how
many items it rests on, carries an interval where one is defined, and says in ``note`` why a figure is
missing. Correlations are taken at the dataset's meta-evaluation level where a probe can follow it (the
report names it). :func:`probe_warnings` gives each finding with a line of advice. :func:`probe_run` reads a finished run from the store and runs them all, once: the report is kept
in the store under a fingerprint of what it read (:mod:`._stored`). Correlations and their
intervals come from :mod:`judge_engine.metrics` (and the paired bootstrap of :mod:`judge_engine.compare`):
one statistics module for the whole workbench.
"""


from ..llm import make_llm  # noqa: F401  (the stability probe reads it here, where tests swap it)
from ._binary import BinaryAgreement, binary_agreement
from ._collapse import SPREAD_FLOOR, Collapse, Spread, collapse
from ._common import (ALPHA, MIN_ITEMS, N_BOOTSTRAP, Figure, fig_text, format_p, probe_level, rank_difference,
                      words)
from ._length import LengthBias, length_bias
from ._report import ADVICE, LEVEL_NAMES, ProbeReport, ProbeWarning, probe_run, probe_warnings, probes, summary_lines
from ._slices import (MIN_SLICE, PERMUTATIONS, SLICES_WITH_INTERVAL, TOP_DISAGREEMENTS, Disagreement, Disagreements,
                      Slice, disagreements, residuals)
from ._stability import (ORDER_ADVICE, ORDER_CHANGE_FLOOR, STABILITY_ITEMS, STABILITY_REPEATS, STABILITY_TEMPERATURE,
                         VARIES, Stability, orderings, orders_possible, probe_stability, stability, stability_calls,
                         stability_figures, stability_items, stability_lines)
from ._themes import DISAGREEMENT_SHARE, MAX_THEMES, MIN_THEME_TEXTS, Theme, Themes, explanation_themes

__all__ = [
    "ADVICE", "ALPHA", "BinaryAgreement", "Collapse", "DISAGREEMENT_SHARE", "Disagreement", "Disagreements", "Figure",
    "LEVEL_NAMES", "LengthBias", "MAX_THEMES", "MIN_ITEMS", "MIN_SLICE", "MIN_THEME_TEXTS", "N_BOOTSTRAP",
    "ORDER_ADVICE", "ORDER_CHANGE_FLOOR", "PERMUTATIONS", "ProbeReport", "ProbeWarning", "SLICES_WITH_INTERVAL",
    "SPREAD_FLOOR", "STABILITY_ITEMS", "STABILITY_REPEATS", "STABILITY_TEMPERATURE", "Slice", "Spread", "Stability",
    "TOP_DISAGREEMENTS", "Theme", "Themes", "VARIES", "binary_agreement", "collapse", "disagreements",
    "explanation_themes", "fig_text", "format_p", "length_bias", "orderings", "orders_possible", "probe_level",
    "probe_run", "probe_stability", "probe_warnings", "probes", "rank_difference", "residuals", "stability",
    "stability_calls", "stability_figures", "stability_items", "stability_lines", "summary_lines", "words",
]

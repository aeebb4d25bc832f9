"""Correlation metrics for meta-evaluating a judge against human scores.

A judge (an LLM, a learned metric, ...) predicts a score for every item that
humans also scored. Meta-evaluation asks how well the predicted scores agree
with the human ones, measured with three correlation coefficients computed by
:mod:`scipy.stats`:

* Pearson's *r* (linear agreement), :func:`scipy.stats.pearsonr`;
* Spearman's *rho* (monotone agreement on ranks), :func:`scipy.stats.spearmanr`;
* Kendall's *tau-b* (pairwise ordering, ties corrected),
  :func:`scipy.stats.kendalltau` with ``variant="b"``.

The papers report them at three levels, which answer different questions:

``sample`` (also called *dataset* or *turn* level)
    One correlation over all items. Does the judge order arbitrary items the
    way humans do?
``group`` (SummEval's *summary* level, HANNA's *story* level)
    Items sharing a source (an article, a prompt, a dialogue context) form a
    group. The correlation is computed inside each group and the mean over the
    groups is reported. Does the judge rank competing outputs for the *same*
    input correctly? A group where either the human or the predicted scores are
    all equal (this includes groups of fewer than two items) has no defined
    correlation: it is skipped, and the number skipped is reported.
``system``
    Scores are averaged per system (human and predicted separately, over the
    same items), then one correlation is computed across the systems. Does the
    judge rank *systems* correctly?

Conventions (chosen to reproduce published numbers, e.g. UniEval's
``reproduce/correlation.py`` for SummEval, Topical-Chat and SFHOT/SFRES):

* a group is skipped when ``len(set(scores)) == 1`` on either side, i.e. on
  exact equality, and the same groups are skipped for all three coefficients;
* the group-level value is the plain (unweighted) arithmetic mean of the
  per-group coefficients over the groups kept, whatever their sizes;
* a system's score is the plain mean of its items' scores;
* nothing is rounded (published tables round only for display);
* Kendall is scipy's default tau-b.

Items whose prediction is missing (``None`` or NaN, e.g. the judge's answer
could not be parsed) are dropped before anything is computed and counted; they
are never imputed. Confidence intervals are bootstrap percentile intervals; the
point estimates are always computed on the full data, never the bootstrap mean.
"""

from __future__ import annotations

# Each job is a module of its own (_correlation, _levels, _bootstrap, ...); every name is re-exported here, so
# ``from judge_engine.metrics import X`` reads it as before the split, private helpers the engine uses included.
# A test that patches a name patches it in the module that reads it (e.g. metrics._levels.correlations).

# scipy.stats is imported inside the functions that use it: this package is imported by the methods, the runs and
# the exported judge, and scipy.stats took most of a second before `score` or `run` could send its first request
# (issue 67 item 2)

from ._arrays import _as_float_array, _codes, _is_constant, _nan_result, _Quiet, _scipy_warnings  # noqa: F401
from ._bootstrap import (MIN_BOOTSTRAP_UNITS, _bootstrap, _resampled_ranks, _resampled_spearman,  # noqa: F401
                         _rowwise_correlations, _rowwise_pearson, grouped_tail)
from ._correlation import (_COEFFICIENT, _correlatable, _kendall, _pearson, _spearman, correlation,  # noqa: F401
                           correlations)
from ._kendall import KENDALL_PAIRS_UP_TO, _rowwise_kendall_b  # noqa: F401
from ._levels import (GROUP_TABLE_MEMO, _check_level, _compute_group_table, _group_table,  # noqa: F401
                      _group_tables, _group_tables_lock, _level_point, _prepare, _system_means,
                      level_correlations, meta_evaluate)
from ._paired import PairedDifference, holm_adjusted, paired_mean_difference
from ._probes import rate_interval, slice_difference_tests, spread_ratio
from ._records import COEFFICIENTS, LEVELS, Correlation, LevelInfo, MetaEvalReport
from ._repeat import retest_agreement, sample_correlation
from ._resample import (BOOTSTRAP_CHUNK_CELLS, _block_sizes, _resample_weights, _weighted_sums,  # noqa: F401
                        group_resamples)
from ._selection import (MIN_SELECTION_COVERAGE, SelectionFitness, correlation_p_value, coverage_adjusted,
                         items_for_significance, selection_fitness)

__all__ = [
    "LEVELS",
    "COEFFICIENTS",
    "Correlation",
    "LevelInfo",
    "MetaEvalReport",
    "SelectionFitness",
    "MIN_SELECTION_COVERAGE",
    "correlations",
    "coverage_adjusted",
    "correlation_p_value",
    "holm_adjusted",
    "items_for_significance",
    "selection_fitness",
    "level_correlations",
    "meta_evaluate",
    "sample_correlation",
    "retest_agreement",
    "slice_difference_tests",
    "spread_ratio",
    "rate_interval",
    "PairedDifference",
    "paired_mean_difference",
]

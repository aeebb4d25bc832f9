"""Every plotly figure of the workbench, away from the method code.

Pure functions of engine records and DataFrames that return a
:class:`plotly.graph_objects.Figure` (no Streamlit): a page calls
``st.plotly_chart(fig)``, tests inspect the traces. Only the pages import this
package, so a run's worker process (``python -m judge_engine resume``) never
loads plotly (``tests/test_figures_place.py`` holds that).

* :mod:`.scores` — human and judge scores: histograms, human-vs-judge
  scatter, correlation bars, the comparison dashboard's figures and its HTML report;
* :mod:`.attribution` — a white-box aggregator's permutation importance and
  SHAP values (computed by :mod:`judge_engine.explain`);
* :mod:`.hd_eval` — HD-Eval's criteria tree and correlation by layer;
* :mod:`.hypoeval` — HypoEval's per-hypothesis scores over the test items;
* :mod:`.hpss` — HPSS's search: the evaluated strategies, their fitness and the factor values' advantages.
"""

from .attribution import crosses_zero, explanation_figure, importance_figure, shap_bar_figure, shap_waterfall_figure
from .hd_eval import layer_correlation_figure, node_score_histogram, provenance, tree_sunburst
from .hpss import advantage_heatmap, fitness_figure, history_frame
from .hypoeval import per_hypothesis_heatmap
from .scores import (comparison_bars, correlation_bars, correlation_vs_cost, human_histograms, human_vs_judge_scatter,
                     report_html, scatter_grid, score_histograms)

__all__ = ["advantage_heatmap", "comparison_bars", "correlation_bars", "correlation_vs_cost", "crosses_zero", "explanation_figure",
           "fitness_figure", "history_frame", "human_histograms", "human_vs_judge_scatter",
           "importance_figure", "layer_correlation_figure", "node_score_histogram", "per_hypothesis_heatmap",
           "provenance", "report_html",
           "scatter_grid", "score_histograms", "shap_bar_figure", "shap_waterfall_figure", "tree_sunburst"]

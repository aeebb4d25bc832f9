"""judge_engine/figures/hpss.py: the HPSS page's table of evaluated strategies, fitness curve and advantage heatmap."""

from __future__ import annotations

import math

import pytest

from judge_engine.figures.hpss import FITNESS, X_AXES, advantage_heatmap, fitness_figure, history_frame
from judge_engine.methods.hpss import FACTOR_NAMES, FACTOR_TITLES

BASE = "5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"
TEN = "10_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI"


def evaluated(index, strategy, fitness, best, calls, stage="init", **extra):
    """An ``hpss_evaluated`` payload as the search records it."""
    return {"index": index, "stage": stage, "strategy": strategy, "fitness": fitness, "best_so_far": best,
            "calls": calls, "unparsed": 0, "missing_aux": 0, **extra}


def test_history_frame_has_one_row_per_strategy_with_its_factors_written_out():
    frame = history_frame([
        evaluated(1, BASE, 40.0, 40.0, 12, correlation=50.0, coverage=0.8, selectable=True, retried=2),
        evaluated(2, TEN, 55.0, 55.0, 24, stage="search", correlation=55.0, coverage=1.0, selectable=True),
    ])
    assert list(frame["#"]) == [1, 2] and list(frame["strategy"]) == [BASE, TEN]
    assert list(frame[FITNESS]) == [40.0, 55.0] and list(frame["ρ×100 (items scored)"]) == [50.0, 55.0]
    assert list(frame["asked again"]) == [2, 0], "a payload without retries counts none"
    # the factor columns read like the page's descriptions, not the authors' keys
    assert list(frame[FACTOR_TITLES["scale"]]) == ["1-5", "1-10"]
    assert set(frame["Evaluation criteria"]) == {"human-written"}


def test_history_frame_of_a_run_from_before_coverage_was_counted():
    # older payloads lack correlation, coverage and selectable: the fitness stands in, defined means selectable
    frame = history_frame([evaluated(1, BASE, 30.0, 30.0, 10), evaluated(2, TEN, None, 30.0, 20)])
    assert frame["ρ×100 (items scored)"].iloc[0] == pytest.approx(30.0)
    assert math.isnan(frame["ρ×100 (items scored)"].iloc[1])
    assert list(frame["selectable"]) == [True, False]
    assert frame["coverage"].isna().all()


def test_fitness_figure_plots_each_stage_and_the_best_so_far_as_a_step_line():
    frame = history_frame([evaluated(1, BASE, 40.0, 40.0, 12), evaluated(2, TEN, 30.0, 40.0, 30, stage="search")])
    fig = fitness_figure(frame)
    stages = [t for t in fig.data if t.name in ("init", "search")]
    assert sorted(t.name for t in stages) == ["init", "search"]
    best = next(t for t in fig.data if t.name == "best so far")
    assert best.mode == "lines" and best.line.shape == "hv"
    assert list(best.x) == [1, 2] and list(best.y) == [40.0, 40.0]
    by_calls = fitness_figure(frame, x="LLM calls")
    assert list(next(t for t in by_calls.data if t.name == "best so far").x) == [12, 30]
    assert set(X_AXES) == {"evaluation", "LLM calls"}
    with pytest.raises(KeyError):
        fitness_figure(frame, x="seconds")


def test_advantage_heatmap_has_a_row_per_factor_in_order_padded_to_the_widest():
    advantages = {"scale": {"3": -2.0, "5": 1.5, "10": 0.5}, "cot": {"Prefix": 4.0, "Suffix": -4.0}}
    fig = advantage_heatmap(advantages)
    heat = fig.data[0]
    assert list(heat.y) == [FACTOR_TITLES[f] for f in FACTOR_NAMES]
    scale, cot = FACTOR_NAMES.index("scale"), FACTOR_NAMES.index("cot")
    assert list(heat.z[scale]) == [-2.0, 1.5, 0.5]
    assert list(heat.z[cot]) == [4.0, -4.0, None], "a factor with fewer values is padded with an empty cell"
    assert list(heat.text[cot]) == ["explanation first", "rating first", ""]
    assert all(list(row) == [None, None, None] for i, row in enumerate(heat.z) if i not in (scale, cot))
    assert heat.zmid == 0, "no advantage is the colour scale's middle"

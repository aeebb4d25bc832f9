"""Issue 62 items 4-6 in the engine: which figures an edit leaves pending, importances with no measurable effect,
Kendall's tau from all pairs at once, and how often a page reads a live run."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judge_engine.figures import crosses_zero
from judge_engine.metrics import _rowwise_kendall_b
from judge_engine.records import RunRecord
from judge_engine.runs import poll_interval
from judge_engine.runs.workers import FAST_POLL_FOR_S, FAST_POLL_S, SLOW_POLL_S


@pytest.mark.parametrize("value, std, crosses", [(0.02, 0.05, True), (-0.08, 0.1, True), (0.0, 0.0, True),
                                                 (0.2, 0.05, False), (-0.3, 0.05, False), (None, 0.1, True),
                                                 (float("nan"), None, True), (0.1, None, False)])
def test_an_importance_whose_interval_includes_zero_has_no_measurable_effect(value, std, crosses):
    assert crosses_zero(value, std) is crosses


@pytest.mark.parametrize("m", [2, 3, 7, 25])
def test_kendall_from_all_pairs_is_scipys_tau_b_with_ties_and_constant_rows(m):
    rng = np.random.default_rng(m)
    h = rng.integers(1, 6, (200, m)).astype(float)
    p = h + rng.integers(-2, 3, (200, m))
    h[0] = 3.0  # constant: undefined
    p[1] = h[1]  # identical: +1
    want = np.array([stats.kendalltau(a, b, variant="b")[0] for a, b in zip(h, p)])
    got = _rowwise_kendall_b(h, p)
    assert np.isnan(got[0]) and got[1] == pytest.approx(1.0)
    assert got == pytest.approx(want, nan_ok=True)


def test_a_young_run_is_read_often_and_an_older_one_less():
    run = RunRecord(id=1, method="direct", dataset="d", aspect="a", status="running", created=1000.0)
    assert poll_interval(run, now=1000.0 + 1) == pytest.approx(FAST_POLL_S)
    assert poll_interval(run, now=1000.0 + FAST_POLL_FOR_S + 1) == pytest.approx(SLOW_POLL_S)
    assert FAST_POLL_S < SLOW_POLL_S


def test_an_edited_or_added_node_is_stale_and_the_round_that_scores_it_is_found(store):
    from judge_engine.methods import Judge
    from judge_engine.methods.hd_eval import add_node, edit_node, load_tree, scored_by, seed_tree, stale_nodes
    from judge_engine.runs import RunSpec, create_run
    from tests.page_helpers import execute
    from tests.test_hd_eval import _dataset, scripted

    store.save_dataset(_dataset())
    run_id = create_run(store, RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                                       params={"aggregator": "lr", "max_layers": 2, "pi_repeats": 2}))
    execute(store, run_id, scripted)
    judge = Judge.from_dict(store.run(run_id).judge)
    seed_tree(store, run_id, judge.state["tree"])
    assert stale_nodes(judge, load_tree(store, run_id).tree) == set()
    edit_node(store, run_id, "clarity/p1", expected_version=1, name="Plain words", definition="Uses plain words.")
    edit_node(store, run_id, "clarity/p0", expected_version=1, in_aggregator=False)  # same text: not stale
    added = add_node(store, run_id, "clarity", "Short", "Short sentences.")
    tree = load_tree(store, run_id).tree
    assert stale_nodes(judge, tree) == {"clarity/p1", added}
    node = next(n for n in tree["nodes"] if n["id"] == "clarity/p1")
    assert scored_by(store.runs(), run_id, node) is None
    later = create_run(store, RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                                      params={"criteria_tree": {"nodes": tree["nodes"]}, "aggregator": "lr",
                                              "max_layers": 2}))
    assert scored_by(store.runs(), run_id, node).id == later
    assert scored_by(store.runs(), run_id, {**node, "definition": "another text"}) is None


def test_a_rescore_run_is_found_by_the_hypothesis_text_it_was_given():
    from judge_engine.methods.hypoeval import rescored_by

    def run(i, texts, method="hypoeval"):
        return RunRecord(id=i, method=method, dataset="d", aspect="a", status="finished",
                         params={"hypotheses": [{"text": t, "origin": "curated"} for t in texts]})

    runs = [run(4, ["b"], "direct"), run(3, ["a", "b"]), run(2, ["b"]), run(1, [])]  # newest first
    assert rescored_by(runs, 1, "b").id == 3
    assert rescored_by(runs, 3, "b") is None
    assert rescored_by(runs, 1, "c") is None


def test_the_refit_preview_reads_the_fitted_figures_the_last_layer_recorded(store):
    """No MLP folds refitted on a page of a new round: the preview's 'before' is the last layer's out-of-fold
    figure, the same numbers as computing it again; an unchanged tree's 'after' is the same."""
    from judge_engine.aggregate import cross_validated_correlation
    from judge_engine.methods import Judge
    from judge_engine.methods.hd_eval import HDEvalState, refit_preview
    from judge_engine.runs import RunSpec, create_run
    from tests.page_helpers import execute
    from tests.test_hd_eval import _dataset, scripted

    store.save_dataset(_dataset())
    run_id = create_run(store, RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                                       params={"aggregator": "nn", "max_layers": 2, "pi_repeats": 2}))
    execute(store, run_id, scripted)
    judge = Judge.from_dict(store.run(run_id).judge)
    state = HDEvalState.from_judge(judge)
    again = cross_validated_correlation(state.target_aggregator())["clarity"]
    preview = refit_preview(judge, state.tree)
    assert preview.before == pytest.approx(again, nan_ok=True)
    assert preview.after == preview.before and not preview.pending

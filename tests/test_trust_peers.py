"""MLflow's own alignment as a peer baseline in the trust report (issue 66 item 7): the four methods are measured
against a ``memalign`` run on the same split and backend as against a baseline; the peer itself is measured against
the baselines that learn nothing, never against itself or the methods."""

from __future__ import annotations

import numpy as np
import pytest

from judge_engine import trust
from judge_engine.records import Split
from judge_engine.trust_baselines import compared_methods
from tests.test_trust import HPSS_GOOD, _baseline, _human, _learned, _split, wide_dataset  # noqa: F401


def test_a_method_significantly_below_memalign_is_warned_with_the_peer_named(store, wide_dataset):  # noqa: F811
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    base = _baseline(store, wide_dataset, split, lambda i: 3 + (i % 2))  # direct, unrelated to the humans
    peer = _learned(store, wide_dataset, split, "memalign", {}, _human)  # MemAlign following the humans
    noise = np.random.default_rng(3).normal(0, 2.0, size=40)
    run_id = _learned(store, wide_dataset, split, "hpss", HPSS_GOOD, lambda i: _human(i) + noise[i])
    report = trust.trust_report(store, run_id)
    assert sorted(b.run_id for b in report.baselines) == sorted([base, peer])
    found = next(b for b in report.baselines if b.run_id == peer)
    assert found.peer and found.significantly_below and found.diff < 0 and found.n == 40
    assert found.label == f"#{peer} memalign (peer: MLflow's own alignment)"
    assert not next(b for b in report.baselines if b.run_id == base).peer
    assert report.verdict == "warning"
    assert any(f"baseline #{peer} memalign (peer" in r and "significantly below" in r for r in report.reasons)
    assert report.to_dict()["baselines"][0]["label"].startswith("#")


def test_the_peer_is_measured_against_the_baselines_only(store, wide_dataset):  # noqa: F811
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 0)
    base = _baseline(store, wide_dataset, split, lambda i: int(_human(i)))
    peer = _learned(store, wide_dataset, split, "memalign", {}, _human)
    _learned(store, wide_dataset, split, "hpss", HPSS_GOOD, _human)
    other_peer = _learned(store, wide_dataset, split, "memalign", {}, _human)
    own = trust.trust_report(store, peer)
    assert [b.run_id for b in own.baselines] == [base], "not against itself, another peer or the methods"
    assert own.training is None
    assert trust.trust_report(store, base).baselines == ()
    assert other_peer not in [b.run_id for b in own.baselines]


def test_a_peer_that_learned_from_other_items_is_not_a_baseline(store, wide_dataset):  # noqa: F811
    store.save_dataset(wide_dataset)
    split = _split(wide_dataset, 10)
    fewer_training = Split(dataset=split.dataset, seed=1, train_ids=split.train_ids[:5], test_ids=split.test_ids)
    same = _learned(store, wide_dataset, split, "memalign", {}, _human)
    _learned(store, wide_dataset, fewer_training, "memalign", {}, _human)  # same test items, less to learn from
    run_id = _learned(store, wide_dataset, split, "hpss", HPSS_GOOD, _human)
    assert [b.run_id for b in trust.trust_report(store, run_id).baselines] == [same]


@pytest.mark.parametrize("method, against", [("direct", ()), ("geval", ()), ("memalign", ("direct", "geval")),
                                             ("hypoeval", ("direct", "geval", "memalign"))],
                         ids=["direct", "geval", "the-peer", "a-method"])
def test_what_each_method_is_compared_against(method, against):
    assert compared_methods(method) == against


def test_the_comparisons_p_values_are_holm_adjusted_over_the_run_s_baselines():
    from judge_engine.trust_baselines import baseline_difference, holm

    def below(*ps):
        return [d.significantly_below for d in holm([baseline_difference(i, "direct", "sample", -0.1, p, 40)
                                                     for i, p in enumerate(ps)])]

    # each under 0.05 on its own, but two chances of a false warning: neither survives (adjusted 0.06, 0.06)
    assert below(0.03, 0.04) == [False, False]
    assert below(0.01, 0.04) == [True, True]  # adjusted 0.02 and 0.04
    assert below(0.03) == [True], "one comparison is left as it is"
    adjusted = holm([baseline_difference(0, "direct", "sample", -0.1, 0.02, 40),
                     baseline_difference(1, "geval", "sample", -0.1, None, 40)])
    assert [d.compared for d in adjusted] == [1, 1] and adjusted[1].p is None

"""HD-Eval's rows in the simulated world: its aggregator vs layer 1 alone, importance AUC and pruning's choice.

One module per method's rows, because each runner sets up its own ablations (here the same aggregator fitted
with ``max_layers=1``) and its own mutations for the controls that must fail (tests/test_bench_controls.py);
what the rows mean is in :mod:`judge_engine.bench.simulate`.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Callable

import numpy as np

from ..simulated_judge import ASPECTS, TARGET, TASK, World
from .world import _aspect, _calls, _ceiling, _pearson, _plain_measures, make_llm, measure, plain_baselines


def run_hd_eval(world: World, train, test, log: Callable[[str], None],
                params: dict[str, Any] | None = None, *, control: str | None = None) -> dict[str, Any]:
    """HD-Eval's test Pearson vs its aggregator on layer 1 only (the paper's "w/o layers 2, 3"), the mean of the
    layer-1 scores, the target's layer-1 score, direct scoring and G-Eval; importance AUC; pruning's choice.

    ``control`` (a mutation for the controls that must fail; no method option): ``"no_decomposition"`` fits
    the method's arm with ``max_layers=1``; ``"least_important"`` makes attribution pruning decompose the
    least important criteria instead of the most important (Eq. 3 turned upside down).
    """
    from unittest import mock

    from sklearn.metrics import roc_auc_score
    from ...methods import FitContext
    from ...methods.hd_eval import HDEval, pruning, tree_index
    if control not in (None, "no_decomposition", "least_important"):
        raise ValueError(f"control={control!r}: the HD-Eval rows know only 'no_decomposition' and "
                         "'least_important'")
    own = {**(params or {}), **({"max_layers": 1} if control == "no_decomposition" else {})}

    most_important = pruning.prune_by_attribution

    def least_important(candidates, importance, k_expand):
        return most_important(candidates, {c: {"importance": -v["importance"]}
                                                         for c, v in importance.items()}, k_expand)

    llm, backend = make_llm(world)
    events: list[tuple[str, dict]] = []
    mutated = mock.patch.object(pruning, "prune_by_attribution", least_important) \
        if control == "least_important" else contextlib.nullcontext()
    with mutated:
        judge = HDEval(**own).fit(train, _aspect(),
                                  FitContext(llm=llm, task=TASK, aspects=tuple(ASPECTS),
                                             log=lambda kind, payload: events.append((kind, payload))))
    fit_calls = _calls(llm)
    verdicts = judge.score(test, llm=llm)
    human = [s.human[TARGET] for s in test]
    pred = [v.score for v in verdicts]
    aspect_names = [a.name for a in ASPECTS]

    def layer1_mean(found) -> list[float]:
        return [np.nanmean([v.criteria.get(a, math.nan) for a in aspect_names])
                if any(not math.isnan(v.criteria.get(a, math.nan)) for a in aspect_names) else math.nan
                for v in found]

    layer1_target = [v.criteria.get(TARGET, math.nan) for v in verdicts]
    ceiling = _ceiling(world, test)
    # the paper's ablation "w/o layers 2, 3": the same aggregator fitted on the layer-1 scores alone, same split
    flat_llm, flat_backend = make_llm(world)
    flat = HDEval(**{**(params or {}), "max_layers": 1}).fit(
        train, _aspect(), FitContext(llm=flat_llm, task=TASK, aspects=tuple(ASPECTS)))
    flat_calls = _calls(flat_llm)
    flat_verdicts = flat.score(test, llm=flat_llm)
    r_flat, r_flat_mean = _pearson(human, [v.score for v in flat_verdicts]), _pearson(human, layer1_mean(flat_verdicts))
    plain = plain_baselines(world, test)
    nodes = tree_index(judge.state["tree"])
    importance = judge.state["importance"]
    labels, values, listing = [], [], []
    for nid, n in nodes.items():
        if n["layer"] < 2 or nid not in importance:
            continue
        planted = world.node(n["name"])
        informative = planted is not None and world.node_informative(planted)
        labels.append(int(informative))
        values.append(importance[nid]["importance"])
        listing.append({"id": nid, "layer": n["layer"], "informative": informative,
                        "latent": None if planted is None else planted.latent,
                        "importance": importance[nid]["importance"]})
    auc = roc_auc_score(labels, values) if 0 < sum(labels) < len(labels) else math.nan
    chosen = next((p["chosen"] for k, p in events if k == "expansion_chosen" and p["layer"] == 3), [])
    candidates = [nid for nid, n in nodes.items() if n["layer"] == 2]

    def informative(nid: str) -> bool:
        planted = world.node(nodes[nid]["name"])
        return planted is not None and world.node_informative(planted)

    kept_share = float(np.mean([informative(c) for c in chosen])) if chosen else math.nan
    base_share = float(np.mean([informative(c) for c in candidates])) if candidates else math.nan
    n_inf = sum(informative(c) for c in candidates)
    best_share = min(len(chosen), n_inf) / len(chosen) if chosen else math.nan
    r_method, r_mean, r_target = _pearson(human, pred), _pearson(human, layer1_mean(verdicts)), _pearson(human,
                                                                                                       layer1_target)
    missing = sum(v.missing for v in verdicts)
    log(f"hd_eval r={r_method:.3f} layer-1 aggregator r={r_flat:.3f} layer1-mean r={r_mean:.3f} AUC={auc:.2f} "
        f"kept {kept_share:.2f} vs {base_share:.2f}")
    detail = {"test_pearson": r_method, "layer1_aggregator_pearson": r_flat, "layer1_mean_pearson": r_mean,
              "layer1_target_pearson": r_target,
              **{f"{k}_pearson": p["test_pearson"] for k, p in plain.items()},
              "ceiling_pearson": ceiling, "importance_auc": auc, "criteria_ranked": listing,
              "pruning": {"candidates": candidates, "chosen": chosen, "chosen_informative_share": kept_share,
                          "candidates_informative_share": base_share},
              "missing_test_scores": missing, "missing_train_scores": judge.state.get("missing_scores"),
              "calls": {"fit": fit_calls, "total": _calls(llm), "layer1_aggregator_fit": flat_calls}
              | {k: p["calls"] for k, p in plain.items()}, "control": control,
              "backend": backend.stats,
              "baseline_backends": {"layer1_aggregator": flat_backend.stats}
              | {k: p["backend"] for k, p in plain.items()}}
    # "mean of layer-1 scores" and "target alone" learn nothing: their layer-1 readings need no fit calls
    measures = [measure("test Pearson", r_method, "aggregator on layer 1 only (w/o layers 2, 3)", r_flat, ceiling,
                        True, calls=(fit_calls, flat_calls)),
                measure("test Pearson", r_method, "mean of layer-1 scores", r_mean, ceiling, True,
                        calls=(fit_calls, 0)),
                measure("test Pearson", r_method, "layer-1 target aspect alone", r_target, ceiling, True,
                        calls=(fit_calls, 0)),
                *_plain_measures(plain, r_method, fit_calls, ceiling),
                measure("test Pearson of the layer-1 aggregator (ablation)", r_flat, "mean of layer-1 scores",
                        r_flat_mean, ceiling, True, calls=(flat_calls, 0)),
                measure("importance AUC (informative vs null)", auc, "chance", 0.5, 1.0, True),
                measure("informative share of decomposed (pruning)", kept_share, "random choice", base_share,
                        best_share, True)]
    return {"detail": detail, "measures": measures}

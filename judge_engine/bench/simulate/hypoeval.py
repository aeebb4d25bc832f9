"""HypoEval's rows in the simulated world: its selected hypotheses vs the paper's ablations of selection.

One module per method's rows, because each runner sets up its own baselines (here drawn from the method's own
final bank, and a fit with ``n_refine=0``) and its own mutations for the controls that must fail
(tests/test_bench_controls.py); what the rows mean is in :mod:`judge_engine.bench.simulate`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..simulated_judge import TARGET, TASK, World
from .world import _aspect, _calls, _ceiling, _pearson, _plain_measures, make_llm, measure, plain_baselines


def run_hypoeval(world: World, train, test, log: Callable[[str], None],
                 params: dict[str, Any] | None = None, *, control: str | None = None) -> dict[str, Any]:
    """HypoEval's selected hypotheses vs the paper's ablations of selection on its own final bank (all with
    r > 0, a random 5 with r > 0, the top 5 by reward), a random 5 of the bank, generation without refinement,
    direct scoring and G-Eval.

    ``control`` (a mutation for the controls that must fail; no method
    option): ``"worst5"`` keeps the five hypotheses with r > 0 of lowest
    fitness instead of the highest, ``"random5"`` a random five with r > 0
    (a draw other than the baseline's).
    """
    from ...methods import FitContext
    from ...methods.hypoeval import HypoEval, HypoEvalSettings, by_reward, evaluate_with_hypotheses
    if control not in (None, "worst5", "random5"):
        raise ValueError(f"control={control!r}: the HypoEval rows know 'worst5' and 'random5'")
    llm, backend = make_llm(world)
    method = HypoEval(**(params or {}))
    judge = method.fit(train, _aspect(), FitContext(llm=llm, task=TASK))
    fit_calls = _calls(llm)
    n = method.n_selected

    def quality(entries: Sequence[dict]) -> float:
        found = [world.hypothesis_by_text(e["text"]) for e in entries]
        return float(np.mean([h.quality if h else 0.0 for h in found])) if found else math.nan

    def test_r(entries: Sequence[dict]) -> float:
        verdicts = evaluate_with_hypotheses(test, entries, aspect=_aspect(), task=TASK, llm=llm,
                                            settings=HypoEvalSettings.from_params(method.get_params()).scoring)
        return _pearson([s.human[TARGET] for s in test], [v.score for v in verdicts])

    def draw(entries: Sequence[dict], seed: int) -> list[dict]:
        rng = np.random.default_rng(seed)
        return [entries[i] for i in rng.choice(len(entries), size=min(n, len(entries)), replace=False)] \
            if entries else []

    selected, bank = judge.state["selected"], judge.state["bank"]
    positive = [e for e in bank if e.get("selectable")]  # r > 0 at enough coverage: what selection may keep
    if control == "worst5":
        selected = sorted(positive, key=lambda e: e["fitness"])[:n]
    elif control == "random5":
        selected = draw(positive, world.seed + 19)
    random5, random5_positive = draw(bank, world.seed + 11), draw(positive, world.seed + 12)
    top_reward = by_reward(bank)[:n]
    # generation without refinement: the same fit with n_refine=0, its own selection (NaN when it adopts nothing)
    plain_llm, plain_backend = make_llm(world)
    try:
        unrefined = HypoEval(**{**(params or {}), "n_refine": 0}).fit(train, _aspect(),
                                                                      FitContext(llm=plain_llm, task=TASK))
        unrefined_selected = unrefined.state["selected"]
    except ValueError:
        unrefined_selected = None
    unrefined_calls = _calls(plain_llm)
    best5 = [{"text": h.text} for h in sorted(world.pool, key=lambda h: -h.quality)[:n]]
    kinds = {k: sum(1 for e in bank if (h := world.hypothesis_by_text(e["text"])) and h.kind == k)
             for k in ("helpful", "useless", "misleading")}
    q_sel, q_rand, q_pos, q_best, q_bank = (quality(selected), quality(random5), quality(random5_positive),
                                            quality(best5), quality(bank))
    oracle = sorted(bank, key=lambda e: -(h.quality if (h := world.hypothesis_by_text(e["text"])) else 0.0))
    q_oracle = quality(oracle[:n])
    r = {"selected": test_r(selected), "random5": test_r(random5), "random5_positive": test_r(random5_positive),
         "all_positive": test_r(positive), "top5_reward": test_r(top_reward),
         "no_refinement": math.nan if unrefined_selected is None else test_r(unrefined_selected),
         "best5": test_r(best5)}
    plain = plain_baselines(world, test)
    ceiling = _ceiling(world, test)
    log(f"hypoeval quality {q_sel:.2f} vs random {q_rand:.2f} (best {q_best:.2f}); r {r['selected']:.3f} vs "
        f"random 5 with r > 0 {r['random5_positive']:.3f}")
    detail = {"selected": [e["text"][:60] for e in selected], "bank_size": len(bank), "bank_kinds": kinds,
              "positive_in_bank": len(positive), "control": control,
              "quality": {"selected": q_sel, "random5": q_rand, "random5_positive": q_pos, "bank_mean": q_bank,
                          "best5_of_bank": q_oracle, "best5_of_pool": q_best},
              "test_pearson": r | {k: p["test_pearson"] for k, p in plain.items()}, "ceiling_pearson": ceiling,
              "calls": {"fit": fit_calls, "total": _calls(llm), "fit_without_refinement": unrefined_calls}
              | {k: p["calls"] for k, p in plain.items()},
              "backend": backend.stats,
              "baseline_backends": {"without_refinement": plain_backend.stats}
              | {k: p["backend"] for k, p in plain.items()}}
    # the baselines drawn from the method's final bank need the bank, scored on the training items: its fit's calls
    same = {"calls": (fit_calls, fit_calls)}
    measures = [measure("mean planted quality of selected", q_sel, "random 5 with r > 0 of its bank", q_pos, q_best,
                        True, **same),
                measure("mean planted quality of selected", q_sel, "random 5 of its bank", q_rand, q_best, True,
                        **same),
                measure("mean planted quality of selected", q_sel, "mean of its bank", q_bank, q_best, True, **same),
                measure("test Pearson", r["selected"], "random 5 with r > 0 of its bank", r["random5_positive"],
                        r["best5"], True, **same),
                measure("test Pearson", r["selected"], "all hypotheses with r > 0", r["all_positive"], r["best5"],
                        True, **same),
                measure("test Pearson", r["selected"], "top 5 by reward", r["top5_reward"], r["best5"], True, **same),
                measure("test Pearson", r["selected"], "random 5 of its bank", r["random5"], r["best5"], True, **same),
                measure("test Pearson", r["selected"], "generation without refinement (n_refine=0)",
                        r["no_refinement"], r["best5"], True, calls=(fit_calls, unrefined_calls)),
                *_plain_measures(plain, r["selected"], fit_calls, r["best5"])]
    return {"detail": detail, "measures": measures}

"""What every method's rows in the simulated world share: its one LLM call path, its split, and the common measures.

A runner (:mod:`.hpss`, :mod:`.hd_eval`, :mod:`.hypoeval`, :mod:`.active_critic`) builds its judges through
:func:`make_llm` on the world's :class:`~judge_engine.bench.simulated_judge.SimulatedBackend`, splits the world's
samples with :func:`split` (group-disjoint), and states each row as :func:`measure`; the papers' external
baselines (direct scoring and G-Eval, :func:`plain_baselines`) and the noise-free ceiling are the same for every
method, so they are computed here once. Tests and other benchmarks (``api_speed``, ``estimate_waves``) build a
world's LLM and split from here without running a method.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..simulated_judge import ASPECTS, TARGET, TASK, SimulatedBackend, World


def make_llm(world: World, concurrency: int = 2):
    """The one LLM call path over a simulated backend (no persistent cache: every call is answered)."""
    from ...llm import LLM, LLMConfig
    backend = SimulatedBackend(world, structured=world.structured)
    return LLM(LLMConfig(backend="simulated", concurrency=concurrency), backend), backend


def split(world: World, n_train: int, n_test: int) -> tuple[list, list]:
    """Group-disjoint train and test parts: whole sources, in a seeded order."""
    rng = np.random.default_rng(world.seed + 7)
    groups: dict[str, list] = {}
    for s in world.samples:
        groups.setdefault(s.group_id, []).append(s)
    order = [list(groups)[i] for i in rng.permutation(len(groups))]
    train, test = [], []
    for g in order:
        if len(train) < n_train:
            train.extend(groups[g])
        elif len(test) < n_test:
            test.extend(groups[g])
    return train, test


def _aspect():
    return next(a for a in ASPECTS if a.name == TARGET)


def _pearson(human: Sequence[float], pred: Sequence[float]) -> float:
    from ...metrics import correlations
    return correlations(list(human), list(pred))["pearson"]


def measure(name: str, value: float, baseline: str, base_value: float, optimum: float, higher: bool, *,
            calls: tuple[int | None, int | None] = (None, None),
            stopped: tuple[str, str] = ("", "")) -> tuple:
    """One row's numbers in one world: ``(measure, value, baseline, baseline value, optimum, higher is better,
    budget)``.

    ``budget["calls"]`` holds the LLM calls (the ledger's ``calls``) each arm
    made to build its judge, method first (None where the row compares no
    arms that call the model); ``budget["stopped_early"]`` says, per arm, why
    it stopped short of its budget ("" when it did not).
    """
    return (name, value, baseline, base_value, optimum, higher,
            {"calls": list(calls), "stopped_early": list(stopped)})


def _calls(llm) -> int:
    return llm.ledger.snapshot().calls


def _ceiling(world: World, test) -> float:
    """Test Pearson of the noise-free human formula: what a perfect reader of the latents reaches."""
    z = np.array([[float(x) for x in s.metadata["latents"]] for s in test])
    return _pearson([s.human[TARGET] for s in test], world.human_level(z, TARGET).tolist())


PLAIN_BASELINES = {"direct": "direct scoring", "geval": "G-Eval"}
"""The papers' external baselines, by registered method name: rows of every method."""


def plain_baselines(world: World, test) -> dict[str, dict[str, Any]]:
    """Test Pearson of direct scoring and G-Eval on ``test`` (fitted as :mod:`judge_engine.bench.hostile` fits them), with their
    fit calls (0 and 1: nothing is learned from the training items) and the backend's counts."""
    from ...methods import FitContext, get_method
    human = [s.human[TARGET] for s in test]
    out = {}
    for name, label in PLAIN_BASELINES.items():
        llm, backend = make_llm(world)
        judge = get_method(name).fit([], _aspect(), FitContext(llm=llm, task=TASK))
        calls = _calls(llm)
        out[label] = {"test_pearson": _pearson(human, [v.score for v in judge.score(test, llm=llm)]),
                      "calls": calls, "backend": backend.stats}
    return out


def _plain_measures(plain: dict[str, dict[str, Any]], value: float, method_calls: int, ceiling: float) -> list:
    return [measure("test Pearson", value, label, p["test_pearson"], ceiling, True, calls=(method_calls, p["calls"]))
            for label, p in plain.items()]

"""Worlds with a dial (issue 31): each method's planted structure runs from the default world (dial 1) to a
world without it (dial 0).

Three kinds of test:

* what each dial does to the world (fast, no method run);
* on the structure-free end a method does not beat its baseline (the paired difference's 95% interval
  reaches zero or below), while at the default dial it does;
* CI asserts figures: at the default dial each method beats its strongest baseline by a margin the seeds
  resolve (the lower 95% bound above zero), so a regression of a method fails here.

The method runs use held-out seeds (1000 and up, not the 0..N-1 the code was tuned on), few items, and the
benchmark's own code (:func:`simulate.run` over :data:`simulate.RUNNERS`, its table's paired differences).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from functools import lru_cache

import numpy as np
import pytest

from judge_engine.bench import __main__ as bench_main
from judge_engine.bench import simulate
from judge_engine.bench.simulated_judge import TARGET, Dials, World, higher_order_part
from judge_engine.methods.hpss.strategy import FACTORS, all_strategies
from tests import bench_draw


# --------------------------------------------------------------------------- the dials themselves


def test_the_dial_is_an_option_recorded_in_the_config_and_every_world(tmp_path):
    assert bench_main.main(["--out", str(tmp_path), "simulate", "--seeds", "1", "--n-train", "16", "--n-test", "8",
                            "--methods", "hypoeval", "--dial", "0.5", "hpss=0"]) == 0
    doc = json.loads((tmp_path / "simulate.json").read_text(encoding="utf-8"))
    expected = {"hpss": 0.0, "hd_eval": 0.5, "hypoeval": 0.5, "active_critic": 0.5, "refinement": 0.5}
    assert doc["config"]["dials"] == expected
    assert [w["dials"] for w in doc["worlds"]] == [expected]


@pytest.mark.parametrize("bad", [["--dial", "hpss=1.5"], ["--dial", "colour=0"], ["--dial", "hpss=high"]])
def test_a_bad_dial_ends_in_one_message(tmp_path, bad, capsys):
    with pytest.raises(SystemExit) as exc:
        bench_main.main(["--out", str(tmp_path), "simulate", "--methods", "hypoeval", *bad])
    assert exc.value.code == 2
    assert "--dial" in capsys.readouterr().err


@pytest.mark.parametrize("seed, digest", [(0, "7e4fe9665d8dd6c5"), (1000, "c0da0037fb8a92ff")])
def test_the_default_world_is_the_one_before_the_dials(seed, digest):
    """Every draw of the default world (dials at 1) is what it was before the dials existed (the digest of its
    draws as the code before them wrote them), so the benchmark's existing rows do not move."""
    world = World(seed, n_samples=60, dials=Dials(1.0, 1.0, 1.0, 1.0, 1.0))
    world.decompose("coherence", 4)
    world.decompose("relevance", 4)
    draws = world.draws()
    assert draws.pop("dials") == dataclasses.asdict(Dials())
    assert draws["hpss"].pop("log_sigma_variance_shares")["higher_order"] == 0.0
    for h in draws["hypoeval_pool"]:
        h.pop("unrelated_latent", None)
    for node in draws["hd_eval_nodes"].values():
        node.pop("parent")
    assert hashlib.sha256(json.dumps(draws, sort_keys=True).encode()).hexdigest()[:16] == digest


def test_higher_order_part_has_no_main_or_pairwise_effect():
    values = np.random.default_rng(0).standard_normal((3, 4, 2, 5))
    rest = higher_order_part(values)
    for keep in [(0,), (1,), (3,), (0, 1), (1, 3), (2, 3)]:
        margin = rest.mean(axis=tuple(a for a in range(4) if a not in keep))
        assert np.allclose(margin, 0.0), keep
    assert 0 < rest.var() < values.var()


def test_hpss_dial_moves_the_log_noise_from_per_factor_to_higher_order_at_the_same_spread():
    strategies = all_strategies()
    spread = {}
    for d in (1.0, 0.5, 0.0):
        world = World(1000, n_samples=20, dials=Dials(hpss=d))
        shares = world.hpss_variance_shares()
        assert shares["higher_order"] == pytest.approx(1.0 - d, abs=1e-3), shares
        spread[d] = float(np.std([world.hpss_log_sigma(s) for s in strategies]))
        table, best, fitness = world.hpss_landscape()
        assert len(table) == len(strategies) == 12_960 and table[best] == fitness == max(table.values())
    assert spread[0.0] == pytest.approx(spread[1.0], rel=1e-6) and spread[0.5] == pytest.approx(spread[1.0], rel=1e-6)
    # at 0 no factor value is better on average than another: the advantage HPSS estimates is nil
    world = World(1000, n_samples=20, dials=Dials(hpss=0.0))
    x = np.array([world.hpss_log_sigma(s) for s in strategies]).reshape([len(v) for _, v in FACTORS])
    for axis in range(x.ndim):
        means = x.mean(axis=tuple(a for a in range(x.ndim) if a != axis))
        assert np.ptp(means) < 1e-9


def test_hd_eval_dial_zero_makes_a_child_restate_its_parent():
    """At 0 a sub-criterion's reading is its parent's, noise included: the prompts for a child and its parent get
    the same score. At 1 a child reads its own latent, sharper than its parent."""
    from judge_engine.bench.simulated_judge import ASPECTS, TASK, SimulatedBackend
    from judge_engine.criteria_scoring import CriterionText, ScoringSettings, criterion_prompt
    from judge_engine.llm import GenerationParams
    from judge_engine.methods.hd_eval import SCORE_TEMPLATE

    aspect = next(a for a in ASPECTS if a.name == TARGET)
    settings = ScoringSettings(reasoning=False, structured=False)
    instructions = SCORE_TEMPLATE.render(parent_name=aspect.name, output_label_lower="summary", task=TASK.task,
                                         guideline="")

    def scores(world: World, name: str, definition: str) -> list[str]:
        backend = SimulatedBackend(world)
        return [backend.generate([{"role": "user", "content": criterion_prompt(
            s, CriterionText("c", name, definition), instructions=instructions, aspect=aspect, task=TASK,
            settings=settings)}], GenerationParams()).text for s in world.samples[:40]]

    restated = World(1001, n_samples=40, malformed=0.0, dials=Dials(hd_eval=0.0))
    child = restated.decompose(aspect.name, 4)[0]
    assert child.parent == aspect.name
    assert scores(restated, child.name, "How well the summary does this.") == \
        scores(restated, aspect.name, aspect.definition)
    grandchild = restated.decompose(child.name, 4)[0]
    assert all(restated.hd_reading(grandchild, i) == restated.hd_reading(restated.nodes[aspect.name], i)
               for i in range(40))
    planted = World(1001, n_samples=40, malformed=0.0)
    child = next(c for c in planted.decompose(aspect.name, 4) if c.latent is not None)
    assert child.noise < planted.nodes[aspect.name].noise


def test_hypoeval_dial_zero_makes_misleading_hypotheses_unrelated():
    rows = range(200)
    for d, low, high in ((1.0, -1.0, -0.6), (0.0, -0.2, 0.2)):
        world = World(1002, n_samples=200, dials=Dials(hypoeval=d))
        human = [world.level(i) for i in rows]
        for h in (h for h in world.pool if h.kind == "misleading"):
            r = float(np.corrcoef([world.hypothesis_truth(h, i) for i in rows], human)[0, 1])
            assert low <= r <= high, (d, r)
            assert world.weights[TARGET][h.unrelated] == 0
            assert (h.quality < -0.5) if d == 1.0 else h.quality == 0.0


def test_active_critic_dial_zero_leaves_nothing_to_choose():
    flat = World(1003, n_samples=40, dials=Dials(active_critic=0.0))
    assert len(set(flat.ac_criteria.values())) == 1 and not flat.demo_value.any()
    half, full = World(1003, n_samples=40, dials=Dials(active_critic=0.5)), World(1003, n_samples=40)
    assert np.allclose(half.demo_value, full.demo_value / 2)
    assert np.ptp(list(half.ac_criteria.values())) == pytest.approx(np.ptp(list(full.ac_criteria.values())) / 2)


# --------------------------------------------------------------------------- refinement: script or evidence


def _shuffled_scores(samples, seed):
    """The same items with their human scores dealt out at random: the prompt shows scores that say nothing."""
    scores = [s.human for s in samples]
    random.Random(seed).shuffle(scores)
    return [dataclasses.replace(s, human=h) for s, h in zip(samples, scores)]


def _hypoeval_refinement_gain(refinement: float, shuffled: bool, seeds) -> list[float]:
    """Mean planted quality of HypoEval's refined hypotheses minus that of the five it was asked to improve (the
    pool's useless ones, as good as a random draw from the pool), refined on 10 wrong items with their human
    scores."""
    from judge_engine.bench.simulated_judge import TASK
    from judge_engine.methods import hypoeval as he

    gains = []
    for seed in seeds:
        world = World(seed, n_samples=40, malformed=0.0, dials=Dials(refinement=refinement))
        llm, _ = simulate.make_llm(world)
        ctx = he.Context(llm=llm, aspect=simulate._aspect(), task=TASK,
                         settings=he.HypoEvalSettings.from_params(
                             {**he.HypoEval().get_params(), **(bench_draw.params("hypoeval") or {})}),
                         log=lambda kind, payload: None, progress=lambda stage: None)
        old = [h for h in world.pool if h.kind == "useless"][:5]
        wrong = list(world.samples[:10])
        refined = he.refine_hypotheses(ctx, [h.statement for h in old],
                                       samples=_shuffled_scores(wrong, seed) if shuffled else wrong)
        found = [world.hypothesis_by_text(t) for t in refined]
        gains.append(float(np.mean([h.quality if h else 0.0 for h in found]) - np.mean([h.quality for h in old])))
    return gains


def test_hypoeval_refinement_follows_its_script_at_one_and_the_evidence_at_zero():
    """Scripted (the default), refinement improves the hypotheses whatever the prompt shows, even scores dealt out
    at random; at 0 it improves them only when the scores shown are the items' own."""
    seeds = bench_draw.worlds(range(1000, 1030))
    gains = {k: _hypoeval_refinement_gain(*k, seeds) for k in ((1.0, True), (0.0, False), (0.0, True))}
    scripted_blind, evidence, evidence_blind = (simulate.mean_ci(g) for g in gains.values())
    for (refinement, blind), g in gains.items():
        bench_draw.record(f"hypoeval refinement gain at refinement={refinement}{', scores shuffled' if blind else ''}",
                          simulate.mean_ci(g), g)
    assert scripted_blind[1] > 0, scripted_blind
    assert evidence[1] > 0, evidence
    assert evidence_blind[1] <= 0 and evidence_blind[0] < evidence[0] / 2, (evidence_blind, evidence)


def _criteria_multiplier(refinement: float, shuffled: bool, seeds) -> list[float]:
    """Active-Critic's criteria inference (init, then observe and refine on 9 more batches of 5) over the
    simulated judge: the planted noise multiplier of the criteria it ends with (lower is better)."""
    from judge_engine.llm import GenerationParams
    from judge_engine.methods import active_critic as ac
    from judge_engine.methods.active_critic.examples import _example

    out = []
    for seed in seeds:
        world = World(seed, n_samples=50, malformed=0.0, dials=Dials(refinement=refinement))
        samples = list(world.samples)
        examples = [_example(s, simulate._aspect()) for s in (_shuffled_scores(samples, seed) if shuffled
                                                                  else samples)]
        llm, _ = simulate.make_llm(world)
        criteria = ac.define_criteria([examples[i:i + 5] for i in range(0, 50, 5)], "", llm=llm,
                                      params=GenerationParams(max_tokens=768), source_chars=2000,
                                      complete_streak=5, opener="").criteria
        out.append(world.ac_multiplier(list(criteria)))
    return out


def test_active_critic_criteria_refinement_follows_the_evidence_at_zero():
    """At 0 a refinement swaps a criterion only as the observe step's examples support: with the items' own
    scores the criteria end better than with scores dealt out at random, which end where the initial random
    five start (the pool mean); scripted, they improve either way."""
    seeds = bench_draw.worlds(range(1000, 1020))
    pool_mean = float(np.mean(list(World(0, n_samples=8).ac_criteria.values())))
    evidence = _criteria_multiplier(0.0, False, seeds)
    blind = _criteria_multiplier(0.0, True, seeds)
    shown = [b - e for b, e in zip(blind, evidence)]
    paired = simulate.mean_ci(shown)
    bench_draw.record("active_critic criteria: own scores vs shuffled at refinement=0", paired, shown)
    assert paired[1] > 0, paired  # the items' own scores make better criteria than random ones
    gain_blind = [pool_mean - b for b in blind]
    bench_draw.record("active_critic criteria gain, shuffled scores, refinement=0", simulate.mean_ci(gain_blind),
                      gain_blind)
    lo, hi = simulate.mean_ci(gain_blind)[1:]
    assert lo <= 0, (lo, hi)  # random scores: no better than the criteria it started from, on average
    gain_scripted = [pool_mean - m for m in _criteria_multiplier(1.0, True, seeds)]
    scripted_blind = simulate.mean_ci(gain_scripted)
    bench_draw.record("active_critic criteria gain, shuffled scores, scripted", scripted_blind, gain_scripted)
    assert scripted_blind[1] > 0, scripted_blind


# --------------------------------------------------------------------------- the methods along their dials


@lru_cache(maxsize=None)
def _numbers(method: str, dial: str, seeds: tuple[int, ...], n_train: int, n_test: int,
             params: str | None) -> tuple[dict, ...]:
    """The benchmark's own table rows (:func:`simulate.run` on the draw's ``seeds``) for one method at one dial
    setting. Kept for the session: a test that reads the same runs does not make them again.

    Only the arms compared here run: HPSS's other searches and the plain direct and G-Eval baselines (rows of
    their own, slower) are left out.
    """
    own = bench_draw.params(method, json.loads(params) if params else None)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(simulate.hpss, "HPSS_ARMS", {"random": simulate.hpss.HPSS_ARMS["random"]})
        mp.setattr(simulate.world, "PLAIN_BASELINES", {})
        doc = simulate.run(seed_list=list(bench_draw.worlds(seeds)), methods=[method], n_train=n_train,
                           n_test=n_test, dial=[dial], params=[f"{method}={json.dumps(own)}"] if own else [])
    name, value = dial.split("=")
    assert doc["config"]["dials"][name] == float(value) and all(w["dials"][name] == float(value)
                                                                 for w in doc["worlds"])
    assert not [r for r in doc["rows"] if r["measure"] in ("error", "fit refused (ValueError)")], doc["notes"]
    return tuple(r for r in doc["numbers"] if r["method"] == method)


def _per_world(method: str, *, dial: str, seeds, n_train: int, n_test: int, rows,
               params: str | None = None) -> dict[tuple[str, str], list[float]]:
    """Per (measure, baseline) of ``rows`` (each a prefix of the row's own names), the per-world paired
    differences, turned so that positive means the method is better (a "lower is better" row flipped)."""
    numbers = _numbers(method, dial, tuple(seeds), n_train, n_test, params)
    out = {}
    for measure, baseline in rows:
        [row] = [r for r in numbers if r["measure"].startswith(measure) and r["baseline"].startswith(baseline)]
        assert len(row["per_seed"]) == len(list(seeds))
        sign = -1.0 if "lower is better" in row["measure"] else 1.0
        out[measure, baseline] = [sign * (m - b) for m, b in zip(row["per_seed"], row["baseline_per_seed"])]
    return out


def _differences(method: str, *, dial: str, seeds, n_train: int, n_test: int, rows,
                 params: str | None = None) -> dict[tuple[str, str], tuple[float, float, float]]:
    """The paired difference per row of ``rows`` as (mean, 95% low, 95% high) over the worlds, positive when
    the method is better (the benchmark's own interval, :func:`simulate.mean_ci`)."""
    out = {}
    for (measure, baseline), diffs in _per_world(method, dial=dial, seeds=seeds, n_train=n_train, n_test=n_test,
                                                 rows=rows, params=params).items():
        out[measure, baseline] = simulate.mean_ci(diffs)
        bench_draw.record(f"{method} {measure} vs {baseline} at {dial}", out[measure, baseline], diffs)
    return out


@dataclasses.dataclass(frozen=True)
class Case:
    """What one method's runs compare, on which worlds."""

    dial: str
    beats: tuple[tuple[str, str], ...]
    """(measure, baseline) rows the method wins at the default dial by a margin the seeds resolve on (nearly)
    every draw of worlds and method seed: the strongest baselines it does."""
    not_without: tuple[tuple[str, str], ...]
    """Rows it must not win at its dial's 0."""
    seeds: tuple[int, ...]
    n_train: int
    n_test: int
    params: str | None = None
    seeds_without: tuple[int, ...] | None = None
    """The worlds at the dial's 0, when fewer than ``seeds`` (a "does not beat" side needs no power)."""


CASES = {
    # HPSS's lead over random search at these sizes: +4.3 true-fitness points, spread 5.3 between worlds (30
    # worlds: 10 on each of draws 0-2, tools/bench_draws.py, 2026-11-29). On 6 worlds it resolved for method
    # seed 42 and not for 3 of 43-46 (issue 51). Worlds for a 90% chance to resolve on a draw (so 4 of 5 draws
    # with 92%): n = ((1.96 + 1.28) * 5.3 / 4.3)^2 = 16, 20 with the t-interval's wider quantile at that size.
    # Measured on 20: resolved on 4 of 5 draws; pooled over those 100 worlds +4.5, spread 7.3, which puts the
    # chance per draw nearer 75% (30 worlds would give 90%: a candidate when CI time allows)
    "hpss": Case("hpss", beats=(("true fitness", "random search"),), not_without=(("true fitness", "random search"),),
                 seeds=tuple(range(1000, 1020)), seeds_without=tuple(range(1000, 1010)),
                 n_train=40, n_test=10),
    # the paper's HD-Eval-LR aggregator: the default MLP costs most of a run's time (the tree, prompts and rows are
    # the same); the benchmark's figures use the default. 16 worlds at the dial's 1: on 4 the gain missed on
    # draw 1 (+0.117 [-0.012, +0.247]), on 8 on draws 2 and 3 (+0.015 [-0.027, +0.057], +0.041 [-0.016,
    # +0.098]; 40 worlds: about +0.06, spread about 0.06, so n = ((1.96 + 1.28) * 0.06 / 0.06)^2 = 11, 16 for
    # the worlds' uneven gains); 4 at its 0
    "hd_eval": Case("hd_eval", beats=(("test Pearson", "aggregator on layer 1 only"),),
                    not_without=(("test Pearson", "aggregator on layer 1 only"),),
                    seeds=tuple(range(1000, 1016)), seeds_without=tuple(range(1000, 1004)), n_train=60, n_test=40,
                    params='{"aggregator": "lr"}'),
    "active_critic": Case("active_critic",
                          beats=(("test Pearson", "no prompt optimisation"),
                                 ("planted noise multiplier of criteria", "without criteria refinement")),
                          not_without=(("test Pearson", "no prompt optimisation"), ("test Pearson", "best of")),
                          seeds=tuple(range(1000, 1012)), n_train=40, n_test=40),
}
"""The rows each method must win at the default dial and must not win without its planted structure. Each
``beats`` row is the strongest baseline the method beats by a margin these seeds resolve; the stronger ones it
does not (measured with 6 seeds from 1000 at the benchmark's sizes, 60 train and 100 test items): HPSS is ahead
of Greedy with restarts but not resolvably (Stepwise-Greedy with repeated passes and its own uniform proposals
it beats at those sizes, not at these); Active-Critic does not beat the best of as many random labelled sets
or, in test Pearson, itself without criteria refinement. docs/simulated-world.md has figures on more worlds."""


def _at(method: str, value: int, rows) -> dict[tuple[str, str], tuple[float, float, float]]:
    case = CASES[method]
    seeds = case.seeds if value == 1 else (case.seeds_without or case.seeds)
    return _differences(method, dial=f"{case.dial}={value}", seeds=seeds, n_train=case.n_train,
                        n_test=case.n_test, rows=rows, params=case.params)


@pytest.mark.parametrize("method", sorted(CASES))
def test_the_method_beats_its_baseline_at_the_default_dial(method):
    """CI asserts figures: a regression of the method (or of the benchmark's arms) fails here."""
    for (measure, baseline), (mean, low, high) in _at(method, 1, CASES[method].beats).items():
        assert low > 0, f"{method} {measure} vs {baseline}: {mean:+.3f} [{low:+.3f}, {high:+.3f}]"


@pytest.mark.parametrize("method", sorted(CASES))
def test_the_method_does_not_beat_its_baseline_without_the_planted_structure(method):
    """At its dial's 0 the structure the method looks for is gone: the paired difference's 95% interval reaches
    zero or below."""
    for (measure, baseline), (mean, low, high) in _at(method, 0, CASES[method].not_without).items():
        assert low <= 0, f"{method} {measure} vs {baseline} at 0: {mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def test_hypoeval_beats_its_strongest_ablations_at_the_default_dial():
    """HypoEval's selection (top 5 by reward with r > 0 at enough coverage) beats the paper's ablations of it on
    its own final bank: all hypotheses with r > 0 (the strongest), and a random 5 with r > 0.

    32 worlds: on 16 the test-Pearson margin over a random five hung on the path (+0.036 [-0.004, +0.075] once
    the generation prompt's wording changed); on 32 it resolves on worlds 1000-1031 and on 3000-3031 alike."""
    found = _differences("hypoeval", dial="hypoeval=1", seeds=range(1000, 1032), n_train=60, n_test=100,
                         rows=[("test Pearson", "all hypotheses with r > 0"), ("test Pearson", "random 5 with r > 0"),
                               ("mean planted quality", "random 5 with r > 0")])
    for (measure, baseline), (mean, low, high) in found.items():
        assert low > 0, f"hypoeval {measure} vs {baseline}: {mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def test_hypoeval_margin_over_a_random_five_shrinks_when_misleading_hypotheses_are_merely_unrelated():
    """The anti-correlated third of the pool is the part of HypoEval's margin over a random 5 of its bank that
    the default world gives by construction (the baseline keeps them; selection, which needs r > 0, drops them).
    With them merely unrelated the margin shrinks. It does not vanish: the bank still holds helpful and useless
    hypotheses and the reward tells them apart, which is selection working, not the planted anti-correlation.
    (Against the ablations that also keep only r > 0 the margin does not shrink: unrelated hypotheses that pass
    r > 0 by chance dilute them.)"""
    kw = dict(seeds=range(1000, 1008), n_train=40, n_test=40,
              rows=[("mean planted quality", "random 5 of its bank")])
    [(planted, low, _)] = _differences("hypoeval", dial="hypoeval=1", **kw).values()
    [(unrelated, _, _)] = _differences("hypoeval", dial="hypoeval=0", **kw).values()
    assert low > 0 and unrelated < planted * 0.8, (planted, unrelated)

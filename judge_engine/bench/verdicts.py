"""Verdict calibration: how often each claim the workbench prints fires where nothing is planted, and its power.

Simulated judges with known properties are scored against simulated human
scores at several sizes, with and without groups, many seeded draws each.
Every claim (a trust verdict or reason; probe warnings come from
:mod:`.verdict_probes` when present) is a :class:`Claim`: a name, whether it
is a screening hint, and a function that says whether it fired on one
simulated :class:`Scenario`. Its false-alarm rate is measured under the
claim's null judges and its power under its planted ones.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

# the records and simulations the claim modules share live in verdict_claims (re-exported: verdicts.Claim, ...)
from .verdict_claims import (GROUP_SIZE, JUDGES, SCREENING_CEILING, SIZES, WARNING_CEILING, Claim,  # noqa: F401
                             Scenario, groups_of, human_scores, judge_scores)


# --------------------------------------------------------------------------- the trust verdict, simulated


@dataclass(frozen=True)
class Selection:
    """How a method's defaults choose its judge on the training items, simulated with the method's own rule."""

    method: str
    candidates: int
    """K: candidates its defaults score (Active-Critic ``n_candidates=11``; HypoEval ``max_bank=20`` ranked,
    ``n_selected=5`` kept; HPSS ``budget=50`` plus the base strategy; HD-Eval one out-of-fold aggregator
    over its criteria)."""
    n_train: int
    """Training (or validation) items the choice rests on: a few dozen, as in the runs issue 49 describes."""


SELECTIONS = (Selection("active_critic", 11, 27), Selection("hypoeval", 20, 30), Selection("hpss", 51, 30),
              Selection("hd_eval", 5, 30))
HYPOEVAL_SELECTED = 5
"""HypoEval's ``n_selected`` default: the judge scores with the best five hypotheses."""


def _training(selection: Selection, judge: str, rng: np.random.Generator):
    """The :class:`judge_engine.trust.TrainingFigure` of a judge chosen by ``selection``'s rule among K
    simulated candidates of kind ``judge``; None when the method's rule adopts none (its fit fails)."""
    from .. import metrics
    from ..trust import TrainingFigure

    n, k = selection.n_train, selection.candidates
    human = human_scores(n, False, rng)
    cands = [judge_scores(judge, human, rng) for _ in range(k)]
    if selection.method == "active_critic":
        from ..methods.active_critic.prompt_optimization import candidate_fitness, q_objective, select_candidate
        qs = [q_objective(human, c) for c in cands]
        try:
            best, _ = select_candidate([candidate_fitness(q, n, n) for q, _ in qs])
        except ValueError:  # no set with Q > 0: the fit ends without a judge
            return None
        return TrainingFigure(qs[best][1]["pearson"], "training Pearson of the chosen demonstration set", n, n,
                              candidates=k)
    if selection.method == "hpss":
        from ..methods.hpss.method import select_best
        fits = {i: metrics.selection_fitness(human, c, coefficient="spearman") for i, c in enumerate(cands)}
        best = select_best(fits)
        if best is None:
            return None
        return TrainingFigure(fits[best].correlation, "Spearman of the chosen strategy", n, n, candidates=k)
    if selection.method == "hypoeval":
        fits = [metrics.selection_fitness(human, c) for c in cands]
        chosen = sorted((f for f in fits if f.selectable), key=lambda f: f.value, reverse=True)[:HYPOEVAL_SELECTED]
        if not chosen:
            return None
        return TrainingFigure(float(np.mean([f.correlation for f in chosen])), "mean training Pearson", n, n,
                              parts=tuple((f"h{i}", f.correlation) for i, f in enumerate(chosen)),
                              candidates=k, top=len(chosen))
    from ..aggregate import Aggregator, cross_validated_correlation
    agg = Aggregator.fit(np.column_stack(cands), human[:, None], kind="lr",
                         features=[f"c{i}" for i in range(k)], targets=["y"])
    value = cross_validated_correlation(agg).get("y", {}).get("pearson", float("nan"))
    return TrainingFigure(value if np.isfinite(value) else None, "out-of-fold Pearson of the aggregator", n, n)


def _test(scenario: Scenario, rng: np.random.Generator, n_bootstrap: int, judge: str | None = None):
    """Test figures the way a run's summary makes them (natural level: group when grouped) and the data."""
    from .. import metrics
    from ..trust import level_figure

    human = human_scores(scenario.n_items, scenario.grouped, rng)
    pred = judge_scores(judge or scenario.judge, human, rng)
    groups = groups_of(scenario.n_items, scenario.grouped)
    seed = int(rng.integers(2 ** 31))
    level = "group" if scenario.grouped else "sample"

    def figure(at: str):
        if at == "sample":
            # meta_evaluate's own sample-level resampling for Pearson alone: it also bootstraps Kendall's tau,
            # ~2 s a draw on a shared machine, which would make thousands of draws take hours
            # whole groups resampled where items share one, as a run's summary does (meta_evaluate, issue 63)
            c = metrics.sample_correlation(human, pred, statistic="pearson", n_bootstrap=n_bootstrap, seed=seed,
                                           groups=groups if scenario.grouped else None)
            return level_figure(at, {"pearson": c.value, "pearson_ci": [c.ci_low, c.ci_high], "n": len(human),
                                     "n_groups": len(set(groups.tolist())) if scenario.grouped else 0,
                                     "resampled": "groups" if scenario.grouped else "items"})
        return level_figure(at, metrics.meta_evaluate(human, pred, level=at, groups=groups, n_bootstrap=n_bootstrap,
                                                      seed=seed).to_dict())
    return figure(level), figure("sample") if scenario.grouped else None, human, pred, groups


N_BOOTSTRAP = 1000
"""Resamples of every interval and paired test in the simulation (the workbench's own default)."""


def _verdict(scenario: Scenario, rng: np.random.Generator, selection: Selection | None,
             n_bootstrap: int = N_BOOTSTRAP) -> tuple[str, tuple[str, ...]] | None:
    """The real :func:`judge_engine.trust.verdict` of one simulated run (None: the method adopted no judge)."""
    from .. import trust

    training = None
    if selection is not None:
        training = _training(selection, scenario.judge, rng)
        if training is None:
            return None
    test, sample, *_ = _test(scenario, rng, n_bootstrap)
    return trust.verdict(training, test, sample, (), scenario.n_items, 0)


def _says(verdict_is: str | None = None, reason: str | None = None, selection: Selection | None = None):
    def fires(scenario: Scenario, rng: np.random.Generator) -> bool:
        out = _verdict(scenario, rng, selection)
        if out is None:
            return False
        said, reasons = out
        return (verdict_is is None or said == verdict_is) and (reason is None or any(reason in r for r in reasons))
    return fires


def _training_only(reason: str):
    """A training-figure claim with no selection: the figure on ``n_items`` items, one candidate."""
    def fires(scenario: Scenario, rng: np.random.Generator) -> bool:
        from .. import trust
        from ..trust import TrainingFigure
        human = human_scores(scenario.n_items, False, rng)
        r = float(stats.pearsonr(human, judge_scores(scenario.judge, human, rng))[0])
        training = TrainingFigure(r, "training Pearson", scenario.n_items, scenario.n_items)
        test = trust.TestFigure("sample", 0.5, (0.3, 0.7), "", 100, 0, 0)  # a test figure that says nothing
        return any(reason in x for x in trust.verdict(training, test, None, (), 100, 0)[1])
    return fires


def _old_training_test(selection: Selection):
    """The rule before issue 49: the winner's training figure tested as if one candidate had been tried."""
    def fires(scenario: Scenario, rng: np.random.Generator) -> bool:
        from .. import trust
        training = _training(selection, scenario.judge, rng)
        if training is None or training.value is None:
            return False
        one = trust.TrainingFigure(training.value, training.measure, training.n_items, training.n_scored)
        return trust.training_p_value(one) < trust.TRAINING_ALPHA / 2
    return fires


def _below_baseline(scenario: Scenario, rng: np.random.Generator, baselines: int = 1) -> bool:
    """Whether the verdict warns "significantly below baseline" with ``baselines`` runs to compare with, each
    scored by the world's baseline judge on its own (direct, G-Eval and a peer on the pages)."""
    from .. import compare, trust
    from ..trust_baselines import holm

    test, sample, human, pred, groups = _test(scenario, rng, N_BOOTSTRAP)
    level = trust.comparison_level(test)
    found = []
    for k in range(baselines):
        base = judge_scores("equal_to_baseline", human, rng)
        diff, p = compare.paired_bootstrap(human, pred, base, level=level, groups=list(groups),
                                           statistic=trust.STATISTIC, seed=int(rng.integers(2 ** 31)))
        found.append(trust.baseline_difference(k, "direct", level, diff, p, scenario.n_items))
    return any("significantly below baseline" in r for r in trust.verdict(None, test, sample, holm(found),
                                                                           scenario.n_items, 0)[1])


def _below_one_of_three(scenario: Scenario, rng: np.random.Generator) -> bool:
    return _below_baseline(scenario, rng, baselines=3)


def trust_claims() -> list[Claim]:
    """Every claim the trust verdict prints, with the judges under which it is a false alarm or power."""
    out = [Claim("trust: ok (baseline method, nothing chosen)", False, _says("ok"),
                 null=("noise", "near_constant", "constant"), planted=("human_plus_noise",))]
    for sel in SELECTIONS:
        out.append(Claim(f"trust: ok ({sel.method}, chosen among {sel.candidates} on {sel.n_train} items)", False,
                         _says("ok", selection=sel), null=("noise",), planted=("human_plus_noise",),
                         candidates=(sel.candidates,)))
    out += [
        Claim("warning: anti-correlated on the test items (worse than chance)", False,
              _says("warning", "anti-correlated on the test items"), null=("noise", "near_constant"),
              planted=("anti_correlated",)),
        Claim("warning: anti-correlated on its training items", False, _training_only("anti-correlated on its"),
              null=("noise",), planted=("anti_correlated",), grouped=(False,)),
        Claim("warning: significantly below a baseline", False, _below_baseline, null=("equal_to_baseline",),
              planted=("worse_than_baseline",)),
        Claim("warning: significantly below one of 3 baselines (Holm-adjusted)", False, _below_one_of_three,
              null=("equal_to_baseline",), planted=("worse_than_baseline",)),
        Claim("warning: no test correlation (scores do not vary)", False, _says("warning", "no test pearson"),
              null=("noise", "near_constant"), planted=("constant",)),
        Claim("too few items to say", False, _says("too few items to say"), null=(),
              planted=("human_plus_noise", "noise")),
        Claim("not shown to agree (test interval reaches zero)", False,
              _says("not shown to agree", "not shown to agree on the test items"), null=(), planted=("noise",)),
        Claim("old rule (retired): training figure significant as if 1 candidate, Active-Critic best of 11", False,
              _old_training_test(SELECTIONS[0]), null=("noise",), planted=("human_plus_noise",),
              grouped=(False,), sizes=(SELECTIONS[0].n_train,), candidates=(11,), retired=True),
    ]
    return out


def all_claims() -> list[Claim]:
    """The trust claims, the null worlds of :mod:`.verdict_worlds` and, when :mod:`.verdict_probes` exists, its
    ``PROBE_CLAIMS``."""
    from .verdict_worlds import WORLD_CLAIMS

    claims = trust_claims() + WORLD_CLAIMS
    try:
        probes = importlib.import_module(".verdict_probes", __package__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.verdict_probes":
            raise  # a broken import inside it must not pass for "no probe claims yet"
        return claims
    return claims + list(probes.PROBE_CLAIMS)


# --------------------------------------------------------------------------- the benchmark


def measure(claim: Claim, judge: str, n_items: int, grouped: bool, candidates: int, draws: int,
            seed: int) -> dict[str, Any]:
    """Rate at which ``claim`` fires in ``draws`` seeded simulations of one scenario, with its 95% interval."""
    scenario = Scenario(judge, n_items, grouped, candidates)
    # one stream per (scenario, seed): adding a claim or a size does not change the draws of the others
    key = [seed, n_items, int(grouped), candidates, *judge.encode(), *claim.name.encode()]
    rng = np.random.default_rng(key)
    fired = sum(bool(claim.fires(scenario, rng)) for _ in range(draws))
    ci = stats.binomtest(fired, draws).proportion_ci(0.95)
    null = judge in claim.null
    target = None if claim.retired or not null else claim.ceiling
    return {"claim": claim.name, "kind": "false alarm" if null else "power", "judge": judge, "n_items": n_items,
            "grouped": grouped, "candidates": candidates, "draws": draws, "seed": seed, "fired": fired,
            "rate": fired / draws,
            "ci_high": float(ci.high), "target": target, "met": None if target is None else fired / draws <= target}


def run(*, draws: int = 200, seed: int = 0, sizes: list[int] | None = None, claims: list[str] | None = None,
        doc_out: str | None = None, kinds: list[str] | None = None, shard: str | None = None,
        rows_out: str | None = None, **_: Any) -> dict[str, Any]:
    """Every claim at every scenario it names; ``claims`` filters by substring of the name, ``kinds`` by "false
    alarm" or "power". ``shard`` ``"i/k"`` measures every k-th cell from the i-th (1-based), so k processes share
    the table (a cell's draws do not depend on which process measures it, :func:`measure`); ``rows_out`` appends
    each cell to a JSON-lines file as soon as it is measured (a long run keeps what it measured), and a cell already
    there with as many draws is not measured again. Claims are measured in the order ``claims`` names them."""
    import json

    from . import progress_bar, result

    every = all_claims()
    chosen = ([c for w in claims for c in every if w in c.name] if claims else every)
    chosen = list(dict.fromkeys(chosen))  # a claim two words name is measured once
    done: set[tuple] = set()
    if rows_out and Path(rows_out).exists():
        for line in Path(rows_out).read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            done.add((r["claim"], r["judge"], r["n_items"], r["grouped"], r["candidates"], r["draws"], r["seed"]
                      if "seed" in r else seed))
    # a retired rule is measured where it was used; every other claim at the sizes asked for
    jobs = [(c, j, n, g, k) for c in chosen for j in (*c.null, *c.planted)
            for n in (c.sizes if c.retired or not sizes else sizes) for g in c.grouped for k in c.candidates
            if not kinds or ("false alarm" if j in c.null else "power") in kinds]
    if shard:
        i, k_shards = (int(x) for x in shard.split("/"))
        jobs = jobs[i - 1::k_shards]
    # after sharding: which cells a shard holds does not depend on what the others have measured so far
    jobs = [(c, j, n, g, k) for c, j, n, g, k in jobs if (c.name, j, n, g, k, draws, seed) not in done]
    rows = []
    bar = progress_bar(len(jobs), "verdict claims")
    for c, j, n, g, k in jobs:
        rows.append(measure(c, j, n, g, k, draws, seed))
        if rows_out:
            with open(rows_out, "a", encoding="utf-8") as out:
                out.write(json.dumps(rows[-1]) + "\n")
        bar.update(1)
    bar.close()
    checked = [r for r in rows if r["target"] is not None]
    doc = result("verdicts", config={"draws": draws, "seed": seed, "sizes": sizes or list(SIZES),
                                     "n_bootstrap": N_BOOTSTRAP,
                                     "selections": [vars(s) for s in SELECTIONS]}, rows=rows,
                 summary={"claims": len(chosen), "scenarios": len(rows), "ceilings_checked": len(checked),
                          "ceilings_met": sum(bool(r["met"]) for r in checked)},
                 notes=["false alarm: the claim fired where nothing it names was planted (ceiling 5%, 10% for a "
                        "screening hint); power: it fired where it was planted",
                        "ci_high: upper end of the exact 95% binomial interval of the rate"])
    if doc_out:
        Path(doc_out).parent.mkdir(parents=True, exist_ok=True)
        Path(doc_out).write_text(markdown(doc) + "\n", encoding="utf-8")
    return doc


def markdown(doc: dict[str, Any]) -> str:
    """The table docs/reliability.md carries: one row per claim, judge, grouping and K; a column per size."""
    sizes = sorted({r["n_items"] for r in doc["rows"]})
    cells: dict[tuple, dict[int, dict[str, Any]]] = {}
    for r in doc["rows"]:
        cells.setdefault((r["claim"], r["kind"], r["judge"], r["grouped"], r["candidates"]), {})[r["n_items"]] = r
    cfg = doc["config"]
    lines = [f"Measured {doc['date'][:10]} with `python -m judge_engine.bench verdicts --draws {cfg['draws']} "
             f"--seed {cfg['seed']}` ({cfg['n_bootstrap']} bootstrap resamples per interval): rate at which each "
             "claim fired, per number of test items.", "",
             "| claim | rate of | judge | groups | K | " + " | ".join(f"n={n}" for n in sizes) + " | target | met |",
             "|---|---|---|---|---|" + "---|" * len(sizes) + "---|---|"]
    for (claim, kind, judge, grouped, k), by_n in cells.items():
        rates = [f"{by_n[n]['rate']:.3f}" if n in by_n else "" for n in sizes]
        targets = {r["target"] for r in by_n.values()}
        target = "" if targets == {None} else f"<= {max(t for t in targets if t is not None):.2f}"
        met = "" if target == "" else ("yes" if all(r["met"] for r in by_n.values()) else "**no**")
        lines.append(f"| {claim} | {kind} | {judge} | {'yes' if grouped else 'no'} | {k} | " + " | ".join(rates)
                     + f" | {target} | {met} |")
    return "\n".join(lines)


def cells_markdown(rows: list[dict[str, Any]]) -> str:
    """One table line per cell, with its count and Wilson 95% interval (:func:`judge_engine.metrics.rate_interval`):
    the form docs/reliability.md gives 400-draw cells in; ``rows`` as :func:`measure` returns them (or
    ``--rows-out`` holds them), in the order given."""
    from ..metrics import rate_interval

    lines = ["| claim | rate of | judge | groups | K | items | fired / draws | rate | Wilson 95% | ceiling | met |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        low, high = rate_interval(r["fired"], r["draws"])
        target = "" if r["target"] is None else f"<= {r['target']:.2f}"
        met = "" if r["met"] is None else ("yes" if r["met"] else "**no**")
        lines.append(f"| {r['claim']} | {r['kind']} | {r['judge']} | {'yes' if r['grouped'] else 'no'} | "
                     f"{r['candidates']} | {r['n_items']} | {r['fired']} / {r['draws']} | {r['rate']:.3f} | "
                     f"[{low:.3f}, {high:.3f}] | {target} | {met} |")
    return "\n".join(lines)


def add_arguments(parser) -> None:
    parser.add_argument("--draws", type=int, default=200, help="simulated runs per scenario")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help=f"test items (default {list(SIZES)})")
    parser.add_argument("--claims", nargs="+", default=None, help="only claims whose name contains one of these")
    parser.add_argument("--kinds", nargs="+", default=None, choices=("false alarm", "power"),
                        help="only cells of these kinds (false alarms first, then power, on a busy machine)")
    parser.add_argument("--shard", default=None, help="i/k: every k-th cell from the i-th, for k processes")
    parser.add_argument("--rows-out", default=None, help="append each measured cell to this JSON-lines file")
    parser.add_argument("--out", dest="doc_out", default=None,
                        help="also write the Markdown table to this file (the JSON goes to the folder of the main --out as always)")

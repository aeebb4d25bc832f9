"""Simulated world: does each method find what was planted, against its paper's baselines?

Per seed a :class:`~judge_engine.bench.simulated_judge.World` is made (samples with latent
sub-criteria, human scores with planted weights, planted prompt effects and
a fraction of malformed replies) and every method runs at its paper
defaults (its default parameters) through the one LLM call path, answered by
the :class:`~judge_engine.bench.simulated_judge.SimulatedBackend`. Train and test parts are
group-disjoint (whole sources). The worlds are seeds 0..N-1 unless
``--seed-offset`` or ``--seed-list`` names others (1000 and up were not used
to tune the code); the seeds are in the JSON config (``world_seeds``).

Every method's rows include the papers' external baselines, direct scoring
and G-Eval, by test Pearson on the same test items (their prompts get a
noisy reading of the aspect's human level from the simulated judge; they
learn nothing from the training items). The rows per method:

``hpss``
    true fitness (population Pearson × 100 of the planted noise model, known
    analytically for all 12,960 strategies) of the strategy found, and its
    regret to the global optimum, vs random search (distinct random
    strategies), Greedy (restarting from a random strategy whenever its climb
    has evaluated every neighbour of its best), Stepwise-Greedy (its pass
    repeated, restarting when a pass finds nothing new) and HPSS without its
    heuristic (its initialization and population search with proposals that
    ignore the advantages), each with HPSS's number of evaluations (71) on
    HPSS's validation set, fitness and selection rule (paper Table 4 / §4.1;
    the paper's Greedy stalls short of 71 and its Stepwise-Greedy makes 21);
    vs the MT-Bench base prompt; and the test Pearson of HPSS's judge.
``hypoeval``
    mean planted quality and test Pearson of the selected hypotheses vs the
    paper's ablations of selection on its own final bank (all hypotheses
    with r > 0, a seeded random 5 with r > 0, the top 5 by stage-1 reward),
    a seeded random 5 of the whole bank, and generation without refinement
    (a fit with ``n_refine=0``); the best 5 of the planted pool is the
    optimum. "r > 0" is the method's own qualification (a positive training
    Pearson at enough coverage).
``hd_eval``
    test Pearson of the aggregator vs the same aggregator fitted on layer 1
    only (the paper's "w/o layers 2, 3": ``max_layers=1`` on the same split,
    what the hierarchy adds), the mean of the layer-1 scores and the target
    aspect's layer-1 score alone; the layer-1 aggregator vs the layer-1 mean
    (what the aggregator adds); the optimum being the noise-free human
    formula; permutation importance's AUC of informative vs null
    sub-criteria (``sklearn.metrics.roc_auc_score``); the share of
    informative criteria among those the pruning chose to decompose vs the
    share among the candidates (a random choice).
``active_critic``
    test Pearson of the judge with its chosen demonstrations vs the best of
    as many random labelled sets as its search scores (``n_candidates``),
    chosen by the method's own rule on the training split, vs no prompt
    optimisation (zero-shot) and vs the method without criteria refinement
    (``max_batches=1``: the initial criteria only); the planted noise
    multiplier of the chosen demonstrations and of the inferred criteria vs
    those baselines' and random criteria (lower is better).

Budgets: every row records the LLM calls (the ledger's ``calls``) each arm
made to build its judge, median over seeds, method vs baseline; the table
shows them. The search baselines of HPSS and Active-Critic get the method's
number of strategy evaluations or candidate sets, so their calls differ only
by retries and auxiliaries; the Active-Critic baselines share the method's
stage-1 calls (they use its task description and criteria), the HypoEval
baselines drawn from its bank share its fit. Direct scoring, G-Eval, the
base prompt, zero-shot and the layer-1 mean learn nothing: their few or zero
calls are the point of those rows. An arm that stops short of its budget
(an HPSS search that runs out of unexplored proposals) is named in the
row's note.

The table gives, per row, the mean over seeds with a 95% t-interval, the
baseline's, the optimum's mean, and the 95% t-interval of the paired
per-seed difference (method - baseline). Everything planted is written to
the JSON (``worlds``), with each seed's measures. The runners take a
``control`` argument that mutates the method (HPSS proposing without its
advantages, HypoEval keeping its worst or a random five, HD-Eval not
decomposing, Active-Critic with a random demonstration set): the controls
that must fail, tests/test_bench_controls.py; the command line never sets it.

Dials (``--dial``, :class:`~judge_engine.bench.simulated_judge.Dials`): the default world
plants each method's structure in the method's own terms (per-factor noise
for HPSS, sharper children for HD-Eval, anti-correlated misleading
hypotheses for HypoEval, demonstrations and criteria that matter for
Active-Critic, refinements scripted to improve). Each dial runs from 1 (that
world) to 0 (a world without the structure), so a row can be read along
it: where a method's margin vanishes. The dials are in the JSON config and
in every world.

The package, one job per module: :mod:`.command` (the options and the
loop over worlds), :mod:`.world` (the call path, the split and the
measures every method shares), one module per method's rows (:mod:`.hpss`, :mod:`.hd_eval`,
:mod:`.hypoeval`, :mod:`.active_critic`) and :mod:`.summary` (the table).
The names below are the ones used outside the package (the command line,
tests, tools/simulate_worlds.py, other benchmarks). ``HPSS_ARMS`` and
``PLAIN_BASELINES`` are left out on purpose: tests swap them, and a swap
takes effect only where they are read (:mod:`.hpss`, :mod:`.world`), so a
test that swaps them here fails (no such name) instead of changing nothing.
"""

from ..simulated_judge import World
from .active_critic import SCORING_STEPS, best_of_random_sets, run_active_critic
from .command import METHODS, N_TEST, N_TRAIN, RUNNERS, add_arguments, parse_dials, run, world_seeds_of
from .hd_eval import run_hd_eval
from .hpss import hpss_arm, run_hpss
from .hypoeval import run_hypoeval
from .summary import TABLE_COLUMNS, markdown, mean_ci, summarise
from .world import _aspect, make_llm, measure, plain_baselines, split

__all__ = ["METHODS", "N_TEST", "N_TRAIN", "RUNNERS", "SCORING_STEPS", "TABLE_COLUMNS", "World", "_aspect",
           "add_arguments", "best_of_random_sets", "hpss_arm", "make_llm", "markdown", "mean_ci", "measure",
           "parse_dials", "plain_baselines", "run", "run_active_critic", "run_hd_eval", "run_hpss", "run_hypoeval",
           "split", "summarise", "world_seeds_of"]

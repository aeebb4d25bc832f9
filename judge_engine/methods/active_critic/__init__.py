"""Active-Critic (Xu, Hu and Jiang): the judge infers the task and its criteria from scored examples.

The method in eight modules: one per stage of the paper, its settings, its learned state, and the method:

* :mod:`.examples` — the scored examples (§2.2, §3): human scores on 0-100
  and back, mini-batches, how an example is shown in a prompt;
* :mod:`.task_description` — stage 1, the task description (§4.1, Table 14);
* :mod:`.criteria_definition` — stage 1, the criteria: init, observe and
  refine per mini-batch (§4.1, Algorithm 1, Table 15) and their rubric checks;
* :mod:`.explained_scoring` — stage 2, McS-E and OS-E, the explained
  criterion and overall scores (§4.2, Tables 16-17);
* :mod:`.prompt_optimization` — stage 2, the demonstration search (§4.2
  "Prompt Optimization", App. D.2, Eqs. 4-5);
* :mod:`.settings` — :class:`ActiveCriticSettings`, the parameters as one
  typed value that the stages take, built once per fit and per scoring;
* :mod:`.state` — :class:`ActiveCriticState`, the learned state
  (``Judge.state``) as a record in its stored JSON shape, which the fit
  writes and scoring and the page read; :func:`edited_judge` for a rescore
  with a person's task description and criteria;
* :mod:`.method` — the registered :class:`ActiveCritic` method: ``fit`` runs
  ``task_description_step``, ``criteria_definition_step`` and
  ``prompt_optimization_step`` (one per section of the paper, each in its
  stage's module) with the settings.

The names below are the ones used outside the package (the page, the
benchmarks, the tests); the rest stay in their module.

The paper's two stages map onto public functions of this package:

Human scores (§2.2)
    :func:`normalize_score` puts every human score on 0-100. The paper gives
    no formula; its appendix examples (SummEval training items at 88.33 and
    91.67) fit ``100 * r / r_max``, so that is the default (``"ratio"``);
    min-max over the aspect's range stays an option (``"minmax"``). A linear
    map changes no correlation, only the numbers the model sees in the
    prompts. :func:`to_aspect_scale` is the exact inverse: a judge score is
    mapped back linearly and never clipped, so a ratio-normalised judge
    score below ``100 * r_min / r_max`` lands below the aspect's minimum.
Stage 1, task inference (§4.1, Table 14, App. B)
    :func:`make_minibatches` (batches of 5, at most 25);
    :func:`infer_task_description` (an observation per batch, then a task
    description conditioned on the previous one; stops after 5 consecutive
    COMPLETE answers); :func:`define_criteria` (Algorithm 1, Table 15:
    init, then observe / refine per batch with the same stopping rule;
    4-10 criteria). The ``criteria_form`` parameter chooses how criteria
    are asked for: the paper's named criteria with definitions, or (ours,
    for small models) statements that start with "A good <output>"
    (:func:`criteria_opener`) under a grammar, each named from its
    statement. Why the sentence form exists: a very small model (the
    embedded 135M one) asked for free names tends to name criteria after
    the scored aspect or the schema's keys; completing "A good summary ..."
    leaves it only the facet to write, and that it writes usably. ``auto``
    uses it on the embedded model only
    (:func:`judge_engine.methods.base.resolve_criteria_form`). Named criteria
    are also what a person edits and what the free-text fallback reads.
Stage 2, scoring alignment (§4.2, Tables 16-17)
    :func:`~.explained_scoring.score_item`, one item's calls: McS-E (one
    call scores every criterion 0-100 with an explanation, as JSON), then
    OS-E (the overall 0-100 score with an explanation and an error
    analysis, its prompt carrying that item's criterion scores).
    AC-Fine runs both; AC-Coarse runs OS-E alone with the criteria listed.
    :func:`run_pipeline` sends the items' calls as chains: an item's OS-E
    call goes out when its own McS-E reply is in, not after every item's.
    Unreadable replies are missing (NaN) and counted, never a default
    number; an OS-E reply without a score gets one follow-up turn first
    (``retry_unparsed``, not in the paper), a criteria reply without usable
    JSON one retry (ours: the paper asks for JSON, §4.1 footnote 1, and does
    not say what happens to a reply without it).
Structured replies
    Every generation step but the free-text observations asks the backend
    for JSON with a schema from :mod:`judge_engine.structured`: the task
    description (``TASK_DESCRIPTION``), the criteria (``CRITERIA``, 4-10
    named criteria or statements, :func:`criteria_schema`), McS-E's explained criterion scores and OS-E's explained
    overall score (both ``EXPLAINED_SCORES``; McS-E holds ``criteria``, OS-E
    ``explanation`` and ``overall``), and the score-first follow-up turns
    (``SCORE``). Replies are read with :func:`judge_engine.structured.read_json`;
    the free-text parsers below are the fallback for backends that ignore
    the schema, and every reply records which path read it (``read``:
    ``json``, ``text`` or ``missing``).
Prompt optimization (§4.2 "Prompt Optimization", App. D.2, Eqs. 4-5)
    :func:`optimize_demonstrations`: K candidate demonstration sets, each
    scored on the training split by Q = Pearson + Spearman + Kendall
    (:func:`judge_engine.metrics.correlations`) on the items it scored; the
    best set is frozen for the test split. Selection is coverage-aware
    (:func:`select_candidate`): Q is shrunk by the share of items scored
    (:func:`judge_engine.metrics.coverage_adjusted`), a set that scored
    fewer than 80% of its items is ineligible, and a set with Q <= 0 is
    never selected on its own. DSPy is not installed here, so this is our own
    implementation of the random search of DSPy's
    ``BootstrapFewShotWithRandomSearch`` (zero-shot candidate, a labeled-only
    candidate, then bootstrapped traces filled up with labeled examples),
    every call going through the engine's one LLM path, cache and ledger.

Rubric checks
    The inferred task description and criteria go through
    :mod:`judge_engine.rubric_checks` at fit time (:func:`check_task_description`,
    :func:`check_criteria`: named criteria by
    :func:`judge_engine.rubric_checks.check_criterion`, statements by
    :func:`judge_engine.rubric_checks.check_statement`); at scoring time an OS-E explanation that is empty
    or one line repeated over and over (:func:`check_explanation`) is not the
    verdict's explanation: ``Verdict.metadata["explanation_rejected"]`` says
    why, the reply stays in ``raw``, and the run summary counts them
    (``explanations_rejected``).

Human in the loop: the ``task_description`` and ``criteria`` parameters, when
given, replace the inferred ones (stage 1 is skipped for them), so a person's
edits are the starting point of the next run and the cache answers every call
the edit does not change.

References
----------
Xu, S., Hu, J. and Jiang, M. (2024). Large Language Models Are Active Critics
in NLG Evaluation. arXiv:2410.10724.
"""

from .criteria_definition import (CRITERIA_REFINE_NAMED_TEMPLATE, CRITERIA_REFINE_TEMPLATE, CRITERIA_REFUSED_RETRY,
                                  CheckedCriteria, CriteriaReply, DefinedCriteria, check_criteria, criteria_opener,
                                  criteria_qualities_prompt, define_criteria)
from .criteria_reading import (MAX_CRITERIA, MIN_CRITERIA, criteria_schema, criteria_shape,
                               parse_criteria_and_observations, parse_criteria_lines, qualities_schema, read_criteria,
                               read_qualities, statement_criteria)
from .examples import NORMALIZATIONS, demo_count, make_minibatches, normalize_score, to_aspect_scale
from .explained_scoring import (OSE_SCHEMA, WEIGHTED_MAX_TOKENS, WEIGHTED_SCHEMA, check_explanation, mcse_schema,
                                parse_criteria_scores, parse_overall, read_criteria_scores, read_overall, render_demos,
                                run_pipeline)
from .method import ActiveCritic
from .prompt_optimization import (NO_POSITIVE_SET, DemonstrationSearch, candidate_fitness, optimize_demonstrations,
                                  propose_candidates, q_objective, select_candidate)
from .settings import ActiveCriticSettings
from .state import ActiveCriticState, edited_judge
from .task_description import (TASK_SCHEMA, CheckedTaskDescription, InferredTask, check_task_description,
                               extract_task_description, infer_task_description, read_task_description, task_phrase)

__all__ = ["CRITERIA_REFINE_NAMED_TEMPLATE", "CRITERIA_REFINE_TEMPLATE", "CRITERIA_REFUSED_RETRY", "MAX_CRITERIA",
           "MIN_CRITERIA", "NORMALIZATIONS", "NO_POSITIVE_SET", "OSE_SCHEMA", "TASK_SCHEMA", "WEIGHTED_MAX_TOKENS",
           "WEIGHTED_SCHEMA", "ActiveCritic", "ActiveCriticSettings", "ActiveCriticState", "CheckedCriteria",
           "CheckedTaskDescription", "CriteriaReply", "DefinedCriteria", "DemonstrationSearch", "InferredTask",
           "candidate_fitness", "check_criteria", "check_explanation", "check_task_description", "criteria_opener",
           "criteria_qualities_prompt", "criteria_schema", "criteria_shape", "define_criteria", "demo_count",
           "edited_judge", "extract_task_description", "infer_task_description", "make_minibatches", "mcse_schema",
           "normalize_score", "optimize_demonstrations", "parse_criteria_and_observations", "parse_criteria_lines",
           "parse_criteria_scores", "parse_overall", "propose_candidates", "q_objective", "qualities_schema",
           "read_criteria", "read_criteria_scores", "read_overall", "read_qualities", "read_task_description",
           "render_demos", "run_pipeline", "select_candidate", "statement_criteria", "task_phrase", "to_aspect_scale"]

"""Active-Critic (Xu, Hu and Jiang): the judge infers the task and its criteria from scored examples.

The paper's two stages map onto public functions of this module:

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
    :func:`score_multi_criteria` (McS-E: one call scores every criterion
    0-100 with an explanation, as JSON) and :func:`score_overall` (OS-E:
    the overall 0-100 score with an explanation and an error analysis).
    AC-Fine runs both; AC-Coarse runs OS-E alone with the criteria listed.
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

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

from .. import structured
from ..llm import LLM, GenerationParams, Request
from ..metrics import (
    MIN_SELECTION_COVERAGE,
    SelectionFitness,
    correlations,
    coverage_adjusted,
)
from ..parsing import parse_json_object, parse_score, read_weighted
from ..prompting import DEFAULT_OPENER, TaskInfo, Template, fence, load_template
from ..records import Aspect, Sample, Verdict
from ..rubric_checks import (
    check_criterion,
    check_entry,
    check_statement,
    is_statement,
    statement_body,
    statement_name,
)
from .base import (
    CRITERIA_FORM_LABELS,
    CRITERIA_FORMS,
    EventSink,
    FitContext,
    Interval,
    OptionalInterval,
    OptionalType,
    Judge,
    Method,
    Options,
    Progress,
    judge_warning,
    register,
    resolve_criteria_form,
    small_model_hint,
)

TASK_OBSERVE_TEMPLATE = load_template("active_critic_task_observe")
TASK_DESCRIBE_TEMPLATE = load_template("active_critic_task_describe")
# the criteria steps have one template per form: ``*_named`` asks for the paper's named criteria, the plain
# name for statements that start with an opener (the sentence form, for small models)
CRITERIA_INIT_NAMED_TEMPLATE = load_template("active_critic_criteria_init_named")
CRITERIA_INIT_TEMPLATE = load_template("active_critic_criteria_init")
CRITERIA_OBSERVE_TEMPLATE = load_template("active_critic_criteria_observe")
CRITERIA_REFINE_NAMED_TEMPLATE = load_template("active_critic_criteria_refine_named")
CRITERIA_REFINE_TEMPLATE = load_template("active_critic_criteria_refine")
JSON_RETRY_TEMPLATE = load_template("active_critic_json_retry")
CRITERIA_LIST_TEMPLATE = load_template("active_critic_criteria_list")
CRITERIA_QUALITIES_NAMED_TEMPLATE = load_template("active_critic_criteria_qualities_named")
CRITERIA_QUALITIES_TEMPLATE = load_template("active_critic_criteria_qualities")
SCORE_RETRY_TEMPLATE = load_template("active_critic_score_retry")
WEIGHTED_SCORE_TEMPLATE = load_template("active_critic_weighted_score")
MCSE_TEMPLATE = load_template("active_critic_mcse")
OSE_TEMPLATE = load_template("active_critic_ose")
OSE_COARSE_TEMPLATE = load_template("active_critic_ose_coarse")

COMPLETE_PATTERN = re.compile(r"^\W*COMPLETE\b", re.IGNORECASE)
"""An observation reply that declares the observations complete (the stopping signal)."""
TASK_SENTENCE_PATTERN = re.compile(r"The evaluation task is\b[^\n]*(?:\n(?!\s*\n)[^\n]*)*", re.IGNORECASE)
"""The filled-in summary sentence of the task-description prompt (item 4)."""
TASK_PHRASE_PATTERN = re.compile(r"The evaluation task is\s+(?:an?\s+|the\s+)?\[?\s*([^,\].\n\[]{2,60})",
                                 re.IGNORECASE)
"""The task name inside that sentence, e.g. ``text summarization``."""
OVERALL_PATTERNS = (
    re.compile(r"score\s*of\s*overall\W{0,4}\s*[:：]?\s*\**\s*\[?\s*(\d{1,3}(?:\.\d+)?)", re.IGNORECASE),
    re.compile(r"overall\s*score\W{0,4}\s*[:：]?\s*\**\s*\[?\s*(\d{1,3}(?:\.\d+)?)", re.IGNORECASE),
    re.compile(r"\"overall\"\s*:\s*\"?\s*(\d{1,3}(?:\.\d+)?)", re.IGNORECASE),
)
"""OS-E's ``Score Of Overall: N`` (the paper's example output also says ``Overall Score: 90.0``)."""
EXPLANATION_PATTERN = re.compile(r"explanation\W{0,4}\s*[:：]\s*(.*?)(?=\**\s*(?:score\s*of\s*overall|overall\s*score)|$)",
                                 re.IGNORECASE | re.DOTALL)

DEMO_COUNT_BY_TASK = (("data-to-text", 8), ("data to text", 8), ("table", 8), ("restaurant", 8), ("story", 8))
"""App. D.2: 8 demonstrations for SFRES (data-to-text) and OpenMEVA (stories), 3 otherwise."""
OBSERVATION_CHARS = 3000
"""Accumulated observations shown back to the model are cut to their last characters (small contexts)."""
SCALE = (0, 100)


# ----------------------------------------------------------------------------------------------- data

NORMALIZATIONS = ("ratio", "minmax")
"""How human scores go onto 0-100: ``100 * r / r_max`` (the paper's examples) or min-max over the range."""


def normalize_score(value: float, aspect: Aspect, mode: str = "ratio") -> float:
    """§2.2: a human score on the aspect's scale, put on 0-100.

    ``"ratio"`` (default, the paper's reading): ``100 * r / r_max``;
    ``"minmax"``: ``100 * (r - r_min) / (r_max - r_min)``.
    """
    if mode == "ratio":
        if aspect.high <= 0:
            raise ValueError(f"score normalization 'ratio' needs a positive scale maximum; aspect {aspect.name!r} "
                             f"ends at {aspect.high:g} (use score_normalization='minmax')")
        return 100.0 * float(value) / aspect.high
    if mode == "minmax":
        return 100.0 * (float(value) - aspect.low) / (aspect.high - aspect.low)
    raise ValueError(f"score normalization must be one of {list(NORMALIZATIONS)}, not {mode!r}")


def to_aspect_scale(score_100: float, aspect: Aspect, mode: str = "ratio") -> float:
    """A 0-100 judge score mapped back onto the aspect's scale: the inverse of :func:`normalize_score`.

    Linear and never clipped (NaN stays NaN), so correlations on the aspect's
    scale equal those on 0-100.
    """
    if mode == "ratio":
        return float(score_100) * aspect.high / 100.0
    if mode == "minmax":
        return aspect.low + float(score_100) * (aspect.high - aspect.low) / 100.0
    raise ValueError(f"score normalization must be one of {list(NORMALIZATIONS)}, not {mode!r}")


def _short(text: str, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit].rstrip() + " [...]"


def render_example(sample: dict[str, Any], *, source_chars: int, with_score: bool = True) -> str:
    """One example as Source / Response (fenced) and, for training examples, the 0-100 human score."""
    parts = [fence("Source", _short(sample["input"], source_chars))]
    if sample.get("context"):
        parts.append(fence("Context", _short(sample["context"], source_chars)))
    parts.append(fence("Response", sample["output"]))
    if with_score:
        parts.append(f"Human Score: {sample['human_100']:.2f}")
    return "\n".join(parts)


def _example(sample: Sample, aspect: Aspect, mode: str = "ratio") -> dict[str, Any]:
    return {"sample_id": sample.id, "input": sample.input, "output": sample.output, "context": sample.context,
            "human_100": normalize_score(sample.human[aspect.name], aspect, mode)}


def make_minibatches(train: Sequence[Sample], *, batch_size: int, max_batches: int, seed: int) -> list[list[Sample]]:
    """§4.1: the shuffled training split cut into mini-batches of ``batch_size``, at most ``max_batches``."""
    order = list(train)
    random.Random(seed).shuffle(order)
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return batches[:max_batches]


def demo_count(task: TaskInfo) -> int:
    """App. D.2: 3 demonstrations for summarization and dialogue, 8 for data-to-text and stories."""
    name = task.task.lower()
    return next((n for key, n in DEMO_COUNT_BY_TASK if key in name), 3)


# ------------------------------------------------------------------------------------ stage 1: task

def _ask(llm: LLM, prompt: str, params: GenerationParams) -> str:
    return llm.complete([{"role": "user", "content": prompt}], params).text


def is_complete(reply: str) -> bool:
    """True when an observation reply says COMPLETE."""
    return bool(COMPLETE_PATTERN.match((reply or "").strip()))


def extract_task_description(reply: str) -> str:
    """The 'The evaluation task is ...' summary when the reply has one, else the whole reply."""
    m = TASK_SENTENCE_PATTERN.search(reply or "")
    return (m.group(0) if m else (reply or "")).strip()


def task_phrase(description: str) -> str:
    """A short noun phrase for the criteria prompts' ``{task}`` slot ("a text summarization")."""
    m = TASK_PHRASE_PATTERN.search(description or "")
    if not m:
        return "an NLG"
    phrase = m.group(1).strip().strip("*'\"").strip()
    return f"{'an' if phrase[:1].lower() in 'aeiou' else 'a'} {phrase}"


TASK_SCHEMA = structured.text_schema(structured.TASK_DESCRIPTION, "task_description", max_length=1200)
"""The task-description reply: ``{"task_description": "The evaluation task is ..."}``."""


def read_task_description(reply: str) -> tuple[str, str]:
    """A task-description reply -> (description, read): JSON first, the free-text summary sentence as fallback.

    ``read`` is ``json``, ``text`` or ``missing`` (an empty reply, or JSON that is not the schema's: a reply
    cut off inside its JSON, such as ``{"score": "unsure``, is no description to carry into every prompt).
    """
    reading = structured.read_json(reply, TASK_SCHEMA)
    if reading.ok:
        return extract_task_description(str(reading.value["task_description"])), "json"
    if (reply or "").lstrip().startswith(("{", "[")):
        return "", "missing"
    text = extract_task_description(reply)
    return text, ("text" if text else "missing")


def infer_task_description(batches: Sequence[Sequence[dict[str, Any]]], *, llm: LLM, params: GenerationParams,
                           source_chars: int, complete_streak: int, ensemble: bool = False,
                           log: EventSink | None = None,
                           progress: Progress | None = None) -> tuple[str, list[str]]:
    """§4.1 / Table 14: one observation per mini-batch, then a task description built on the previous one.

    Returns the final task description and the list of its versions. An
    observation answered COMPLETE adds nothing; ``complete_streak``
    consecutive COMPLETE answers stop the loop. With ``ensemble`` and more
    than one version, one more description call is given every version as
    the prior description (§4.1: the final T is the LLM's ensemble of all
    T_n; ``ensemble_task=False`` leaves the call out) and its answer is the result.
    Observations are free text; descriptions are asked for as JSON
    (:data:`TASK_SCHEMA`) and each event says how the reply was read.
    """
    describe = params.with_(json_schema=structured.as_param(TASK_SCHEMA))
    observations, description, versions, streak = "", "", [], 0
    for n, batch in enumerate(batches):
        examples = "\n\n".join(render_example(e, source_chars=source_chars) for e in batch)
        reply = _ask(llm, TASK_OBSERVE_TEMPLATE.render(examples=examples,
                                                       prior_observations=observations[-OBSERVATION_CHARS:] or "(none yet)"),
                     params.with_(seed=params.seed + n))
        complete = is_complete(reply)
        streak = streak + 1 if complete else 0
        if log:
            log("task_observation", {"batch": n + 1, "sample_ids": [e["sample_id"] for e in batch],
                                     "text": reply, "complete": complete, "streak": streak})
        if progress:
            progress(n + 1, len(batches), "task inference")
        if complete:
            if streak >= complete_streak:
                break
            continue
        observations = f"{observations}\n{reply.strip()}".strip()
        reply = _ask(llm, TASK_DESCRIBE_TEMPLATE.render(observations=reply.strip(),
                                                        prior_description=description or "(none yet)"),
                     describe.with_(seed=params.seed + n))
        text, read = read_task_description(reply)
        description = text or description
        versions.append(description)
        if log:
            log("task_description", {"batch": n + 1, "version": len(versions), "text": description, "raw": reply,
                                     "read": read})
    if ensemble and len(versions) > 1:
        prior = "\n".join(f"Version {i}: {v}" for i, v in enumerate(versions, 1))
        reply = _ask(llm, TASK_DESCRIBE_TEMPLATE.render(observations=observations[-OBSERVATION_CHARS:],
                                                        prior_description=prior),
                     describe.with_(seed=params.seed + len(batches)))
        text, read = read_task_description(reply)
        description = text or description
        versions.append(description)
        if log:
            log("task_description", {"batch": "all", "version": len(versions), "text": description, "raw": reply,
                                     "ensemble": True, "read": read})
    return description, versions


def check_task_description(description: str, task: TaskInfo,
                           shown: Sequence[str]) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """The inferred description if the rubric checks accept it, else the dataset's own task; then the
    refusal and the flags (each None when there is none).

    Every scoring prompt carries the description, so a refused one (a copy of
    an example, a template left in) is replaced by a plain statement of the
    dataset's task and kept with its reason; a flagged one is used and its
    flags are shown.
    """
    check = check_entry(description, kind="task_description", shown=shown, max_chars=2000)
    if check.ok:
        flagged = {**check.to_dict(), "stage": "task description"} if check.flags else None
        return description, None, flagged
    fallback = f"Evaluate {task.output_label.lower()}s written for the task of {task.task}."
    return fallback, {**check.to_dict(), "stage": "task description"}, None


@dataclass(frozen=True)
class CheckedCriteria:
    """What the rubric checks made of a set of criteria."""

    kept: dict[str, str]
    """The usable criteria, name -> definition (or sentence)."""
    refused: list[dict[str, Any]]
    """Refused ones, with rule and reason (:meth:`judge_engine.rubric_checks.RubricCheck.to_dict`)."""
    flagged: list[dict[str, Any]]
    """Kept ones with flags, shown beside them and counted in the run summary."""


def check_criteria(criteria: dict[str, str], shown: Sequence[str], topics: Sequence[str] = (),
                   opener: str = "") -> CheckedCriteria:
    """The criteria the rubric checks accept, the refusals, and the flags raised on accepted ones.

    A criterion written as a sentence (its definition starts with ``opener``, "A good summary ...") is
    checked by :func:`judge_engine.rubric_checks.check_statement`; a named one (the paper's form, a person's
    edit, a free-text reply) by :func:`judge_engine.rubric_checks.check_criterion`. ``topics`` (the output's
    label, the scored aspect's name and definition) lift the ``no_quality`` flag of a criterion that names
    what is judged.
    """
    names = list(criteria)
    checks, accepted = [], []
    for n in names:  # each accepted criterion counts for the near-duplicate rule of the next ones
        if is_statement(criteria[n], opener):
            check = check_statement(criteria[n], opener=opener, shown=shown, accepted=accepted, topics=topics)
        else:
            check = check_criterion(n, criteria[n], shown=shown, accepted=accepted, topics=topics)
        accepted += [check.text] if check.ok else []
        checks.append(check)
    kept = {n: criteria[n] for n, c in zip(names, checks) if c.ok}
    refused = [{**c.to_dict(), "stage": "criteria", "name": n} for n, c in zip(names, checks) if not c.ok]
    flagged = [{**c.to_dict(), "stage": "criteria", "name": n} for n, c in zip(names, checks) if c.ok and c.flags]
    return CheckedCriteria(kept, refused, flagged)


def check_explanation(explanation: str) -> str | None:
    """Why a judge's explanation cannot be shown as one (nothing in it, or one line said over and over), else None.

    A small model's OS-E "explanation" may be one heading said over and over: that is no reason for the score.
    Only the ``empty`` and ``repetitive`` rules of :mod:`judge_engine.rubric_checks` apply: an explanation
    may quote the judged text and may be long.
    """
    check = check_entry(explanation, kind="explanation", min_words=1, max_chars=10 ** 9)
    return None if check.ok else check.reason


# -------------------------------------------------------------------------------- stage 1: criteria

def criteria_opener(task: TaskInfo | None, form: str = "sentence") -> str:
    """How every inferred criterion starts in the sentence form: "A good summary" for summaries (the output's
    label, lower-cased); "" in the paper's form (``form="paper"``), where criteria are named.

    Every criteria helper below reads an empty opener as the paper's form:
    named criteria with definitions asked for, read and checked. The
    sentence form is for small models (see the module docstring and
    :func:`judge_engine.structured.statement_list_schema`).
    """
    if form == "paper":
        return ""
    return task.statement_opener if task else DEFAULT_OPENER


STATEMENT_MIN_WORDS = 3
"""A statement's body has at least this many words ("A good summary is short." is one thing said, barely)."""


def statement_criteria(statements: Sequence[Any], opener: str,
                       taken: Sequence[str] = ()) -> dict[str, str]:
    """Criteria (name -> the statement itself) from statements that start with ``opener``.

    The name is :func:`judge_engine.rubric_checks.statement_name`. Names are
    unique (case-insensitive, also against ``taken``): when two statements
    give the same short name, a longer one (up to 12 words, past the first
    comma) tells them apart, else a number is added; a statement said twice is kept once.
    Anything that does not start with the opener, or says fewer than
    :data:`STATEMENT_MIN_WORDS` words after it, is not a criterion statement.
    """
    out: dict[str, str] = {}
    used = {t.lower() for t in taken}
    seen: set[str] = set()
    for raw in statements:
        if not isinstance(raw, str):
            continue
        text = " ".join(raw.split())
        if not is_statement(text, opener) or len(statement_body(text, opener).split()) < STATEMENT_MIN_WORDS:
            continue
        text = text if text.endswith(".") else text + "."
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        name = statement_name(text, opener)
        if name.lower() in used:  # the name went up to the first comma: the longer one goes past it
            name = statement_name(re.sub(r"[,;]", "", text), opener, max_words=12)
        base, n = name, 2
        while name.lower() in used:
            name, n = f"{base} ({n})", n + 1
        used.add(name.lower())
        out[name] = text
    return out


PLACEHOLDER_CRITERIA = ("criterion name", "another criterion", "criterion a", "criterion b", "one-sentence definition",
                        "a short name", "a short name of the criterion", "what the criterion asks of a response",
                        "one sentence saying what the criterion asks of a response",
                        "the response stays on the topic of the source.", "the response stays on the topic of the source")
"""The shape examples of our criteria prompts: a reply that copies them has inferred nothing."""


def _clean_criteria(obj: Any, opener: str = "") -> dict[str, str]:
    """``{name: definition}`` from a criteria object, a list of ``{"name", "definition"}`` items or a list of
    statements that start with ``opener`` (:func:`statement_criteria`).

    Placeholder shapes copied from the prompt and prompt labels are dropped;
    a repeated name keeps its first definition.
    """
    if isinstance(obj, list) and any(isinstance(item, str) for item in obj):
        return statement_criteria(obj, opener)
    if isinstance(obj, list):
        pairs = [(item.get("name", ""), item.get("definition", "")) for item in obj if isinstance(item, dict)]
    elif isinstance(obj, dict):
        pairs = list(obj.items())
    else:
        return {}
    out: dict[str, str] = {}
    for name, definition in pairs:
        name = str(name).strip()
        if (not name or name.lower() in PLACEHOLDER_CRITERIA or _key(name) in NOT_CRITERIA
                or str(definition).strip().lower() in PLACEHOLDER_CRITERIA):
            continue
        if isinstance(definition, dict):
            definition = next((v for k, v in definition.items() if str(k).lower() in ("description", "definition")),
                              json.dumps(definition, ensure_ascii=False))
        if _key(name) not in {_key(k) for k in out}:
            out[name] = str(definition).strip()
    return out


NOT_CRITERIA = {"observations", "observation", "taskdescription", "task", "source", "response", "context",
                "humanscore", "score", "example", "examples", "criteria", "evaluationcriteria", "note", "output",
                "answer", "explanation", "definition", "name", "title", "id", "category", "type", "desc",
                "description"}
"""Line labels that are parts of our prompts or replies, never criterion names."""
CRITERION_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])?\s*\**\s*([A-Za-z][A-Za-z /&'-]{1,40}?)\s*\**\s*[:\u2013\u2014-]\s*"
                            r"\**\s*(\S.{9,300}?)\s*$")
"""``Name: definition`` as a line of a list (bullets, numbers and bold markers allowed)."""


LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+\**\s*([^:<>]{10,300}?)\s*\**\s*$")
"""A numbered or bulleted line without a ``Name:`` part."""


NAME_TAIL_WORDS = {"and", "or", "to", "the", "of", "a", "an", "in", "on", "for", "with", "that", "is", "are"}
"""Words a name cut from a list item does not end with."""


def parse_criteria_lines(reply: str, *, plain_items: bool = False, opener: str = "") -> dict[str, str]:
    """Criteria written as ``Name: one-sentence definition`` lines (the fallback list format), or as
    statements that start with ``opener`` (:func:`judge_engine.structured.find_statements`).

    A name has at most 5 words, a definition at least 3; prompt labels
    (Source, Response, Observations, ...) and the prompts' placeholder
    shapes are not criteria; a repeated name keeps its first definition.
    With ``plain_items``, a numbered or bulleted line of at least 3 words
    without a name is a criterion too: its first words name it, the whole
    line defines it (for the answer to the list prompt only).
    """
    out = statement_criteria(structured.find_statements(reply, opener), opener)
    for line in (reply or "").splitlines():
        if structured.find_statements(line, opener):
            continue  # read as a statement above
        m = CRITERION_LINE.match(line)
        if not m:
            item = LIST_ITEM.match(line) if plain_items else None
            words = item.group(1).strip().rstrip(".").split() if item else []
            if len(words) >= 3 and "<<<" not in line:
                head = words[:5]
                while len(head) > 1 and head[-1].lower().strip(",;") in NAME_TAIL_WORDS:
                    head = head[:-1]
                name = " ".join(head).rstrip(",;")
                if _key(name) not in {_key(k) for k in out}:
                    out[name] = " ".join(words) + "."
            continue
        name, definition = m.group(1).strip(" '-"), m.group(2).strip().strip('"')
        if (_key(name) in NOT_CRITERIA or len(name.split()) > 5 or len(definition.split()) < 3
                or "<<<" in definition or name.lower() in PLACEHOLDER_CRITERIA
                or definition.lower() in PLACEHOLDER_CRITERIA):
            continue
        if _key(name) not in {_key(k) for k in out}:
            out[name] = definition
    return out


def parse_criteria_and_observations(reply: str, opener: str = "") -> tuple[dict[str, str], str]:
    """Criteria and observations from an init or refine reply (the free-text fallback).

    Accepts ``{"criteria": ["<opener> ...", ...], "observations": "..."}`` that breaks the schema,
    ``{"criteria": [{"name", "definition"}, ...]}``, ``{"Criteria": {...}, "Observations": "..."}`` and a
    bare ``{name: definition}`` object; without a JSON object, statements that start with ``opener`` and
    ``Name: definition`` lines (:func:`parse_criteria_lines`; a JSON reply cut off by its token limit keeps
    its finished statements). Returns ``({}, "")`` when none is found.
    """
    obj = parse_json_object(reply or "")
    if not isinstance(obj, dict):
        return parse_criteria_lines(reply, opener=opener), ""
    keys = {str(k).lower(): k for k in obj}
    observations = obj.get(keys.get("observations", ""), "") if "observations" in keys else ""
    for key in ("criteria", "qualities"):
        if key in keys:
            return _clean_criteria(obj[keys[key]], opener), str(observations or "")
    return (_clean_criteria({k: v for k, v in obj.items() if str(k).lower() != "observations"}, opener),
            str(observations or ""))


MIN_CRITERIA, MAX_CRITERIA = 4, 10
"""§4.1: the criteria set holds 4 to 10 criteria."""
STATEMENT_CHARS = 160
"""Longest criterion statement (the schema's pattern): one sentence, and ten of them fit a reply."""
OBSERVATIONS_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 1200}


def criteria_schema(opener: str, *, key: str = "criteria", observations: bool = False) -> dict[str, Any]:
    """A criteria reply, titled :data:`judge_engine.structured.CRITERIA`: with an ``opener``,
    ``{key: ["<opener> ...", ...]}`` with 4-10 statements (:func:`judge_engine.structured.statement_list_schema`);
    without one (the paper's form), ``{key: [{"name", "definition"}, ...]}`` with 4-10 named criteria
    (:func:`judge_engine.structured.named_items_schema`; §4.1: criteria with their descriptions, as JSON).

    ``observations``: the init step's shape (Eq. 6: observations come with the criteria), an optional
    ``observations`` text after the criteria, so a reply of the plain shape still validates and a reply
    cut off inside its observations keeps every criterion.
    """
    if opener:
        schema = structured.statement_list_schema(structured.CRITERIA, key, opener=opener, min_items=MIN_CRITERIA,
                                                  max_items=MAX_CRITERIA, max_chars=STATEMENT_CHARS)
    else:
        schema = structured.named_items_schema(structured.CRITERIA, key, min_items=MIN_CRITERIA,
                                               max_items=MAX_CRITERIA)
    if not observations:
        return schema
    return structured.object_schema(structured.CRITERIA, {**schema["properties"],
                                                          "observations": OBSERVATIONS_SCHEMA}, required=[key])


def qualities_schema(opener: str) -> dict[str, Any]:
    """The short fallback's reply: ``{"qualities": [...]}`` of statements or (no ``opener``) named criteria,
    read as criteria (its own key, so its requests differ from the paper prompt's in the cache and the
    simulated judge)."""
    return criteria_schema(opener, key="qualities")


def criteria_shape(opener: str) -> str:
    """How the follow-up turn describes the criteria reply (statements with an ``opener``, else named
    criteria): in words, with no example values, which a small model copies into every slot."""
    if not opener:
        return ('a JSON object whose "criteria" list holds 4 to 10 different criteria, each an object with a '
                '"name" of a few words saying which quality it checks and a "definition" of one sentence saying '
                'what a good one does')
    return (f'a JSON object whose "criteria" list holds 4 to 10 different sentences, each starting with "{opener}" '
            f'and saying one concrete thing that a good one does')


CRITERIA_REFUSED_RETRY = ('Only {usable} of the {proposed} criteria you gave can be used; these repeat another one, '
                          'copy a text, report a score or say nothing but praise: {refused}. Answer again with the '
                          'JSON object only: {expected}. Keep the usable {items} and add different ones in your '
                          'own words.')
"""The follow-up turn when a criteria reply was read but the rubric checks refused some of it (``items``:
"sentences" in the sentence form, "criteria" in the paper's)."""


def read_qualities(reply: str, opener: str) -> dict[str, str]:
    """Criteria (name -> statement or definition) from a :func:`qualities_schema` reply; without that JSON, the
    criteria the free-text parsers find in the reply (:func:`parse_criteria_and_observations`: a server without
    structured output, a reply cut off)."""
    reading = structured.read_json(reply, qualities_schema(opener))
    if reading.ok:
        return _clean_criteria(reading.value["qualities"], opener)
    return parse_criteria_and_observations(reply, opener)[0]


def read_criteria(reply: str, schema: dict[str, Any], opener: str = "") -> tuple[dict[str, str], str, str]:
    """A criteria reply -> (criteria, observations, read): the schema's JSON first, then the free-text parsers.

    ``read`` is ``json`` (the reply satisfied the schema), ``text`` (the
    fallback parsers found criteria: statements anywhere in the reply, a
    JSON object of another shape, ``Name: definition`` lines) or
    ``missing``. Placeholder names copied from the prompt are dropped.
    """
    reading = structured.read_json(reply, schema)
    if reading.ok:
        return (_clean_criteria(reading.value["criteria"], opener), str(reading.value.get("observations", "")),
                "json")
    criteria, observations = parse_criteria_and_observations(reply, opener)
    return criteria, observations, ("text" if criteria else "missing")


def _pool(criteria: dict[str, str], found: dict[str, str],
          usable: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
    """``criteria`` with the usable criteria of ``found`` added: usable ones first, each name once
    (case-insensitive), then the rest, so the rubric checks see and record every criterion proposed."""
    merged = dict(criteria)
    taken = {n.lower() for n in merged}
    for name, definition in found.items():
        if name.lower() not in taken:
            merged[name] = definition
            taken.add(name.lower())
    good = usable(merged)
    return {**good, **{n: d for n, d in merged.items() if n not in good}}


def _ask_criteria(llm: LLM, prompt: str, params: GenerationParams, *, schema: dict[str, Any] | None = None,
                  opener: str = DEFAULT_OPENER, min_criteria: int = MIN_CRITERIA, max_criteria: int = MAX_CRITERIA,
                  fallback: str | None = None, qualities_fallback: str | None = None,
                  usable: Callable[[dict[str, str]], dict[str, str]] | None = None,
                  ) -> tuple[dict[str, str], str, str, bool, str]:
    """One criteria call asking for ``schema`` (default :func:`criteria_schema` of ``opener``: statements that
    start with it, or named criteria when ``opener`` is ""), retried once in a follow-up turn when the reply has
    no usable 4-10.

    ``qualities_fallback``: a short stand-alone structured prompt
    (:func:`criteria_qualities_prompt`, :func:`qualities_schema`) asked
    when both replies gave fewer than ``min_criteria``; ``fallback``: the
    free-text list prompt of :func:`criteria_list_prompt`, asked when
    that still gave fewer. At most 4 calls.

    ``usable`` (the rubric checks, :func:`check_criteria`) decides what
    counts: a reply of six criteria of which the checks accept two is two
    criteria, so the next prompt is asked, and the usable criteria of every
    reply are pooled (ours: a small model's replies each hold a few usable
    criteria, and different prompts give different ones). Without ``usable`` every parsed
    criterion counts and a later reply with more criteria replaces the
    earlier ones. The pool lists usable criteria first and is cut to
    ``max_criteria``.
    Returns (criteria, observations, raw reply used, retried, read) where
    ``read`` is ``json``, ``text``, ``qualities`` or ``list`` (the fallback prompts) or ``missing``; when
    criteria were pooled, the raw replies are joined and ``read`` names every way they were read ("json+qualities").
    """
    schema = schema or criteria_schema(opener)
    # the rubric presence penalty: without it a small model under a grammar writes its first criterion again
    params = params.with_(json_schema=structured.as_param(schema), presence_penalty=structured.RUBRIC_PRESENCE_PENALTY)
    count = (lambda c: len(usable(c))) if usable else len
    messages = [{"role": "user", "content": prompt}]
    reply = llm.complete(messages, params).text
    criteria, observations, read = read_criteria(reply, schema, opener)
    if usable:
        criteria = _pool({}, criteria, usable)
    raws, reads = [reply], [read]

    def take(found: dict[str, str], raw: str, how: str) -> None:
        nonlocal criteria, reply, read
        if usable:
            pooled = _pool(criteria, found, usable)
            if count(pooled) > count(criteria):
                criteria = pooled
                raws.append(raw)
                reads.append(how)
                reply, read = "\n--- next reply ---\n".join(raws), "+".join(dict.fromkeys(reads))
        elif len(found) > len(criteria):
            criteria, reply, read = found, raw, how

    retried = False
    if not (min_criteria <= count(criteria) <= max_criteria):
        retried = True
        ask = JSON_RETRY_TEMPLATE.render(expected=criteria_shape(opener))
        if usable and criteria:  # read, but the checks refused some: say which and why, not "unreadable JSON"
            good = usable(criteria)
            ask = CRITERIA_REFUSED_RETRY.format(
                usable=len(good), proposed=len(criteria), expected=criteria_shape(opener),
                refused=", ".join(repr(n) for n in criteria if n not in good) or "none",
                items="sentences" if opener else "criteria")
        retry = llm.complete(messages + [{"role": "assistant", "content": reply}, {"role": "user", "content": ask}],
                             params).text
        again, obs_again, read_again = read_criteria(retry, schema, opener)
        if usable:
            take(again, retry, read_again)
            observations = observations or obs_again
        elif again and (not criteria or min_criteria <= len(again) <= max_criteria):
            criteria, observations, reply, read = again, obs_again or observations, retry, read_again
    if count(criteria) < min_criteria and qualities_fallback:
        # the short structured prompt first (:func:`qualities_schema`), then the free-text list
        asked = llm.complete([{"role": "user", "content": qualities_fallback}],
                             params.with_(json_schema=structured.as_param(qualities_schema(opener)))).text
        take(read_qualities(asked, opener), asked, "qualities")
    if count(criteria) < min_criteria and fallback:
        # free text on purpose: the fallback is for backends that honour no schema
        listed = llm.complete([{"role": "user", "content": fallback}], params.with_(json_schema="")).text
        take(parse_criteria_lines(listed, plain_items=True, opener=opener), listed, "list")
    if len(criteria) > max_criteria:
        criteria = dict(list(criteria.items())[:max_criteria])
    return criteria, observations, reply, retried, read


def _quality(aspect: Aspect) -> str:
    return "overall quality" if aspect.name.lower() == "overall" else aspect.name.replace("_", " ")


def _an(noun: str) -> str:
    """``noun`` with its indefinite article ("an utterance", "a summary")."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def criteria_qualities_prompt(*, task: str, quality: str, definition: str = "", output: str = "response",
                              opener: str = DEFAULT_OPENER, count: int = 5) -> str:
    """The short structured fallback (not in the paper): ``count`` qualities, each one thing a good output
    does for the scored aspect, as sentences that start with ``opener`` or (no opener) named with a
    definition, from the dataset's task and the aspect's name and definition; the reply is
    :func:`qualities_schema`. No example is shown: the aspect alone is what the qualities are about, and an
    example invites a small model to copy its content."""
    quality = quality or "overall quality"
    return _render(CRITERIA_QUALITIES_TEMPLATE, CRITERIA_QUALITIES_NAMED_TEMPLATE, opener,
                   task=task or "text generation", quality=quality, count=count, output=output or "response",
                   an_output=_an(output or "response"),
                   definition=(definition or "").strip() or f"how good the {output or 'response'} is on {quality}")


def _render(sentence: Template, named: Template, opener: str, **values: Any) -> str:
    """A criteria step's prompt: the sentence form's template with its ``opener``, or (no opener) the paper's
    form's, which asks for named criteria."""
    return sentence.render(**values, opener=opener) if opener else named.render(**values)


def criteria_list_prompt(example: dict[str, Any] | None, *, task: str, quality: str, source_chars: int) -> str:
    """The short fallback prompt: criteria as ``Name: definition`` lines from the dataset's task and one example.

    Not in the paper: for a model that cannot answer the JSON prompt over
    a whole mini-batch (a small model tends to echo the examples, and its
    inferred task description is then no help either), so the task comes
    from the dataset itself (e.g. "dialogue response generation") and the
    scored quality from the aspect's name.
    """
    return CRITERIA_LIST_TEMPLATE.render(
        task=task or "text generation", quality=quality or "overall quality",
        example=render_example(example, source_chars=min(source_chars, 400)) if example else "(none)")


def _listing(criteria: dict[str, str], opener: str) -> str:
    """The current criteria as the observe and refine prompts show them: a statement as it was written,
    a named criterion as ``Name: definition``, one per line."""
    lines = [d if is_statement(d, opener) else f"{n}: {d}" for n, d in criteria.items()]
    return "\n".join(f"- {line}" for line in lines) or "(none yet)"


def format_criteria(criteria: dict[str, str]) -> str:
    """``Name: definition`` lines, the way the scoring prompts list the criteria."""
    return "\n".join(f"{name}: {definition}" for name, definition in criteria.items()) or "(none)"


def _diff(old: dict[str, str], new: dict[str, str]) -> dict[str, list[str]]:
    return {"added": [k for k in new if k not in old], "removed": [k for k in old if k not in new],
            "refined": [k for k in new if k in old and old[k] != new[k]]}


def define_criteria(batches: Sequence[Sequence[dict[str, Any]]], task_description: str, *, llm: LLM,
                    params: GenerationParams, source_chars: int, complete_streak: int, fallback: bool = False,
                    dataset_task: str = "", quality: str = "", definition: str = "", output: str = "response",
                    opener: str = DEFAULT_OPENER, log: EventSink | None = None,
                    progress: Progress | None = None, shown: Sequence[str] | None = None,
                    topics: Sequence[str] = ()) -> tuple[dict[str, str], int]:
    """Algorithm 1 / Table 15: initial criteria, then observe and refine on each further mini-batch.

    The refine step uses the new observation (Eq. 8); a COMPLETE observation
    refines nothing, and ``complete_streak`` of them in a row stop the loop.
    Every step asks for 4-10 criteria (:func:`criteria_schema`; ``output``
    is the judged text's name in the prompts): named criteria with
    definitions when ``opener`` is "" (the paper's form), else statements
    that start with ``opener`` ("A good summary ...", the sentence form).
    Returns the criteria (name -> definition, or name -> statement with the
    name taken from the statement) and the number of replies that gave no usable
    criteria even after the retry (the previous set is kept). With
    ``fallback``, an init that still has fewer than 4 criteria asks the
    short structured prompt (:func:`criteria_qualities_prompt` with
    ``dataset_task``, ``quality`` and its ``definition``), then the
    free-text list prompt (:func:`criteria_list_prompt`); neither is in the paper.
    ``shown``: the texts the rubric checks measure copies against (the training texts); when given, a
    criterion counts only if the checks accept it, and the usable criteria of successive replies are pooled
    (:func:`_ask_criteria`).
    """
    usable = (lambda c: check_criteria(c, shown, topics, opener).kept) if shown is not None else None
    phrase = task_phrase(task_description)
    header = f"Task description: {task_description}" if task_description else "Task description: (not available)"
    failures = 0
    examples = "\n\n".join(render_example(e, source_chars=source_chars) for e in batches[0]) if batches else ""
    qualities = (criteria_qualities_prompt(task=dataset_task, quality=quality, definition=definition, output=output,
                                           opener=opener) if fallback else None)
    short = (criteria_list_prompt(batches[0][0] if batches and batches[0] else None, task=dataset_task,
                                  quality=quality, source_chars=source_chars) if fallback else None)
    criteria, observations, raw, retried, read = _ask_criteria(
        llm, _render(CRITERIA_INIT_TEMPLATE, CRITERIA_INIT_NAMED_TEMPLATE, opener, task_description=header,
                     task=phrase, examples=examples, an_output=_an(output), quality=quality or "overall quality"),
        params,
        schema=criteria_schema(opener, observations=True), opener=opener, fallback=short,
        qualities_fallback=qualities, usable=usable)
    if not criteria:
        failures += 1
    if log:
        log("criteria", {"iteration": 0, "action": "init", "criteria": criteria, "observations": observations,
                         **_diff({}, criteria), "parsed": bool(criteria), "retried": retried, "raw": raw,
                         "read": read})
    if progress:
        progress(1, len(batches), "criteria")
    streak = 0
    for t in range(1, len(batches)):
        examples = "\n\n".join(render_example(e, source_chars=source_chars) for e in batches[t])
        reply = _ask(llm, CRITERIA_OBSERVE_TEMPLATE.render(
            task_description=header, task=phrase, examples=examples,
            prior_observations=observations[-OBSERVATION_CHARS:] or "(none yet)",
            criteria=_listing(criteria, opener)), params.with_(seed=params.seed + t))
        complete = is_complete(reply)
        streak = streak + 1 if complete else 0
        if log:
            log("criteria_observation", {"iteration": t, "text": reply, "complete": complete, "streak": streak})
        if progress:
            progress(t + 1, len(batches), "criteria")
        if complete:
            if streak >= complete_streak:
                break
            continue
        refined, _, raw, retried, read = _ask_criteria(llm, _render(
            CRITERIA_REFINE_TEMPLATE, CRITERIA_REFINE_NAMED_TEMPLATE, opener, criteria=_listing(criteria, opener),
            observations=reply.strip(), an_output=_an(output), quality=quality or "overall quality"),
            params.with_(seed=params.seed + t), opener=opener, usable=usable)
        observations = f"{observations}\n{reply.strip()}".strip()
        if not refined:
            failures += 1
        # a refinement replaces the criteria unless the rubric checks accept fewer of its criteria than of the
        # current ones (ours): a refinement that drifts off the task would otherwise replace usable criteria with
        # ones the checks refuse, leaving the judge with none
        seen = shown if shown is not None else [x for e in batches[t] for x in (e.get("input"), e.get("output"),
                                                                               e.get("context")) if x]
        worse = bool(refined) and (len(check_criteria(refined, seen, topics, opener).kept)
                                   < len(check_criteria(criteria, seen, topics, opener).kept))
        if log:
            log("criteria", {"iteration": t, "action": "refine", "criteria": criteria if worse else refined or criteria,
                             **_diff(criteria, criteria if worse else refined or criteria), "parsed": bool(refined),
                             "retried": retried, "raw": raw, "read": read,
                             **({"kept_previous": "the rubric checks accept fewer of the refined criteria"}
                                if worse else {})})
        criteria = criteria if worse else refined or criteria
    return criteria, failures


# ----------------------------------------------------------------------------------- stage 2: scoring

EXPLANATION_CHARS = 300
"""Length cap of one criterion's explanation in McS-E's JSON (10 criteria must fit the reply budget)."""
OVERALL_EXPLANATION_CHARS = 1200
"""Length cap of OS-E's explanation and error analysis."""


def mcse_schema(criteria: Sequence[str]) -> dict[str, Any]:
    """McS-E's reply: ``{"criteria": {name: {"explanation": str, "score": 0-100}, ...}}`` for exactly these criteria.

    The explanation comes before the score in each item, as in the paper's
    output format (reason, then rate).
    """
    item = {"type": "object", "additionalProperties": False, "required": ["explanation", "score"],
            "properties": {"explanation": {"type": "string", "minLength": 1, "maxLength": EXPLANATION_CHARS},
                           "score": structured.score_value(*SCALE)}}
    names = list(criteria)
    return structured.object_schema(structured.EXPLAINED_SCORES, {
        "criteria": {"type": "object", "properties": {n: item for n in names}, "required": names,
                     "additionalProperties": False}})


OSE_SCHEMA = structured.object_schema(structured.EXPLAINED_SCORES, {
    "explanation": {"type": "string", "minLength": 1, "maxLength": OVERALL_EXPLANATION_CHARS},
    "overall": structured.score_value(*SCALE)})
"""OS-E's reply: ``{"explanation": "... and the error analysis", "overall": 0-100}`` (reason first, as in Table 17)."""
RETRY_SCHEMA = structured.score_schema(*SCALE)
"""The follow-up turn after an OS-E reply without a score: ``{"score": 0-100}``."""


def _output_format(criteria: dict[str, str]) -> str:
    body = {"criteria": {name: {"explanation": "[your explanation]",
                                "score": f"[integer from 0 to 100: 0 - very poor {name.lower()}, "
                                         f"100 - excellent {name.lower()}]"}
                         for name in criteria}}
    return json.dumps(body, indent=2, ensure_ascii=False)


def _scores_json(criteria_scores: dict[str, dict[str, Any]]) -> str:
    kept = {k: {"explanation": v.get("explanation", ""), "score": v["score"]}
            for k, v in criteria_scores.items() if v.get("score") is not None and not math.isnan(v["score"])}
    return json.dumps(kept, indent=1, ensure_ascii=False) if kept else "(no criterion score could be read)"


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def render_demos(demos: Sequence[dict[str, Any]], *, stage: str, source_chars: int) -> str:
    """Demonstrations for a scoring prompt (Table 13).

    A labeled demo shows Source, Response and the human overall score; a
    bootstrapped demo shows the model's own accepted trace in the reply's
    JSON shape: the criterion scores for McS-E, plus the explanation and
    overall score for OS-E.
    """
    if not demos:
        return ""
    blocks = []
    for i, d in enumerate(demos, 1):
        lines = [f"Example {i}:", render_example(d, source_chars=source_chars, with_score=False)]
        if d["kind"] == "bootstrapped":
            if d.get("criteria_scores"):  # AC-Coarse traces have none
                lines.append("Score Of Each Criterion In JSON:" if stage == "mcse" else "Score Of Different Criteria:")
                lines.append(_scores_json(d["criteria_scores"]))
            if stage == "ose":
                reply = {"explanation": d.get("explanation") or "", "overall": round(d["overall"])}
                lines.append(f"Reply: {json.dumps(reply, ensure_ascii=False)}")
        else:
            lines.append(f"Score Of Overall: {_fmt(d['human_100'])}")
        blocks.append("\n".join(lines))
    return "\nHere are scored examples:\n\n" + "\n\n".join(blocks) + "\n\nNow the item to evaluate:\n"


def mcse_prompt(example: dict[str, Any], state: dict[str, Any], demos: Sequence[dict[str, Any]], *,
                source_chars: int) -> str:
    criteria = state["criteria"]
    return MCSE_TEMPLATE.render(task_description=state["task_description"] or "",
                                demos=render_demos(demos, stage="mcse", source_chars=source_chars),
                                sample_block=render_example(example, source_chars=10 ** 9, with_score=False),
                                criteria=format_criteria(criteria), output_format=_output_format(criteria))


def ose_prompt(example: dict[str, Any], state: dict[str, Any], demos: Sequence[dict[str, Any]], *,
               criteria_scores: dict[str, dict[str, Any]] | None, source_chars: int) -> str:
    sample_block = render_example(example, source_chars=10 ** 9, with_score=False)
    demo_text = render_demos(demos, stage="ose", source_chars=source_chars)
    if criteria_scores is None:
        return OSE_COARSE_TEMPLATE.render(task_description=state["task_description"] or "", demos=demo_text,
                                          sample_block=sample_block, criteria=format_criteria(state["criteria"]))
    return OSE_TEMPLATE.render(task_description=state["task_description"] or "", demos=demo_text,
                               sample_block=sample_block, criteria_scores=_scores_json(criteria_scores))


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else math.nan
    m = re.search(r"-?\d+(?:\.\d+)?", str(value or ""))
    return float(m.group(0)) if m else math.nan


def parse_criteria_scores(reply: str, criteria: Sequence[str]) -> dict[str, dict[str, Any]]:
    """McS-E reply -> ``{criterion: {"score": 0-100 or NaN, "explanation": str}}``.

    JSON first (keys matched ignoring case and punctuation; a value may be an
    object with Score/Explanation or a bare number), then a per-criterion
    regex for the unquoted form of the paper's example output. A score
    outside 0-100 or absent is NaN (missing), never a default.
    """
    obj = parse_json_object(reply or "")
    found: dict[str, Any] = {}
    if isinstance(obj, dict):
        inner = next((v for k, v in obj.items() if isinstance(v, dict) and _key(k) not in {_key(c) for c in criteria}
                      and all(isinstance(x, dict) for x in v.values()) and v), None)
        for k, v in (inner or obj).items():
            found[_key(k)] = v
    out: dict[str, dict[str, Any]] = {}
    for name in criteria:
        value, explanation = found.get(_key(name)), ""
        score = math.nan
        if isinstance(value, dict):
            fields = {_key(k): v for k, v in value.items()}
            score = _number(fields.get("score"))
            explanation = str(fields.get("explanation", "") or "")
        elif value is not None:
            score = _number(value)
        if math.isnan(score):
            m = re.search(re.escape(name) + r"[\"'*]*\s*:\s*\{?(.{0,600}?)score[\"'*]*\s*[:=]\s*\"?\s*(\d{1,3}(?:\.\d+)?)",
                          reply or "", re.IGNORECASE | re.DOTALL)
            if m:
                score = float(m.group(2))
                e = re.search(r"explanation[\"'*]*\s*:\s*\"?(.*?)\"?\s*,?\s*$", m.group(1), re.IGNORECASE | re.DOTALL)
                explanation = explanation or (e.group(1).strip() if e else "")
        if not (SCALE[0] <= score <= SCALE[1]):
            score = math.nan
        out[name] = {"score": score, "explanation": explanation.strip()}
    return out


def parse_overall(reply: str) -> tuple[float, str]:
    """OS-E reply -> (0-100 score or NaN, explanation)."""
    text = reply or ""
    score = math.nan
    for pattern in OVERALL_PATTERNS:
        hits = [float(x) for x in pattern.findall(text)]
        hits = [x for x in hits if SCALE[0] <= x <= SCALE[1]]
        if hits:
            score = hits[-1]
            break
    if math.isnan(score):
        score = parse_score(text, *SCALE)
    m = EXPLANATION_PATTERN.search(text)
    explanation = m.group(1).strip() if m else text.strip()
    return score, explanation


def _requests(prompts: Sequence[str], params: GenerationParams) -> list[Request]:
    return [Request(({"role": "user", "content": p},), params) for p in prompts]


def read_criteria_scores(reply: str, criteria: Sequence[str]) -> tuple[dict[str, dict[str, Any]], str]:
    """McS-E reply -> (``{criterion: {"score", "explanation"}}``, read): :func:`mcse_schema` first, then free text.

    ``read`` is ``json``, ``text`` (:func:`parse_criteria_scores` read at
    least one score) or ``missing``.
    """
    reading = structured.read_json(reply, mcse_schema(criteria))
    if reading.ok:
        got = reading.value["criteria"]
        return {n: {"score": float(got[n]["score"]), "explanation": str(got[n]["explanation"]).strip()}
                for n in criteria}, "json"
    parsed = parse_criteria_scores(reply, criteria)
    return parsed, ("text" if any(not math.isnan(v["score"]) for v in parsed.values()) else "missing")


def read_overall(reply: str) -> tuple[float, str, str]:
    """OS-E reply -> (0-100 score or NaN, explanation, read): :data:`OSE_SCHEMA` first, then :func:`parse_overall`."""
    reading = structured.read_json(reply, OSE_SCHEMA)
    if reading.ok:
        return float(reading.value["overall"]), str(reading.value["explanation"]).strip(), "json"
    score, explanation = parse_overall(reply)
    return score, explanation, ("missing" if math.isnan(score) else "text")


def read_retry_score(reply: str) -> tuple[float, str]:
    """The score follow-up turn -> (0-100 score or NaN, read)."""
    reading = structured.read_json(reply, RETRY_SCHEMA)
    if reading.ok:
        return float(reading.value["score"]), "json"
    score = parse_overall(reply)[0]
    return score, ("missing" if math.isnan(score) else "text")


def score_multi_criteria(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]],
                         *, llm: LLM, params: GenerationParams, source_chars: int,
                         progress: Progress | None = None) -> list[tuple[dict[str, dict[str, Any]], str, str]]:
    """Eqs. 1-2 (McS-E, Table 16): one call per example scoring every criterion with an explanation.

    Returns (criterion scores, raw reply, read) per example; no call without criteria.
    """
    if not state["criteria"]:
        return [({}, "", "") for _ in examples]
    names = list(state["criteria"])
    prompts = [mcse_prompt(e, state, demos, source_chars=source_chars) for e in examples]
    asked = params.with_(json_schema=structured.as_param(mcse_schema(names)))
    replies = llm.complete_many(_requests(prompts, asked),
                                progress=(lambda d, t: progress(d, t, "criterion scores")) if progress else None)
    return [_mcse_row(r.text, names) for r in replies]


def _mcse_row(text: str, names: Sequence[str]) -> tuple[dict[str, dict[str, Any]], str, str]:
    scores, read = read_criteria_scores(text, names)
    return scores, text, read


def score_overall(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]],
                  criteria_scores: Sequence[dict[str, dict[str, Any]]] | None, *, llm: LLM,
                  params: GenerationParams, source_chars: int, retry: bool = False, weighted: bool = False,
                  progress: Progress | None = None) -> list[dict[str, Any]]:
    """Eq. 3 (OS-E, Table 17): overall 0-100 score, explanation and error analysis per example.

    ``criteria_scores`` None is AC-Coarse: the criteria are listed instead of scored.
    The reply is asked for as :data:`OSE_SCHEMA`. With ``retry``, a reply
    without a readable score gets one follow-up turn asking for the score
    alone (:data:`RETRY_SCHEMA`; not in the paper); if that fails too the
    score is missing. With ``weighted`` on a backend with logprobs, every
    reply gets a follow-up turn instead, asking for a 1-9 digit whose
    probability-weighted value (G-Eval style) is mapped to 0-100 (not in the
    paper; the explanation still comes from the first reply).
    Returns per example a dict: ``overall``, ``explanation``, ``raw``,
    ``retried``, ``read`` (how the first reply was read), ``source`` (where
    the score came from: ``json``, ``text``, ``logprobs``,
    ``logprobs_first_position`` or ``missing``) and ``missing_reason``.
    """
    prompts = [ose_prompt(e, state, demos, criteria_scores=None if criteria_scores is None else criteria_scores[i],
                          source_chars=source_chars) for i, e in enumerate(examples)]
    asked = params.with_(json_schema=structured.as_param(OSE_SCHEMA))
    replies = llm.complete_many(_requests(prompts, asked),
                                progress=(lambda d, t: progress(d, t, "overall scores")) if progress else None)
    out = []
    for r in replies:
        score, explanation, read = read_overall(r.text)
        out.append({"overall": score, "explanation": explanation, "raw": r.text, "retried": False, "read": read,
                    "source": read, "missing_reason": "" if read != "missing" else "no overall score in the reply"})
    if weighted and llm.supports_logprobs:
        return _weighted_overall(prompts, replies, out, llm=llm, progress=progress)
    todo = [i for i, o in enumerate(out) if math.isnan(o["overall"])] if retry else []
    if todo:
        follow_params = params.with_(json_schema=structured.as_param(RETRY_SCHEMA))
        follow = [Request(({"role": "user", "content": prompts[i]}, {"role": "assistant", "content": replies[i].text},
                           {"role": "user", "content": SCORE_RETRY_TEMPLATE.render()}), follow_params) for i in todo]
        again = llm.complete_many(follow, progress=(lambda d, t: progress(d, t, "overall scores (retry)"))
                                  if progress else None)
        for i, r in zip(todo, again):
            score, read = read_retry_score(r.text)
            out[i] = {**out[i], "overall": score, "raw": f"{out[i]['raw']}\n---\n{r.text}", "retried": True,
                      "source": read, "missing_reason": "" if read != "missing"
                      else "no overall score in the reply nor in the follow-up turn"}
    return out


WEIGHTED_SCALE = (1, 9)
"""The follow-up turn's single-digit scale when the overall score is read probability-weighted."""
WEIGHTED_SCHEMA = structured.score_schema(*WEIGHTED_SCALE)
"""``{"score": 1-9}``, score first, so the digit comes within the first tokens, whose alternatives are returned."""
WEIGHTED_MAX_TOKENS = 16
"""Reply budget of the weighted follow-up: ``{"score": 7}`` is about 6 tokens, and the backends return
alternatives for the first 16 positions (:data:`judge_engine.llm.base.LOGPROB_POSITIONS`)."""


def _weighted_overall(prompts: Sequence[str], replies: Sequence[Any], out: list[dict[str, Any]], *,
                      llm: LLM, progress: Progress | None) -> list[dict[str, Any]]:
    low, high = WEIGHTED_SCALE
    asked = GenerationParams(max_tokens=WEIGHTED_MAX_TOKENS, top_logprobs=20,
                             json_schema=structured.as_param(WEIGHTED_SCHEMA))
    follow = [Request(({"role": "user", "content": p}, {"role": "assistant", "content": r.text},
                       {"role": "user", "content": WEIGHTED_SCORE_TEMPLATE.render()}), asked)
              for p, r in zip(prompts, replies)]
    again = llm.complete_many(follow, progress=(lambda d, t: progress(d, t, "overall scores (weighted)"))
                              if progress else None)
    result = []
    for o, r in zip(out, again):
        # the digit's own position when the reply chose one; else the first position's alternatives,
        # only with enough probability mass there (read_weighted), and flagged as such
        reading = read_weighted(r.logprobs[0], low, high, first_position=True) if r.logprobs else None
        score = (reading.score - low) / (high - low) * 100 if reading and not math.isnan(reading.score) else math.nan
        source = reading.source if reading and not math.isnan(score) else "missing"
        reason = "" if source != "missing" else (reading.missing_reason if reading else "no logprobs returned")
        result.append({**o, "overall": score, "raw": f"{o['raw']}\n---\n{r.text}", "retried": True,
                       "source": source, "missing_reason": reason})
    return result


def run_pipeline(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]], *,
                 llm: LLM, params: GenerationParams, source_chars: int, retry: bool = False,
                 weighted: bool = False, progress: Progress | None = None) -> list[dict[str, Any]]:
    """AC-Fine (McS-E then OS-E) or AC-Coarse (OS-E alone) on ``examples`` with fixed demos.

    Per example: ``criteria_scores``, ``mcse_raw``, ``mcse_read`` ("" without
    a McS-E call), and the fields of :func:`score_overall` (``ose_raw`` for its raw text).
    """
    if state["variant"] == "fine":
        mcse = score_multi_criteria(examples, state, demos, llm=llm, params=params, source_chars=source_chars,
                                    progress=progress)
        overall = score_overall(examples, state, demos, [m[0] for m in mcse], llm=llm, params=params,
                                source_chars=source_chars, retry=retry, weighted=weighted, progress=progress)
    else:
        mcse = [({}, "", "") for _ in examples]
        overall = score_overall(examples, state, demos, None, llm=llm, params=params, source_chars=source_chars,
                                retry=retry, weighted=weighted, progress=progress)
    return [{"criteria_scores": m[0], "mcse_raw": m[1], "mcse_read": m[2], "overall": o["overall"],
             "explanation": o["explanation"], "ose_raw": o["raw"], "ose_read": o["read"], "retried": o["retried"],
             "source": o["source"], "missing_reason": o["missing_reason"]}
            for m, o in zip(mcse, overall)]


# ---------------------------------------------------------------------------------- prompt optimization

def q_objective(human: Sequence[float], pred: Sequence[float]) -> tuple[float, dict[str, float]]:
    """Eq. 4: Q = Pearson + Spearman + Kendall on the scored items (NaN when undefined, e.g. constant predictions)."""
    corr = correlations(human, pred)
    return corr["pearson"] + corr["spearman"] + corr["kendall"], corr


def candidate_fitness(q: float, n_scored: int, n: int) -> SelectionFitness:
    """A demonstration set's selection fitness: Eq. 4's Q made coverage-aware.

    Q is computed as the paper does, on the items the set scored; then
    :func:`judge_engine.metrics.coverage_adjusted` shrinks it by the share of
    items scored (``value = Q * n_scored / n``) and makes the set ineligible
    (NaN) below :data:`judge_engine.metrics.MIN_SELECTION_COVERAGE` (80%).
    The set is selectable on its own only when eligible and Q > 0. A set
    that scored 2 of 10 items therefore cannot beat one that scored all 10
    slightly less well.
    """
    return coverage_adjusted(q, n_scored, n)


NO_POSITIVE_SET = ("fail", "zero_shot")
"""What the fit does when no candidate is selectable: end with a ValueError, or keep zero-shot (a person's choice)."""


def select_candidate(fitness: Sequence[SelectionFitness], *, no_positive_set: str = "fail") -> tuple[int, str]:
    """The index of the candidate to keep and, when the choice is a fallback, why (else "").

    Ranks by coverage-adjusted Q (:func:`candidate_fitness`) among the
    selectable candidates; ties keep the earlier one (zero-shot first).
    Candidate 0 is zero-shot, so when every demonstration set is
    ineligible or at or below zero and zero-shot is selectable, zero-shot is
    kept and the reason says so. When nothing is selectable, ``"fail"``
    raises a ValueError naming each candidate's Q and coverage;
    ``"zero_shot"`` keeps zero-shot (a person accepted it) with a reason.
    """
    usable = [i for i, f in enumerate(fitness) if f.selectable]
    if usable:
        best = max(usable, key=lambda i: (fitness[i].value, -i))
        if best == 0 and len(fitness) > 1 and usable == [0]:
            return 0, ("every demonstration set scored too few training items or agreed with the humans at or "
                       f"below zero (Q <= 0); kept zero-shot (Q = {fitness[0].correlation:.3f} on "
                       f"{fitness[0].n_scored} of {fitness[0].n} items)")
        return best, ""
    listing = "; ".join(f"{'zero-shot' if i == 0 else f'set {i}'}: " + (
        f"Q = {f.correlation:.3f} on {f.n_scored} of {f.n} items" if math.isfinite(f.correlation) else
        f"no Q ({f.reason})") for i, f in enumerate(fitness))
    if no_positive_set == "zero_shot":
        return 0, ("no demonstration set, zero-shot included, agrees with the human scores on the training split "
                   f"with enough items scored ({listing}); kept zero-shot because no_positive_set='zero_shot'")
    raise ValueError("Active-Critic found no usable judge: no demonstration set, zero-shot included, agrees with the "
                     "human scores on the training split (Q > 0) with at least "
                     f"{MIN_SELECTION_COVERAGE:.0%} of its items scored ({listing}). Check the inferred task description "
                     "and criteria, use more training items, or set no_positive_set='zero_shot' to keep the "
                     "zero-shot judge anyway.")


def _demo(example: dict[str, Any], trace: dict[str, Any] | None = None) -> dict[str, Any]:
    demo = {k: example[k] for k in ("sample_id", "input", "output", "context", "human_100")}
    if trace is None:
        return {**demo, "kind": "labeled"}
    scores = {k: {"score": v["score"], "explanation": v["explanation"]} for k, v in trace["criteria_scores"].items()
              if not math.isnan(v["score"])}
    return {**demo, "kind": "bootstrapped", "criteria_scores": scores, "explanation": trace["explanation"],
            "overall": trace["overall"]}


def propose_candidates(train: Sequence[dict[str, Any]], zero_shot: dict[str, dict[str, Any]], *, k: int,
                       n_demos: int, mode: str, threshold: float, seed: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """K candidate demonstration sets, DSPy ``BootstrapFewShotWithRandomSearch`` style (our implementation).

    Candidate 0 has no demos (zero-shot); candidate 1 is ``n_demos`` random
    labeled examples; each further candidate (``mode="bootstrap"``) takes a
    random number (1..n_demos) of the zero-shot program's own traces whose
    overall score is within ``threshold`` of the human score, and fills up
    with labeled examples. ``mode="labeled"``: every further candidate is a
    fresh random labeled set.
    """
    n_demos = min(n_demos, max(0, len(train) - 1))
    candidates: list[tuple[str, list[dict[str, Any]]]] = [("zero-shot", [])]
    for c in range(1, k):
        rng = random.Random(seed * 1000 + c)
        if n_demos == 0:
            break
        if c == 1 or mode == "labeled":
            candidates.append(("labeled", [_demo(e) for e in rng.sample(list(train), n_demos)]))
            continue
        pool = [e for e in train if e["sample_id"] in zero_shot]
        rng.shuffle(pool)
        size = rng.randint(1, n_demos)
        boot = []
        for e in pool:
            trace = zero_shot[e["sample_id"]]
            if len(boot) < size and not math.isnan(trace["overall"]) \
                    and abs(trace["overall"] - e["human_100"]) <= threshold:
                boot.append(_demo(e, trace))
        used = {d["sample_id"] for d in boot}
        rest = [e for e in train if e["sample_id"] not in used]
        fill = [_demo(e) for e in rng.sample(rest, min(len(rest), n_demos - len(boot)))]
        candidates.append(("bootstrap", boot + fill))
    return candidates


def optimize_demonstrations(train: Sequence[dict[str, Any]], state: dict[str, Any], *, llm: LLM, k: int,
                            n_demos: int, mode: str, threshold: float, eval_subsample: int | None, seed: int,
                            params: GenerationParams, source_chars: int, retry: bool = False,
                            weighted: bool = False, no_positive_set: str = "fail", log: EventSink | None = None,
                            progress: Progress | None = None
                            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Eq. 5: pick the demonstration set that maximises Q on the training split (random search over K sets).

    Candidates are scored on the training examples minus their own demos
    (on a seeded subsample of ``eval_subsample`` examples when given, for
    slow backends). The choice is coverage-aware and never keeps a set with
    Q <= 0 on its own (:func:`select_candidate`, :func:`candidate_fitness`).
    Every candidate's summary records Q, its coverage and how many items it
    rests on; a ``warning`` event and the returned warnings say when the
    choice fell back to zero-shot.
    Returns the winning demos, one summary per candidate, and the warnings.

    Raises
    ------
    ValueError
        When no candidate is selectable and ``no_positive_set`` is ``"fail"``.
    """
    evaluation = list(train)
    if eval_subsample is not None and eval_subsample < len(evaluation):
        evaluation = random.Random(seed).sample(evaluation, eval_subsample)
    zero_shot: dict[str, dict[str, Any]] = {}
    summaries: list[dict[str, Any]] = []
    fitness: list[SelectionFitness] = []
    candidates: list[tuple[str, list[dict[str, Any]]]] = [("zero-shot", [])]
    c = 0
    while c < len(candidates):
        kind, demos = candidates[c]
        ids = {d["sample_id"] for d in demos}
        scored = [e for e in evaluation if e["sample_id"] not in ids]
        results = run_pipeline(scored, state, demos, llm=llm, params=params, source_chars=source_chars, retry=retry,
                               weighted=weighted,
                               progress=(lambda d, t, s, c=c: progress(d, t, f"demo search {c + 1}/{k}: {s}"))
                               if progress else None)
        if c == 0:
            zero_shot = {e["sample_id"]: r for e, r in zip(scored, results)}
            candidates = propose_candidates(train, zero_shot, k=k, n_demos=n_demos, mode=mode, threshold=threshold,
                                            seed=seed)
        pred = [r["overall"] for r in results]
        q, corr = q_objective([e["human_100"] for e in scored], pred)
        n_read = sum(1 for p in pred if not math.isnan(p))
        fit = candidate_fitness(q, n_read, len(scored))
        fitness.append(fit)
        summary = {"candidate": c, "kind": kind, "demo_ids": [d["sample_id"] for d in demos],
                   "demo_kinds": [d["kind"] for d in demos], "n_items": len(scored), "n_scored": n_read,
                   "n_missing": len(scored) - n_read, "coverage": round(fit.coverage, 4),
                   "n_retried": sum(1 for r in results if r["retried"]),
                   "q": None if math.isnan(q) else q,
                   **{m: (None if math.isnan(v) else v) for m, v in corr.items()},
                   "fitness": None if math.isnan(fit.value) else fit.value, "selectable": fit.selectable,
                   "not_selectable_because": "" if fit.selectable else (fit.reason or "Q <= 0"),
                   "reads": _count_reads(results)}
        summaries.append(summary)
        if log:
            log("candidate", summary)
        c += 1
    try:
        best, note = select_candidate(fitness, no_positive_set=no_positive_set)
    except ValueError as exc:
        if log:
            log("demos_selected", {"candidate": None, "q": None, "demo_ids": [], "note": str(exc)})
        raise
    warnings = [judge_warning("selection_fallback", note)] if note else []
    winner = candidates[best][1]
    if log:
        log("demos_selected", {"candidate": best, "q": summaries[best]["q"], "fitness": summaries[best]["fitness"],
                               "coverage": summaries[best]["coverage"], "n_scored": summaries[best]["n_scored"],
                               "n_items": summaries[best]["n_items"],
                               "demo_ids": [d["sample_id"] for d in winner], "note": note})
        for w in warnings:
            log("warning", w)
    return winner, summaries, warnings


def _count_reads(results: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How the replies of a pipeline run were read: JSON, free-text fallback, missing, and from logprobs."""
    out = {"json": 0, "fallback": 0, "missing": 0, "logprobs": 0, "logprobs_first_position": 0}
    for r in results:
        for read in (r.get("mcse_read"), r.get("ose_read")):
            if read == "json":
                out["json"] += 1
            elif read == "text":
                out["fallback"] += 1
            elif read == "missing":
                out["missing"] += 1
        if r.get("source") in ("logprobs", "logprobs_first_position"):
            out[r["source"]] += 1
    return out


# ------------------------------------------------------------------------------------------ the method

@register
class ActiveCritic(Method):
    """Active-Critic: task, criteria and demonstrations inferred from human-scored examples.

    Parameters
    ----------
    variant : {"fine", "coarse"}, default="fine"
        AC-Fine scores every criterion (McS-E) and then the overall score
        (OS-E): 2 calls per item; AC-Coarse gives the overall score with the
        criteria listed: 1 call (paper §5).
    n_candidates : int, default=11
        K candidate demonstration sets in the random search (App. D.2: 11 epochs).
    n_demos : int or None, default=None
        Demonstrations per candidate; None = 3 for summarization/dialogue,
        8 for data-to-text and stories (App. D.2).
    demo_mode : {"bootstrap", "labeled"}, default="bootstrap"
        ``bootstrap``: DSPy BootstrapFewShotWithRandomSearch-style candidates
        (the paper's optimizer); ``labeled``: random labeled demos only.
    bootstrap_threshold : float, default=15.0
        A zero-shot trace becomes a demo when its overall score is within this
        many points (0-100) of the human score (our choice; not in the paper).
    eval_subsample : int or None, default=None
        Score candidates on at most this many training items (None = the
        whole training split, as in the paper; set it for slow backends).
    batch_size : int, default=5
        Examples per mini-batch in task inference (§4.1).
    max_batches : int, default=25
        At most this many mini-batches / iterations (§4.1).
    complete_streak : int, default=5
        Consecutive COMPLETE answers that stop an inference loop (§4.1).
    task_temperature : float, default=1.0
        Sampling temperature of task inference (not reported in the paper;
        DSPy's default for data observation). Scoring is greedy.
    max_tokens : int, default=768
        Reply budget of every call (a McS-E reply on 8 criteria takes 400-800 tokens).
    source_chars : int, default=2000
        Sources in task-inference batches and demonstrations are cut to this
        many characters to fit small contexts (App. D.2 uses fewer demonstrations
        on long-input datasets for the same reason); the judged item is never cut.
    seed : int, default=0
        Seeds the mini-batch order, the candidate draws and task-inference sampling.
    task_description : str or None, default=None
        A person's task description; None = inferred (stage 1).
    criteria : dict or None, default=None
        A person's criteria ``{name: definition}``; None = inferred (stage 1).
    criteria_form : {"auto", "paper", "sentence"}, default="auto"
        How stage 1 asks for criteria: ``paper``, named criteria with
        definitions (§4.1, Table 15); ``sentence``, for small models, each
        criterion one sentence that starts "A good <output>" under a grammar,
        named from its sentence (ours); ``auto``, the sentence form on the
        embedded model and the paper's on every other backend
        (:func:`~judge_engine.methods.base.resolve_criteria_form`). The form
        used is ``judge.state["criteria_form"]``.
    retry_unparsed : bool, default=True
        One follow-up turn asking for the overall score alone when an OS-E
        reply has none (not in the paper, whose parser falls back to a
        default number; here a second failure is recorded as missing).
    weighted : bool, default=False
        Read the overall score probability-weighted (not in the paper): after
        each OS-E reply, a follow-up turn asks for a 1-9 digit, and the
        expectation over the digits' probabilities is mapped to 0-100. On
        backends without logprobs this has no effect. Meant for small local
        models, which rarely state a usable 0-100 number.
    ensemble_task : bool, default=True
        After the per-batch task descriptions, one more call merges all of
        them into the final one (§4.1's ensemble).
    criteria_fallback : bool, default=True
        When the first criteria reply and its JSON retry give fewer than 4
        usable criteria, ask a short stand-alone structured prompt (the
        dataset's task and the aspect, :func:`criteria_qualities_prompt`),
        then a free-text one (one example) for ``Name: definition`` lines
        (neither is in the paper; the last is the fallback for backends that
        honour no JSON schema).
    score_normalization : {"ratio", "minmax"}, default="ratio"
        How human scores go onto 0-100 (§2.2): ``100 * r / r_max``, which the
        paper's examples follow, or min-max over the aspect's range.
    no_positive_set : {"fail", "zero_shot"}, default="fail"
        When no candidate, zero-shot included, scores at least 80% of its
        training items with Q > 0: ``"fail"`` ends the fit with a
        ValueError naming each candidate's Q and coverage (no judge);
        ``"zero_shot"`` is a person's choice to keep the zero-shot judge
        anyway, recorded as a ``selection_fallback`` warning.
    """

    name = "active_critic"
    title = "Active-Critic"
    _parameter_constraints = {
        "variant": Options(("fine", "coarse")),
        "n_candidates": Interval(int, 1, 100),
        "n_demos": OptionalInterval(int, 0, 16),
        "demo_mode": Options(("bootstrap", "labeled")),
        "bootstrap_threshold": Interval(float, 0, 100),
        "eval_subsample": OptionalInterval(int, 2, None),
        "batch_size": Interval(int, 1, 50),
        "max_batches": Interval(int, 1, 100),
        "complete_streak": Interval(int, 1, 100),
        "task_temperature": Interval(float, 0, 2),
        "max_tokens": Interval(int, 16, 8192),
        "source_chars": Interval(int, 100, None),
        "seed": Interval(int, 0, None),
        "task_description": OptionalType(str),
        "criteria": OptionalType(dict),
        "criteria_form": Options(CRITERIA_FORMS),
        "retry_unparsed": Options((True, False)),
        "weighted": Options((True, False)),
        "criteria_fallback": Options((True, False)),
        "ensemble_task": Options((True, False)),
        "score_normalization": Options(NORMALIZATIONS),
        "no_positive_set": Options(NO_POSITIVE_SET),
    }

    _parameter_labels = {
        "variant": "Score form", "n_candidates": "Candidate prompts", "n_demos": "Demonstrations per prompt",
        "demo_mode": "Where demonstrations come from", "bootstrap_threshold": "Bootstrap error threshold",
        "eval_subsample": "Items to rate each candidate on", "batch_size": "Examples per inference batch",
        "max_batches": "Most inference batches", "complete_streak": "Stop after complete batches",
        "task_temperature": "Temperature of task inference", "max_tokens": "Reply length limit (tokens)",
        "source_chars": "Characters of each text shown", "seed": "Random seed of the method",
        "task_description": "Task description (fixed)", "criteria": "Criteria (fixed)",
        "criteria_form": "How criteria are asked for",
        "retry_unparsed": "Ask again after an unreadable reply", "weighted": "Probability-weighted scores",
        "criteria_fallback": "Dataset criteria if none inferred", "ensemble_task": "Merge several task guesses",
        "score_normalization": "Human score on 0-100 by", "no_positive_set": "If no demonstration set helps"}
    _choice_labels = {"variant": {"fine": "fine (criteria scores and overall)", "coarse": "coarse (overall only)"},
                      "demo_mode": {"bootstrap": "the model's own rated examples (paper)",
                                    "labeled": "human-scored examples"},
                      "score_normalization": {"ratio": "ratio to the top (paper)", "minmax": "min-max"},
                      "no_positive_set": {"fail": "stop with a message", "zero_shot": "score without demos"},
                      "criteria_form": CRITERIA_FORM_LABELS}
    quick_params: ClassVar[dict[str, Any]] = {"n_candidates": 3, "max_batches": 3, "batch_size": 4,
                                              "complete_streak": 2}
    def __init__(self, *, variant: str = "fine", n_candidates: int = 11, n_demos: int | None = None,
                 demo_mode: str = "bootstrap", bootstrap_threshold: float = 15.0, eval_subsample: int | None = None,
                 batch_size: int = 5, max_batches: int = 25, complete_streak: int = 5, task_temperature: float = 1.0,
                 max_tokens: int = 768, source_chars: int = 2000, seed: int = 0,
                 task_description: str | None = None, criteria: dict | None = None, criteria_form: str = "auto",
                 retry_unparsed: bool = True, weighted: bool = False, criteria_fallback: bool = True,
                 ensemble_task: bool = True, score_normalization: str = "ratio", no_positive_set: str = "fail"):
        self.variant = variant
        self.n_candidates = n_candidates
        self.n_demos = n_demos
        self.demo_mode = demo_mode
        self.bootstrap_threshold = bootstrap_threshold
        self.eval_subsample = eval_subsample
        self.batch_size = batch_size
        self.max_batches = max_batches
        self.complete_streak = complete_streak
        self.task_temperature = task_temperature
        self.max_tokens = max_tokens
        self.source_chars = source_chars
        self.seed = seed
        self.task_description = task_description
        self.criteria = criteria
        self.criteria_form = criteria_form
        self.retry_unparsed = retry_unparsed
        self.weighted = weighted
        self.criteria_fallback = criteria_fallback
        self.ensemble_task = ensemble_task
        self.score_normalization = score_normalization
        self.no_positive_set = no_positive_set

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        """Stage 1 (unless a person gave the task description / criteria), then the demonstration search.

        ``Judge.state["warnings"]`` holds ``no_task_description``,
        ``no_criteria`` and ``selection_fallback`` when they apply;
        ``state["reads"]`` counts per stage how replies were read (JSON,
        free-text fallback, missing). Raises ValueError when no demonstration
        set is selectable and ``no_positive_set`` is ``"fail"``.
        """
        llm, task, progress, log = context.llm, context.task, context.progress, context.log
        self._validate_params()
        mode = self.score_normalization
        examples = [_example(s, aspect, mode) for s in train if aspect.name in s.human]
        batches = [[_example(s, aspect, mode) for s in b if aspect.name in s.human] for b in
                   make_minibatches(train, batch_size=self.batch_size, max_batches=self.max_batches, seed=self.seed)]
        batches = [b for b in batches if b]
        inference = GenerationParams(temperature=self.task_temperature, max_tokens=self.max_tokens, seed=self.seed)
        reads: dict[str, dict[str, int]] = {}

        def sink(kind: str, payload: dict[str, Any]) -> None:
            # count how each stage-1 reply was read, then pass the event on
            if payload.get("read"):
                stage = reads.setdefault(kind, {})
                stage[payload["read"]] = stage.get(payload["read"], 0) + 1
            if log:
                log(kind, payload)

        common = {"llm": llm, "source_chars": self.source_chars, "log": sink, "progress": progress}
        warnings: list[dict[str, Any]] = []
        versions: list[str] = []
        if self.task_description is not None:
            description = self.task_description
            sink("task_description", {"batch": 0, "version": 0, "text": description, "source": "person"})
        else:
            description, versions = infer_task_description(batches, params=inference,
                                                           complete_streak=self.complete_streak,
                                                           ensemble=self.ensemble_task, **common)
            if not description:
                sink("parse_failure", {"stage": "task description", "note": "no task description was produced"})
                warnings.append(judge_warning(
                    "no_task_description", "no task description could be inferred (every observation was COMPLETE "
                    "or no reply held one); the scoring prompts go without one"))
        # checked before the criteria are inferred: their prompt carries the description, and a refused one (a
        # template slot left in, one clause said over and over) would steer every criteria reply
        shown = [t for e in examples for t in (e["input"], e["output"], e.get("context") or "") if t]
        rejected: list[dict[str, Any]] = []
        flagged: list[dict[str, Any]] = []
        if description and self.task_description is None:
            description, refused, doubt = check_task_description(description, task, shown)
            if doubt:
                flagged.append(doubt)
                sink("rubric_flagged", doubt)
            if refused:
                rejected.append(refused)
                sink("rubric_rejected", refused)
                warnings.append(judge_warning(
                    "task_description_rejected", f"the inferred task description was rejected ({refused['reason']}); "
                    f"the prompts use the dataset's own task instead: {description!r}"))
        criteria_failures = 0
        topics = (task.output_label, aspect.name, aspect.definition or "")
        form = resolve_criteria_form(self.criteria_form, llm)
        opener = criteria_opener(task, form)
        sink("criteria_form", {"criteria_form": form, "parameter": self.criteria_form})
        if self.criteria is not None:
            criteria = {str(k): str(v) for k, v in self.criteria.items()}
            sink("criteria", {"iteration": 0, "action": "person", "criteria": criteria, **_diff({}, criteria)})
        else:
            criteria, criteria_failures = define_criteria(batches, description, params=inference,
                                                          complete_streak=self.complete_streak,
                                                          fallback=self.criteria_fallback, dataset_task=task.task,
                                                          quality=_quality(aspect), definition=aspect.definition or "",
                                                          output=task.output_label.lower() or "response",
                                                          opener=opener, shown=shown, topics=topics, **common)
            if criteria_failures:
                sink("parse_failure", {"stage": "criteria", "count": criteria_failures})
        if criteria and self.criteria is None:
            checked = check_criteria(criteria, shown, topics, opener)
            criteria = checked.kept
            for refused in checked.refused:
                rejected.append(refused)
                sink("rubric_rejected", refused)
            for entry in checked.flagged:
                flagged.append(entry)
                sink("rubric_flagged", entry)
        if not criteria:
            warnings.append(judge_warning(
                "no_criteria", "no evaluation criteria were inferred (no criteria reply could be read); "
                "AC-Fine scores no criterion and the overall score is asked without criteria"
                + small_model_hint(form), count=criteria_failures or None))
        elif len(criteria) < MIN_CRITERIA and self.criteria is None:
            warnings.append(judge_warning(
                "few_criteria", f"only {len(criteria)} criteria were inferred (the paper asks for "
                f"{MIN_CRITERIA}-{MAX_CRITERIA})", count=len(criteria)))
        for w in warnings:
            sink("warning", w)
        state = {"variant": self.variant, "task_description": description, "criteria": criteria}
        n_demos = self.n_demos if self.n_demos is not None else demo_count(task)
        demos, search, selection = optimize_demonstrations(
            examples, state, llm=llm, k=self.n_candidates, n_demos=n_demos, mode=self.demo_mode,
            threshold=float(self.bootstrap_threshold), eval_subsample=self.eval_subsample, seed=self.seed,
            params=self.scoring_params(self.get_params()), source_chars=self.source_chars, retry=self.retry_unparsed,
            weighted=self.weighted, no_positive_set=self.no_positive_set, log=log, progress=progress)
        search_reads: dict[str, int] = {}
        for summary in search:
            for key, n in summary["reads"].items():
                search_reads[key] = search_reads.get(key, 0) + n
        reads["search"] = search_reads
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state={**state, "criteria_form": form, "demos": demos, "search": search,
                            "task_description_versions": versions,
                            "criteria_parse_failures": criteria_failures, "n_batches": len(batches),
                            "warnings": warnings + selection, "reads": reads, "rejected": rejected,
                            "flagged": flagged})

    @staticmethod
    def scoring_params(params: dict[str, Any]) -> GenerationParams:
        """Greedy decoding for every scoring call (the paper reports no temperature; greedy scores repeat)."""
        return GenerationParams(temperature=0.0, max_tokens=params["max_tokens"])

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        """An upper bound of the backend calls of fit and of scoring (cache hits make it lower).

        Stage 1, task: one observation and one description per mini-batch,
        plus the ensemble call when there is more than one batch. Criteria:
        init (its JSON retry, and with ``criteria_fallback`` the qualities
        prompt and the list prompt), then per further batch an observation
        and a refine with its JSON retry; the same calls in either
        ``criteria_form``. Search: K candidates, each scoring at most
        the evaluated training items. Per item: McS-E (AC-Fine), OS-E, and at
        most one follow-up turn (the weighted digit, or the retry of an
        unreadable score).
        """
        n_batches = min(self.max_batches, math.ceil(n_train / self.batch_size)) if n_train else 0
        stage1 = 0
        if self.task_description is None:
            stage1 += 2 * n_batches + (1 if self.ensemble_task and n_batches > 1 else 0)
        if self.criteria is None:
            init = 2 + (2 if self.criteria_fallback else 0)  # the structured qualities prompt, then the list
            stage1 += init + 3 * max(0, n_batches - 1)
        per_item = (2 if self.variant == "fine" else 1) + (1 if self.weighted or self.retry_unparsed else 0)
        n_eval = n_train if self.eval_subsample is None else min(self.eval_subsample, n_train)
        return {"fit": stage1 + self.n_candidates * n_eval * per_item, "score": n_test * per_item}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        aspect, state = judge.aspect_record, judge.state
        # judges saved before the paper's ratio became the default were fitted with min-max
        mode = judge.params.get("score_normalization", "minmax")
        examples = [{"sample_id": s.id, "input": s.input, "output": s.output, "context": s.context} for s in samples]
        results = run_pipeline(examples, state, state.get("demos", []), llm=llm,
                               params=cls.scoring_params(judge.params), source_chars=judge.params["source_chars"],
                               retry=judge.params["retry_unparsed"], weighted=judge.params.get("weighted", False),
                               progress=progress)
        verdicts = []
        for sample, r in zip(samples, results):
            crit = r["criteria_scores"]
            missing = [k for k, v in crit.items() if math.isnan(v["score"])]
            metadata = {"variant": state["variant"], "source": r["source"], "read": r["ose_read"],
                        "criteria_read": r["mcse_read"],
                        "overall_100": None if math.isnan(r["overall"]) else r["overall"],
                        "criteria_100": {k: (None if math.isnan(v["score"]) else v["score"]) for k, v in crit.items()},
                        "criteria_explanations": {k: v["explanation"] for k, v in crit.items()},
                        "missing_criteria": missing, "retried": r["retried"]}
            if r["missing_reason"]:
                metadata["missing_reason"] = r["missing_reason"]
            explanation = r["explanation"]
            # a reply there was: its explanation must say something (no reply at all is the missing score's story)
            refused = check_explanation(explanation) if (r["ose_raw"] or "").strip() else None
            if refused:
                metadata["explanation_rejected"] = refused
                explanation = ""  # not shown as the judge's reason; the reply stays in raw
            verdicts.append(Verdict(
                sample_id=sample.id, aspect=aspect.name, score=to_aspect_scale(r["overall"], aspect, mode),
                criteria={k: to_aspect_scale(v["score"], aspect, mode) for k, v in crit.items()},
                explanation=explanation,
                raw=r["ose_raw"] if not r["mcse_raw"] else f"{r['mcse_raw']}\n---\n{r['ose_raw']}",
                metadata=metadata))
        return verdicts

"""Active-Critic (Xu, Hu and Jiang): the judge infers the task and its criteria from scored examples.

The paper's two stages map onto public functions of this module:

Human scores (§2.2)
    :func:`normalize_score` puts every human score on 0-100 (min-max over the
    aspect's range; the paper gives no formula, and a linear map does not
    change any correlation). :func:`to_aspect_scale` maps judge scores back.
Stage 1, task inference (§4.1, Table 14, App. B)
    :func:`make_minibatches` (batches of 5, at most 25);
    :func:`infer_task_description` (an observation per batch, then a task
    description conditioned on the previous one; stops after 5 consecutive
    COMPLETE answers); :func:`define_criteria` (Algorithm 1, Table 15:
    init, then observe / refine per batch with the same stopping rule;
    4-10 named criteria with one-sentence definitions).
Stage 2, scoring alignment (§4.2, Tables 16-17)
    :func:`score_multi_criteria` (McS-E: one call scores every criterion
    0-100 with an explanation, as JSON) and :func:`score_overall` (OS-E:
    the overall 0-100 score with an explanation and an error analysis).
    AC-Fine runs both; AC-Coarse runs OS-E alone with the criteria listed.
    Unreadable replies are missing (NaN) and counted, never a default
    number; an OS-E reply without a score gets one follow-up turn first
    (``retry_unparsed``, not in the paper), a criteria reply without usable
    JSON one retry (spec §3.3).
Prompt optimization (§4.2 "Prompt Optimization", App. D.2, Eqs. 4-5)
    :func:`optimize_demonstrations`: K candidate demonstration sets, each
    scored on the training split by Q = Pearson + Spearman + Kendall
    (:func:`judge_engine.metrics.correlations`); the best set is frozen for
    the test split. DSPy is not installed here, so this is our own
    implementation of the random search of DSPy's
    ``BootstrapFewShotWithRandomSearch`` (zero-shot candidate, a labeled-only
    candidate, then bootstrapped traces filled up with labeled examples),
    every call going through the engine's one LLM path, cache and ledger.

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
from typing import Any, Sequence

from ..llm import LLM, GenerationParams, Request
from ..metrics import correlations
from ..parsing import parse_json_object, parse_score, weighted_score
from ..prompting import TaskInfo, fence, load_template
from ..records import Aspect, Sample, Verdict
from .base import EventSink, Interval, Judge, Method, Options, Progress, register

TASK_OBSERVE_TEMPLATE = load_template("active_critic_task_observe")
TASK_DESCRIBE_TEMPLATE = load_template("active_critic_task_describe")
CRITERIA_INIT_TEMPLATE = load_template("active_critic_criteria_init")
CRITERIA_OBSERVE_TEMPLATE = load_template("active_critic_criteria_observe")
CRITERIA_REFINE_TEMPLATE = load_template("active_critic_criteria_refine")
JSON_RETRY_TEMPLATE = load_template("active_critic_json_retry")
CRITERIA_LIST_TEMPLATE = load_template("active_critic_criteria_list")
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
)
"""OS-E's ``Score Of Overall: N`` (the paper's example output also says ``Overall Score: 90.0``)."""
EXPLANATION_PATTERN = re.compile(r"explanation\W{0,4}\s*[:：]\s*(.*?)(?=\**\s*(?:score\s*of\s*overall|overall\s*score)|$)",
                                 re.IGNORECASE | re.DOTALL)

DEMO_COUNT_BY_TASK = (("data-to-text", 8), ("data to text", 8), ("table", 8), ("restaurant", 8), ("story", 8))
"""App. D.2: 8 demonstrations for SFRES (data-to-text) and OpenMEVA (stories), 3 otherwise."""
OBSERVATION_CHARS = 3000
"""Accumulated observations shown back to the model are cut to their last characters (small contexts)."""
SCALE = (0, 100)


class OptionalInterval(Interval):
    """An :class:`Interval` that also accepts None (= derived from the data)."""

    def check(self, name: str, value: Any) -> None:
        if value is not None:
            super().check(name, value)


class OptionalType:
    """None, or a value of one of these JSON types."""

    def __init__(self, *kinds: type):
        self.kinds = kinds

    def check(self, name: str, value: Any) -> None:
        if value is not None and not isinstance(value, self.kinds):
            raise ValueError(f"{name}={value!r} must be None or a {' or '.join(k.__name__ for k in self.kinds)}")


# ----------------------------------------------------------------------------------------------- data

def normalize_score(value: float, aspect: Aspect) -> float:
    """§2.2: a human score on the aspect's range, put on 0-100."""
    return 100.0 * (float(value) - aspect.low) / (aspect.high - aspect.low)


def to_aspect_scale(score_100: float, aspect: Aspect) -> float:
    """A 0-100 judge score mapped back onto the aspect's range (NaN stays NaN)."""
    return aspect.low + float(score_100) * (aspect.high - aspect.low) / 100.0


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


def _example(sample: Sample, aspect: Aspect) -> dict[str, Any]:
    return {"sample_id": sample.id, "input": sample.input, "output": sample.output, "context": sample.context,
            "human_100": normalize_score(sample.human[aspect.name], aspect)}


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
    T_n; the notes make this call optional) and its answer is the result.
    """
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
                     params.with_(seed=params.seed + n))
        description = extract_task_description(reply) or description
        versions.append(description)
        if log:
            log("task_description", {"batch": n + 1, "version": len(versions), "text": description, "raw": reply})
    if ensemble and len(versions) > 1:
        prior = "\n".join(f"Version {i}: {v}" for i, v in enumerate(versions, 1))
        reply = _ask(llm, TASK_DESCRIBE_TEMPLATE.render(observations=observations[-OBSERVATION_CHARS:],
                                                        prior_description=prior), params.with_(seed=params.seed + len(batches)))
        description = extract_task_description(reply) or description
        versions.append(description)
        if log:
            log("task_description", {"batch": "all", "version": len(versions), "text": description, "raw": reply,
                                     "ensemble": True})
    return description, versions


# -------------------------------------------------------------------------------- stage 1: criteria

PLACEHOLDER_CRITERIA = ("criterion name", "another criterion", "criterion a", "criterion b", "one-sentence definition",
                        "the response stays on the topic of the source.", "the response stays on the topic of the source")
"""The shape examples of our criteria prompts: a reply that copies them has inferred nothing."""


def _clean_criteria(obj: Any) -> dict[str, str]:
    if not isinstance(obj, dict):
        return {}
    out: dict[str, str] = {}
    for name, definition in obj.items():
        name = str(name).strip()
        if (not name or name.lower() in PLACEHOLDER_CRITERIA or _key(name) in NOT_CRITERIA
                or str(definition).strip().lower() in PLACEHOLDER_CRITERIA):
            continue
        if isinstance(definition, dict):
            definition = next((v for k, v in definition.items() if str(k).lower() in ("description", "definition")),
                              json.dumps(definition, ensure_ascii=False))
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


def parse_criteria_lines(reply: str, *, plain_items: bool = False) -> dict[str, str]:
    """Criteria written as ``Name: one-sentence definition`` lines (the fallback list format).

    A name has at most 5 words, a definition at least 3; prompt labels
    (Source, Response, Observations, ...) and the prompts' placeholder
    shapes are not criteria; a repeated name keeps its first definition.
    With ``plain_items``, a numbered or bulleted line of at least 3 words
    without a name is a criterion too: its first words name it, the whole
    line defines it (for the answer to the list prompt only).
    """
    out: dict[str, str] = {}
    for line in (reply or "").splitlines():
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


def parse_criteria(reply: str) -> tuple[dict[str, str], str]:
    """Criteria and observations from an init or refine reply.

    Accepts ``{"Criteria": {...}, "Observations": "..."}`` and a bare
    ``{name: definition}`` object; without a JSON object, ``Name:
    definition`` lines (:func:`parse_criteria_lines`). Returns ``({}, "")``
    when neither is found.
    """
    obj = parse_json_object(reply or "")
    if not isinstance(obj, dict):
        return parse_criteria_lines(reply), ""
    keys = {str(k).lower(): k for k in obj}
    observations = obj.get(keys.get("observations", ""), "") if "observations" in keys else ""
    if "criteria" in keys:
        return _clean_criteria(obj[keys["criteria"]]), str(observations or "")
    return _clean_criteria({k: v for k, v in obj.items() if str(k).lower() != "observations"}), str(observations or "")


CRITERIA_SHAPE = '{"Criterion name": "one-sentence definition", "Another criterion": "one-sentence definition"}'


def _ask_criteria(llm: LLM, prompt: str, params: GenerationParams, *, min_criteria: int = 4,
                  max_criteria: int = 10, fallback: str | None = None) -> tuple[dict[str, str], str, str, bool]:
    """One criteria call, retried once in a follow-up turn when the reply has no usable 4-10 criteria.

    ``fallback``: a short stand-alone prompt asked when both replies gave
    fewer than ``min_criteria`` (the list prompt of :func:`criteria_list_prompt`);
    its criteria replace the others when there are more of them.
    Returns (criteria, observations, raw reply used, retried).
    """
    messages = [{"role": "user", "content": prompt}]
    reply = llm.complete(messages, params).text
    criteria, observations = parse_criteria(reply)
    retried = False
    if not (min_criteria <= len(criteria) <= max_criteria):
        retried = True
        retry = llm.complete(messages + [{"role": "assistant", "content": reply},
                                         {"role": "user", "content": JSON_RETRY_TEMPLATE.render(expected=CRITERIA_SHAPE)}],
                             params).text
        again, obs_again = parse_criteria(retry)
        if again and (not criteria or min_criteria <= len(again) <= max_criteria):
            criteria, observations, reply = again, obs_again or observations, retry
    if len(criteria) < min_criteria and fallback:
        listed = llm.complete([{"role": "user", "content": fallback}], params).text
        found = parse_criteria_lines(listed, plain_items=True)
        if len(found) > len(criteria):
            criteria, reply = found, listed
    if len(criteria) > max_criteria:
        criteria = dict(list(criteria.items())[:max_criteria])
    return criteria, observations, reply, retried


def _quality(aspect: Aspect) -> str:
    return "overall quality" if aspect.name.lower() == "overall" else aspect.name.replace("_", " ")


def criteria_list_prompt(example: dict[str, Any] | None, *, task: str, quality: str, source_chars: int) -> str:
    """The short fallback prompt: criteria as ``Name: definition`` lines from the dataset's task and one example.

    Not in the paper: for a small model that cannot answer the JSON
    prompt over a whole mini-batch (SmolLM2-135M echoes the examples, and
    its inferred task description is no help), so the task comes from the
    dataset itself (e.g. "dialogue response generation") and the scored
    quality from the aspect's name.
    """
    return CRITERIA_LIST_TEMPLATE.render(
        task=task or "text generation", quality=quality or "overall quality",
        example=render_example(example, source_chars=min(source_chars, 400)) if example else "(none)")


def format_criteria(criteria: dict[str, str]) -> str:
    """``Name: definition`` lines, the way the scoring prompts list the criteria."""
    return "\n".join(f"{name}: {definition}" for name, definition in criteria.items()) or "(none)"


def _diff(old: dict[str, str], new: dict[str, str]) -> dict[str, list[str]]:
    return {"added": [k for k in new if k not in old], "removed": [k for k in old if k not in new],
            "refined": [k for k in new if k in old and old[k] != new[k]]}


def define_criteria(batches: Sequence[Sequence[dict[str, Any]]], task_description: str, *, llm: LLM,
                    params: GenerationParams, source_chars: int, complete_streak: int, fallback: bool = False,
                    dataset_task: str = "", quality: str = "", log: EventSink | None = None,
                    progress: Progress | None = None) -> tuple[dict[str, str], int]:
    """Algorithm 1 / Table 15: initial criteria, then observe and refine on each further mini-batch.

    The refine step uses the new observation (Eq. 8); a COMPLETE observation
    refines nothing, and ``complete_streak`` of them in a row stop the loop.
    Returns the criteria (name -> definition) and the number of replies that
    gave no usable criteria even after the retry (the previous set is kept).
    With ``fallback``, an init that still has fewer than 4 criteria asks the short list
    prompt (:func:`criteria_list_prompt` with ``dataset_task`` and ``quality``; not in the paper).
    """
    phrase = task_phrase(task_description)
    header = f"Task description: {task_description}" if task_description else "Task description: (not available)"
    failures = 0
    examples = "\n\n".join(render_example(e, source_chars=source_chars) for e in batches[0]) if batches else ""
    short = (criteria_list_prompt(batches[0][0] if batches and batches[0] else None, task=dataset_task,
                                  quality=quality, source_chars=source_chars) if fallback else None)
    criteria, observations, raw, retried = _ask_criteria(
        llm, CRITERIA_INIT_TEMPLATE.render(task_description=header, task=phrase, examples=examples), params,
        fallback=short)
    if not criteria:
        failures += 1
    if log:
        log("criteria", {"iteration": 0, "action": "init", "criteria": criteria, "observations": observations,
                         **_diff({}, criteria), "parsed": bool(criteria), "retried": retried, "raw": raw})
    if progress:
        progress(1, len(batches), "criteria")
    streak = 0
    for t in range(1, len(batches)):
        examples = "\n\n".join(render_example(e, source_chars=source_chars) for e in batches[t])
        reply = _ask(llm, CRITERIA_OBSERVE_TEMPLATE.render(
            task_description=header, task=phrase, examples=examples,
            prior_observations=observations[-OBSERVATION_CHARS:] or "(none yet)",
            criteria=json.dumps(criteria, ensure_ascii=False, indent=1)), params.with_(seed=params.seed + t))
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
        refined, _, raw, retried = _ask_criteria(llm, CRITERIA_REFINE_TEMPLATE.render(
            criteria=json.dumps(criteria, ensure_ascii=False, indent=1), observations=reply.strip()),
            params.with_(seed=params.seed + t))
        observations = f"{observations}\n{reply.strip()}".strip()
        if not refined:
            failures += 1
        if log:
            log("criteria", {"iteration": t, "action": "refine", "criteria": refined or criteria,
                             **_diff(criteria, refined or criteria), "parsed": bool(refined), "retried": retried,
                             "raw": raw})
        criteria = refined or criteria
    return criteria, failures


# ----------------------------------------------------------------------------------- stage 2: scoring

def _output_format(criteria: dict[str, str]) -> str:
    body = {name: {"Explanation": "[your explanation]",
                   "Score": f"[score from 0 to 100: 0 - very poor {name.lower()}, 100 - excellent {name.lower()}]"}
            for name in criteria}
    return json.dumps(body, indent=2, ensure_ascii=False)


def _scores_json(criteria_scores: dict[str, dict[str, Any]]) -> str:
    kept = {k: {"Explanation": v.get("explanation", ""), "Score": v["score"]}
            for k, v in criteria_scores.items() if v.get("score") is not None and not math.isnan(v["score"])}
    return json.dumps(kept, indent=1, ensure_ascii=False) if kept else "(no criterion score could be read)"


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def render_demos(demos: Sequence[dict[str, Any]], *, stage: str, source_chars: int) -> str:
    """Demonstrations for a scoring prompt (Table 13).

    A labeled demo shows Source, Response and the human overall score; a
    bootstrapped demo shows the model's own accepted trace: the criterion
    JSON for McS-E, plus the explanation and overall score for OS-E.
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
                lines.append(f"Explanation: {d.get('explanation') or ''}".rstrip())
                lines.append(f"Score Of Overall: {_fmt(d['overall'])}")
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


def score_multi_criteria(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]],
                         *, llm: LLM, params: GenerationParams, source_chars: int,
                         progress: Progress | None = None) -> list[tuple[dict[str, dict[str, Any]], str]]:
    """Eqs. 1-2 (McS-E, Table 16): one call per example scoring every criterion with an explanation."""
    if not state["criteria"]:
        return [({}, "") for _ in examples]
    prompts = [mcse_prompt(e, state, demos, source_chars=source_chars) for e in examples]
    replies = llm.complete_many(_requests(prompts, params),
                                progress=(lambda d, t: progress(d, t, "criterion scores")) if progress else None)
    return [(parse_criteria_scores(r.text, list(state["criteria"])), r.text) for r in replies]


def score_overall(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]],
                  criteria_scores: Sequence[dict[str, dict[str, Any]]] | None, *, llm: LLM,
                  params: GenerationParams, source_chars: int, retry: bool = False, weighted: bool = False,
                  progress: Progress | None = None) -> list[tuple[float, str, str, bool]]:
    """Eq. 3 (OS-E, Table 17): overall 0-100 score, explanation and error analysis per example.

    ``criteria_scores`` None is AC-Coarse: the criteria are listed instead of scored.
    With ``retry``, a reply without a readable score gets one follow-up turn
    asking for the score line alone (not in the paper); if that fails too the
    score is missing. With ``weighted`` on a backend with logprobs, every
    reply gets that follow-up turn instead, asking for a 1-9 digit whose
    probability-weighted value (G-Eval style) is mapped to 0-100 (not in the
    paper; the explanation still comes from the first reply).
    Returns (score, explanation, raw, retried) per example.
    """
    prompts = [ose_prompt(e, state, demos, criteria_scores=None if criteria_scores is None else criteria_scores[i],
                          source_chars=source_chars) for i, e in enumerate(examples)]
    replies = llm.complete_many(_requests(prompts, params),
                                progress=(lambda d, t: progress(d, t, "overall scores")) if progress else None)
    out = [(*parse_overall(r.text), r.text, False) for r in replies]
    if weighted and llm.supports_logprobs:
        return _weighted_overall(prompts, replies, out, llm=llm, progress=progress)
    todo = [i for i, o in enumerate(out) if math.isnan(o[0])] if retry else []
    if todo:
        follow = [Request(({"role": "user", "content": prompts[i]}, {"role": "assistant", "content": replies[i].text},
                           {"role": "user", "content": SCORE_RETRY_TEMPLATE.render()}), params) for i in todo]
        again = llm.complete_many(follow, progress=(lambda d, t: progress(d, t, "overall scores (retry)"))
                                  if progress else None)
        for i, r in zip(todo, again):
            out[i] = (parse_overall(r.text)[0], out[i][1], f"{out[i][2]}\n---\n{r.text}", True)
    return out


WEIGHTED_SCALE = (1, 9)
"""The follow-up turn's single-digit scale when the overall score is read probability-weighted."""


def _weighted_overall(prompts: Sequence[str], replies: Sequence[Any], out: list[tuple[float, str, str, bool]], *,
                      llm: LLM, progress: Progress | None) -> list[tuple[float, str, str, bool]]:
    low, high = WEIGHTED_SCALE
    follow = [Request(({"role": "user", "content": p}, {"role": "assistant", "content": r.text},
                       {"role": "user", "content": WEIGHTED_SCORE_TEMPLATE.render()}),
                      GenerationParams(max_tokens=4, top_logprobs=20)) for p, r in zip(prompts, replies)]
    again = llm.complete_many(follow, progress=(lambda d, t: progress(d, t, "overall scores (weighted)"))
                              if progress else None)
    result = []
    for o, r in zip(out, again):
        value = weighted_score(r.logprobs[0], low, high, first_position=True)[0] if r.logprobs else math.nan
        score = (value - low) / (high - low) * 100 if not math.isnan(value) else math.nan
        result.append((score, o[1], f"{o[2]}\n---\n{r.text}", True))
    return result


def run_pipeline(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]], *,
                 llm: LLM, params: GenerationParams, source_chars: int, retry: bool = False,
                 weighted: bool = False, progress: Progress | None = None) -> list[dict[str, Any]]:
    """AC-Fine (McS-E then OS-E) or AC-Coarse (OS-E alone) on ``examples`` with fixed demos."""
    if state["variant"] == "fine":
        mcse = score_multi_criteria(examples, state, demos, llm=llm, params=params, source_chars=source_chars,
                                    progress=progress)
        overall = score_overall(examples, state, demos, [m[0] for m in mcse], llm=llm, params=params,
                                source_chars=source_chars, retry=retry, weighted=weighted, progress=progress)
    else:
        mcse = [({}, "") for _ in examples]
        overall = score_overall(examples, state, demos, None, llm=llm, params=params, source_chars=source_chars,
                                retry=retry, weighted=weighted, progress=progress)
    return [{"criteria_scores": m[0], "mcse_raw": m[1], "overall": o[0], "explanation": o[1], "ose_raw": o[2],
             "retried": o[3]}
            for m, o in zip(mcse, overall)]


# ---------------------------------------------------------------------------------- prompt optimization

def q_objective(human: Sequence[float], pred: Sequence[float]) -> tuple[float, dict[str, float]]:
    """Eq. 4: Q = Pearson + Spearman + Kendall (NaN when undefined, e.g. constant predictions)."""
    corr = correlations(human, pred)
    return corr["pearson"] + corr["spearman"] + corr["kendall"], corr


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
                            weighted: bool = False, log: EventSink | None = None,
                            progress: Progress | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Eq. 5: pick the demonstration set that maximises Q on the training split (random search over K sets).

    Candidates are scored on the training examples minus their own demos
    (on a seeded subsample of ``eval_subsample`` examples when given, for
    slow backends). Ties and undefined Q keep the earlier candidate.
    Returns the winning demos and one summary per candidate.
    """
    evaluation = list(train)
    if eval_subsample is not None and eval_subsample < len(evaluation):
        evaluation = random.Random(seed).sample(evaluation, eval_subsample)
    zero_shot: dict[str, dict[str, Any]] = {}
    summaries: list[dict[str, Any]] = []
    best, best_q = 0, -math.inf
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
        missing = sum(1 for p in pred if math.isnan(p))
        summary = {"candidate": c, "kind": kind, "demo_ids": [d["sample_id"] for d in demos],
                   "demo_kinds": [d["kind"] for d in demos], "n_scored": len(scored), "n_missing": missing,
                   "n_retried": sum(1 for r in results if r["retried"]),
                   "q": None if math.isnan(q) else q,
                   **{m: (None if math.isnan(v) else v) for m, v in corr.items()}}
        summaries.append(summary)
        if log:
            log("candidate", summary)
        if not math.isnan(q) and q > best_q:
            best, best_q = c, q
        c += 1
    winner = candidates[best][1]
    if log:
        log("demos_selected", {"candidate": best, "q": None if best_q == -math.inf else best_q,
                               "demo_ids": [d["sample_id"] for d in winner],
                               "note": "" if best_q > -math.inf else "no candidate had a defined Q; kept zero-shot"})
    return winner, summaries


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
        many points (0-100) of the human score (spec §5.5; not in the paper).
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
        Sampling temperature of task inference (not reported; DSPy's default
        for data observation, spec §6). Scoring is greedy.
    max_tokens : int, default=768
        Reply budget of every call (McS-E with 8 criteria needs 400-800 tokens, spec §6).
    source_chars : int, default=2000
        Sources in task-inference batches and demonstrations are cut to this
        many characters to fit small contexts (spec §11.18); the judged item
        is never cut.
    seed : int, default=0
        Seeds the mini-batch order, the candidate draws and task-inference sampling.
    task_description : str or None, default=None
        A person's task description; None = inferred (stage 1).
    criteria : dict or None, default=None
        A person's criteria ``{name: definition}``; None = inferred (stage 1).
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
        them into the final one (§4.1's ensemble; optional in the notes).
    criteria_fallback : bool, default=True
        When the first criteria reply and its JSON retry give no criteria,
        ask a short stand-alone prompt (task description and one example)
        for ``Name: definition`` lines (not in the paper).
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
        "retry_unparsed": Options((True, False)),
        "weighted": Options((True, False)),
        "criteria_fallback": Options((True, False)),
        "ensemble_task": Options((True, False)),
    }

    def __init__(self, *, variant: str = "fine", n_candidates: int = 11, n_demos: int | None = None,
                 demo_mode: str = "bootstrap", bootstrap_threshold: float = 15.0, eval_subsample: int | None = None,
                 batch_size: int = 5, max_batches: int = 25, complete_streak: int = 5, task_temperature: float = 1.0,
                 max_tokens: int = 768, source_chars: int = 2000, seed: int = 0,
                 task_description: str | None = None, criteria: dict | None = None, retry_unparsed: bool = True,
                 weighted: bool = False, criteria_fallback: bool = True, ensemble_task: bool = True):
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
        self.retry_unparsed = retry_unparsed
        self.weighted = weighted
        self.criteria_fallback = criteria_fallback
        self.ensemble_task = ensemble_task

    def fit(self, train: Sequence[Sample], aspect: Aspect, *, llm: LLM, task: TaskInfo,
            progress: Progress | None = None, log: EventSink | None = None) -> Judge:
        self._validate_params()
        examples = [_example(s, aspect) for s in train if aspect.name in s.human]
        batches = [[_example(s, aspect) for s in b if aspect.name in s.human] for b in
                   make_minibatches(train, batch_size=self.batch_size, max_batches=self.max_batches, seed=self.seed)]
        batches = [b for b in batches if b]
        inference = GenerationParams(temperature=self.task_temperature, max_tokens=self.max_tokens, seed=self.seed)
        common = {"llm": llm, "source_chars": self.source_chars, "log": log, "progress": progress}
        versions: list[str] = []
        if self.task_description is not None:
            description = self.task_description
            if log:
                log("task_description", {"batch": 0, "version": 0, "text": description, "source": "person"})
        else:
            description, versions = infer_task_description(batches, params=inference,
                                                           complete_streak=self.complete_streak,
                                                           ensemble=self.ensemble_task, **common)
            if not description and log:
                log("parse_failure", {"stage": "task description", "note": "no task description was produced"})
        criteria_failures = 0
        if self.criteria is not None:
            criteria = {str(k): str(v) for k, v in self.criteria.items()}
            if log:
                log("criteria", {"iteration": 0, "action": "person", "criteria": criteria, **_diff({}, criteria)})
        else:
            criteria, criteria_failures = define_criteria(batches, description, params=inference,
                                                          complete_streak=self.complete_streak,
                                                          fallback=self.criteria_fallback, dataset_task=task.task,
                                                          quality=_quality(aspect), **common)
            if criteria_failures and log:
                log("parse_failure", {"stage": "criteria", "count": criteria_failures})
        state = {"variant": self.variant, "task_description": description, "criteria": criteria}
        n_demos = self.n_demos if self.n_demos is not None else demo_count(task)
        demos, search = optimize_demonstrations(
            examples, state, llm=llm, k=self.n_candidates, n_demos=n_demos, mode=self.demo_mode,
            threshold=float(self.bootstrap_threshold), eval_subsample=self.eval_subsample, seed=self.seed,
            params=self.scoring_params(self.get_params()), source_chars=self.source_chars, retry=self.retry_unparsed,
            weighted=self.weighted, log=log, progress=progress)
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state={**state, "demos": demos, "search": search, "task_description_versions": versions,
                            "criteria_parse_failures": criteria_failures, "n_batches": len(batches)})

    @staticmethod
    def scoring_params(params: dict[str, Any]) -> GenerationParams:
        """Greedy decoding for every scoring call (spec §11.14)."""
        return GenerationParams(temperature=0.0, max_tokens=params["max_tokens"])

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        """Upper bound of stage 1 plus the search and scoring calls; follow-up turns for unreadable replies come on top."""
        n_batches = min(self.max_batches, math.ceil(n_train / self.batch_size)) if n_train else 0
        stage1 = 0 if self.task_description is not None else 2 * n_batches + (self.ensemble_task and n_batches > 1)
        stage1 += 0 if self.criteria is not None else (1 + 2 * max(0, n_batches - 1) if n_batches else 1)
        per_item = (2 if self.variant == "fine" else 1) + (1 if self.weighted else 0)
        n_eval = n_train if self.eval_subsample is None else min(self.eval_subsample, n_train)
        return {"fit": stage1 + self.n_candidates * n_eval * per_item, "score": n_test * per_item}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        aspect, state = judge.aspect_record, judge.state
        examples = [{"sample_id": s.id, "input": s.input, "output": s.output, "context": s.context} for s in samples]
        results = run_pipeline(examples, state, state.get("demos", []), llm=llm,
                               params=cls.scoring_params(judge.params), source_chars=judge.params["source_chars"],
                               retry=judge.params["retry_unparsed"], weighted=judge.params.get("weighted", False),
                               progress=progress)
        verdicts = []
        for sample, r in zip(samples, results):
            crit = r["criteria_scores"]
            missing = [k for k, v in crit.items() if math.isnan(v["score"])]
            verdicts.append(Verdict(
                sample_id=sample.id, aspect=aspect.name, score=to_aspect_scale(r["overall"], aspect),
                criteria={k: to_aspect_scale(v["score"], aspect) for k, v in crit.items()},
                explanation=r["explanation"],
                raw=r["ose_raw"] if not r["mcse_raw"] else f"{r['mcse_raw']}\n---\n{r['ose_raw']}",
                metadata={"variant": state["variant"], "overall_100": None if math.isnan(r["overall"]) else r["overall"],
                          "criteria_100": {k: (None if math.isnan(v["score"]) else v["score"]) for k, v in crit.items()},
                          "criteria_explanations": {k: v["explanation"] for k, v in crit.items()},
                          "missing_criteria": missing, "retried": r["retried"]}))
        return verdicts

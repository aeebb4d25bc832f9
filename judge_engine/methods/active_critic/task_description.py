"""Active-Critic stage 1, the task description (§4.1, Table 14, App. B): an observation per mini-batch,
then a description conditioned on the previous one, and the rubric check of the result."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from ... import structured
from ...llm import LLM, Completion, GenerationParams, Request
from ...prompting import TaskInfo, load_template
from ...rubric_model_check import check_with_model, runs_on
from ...rubric_checks import check_entry
from ..base import EventSink, Progress, judge_warning
from .examples import render_example
from .settings import ActiveCriticSettings

TASK_OBSERVE_TEMPLATE = load_template("active_critic_task_observe")
TASK_DESCRIBE_TEMPLATE = load_template("active_critic_task_describe")

COMPLETE_PATTERN = re.compile(r"^\W*COMPLETE\b", re.IGNORECASE)
"""An observation reply that declares the observations complete (the stopping signal)."""
TASK_SENTENCE_PATTERN = re.compile(r"The evaluation task is\b[^\n]*(?:\n(?!\s*\n)[^\n]*)*", re.IGNORECASE)
"""The filled-in summary sentence of the task-description prompt (item 4)."""
TASK_PHRASE_PATTERN = re.compile(r"The evaluation task is\s+(?:an?\s+|the\s+)?\[?\s*([^,\].\n\[]{2,60})",
                                 re.IGNORECASE)
"""The task name inside that sentence, e.g. ``text summarization``."""
OBSERVATION_CHARS = 3000
"""Accumulated observations shown back to the model are cut to their last characters (small contexts)."""


def _ask(llm: LLM, prompt: str, params: GenerationParams) -> str:
    return llm.complete([{"role": "user", "content": prompt}], params).text


def _request(prompt: str, params: GenerationParams) -> Request:
    return Request(({"role": "user", "content": prompt},), params)


def _asked_together(llm: LLM, requests: Sequence[Request]) -> list[Completion]:
    """Requests that do not depend on each other, in one batch (tests send them one by one to compare)."""
    return llm.complete_many(requests)


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


@dataclass(frozen=True)
class InferredTask:
    """What the task-description loop (:func:`infer_task_description`) ended with."""

    description: str
    """The final task description ("" when no reply held one)."""
    versions: list[str]
    """Every version in order, the ensemble's last when there was one."""


@dataclass(frozen=True)
class CheckedTaskDescription:
    """What the rubric checks made of an inferred task description (:func:`check_task_description`)."""

    description: str
    """The description the prompts use: the inferred one, or the dataset's own task when it was refused."""
    refused: dict[str, Any] | None
    """The refusal with its rule and reason, or None."""
    flagged: dict[str, Any] | None
    """The flags raised on an accepted description, or None."""


def infer_task_description(batches: Sequence[Sequence[dict[str, Any]]], *, llm: LLM, params: GenerationParams,
                           source_chars: int, complete_streak: int, ensemble: bool = False,
                           log: EventSink | None = None,
                           progress: Progress | None = None) -> InferredTask:
    """§4.1 / Table 14: one observation per mini-batch, then a task description built on the previous one.

    Returns the final task description and the list of its versions (:class:`InferredTask`). An
    observation answered COMPLETE adds nothing; ``complete_streak``
    consecutive COMPLETE answers stop the loop. With ``ensemble`` and more
    than one version, one more description call is given every version as
    the prior description (§4.1: the final T is the LLM's ensemble of all
    T_n; ``ensemble_task=False`` leaves the call out) and its answer is the result.
    Observations are free text; descriptions are asked for as JSON
    (:data:`TASK_SCHEMA`, with no more tokens than its longest reply needs:
    :func:`judge_engine.structured.sized_max_tokens`) and each event says how the reply was read.
    """
    describe = params.with_(json_schema=structured.as_param(TASK_SCHEMA),
                            max_tokens=structured.sized_max_tokens(params.max_tokens, TASK_SCHEMA))

    def observe(n: int, observations: str) -> Request:
        examples = "\n\n".join(render_example(e, source_chars=source_chars) for e in batches[n])
        return _request(TASK_OBSERVE_TEMPLATE.render(
            examples=examples, prior_observations=observations[-OBSERVATION_CHARS:] or "(none yet)"),
            params.with_(seed=params.seed + n))

    observations, description, versions, streak = "", "", [], 0
    reply = _asked_together(llm, [observe(0, observations)])[0].text if batches else ""
    for n, batch in enumerate(batches):
        complete = is_complete(reply)
        streak = streak + 1 if complete else 0
        if log:
            log("task_observation", {"batch": n + 1, "sample_ids": [e["sample_id"] for e in batch],
                                     "text": reply, "complete": complete, "streak": streak})
        if progress:
            progress(n + 1, len(batches), "task inference")
        last = n + 1 == len(batches)
        if complete:
            if streak >= complete_streak or last:
                break
            reply = _asked_together(llm, [observe(n + 1, observations)])[0].text
            continue
        observations = f"{observations}\n{reply.strip()}".strip()
        # the next observation reads the observations, not the description, so the two go out together (issue 46)
        asked = [_request(TASK_DESCRIBE_TEMPLATE.render(observations=reply.strip(),
                                                        prior_description=description or "(none yet)"),
                          describe.with_(seed=params.seed + n))] + ([] if last else [observe(n + 1, observations)])
        replies = _asked_together(llm, asked)
        text, read = read_task_description(replies[0].text)
        description = text or description
        versions.append(description)
        if log:
            log("task_description", {"batch": n + 1, "version": len(versions), "text": description,
                                     "raw": replies[0].text, "read": read})
        reply = replies[-1].text
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
    return InferredTask(description, versions)


def check_task_description(description: str, task: TaskInfo, shown: Sequence[str], *, llm: Any = None,
                           emit: Any = None, aspect_name: str = "") -> CheckedTaskDescription:
    """The inferred description if the rubric checks accept it, else the dataset's own task; then the
    refusal and the flags (each None when there is none).

    Every scoring prompt carries the description, so a refused one (a copy of
    an example, a template left in) is replaced by a plain statement of the
    dataset's task and kept with its reason; a flagged one is used and its
    flags are shown.
    """
    check = check_entry(description, kind="task_description", shown=shown, max_chars=2000, output=task.output_label)
    # the judge's own model reads it too (issue 65; not on the embedded model)
    check = check_with_model(llm, check, kind="task_description", aspect_name=aspect_name,
                             an_output=f"a {(task.output_label or 'response').lower()}", emit=emit)
    if check.ok:
        flagged = {**check.to_dict(), "stage": "task description"} if check.flags else None
        return CheckedTaskDescription(description, None, flagged)
    fallback = f"Evaluate {task.output_label.lower()}s written for the task of {task.task}."
    return CheckedTaskDescription(fallback, {**check.to_dict(), "stage": "task description"}, None)


@dataclass(frozen=True)
class TaskDescriptionResult:
    """What the task-description step of stage 1 (:func:`task_description_step`) gives the rest of the fit."""

    description: str
    """The description every later prompt carries: a person's, the checked inferred one, the dataset's own
    task when the inferred one was refused, or "" when none was inferred."""
    versions: list[str]
    """Every inferred version in order (empty when a person gave the description)."""
    warnings: list[dict[str, Any]]
    """``no_task_description`` or ``task_description_rejected`` when they apply."""
    rejected: list[dict[str, Any]]
    """The rubric checks' refusal of the inferred description, if any."""
    flagged: list[dict[str, Any]]
    """The rubric checks' flags on the accepted description, if any."""


def task_description_step(batches: Sequence[Sequence[dict[str, Any]]], shown: Sequence[str], *,
                          settings: ActiveCriticSettings, task: TaskInfo, llm: LLM, log: EventSink,
                          progress: Progress | None = None) -> TaskDescriptionResult:
    """§4.1 "Task Description": a person's description as given, else the one inferred from the mini-batches
    (:func:`infer_task_description`) and checked by the rubric checks (:func:`check_task_description`).

    The check comes before the criteria are inferred: their prompt carries the description, and a refused one
    (a template slot left in, one clause said over and over) would steer every criteria reply.
    """
    if settings.task_description is not None:
        log("task_description", {"batch": 0, "version": 0, "text": settings.task_description, "source": "person"})
        return TaskDescriptionResult(settings.task_description, [], [], [], [])
    inferred = infer_task_description(batches, llm=llm, params=settings.inference, source_chars=settings.source_chars,
                                      complete_streak=settings.complete_streak, ensemble=settings.ensemble_task,
                                      log=log, progress=progress)
    if not inferred.description:
        log("parse_failure", {"stage": "task description", "note": "no task description was produced"})
        return TaskDescriptionResult("", inferred.versions, [judge_warning(
            "no_task_description", "no task description could be inferred (every observation was COMPLETE "
            "or no reply held one); the scoring prompts go without one")], [], [])
    reading = progress if progress and runs_on(llm) else None  # the judge's own check is one request (issue 65)
    if reading:
        reading(0, 1, "task description: the judge's own model reads it")
    checked = check_task_description(inferred.description, task, shown, llm=llm, emit=log)
    if reading:
        reading(1, 1, "task description: the judge's own model reads it")
    warnings, rejected, flagged = [], [], []
    if checked.flagged:
        flagged.append(checked.flagged)
        log("rubric_flagged", checked.flagged)
    if checked.refused:
        rejected.append(checked.refused)
        log("rubric_rejected", checked.refused)
        warnings.append(judge_warning(
            "task_description_rejected", f"the inferred task description was rejected ({checked.refused['reason']}); "
            f"the prompts use the dataset's own task instead: {checked.description!r}"))
    return TaskDescriptionResult(checked.description, inferred.versions, warnings, rejected, flagged)

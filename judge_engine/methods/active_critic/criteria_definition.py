"""Active-Critic stage 1, the criteria (§4.1, Algorithm 1, Table 15): initial criteria, then observe and
refine per mini-batch, read by :mod:`.criteria_reading` (JSON, else free text), and checked by the rubric
checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ... import structured
from ...llm import LLM, GenerationParams
from ...prompting import DEFAULT_OPENER, TaskInfo, Template, load_template
from ...records import Aspect
from ...rubric_model_check import check_with_model, runs_on
from ...rubric_checks import check_criterion, check_statement, is_statement
from ..base import EventSink, Progress, judge_warning, resolve_criteria_form, small_model_hint
from .criteria_reading import (MAX_CRITERIA, MIN_CRITERIA, _key, _left_out, criteria_schema, criteria_shape,
                               parse_criteria_lines, qualities_schema, read_criteria, read_qualities)
from .examples import render_example
from .settings import ActiveCriticSettings
from .task_description import OBSERVATION_CHARS, _ask, is_complete, task_phrase

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


MODEL_READS_CRITERIA = "criteria: the judge's own model reads them"
"""The progress stage of the judge's own check of the final criteria (issue 65; its requests are its steps)."""


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
                   opener: str = "", *, llm: Any = None, emit: Any = None,
                   progress: Progress | None = None) -> CheckedCriteria:
    """The criteria the rubric checks accept, the refusals, and the flags raised on accepted ones.

    A criterion written as a sentence (its definition starts with ``opener``, "A good summary ...") is
    checked by :func:`judge_engine.rubric_checks.check_statement`; a named one (the paper's form, a person's
    edit, a free-text reply) by :func:`judge_engine.rubric_checks.check_criterion`. ``topics`` (the output's
    label, the scored aspect's name and definition) lift the ``no_quality`` flag of a criterion that names
    what is judged. With ``llm`` (not the embedded model) the judge's own model reads each accepted criterion, a
    step of ``progress`` each.
    """
    names = list(criteria)
    reading = progress if progress and runs_on(llm) else None
    checks, accepted = [], []
    output = topics[0] if topics else ""  # the judged text's own name comes first in the topics
    for n in names:  # each accepted criterion counts for the near-duplicate rule of the next ones
        if is_statement(criteria[n], opener):
            check = check_statement(criteria[n], opener=opener, shown=shown, accepted=accepted, topics=topics,
                                    output=output)
        else:
            check = check_criterion(n, criteria[n], shown=shown, accepted=accepted, topics=topics, output=output)
        # the judge's own model reads the final criteria (issue 65; ``llm`` given, not the embedded model)
        check = check_with_model(llm, check, kind="criterion", aspect_name=topics[1] if len(topics) > 1 else "",
                                 an_output=f"a {(output or 'response').lower()}", emit=emit)
        accepted += [check.text] if check.ok else []
        checks.append(check)
        if reading:
            reading(len(checks), len(names), MODEL_READS_CRITERIA)
    kept = {n: criteria[n] for n, c in zip(names, checks) if c.ok}
    refused = [{**c.to_dict(), "stage": "criteria", "name": n} for n, c in zip(names, checks) if not c.ok]
    flagged = [{**c.to_dict(), "stage": "criteria", "name": n} for n, c in zip(names, checks) if c.ok and c.flags]
    return CheckedCriteria(kept, refused, flagged)


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


CRITERIA_REFUSED_RETRY = ('Only {usable} of the {proposed} criteria you gave can be used; these repeat another one, '
                          'copy a text, report a score or say nothing but praise: {refused}. Answer again with the '
                          'JSON object only: {expected}. Keep the usable {items} and add different ones in your '
                          'own words.')
"""The follow-up turn when a criteria reply was read but the rubric checks refused some of it (``items``:
"sentences" in the sentence form, "criteria" in the paper's)."""


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


@dataclass(frozen=True)
class CriteriaReply:
    """What one criteria step (:func:`_ask_criteria`) made of its replies."""

    criteria: dict[str, str]
    """The criteria read, name -> definition (or statement); usable ones first when they were pooled."""
    observations: str
    """The observations the reply gave with its criteria (the init step's), else ""."""
    raw: str
    """The raw reply used; pooled replies joined by ``--- next reply ---``."""
    retried: bool
    """Whether the follow-up turn was asked."""
    read: str
    """How it was read: ``json``, ``text``, ``qualities``, ``list`` or ``missing``; pooled: joined by ``+``."""
    dropped: tuple[dict[str, Any], ...] = ()
    """Items of its replies that reading left out (a placeholder, a prompt label, a repeat), with the reasons."""


@dataclass(frozen=True)
class DefinedCriteria:
    """What Algorithm 1 (:func:`define_criteria`) ended with."""

    criteria: dict[str, str]
    """The final criteria, name -> definition (or statement)."""
    parse_failures: int
    """Replies that gave no usable criteria even after their retry (the previous set was kept)."""
    refused: tuple[dict[str, Any], ...] = ()
    """Criteria of refinements the rubric checks refused, each with its rule, reason and stage: a refinement
    that did not replace the criteria, or was replaced by a later one, is recorded here, not dropped; and the
    items of any reply that reading left out (:func:`_clean_criteria`)."""


def _ask_criteria(llm: LLM, prompt: str, params: GenerationParams, *, schema: dict[str, Any] | None = None,
                  opener: str = DEFAULT_OPENER, min_criteria: int = MIN_CRITERIA, max_criteria: int = MAX_CRITERIA,
                  fallback: str | None = None, qualities_fallback: str | None = None,
                  usable: Callable[[dict[str, str]], dict[str, str]] | None = None,
                  ) -> CriteriaReply:
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
    Returns a :class:`CriteriaReply` (criteria, observations, raw reply used, retried, read) where
    ``read`` is ``json``, ``text``, ``qualities`` or ``list`` (the fallback prompts) or ``missing``; when
    criteria were pooled, the raw replies are joined and ``read`` names every way they were read ("json+qualities").
    """
    schema = schema or criteria_schema(opener)
    limit = params.max_tokens  # the ceiling; each schema's request asks for no more than its longest reply needs
    # the rubric presence penalty: without it a small model under a grammar writes its first criterion again
    params = params.with_(json_schema=structured.as_param(schema), presence_penalty=structured.RUBRIC_PRESENCE_PENALTY,
                          max_tokens=structured.sized_max_tokens(limit, schema))
    count = (lambda c: len(usable(c))) if usable else len
    messages = [{"role": "user", "content": prompt}]
    reply = llm.complete(messages, params).text
    dropped: list[dict[str, Any]] = []
    criteria, observations, read = read_criteria(reply, schema, opener, dropped)
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
            else:  # a reply that adds no usable criterion is not used: its new criteria are recorded, not lost
                have = {_key(n) for n in criteria}
                dropped.extend(_left_out(n, d, "not_used", f"its reply ({how}) added no criterion the checks "
                                         f"accept to the {count(criteria)} usable ones already read")
                               for n, d in found.items() if _key(n) not in have)
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
        again, obs_again, read_again = read_criteria(retry, schema, opener, dropped)
        if usable:
            take(again, retry, read_again)
            observations = observations or obs_again
        elif again and (not criteria or min_criteria <= len(again) <= max_criteria):
            criteria, observations, reply, read = again, obs_again or observations, retry, read_again
    if count(criteria) < min_criteria and qualities_fallback:
        # the short structured prompt first (:func:`qualities_schema`), then the free-text list
        qualities = qualities_schema(opener)
        asked = llm.complete([{"role": "user", "content": qualities_fallback}],
                             params.with_(json_schema=structured.as_param(qualities),
                                          max_tokens=structured.sized_max_tokens(limit, qualities))).text
        take(read_qualities(asked, opener, dropped), asked, "qualities")
    if count(criteria) < min_criteria and fallback:
        # free text on purpose: the fallback is for backends that honour no schema
        listed = llm.complete([{"role": "user", "content": fallback}],
                              params.with_(json_schema="", max_tokens=limit)).text
        take(parse_criteria_lines(listed, plain_items=True, opener=opener), listed, "list")
    if len(criteria) > max_criteria:
        dropped.extend(_left_out(n, d, "beyond_limit", f"criterion {i} of {len(criteria)}: at most {max_criteria} "
                                 "are kept, usable ones first") for i, (n, d) in
                       enumerate(list(criteria.items())[max_criteria:], max_criteria + 1))
        criteria = dict(list(criteria.items())[:max_criteria])
    return CriteriaReply(criteria, observations, reply, retried, read, tuple(dropped))


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
                    topics: Sequence[str] = ()) -> DefinedCriteria:
    """Algorithm 1 / Table 15: initial criteria, then observe and refine on each further mini-batch.

    The refine step uses the new observation (Eq. 8); a COMPLETE observation
    refines nothing, and ``complete_streak`` of them in a row stop the loop.
    Every step asks for 4-10 criteria (:func:`criteria_schema`; ``output``
    is the judged text's name in the prompts): named criteria with
    definitions when ``opener`` is "" (the paper's form), else statements
    that start with ``opener`` ("A good summary ...", the sentence form).
    Returns the criteria (name -> definition, or name -> statement with the
    name taken from the statement) and the number of replies that gave no usable
    criteria even after the retry (the previous set is kept), as :class:`DefinedCriteria`. With
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
    init = _ask_criteria(
        llm, _render(CRITERIA_INIT_TEMPLATE, CRITERIA_INIT_NAMED_TEMPLATE, opener, task_description=header,
                     task=phrase, examples=examples, an_output=_an(output), quality=quality or "overall quality"),
        params,
        schema=criteria_schema(opener, observations=True), opener=opener, fallback=short,
        qualities_fallback=qualities, usable=usable)
    criteria, observations = init.criteria, init.observations
    # what reading left out of the replies is recorded with the checks' refusals (issue 50)
    refused: list[dict[str, Any]] = [{**d, "stage": "criteria init"} for d in init.dropped]
    if not criteria:
        failures += 1
    if log:
        log("criteria", {"iteration": 0, "action": "init", "criteria": criteria, "observations": observations,
                         **_diff({}, criteria), "parsed": bool(criteria), "retried": init.retried, "raw": init.raw,
                         "read": init.read})
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
        refine = _ask_criteria(llm, _render(
            CRITERIA_REFINE_TEMPLATE, CRITERIA_REFINE_NAMED_TEMPLATE, opener, criteria=_listing(criteria, opener),
            observations=reply.strip(), an_output=_an(output), quality=quality or "overall quality"),
            params.with_(seed=params.seed + t), opener=opener, usable=usable)
        refined = refine.criteria
        refused += [{**d, "stage": f"criteria refinement {t}"} for d in refine.dropped]
        observations = f"{observations}\n{reply.strip()}".strip()
        if not refined:
            failures += 1
        # a refinement replaces the criteria unless the rubric checks accept fewer of its criteria than of the
        # current ones (ours): a refinement that drifts off the task would otherwise replace usable criteria with
        # ones the checks refuse, leaving the judge with none. Then its usable criteria join the current usable
        # ones instead of being thrown away with the refused ones, and every refused one is recorded (issue 50:
        # nothing is dropped silently)
        seen = shown if shown is not None else [x for e in batches[t] for x in (e.get("input"), e.get("output"),
                                                                               e.get("context")) if x]
        checked = check_criteria(refined, seen, topics, opener) if refined else None
        if checked:
            refused += [{**r, "stage": f"criteria refinement {t}"} for r in checked.refused]
        worse = bool(checked) and len(checked.kept) < len(check_criteria(criteria, seen, topics, opener).kept)
        after = refined or criteria
        if worse:
            taken = {_key(n) for n in checked.kept}
            previous = check_criteria(criteria, seen, topics, opener).kept
            after = dict(list({**checked.kept, **{n: d for n, d in previous.items() if _key(n) not in taken}}.items())
                         [:MAX_CRITERIA])
        if log:
            log("criteria", {"iteration": t, "action": "refine", "criteria": after, **_diff(criteria, after),
                             "parsed": bool(refined), "retried": refine.retried, "raw": refine.raw, "read": refine.read,
                             **({"kept_previous": f"the rubric checks accept fewer of the refined criteria: "
                                                  f"{len(checked.kept)} of theirs joined the usable current ones, "
                                                  f"{len(checked.refused)} refused"} if worse else {})})
        criteria = after
    return DefinedCriteria(criteria, failures, tuple(refused))


@dataclass(frozen=True)
class CriteriaDefinitionResult:
    """What the criteria step of stage 1 (:func:`criteria_definition_step`) gives the rest of the fit."""

    criteria: dict[str, str]
    """The criteria the scoring prompts use: a person's as given, else the inferred ones the rubric checks kept."""
    form: str
    """The criteria form used (``paper`` or ``sentence``), ``auto`` resolved for the backend."""
    parse_failures: int
    """Criteria replies that gave no usable criteria even after their retry."""
    warnings: list[dict[str, Any]]
    """``no_criteria`` or ``few_criteria`` when they apply."""
    rejected: list[dict[str, Any]]
    """Inferred criteria the rubric checks refused, with rule and reason."""
    flagged: list[dict[str, Any]]
    """Kept criteria with the rubric checks' flags."""


def criteria_definition_step(batches: Sequence[Sequence[dict[str, Any]]], shown: Sequence[str],
                             task_description: str, *, settings: ActiveCriticSettings, task: TaskInfo,
                             aspect: Aspect, llm: LLM, log: EventSink,
                             progress: Progress | None = None) -> CriteriaDefinitionResult:
    """§4.1 "Criteria Definition": a person's criteria as given, else Algorithm 1 (:func:`define_criteria`) in the
    criteria form chosen for the backend, its result checked by the rubric checks (:func:`check_criteria`)."""
    topics = (task.output_label, aspect.name, aspect.definition or "")
    form = resolve_criteria_form(settings.criteria_form, llm)
    opener = criteria_opener(task, form)
    log("criteria_form", {"criteria_form": form, "parameter": settings.criteria_form})
    if settings.criteria is not None:
        criteria = {str(k): str(v) for k, v in settings.criteria.items()}
        log("criteria", {"iteration": 0, "action": "person", "criteria": criteria, **_diff({}, criteria)})
        return CriteriaDefinitionResult(criteria, form, 0, [] if criteria else [_no_criteria(form, 0)], [], [])
    defined = define_criteria(batches, task_description, llm=llm, params=settings.inference,
                              source_chars=settings.source_chars, complete_streak=settings.complete_streak,
                              fallback=settings.criteria_fallback, dataset_task=task.task, quality=_quality(aspect),
                              definition=aspect.definition or "", output=task.output_label.lower() or "response",
                              opener=opener, log=log, progress=progress, shown=shown, topics=topics)
    if defined.parse_failures:
        log("parse_failure", {"stage": "criteria", "count": defined.parse_failures})
    criteria, rejected, flagged = defined.criteria, [], []
    final = check_criteria(criteria, shown, topics, opener, llm=llm, emit=log, progress=progress) if criteria else None
    said = set()
    for refused in [*(final.refused if final else []), *defined.refused]:
        if refused["text"] not in said:  # a refused criterion the final set kept is one rejection, of the final set
            said.add(refused["text"])
            rejected.append(refused)
            log("rubric_rejected", refused)
    if final:
        checked = final
        criteria = checked.kept
        for entry in checked.flagged:
            flagged.append(entry)
            log("rubric_flagged", entry)
    warnings = []
    if not criteria:
        warnings.append(_no_criteria(form, defined.parse_failures))
    elif len(criteria) < MIN_CRITERIA:
        warnings.append(judge_warning(
            "few_criteria", f"only {len(criteria)} criteria were inferred (the paper asks for "
            f"{MIN_CRITERIA}-{MAX_CRITERIA})", count=len(criteria)))
    return CriteriaDefinitionResult(criteria, form, defined.parse_failures, warnings, rejected, flagged)


def _no_criteria(form: str, parse_failures: int) -> dict[str, Any]:
    """The ``no_criteria`` warning: the judge will score without criteria."""
    return judge_warning(
        "no_criteria", "no evaluation criteria were inferred (no criteria reply could be read); "
        "AC-Fine scores no criterion and the overall score is asked without criteria"
        + small_model_hint(form), count=parse_failures or None)

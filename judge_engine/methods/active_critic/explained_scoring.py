"""Active-Critic stage 2, scoring alignment (§4.2, Tables 16-17): McS-E scores every criterion with an
explanation, OS-E the overall score with an explanation and an error analysis."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ... import structured
from ...llm import LLM, GenerationParams, Request
from ...llm.chains import Chain
from ...parsing import parse_json_object, parse_score, read_weighted
from ...prompting import load_template
from ...rubric_checks import check_entry
from ..base import Progress
from .criteria_definition import format_criteria
from .criteria_reading import _key
from .examples import render_example

SCORE_RETRY_TEMPLATE = load_template("active_critic_score_retry")
WEIGHTED_SCORE_TEMPLATE = load_template("active_critic_weighted_score")
MCSE_TEMPLATE = load_template("active_critic_mcse")
OSE_TEMPLATE = load_template("active_critic_ose")
OSE_COARSE_TEMPLATE = load_template("active_critic_ose_coarse")

OVERALL_PATTERNS = (
    re.compile(r"score\s*of\s*overall\W{0,4}\s*[:：]?\s*\**\s*\[?\s*(\d{1,3}(?:\.\d+)?)", re.IGNORECASE),
    re.compile(r"overall\s*score\W{0,4}\s*[:：]?\s*\**\s*\[?\s*(\d{1,3}(?:\.\d+)?)", re.IGNORECASE),
    re.compile(r"\"overall\"\s*:\s*\"?\s*(\d{1,3}(?:\.\d+)?)", re.IGNORECASE),
)
"""OS-E's ``Score Of Overall: N`` (the paper's example output also says ``Overall Score: 90.0``)."""
EXPLANATION_PATTERN = re.compile(r"explanation\W{0,4}\s*[:：]\s*(.*?)(?=\**\s*(?:score\s*of\s*overall|overall\s*score)|$)",
                                 re.IGNORECASE | re.DOTALL)

SCALE = (0, 100)


def check_explanation(explanation: str) -> str | None:
    """Why a judge's explanation cannot be shown as one (nothing in it, or one line said over and over), else None.

    A small model's OS-E "explanation" may be one heading said over and over: that is no reason for the score.
    Only the ``empty`` and ``repetitive`` rules of :mod:`judge_engine.rubric_checks` apply: an explanation
    may quote the judged text and may be long.
    """
    check = check_entry(explanation, kind="explanation", min_words=1, max_chars=10 ** 9)
    return None if check.ok else check.reason



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


def ose_schema(explanation_chars: int = OVERALL_EXPLANATION_CHARS) -> dict[str, Any]:
    """OS-E's reply: ``{"explanation": "... and the error analysis", "overall": 0-100}`` (reason first, as in
    Table 17), the explanation at most ``explanation_chars`` long."""
    return structured.object_schema(structured.EXPLAINED_SCORES, {
        "explanation": {"type": "string", "minLength": 1, "maxLength": explanation_chars},
        "overall": structured.score_value(*SCALE)})


OSE_SCHEMA = ose_schema()
"""OS-E's reply at the default explanation length; replies are read against it (a shorter bound asked for
still reads)."""
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


WEIGHTED_SCALE = (1, 9)
"""The follow-up turn's single-digit scale when the overall score is read probability-weighted."""
WEIGHTED_SCHEMA = structured.score_schema(*WEIGHTED_SCALE)
"""``{"score": 1-9}``, score first, so the digit comes within the first tokens, whose alternatives are returned."""
WEIGHTED_MAX_TOKENS = 16
"""Reply budget of the weighted follow-up: ``{"score": 7}`` is about 6 tokens, and the backends return
alternatives for the first 16 positions (:data:`judge_engine.llm.base.LOGPROB_POSITIONS`)."""


@dataclass(frozen=True)
class ScoringCalls:
    """The generation parameters of each call :func:`score_item` may make, built once per batch of items."""

    mcse: GenerationParams
    """McS-E: :func:`mcse_schema` of the criteria, no more tokens than its longest reply needs."""
    ose: GenerationParams
    """OS-E: :func:`ose_schema` at the explanation length asked for, sized the same way."""
    retry: GenerationParams
    """The score follow-up (:data:`RETRY_SCHEMA`)."""
    weighted: GenerationParams
    """The probability-weighted digit follow-up (:data:`WEIGHTED_SCHEMA`)."""

    @classmethod
    def of(cls, names: Sequence[str], params: GenerationParams, explanation_chars: int) -> "ScoringCalls":
        # max_tokens is the ceiling; a structured reply asks for no more than its schema's longest reply needs
        def sized(schema: dict[str, Any]) -> GenerationParams:
            return params.with_(json_schema=structured.as_param(schema),
                                max_tokens=structured.sized_max_tokens(params.max_tokens, schema))
        return cls(mcse=sized(mcse_schema(names)), ose=sized(ose_schema(explanation_chars)), retry=sized(RETRY_SCHEMA),
                   weighted=GenerationParams(max_tokens=WEIGHTED_MAX_TOKENS, top_logprobs=20,
                                             json_schema=structured.as_param(WEIGHTED_SCHEMA)))


def _user(prompt: str, params: GenerationParams) -> Request:
    return Request(({"role": "user", "content": prompt},), params)


def _follow_up(prompt: str, reply: str, ask: str, params: GenerationParams) -> Request:
    return Request(({"role": "user", "content": prompt}, {"role": "assistant", "content": reply},
                    {"role": "user", "content": ask}), params)


def _overall_row(text: str) -> dict[str, Any]:
    score, explanation, read = read_overall(text)
    return {"overall": score, "explanation": explanation, "raw": text, "retried": False, "read": read,
            "source": read, "missing_reason": "" if read != "missing" else "no overall score in the reply"}


def _retried_row(out: dict[str, Any], text: str) -> dict[str, Any]:
    score, read = read_retry_score(text)
    return {**out, "overall": score, "raw": f"{out['raw']}\n---\n{text}", "retried": True, "source": read,
            "missing_reason": "" if read != "missing" else "no overall score in the reply nor in the follow-up turn"}


def _weighted_row(out: dict[str, Any], reply: Any) -> dict[str, Any]:
    low, high = WEIGHTED_SCALE
    # the digit's own position when the reply chose one; else the first position's alternatives,
    # only with enough probability mass there (read_weighted), and flagged as such
    reading = read_weighted(reply.logprobs[0], low, high, first_position=True) if reply.logprobs else None
    score = (reading.score - low) / (high - low) * 100 if reading and not math.isnan(reading.score) else math.nan
    source = reading.source if reading and not math.isnan(score) else "missing"
    reason = "" if source != "missing" else (reading.missing_reason if reading else "no logprobs returned")
    return {**out, "overall": score, "raw": f"{out['raw']}\n---\n{reply.text}", "retried": True,
            "source": source, "missing_reason": reason}


def score_item(example: dict[str, Any], state: dict[str, Any], demos: Sequence[dict[str, Any]], *,
               calls: ScoringCalls, source_chars: int, retry: bool = False, weighted: bool = False) -> Chain:
    """One item's calls as a chain (:meth:`judge_engine.llm.LLM.complete_chains`): McS-E, then OS-E, then a follow-up.

    Eqs. 1-2 (McS-E, Table 16, AC-Fine with criteria): one call scoring every criterion with an explanation.
    Eq. 3 (OS-E, Table 17): the overall 0-100 score, explanation and error analysis; its prompt carries this
    item's criterion scores (AC-Fine) or lists the criteria (AC-Coarse, ``state["variant"] == "coarse"``), so
    it waits for this item's McS-E reply and no other's. With ``weighted`` (a backend with logprobs: the caller
    decides), every OS-E reply gets a follow-up turn asking for a 1-9 digit whose probability-weighted value
    (G-Eval style) is mapped to 0-100 (not in the paper; the explanation still comes from OS-E). Else with
    ``retry``, an OS-E reply without a readable score gets one follow-up turn asking for the score alone
    (:data:`RETRY_SCHEMA`; not in the paper); if that fails too the score is missing.
    Returns the item's row: ``criteria_scores``, ``mcse_raw``, ``mcse_read`` ("" without a McS-E call),
    ``overall``, ``explanation``, ``ose_raw``, ``ose_read`` (how the first OS-E reply was read),
    ``retried``, ``source`` (where the score came from: ``json``, ``text``, ``logprobs``,
    ``logprobs_first_position`` or ``missing``) and ``missing_reason``.
    """
    fine = state["variant"] == "fine"
    names = list(state["criteria"])
    mcse: tuple[dict[str, dict[str, Any]], str, str] = ({}, "", "")
    if fine and names:
        reply = yield _user(mcse_prompt(example, state, demos, source_chars=source_chars), calls.mcse)
        mcse = _mcse_row(reply.text, names)
    prompt = ose_prompt(example, state, demos, criteria_scores=mcse[0] if fine else None, source_chars=source_chars)
    reply = yield _user(prompt, calls.ose)
    out = _overall_row(reply.text)
    if weighted:
        again = yield _follow_up(prompt, reply.text, WEIGHTED_SCORE_TEMPLATE.render(), calls.weighted)
        out = _weighted_row(out, again)
    elif retry and math.isnan(out["overall"]):
        again = yield _follow_up(prompt, reply.text, SCORE_RETRY_TEMPLATE.render(), calls.retry)
        out = _retried_row(out, again.text)
    return {"criteria_scores": mcse[0], "mcse_raw": mcse[1], "mcse_read": mcse[2], "overall": out["overall"],
            "explanation": out["explanation"], "ose_raw": out["raw"], "ose_read": out["read"],
            "retried": out["retried"], "source": out["source"], "missing_reason": out["missing_reason"]}


def _mcse_row(text: str, names: Sequence[str]) -> tuple[dict[str, dict[str, Any]], str, str]:
    scores, read = read_criteria_scores(text, names)
    return scores, text, read


def run_pipeline(examples: Sequence[dict[str, Any]], state: dict[str, Any], demos: Sequence[dict[str, Any]], *,
                 llm: LLM, params: GenerationParams, source_chars: int, retry: bool = False,
                 weighted: bool = False, explanation_chars: int = OVERALL_EXPLANATION_CHARS,
                 progress: Progress | None = None) -> list[dict[str, Any]]:
    """AC-Fine (McS-E then OS-E) or AC-Coarse (OS-E alone) on ``examples`` with fixed demos.

    One row per example (:func:`score_item`), ``ose_raw`` the raw text of OS-E and its follow-up.
    """
    return run_pipelines([(examples, demos)], state, llm=llm, params=params, source_chars=source_chars, retry=retry,
                         weighted=weighted, explanation_chars=explanation_chars, progress=progress)[0]


def run_pipelines(jobs: Sequence[tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]], state: dict[str, Any],
                  *, llm: LLM, params: GenerationParams, source_chars: int, retry: bool = False,
                  weighted: bool = False, explanation_chars: int = OVERALL_EXPLANATION_CHARS,
                  progress: Progress | None = None) -> list[list[dict[str, Any]]]:
    """:func:`run_pipeline` for several ``(examples, demos)`` jobs at once, one result list per job.

    The paper orders only an item's own calls (OS-E's prompt carries that item's McS-E reply), and the jobs do
    not depend on each other (the demonstration search's candidates), so every item of every job is one chain
    of :meth:`judge_engine.llm.LLM.complete_chains`: an item's OS-E call goes out as soon as its McS-E reply is
    in, while other items' McS-E calls are still in flight (issue 46). The same requests and replies as stage
    after stage; an identical request of two items is sent once. On a backend that answers one call at a time
    the chains go in rounds: every McS-E, then every OS-E, then the follow-ups, as before.
    """
    examples = [e for exs, _ in jobs for e in exs]
    sets = [demos for exs, demos in jobs for _ in exs]
    calls = ScoringCalls.of(list(state["criteria"]), params, explanation_chars)
    fine = state["variant"] == "fine" and bool(state["criteria"])
    chains = [score_item(e, state, d, calls=calls, source_chars=source_chars, retry=retry,
                         weighted=weighted and llm.supports_logprobs) for e, d in zip(examples, sets)]
    label = "criterion and overall scores" if fine else "overall scores"
    rows = llm.complete_chains(chains, calls_each=2 if fine else 1,
                               progress=(lambda d, t: progress(d, t, label)) if progress else None)
    out, start = [], 0
    for exs, _ in jobs:
        out.append(rows[start:start + len(exs)])
        start += len(exs)
    return out


# ---------------------------------------------------------------------------------- prompt optimization

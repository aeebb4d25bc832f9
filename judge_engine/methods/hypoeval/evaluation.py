"""M_E and §3.3 hypothesis-guided evaluation: one score per hypothesis, a text's score their mean."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Sequence

from ... import metrics
from ...criteria_scoring import LAYOUTS, ScoringSettings, score_criteria
from ...llm import LLM
from ...prompting import TaskInfo, judge_scale, load_template, to_aspect_range
from ...records import Aspect, Sample, Verdict
from .bank import as_criterion, hypothesis_key
from .context import Context

SCORE_INSTRUCTIONS_TEMPLATE = load_template("hypoeval_score")
SCORE_STEPS_TEMPLATE = load_template("hypoeval_score_steps")

SOURCE_ORDER = ("logprobs_first_position", "text", "logprobs", "json")
"""Where a score was read, least direct first: a verdict's ``source`` is the least direct of its scores'."""


def score_instructions(aspect: Aspect, task: TaskInfo, *, reasoning: bool) -> str:
    """What the judge does with one hypothesis; the three reasoning steps only when it reasons first."""
    label = task.output_label.lower()
    text = SCORE_INSTRUCTIONS_TEMPLATE.render(output_label_lower=label, aspect_name=aspect.name)
    return text + "\n" + SCORE_STEPS_TEMPLATE.render(output_label_lower=label) if reasoning else text


def evaluate_hypotheses(ctx: Context, entries: Sequence[dict[str, Any]], samples: Sequence[Sample],
                        stage: str) -> None:
    """M_E(x, y, I, h) for every (entry, sample) not yet scored; results go into ``entry["scores"]``.

    Scores are on the judge scale, ``None`` when missing after the follow-up turn.
    """
    todo_samples = [s for s in samples if any(s.id not in e["scores"] for e in entries)]
    if not todo_samples or not entries:
        return
    criteria = [as_criterion(e["text"]) for e in entries]
    results = score_criteria(todo_samples, criteria, aspect=ctx.aspect,
                             instructions=score_instructions(ctx.aspect, ctx.task, reasoning=ctx.scoring.reasoning),
                             task=ctx.task, llm=ctx.llm, settings=ctx.scoring)
    ctx.calls += len(todo_samples) * len(entries)
    missing = 0
    sources: dict[str, int] = {}
    for sample, by_key in zip(todo_samples, results):
        for entry in entries:
            result = by_key.get(entry["key"])
            if result is None or sample.id in entry["scores"]:
                continue
            entry["scores"][sample.id] = None if result.missing else result.score
            missing += result.missing
            source = result.source or ("missing" if result.missing else "text")
            sources[source] = sources.get(source, 0) + 1
            ctx.score_sources[source] = ctx.score_sources.get(source, 0) + 1
    if sources:
        ctx.emit("scores_read", {"stage": stage, "sources": sources})
    if missing:
        ctx.failures += missing
        ctx.emit("parse_failures", {"stage": stage, "missing": missing, "of": len(todo_samples) * len(entries)})
    ctx.progress(stage)


def evaluate_with_hypotheses(samples: Sequence[Sample], hypotheses: Sequence[dict[str, Any]], *, aspect: Aspect,
                             task: TaskInfo, llm: LLM, settings: ScoringSettings,
                             progress: Callable[[int, int], None] | None = None) -> list[Verdict]:
    """Score = mean over H_ev of the per-hypothesis scores, missing ones left out (§3.3; leaving them out is ours).

    Each verdict keeps every hypothesis' score (``criteria``), reasoning and
    where it was read (``metadata["per_hypothesis"]``, ``source`` each).
    ``metadata["source"]`` is the least direct reading among its scores
    (``logprobs_first_position`` flags a score read from the alternatives of
    a reply that chose no number), ``metadata["sources"]`` counts them. With
    no parsed score at all the verdict is missing (NaN, ``source="missing"``
    with a ``missing_reason``), never a default.
    """
    scale = judge_scale(aspect)
    criteria = [as_criterion(h["text"]) for h in hypotheses]
    instructions = score_instructions(aspect, task, reasoning=settings.reasoning)
    results = score_criteria(samples, criteria, instructions=instructions, aspect=aspect, task=task, llm=llm,
                             settings=settings, progress=progress) if criteria else [{} for _ in samples]
    verdicts = []
    for sample, by_key in zip(samples, results):
        per = [{"key": c.key, "score": None if by_key[c.key].missing else by_key[c.key].score,
                "explanation": by_key[c.key].explanation,
                "source": by_key[c.key].source or ("missing" if by_key[c.key].missing else "text"),
                **({"missing_reason": getattr(by_key[c.key], "missing_reason", "")} if by_key[c.key].missing else {})}
               for c in criteria]
        parsed = [p["score"] for p in per if p["score"] is not None]
        score = to_aspect_range(sum(parsed) / len(parsed), scale, aspect) if parsed else math.nan
        sources: dict[str, int] = {}
        for p in per:
            sources[p["source"]] = sources.get(p["source"], 0) + 1
        read = [p["source"] for p in per if p["score"] is not None]
        extra: dict[str, Any] = {"source": min(read, key=SOURCE_ORDER.index) if read else "missing",
                                 "sources": sources}
        if not parsed:
            extra["missing_reason"] = ("no hypothesis selected" if not per else
                                       f"none of the {len(per)} hypotheses gave a readable score")
        verdicts.append(Verdict(
            sample_id=sample.id, aspect=aspect.name, score=score,
            criteria={c.key: (math.nan if p["score"] is None else to_aspect_range(p["score"], scale, aspect))
                      for c, p in zip(criteria, per)},
            explanation="\n\n".join(f"[{p['key']}] {p['explanation']}" for p in per if p["explanation"]),
            raw="\n\n=====\n\n".join(by_key[c.key].raw for c in criteria if c.key in by_key),
            metadata={"per_hypothesis": per, "missing": len(per) - len(parsed), "n_hypotheses": len(per),
                      **extra}))
    return verdicts


def compare_layouts(samples: Sequence[Sample], hypotheses: Sequence[str], *, aspect: Aspect, task: TaskInfo,
                    llm: LLM, settings: ScoringSettings | None = None) -> dict[str, dict[str, Any]]:
    """Benchmark (not a timed test): both prompt layouts on the same N samples x hypotheses.

    ``settings`` (default: the papers') fixes everything but the layout; one call per hypothesis.

    For each layout: wall time, calls, cache hits, prompt tokens sent, and
    the Pearson/Spearman of the mean score with the human scores. Run it on
    a fresh cache (or a backend whose own prefix cache is what is measured):
    answers already in the call cache take no time.
    """
    import time as _time

    entries = [{"key": hypothesis_key(h), "text": h} for h in hypotheses]
    human = [s.human.get(aspect.name, math.nan) for s in samples]
    out: dict[str, dict[str, Any]] = {}
    for layout in LAYOUTS:
        before = llm.ledger.snapshot()
        start = _time.perf_counter()
        verdicts = evaluate_with_hypotheses(samples, entries, aspect=aspect, task=task, llm=llm,
                                            settings=replace(settings or ScoringSettings(), layout=layout,
                                                             joint=False))
        seconds = _time.perf_counter() - start
        after = llm.ledger.snapshot()
        out[layout] = {"seconds": round(seconds, 3),
                       **{k: getattr(after, k) - getattr(before, k) for k in ("calls", "cache_hits", "prompt_tokens")},
                       "missing": sum(v.missing for v in verdicts),
                       **metrics.correlations(human, [v.score for v in verdicts])}
    return out

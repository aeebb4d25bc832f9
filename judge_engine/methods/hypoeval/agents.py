"""M_G and M_R: the generation and refinement calls, their prompts, how replies are read and checked."""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

from ...prompting import fence, load_template, render_sample, shorten
from ...records import Sample
from ...rubric_model_check import check_with_model, runs_on
from ...rubric_checks import RubricCheck, check_entry, check_statement, statement_name
from .context import Context
from .replies import MIN_HYPOTHESIS_WORDS, hypotheses_schema, read_hypotheses, read_statements, why_unread

GENERATE_TEMPLATE = load_template("hypoeval_generate")
REFINE_TEMPLATE = load_template("hypoeval_refine")
OBSERVATION_TEMPLATE = load_template("hypoeval_observation")
LITERATURE_NOTE_TEMPLATE = load_template("hypoeval_literature_note")
EVIDENCE_DATA_TEMPLATE = load_template("hypoeval_evidence_data")
EVIDENCE_LITERATURE_TEMPLATE = load_template("hypoeval_evidence_literature")

BASIS_DATA = "the scored examples above"
BASIS_LITERATURE = "the literature notes above"
BASIS_BOTH = "the literature notes and the scored examples above"

SAMPLED_DRAWS = 2
"""Sampled draws of a generation or refinement prompt while fewer usable hypotheses than asked are left: a
small model may give one usable hypothesis per reply, and the bank needs several to select from."""
GENERATION_CALLS = 2 + SAMPLED_DRAWS
"""Backend calls one generation or refinement may take: the first reply, a follow-up turn when it was not
read, and the sampled draws while fewer usable hypotheses than asked were left."""


def observations_block(samples: Sequence[Sample], ctx: Context) -> str:
    """The scored examples shown to the generator and refiner (texts fenced, long texts cut)."""
    limit = ctx.settings.observation_chars
    blocks = []
    for i, s in enumerate(samples, 1):
        cut = Sample(id=s.id, input=shorten(s.input, limit), output=shorten(s.output, limit), group_id=s.group_id,
                     context=shorten(s.context, limit) if s.context else None)
        label = f"{s.human.get(ctx.aspect.name, math.nan):.2f}".rstrip("0").rstrip(".")  # ours: at most 2 decimals
        blocks.append(OBSERVATION_TEMPLATE.render(number=i, sample_block=render_sample(cut, ctx.task), label=label,
                                                  output_label_lower=ctx.task.output_label.lower(),
                                                  aspect_name=ctx.aspect.name))
    return EVIDENCE_DATA_TEMPLATE.render(aspect_name=ctx.aspect.name, observations="\n\n".join(blocks))


def literature_block(literature: Sequence[dict[str, str]]) -> str:
    """L: the literature notes concatenated as ``Title / Key findings`` blocks (paper code format)."""
    notes = "\n\n".join(LITERATURE_NOTE_TEMPLATE.render(title=n.get("title", ""), text=fence("note", n.get("text", "")))
                        for n in literature)
    return EVIDENCE_LITERATURE_TEMPLATE.render(notes=notes)


def numbered(hypotheses: Sequence[str]) -> str:
    return "\n".join(f"hypothesis{i}. {h}" for i, h in enumerate(hypotheses, 1))


def generate_hypotheses(ctx: Context, n: int, *, samples: Sequence[Sample] = (),
                        literature: Sequence[dict[str, str]] = (), stage: str = "generation") -> list[str]:
    """M_G: propose ``n`` hypotheses from scored samples and/or literature; one call, retried once if none parse."""
    evidence = [literature_block(literature)] if literature else []
    evidence += [observations_block(samples, ctx)] if samples else []
    basis = BASIS_BOTH if samples and literature else BASIS_DATA if samples else BASIS_LITERATURE
    prompt = GENERATE_TEMPLATE.render(**ctx.generation_fields(n), num_hypotheses=n, basis=basis,
                                      evidence="\n\n".join(evidence))
    return _ask_for_hypotheses(ctx, prompt, n, stage, shown=shown_texts(samples, literature))


def refine_hypotheses(ctx: Context, hypotheses: Sequence[str], *, samples: Sequence[Sample] = (),
                      literature: Sequence[dict[str, str]] = (), stage: str = "refinement") -> list[str]:
    """M_R: refine the hypotheses with data (W) or with literature (L).

    Returns as many hypotheses as the reply held (ours: the paper does not say).
    """
    if samples:
        basis, evidence = "the scored texts above", observations_block(samples, ctx)
    else:
        basis, evidence = "the literature findings above", literature_block(literature)
    prompt = REFINE_TEMPLATE.render(**ctx.generation_fields(len(hypotheses)), num_hypotheses=len(hypotheses),
                                    basis=basis, evidence=evidence, hypotheses=numbered(hypotheses))
    return _ask_for_hypotheses(ctx, prompt, len(hypotheses), stage, shown=shown_texts(samples, literature))


def shown_texts(samples: Sequence[Sample], literature: Sequence[dict[str, str]]) -> list[str]:
    """The texts a generation prompt shows the model: a hypothesis copied from one of them is no rubric."""
    texts = [t for s in samples for t in (s.input, s.output, s.context or "") if t]
    return texts + [str(v) for paper in literature for v in paper.values() if v]


RETRY_GENERATION = {
    "paper": "Please answer again with the JSON object asked for: a list of {n} hypotheses, each saying which texts "
             "earn a higher score and which a lower one.",
    "sentence": 'Please answer again with the JSON object asked for: a list of {n} sentences, each starting with '
                '"{opener}" and saying one thing that earns a higher score.'}


def _ask_for_hypotheses(ctx: Context, prompt: str, n: int, stage: str, *, shown: Sequence[str] = ()) -> list[str]:
    """One generation call with the statements schema, read as JSON (free-text fallbacks), checked, pooled.

    The reply is read as statements (:func:`read_statements`), else by the
    older parsers (:func:`read_hypotheses`); a reply that gives neither is
    retried once with a follow-up turn. When the first reply leaves fewer
    usable hypotheses than ``n``, sampled draws of the same prompt at
    :data:`SECOND_DRAW_TEMPERATURE` (``sample_index`` 1, 2, ..., at most
    :data:`SAMPLED_DRAWS`, so each is cached and resumed like any call) are
    read and checked the same way while places are left, and their usable
    hypotheses fill them (ours; not in the paper). Sentences an earlier
    reply already gave are not checked again (the ``second_draw`` event
    counts them as ``repeats``).

    Statements go through :func:`judge_engine.rubric_checks.check_statement`
    (:func:`check_statements`), whole hypotheses of the older shapes
    through :func:`judge_engine.rubric_checks.check_entry`: a refused one
    is kept in ``ctx.rejected`` with its rule and reason (shown on the page,
    restorable by a person), not used.
    """
    opener = ctx.opener
    schema = hypotheses_schema(opener, n)
    [reply] = ctx.ask([prompt], stage, schema=schema)
    found, source, shape, dropped = _read_reply(reply, n, opener)
    ctx.count_reply(stage, source)
    last = reply
    if not found:  # ours, as for every unreadable reply: retry once, a follow-up turn asking for the list only
        follow = ctx.llm.complete([{"role": "user", "content": prompt}, {"role": "assistant", "content": reply},
                                   {"role": "user", "content": RETRY_GENERATION[ctx.form].format(n=n, opener=opener)}],
                                  ctx.generation_params(schema))
        ctx.calls += 1
        last = follow.text
        found, source, shape, dropped = _read_reply(last, n, opener)
        ctx.count_reply(f"{stage} (follow-up)", source)
    accepted: list[str] = []
    # what reading left out is kept as the checks' refusals are: nothing a reply gave goes unrecorded
    refused = [{**d, "stage": stage} for d in dropped]
    refused += _check_reply(ctx, found, shape, shown=shown, accepted=accepted, stage=stage)
    read_any = bool(found)
    said = list(found)
    for draw in range(1, SAMPLED_DRAWS + 1):
        if len(accepted) >= n:
            break
        label = f"{stage} (second draw)" if draw == 1 else f"{stage} (draw {draw + 1})"
        [second] = ctx.ask([prompt], label, schema=schema, draw=draw)
        more, source, shape, dropped = _read_reply(second, n, opener)
        ctx.count_reply(label, source)
        refused += [{**d, "stage": label} for d in dropped]
        before = len(accepted)
        # a sentence an earlier reply already gave was judged there: the same hypothesis, not a new one
        seen = {" ".join(t.split()) for t in [*said, *accepted]}
        new = [t for t in more if " ".join(t.split()) not in seen]
        said += more
        refused += _check_reply(ctx, new, shape, shown=shown, accepted=accepted, stage=label, room=n)
        read_any = read_any or bool(more)
        ctx.emit("second_draw", {"stage": stage, "draw": draw, "read": len(more), "repeats": len(more) - len(new),
                                 "added": len(accepted) - before, "usable": len(accepted), "wanted": n})
    if refused:
        ctx.rejected.extend(refused)
        ctx.emit("hypotheses_rejected", {"stage": stage, "rejected": refused})
    if not read_any:
        ctx.failures += 1
        # the more telling diagnosis of the two replies (a follow-up is often no list at all)
        reasons = [why_unread(reply), why_unread(last)]
        ctx.unread_reasons.append(next((r for r in reasons if not r.startswith("no list")), reasons[0]))
        ctx.emit("generation_failed", {"stage": stage, "raw": reply[:2000], "why": ctx.unread_reasons[-1]})
    return accepted


class ReplyReading(NamedTuple):
    """What one generation or refinement reply gave, how it was read, and in which shape."""

    items: list[str]
    source: str
    """One of :data:`~judge_engine.methods.hypoeval.replies.READ_SOURCES`."""
    shape: str
    """``statement`` (sentences that start with the opener: the statement checks) or ``hypothesis`` (whole
    hypotheses of the paper's form or the older shapes: the entry checks)."""
    dropped: tuple[dict[str, Any], ...] = ()
    """Items of the reply left out while reading it (:data:`~judge_engine.methods.hypoeval.replies.DROP_RULES`)."""


class CheckedStatements(NamedTuple):
    """The statements the rubric checks accepted, and the refusals (each with its rule and reason)."""

    kept: list[str]
    refused: list[dict[str, Any]]


def _read_reply(text: str, n: int, opener: str) -> ReplyReading:
    """Statements of the reply (shape ``statement``), else whole hypotheses of the older shapes (``hypothesis``),
    with how they were read (one of :data:`READ_SOURCES`)."""
    if opener:
        statements, source, dropped = read_statements(text, n, opener)
        if statements:
            return ReplyReading(statements, source, "statement", dropped)
    found, source, dropped = read_hypotheses(text, n)
    return ReplyReading(found, source, "hypothesis", dropped)


def _check_reply(ctx: Context, found: Sequence[str], shape: str, *, shown: Sequence[str], accepted: list[str],
                 stage: str, room: int | None = None) -> list[dict[str, Any]]:
    """Check what one reply gave; usable ones are appended to ``accepted`` (up to ``room`` in all), refusals
    returned. A hypothesis once ``room`` is full is not checked: it is returned with the refusals as
    ``not_needed`` (issue 50: nothing a reply gave is dropped unrecorded)."""
    if shape == "statement":
        return check_statements(found, ctx, shown=shown, stage=stage, accepted=accepted, room=room).refused
    definition = ctx.aspect.definition or ""  # the paper's form, and the older shapes a sentence-form reply may
    topics = (ctx.task.output_label, ctx.aspect.name, definition)  # fall back to
    checks = []
    used = 0
    for text in found:
        if room is not None and len(accepted) >= room:
            break
        used += 1
        # the aspect's definition said again is no hypothesis of its own: a near-duplicate of it
        check = check_entry(text, kind="hypothesis", shown=shown, accepted=[definition, *accepted] if definition
                            else accepted, topics=topics, min_words=MIN_HYPOTHESIS_WORDS, output=ctx.task.output_label)
        check = _model_reads(ctx, check)
        checks.append(check)
        if check.ok:
            accepted.append(text)
    _note_flags(ctx, [c for c in checks if c.ok], stage)
    return [{**c.to_dict(), "stage": stage} for c in checks if not c.ok] + not_needed(found[used:], room, stage)


NOT_NEEDED = "not_needed"
"""The rule of a hypothesis left unchecked because its request already had the hypotheses it asked for."""


def not_needed(texts: Sequence[str], room: int | None, stage: str) -> list[dict[str, Any]]:
    """Hypotheses read after ``room`` were accepted, in the ``rejected`` shape: recorded, not checked, not used."""
    return [{"text": t, "ok": False, "rule": NOT_NEEDED, "reason": f"read after the {room} hypotheses this request "
             "asked for were accepted; not checked", "stage": stage} for t in texts]


def _note_flags(ctx: Context, checks: Sequence[RubricCheck], stage: str, opener: str = "") -> None:
    """Keep the flags of used hypotheses for the run summary and the page, and log them."""
    for check in checks:
        if check.flags:
            entry = {**check.to_dict(), "name": statement_name(check.text, opener), "stage": stage}
            ctx.flagged.append(entry)
            ctx.emit("rubric_flagged", entry)


def _model_reads(ctx: Context, check: Any) -> Any:
    """The judge's own model reads an accepted hypothesis (issue 65; not on the embedded model): one structured
    request through the run's LLM, counted in the fit's calls, its verdict recorded as a ``model_check`` event and
    combined with the rules' (:func:`judge_engine.rubric_model_check.check_with_model`)."""
    before = check
    check = check_with_model(ctx.llm, check, kind="hypothesis", aspect_name=ctx.aspect.name,
                             an_output=f"a {(ctx.task.output_label or 'response').lower()}", emit=ctx.emit)
    if before.ok and runs_on(ctx.llm):
        ctx.calls += 1
    return check


def check_statements(statements: Sequence[str], ctx: Context, *, shown: Sequence[str] = (), stage: str = "",
                     accepted: list[str] | None = None, room: int | None = None
                     ) -> CheckedStatements:
    """The statements the rubric checks accept (also appended to ``accepted``), and the refusals.

    Each goes through :func:`judge_engine.rubric_checks.check_statement`
    with the opener, the texts the prompt showed (a copy of one is no
    facet), the aspect's definition and the statements accepted before it
    (a near repeat of either is a ``near_duplicate``), the
    aspect as its parent ("A good summary has high coherence" under
    coherence adds nothing) and the judged output's label and the aspect as
    topics (a body that names a word of them describes a facet of the
    aspect even without a word of the quality vocabulary). A refusal keeps
    the statement (what a person would restore), its short name, the rule
    and the reason; the flags of a used one go to ``ctx.flagged``. Once
    ``room`` statements are accepted the rest are left unchecked and
    returned with the refusals as ``not_needed``.
    """
    opener = ctx.opener
    definition = ctx.aspect.definition or ""
    parent = (ctx.aspect.name, definition)
    topics = (ctx.task.output_label, ctx.aspect.name, definition)
    given = [definition] if definition else []
    accepted = [] if accepted is None else accepted
    kept: list[str] = []
    refused: list[dict[str, Any]] = []
    for i, statement in enumerate(statements):
        if room is not None and len(accepted) >= room:
            refused += [{**r, "name": statement_name(r["text"], opener)} for r in not_needed(statements[i:], room,
                                                                                              stage)]
            break
        # the aspect's definition is a text the hypothesis may not nearly repeat, not a judged text it copies
        check = check_statement(statement, opener=opener, shown=shown, accepted=[*given, *accepted],
                                parent=parent, topics=topics, output=ctx.task.output_label)
        check = _model_reads(ctx, check)
        if check.ok:
            accepted.append(statement)
            kept.append(statement)
            _note_flags(ctx, [check], stage, opener)
        else:
            refused.append({**check.to_dict(), "name": statement_name(statement, opener), "stage": stage})
    return CheckedStatements(kept, refused)

"""HypoEval: hypothesis-guided evaluation from 30 human scores and literature notes.

A bank of *hypotheses* (each says which texts earn a higher or a lower
score, in the paper's form free text that may name score bands, in the
sentence form for small models one sentence that starts "A good summary
..."; a person may also curate rubrics that describe every score) is grown from a few human-scored samples
with a UCB-style reward, refined on the samples it gets wrong and on
literature notes, de-duplicated, and up to ``n_selected`` hypotheses with
the best coverage-aware Pearson correlation on the training samples become
the judge: a new text gets one chain-of-thought score per selected
hypothesis and its final score is their mean.

Every generation step asks for structure (:mod:`judge_engine.structured`):
hypotheses as a JSON list (``HYPOTHESES``, :func:`hypotheses_schema`: free
hypotheses, or sentences that start with the opener in the sentence form
chosen by ``criteria_form``; a second sampled draw fills the
places the rubric checks left empty), the repetition check as
``{"answer": "yes" | "no"}`` (``YES_NO``), each score as
``{"explanation", "score"}`` or, score first for probability-weighted
scores, ``{"score"}`` (``SCORE``). The free-text parsers are the fallback;
how every reply was read is counted (``Judge.state["replies"]``,
``["score_sources"]``, ``reply_read``/``scores_read`` events).

When no judge can be built the fit raises ``ValueError`` with the reason
(the run fails with that message): an empty bank ("HypoEval generated no
usable hypothesis: ..."), or no hypothesis with a positive correlation at
sufficient coverage (unless a person accepted the hypotheses). Fit-time
warnings are in ``Judge.state["warnings"]`` and ``warning`` events.

Stages (paper section -> function):

- §3.1 / Appendix B.1 reward ``a - b (s - ŝ)^2`` plus exploration -> :func:`reward`
- §3.1 initialisation H_init = M_G(S_init, L) -> :func:`initialize_bank`
  (generation: :func:`generate_hypotheses`)
- §3.1 update stage with the wrong-sample bank W -> :func:`update_bank`,
  generation and alternating refinement H_W -> :func:`generate_and_refine`
  (refinement: :func:`refine_hypotheses`)
- §3.1 literature-only hypotheses H_L = M_G(L) -> :func:`literature_hypotheses`
- §3.1 repetition check and union -> :func:`remove_repetitions`, :func:`union_banks`
- §3.2 selection of H_ev by Pearson on S_tr (coverage-aware, positive only) -> :func:`select_hypotheses`
- §3.3 hypothesis-guided evaluation, mean over H_ev -> :func:`evaluate_with_hypotheses`
  (per-hypothesis scoring goes through :mod:`judge_engine.criteria_scoring`)

Where the paper is explicit its reading is the default, with the authors'
code behaviour as an option: the bank after a refresh is the best of
H_top ∪ H_W (``replace_pool``), the union takes a random half from each bank
(``union_mode``; without literature the data bank's best half by reward),
refinement runs all N_refine rounds (``refine_early_stop``). The reward's b
follows the judge scale (:func:`default_reward_b`; the paper's 1/16 on 1-5).
Where the paper is silent the choice is ours and each place says so:
w_hyp schedule, reward initialisation of new hypotheses on W, which duplicate
is kept, ties broken by reward, the scoring prompt of §3.3 also used for the
stage-1 rewards (so its calls are reused from the cache at selection).

Missing scores (a reply without a score after one follow-up turn) are never
averaged in: rewards and final means use the parsed scores only, selection
shrinks a hypothesis' correlation by the share of training items it scored
(:func:`judge_engine.metrics.selection_fitness`), and every failure is
counted and reported as an event.

References
----------
HypoEval: Hypothesis-Guided Evaluation for Natural Language Generation
(anonymous ACL submission). HypoGeniC (Zhou et al., 2024) and
HypoRefine (Liu et al., 2025) for the generation algorithm it extends.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from dataclasses import dataclass, replace
from math import comb
from typing import Any, Callable, ClassVar, Sequence

from .. import metrics
from .. import structured as st
from ..criteria_scoring import LAYOUT_LABELS, LAYOUTS, CriterionText, ScoringSettings, estimate_criteria_calls, score_criteria
from ..curation import text_problem
from ..llm import LLM, GenerationParams, Request
from ..parsing import parse_json_object
from ..prompting import TaskInfo, fence, judge_scale, load_template, render_sample, to_aspect_range
from ..records import Aspect, RunEvent, Sample, Verdict
from ..rubric_checks import RubricCheck, check_entry, check_statement, is_statement, statement_name
from .base import (CRITERIA_FORM_LABELS, CRITERIA_FORMS, EventSink, FitContext, Interval, Judge, Method,
                   OptionalInterval, Options, Progress, judge_warning, register, resolve_criteria_form,
                   small_model_hint)

GENERATE_TEMPLATE = load_template("hypoeval_generate")
REFINE_TEMPLATE = load_template("hypoeval_refine")
REPETITION_TEMPLATE = load_template("hypoeval_repetition")
OBSERVATION_TEMPLATE = load_template("hypoeval_observation")
LITERATURE_NOTE_TEMPLATE = load_template("hypoeval_literature_note")
EVIDENCE_DATA_TEMPLATE = load_template("hypoeval_evidence_data")
EVIDENCE_LITERATURE_TEMPLATE = load_template("hypoeval_evidence_literature")
SCORE_INSTRUCTIONS_TEMPLATE = load_template("hypoeval_score")
SCORE_STEPS_TEMPLATE = load_template("hypoeval_score_steps")

BASIS_DATA = "the scored examples above"
BASIS_LITERATURE = "the literature notes above"
BASIS_BOTH = "the literature notes and the scored examples above"

HYPOTHESIS_PATTERN = re.compile(r"(?is)hypothesis\s*(\d+)\s*[.:)]\s*(.+?)(?=\s*hypothesis\s*\d+\s*[.:)]|\Z)")
"""Our pattern for ``hypothesis1. ...`` lists (the regex of the authors' code breaks on "score of 5. ")."""
NUMBERED_PATTERN = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*•])\s+(.+?)(?=^\s*(?:\d+[.)]|[-*•])\s+|\Z)", re.S)
"""Fallback for small models that number their list "1." instead of "hypothesis1."."""
FINAL_ANSWER_PATTERN = re.compile(r"(?i)final\s+answer\s*[:：]?\s*\**\s*\[?\s*(yes|no)\b")
MIN_HYPOTHESIS_WORDS = 6
"""A parsed item shorter than this is not a rubric (e.g. a bare score "[[4]]")."""
HYPOTHESIS_MIN_CHARS = 20
HYPOTHESIS_MAX_CHARS = 1000
"""Length bounds of one hypothesis written in the paper's form (``{"hypotheses": [str, ...]}``): long enough
for a hypothesis that walks through its score bands, as the paper's own do."""
FORM_INSTRUCTIONS = {
    "paper": ("Write them as {n} different hypotheses of one to three sentences each, saying which "
              "{output}s earn higher {aspect} scores and which earn lower ones; you may name score ranges."),
    "sentence": ("Write them as {n} different sentences, each saying one concrete thing that a {output} with high "
                 "{aspect} does and a {output} with low {aspect} does not. Start each sentence with \"{opener}\"."),
}
"""What a generation or refinement prompt asks each hypothesis to look like, by form
(:data:`judge_engine.methods.base.CRITERIA_FORMS`)."""
HYPOTHESES_KEY = "hypotheses"
"""The list key of the generation schema: one statement per hypothesis (see :func:`hypotheses_schema`)."""
SECOND_DRAW_TEMPERATURE = 0.7
"""Temperature of the second, sampled draw of a generation or refinement call whose first reply left fewer
usable hypotheses than asked (see :func:`_ask_for_hypotheses`): greedy decoding of the same prompt would give the
same sentences again, a sampled draw gives new ones."""
SAMPLED_DRAWS = 2
"""Sampled draws of a generation or refinement prompt while fewer usable hypotheses than asked are left: a
small model may give one usable hypothesis per reply, and the bank needs several to select from."""
GENERATION_CALLS = 2 + SAMPLED_DRAWS
"""Backend calls one generation or refinement may take: the first reply, a follow-up turn when it was not
read, and the sampled draws while fewer usable hypotheses than asked were left."""
READ_SOURCES = ("json", "text", "unread")
"""How a generation or repetition-check reply was read: JSON satisfying the schema, the free-text fallback, or
not at all."""

ORIGINS = ("initial", "wrong_examples", "literature", "curated")
SOURCE_ORDER = ("logprobs_first_position", "text", "logprobs", "json")
"""Where a score was read, least direct first: a verdict's ``source`` is the least direct of its scores'."""


# --------------------------------------------------------------------------- small values


def hypothesis_key(text: str) -> str:
    """Stable key of a hypothesis: a hash of its text, so an edited text is a new hypothesis."""
    return "h" + hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()[:10]


def as_criterion(text: str) -> CriterionText:
    """The hypothesis as the shared per-criterion scorer sees it (name fixed: the prompt depends on the text only)."""
    return CriterionText(key=hypothesis_key(text), name="Hypothesis", definition=text)


def new_entry(text: str, origin: str, **extra: Any) -> dict[str, Any]:
    """A bank entry: JSON-native, so the whole bank can live in ``Judge.state``."""
    return {"key": hypothesis_key(text), "text": text, "origin": origin, "scores": {}, "reward": None,
            "acc": None, "n_evaluated": 0, **extra}


def parse_hypotheses(text: str, limit: int) -> list[str]:
    """Hypotheses from a generation reply: ``hypothesisN.`` items, else a numbered list; at most ``limit``."""
    items = [m.group(2) for m in HYPOTHESIS_PATTERN.finditer(text or "")]
    if not items:
        items = [m.group(1) for m in NUMBERED_PATTERN.finditer(text or "")]
    out: list[str] = []
    for item in items:
        clean = " ".join(item.split()).strip().strip("[]").strip().rstrip(",").strip()
        if len(clean.split()) >= MIN_HYPOTHESIS_WORDS and clean not in out:
            out.append(clean)
    return out[:limit]


def hypotheses_schema(opener: str, n: int, *, min_items: int | None = None) -> dict[str, Any]:
    """The schema of a generation or refinement reply: exactly ``n`` hypotheses (the paper asks for n).

    The paper's form (``opener`` empty): ``{"hypotheses": [str, ...]}``,
    each a hypothesis of its own wording, score bands allowed. The sentence
    form: ``{"hypotheses": ["A good summary ...", ...]}``
    (:func:`judge_engine.structured.statement_list_schema`), each one
    lower-case sentence that starts with ``opener``: the shape a small model
    under a grammar fills with usable facets, where a free list lets it
    drift into the judged texts' content. ``minItems`` = ``n`` makes a
    grammar write ``n`` items; reading accepts fewer (``min_items``).
    """
    least = n if min_items is None else min_items
    if not opener:
        return st.string_list_schema(st.HYPOTHESES, HYPOTHESES_KEY, min_items=least, max_items=n,
                                     min_length=HYPOTHESIS_MIN_CHARS, max_length=HYPOTHESIS_MAX_CHARS)
    return st.statement_list_schema(st.HYPOTHESES, HYPOTHESES_KEY, opener=opener, min_items=least, max_items=n)


def as_statement(text: str, opener: str) -> str | None:
    """``text`` as a statement that starts with ``opener`` (its case as given, one full stop at the end), or
    None when it does not start with the opener."""
    clean = " ".join(str(text).split()).strip().strip("\"'[]").strip().rstrip(",;:").strip()
    if not is_statement(clean, opener):
        return None
    body = clean[len(opener):].strip().rstrip(".!?").strip()
    return f"{opener} {body}." if body else None


def read_statements(text: str, limit: int, opener: str) -> tuple[list[str], str]:
    """Statements of a reply and how they were read: ``json``, ``text`` or ``unread``.

    ``json``: the reply satisfies :func:`hypotheses_schema` (at least one
    item). ``text``: a ``hypotheses`` list that breaks the schema (a
    server without constrained decoding: capitals, a length off), or, with
    no such list, the sentences of free text that start with the opener.
    Items that do not start with the opener are not statements (the
    caller falls back to :func:`read_hypotheses`). Exact repeats are kept:
    the rubric checks refuse them, with reason.
    """
    reading = st.read_json(text, hypotheses_schema(opener, limit, min_items=1))
    if reading.ok:
        return [" ".join(s.split()) for s in reading.value[HYPOTHESES_KEY]][:limit], "json"
    value = parse_json_object(text or "")
    items = value.get(HYPOTHESES_KEY) if isinstance(value, dict) else None
    candidates = ([i for i in items if isinstance(i, str)] if isinstance(items, list)
                  else st.find_statements(text, opener))
    found = [s for s in (as_statement(c, opener) for c in candidates) if s][:limit]
    return found, "text" if found else "unread"


def _clean_items(items: Sequence[Any], limit: int) -> list[str]:
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        clean = " ".join(item.split()).strip().strip("[]").strip().rstrip(",").strip()
        # "..." is the prompt's placeholder: an item holding it copied the example instead of writing one
        if len(clean.split()) >= MIN_HYPOTHESIS_WORDS and "..." not in clean and clean not in out:
            out.append(clean)
    return out[:limit]


def why_unread(text: str) -> str:
    """In words, why no hypothesis could be read from a generation reply (for the empty-bank message)."""
    value = parse_json_object(text or "")
    items = value.get("hypotheses") if isinstance(value, dict) else None
    if not isinstance(items, list) or not items:
        return "no list of hypotheses in the reply"
    texts = [" ".join(str(i).split()) for i in items]
    if any("..." in t for t in texts):
        return "the model repeated the prompt's example with its '...' placeholder instead of writing hypotheses"
    if all(len(t.split()) < MIN_HYPOTHESIS_WORDS for t in texts):
        return f"every item had fewer than {MIN_HYPOTHESIS_WORDS} words"
    return "the items repeated each other"


def read_hypotheses(text: str, limit: int) -> tuple[list[str], str]:
    """Hypotheses from a reply and how they were read (one of :data:`READ_SOURCES`).

    The main path is JSON satisfying :func:`hypotheses_schema` (``json``).
    The fallback (``text``) takes a JSON ``hypotheses`` list that breaks the
    schema (a count or length off: a server without constrained decoding),
    else the ``hypothesisN.`` / numbered list of :func:`parse_hypotheses`.
    Items shorter than :data:`MIN_HYPOTHESIS_WORDS` words are dropped either way.
    """
    # read with at least one item required: fewer than asked is still a structured reply (the count is the
    # generation schema's job; a reply holding fewer items is not turned into a failure here)
    reading = st.read_json(text, st.string_list_schema(st.HYPOTHESES, "hypotheses", min_items=1, max_items=limit,
                                                       min_length=HYPOTHESIS_MIN_CHARS,
                                                       max_length=HYPOTHESIS_MAX_CHARS))
    if reading.ok:
        found = _clean_items(reading.value["hypotheses"], limit)
        if found:
            return found, "json"
    value = parse_json_object(text or "")
    if isinstance(value, dict) and isinstance(value.get("hypotheses"), list):
        found = _clean_items(value["hypotheses"], limit)
        if found:
            return found, "text"
    found = parse_hypotheses(text, limit)
    return found, "text" if found else "unread"


def read_repetition(text: str) -> tuple[bool | None, str]:
    """The repetition check's answer (True = repetitive, None = no answer) and how it was read."""
    reading = st.read_json(text, st.yes_no_schema())
    if reading.ok:
        return reading.value["answer"] == "yes", "json"
    answer = parse_repetition(text)
    return answer, "unread" if answer is None else "text"


def parse_repetition(text: str) -> bool | None:
    """True when the reply's final answer is "yes" (repetitive); None when it does not say."""
    answers = FINAL_ANSWER_PATTERN.findall(text or "")
    if not answers:
        return None
    return answers[-1].lower() == "yes"


# --------------------------------------------------------------------------- context of one fit


@dataclass
class Context:
    """What every stage needs: the LLM, the aspect and task, the parameters, the event sink and a call counter."""

    llm: LLM
    aspect: Aspect
    task: TaskInfo
    params: dict[str, Any]
    log: EventSink
    progress: Callable[[str], None]
    form: str = "sentence"
    """How hypotheses are asked for: ``paper`` or ``sentence`` (resolved, see
    :func:`judge_engine.methods.base.resolve_criteria_form`)."""
    """Called after each batch of calls with the stage name (the counter below is the progress)."""
    calls: int = 0
    total: int = 1
    failures: int = 0
    replies: dict[str, int] | None = None
    """Generation and repetition-check replies by how they were read (:data:`READ_SOURCES`)."""
    score_sources: dict[str, int] | None = None
    """Per-hypothesis training scores by where they were read (``CriterionScore.source``)."""
    warnings: list[dict[str, Any]] | None = None
    """Fit-time warnings (:func:`~judge_engine.methods.base.judge_warning`) for ``Judge.state``."""
    rejected: list[dict[str, Any]] | None = None
    """Generated hypotheses the rubric checks refused, with the rule and reason (:mod:`judge_engine.rubric_checks`)."""
    flagged: list[dict[str, Any]] | None = None
    """Generated hypotheses used with rubric-check flags (shown beside them, counted in the run summary)."""
    unread_reasons: list[str] | None = None
    """Why each generation reply that gave no hypothesis gave none (:func:`why_unread`)."""
    scoring: ScoringSettings | None = None
    """How training samples are scored under each hypothesis: the judge's settings (:func:`scoring_settings`),
    one call per hypothesis (the rewards are per hypothesis)."""

    def __post_init__(self) -> None:
        if self.scoring is None:
            self.scoring = replace(scoring_settings(self.params), joint=False)
        self.replies = {k: 0 for k in READ_SOURCES} if self.replies is None else self.replies
        self.score_sources = {} if self.score_sources is None else self.score_sources
        self.warnings = [] if self.warnings is None else self.warnings
        self.rejected = [] if self.rejected is None else self.rejected
        self.flagged = [] if self.flagged is None else self.flagged
        self.unread_reasons = [] if self.unread_reasons is None else self.unread_reasons

    def warn(self, code: str, message: str, count: int | None = None) -> None:
        """Record a fit-time warning in the judge's state and as an event (the run keeps it even if fit fails)."""
        warning = judge_warning(code, message, count)
        self.warnings.append(warning)
        self.emit("warning", warning)

    def count_reply(self, stage: str, source: str) -> None:
        self.replies[source] += 1
        self.emit("reply_read", {"stage": stage, "source": source})

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.log(kind, payload)

    @property
    def scale(self) -> tuple[int, int]:
        return judge_scale(self.aspect)

    def human(self, sample: Sample) -> float:
        """The human score on the judge scale (the reward and theta are in judge-scale units)."""
        s = sample.human.get(self.aspect.name, math.nan)
        lo, hi = self.scale
        if (lo, hi) == (self.aspect.low, self.aspect.high) or self.aspect.high == self.aspect.low:
            return float(s)
        return lo + (float(s) - self.aspect.low) * (hi - lo) / (self.aspect.high - self.aspect.low)

    @property
    def opener(self) -> str:
        """How each generated hypothesis starts in the sentence form (:attr:`TaskInfo.statement_opener`); ""
        in the paper's form."""
        return self.task.statement_opener if self.form == "sentence" else ""

    def generation_fields(self, n: int) -> dict[str, Any]:
        """:meth:`common_fields` without the scale, with the form's instruction: the scoring prompt gives the
        scale; in a generation prompt a small model takes the numbers for the subject."""
        fields = self.common_fields()
        fields.pop("low"), fields.pop("high")
        instruction = FORM_INSTRUCTIONS[self.form].format(n=n, output=fields["output_label_lower"],
                                                          aspect=fields["aspect_name"], opener=self.opener)
        return {**fields, "form_instruction": instruction}

    def common_fields(self) -> dict[str, Any]:
        lo, hi = self.scale
        return {"aspect_name": self.aspect.name, "aspect_definition": self.aspect.definition or self.aspect.name,
                "task": self.task.task, "output_label_lower": self.task.output_label.lower(), "low": lo, "high": hi}

    @property
    def reward_b(self) -> float:
        """b of the reward: as given, or 1/(high - low)^2 on the judge scale (see :func:`exploitation`)."""
        if self.params["reward_b"] is not None:
            return float(self.params["reward_b"])
        return default_reward_b(self.scale)

    def generation_params(self, schema: dict[str, Any] | None = None, draw: int = 0) -> GenerationParams:
        """Generation and refinement: the reply limit, the schema, and the rubric presence penalty
        (:data:`judge_engine.structured.RUBRIC_PRESENCE_PENALTY`: without it a small model repeats its first
        item); greedy for the first draw, :data:`SECOND_DRAW_TEMPERATURE` with ``sample_index=draw`` after."""
        params = GenerationParams(max_tokens=self.params["generation_max_tokens"], json_schema=st.as_param(schema),
                                  presence_penalty=st.RUBRIC_PRESENCE_PENALTY)
        return params.with_(temperature=SECOND_DRAW_TEMPERATURE, sample_index=draw) if draw else params

    def ask(self, prompts: Sequence[str], stage: str, max_tokens: int | None = None,
            schema: dict[str, Any] | None = None, draw: int = 0) -> list[str]:
        params = (self.generation_params(schema, draw) if max_tokens is None
                  else GenerationParams(max_tokens=max_tokens, json_schema=st.as_param(schema)))
        replies = self.llm.complete_many([Request(({"role": "user", "content": p},), params) for p in prompts])
        self.calls += len(prompts)
        self.progress(stage)
        return [r.text for r in replies]


# --------------------------------------------------------------------------- prompt pieces


def observations_block(samples: Sequence[Sample], ctx: Context) -> str:
    """The scored examples shown to the generator and refiner (texts fenced, long texts cut)."""
    limit = ctx.params["observation_chars"]
    blocks = []
    for i, s in enumerate(samples, 1):
        cut = Sample(id=s.id, input=_cut(s.input, limit), output=_cut(s.output, limit), group_id=s.group_id,
                     context=_cut(s.context, limit) if s.context else None)
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


def _cut(text: str | None, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit].rstrip() + " [...]"


def numbered(hypotheses: Sequence[str]) -> str:
    return "\n".join(f"hypothesis{i}. {h}" for i, h in enumerate(hypotheses, 1))


# --------------------------------------------------------------------------- generation and refinement (M_G, M_R)


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
    found, source, shape = _read_reply(reply, n, opener)
    ctx.count_reply(stage, source)
    last = reply
    if not found:  # ours, as for every unreadable reply: retry once, a follow-up turn asking for the list only
        follow = ctx.llm.complete([{"role": "user", "content": prompt}, {"role": "assistant", "content": reply},
                                   {"role": "user", "content": RETRY_GENERATION[ctx.form].format(n=n, opener=opener)}],
                                  ctx.generation_params(schema))
        ctx.calls += 1
        last = follow.text
        found, source, shape = _read_reply(last, n, opener)
        ctx.count_reply(f"{stage} (follow-up)", source)
    accepted: list[str] = []
    refused = _check_reply(ctx, found, shape, shown=shown, accepted=accepted, stage=stage)
    read_any = bool(found)
    said = list(found)
    for draw in range(1, SAMPLED_DRAWS + 1):
        if len(accepted) >= n:
            break
        label = f"{stage} (second draw)" if draw == 1 else f"{stage} (draw {draw + 1})"
        [second] = ctx.ask([prompt], label, schema=schema, draw=draw)
        more, source, shape = _read_reply(second, n, opener)
        ctx.count_reply(label, source)
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


def _read_reply(text: str, n: int, opener: str) -> tuple[list[str], str, str]:
    """Statements of the reply (shape ``statement``), else whole hypotheses of the older shapes (``hypothesis``),
    with how they were read (one of :data:`READ_SOURCES`)."""
    if opener:
        statements, source = read_statements(text, n, opener)
        if statements:
            return statements, source, "statement"
    found, source = read_hypotheses(text, n)
    return found, source, "hypothesis"


def _check_reply(ctx: Context, found: Sequence[str], shape: str, *, shown: Sequence[str], accepted: list[str],
                 stage: str, room: int | None = None) -> list[dict[str, Any]]:
    """Check what one reply gave; usable ones are appended to ``accepted`` (up to ``room`` in all), refusals
    returned. A hypothesis once ``room`` is full is neither: it is not needed."""
    if shape == "statement":
        kept, refused = check_statements(found, ctx, shown=shown, stage=stage, accepted=accepted, room=room)
    else:  # the paper's form, and the older shapes a sentence-form reply may fall back to
        definition = ctx.aspect.definition or ""
        topics = (ctx.task.output_label, ctx.aspect.name, definition)
        checks = []
        for text in found:
            if room is not None and len(accepted) >= room:
                break
            # the aspect's definition said again is no hypothesis of its own: a near-duplicate of it
            check = check_entry(text, kind="hypothesis", shown=shown, accepted=[definition, *accepted] if definition
                                else accepted, topics=topics)
            checks.append(check)
            if check.ok:
                accepted.append(text)
        refused = [{**c.to_dict(), "stage": stage} for c in checks if not c.ok]
        _note_flags(ctx, [c for c in checks if c.ok], stage)
    return refused


def _note_flags(ctx: Context, checks: Sequence[RubricCheck], stage: str, opener: str = "") -> None:
    """Keep the flags of used hypotheses for the run summary and the page, and log them."""
    for check in checks:
        if check.flags:
            entry = {**check.to_dict(), "name": statement_name(check.text, opener), "stage": stage}
            ctx.flagged.append(entry)
            ctx.emit("rubric_flagged", entry)


def check_statements(statements: Sequence[str], ctx: Context, *, shown: Sequence[str] = (), stage: str = "",
                     accepted: list[str] | None = None, room: int | None = None
                     ) -> tuple[list[str], list[dict[str, Any]]]:
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
    ``room`` statements are accepted the rest are left unchecked.
    """
    opener = ctx.opener
    definition = ctx.aspect.definition or ""
    parent = (ctx.aspect.name, definition)
    topics = (ctx.task.output_label, ctx.aspect.name, definition)
    given = [definition] if definition else []
    accepted = [] if accepted is None else accepted
    kept: list[str] = []
    refused: list[dict[str, Any]] = []
    for statement in statements:
        if room is not None and len(accepted) >= room:
            break
        # the aspect's definition is a text the hypothesis may not nearly repeat, not a judged text it copies
        check = check_statement(statement, opener=opener, shown=shown, accepted=[*given, *accepted],
                                parent=parent, topics=topics)
        if check.ok:
            accepted.append(statement)
            kept.append(statement)
            _note_flags(ctx, [check], stage, opener)
        else:
            refused.append({**check.to_dict(), "name": statement_name(statement, opener), "stage": stage})
    return kept, refused


# --------------------------------------------------------------------------- evaluation under a hypothesis (M_E)


def scoring_settings(params: dict[str, Any]) -> ScoringSettings:
    """How a HypoEval judge scores under its hypotheses, from its parameters (the same at fit and score time)."""
    return ScoringSettings(layout=params["layout"], joint=params["joint"], reasoning=params["reasoning"],
                           max_tokens=params["max_tokens"], weighted=params.get("weighted", False))


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


# --------------------------------------------------------------------------- reward (§3.1)


def default_reward_b(scale: tuple[int, int]) -> float:
    """b = 1/(high - low)^2: the paper's 1/16 on 1-5, for any judge scale.

    The paper (B.1) sets a = 1, b = 1/16 "so that the exploitation term is
    bounded in [0, 1]": on a 1-5 scale the largest squared error is
    (5 - 1)^2 = 16. The same bound on a ``low``-``high`` scale needs
    b = 1/(high - low)^2 (1/4 on 1-3, 1/81 on 1-10); with 1/16 a 1-10 scale
    would give rewards down to 1 - 81/16 < -4 and a 1-3 scale would barely
    separate good from bad hypotheses.
    """
    low, high = scale
    return 1.0 / float(high - low) ** 2 if high > low else 1.0


def exploitation(entry: dict[str, Any], samples_by_id: dict[str, Sample], ctx: Context,
                 sample_ids: Sequence[str]) -> float | None:
    """Mean of ``a - b (s - ŝ)^2`` over the samples in S_h with a parsed score; None when none parsed.

    ``s`` and ``ŝ`` are on the judge scale and b follows it (:func:`default_reward_b`).
    """
    a, b = ctx.params["reward_a"], ctx.reward_b
    values = [a - b * (ctx.human(samples_by_id[i]) - entry["scores"][i]) ** 2
              for i in sample_ids if entry["scores"].get(i) is not None]
    return sum(values) / len(values) if values else None


def reward(acc: float | None, n_h: int, t_total: int, alpha: float) -> float | None:
    """UCB reward r_h = acc + alpha * sqrt(ln(t_total) / |S_h|) (natural log, paper code); None without data."""
    if acc is None or n_h <= 0:
        return None
    return acc + alpha * math.sqrt(math.log(max(t_total, 1)) / n_h)


def update_reward(entry: dict[str, Any], samples_by_id: dict[str, Sample], ctx: Context, t_total: int) -> None:
    """Recompute one hypothesis' reward over its S_h (the samples it was evaluated on with a parsed score)."""
    s_h = [i for i in entry["s_h"] if entry["scores"].get(i) is not None]
    entry["acc"] = exploitation(entry, samples_by_id, ctx, s_h)
    entry["n_evaluated"] = len(entry["s_h"])
    entry["reward"] = reward(entry["acc"], len(s_h), t_total, ctx.params["alpha"])


def by_reward(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Highest reward first; entries without a reward last; ties keep insertion order (ours)."""
    return sorted(entries, key=lambda e: -math.inf if e["reward"] is None else e["reward"], reverse=True)


# --------------------------------------------------------------------------- stage 1: hypothesis generation


def initialize_bank(ctx: Context, s_init: Sequence[Sample], literature: Sequence[dict[str, str]],
                    samples_by_id: dict[str, Sample]) -> list[dict[str, Any]]:
    """H_init = M_G(S_init, L) with |H_init| hypotheses, each evaluated on S_init for its first reward (§3.1)."""
    texts = generate_hypotheses(ctx, ctx.params["n_init_hypotheses"], samples=s_init, literature=literature,
                                stage="initial hypotheses")
    bank = [new_entry(t, "initial", s_h=[]) for t in dict.fromkeys(texts)]
    for e in bank:
        ctx.emit("hypothesis_proposed", {"key": e["key"], "text": e["text"], "origin": "initial"})
    evaluate_hypotheses(ctx, bank, s_init, "initial rewards")
    for e in bank:
        e["s_h"] = [s.id for s in s_init]
        update_reward(e, samples_by_id, ctx, len(s_init))
        ctx.emit("reward_updated", _reward_payload(e, None, len(s_init)))
    return bank


def w_hyp_threshold(params: dict[str, Any], index: int, n_train: int, n_top: int) -> float:
    """How many top-k hypotheses must mispredict a sample before it enters W.

    The paper gives no value. An int ``w_hyp`` is used as is; ``None`` is our
    schedule ``max(1, scale * |H_top| * i / |S_tr|)`` (HypoGeniC's
    growing threshold with the actual |H_top| instead of the constant k).
    """
    if params["w_hyp"] is not None:
        return float(params["w_hyp"])
    return max(1.0, params["w_hyp_scale"] * n_top * index / max(n_train, 1))


def generate_and_refine(ctx: Context, wrong: Sequence[Sample], literature: Sequence[dict[str, str]],
                        round_no: int) -> list[str]:
    """H_W^0 = M_G(W), then N_refine rounds alternating data (W) and literature (L) (§3.1).

    Parity: the paper's (odd rounds data) unless ``refine_start="literature"``
    (the authors' code). With ``refine_early_stop`` a round that
    returns the same list ends the loop (authors' code); the paper runs all
    rounds. Without literature the literature rounds are skipped.
    """
    hypotheses = generate_hypotheses(ctx, ctx.params["n_new_hypotheses"], samples=wrong,
                                     stage=f"refresh {round_no}: generation")
    for e in hypotheses:
        ctx.emit("hypothesis_proposed", {"key": hypothesis_key(e), "text": e, "origin": "wrong_examples",
                                         "refresh": round_no, "refinement": 0})
    first = "data" if ctx.params["refine_start"] == "data" else "literature"
    second = "literature" if first == "data" else "data"
    for i in range(1, ctx.params["n_refine"] + 1):
        if not hypotheses:
            break
        source = first if i % 2 == 1 else second
        if source == "literature" and not literature:
            ctx.emit("refinement_round", {"refresh": round_no, "round": i, "source": source, "skipped": True,
                                          "reason": "no literature notes given"})
            continue
        refined = refine_hypotheses(ctx, hypotheses, samples=wrong if source == "data" else (),
                                    literature=literature if source == "literature" else (),
                                    stage=f"refresh {round_no}: refinement {i} ({source})")
        if not refined:
            ctx.emit("refinement_round", {"refresh": round_no, "round": i, "source": source, "kept_previous": True})
            continue
        ctx.emit("refinement_round", {"refresh": round_no, "round": i, "source": source,
                                      "hypotheses": [{"key": hypothesis_key(h), "text": h} for h in refined]})
        if refined == hypotheses and ctx.params["refine_early_stop"]:
            ctx.emit("refinement_stopped", {"refresh": round_no, "round": i, "reason": "no change"})
            break
        hypotheses = refined
    return list(dict.fromkeys(hypotheses))


def update_bank(ctx: Context, bank: list[dict[str, Any]], s_init: Sequence[Sample], s_update: Sequence[Sample],
                literature: Sequence[dict[str, str]], samples_by_id: dict[str, Sample]) -> list[dict[str, Any]]:
    """The update stage over S_update with the wrong-sample bank W (§3.1).

    For each sample the top-k hypotheses by reward are evaluated and their
    rewards updated (the others keep theirs); a sample that at least w_hyp of
    them mispredict (|ŝ - s| > theta, or no score) enters W. When |W|
    reaches w_max, new hypotheses are generated and refined from W, get a
    first reward on W (authors' code), and the bank becomes the
    ``max_bank`` best by reward of H_top ∪ H_W (paper; ``replace_pool="bank"``:
    the whole bank ∪ H_W, authors' code). Equal under the defaults.
    """
    p = ctx.params
    wrong: list[Sample] = []
    refreshes = 0
    n_train = len(s_init) + len(s_update)
    for t, sample in enumerate(s_update, 1):
        t_total = t + len(s_init)
        top = by_reward(bank)[:p["top_k"]]
        evaluate_hypotheses(ctx, top, [sample], f"update {t}/{len(s_update)}")
        n_wrong = 0
        for e in top:
            e["s_h"].append(sample.id)
            update_reward(e, samples_by_id, ctx, t_total)
            predicted = e["scores"].get(sample.id)
            n_wrong += predicted is None or abs(predicted - ctx.human(sample)) > p["theta"]
            ctx.emit("reward_updated", _reward_payload(e, sample.id, t_total))
        threshold = w_hyp_threshold(p, len(s_init) + t - 1, n_train, len(top))
        if not top or n_wrong >= threshold:
            wrong.append(sample)
            ctx.emit("wrong_bank_added", {"sample_id": sample.id, "n_wrong": n_wrong, "threshold": round(threshold, 3),
                                          "size": len(wrong), "w_max": p["w_max"]})
        if len(wrong) >= p["w_max"]:
            refreshes += 1
            new = [new_entry(text, "wrong_examples", s_h=[], refresh=refreshes)
                   for text in generate_and_refine(ctx, wrong, literature, refreshes)
                   if hypothesis_key(text) not in {e["key"] for e in bank}]
            evaluate_hypotheses(ctx, new, wrong, f"refresh {refreshes}: rewards of new hypotheses")
            for e in new:
                e["s_h"] = [s.id for s in wrong]
                update_reward(e, samples_by_id, ctx, t_total)
                ctx.emit("hypothesis_added", {**_reward_payload(e, None, t_total), "text": e["text"],
                                              "origin": "wrong_examples", "refresh": refreshes})
            pool = top if p["replace_pool"] == "top_k" else bank
            kept = by_reward(pool + new)[:p["max_bank"]]
            dropped = [e for e in bank + new if e not in kept]
            bank = kept
            ctx.emit("bank_refreshed", {"refresh": refreshes, "t": t_total, "size": len(bank),
                                        "dropped": [e["key"] for e in dropped]})
            wrong = []
    return bank


def literature_hypotheses(ctx: Context, literature: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """H_L = M_G(L): hypotheses from the literature alone, no reward (§3.1)."""
    texts = generate_hypotheses(ctx, ctx.params["n_literature_hypotheses"], literature=literature,
                                stage="literature hypotheses")
    entries = [new_entry(t, "literature", s_h=[]) for t in dict.fromkeys(texts)]
    for e in entries:
        ctx.emit("hypothesis_proposed", {"key": e["key"], "text": e["text"], "origin": "literature"})
    return entries


def remove_repetitions(ctx: Context, entries: Sequence[dict[str, Any]], bank_name: str) -> list[dict[str, Any]]:
    """Pairwise LLM repetition check within one bank; keep greedily by exploitation mean (authors' code).

    One call per unordered pair, asking for ``{"answer": "yes" | "no"}``
    (the free-text "Final answer: yes/no" is the fallback). An answer that
    cannot be read counts as not repetitive (ours).
    """
    ordered = sorted(entries, key=lambda e: -math.inf if e["acc"] is None else e["acc"], reverse=True)
    if len(ordered) < 2:
        return list(ordered)
    pairs = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]]
    prompts = [REPETITION_TEMPLATE.render(**{k: v for k, v in ctx.common_fields().items() if k != "aspect_definition"},
                                          first=a["text"], second=b["text"])
               for a, b in pairs]
    stage = f"repetition check ({bank_name})"
    replies = ctx.ask(prompts, stage, max_tokens=ctx.params["check_max_tokens"], schema=st.yes_no_schema())
    readings = [read_repetition(r) for r in replies]
    for _, source in readings:
        ctx.count_reply(stage, source)
    repeats = {(a["key"], b["key"]) for (a, b), (answer, _) in zip(pairs, readings) if answer}
    unclear = sum(answer is None for answer, _ in readings)
    if unclear:
        ctx.emit("parse_failures", {"stage": f"repetition check ({bank_name})", "missing": unclear,
                                    "of": len(replies), "counted_as": "not repetitive"})
    kept: list[dict[str, Any]] = []
    for e in ordered:
        twin = next((k for k in kept if (k["key"], e["key"]) in repeats), None)
        if twin is None:
            kept.append(e)
        else:
            ctx.emit("duplicate_removed", {"key": e["key"], "text": e["text"], "duplicate_of": twin["key"],
                                           "bank": bank_name})
    return kept


def union_banks(data_bank: Sequence[dict[str, Any]], literature_bank: Sequence[dict[str, Any]], *, max_bank: int,
                mode: str, seed: int) -> list[dict[str, Any]]:
    """The final bank: at most ``max_bank`` from the de-duplicated data and literature banks (§3.1).

    ``random_half`` (the paper's wording, default): a seeded random choice of
    at most ``max_bank // 2`` from each. The random choice exists to let
    literature hypotheses in beside the rewarded data ones; without a
    literature bank there is nothing to make room for, so the data bank's
    ``max_bank // 2`` best by reward are kept (highest first) instead of a
    random half that could drop the best one. ``balanced_fill`` (authors'
    code): the best ``max_bank // 2`` data hypotheses by
    exploitation mean, then literature ones in order up to ``max_bank``.
    """
    half = max_bank // 2
    if mode == "random_half" and not literature_bank:
        chosen = by_reward(data_bank)[:half]
    elif mode == "random_half":
        rng = random.Random(seed)
        pick = lambda xs: rng.sample(list(xs), min(half, len(xs)))  # noqa: E731
        chosen = pick(data_bank) + pick(literature_bank)
    else:
        data_sorted = sorted(data_bank, key=lambda e: -math.inf if e["acc"] is None else e["acc"], reverse=True)
        chosen = data_sorted[:half]
        chosen += list(literature_bank)[:max_bank - len(chosen)]
    seen: set[str] = set()
    return [e for e in chosen if not (e["key"] in seen or seen.add(e["key"]))]


# --------------------------------------------------------------------------- stage 2: selection


def select_hypotheses(ctx: Context, bank: Sequence[dict[str, Any]], train: Sequence[Sample], n_selected: int, *,
                      accepted_by_person: bool = False) -> list[dict[str, Any]]:
    """H_ev: up to ``n_selected`` hypotheses by coverage-aware Pearson fitness on S_tr (§3.2).

    Every hypothesis is scored on all of S_tr (scores from stage 1 come from
    the cache: same prompt). Its fitness is
    :func:`judge_engine.metrics.selection_fitness`: the Pearson r on the
    items it scored times the share of items it scored, not eligible below
    the minimum coverage (a hypothesis that scores 2 of 10 items perfectly
    cannot beat one that scores all 10 a little less well). Ranking is by
    that value, ties broken by the stage-1 reward (ours).

    Only *selectable* hypotheses (eligible and r > 0) are selected on their
    own: a hypothesis that disagrees with the humans on the training items is
    never adopted silently. When fewer qualify than ``n_selected``, fewer
    are selected and a ``fewer_selected`` warning says so. When none
    qualifies, the fit cannot build a judge and raises ``ValueError`` —
    unless a person accepted the hypotheses (``accepted_by_person``,
    curated runs): then the person's ones fill the remaining places in
    fitness order, each marked ``accepted_by="person"``, with a
    ``person_accepted`` warning.

    Raises
    ------
    ValueError
        "HypoEval found no hypothesis that agrees with the human scores ..."
        when nothing is selectable and no person accepted the hypotheses.
    """
    evaluate_hypotheses(ctx, bank, train, "selection on the training samples")
    human = [ctx.human(s) for s in train]
    for e in bank:
        pred = [math.nan if e["scores"].get(s.id) is None else e["scores"][s.id] for s in train]
        fit = metrics.selection_fitness(human, pred)
        e["fitness"] = None if math.isnan(fit.value) else fit.value
        e["train_pearson"] = None if math.isnan(fit.correlation) else fit.correlation
        e["train_parsed"] = fit.n_scored
        e["coverage"] = fit.coverage
        e["selectable"] = fit.selectable
        e["fitness_reason"] = fit.reason or ("" if fit.selectable else "correlation at or below zero")
        ctx.emit("hypothesis_evaluated", {"key": e["key"], "train_pearson": e["train_pearson"],
                                          "fitness": e["fitness"], "coverage": round(fit.coverage, 4),
                                          "selectable": fit.selectable, "reason": e["fitness_reason"],
                                          "parsed": fit.n_scored, "of": len(train)})

    def rank(e: dict[str, Any]) -> tuple[float, float]:
        return (-math.inf if e["fitness"] is None else e["fitness"],
                -math.inf if e["reward"] is None else e["reward"])

    ranked = sorted(bank, key=rank, reverse=True)
    selected = [e for e in ranked if e["selectable"]][:n_selected]
    rejected = [e for e in ranked if not e["selectable"]]
    if len(selected) < n_selected and accepted_by_person and rejected:
        added = rejected[:n_selected - len(selected)]
        for e in added:
            e["accepted_by"] = "person"
        selected += added
        ctx.warn("person_accepted", f"{len(added)} hypothesis(es) a person accepted were kept although their "
                                    "training fitness does not qualify them (no positive correlation with the "
                                    "human scores at sufficient coverage)", count=len(added))
    n_qualified = sum(e["selectable"] for e in bank)
    if not selected:
        reasons = sorted({e["fitness_reason"] for e in bank})
        message = (f"HypoEval found no hypothesis that agrees with the human scores on the {len(train)} training "
                   f"items: none of the {len(bank)} in the bank has a positive Pearson correlation at sufficient "
                   f"coverage ({'; '.join(reasons)})")
        ctx.warn("no_selectable", message)
        ctx.emit("selection", {"selected": [], "bank_size": len(bank), "qualified": 0, "wanted": n_selected})
        raise ValueError(message)
    if len(selected) < n_selected:
        ctx.warn("fewer_selected", f"only {n_qualified} of the {len(bank)} hypotheses correlate positively with "
                                   f"the human scores at sufficient coverage; {len(selected)} selected instead of "
                                   f"{n_selected}", count=n_selected - n_qualified)
    ctx.emit("selection", {"selected": [{"key": e["key"], "train_pearson": e["train_pearson"],
                                         "fitness": e["fitness"], "coverage": round(e["coverage"], 4),
                                         "accepted_by": e.get("accepted_by", "selection")} for e in selected],
                           "bank_size": len(bank), "qualified": n_qualified, "wanted": n_selected,
                           "rule": "coverage-aware Pearson (metrics.selection_fitness), correlation > 0 only"})
    return selected


# --------------------------------------------------------------------------- stage 3: evaluation


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


# --------------------------------------------------------------------------- helpers


def _reward_payload(e: dict[str, Any], sample_id: str | None, t_total: int) -> dict[str, Any]:
    return {"key": e["key"], "reward": e["reward"], "acc": e["acc"], "n_evaluated": e["n_evaluated"],
            "sample_id": sample_id, "t": t_total}


def public_entry(e: dict[str, Any]) -> dict[str, Any]:
    """The bank entry as stored in the judge (scores kept: they are the per-hypothesis training scores)."""
    return {k: e.get(k) for k in ("key", "text", "origin", "reward", "acc", "n_evaluated", "train_pearson",
                                  "train_parsed", "coverage", "fitness", "selectable", "fitness_reason",
                                  "accepted_by", "refresh", "scores")}


def _json_native(value: Any) -> Any:
    """Tuples (the constructor's immutable defaults) as lists, so a Judge survives a JSON round trip."""
    if isinstance(value, (list, tuple)):
        return [_json_native(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_native(v) for k, v in value.items()}
    return value


class _LiteratureCheck:
    """``literature`` is None or a sequence of ``{"title": str, "text": str}``."""

    def check(self, name: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, (str, bytes)) or not all(
                isinstance(n, dict) and isinstance(n.get("text"), str) for n in value):
            raise ValueError(f"{name}={value!r} must be None or a list of {{'title': ..., 'text': ...}} notes")


class _HypothesesCheck:
    """``hypotheses`` is None or a sequence of hypothesis texts or ``{"text": ...}`` dicts."""

    def check(self, name: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, (str, bytes)) or not all(
                isinstance(h, str) or (isinstance(h, dict) and isinstance(h.get("text"), str)) for h in value):
            raise ValueError(f"{name} must be None or a list of hypothesis texts or {{'text': ...}} dicts, "
                             f"not {str(value)[:80]!r}")
        for i, h in enumerate(value, 1):
            problem = text_problem(h if isinstance(h, str) else h["text"], f"hypothesis {i} of {name}")
            if problem:
                raise ValueError(problem)


def curated_entries(hypotheses: Sequence[Any]) -> list[dict[str, Any]]:
    """A person's curated hypotheses as bank entries (texts or dicts with ``text`` and optional ``origin``)."""
    out, seen = [], set()
    for h in hypotheses:
        text = (h if isinstance(h, str) else h["text"]).strip()
        origin = "curated" if isinstance(h, str) else h.get("origin", "curated")
        if text and hypothesis_key(text) not in seen:
            seen.add(hypothesis_key(text))
            out.append(new_entry(text, origin if origin in ORIGINS else "curated", s_h=[]))
    return out


# --------------------------------------------------------------------------- the method


@register
class HypoEval(Method):
    """HypoEval: hypothesis bank from human scores and literature, top hypotheses by Pearson, mean of CoT scores.

    Parameters
    ----------
    criteria_form : {"auto", "paper", "sentence"}, default="auto"
        How hypotheses are asked for: the paper's (free hypotheses that may
        name score bands) or, for small models, one sentence each that
        completes "A good summary ..." under a grammar. ``auto``: the
        sentence form on the embedded model, the paper's on other backends.
    layout : {"paper", "sample_first"}, default="paper"
        Prompt layout of per-hypothesis scoring: the paper's (instructions
        and hypothesis, then the sample) or the sample first and the
        hypothesis last, for backends with prefix caching.
    joint : bool, default=False
        Score all selected hypotheses in one call per test sample (JSON of
        per-hypothesis scores) instead of one call each: cheaper, not the
        paper's. Fitting always scores one hypothesis per call.
    n_train : int, default=30
        |S_tr|: at most this many training samples are used (paper §4: 30).
    n_init : int, default=5
        |S_init|: samples for the initial hypotheses and rewards (paper B.1: 5).
    n_init_hypotheses : int, default=5
        |H_init| (paper B.1: 5).
    alpha : float, default=0.5
        Exploration weight of the UCB reward (paper B.1: 0.5).
    reward_a : float, default=1.0
        a in the reward a - b (s - ŝ)^2 (paper B.1: 1).
    reward_b : float or None, default=None
        b in the reward. None: 1/(high - low)^2 on the judge scale, which is
        the paper's 1/16 on 1-5 (B.1: chosen so the exploitation term lies in
        [0, 1]) and keeps that bound on any other scale.
    top_k : int, default=10
        Hypotheses (best reward) evaluated on each update sample (paper B.1: 10).
    theta : float, default=0.5
        A prediction is wrong when |ŝ - s| > theta (paper B.1: 0.5).
    w_hyp : int or None, default=None
        Wrong top-k predictions that put a sample into W. The paper gives no
        value; None = our growing schedule max(1, w_hyp_scale *
        |H_top| * i / |S_tr|) (HypoGeniC code with the actual |H_top|).
    w_hyp_scale : float, default=0.8
        Factor of that schedule (HypoGeniC code: 0.8).
    w_max : int, default=10
        Size of W that triggers new hypotheses (paper B.1: 10).
    n_refine : int, default=6
        Refinement rounds alternating data and literature (paper B.1: 6).
    refine_start : {"data", "literature"}, default="data"
        Source of the first refinement round (paper: data; authors' code:
        literature).
    refine_early_stop : bool, default=False
        Stop refining when a round returns the same list (authors' code);
        the paper runs all N_refine rounds.
    n_new_hypotheses : int, default=5
        |H_W| generated from W per refresh (authors' code: 5).
    max_bank : int, default=20
        H_max: bank size during updates and of the final union (paper B.1: 20).
    n_literature_hypotheses : int, default=20
        |H_L| generated from the literature alone (authors' code: H_max = 20).
    replace_pool : {"top_k", "bank"}, default="top_k"
        After a refresh keep the ``max_bank`` best of H_top ∪ H_W (paper) or
        of the whole bank ∪ H_W (authors' code).
    union_mode : {"random_half", "balanced_fill"}, default="random_half"
        Union of the data and literature banks: the paper's wording (a
        seeded random half from each; without literature notes, the data
        bank's best half by reward instead) or the authors' code (best half
        of the data bank, filled up from the literature bank).
    n_selected : int, default=5
        H_ev: at most this many hypotheses kept by coverage-aware Pearson on
        S_tr (paper §3.2: 5, by Pearson). Only hypotheses with a positive
        correlation are kept; fewer when fewer qualify (a warning says so),
        and the fit fails with a ValueError when none does (see
        :func:`select_hypotheses`).
    reasoning : bool, default=True
        Chain-of-thought before each 1-5 score (paper §3.3).
    weighted : bool, default=False
        With ``reasoning=False``: the probability-weighted 1-5 score from the
        backend's logprobs (G-Eval's trick) instead of the sampled number.
        Not the paper's; what a tiny local model needs to give any score.
    max_tokens : int, default=256
        Reply budget of each per-hypothesis score (authors' code: 4000; kept
        small for local models).
    generation_max_tokens : int, default=1024
        Reply budget of generation and refinement calls.
    check_max_tokens : int, default=128
        Reply budget of a repetition check ("keep your answer short").
    observation_chars : int, default=1500
        Each text shown to the generator is cut to this many characters so
        ten examples fit a small context window (ours; the paper does not mention it).
    literature : list of {"title", "text"} or None, default=None
        Literature notes or annotation guidelines (the paper's L, already
        summarised). None: literature rounds and H_L are skipped and an
        event says so.
    hypotheses : list of str or {"text", "origin"} or None, default=None
        Curated hypotheses (human in the loop): generation is skipped and
        these go straight to selection and scoring. None: generate as the
        paper does.
    seed : int, default=42
        Order of S_tr, hence S_init (paper B.1 seeds 42, 2, 114514).

    References
    ----------
    HypoEval: Hypothesis-Guided Evaluation for Natural Language Generation.
    """

    name = "hypoeval"
    title = "HypoEval"
    _parameter_constraints = {
        "criteria_form": Options(CRITERIA_FORMS), "layout": Options(LAYOUTS),
        "joint": Options((True, False)),
        "n_train": Interval(int, 2, 1000), "n_init": Interval(int, 1, 100),
        "n_init_hypotheses": Interval(int, 1, 50), "alpha": Interval(float, 0, 10),
        "reward_a": Interval(float, None, None), "reward_b": OptionalInterval(float, 0, None),
        "top_k": Interval(int, 1, 100), "theta": Interval(float, 0, 100),
        "w_hyp": OptionalInterval(int, 0, None), "w_hyp_scale": Interval(float, 0, 10), "w_max": Interval(int, 1, 1000),
        "n_refine": Interval(int, 0, 50), "refine_start": Options(("data", "literature")),
        "refine_early_stop": Options((True, False)), "replace_pool": Options(("top_k", "bank")),
        "n_new_hypotheses": Interval(int, 1, 50), "max_bank": Interval(int, 1, 200),
        "n_literature_hypotheses": Interval(int, 1, 100), "union_mode": Options(("random_half", "balanced_fill")),
        "n_selected": Interval(int, 1, 100), "reasoning": Options((True, False)),
        "weighted": Options((True, False)), "max_tokens": Interval(int, 8, 8192),
        "generation_max_tokens": Interval(int, 32, 16384),
        "check_max_tokens": Interval(int, 8, 4096), "observation_chars": Interval(int, 50, 100000),
        "literature": _LiteratureCheck(), "hypotheses": _HypothesesCheck(), "seed": Interval(int, None, None)}

    _parameter_labels = {
        "criteria_form": "Form of generated hypotheses", "layout": "Prompt layout", "joint": "All hypotheses in one call", "n_train": "Training items used",
        "n_init": "Items for the first hypotheses", "n_init_hypotheses": "First hypotheses",
        "alpha": "Exploration weight (UCB)", "reward_a": "Reward constant a", "reward_b": "Reward weight b",
        "top_k": "Hypotheses tried per item", "theta": "Error counted as wrong",
        "w_hyp": "Wrong predictions to collect an item", "w_hyp_scale": "Collection schedule factor",
        "w_max": "Wrong items before new hypotheses", "n_refine": "Refinement rounds",
        "refine_start": "First refinement from", "refine_early_stop": "Stop refining when unchanged",
        "replace_pool": "Bank kept after a refresh", "n_new_hypotheses": "New hypotheses per refresh",
        "max_bank": "Largest hypothesis bank", "n_literature_hypotheses": "Hypotheses from literature",
        "union_mode": "Merging the two banks", "n_selected": "Hypotheses selected",
        "reasoning": "Reasoning before the score", "weighted": "Probability-weighted scores",
        "max_tokens": "Score reply limit (tokens)", "generation_max_tokens": "Generation reply limit",
        "check_max_tokens": "Check reply limit (tokens)", "observation_chars": "Characters of each text shown",
        "literature": "Literature notes", "hypotheses": "Curated hypotheses", "seed": "Random seed of the method"}
    _choice_labels = {"criteria_form": CRITERIA_FORM_LABELS, "layout": LAYOUT_LABELS,
                      "refine_start": {"data": "the data (paper)", "literature": "the literature"},
                      "replace_pool": {"top_k": "best of tried and new (paper)", "bank": "best of the whole bank"},
                      "union_mode": {"random_half": "a random half of each (paper)",
                                     "balanced_fill": "best data half, filled from literature"}}
    quick_params: ClassVar[dict[str, Any]] = {"n_init": 3, "n_init_hypotheses": 3, "top_k": 3, "w_max": 3,
                                              "n_refine": 1, "max_bank": 6, "n_selected": 3}
    def __init__(self, *, criteria_form: str = "auto", layout: str = "paper", joint: bool = False, n_train: int = 30, n_init: int = 5,
                 n_init_hypotheses: int = 5, alpha: float = 0.5, reward_a: float = 1.0, reward_b: float | None = None,
                 top_k: int = 10, theta: float = 0.5, w_hyp: int | None = None, w_hyp_scale: float = 0.8,
                 w_max: int = 10, n_refine: int = 6, refine_start: str = "data", refine_early_stop: bool = False,
                 replace_pool: str = "top_k", n_new_hypotheses: int = 5,
                 max_bank: int = 20, n_literature_hypotheses: int = 20, union_mode: str = "random_half",
                 n_selected: int = 5, reasoning: bool = True, weighted: bool = False, max_tokens: int = 256,
                 generation_max_tokens: int = 1024, check_max_tokens: int = 128, observation_chars: int = 1500,
                 literature: tuple | None = None, hypotheses: tuple | None = None, seed: int = 42):
        self.criteria_form = criteria_form
        self.layout = layout
        self.joint = joint
        self.n_train = n_train
        self.n_init = n_init
        self.n_init_hypotheses = n_init_hypotheses
        self.alpha = alpha
        self.reward_a = reward_a
        self.reward_b = reward_b
        self.top_k = top_k
        self.theta = theta
        self.w_hyp = w_hyp
        self.w_hyp_scale = w_hyp_scale
        self.w_max = w_max
        self.n_refine = n_refine
        self.refine_start = refine_start
        self.refine_early_stop = refine_early_stop
        self.replace_pool = replace_pool
        self.n_new_hypotheses = n_new_hypotheses
        self.max_bank = max_bank
        self.n_literature_hypotheses = n_literature_hypotheses
        self.union_mode = union_mode
        self.n_selected = n_selected
        self.reasoning = reasoning
        self.weighted = weighted
        self.max_tokens = max_tokens
        self.generation_max_tokens = generation_max_tokens
        self.check_max_tokens = check_max_tokens
        self.observation_chars = observation_chars
        self.literature = literature
        self.hypotheses = hypotheses
        self.seed = seed

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        llm, task, progress, log = context.llm, context.task, context.progress, context.log
        self._validate_params()
        p = self.get_params()
        s_tr = [s for s in train if not math.isnan(s.human.get(aspect.name, math.nan))]
        random.Random(self.seed).shuffle(s_tr)  # the seed orders S_tr, hence S_init (ours)
        s_tr = s_tr[:self.n_train]
        literature = [dict(n) for n in (self.literature or ())]
        ctx = Context(llm=llm, aspect=aspect, task=task, params=p, log=log or (lambda kind, payload: None),
                      progress=lambda stage: None, form=resolve_criteria_form(self.criteria_form, llm))
        ctx.total = max(1, self.estimate_calls(len(s_tr), 0)["fit"])
        if progress:
            ctx.progress = lambda stage: progress(min(ctx.calls, ctx.total), ctx.total, stage)
        by_id = {s.id: s for s in s_tr}
        ctx.emit("fit_started", {"n_train": len(s_tr), "estimated_calls": ctx.total, "criteria_form": ctx.form})  # a resumed fit starts over

        if self.hypotheses is not None:
            bank = curated_entries(self.hypotheses)
            ctx.emit("curated_hypotheses", {"n": len(bank), "keys": [e["key"] for e in bank],
                                            "texts": [e["text"] for e in bank],
                                            "origins": [e["origin"] for e in bank]})
        else:
            if not literature:
                ctx.emit("literature_skipped", {"reason": "no literature notes given: literature refinement rounds "
                                                          "and literature-only hypotheses are skipped"})
            s_init, s_update = s_tr[:self.n_init], s_tr[self.n_init:]
            bank = initialize_bank(ctx, s_init, literature, by_id)
            bank = update_bank(ctx, bank, s_init, s_update, literature, by_id)
            data_bank = remove_repetitions(ctx, bank, "data")
            lit_bank = remove_repetitions(ctx, literature_hypotheses(ctx, literature), "literature") if literature \
                else []
            bank = union_banks(data_bank, lit_bank, max_bank=self.max_bank, mode=self.union_mode, seed=self.seed)
            ctx.emit("union", {"size": len(bank), "from_data": sum(e["origin"] != "literature" for e in bank),
                               "from_literature": sum(e["origin"] == "literature" for e in bank)})
        if not bank:
            # no judge can be built from nothing: fail clearly rather than return a judge whose every score
            # is missing (the run then ends with this message instead of "parse_failures: N")
            read = ", ".join(f"{n} {k}" for k, n in ctx.replies.items() if n)
            message = ("HypoEval generated no usable hypothesis: " + (
                "no curated hypothesis text was given" if self.hypotheses is not None else
                "no hypothesis was left from the model's generation replies ("
                + "; ".join([f"replies read: {read or 'none'}", *dict.fromkeys(ctx.unread_reasons)]
                            + ([f"{len(ctx.rejected)} hypotheses refused by the rubric checks: "
                                + ", ".join(sorted({r['rule'] for r in ctx.rejected}))] if ctx.rejected else []))
                + small_model_hint(ctx.form) + ")"))
            ctx.emit("empty_bank", {"reason": message, "replies": dict(ctx.replies)})
            ctx.warn("empty_bank", message)
            raise ValueError(message)
        selected = select_hypotheses(ctx, bank, s_tr, self.n_selected, accepted_by_person=self.hypotheses is not None)
        ctx.emit("fit_done", {"calls": ctx.calls, "failures": ctx.failures, "bank": len(bank),
                              "selected": len(selected), "replies": dict(ctx.replies),
                              "score_sources": dict(ctx.score_sources)})
        if progress:
            progress(ctx.total, ctx.total, "done")
        return Judge(method=self.name, params=_json_native(p), aspect=aspect.to_dict(), task=task.to_dict(),
                     state={"selected": [public_entry(e) for e in selected],
                            "bank": [public_entry(e) for e in bank],
                            "train_ids": [s.id for s in s_tr], "failures": ctx.failures,
                            "replies": dict(ctx.replies), "score_sources": dict(ctx.score_sources),
                            "warnings": list(ctx.warnings), "rejected": list(ctx.rejected),
                            "flagged": [f for f in ctx.flagged if f["text"] in {e["text"] for e in bank}],
                            "literature_used": bool(literature) and self.hypotheses is None,
                            "criteria_form": ctx.form})

    def estimate_calls(self, n_train: int, n_test: int) -> dict[str, int]:
        """An upper bound on the backend calls of a fit and of scoring, before cache hits.

        The paper's cost model with every follow-up turn counted: each
        generation or refinement call may be followed by one retry and up to
        :data:`SAMPLED_DRAWS` sampled draws (so it counts
        :data:`GENERATION_CALLS` times), each per-hypothesis score by
        one follow-up turn (so it counts twice); repetition checks are one
        call per pair, never retried.

        Generation: GENERATION_CALLS [1 + R (1 + N_ref) + (1 with literature)] +
        2 (|H_init||S_init| + sum_t min(k, |H_t|) + R |H_W| w_max) +
        C(|H_data|, 2) + C(|H_L|, 2); selection 2 |H| |S_tr|; evaluation
        2 H_ev per test text (2 with ``joint``). R = floor(|S_update| / w_max)
        refreshes, |H_t| bounded by min(H_max, |H_init| + |H_W| per refresh).
        Repeated prompts (e.g. stage-1 scores asked again at selection) are
        answered by the cache, so the real count is usually far lower.
        """
        m = min(n_train, self.n_train)
        follow = 2  # a first reply and at most one follow-up turn
        score = estimate_criteria_calls(n_test, min(self.n_selected, self._final_bank_bound(m)), joint=self.joint,
                                        follow_ups=True)
        if self.hypotheses is not None:
            return {"fit": follow * len(self.hypotheses) * m, "score": score}
        n0 = min(self.n_init, m)
        updates = m - n0
        refreshes = updates // self.w_max if self.w_max else 0
        has_lit = bool(self.literature)
        rounds = self.n_refine if has_lit else sum(
            1 for i in range(1, self.n_refine + 1)
            if (i % 2 == 1) == (self.refine_start == "data"))
        generation = 1
        scoring = self.n_init_hypotheses * n0
        checks = 0
        bank = self.n_init_hypotheses
        for t in range(1, updates + 1):
            scoring += min(self.top_k, bank)
            if refreshes and t % self.w_max == 0 and t // self.w_max <= refreshes:
                generation += 1 + rounds
                scoring += self.n_new_hypotheses * self.w_max
                bank = min(self.max_bank, bank + self.n_new_hypotheses)
        checks += comb(bank, 2)
        lit = self.n_literature_hypotheses if has_lit else 0
        if has_lit:
            generation += 1
            checks += comb(lit, 2)
        half = self.max_bank // 2
        if self.union_mode == "random_half":
            final = min(bank, half) + min(lit, half)
        else:
            final = min(self.max_bank, min(bank, half) + lit)
        scoring += final * m
        # a generation call: the first reply, a follow-up turn when unread, sampled draws while short
        return {"fit": GENERATION_CALLS * generation + follow * scoring + checks, "score": score}

    def _final_bank_bound(self, m: int) -> int:
        if self.hypotheses is not None:
            return len(self.hypotheses)
        return self.max_bank

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        return evaluate_with_hypotheses(
            samples, judge.state.get("selected", []), aspect=judge.aspect_record, task=judge.task_info, llm=llm,
            settings=scoring_settings(judge.params),
            progress=(lambda d, t: progress(d, t, "scoring")) if progress else None)


# --------------------------------------------------------------------------- views for the page (pure, no I/O)


def bank_from_events(events: Sequence[RunEvent | dict[str, Any]]) -> dict[str, Any]:
    """Replay a run's stored events (``Store.run_events``, or the rows of ``Store.events``) into the live
    picture of the bank.

    Returns ``{"hypotheses": [row, ...], "wrong_bank": int, "w_max": int | None,
    "refreshes": int, "refinement_rounds": int, "literature_skipped": bool,
    "parse_failures": int, "selected": [key, ...], "replies": {json, text,
    unread}, "score_sources": {source: n}, "warnings": [warning, ...]}``;
    each row has key, text, origin, reward, n_evaluated, train_pearson,
    coverage (share of training items it scored), fitness (coverage-aware),
    selectable, reason (why not selectable) and status (in bank, dropped,
    duplicate, selected).
    """
    rows: dict[str, dict[str, Any]] = {}

    def fresh() -> dict[str, Any]:
        return {"wrong_bank": 0, "w_max": None, "refreshes": 0, "refinement_rounds": 0,
                "literature_skipped": False, "parse_failures": 0, "selected": [],
                "replies": {k: 0 for k in READ_SOURCES}, "score_sources": {}, "warnings": []}

    view: dict[str, Any] = fresh()

    def row(key: str, **fields: Any) -> dict[str, Any]:
        r = rows.setdefault(key, {"key": key, "text": "", "origin": "", "reward": None, "n_evaluated": 0,
                                  "train_pearson": None, "coverage": None, "fitness": None, "selectable": None,
                                  "reason": "", "status": "in bank"})
        r.update({k: v for k, v in fields.items() if v is not None})
        return r

    for event in events:
        kind, p = (event.kind, event.payload) if isinstance(event, RunEvent) else (event["kind"], event["payload"])
        if kind == "fit_started":  # a resumed run fits again (from the cache): show that fit only
            rows.clear()
            view.update(fresh())
        elif kind in ("hypothesis_proposed", "hypothesis_added"):
            if kind == "hypothesis_added" or p.get("origin") != "wrong_examples":
                row(p["key"], text=p.get("text"), origin=p.get("origin"), reward=p.get("reward"),
                    n_evaluated=p.get("n_evaluated"))
        elif kind == "reward_updated":
            row(p["key"], reward=p.get("reward"), n_evaluated=p.get("n_evaluated"))
        elif kind == "wrong_bank_added":
            view["wrong_bank"], view["w_max"] = p["size"], p.get("w_max")
        elif kind == "bank_refreshed":
            view["wrong_bank"] = 0
            view["refreshes"] += 1
            for key in p.get("dropped", []):
                row(key, status="dropped")
        elif kind == "refinement_round" and not p.get("skipped"):
            view["refinement_rounds"] += 1
        elif kind == "duplicate_removed":
            row(p["key"], status="duplicate")
        elif kind == "literature_skipped":
            view["literature_skipped"] = True
        elif kind == "parse_failures":
            view["parse_failures"] += int(p.get("missing", 0))
        elif kind == "curated_hypotheses":
            keys = p.get("keys", [])
            for key, text, origin in zip(keys, p.get("texts", [None] * len(keys)), p.get("origins", [None] * len(keys))):
                row(key, text=text, origin=origin or "curated")
        elif kind == "hypothesis_evaluated":
            row(p["key"], train_pearson=p.get("train_pearson"), coverage=p.get("coverage"), fitness=p.get("fitness"),
                selectable=p.get("selectable"), reason=p.get("reason"))
        elif kind == "reply_read":
            source = p.get("source", "unread")
            view["replies"][source] = view["replies"].get(source, 0) + 1
        elif kind == "scores_read":
            for source, n in (p.get("sources") or {}).items():
                view["score_sources"][source] = view["score_sources"].get(source, 0) + int(n)
        elif kind == "warning":
            view["warnings"].append({"code": p.get("code", ""), "message": p.get("message", ""),
                                     **({"count": p["count"]} if "count" in p else {})})
        elif kind == "selection":
            view["selected"] = [s["key"] for s in p.get("selected", [])]
            for key in view["selected"]:
                row(key, status="selected")
    view["hypotheses"] = [r for r in rows.values() if r["text"] or r["status"] == "selected"]
    return view


def per_hypothesis_scores(verdicts: Sequence[Verdict], selected: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Matrix of per-hypothesis scores over test items: ``{"keys", "samples", "scores"}`` (None = missing)."""
    keys = [h["key"] for h in selected]
    matrix = []
    for v in verdicts:
        by_key = {p["key"]: p["score"] for p in v.metadata.get("per_hypothesis", [])}
        matrix.append([by_key.get(k) for k in keys])
    return {"keys": keys, "samples": [v.sample_id for v in verdicts], "scores": matrix}


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
                       **{k: after.get(k, 0) - before.get(k, 0) for k in ("calls", "cache_hits", "prompt_tokens")},
                       "missing": sum(v.missing for v in verdicts),
                       **metrics.correlations(human, [v.score for v in verdicts])}
    return out

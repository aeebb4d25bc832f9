"""HPSS auxiliaries, generated lazily through the one LLM call path and cached.

The authors' code ships pre-generated auxiliaries for five datasets only; here
each one is produced on first use for any dataset (the generation prompts
of paper Tables 12, 14, 16 and 18, in our wording):

* human criteria: the aspect's definition (editable on the Datasets page, or
  replaced by the ``human_criteria`` parameter) — no call;
* self-generated criteria: one call per scale (the paper shows no prompt for
  them; ours asks for a definition and what the low, middle and high ratings mean);
* AutoCoT steps: one call per (criteria source, scale); ``NoCriteria`` reuses
  the human-criteria steps, as the authors' code does;
* metrics questions: one call per sample, from its input only;
* self-generated references: one call per sample, shared by all aspects;
* in-context examples: stratified over the validation labels, no call
  (App. D); the judged sample is left out of its own examples.

Every generation is greedy, asks for a JSON reply (:data:`SCHEMAS`: criteria,
AutoCoT steps, metrics questions, a reference) and goes through
``llm.complete_many``, so the persistent cache answers repeats for free. A
reply is read as JSON first; the free-text parsers are the fallback, and
``readings`` counts per kind how each reply was read. A reply with no usable
content is *missing*: it is counted, logged, and the samples that needed it
get no score.

Every generated auxiliary then goes through :mod:`judge_engine.rubric_checks`
(:data:`CHECKS`): the self-generated criteria as a ``criterion``, steps,
metrics questions and references as an ``auxiliary``. One that is empty,
repeats a line over and over, is over-long, copies a text its prompt showed
(for criteria and steps, which are shown no judged text: a validation
sample's text; for questions, the sample's source) or, for criteria, names no
quality is refused: it is treated as missing (the samples that need it get no
score, as for a reply with nothing usable) and kept with its rule and reason
in ``Auxiliaries.rejected``. A step or question that nearly repeats an
earlier one of the same list is dropped from the list and kept there too.
A reference is not checked for copying: a faithful reference quotes its source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ... import structured
from ...llm import LLM, BackendUnavailable, Completion, GenerationParams, LLMError, Request, SendingStopped
from ...parsing import parse_json_object
from ...prompting import TaskInfo, load_template, shorten
from ...records import Aspect, Sample
from ...rubric_checks import check_entries, check_entry, lift_for_topic
from .strategy import (FACTOR_VALUES, N_EXAMPLES, StrategyInputs, as_dict, normalised_level, rating_range,
                       source_blocks)

GEN_CRITERIA = load_template("hpss_gen_criteria")
GEN_AUTOCOT = load_template("hpss_gen_autocot")
GEN_METRICS = load_template("hpss_gen_metrics")
GEN_REFERENCE = load_template("hpss_gen_reference")

EXAMPLE_LEVELS = {3: (0.0, 0.5, 1.0), 5: (0.0, 0.25, 0.5, 0.75, 1.0),
                  10: (0.0, 0.0, 0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 1.0, 1.0)}
"""Target normalised human levels of the stratified example sets (App. D; levels as in the authors' example files)."""

QUESTION_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*(.+\S)\s*$")

EventSink = Callable[[str, dict[str, Any]], None]

MAX_QUESTIONS = 3

SCHEMAS: dict[str, dict[str, Any]] = {
    "criteria": structured.string_list_schema(structured.HPSS_CRITERIA, "criteria", min_items=1, max_items=6,
                                              max_length=500),
    # AutoCoT steps are evaluation steps like G-Eval's: the same reply kind, so the same title
    "steps": structured.string_list_schema(structured.GEVAL_STEPS, "steps", min_items=1, max_items=10,
                                           max_length=400),
    "questions": structured.string_list_schema(structured.HPSS_METRICS, "questions", min_items=1,
                                               max_items=MAX_QUESTIONS, max_length=300),
    "reference": structured.text_schema(structured.HPSS_REFERENCE, "reference", max_length=3000),
}
"""The JSON reply each auxiliary generation asks for, by kind."""

FIELDS = {"criteria": "criteria", "steps": "steps", "questions": "questions", "reference": "reference"}

CHECKS: dict[str, dict[str, Any]] = {
    "criteria": {"kind": "criterion", "max_chars": 1500},
    "steps": {"kind": "auxiliary", "max_chars": 2500},
    # a question may quote a fact of its source; most of it quoted is a copy, not a question
    "questions": {"kind": "auxiliary", "max_chars": 1000, "max_copied": 0.8},
    "reference": {"kind": "auxiliary", "max_chars": 3000},
}
"""The rubric-check kind and limits of each auxiliary kind (:func:`judge_engine.rubric_checks.check_entry`):
lengths well above what the prompt asks for (criteria: a definition and three levels; steps: a few sentences;
questions: three; a reference: one output) but inside what the reply budget allows."""

LISTED = re.compile(r"^\s*\d+[.)]\s*")


def check_auxiliary(kind: str, text: str, shown: Sequence[str] = (),
                    topics: Sequence[str] = ()) -> tuple[str | None, list[dict[str, Any]]]:
    """``text`` if the rubric checks accept it (steps and questions without near-repeated items), else None;
    and the refusals and flags (``{text, ok, rule, reason, flags}``; a used text with flags has ``ok`` true).

    Generated criteria that name no word of the quality vocabulary are not flagged when they name a content
    word of ``topics`` (the aspect's name and definition, the output's label), so a custom aspect's own words
    count.
    """
    limits = CHECKS[kind]
    listed = kind in ("steps", "questions")
    items = [LISTED.sub("", line).strip() for line in text.splitlines() if line.strip()] if listed else []
    # a list's numbers are not words of it: "1. Q?" is one word
    check = check_entry("\n".join(items) if listed else text, shown=() if kind == "reference" else shown, **limits)
    if not check.ok:
        return None, [{**check.to_dict(), "text": text}]
    check = lift_for_topic(check, text, topics)
    flagged = [{**check.to_dict(), "text": text}] if check.flags else []
    if not listed:
        return text, flagged
    # only the near-duplicate rule between items: the list as a whole passed the other rules
    checks = check_entries(items, kind="auxiliary", min_words=1, max_chars=10 ** 9, max_repeats=10 ** 9)
    refused = [c.to_dict() for c in checks if not c.ok]
    if not refused:
        return text, flagged
    return _numbered([c.text for c in checks if c.ok]), refused + flagged


def _numbered(items: Sequence[str]) -> str | None:
    kept = [" ".join(s.split()) for s in items if re.search(r"[A-Za-z]", s or "")]
    return "\n".join(f"{i}. {s}" for i, s in enumerate(kept, start=1)) or None


def from_json(kind: str, value: Any) -> str | None:
    """The auxiliary text of a schema-valid JSON reply of ``kind`` (None when it holds no words)."""
    field_value = value[FIELDS[kind]]
    if kind == "criteria":
        kept = [" ".join(s.split()) for s in field_value if re.search(r"[A-Za-z]", s)]
        return " ".join(kept) or None
    if kind in ("steps", "questions"):
        return _numbered(field_value)
    return clean_text(field_value)


def complete_all(llm: LLM, requests: Sequence[Request], *,
                 progress: Callable[[int, int], None] | None = None) -> list[Completion | None]:
    """``llm.complete_many``, except that a request the backend rejects (e.g. a prompt longer than
    the context window) becomes None — recorded as missing by the caller — instead of ending the run.
    An unreachable backend and a stopped run still raise: a Stop is not every item's failure."""
    try:
        return list(llm.complete_many(requests, progress=progress))
    except (BackendUnavailable, SendingStopped):
        raise
    except LLMError:
        out: list[Completion | None] = []
        for req in requests:  # finished calls are cached, so this repeats none of them
            try:
                out.append(llm.complete(req.messages, req.params))
            except (BackendUnavailable, SendingStopped):
                raise
            except LLMError:
                out.append(None)
        return out


def _is_json_object(text: str) -> bool:
    """Whether a reply holds a JSON object: one that failed its schema, never the fallback's free text."""
    return isinstance(parse_json_object(text), dict)


def clean_text(text: str | None, header: str | None = None) -> str | None:
    """Stripped reply, without a leading header line; None when nothing with letters is left."""
    if text is None:
        return None
    text = text.strip()
    if header and text.lower().startswith(header.lower()):
        text = text[len(header):].lstrip(" :\n")
    return text if re.search(r"[A-Za-z]", text) else None


def parse_questions(text: str | None, limit: int = 3) -> str | None:
    """At most ``limit`` numbered or bulleted questions, renumbered; None when the reply has none."""
    if not text:
        return None
    if _is_json_object(text):  # JSON that failed its schema is not a list of questions
        return None
    found = [m.group(1) for line in text.splitlines() if (m := QUESTION_LINE.match(line))]
    if not found:
        found = [line.strip() for line in text.splitlines() if line.strip().endswith("?")]
    found = [q for q in found if re.search(r"[A-Za-z]", q)][:limit]
    return "\n".join(f"{i}. {q}" for i, q in enumerate(found, start=1)) or None


def parse_criteria_text(text: str | None, aspect: str) -> str | None:
    """The criteria text of an ``"<aspect> : <criteria>"`` reply; None when empty or JSON that failed its schema."""
    if text and _is_json_object(text):
        return None
    return clean_text(text, header=aspect)


def parse_reference(text: str | None) -> str | None:
    """The fallback reading of a reference reply: the stripped text, unless it is JSON that failed its schema.

    A reply cut off inside its JSON string (``{"reference": "The cat...``) keeps the text after the key.
    """
    if not text:
        return None
    cut = re.match(r'^\s*\{\s*"reference"\s*:\s*"(.*)$', text, re.DOTALL)
    if cut:
        return clean_text(cut.group(1).rstrip('"} \n').replace('\\"', '"').replace("\\n", "\n"))
    if _is_json_object(text):
        return None
    return clean_text(text)


def parse_steps(text: str | None) -> str | None:
    """The fallback reading of AutoCoT steps: the text without its header, unless it is JSON that failed."""
    if text and _is_json_object(text):
        return None
    return clean_text(text, "Evaluation steps")


def select_examples(pool: Sequence[Sample], aspect: Aspect, n: int, seed: int) -> list[dict[str, Any]]:
    """Stratified in-context examples from the validation labels (App. D; the paper gives no algorithm, this is ours).

    For each target level (n = 3: 0, ½, 1; n = 5: quarters; n = 10: each
    quarter twice) pick, at random among ties, a not yet chosen sample whose
    normalised human score is closest; order them by ascending rating.
    """
    rng = np.random.default_rng(seed)
    scored = [s for s in pool if aspect.name in s.human]
    chosen: list[tuple[float, Sample]] = []
    used: set[str] = set()
    for target in EXAMPLE_LEVELS[n]:
        free = [s for s in scored if s.id not in used]
        if not free:
            break
        dist = np.array([abs(normalised_level(s.human[aspect.name], aspect) - target) for s in free])
        ties = np.flatnonzero(np.isclose(dist, dist.min()))
        pick = free[int(rng.choice(ties))]
        used.add(pick.id)
        chosen.append((normalised_level(pick.human[aspect.name], aspect), pick))
    chosen.sort(key=lambda x: x[0])
    return [{"id": s.id, "input": s.input, "output": s.output, "context": s.context, "level": round(level, 6)}
            for level, s in chosen]


@dataclass
class Auxiliaries:
    """Lazily generated auxiliaries for one (aspect, task, validation pool).

    Global auxiliaries are memoised here; per-sample ones are keyed by sample
    id. ``failures`` counts replies that gave nothing usable, per kind.
    """

    llm: LLM
    aspect: Aspect
    task: TaskInfo
    pool: tuple[Sample, ...] = ()
    """Validation samples the in-context examples are drawn from."""
    human_criteria: str | None = None
    """Overrides the aspect definition as the human-written criteria."""
    max_tokens: int = 512
    seed: int = 0
    example_chars: int | None = None
    """Each in-context example's input and context cut to this many characters (None: whole)."""
    log: EventSink | None = None
    fixed: dict[str, Any] = field(default_factory=dict)
    """Pre-set global auxiliaries (a fitted judge's): ``criteria``, ``steps``, ``examples``."""
    memo: dict[tuple, Any] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    readings: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per kind, replies read as ``json``, by the free-text fallback (``text``) or ``missing``."""
    rejected: list[dict[str, Any]] = field(default_factory=list)
    flagged: list[dict[str, Any]] = field(default_factory=list)
    """Used auxiliaries the rubric checks flagged (:mod:`judge_engine.rubric_checks`)."""
    """Auxiliaries (or items of one) the rubric checks refused: ``{text, ok, rule, reason, stage, kind, key}``."""

    @property
    def params(self) -> GenerationParams:
        return GenerationParams(temperature=0.0, max_tokens=self.max_tokens)

    def _words(self) -> dict[str, str]:
        return {"input": self.task.input_label.lower(), "output": self.task.output_label.lower(),
                "task": self.task.task}

    def _note_missing(self, kind: str, key: str, raw: str | None) -> None:
        self.failures[kind] = self.failures.get(kind, 0) + 1
        if self.log:
            self.log("hpss_auxiliary_missing", {"kind": kind, "key": key, "raw": (raw or "")[:500]})

    def _topics(self) -> tuple[str, ...]:
        return (self.aspect.name, self.aspect.definition or "", self.human_criteria or "", self.task.output_label)

    def _pool_texts(self) -> list[str]:
        return [t for s in self.pool for t in (s.input, s.output, s.context or "") if t]

    def _ask(self, kind: str, prompts: dict[str, str], parse: Callable[[str | None], str | None],
             shown: dict[str, Sequence[str]] | None = None) -> dict[str, str | None]:
        """Ask for ``kind``'s JSON reply per prompt; read it as JSON, else with ``parse`` (the fallback).

        What was read goes through :func:`check_auxiliary` against ``shown[key]`` (default: the validation
        pool's texts); a refused auxiliary is None (missing) and recorded in :attr:`rejected`.
        """
        keys = list(prompts)
        schema = SCHEMAS[kind]
        # max_tokens is the ceiling; the request asks for no more than the schema's longest reply needs
        params = self.params.with_(json_schema=structured.as_param(schema),
                                   max_tokens=structured.sized_max_tokens(self.max_tokens, schema))
        requests = [Request(({"role": "user", "content": prompts[k]},), params) for k in keys]
        replies = complete_all(self.llm, requests)
        out: dict[str, str | None] = {}
        counts = self.readings.setdefault(kind, {"json": 0, "text": 0, "missing": 0})
        for k, reply in zip(keys, replies):
            raw = reply.text if reply is not None else None
            reading = structured.read_json(raw or "", schema)
            value = from_json(kind, reading.value) if reading.ok else None
            source = "json"
            if value is None:
                value, source = parse(raw), "text"
            if value is None:
                counts["missing"] += 1
                self._note_missing(kind, k, raw)
            else:
                counts[source] += 1
                value, refused = check_auxiliary(kind, value, self._pool_texts() if shown is None else shown[k],
                                                 topics=self._topics())
                for r in refused:
                    record = {**r, "stage": f"{kind} ({k})", "kind": kind, "key": k}
                    (self.rejected if not r["ok"] else self.flagged).append(record)
                    if self.log:
                        self.log("rubric_rejected" if not r["ok"] else "rubric_flagged", record)
            out[k] = value
        if self.log and any(v is not None for v in out.values()) and kind in ("criteria", "steps"):
            for k, v in out.items():
                if v is not None:
                    self.log("hpss_auxiliary", {"kind": kind, "key": k, "text": v})
        return out

    # ---- global auxiliaries

    def human_criteria_text(self) -> str:
        return (self.human_criteria or self.aspect.definition or self.aspect.name).strip()

    def criteria(self, source: str, scale: str) -> str | None:
        """Criteria text for the criteria factor value ``source`` (``Human``/``LLM``) at ``scale``."""
        if "criteria" in self.fixed:
            return self.fixed["criteria"]
        if source == "Human":
            return self.human_criteria_text()
        key = ("criteria", scale)
        if key not in self.memo:
            low, high = rating_range(scale, self.aspect)
            prompt = GEN_CRITERIA.render(output=self._words()["output"], aspect=self.aspect.name,
                                         task=self.task.task, min=low, max=high, mid=f"{(low + high) / 2:g}")
            self.memo[key] = self._ask("criteria", {f"scale {scale}": prompt},
                                       lambda t: parse_criteria_text(t, self.aspect.name))[f"scale {scale}"]
        return self.memo[key]

    def steps(self, source: str, scale: str) -> str | None:
        """AutoCoT steps for (criteria source, scale); ``NoCriteria`` uses the human-criteria steps."""
        if "steps" in self.fixed:
            return self.fixed["steps"]
        source = "LLM" if source == "LLM" else "Human"
        key = ("steps", source, scale)
        if key not in self.memo:
            criteria = self.criteria(source, scale)
            if criteria is None:
                self.memo[key] = None
            else:
                low, high = rating_range(scale, self.aspect)
                w = self._words()
                prompt = GEN_AUTOCOT.render(output=w["output"], aspect=self.aspect.name, task=w["task"],
                                            min=low, max=high, criteria=" " + criteria)
                self.memo[key] = self._ask("steps", {f"{source} criteria, scale {scale}": prompt},
                                           parse_steps)[
                    f"{source} criteria, scale {scale}"]
        return self.memo[key]

    def examples(self, n: int) -> list[dict[str, Any]]:
        """The fixed stratified example set of size ``n`` (one per n, shared by all scales)."""
        if "examples" in self.fixed:
            return list(self.fixed["examples"])
        key = ("examples", n)
        if key not in self.memo:
            chosen = select_examples(self.pool, self.aspect, n, self.seed)
            self.memo[key] = [{**ex, "input": shorten(ex["input"], self.example_chars),
                               "context": shorten(ex["context"], self.example_chars) if ex["context"] else ex["context"]}
                              for ex in chosen]
        return self.memo[key]

    # ---- per-sample auxiliaries

    def questions(self, samples: Sequence[Sample]) -> dict[str, str | None]:
        """Metrics questions per sample id, written from the sample's input with the human criteria."""
        todo = {s.id: s for s in samples if ("questions", s.id) not in self.memo}
        if todo:
            w = self._words()
            prompts = {sid: GEN_METRICS.render(input=w["input"], output=w["output"], task=w["task"],
                                               aspect=self.aspect.name, criteria=" " + self.human_criteria_text(),
                                               source_block="\n\n".join(source_blocks(s, self.task)))
                       for sid, s in todo.items()}
            shown = {sid: [t for t in (s.input, s.context or "") if t] for sid, s in todo.items()}
            for sid, value in self._ask("questions", prompts, parse_questions, shown).items():
                self.memo[("questions", sid)] = value
        return {s.id: self.memo[("questions", s.id)] for s in samples}

    def references(self, samples: Sequence[Sample]) -> dict[str, str | None]:
        """Self-generated reference output per sample id (the aspect plays no part in it)."""
        todo = {s.id: s for s in samples if ("reference", s.id) not in self.memo}
        if todo:
            w = self._words()
            prompts = {sid: GEN_REFERENCE.render(input=w["input"], output=w["output"], task=w["task"],
                                                 source_block="\n\n".join(source_blocks(s, self.task)))
                       for sid, s in todo.items()}
            for sid, value in self._ask("reference", prompts, parse_reference).items():
                self.memo[("reference", sid)] = value
        return {s.id: self.memo[("reference", s.id)] for s in samples}

    # ---- everything one strategy needs

    def inputs_for(self, strategy: tuple[str, ...], samples: Sequence[Sample], *,
                   leave_out: bool) -> list[StrategyInputs | None]:
        """Per sample, the strategy's auxiliaries; None where one it needs is missing.

        With ``leave_out`` (validation) a sample never sees itself among the
        in-context examples: it is dropped, not replaced (App. D).
        """
        f = as_dict(strategy)
        criteria = None if f["criteria"] == "NoCriteria" else self.criteria(f["criteria"], f["scale"])
        steps = self.steps(f["criteria"], f["scale"]) if f["autocot"] == "AutoCoT" else None
        n = N_EXAMPLES[f["example"]]
        examples = self.examples(n) if n else []
        questions = self.questions(samples) if f["metrics"] == "Metrics" else {}
        refs = self.references(samples) if f["reference"] == "Reference" else {}
        out: list[StrategyInputs | None] = []
        for s in samples:
            if (f["criteria"] != "NoCriteria" and criteria is None) or (f["autocot"] == "AutoCoT" and steps is None) \
                    or (f["metrics"] == "Metrics" and questions.get(s.id) is None) \
                    or (f["reference"] == "Reference" and refs.get(s.id) is None):
                out.append(None)
                continue
            exs = tuple(e for e in examples if not (leave_out and e["id"] == s.id))
            out.append(StrategyInputs(criteria=criteria, steps=steps, examples=exs,
                                      questions=questions.get(s.id), reference=refs.get(s.id)))
        return out

    def globals_for(self, strategy: tuple[str, ...]) -> dict[str, Any]:
        """The global auxiliaries a judge keeps for ``strategy`` (criteria, steps, examples)."""
        f = as_dict(strategy)
        n = N_EXAMPLES[f["example"]]
        return {"criteria": None if f["criteria"] == "NoCriteria" else self.criteria(f["criteria"], f["scale"]),
                "steps": self.steps(f["criteria"], f["scale"]) if f["autocot"] == "AutoCoT" else None,
                "examples": self.examples(n) if n else []}


def count_generations(n_val: int, n_test: int) -> dict[str, int]:
    """Upper bound of auxiliary generation calls."""
    scales = len(FACTOR_VALUES["scale"])
    return {"criteria": scales, "steps": 2 * scales, "questions": n_val + n_test, "references": n_val + n_test}

"""Recognising a request: which step of which method asks and what it needs (:func:`recognise` returning a
:class:`Step`), by the JSON schema's title or, without a schema, by the fixed template texts in :data:`MARKERS`
(the one place to edit when a template's wording changes), with the helpers that read a prompt's sample,
criterion, scale or HPSS strategy (:func:`read_hpss_strategy`) and Active-Critic's planted criteria
(:data:`AC_DEFINITIONS`, :func:`ac_statement`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ... import structured
from ...llm.base import GenerationParams, Message
from ...methods.hpss.strategy import Strategy, read_strategy
from .world_parts import ASPECTS, TARGET, TASK

if TYPE_CHECKING:  # only annotations: world.py imports MARKERS from here
    from .world import World


# --------------------------------------------------------------------------- Recognisers
# A request with a JSON schema is recognised by the schema's title (judge_engine.structured), which names the
# kind of reply; the prompt is read only for what the title does not say (which sample, which criterion, which
# strategy). A request without a schema (a backend or a step that asks for free text) is recognised from fixed
# template text (judge_engine/prompts/*.txt): these markers are the one place to edit when a template's wording
# changes. Never details of a sample.

MARKERS = {
    # HPSS auxiliaries (hpss_gen_*.txt); the judge prompt itself is read by hpss.strategy.read_strategy
    "hpss_gen_criteria": "Write the evaluation criteria for",
    "hpss_gen_steps": "Write the evaluation steps",
    "hpss_gen_metrics": "Propose at most three short questions",
    "hpss_gen_reference": '{"reference":',
    "llm_criteria": "(self-generated criteria)",
    # criterion scoring shared by HD-Eval and HypoEval (criterion_paper.txt / criterion_sample_first.txt)
    "criterion": re.compile(r"Criterion to apply: ([^\n]+)\n([^\n]*)"),
    "scale_1_to_n": re.compile(r"from (\d+) to (\d+)"),
    # HD-Eval decomposition (hd_eval_decompose.txt: sentences; hd_eval_decompose_named.txt: named children)
    "hd_decompose": re.compile(r'The criterion to split up is "([^"\n]+)"'),
    "hd_k": re.compile(r"(?:Write|between \d+ and) (\d+) (?:different sentences|narrower criteria)"),
    # HypoEval (hypoeval_*.txt)
    "hypo_generate": "Your job is to write",
    "hypo_refine": "Hypotheses to improve:",
    "hypo_count": re.compile(r"exactly (\d+) (?:improved )?hypotheses"),
    "hypo_repetition": "Do these two say essentially the same thing",
    # Active-Critic (active_critic_*.txt)
    "ac_task_observe": "Write down observations about patterns",
    "ac_task_describe": "Name the kind of evaluation task",
    "ac_criteria_init": "which evaluation criteria the human annotators",
    "ac_criteria_observe": "Do the criteria match the dimensions",
    "ac_criteria_refine": "Improve the criteria using the new observations",
    "ac_criteria_list": re.compile(r"List \d+ evaluation criteria"),
    "ac_criteria_qualities": "do the annotators look at when they rate",
    "ac_mcse": "Multiple Evaluation Criteria:",
    "ac_ose": "Rate the overall quality of the Response",
    "ac_ose_scores": "Score Of Different Criteria:",
    "ac_ose_criteria": "Evaluation Criteria:",
    "ac_prior": "Observations so far:",
    "ac_weighted": "single digit",
    "ac_criteria_json": re.compile(r'"([^"\n]{2,40})"\s*:'),
    "ac_opener": re.compile(r'Start each sentence with "([^"\n]{3,60})"'),
    # the papers' external baselines: direct scoring (direct_score.txt) and G-Eval (geval_score.txt)
    "direct": re.compile(r"Aspect to rate: ([^\n]+)\n"),
    "direct_scale": re.compile(r"from (\d+) \(worst\) to (\d+) \(best\)"),
    "geval": re.compile(r"Evaluation criterion:\n([^\n(]+?) \((\d+)-(\d+)\):"),
    # what a prompt shows about an item: its human score (HypoEval's observations, Active-Critic's examples)
    "shown_score": re.compile(r"(?:Human Score:|gave this \w+ a score of) (-?\d+(?:\.\d+)?)"),
    # the evidence sentence this judge's Active-Critic observe step writes and its refine step reads
    "ac_evidence": re.compile(r"Scores rise with ([a-z ]+?) more than the current criteria show; "
                              r"([a-z ]+?) explains less of them"),
}


@dataclass(frozen=True)
class Step:
    """What a request asks, as recognised: the kind of step and what it needs to be answered."""

    kind: str
    info: dict[str, Any] = field(default_factory=dict)


def _schema_score_range(schema: dict[str, Any] | None) -> tuple[int, int] | None:
    try:
        enum = schema["properties"]["score"]["enum"]
        return int(min(enum)), int(max(enum))
    except (KeyError, TypeError, ValueError):
        return None


def _schema_items(schema: dict[str, Any] | None, key: str) -> tuple[int | None, int | None]:
    """(minItems, maxItems) of the schema's array property ``key`` (None where the schema says nothing)."""
    node = ((schema or {}).get("properties") or {}).get(key) or {}
    return node.get("minItems"), node.get("maxItems")


def _statement_opener(schema: dict[str, Any] | None, key: str) -> str:
    """The opener of a sentence-list schema's items ("A good summary"; "" when ``key`` holds no sentences)."""
    items = (((schema or {}).get("properties") or {}).get(key) or {}).get("items") or {}
    return _schema_opener(items.get("pattern", "")) if items.get("type") == "string" else ""


def recognise(world: World, messages: Sequence[Message], params: GenerationParams) -> Step:
    """The step a request belongs to: by the schema's title when it has one, else by the prompt's fixed text.

    Follow-up turns (a user message after an assistant reply) are recognised
    from the first user message and marked ``follow_up``; the last user
    message is kept as ``last``.
    """
    users = [m["content"] for m in messages if m["role"] == "user"]
    prompt = users[0] if users else ""
    schema = structured.schema_of(params.json_schema) if params.json_schema else None
    title = str(schema.get("title", "")) if schema else ""
    step = _by_title(world, prompt, title, schema) if title else _by_text(world, prompt)
    return Step(step.kind, {**step.info, "follow_up": len(users) > 1, "schema": schema,
                            "title": title, "last": users[-1] if users else ""})


def _by_title(world: World, prompt: str, title: str, schema: dict[str, Any]) -> Step:
    """Dispatch on the reply kind the request's schema names (the methods send a schema with every step)."""
    m = MARKERS
    if title == structured.HPSS_CRITERIA:
        return Step("hpss_criteria")
    if title == structured.GEVAL_STEPS:
        return Step("hpss_steps")
    if title == structured.HPSS_METRICS:
        return Step("hpss_metrics")
    if title == structured.HPSS_REFERENCE:
        return Step("hpss_reference")
    if title == structured.DECOMPOSITION:
        parent = m["hd_decompose"].search(prompt)
        low, high = _schema_items(schema, "children")
        return Step("hd_decompose", {"parent": parent.group(1) if parent else "", "k": int(high or 4),
                                     "min_k": int(low or 1)})
    if title == structured.YES_NO:
        return Step("hypo_repetition", {"hypotheses": world.hypothesis_in(prompt)})
    if title == structured.HYPOTHESES:
        _, n = _schema_items(schema, "hypotheses")
        return _hypotheses_step(world, prompt, int(n or 5))
    if title == structured.TASK_DESCRIPTION:
        return Step("ac_describe")
    if title == structured.CRITERIA:
        return _ac_criteria_step(world, prompt)
    if title == structured.EXPLAINED_SCORES:
        props = schema.get("properties") or {}
        index = world.index_of_output(prompt)
        demos = world.demo_indices(prompt, index)
        if "criteria" in props:  # McS-E: the schema lists exactly the criteria to score
            names = list((props["criteria"].get("properties") or {}))
            return Step("ac_mcse", {"index": index, "criteria": names, "demos": demos})
        return Step("ac_ose", {"index": index, "criteria": _ose_criteria(prompt), "demos": demos})
    if title == structured.SCORE:
        return _score_step(world, prompt, _schema_score_range(schema))
    return Step("unknown")


def _by_text(world: World, prompt: str) -> Step:
    """Free-text requests: recognised from the templates' fixed text (:data:`MARKERS`)."""
    m = MARKERS
    if m["ac_task_observe"] in prompt or m["ac_criteria_observe"] in prompt:
        prior = prompt.split(m["ac_prior"], 1)[1] if m["ac_prior"] in prompt else ""
        criteria = m["ac_criteria_observe"] in prompt
        return Step("ac_observe", {"prior": "(none yet)" not in prior and bool(prior.strip()),
                                   "current": _ac_current(world, prompt) if criteria else [],
                                   "shown": world.shown_scores(prompt) if criteria else []})
    if (m["ac_criteria_init"] in prompt or m["ac_criteria_refine"] in prompt or m["ac_criteria_list"].search(prompt)
            or m["ac_criteria_qualities"] in prompt):
        return _ac_criteria_step(world, prompt)
    if m["ac_task_describe"] in prompt:
        return Step("ac_describe")
    if m["hpss_gen_criteria"] in prompt:
        return Step("hpss_criteria")
    if m["hpss_gen_steps"] in prompt:
        return Step("hpss_steps")
    if m["hpss_gen_metrics"] in prompt:
        return Step("hpss_metrics")
    if m["hpss_gen_reference"] in prompt:
        return Step("hpss_reference")
    decompose = m["hd_decompose"].search(prompt)
    if decompose:
        k = m["hd_k"].search(prompt)
        return Step("hd_decompose", {"parent": decompose.group(1), "k": int(k.group(1)) if k else 4, "min_k": 1})
    if m["hypo_repetition"] in prompt:
        return Step("hypo_repetition", {"hypotheses": world.hypothesis_in(prompt)})
    if m["hypo_generate"] in prompt or m["hypo_refine"] in prompt:
        count = m["hypo_count"].search(prompt)
        return _hypotheses_step(world, prompt, int(count.group(1)) if count else 5)
    if m["ac_mcse"] in prompt:
        index = world.index_of_output(prompt)
        section = prompt.split(m["ac_mcse"], 1)[1].split("Output format", 1)[0]
        names = [line.split(":", 1)[0].strip() for line in section.strip().splitlines() if ":" in line]
        return Step("ac_mcse", {"index": index, "criteria": names, "demos": world.demo_indices(prompt, index)})
    return _score_step(world, prompt, None)


def _hypotheses_step(world: World, prompt: str, n: int) -> Step:
    refine = MARKERS["hypo_refine"] in prompt
    old = world.hypothesis_in(prompt.split(MARKERS["hypo_refine"], 1)[1]) if refine else []
    return Step("hypo_refine" if refine else "hypo_generate", {"n": n, "old": old,
                                                               "shown": world.shown_scores(prompt) if refine else []})


AC_DEFINITIONS = {
    "Logical Flow": "keeps a logical order, each sentence following from the one before.",
    "Topic Focus": "stays relevant to the article's main subject and leaves out side stories.",
    "Referent Clarity": "makes clear whom every pronoun and name points to.",
    "Sentence Variety": "is not repetitive, its sentences differing in length and shape.",
    "Headline Match": "clearly states in its first sentence what the article's headline announces.",
    "Word Count": "is concise enough to read at a glance but keeps every key fact.",
    "Connective Use": "uses words such as because, then and however where they are appropriate.",
    "Tone Match": "is faithful to the article's neutral register without adding opinion.",
}
"""What the simulated judge writes for each planted Active-Critic criterion: a definition that says more than
its name and names a quality, as the rubric checks require: the named criterion's definition in the paper's
form, and read after "A good summary" the statement of the sentence form (:func:`ac_statement`)."""


def ac_statement_body(name: str) -> str:
    """A planted criterion's statement body: its definition lower-cased, without the full stop."""
    return AC_DEFINITIONS.get(name, "Whether the summary gets this right.").lower().rstrip(".")


def ac_statement(name: str, opener: str) -> str:
    """A planted criterion as the statement the criteria steps ask for: ``"<opener> <body>."``."""
    return f"{opener} {ac_statement_body(name)}."


def _schema_opener(pattern: str) -> str:
    """The opener a statement pattern (:func:`judge_engine.structured.statement_pattern`) asks for."""
    literal = pattern.lstrip("^").split(" [a-z]", 1)[0]
    return re.sub(r"\[\\?(.)\]", r"\1", literal)


def _ac_current(world: World, prompt: str) -> list[str]:
    """The planted criteria a prompt lists (by quoted name or by definition)."""
    low = prompt.lower()
    return [n for n in world.ac_criteria if f'"{n}"' in prompt or ac_statement_body(n) in low]


def _ac_criteria_step(world: World, prompt: str) -> Step:
    m = MARKERS
    refine = m["ac_criteria_refine"] in prompt
    current = _ac_current(world, prompt) if refine else []
    opener = m["ac_opener"].search(prompt)
    evidence = m["ac_evidence"].search(prompt) if refine else None
    names = {n.lower(): n for n in world.ac_criteria}
    swap = (names.get(evidence.group(1)), names.get(evidence.group(2))) if evidence else None
    return Step("ac_criteria", {"current": current, "lines": bool(m["ac_criteria_list"].search(prompt)),
                                "qualities": m["ac_criteria_qualities"] in prompt,
                                "opener": opener.group(1) if opener else "", "evidence": swap})


def _ose_criteria(prompt: str) -> list[str]:
    """The criteria an OS-E prompt shows: the scored criteria's JSON keys, or AC-Coarse's ``Name: definition`` list."""
    m = MARKERS
    if m["ac_ose_scores"] in prompt:
        section = prompt.rsplit(m["ac_ose_scores"], 1)[1].split("Output format", 1)[0]
        return [n for n in m["ac_criteria_json"].findall(section) if n.lower() not in ("explanation", "score")]
    section = prompt.rsplit(m["ac_ose_criteria"], 1)[1].split("Output format", 1)[0] \
        if m["ac_ose_criteria"] in prompt else ""
    return [line.split(":", 1)[0].strip() for line in section.strip().splitlines() if ":" in line]


def _score_step(world: World, prompt: str, scale: tuple[int, int] | None) -> Step:
    """A score request (``{"score": N}`` or free text): Active-Critic's OS-E, an HPSS strategy, or a criterion."""
    m = MARKERS
    index = world.index_of_output(prompt)
    if m["ac_ose"] in prompt:  # the first turn of a weighted or retry follow-up
        return Step("ac_ose", {"index": index, "criteria": _ose_criteria(prompt),
                               "demos": world.demo_indices(prompt, index)})
    strategy = read_hpss_strategy(prompt)
    if strategy is not None:
        return Step("hpss_judge", {"index": index, "strategy": strategy})
    crit = m["criterion"].search(prompt)
    if crit:
        scale = scale or _scale_in(prompt)
        hyp = world.hypothesis_by_text(crit.group(2)) or world.hypothesis_by_text(prompt)
        if hyp is not None:
            return Step("hypo_score", {"index": index, "hypothesis": hyp, "scale": scale})
        node = world.node(f"{crit.group(1)} {crit.group(2)}")
        if node is not None:
            return Step("hd_score", {"index": index, "node": node, "scale": scale})
        return Step("unknown_criterion", {"index": index, "scale": scale, "name": crit.group(1)})
    direct, geval = m["direct"].search(prompt), m["geval"].search(prompt)
    if geval:
        return Step("plain_score", {"index": index, "aspect": geval.group(1).strip(),
                                    "scale": scale or (int(geval.group(2)), int(geval.group(3)))})
    if direct:
        found = m["direct_scale"].search(prompt)
        return Step("plain_score", {"index": index, "aspect": direct.group(1).strip(),
                                    "scale": scale or ((int(found.group(1)), int(found.group(2))) if found
                                                       else (1, 5))})
    return Step("unknown")


def _scale_in(prompt: str) -> tuple[int, int]:
    found = MARKERS["scale_1_to_n"].findall(prompt)
    return (int(found[-1][0]), int(found[-1][1])) if found else (1, 5)


def read_hpss_strategy(prompt: str) -> Strategy | None:
    """The HPSS strategy of a judge prompt (:func:`judge_engine.methods.hpss.strategy.read_strategy`, the exact inverse
    of the template builder), trying each aspect of the world; None when the prompt is no HPSS judge prompt."""
    for aspect in sorted(ASPECTS, key=lambda a: a.name != TARGET):
        try:
            return read_strategy(prompt, aspect, TASK)
        except ValueError:
            continue
    return None

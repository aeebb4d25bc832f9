"""The HPSS strategy space: 8 prompt factors and the one template builder.

A prompting strategy is one value per factor (paper Table 1, §3.2). The
values' identifiers and their order are the authors' code's: scale, criteria, CoT, AutoCoT, metrics, in-context
examples, reference, order. 5·3·3·2·2·4·3·6 = 12,960 strategies.

:func:`build_prompt` turns a strategy, a sample and the strategy's
auxiliaries into the judge prompt. It is a pure function: the same inputs
always give byte-identical text, so the engine's cache never pays twice for
a prompt two strategies share. The prompt has three components (paper §3.2):

* TD (task description): instruction, reference/dialectic sentence, scale and CoT format;
* ER (evaluation rule): criteria and AutoCoT steps;
* IC (input content): in-context examples, the input, metrics questions, reference, the judged output.

The wording is ours (``prompts/hpss_*.txt``); it carries the slots and the
instructions of the paper's templates, and asks for the rating as the JSON
object :func:`rating_schema` describes (the paper's ``[[rating]]`` marker is
still read by the free-text fallback). The chain-of-thought factor sets the
order of that object: explanation first (``Prefix``), rating first
(``Suffix``) or the rating alone (``Free``).

How a prompt reveals its strategy: every factor value leaves a fixed mark
in the text outside the fenced (judged) material, and :func:`read_strategy`
reads the 8 values back from a rendered prompt (the simulated judge of the
benchmarks uses it; the tests check it on every factor value).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ... import structured
from ...prompting import FENCE_CLOSE, FENCE_OPEN, TaskInfo, fence, load_template
from ...records import Aspect, Sample

FACTORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scale", ("3", "5", "10", "50", "100")),
    ("criteria", ("Human", "NoCriteria", "LLM")),
    ("cot", ("Prefix", "Suffix", "Free")),
    ("autocot", ("NoAutoCoT", "AutoCoT")),
    ("metrics", ("NoMetrics", "Metrics")),
    ("example", ("NoExample", "Example3", "Example5", "Example10")),
    ("reference", ("NoReference", "Reference", "Dialectic")),
    ("order", ("TEI", "TIE", "ITE", "IET", "EIT", "ETI")),
)
"""Factor name and its values (paper Table 1; value ids of the authors' ``factors.py``)."""

FACTOR_NAMES = tuple(name for name, _ in FACTORS)
FACTOR_VALUES = {name: values for name, values in FACTORS}

FACTOR_TITLES = {"scale": "Scoring scale", "criteria": "Evaluation criteria", "cot": "Chain-of-thought",
                 "autocot": "AutoCoT", "metrics": "Metrics", "example": "In-context examples",
                 "reference": "Reference", "order": "Component order"}
VALUE_TITLES = {
    "scale": {v: f"1-{v}" for v in FACTOR_VALUES["scale"]},
    "criteria": {"Human": "human-written", "NoCriteria": "none", "LLM": "self-generated"},
    "cot": {"Prefix": "explanation first", "Suffix": "rating first", "Free": "no explanation"},
    "autocot": {"NoAutoCoT": "off", "AutoCoT": "on"},
    "metrics": {"NoMetrics": "off", "Metrics": "on"},
    "example": {"NoExample": "0", "Example3": "3", "Example5": "5", "Example10": "10"},
    "reference": {"NoReference": "none", "Reference": "self-generated", "Dialectic": "dialectic"},
    "order": {o: " → ".join({"T": "task", "E": "rules", "I": "input"}[c] for c in o)
              for o in FACTOR_VALUES["order"]},
}

Strategy = tuple[str, ...]
"""One value per factor, in :data:`FACTORS` order."""

N_EXAMPLES = {"NoExample": 0, "Example3": 3, "Example5": 5, "Example10": 10}

EXPLANATION_ORDER = {"Prefix": "before", "Suffix": "after", "Free": None}
"""Where the rating reply's explanation goes for each chain-of-thought value (``None``: no explanation)."""

TD_INSTRUCTION = load_template("hpss_td_instruction")
TD_REFERENCE = load_template("hpss_td_reference")
TD_DIALECTIC = load_template("hpss_td_dialectic")
TD_COT = {"Prefix": load_template("hpss_td_cot_prefix"), "Suffix": load_template("hpss_td_cot_suffix"),
          "Free": load_template("hpss_td_cot_free")}
ER_RULE = load_template("hpss_er_rule")
ER_AUTOCOT = load_template("hpss_er_autocot")
IC_NOTE = load_template("hpss_ic_note")
IC_EXAMPLES = load_template("hpss_ic_examples")
IC_EXAMPLE = load_template("hpss_ic_example")
IC_METRICS = load_template("hpss_ic_metrics")


def all_strategies() -> list[Strategy]:
    """Every strategy, in product order over :data:`FACTORS` (12,960 of them)."""
    return [tuple(s) for s in itertools.product(*(values for _, values in FACTORS))]


def strategy_name(strategy: Strategy) -> str:
    """Canonical key, e.g. ``5_Human_Prefix_NoAutoCoT_NoMetrics_NoExample_NoReference_TEI`` (the authors' code's)."""
    return "_".join(strategy)


def parse_strategy(name: str) -> Strategy:
    """Inverse of :func:`strategy_name`; a ValueError names the first bad value."""
    parts = tuple(name.strip().split("_"))
    if len(parts) != len(FACTORS):
        raise ValueError(f"strategy {name!r} must have {len(FACTORS)} values joined by '_'")
    for (factor, values), value in zip(FACTORS, parts):
        if value not in values:
            raise ValueError(f"strategy {name!r}: {factor}={value!r} is not one of {list(values)}")
    return parts


def as_dict(strategy: Strategy) -> dict[str, str]:
    return dict(zip(FACTOR_NAMES, strategy))


def describe(strategy: Strategy) -> dict[str, str]:
    """Readable factor values, e.g. ``{"Scoring scale": "1-10", ...}``."""
    return {FACTOR_TITLES[f]: VALUE_TITLES[f][v] for f, v in zip(FACTOR_NAMES, strategy)}


def replace_value(strategy: Strategy, factor: int, value: str) -> Strategy:
    return strategy[:factor] + (value,) + strategy[factor + 1:]


def neighbours(strategy: Strategy) -> list[tuple[int, str]]:
    """(factor index, new value) of every one-factor change (20 of them)."""
    return [(i, v) for i, (_, values) in enumerate(FACTORS) for v in values if v != strategy[i]]


def base_strategy(aspect: Aspect, scale: str | None = None) -> Strategy:
    """The MT-Bench single-answer grading prompt, where the search starts (§3.3, App. F.2).

    Human criteria, explanation first, no AutoCoT/metrics/examples/reference,
    order task → rules → input, on the native scale: 3 when the human scale
    has three points (Topical-Chat), else 5; ``scale`` overrides it.
    """
    if scale is None:
        scale = "3" if aspect.high - aspect.low == 2 else "5"
    return (scale, "Human", "Prefix", "NoAutoCoT", "NoMetrics", "NoExample", "NoReference", "TEI")


def is_binary(aspect: Aspect) -> bool:
    """A yes/no aspect such as Topical-Chat groundedness (human range 0-1)."""
    return aspect.low == 0 and aspect.high == 1


def rating_range(scale: str, aspect: Aspect) -> tuple[int, int]:
    """(min, max) the judge answers on: 1..S; a 0/1 aspect gets 0..1 at scale 3 and 0..S otherwise."""
    s = int(scale)
    if is_binary(aspect):
        return 0, 1 if s == 3 else s
    return 1, s


def display_rating(level: float, scale: str, aspect: Aspect) -> str:
    """A human rating re-expressed on the strategy's scale (the rule of the authors' criteria files; App. D is silent).

    ``level`` is the normalised human score in [0, 1]. Scales 3 and 5 map to
    1 + p·(S-1); 10, 50 and 100 to max(1, p·S); a 0/1 aspect to p·max.
    """
    s = int(scale)
    if is_binary(aspect):
        value = level * rating_range(scale, aspect)[1]
    elif s in (3, 5):
        value = 1 + level * (s - 1)
    else:
        value = max(1.0, level * s)
    value = round(value, 2)
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def rating_schema(strategy: Strategy, aspect: Aspect, *, explanation_chars: int = 600) -> dict[str, Any]:
    """The JSON schema of the judge's rating reply under ``strategy``.

    The score is an enum of the strategy's rating range; the chain-of-thought
    factor fixes where the explanation goes (:data:`EXPLANATION_ORDER`), so
    the reply's shape follows the prompt's instruction. The explanation is at
    most ``explanation_chars`` characters.
    """
    low, high = rating_range(strategy[0], aspect)
    return structured.score_schema(low, high, explanation=EXPLANATION_ORDER[strategy[2]],
                                   explanation_max=explanation_chars)


def follow_up_schema(strategy: Strategy, aspect: Aspect) -> dict[str, Any]:
    """The follow-up turn's reply: the rating alone, so its digit comes within the first tokens."""
    low, high = rating_range(strategy[0], aspect)
    return structured.score_schema(low, high)


def normalised_level(score: float, aspect: Aspect) -> float:
    span = aspect.high - aspect.low
    return 0.0 if span == 0 else min(1.0, max(0.0, (score - aspect.low) / span))


@dataclass(frozen=True)
class StrategyInputs:
    """What a strategy's prompt needs besides the sample; None where the factor does not use it."""

    criteria: str | None = None
    """Criteria text (human-written or self-generated) when the criteria factor is not ``NoCriteria``."""
    steps: str | None = None
    """AutoCoT evaluation steps."""
    examples: tuple[dict[str, Any], ...] = ()
    """In-context examples: ``{"id", "input", "output", "context", "level"}`` (level in [0, 1])."""
    questions: str | None = None
    """Per-sample metrics questions."""
    reference: str | None = None
    """Self-generated reference for this sample."""


def _labels(task: TaskInfo) -> dict[str, str]:
    return {"input": task.input_label.lower(), "output": task.output_label.lower()}


def source_blocks(sample: Sample | dict[str, Any], task: TaskInfo) -> list[str]:
    """The fenced input (and context, if any) of a sample or an example dict."""
    get = sample.get if isinstance(sample, dict) else lambda k: getattr(sample, k)
    blocks = [fence(task.input_label, get("input"))]
    if get("context"):
        blocks.append(fence(task.context_label, get("context")))
    return blocks


def render_examples(examples: Sequence[dict[str, Any]], scale: str, aspect: Aspect, task: TaskInfo) -> str:
    """The in-context example list, lowest human rating first, ratings on the strategy's scale."""
    items = []
    for number, ex in enumerate(examples, start=1):
        block = "\n\n".join(source_blocks(ex, task) + [fence(task.output_label, ex["output"])])
        items.append(IC_EXAMPLE.render(number=number, sample_block=block,
                                       rating=display_rating(ex["level"], scale, aspect)))
    return "\n\n".join(items)


def build_prompt(strategy: Strategy, sample: Sample, aspect: Aspect, task: TaskInfo,
                 inputs: StrategyInputs) -> str:
    """The judge prompt of ``strategy`` for ``sample`` (the one template builder).

    Raises ValueError when the strategy needs an auxiliary that ``inputs``
    lacks: the caller records such a sample as missing instead.
    """
    f = as_dict(strategy)
    low, high = rating_range(f["scale"], aspect)
    words = {**_labels(task), "aspect": aspect.name, "task": task.task}
    order = f["order"]
    # TD before IC: the input is "below"; TD after IC: "above" (the wording of Table 11's instruction)
    position = "below" if order.index("T") < order.index("I") else "above"

    td = [TD_INSTRUCTION.render(position=position, output=words["output"], aspect=aspect.name, task=task.task)]
    if f["reference"] == "Reference":
        td.append(TD_REFERENCE.render(input=words["input"], output=words["output"]))
    elif f["reference"] == "Dialectic":
        td.append(TD_DIALECTIC.render(input=words["input"], output=words["output"]))
    td.append(TD_COT[f["cot"]].render(min=low, max=high))

    criteria = ""
    if f["criteria"] != "NoCriteria":
        if not inputs.criteria:
            raise ValueError("strategy needs criteria text")
        criteria = " " + inputs.criteria.strip()
    er = [ER_RULE.render(output=words["output"], aspect=aspect.name, criteria=criteria)]
    if f["autocot"] == "AutoCoT":
        if not inputs.steps:
            raise ValueError("strategy needs AutoCoT steps")
        er.append(ER_AUTOCOT.render(steps=inputs.steps.strip()))

    ic = [IC_NOTE.render()]
    if N_EXAMPLES[f["example"]] and inputs.examples:
        ic.append(IC_EXAMPLES.render(examples=render_examples(inputs.examples, f["scale"], aspect, task),
                                     output=words["output"], aspect=aspect.name))
    ic.extend(source_blocks(sample, task))
    if f["metrics"] == "Metrics":
        if not inputs.questions:
            raise ValueError("strategy needs metrics questions")
        ic.append(IC_METRICS.render(output=words["output"], questions=inputs.questions.strip()))
    if f["reference"] == "Reference":
        if not inputs.reference:
            raise ValueError("strategy needs a self-generated reference")
        ic.append(fence(f"Reference {task.output_label}", inputs.reference.strip()))
    ic.append(fence(task.output_label, sample.output))

    components = {"T": " ".join(td), "E": "\n".join(er), "I": "\n\n".join(ic)}
    return "\n\n".join(components[c] for c in order)


# --------------------------------------------------------------------------- reading a prompt back

_T_MARK = "[Instruction]\nYou are an impartial judge."
_E_MARK = "Evaluation rules:\n1. Judge the "
_COT_MARKS = {"Prefix": "Start with a brief explanation", "Suffix": "Give your rating first",
              "Free": "Give only your rating"}
_SCALE_MARK = re.compile(r"a whole number from (\d+) to (\d+)")
_EXAMPLE_MARK = re.compile(r"^# Example \d+$", re.MULTILINE)


def _strip_fenced(prompt: str) -> str:
    """``prompt`` with the material between fence markers removed (a judged text cannot close its fence)."""
    opening = re.escape(FENCE_OPEN).replace(re.escape("{label}"), r"(?P<label>[^<>\n]+)")
    closing = re.escape(FENCE_CLOSE).replace(re.escape("{label}"), r"(?P=label)")
    return re.sub(opening + r"\n.*?\n" + closing, "<<<fenced>>>", prompt, flags=re.DOTALL)


def _examples_value(count: int) -> str:
    """The example factor value behind ``count`` shown examples.

    The judged sample is left out of its own examples during validation (one
    fewer shown), so 2-3 shown mean ``Example3``, 4-5 ``Example5``, 6-10
    ``Example10``. A pool smaller than the set asks for shows fewer; then the
    count identifies the value only up to that (keep pools of 11 or more).
    """
    if count == 0:
        return "NoExample"
    return "Example3" if count <= 3 else "Example5" if count <= 5 else "Example10"


def read_strategy(prompt: str, aspect: Aspect, task: TaskInfo, *, human_criteria: str | None = None) -> Strategy:
    """The strategy that rendered ``prompt`` (the inverse of :func:`build_prompt`).

    Reads only the text outside the fenced judged material, so a judged text
    cannot pass for a factor's mark. ``human_criteria`` is the human-written
    criteria text (default: the aspect's definition, as the auxiliaries use
    it): criteria text equal to it means ``Human``, other text ``LLM``, none
    ``NoCriteria``. See :func:`_examples_value` for the example count.
    Raises ValueError naming the first mark it cannot find.
    """
    text = _strip_fenced(prompt)
    where = {"T": text.find(_T_MARK), "E": text.find(_E_MARK), "I": text.find(IC_NOTE.render())}
    missing = [k for k, v in where.items() if v < 0]
    if missing:
        raise ValueError(f"not an HPSS prompt: no {'/'.join(missing)} component found")
    order = "".join(sorted(where, key=where.get))
    scale_match = _SCALE_MARK.search(text)
    if scale_match is None:
        raise ValueError("not an HPSS prompt: no rating range found")
    low, high = int(scale_match.group(1)), int(scale_match.group(2))
    scale = "3" if is_binary(aspect) and (low, high) == (0, 1) else str(high)
    if scale not in FACTOR_VALUES["scale"]:
        raise ValueError(f"rating range {low}-{high} matches no scale value")
    cot = next((v for v, mark in _COT_MARKS.items() if mark in text), None)
    if cot is None:
        raise ValueError("not an HPSS prompt: no chain-of-thought instruction found")
    rule = _E_MARK + f"{task.output_label.lower()} on its {aspect.name}."
    start = text.find(rule)
    end = text.find("\n2. Stay as objective as you can.", start)
    if start < 0 or end < 0:
        raise ValueError("not an HPSS prompt: the evaluation rule does not name this aspect")
    criteria_text = text[start + len(rule):end].strip()
    human = (human_criteria or aspect.definition or aspect.name).strip()
    criteria = "NoCriteria" if not criteria_text else "Human" if criteria_text == human else "LLM"
    autocot = "AutoCoT" if "\nEvaluation steps:\n" in text else "NoAutoCoT"
    metrics = "Metrics" if f"[Questions about the {task.output_label.lower()}]" in text else "NoMetrics"
    words = {"input": task.input_label.lower(), "output": task.output_label.lower()}
    reference = ("Reference" if TD_REFERENCE.render(**words) in text
                 else "Dialectic" if TD_DIALECTIC.render(**words) in text else "NoReference")
    example = _examples_value(len(_EXAMPLE_MARK.findall(text)))
    return (scale, criteria, cot, autocot, metrics, example, reference, order)

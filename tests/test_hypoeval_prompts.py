"""What a capable model reads in HypoEval's generation, refinement and repetition prompts (issue 50 item 5): no
label is made plural by adding "s" ("summarys", "storys") and no "a" goes before a vowel ("a utterance"), on the
seven built-in datasets and on labels a person gives; and the lengths asked for, read and checked agree."""

import re

import pytest

import judge_engine.methods.hypoeval as he
from judge_engine.data.benchmarks import BENCHMARKS
from judge_engine.methods.hypoeval.agents import GENERATE_TEMPLATE, REFINE_TEMPLATE
from judge_engine.methods.hypoeval.generation import REPETITION_TEMPLATE
from judge_engine.methods.hypoeval.replies import HYPOTHESIS_MAX_CHARS, hypotheses_schema, read_hypotheses
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect
from judge_engine.rubric_checks import MAX_ENTRY_CHARS, check_entry

LABELS = [(spec.task, spec.output_label, spec.aspects[0]) for spec in BENCHMARKS.values()]
LABELS += [("essay writing", label, Aspect("clarity", 1, 5, "How clear it is.")) for label in
           ("Analysis", "Essay", "User reply", "Hypothesis", "Zusammenfassung", "Answer")]


def prompts(task: str, label: str, aspect: Aspect, form: str) -> list[str]:
    settings = he.HypoEvalSettings.from_params(he.HypoEval().get_params())
    ctx = he.Context(llm=None, aspect=aspect, task=TaskInfo(task, "Source", label), settings=settings,
                     log=lambda k, p: None, progress=lambda s: None, form=form)
    fields = ctx.generation_fields(5)
    common = {k: v for k, v in ctx.common_fields().items() if k != "aspect_definition"}
    return [GENERATE_TEMPLATE.render(**fields, num_hypotheses=5, basis="the scored texts above", evidence="E"),
            REFINE_TEMPLATE.render(**fields, num_hypotheses=5, basis="the scored texts above", evidence="E",
                                   hypotheses="hypothesis1. H"),
            REPETITION_TEMPLATE.render(**common, first="A", second="B")]


def test_the_seven_built_in_datasets_are_all_here():
    assert len(BENCHMARKS) == 7


@pytest.mark.parametrize("task, label, aspect", LABELS, ids=[label for _, label, _ in LABELS])
@pytest.mark.parametrize("form", ["paper", "sentence"])
def test_no_label_is_pluralised_by_a_letter_nor_given_a_wrong_article(task, label, aspect, form):
    for prompt in prompts(task, label, aspect, form):
        low = label.lower()
        assert f"{low}s" not in prompt.lower() and f"{low}es" not in prompt.lower(), prompt
        assert not re.search(r"\ba [aeiou]", prompt, re.I) or not re.search(rf"\ba {re.escape(low)}", prompt), prompt
        assert not re.search(r"\{[a-z_]+\}", prompt), prompt  # no slot left unfilled


def test_a_hypothesis_as_long_as_the_schema_allows_is_read_and_not_refused_for_its_length():
    assert HYPOTHESIS_MAX_CHARS == MAX_ENTRY_CHARS
    schema = hypotheses_schema("", 3)
    assert schema["properties"]["hypotheses"]["items"]["maxLength"] == MAX_ENTRY_CHARS
    bands = ("A summary whose sentences follow one another in a logical order and connect with clear transitions "
             "will receive a score of 5. ")
    long = (bands * 20)[:1400].rsplit(" ", 1)[0] + "."
    assert 1000 < len(long) <= MAX_ENTRY_CHARS
    [read], _, _ = read_hypotheses('{"hypotheses": ["' + long + '"]}', 3)
    assert read == long and check_entry(long, kind="hypothesis", max_repeats=10 ** 9).rule != "too_long"

"""The rubric checks' word lists hold no built-in dataset's words; a run's own names come from its metadata."""

from __future__ import annotations

import pytest

from judge_engine import rubric_checks as rc
from judge_engine import rubric_words
from judge_engine.data.benchmarks import BENCHMARKS

LISTS = {name: value for name, value in vars(rubric_words).items()
         if name.isupper() and isinstance(value, frozenset)}


def builtin_words() -> set[str]:
    """Every built-in dataset's aspect names and output noun (and the noun's plural), lower case."""
    words = set()
    for spec in BENCHMARKS.values():
        noun = spec.output_label.lower()
        words |= {noun, noun + "s", noun[:-1] + "ies" if noun.endswith("y") else noun + "es"}
        words |= {a.name.lower() for a in spec.aspects}
    return words


def test_no_word_list_holds_a_built_in_datasets_aspect_name_or_output_noun():
    # issue 50: the checks read them from the run (its aspect and output label), never from a list
    assert len(LISTS) >= 10 and "summary" in builtin_words() and "groundedness" in builtin_words()
    found = {name: sorted(words & builtin_words()) for name, words in LISTS.items() if words & builtin_words()}
    assert found == {}


@pytest.mark.parametrize("label, opener", [("Summary", "A good summary"), ("Gedicht", "A good gedicht"),
                                           ("Tweet", "A good tweet")])
def test_the_judged_texts_own_name_is_no_content_word_whatever_it_is(label, opener):
    # praise of the judged text by its own name says nothing: the name comes from the run, not a list
    said = rc.check_statement(f"{opener} is a great {label.lower()}.", opener=opener, output=label,
                              topics=(label, "coherence", ""))
    assert (said.ok, said.rule) == (False, "empty")
    assert rc.content_words(f"The {label.lower()}s keep the main point.", label) == {"keep", "main", "point"}
    # a sub-criterion that only names the judged text beside its parent's words adds nothing to the parent
    name, definition = f"Coherent {label.lower()}", f"The {label.lower()} has coherence throughout."
    child = rc.check_criterion(name, definition, parent=("coherence", ""), output=label, topics=(label, "coherence"))
    assert (child.ok, child.rule) == (False, "restates_parent")
    assert rc.check_criterion(name, definition, parent=("coherence", "")).ok, "without the label its name is a word"


def test_without_the_run_s_label_a_benchmark_noun_is_an_ordinary_word():
    # what the lists no longer know: "summary" names something unless the run says it is the judged text
    assert "summary" in rc.content_words("The summary keeps the main point.")
    assert "summary" not in rc.content_words("The summary keeps the main point.", "Summary")

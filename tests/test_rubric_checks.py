"""Generated rubric text is checked before use: copies, near-duplicates, empty, repetitive and over-long entries."""

import pytest

from judge_engine.rubric_checks import check_entries, check_entry, copied_share, rejected_summary

DIALOGUE = ("hiccups are a holdover from early evolution when early land animals had both gills and lungs, "
            "so the reflex that closes the windpipe still fires")


def test_a_copy_of_a_judged_text_is_rejected_as_copy():
    copied = "it was a result of early evolution when early land animals had both gills and lungs"
    check = check_entry(copied, kind="hypothesis", shown=[DIALOGUE])
    assert not check.ok and check.rule == "copy" and "copied" in check.reason
    assert copied_share(copied, [DIALOGUE]) >= 0.6


def test_a_near_duplicate_of_an_accepted_entry_is_rejected():
    first = "A high score when the response is clear and answers the question directly."
    second = "A high score when the response is clear and answers the question directly!"
    checks = check_entries([first, second], kind="hypothesis")
    assert checks[0].ok and not checks[1].ok and checks[1].rule == "near_duplicate"


@pytest.mark.parametrize("text, rule", [
    ("", "empty"),
    ("  ...  ", "empty"),
    ("Clear.", "empty"),
    (" ".join(f"quality{i}" for i in range(120)), "too_long"),
])
def test_empty_and_over_long_entries_are_rejected(text, rule):
    check = check_entry(text, kind="criterion")
    assert not check.ok and check.rule == rule


def test_an_explanation_that_repeats_one_line_is_rejected():
    text = "\n".join(["* **Reflection of the evaluation criteria**:"] * 14)
    check = check_entry(text, kind="explanation")
    assert not check.ok and check.rule == "repetitive" and "14 times" in check.reason


def test_content_that_names_no_quality_is_not_a_hypothesis_and_a_story_is_not_a_task():
    assert check_entry("The 2008 election was a pivotal moment in history for many voters",
                       kind="hypothesis").rule == "no_quality"
    assert check_entry("The 2008 election was a pivotal moment in history for many voters",
                       kind="task_description").rule == "no_quality"
    assert check_entry("Rate how well each summary covers the key facts of the article",
                       kind="task_description").ok


def test_a_rubric_that_describes_a_quality_passes_and_nothing_is_counted():
    checks = check_entries(["Responses that stay on the topic of the conversation score higher.",
                            "A reply with factual errors about the fact given should get a low score."],
                           kind="hypothesis", shown=[DIALOGUE])
    assert all(c.ok for c in checks) and rejected_summary(checks) == {}


def test_rejections_are_counted_by_rule():
    checks = check_entries(["", DIALOGUE, "Clear answers score higher than vague ones here."],
                           kind="hypothesis", shown=[DIALOGUE])
    assert rejected_summary(checks) == {"empty": 1, "copy": 1}
    assert checks[1].to_dict()["reason"].endswith("copied from a text the prompt showed")


def test_a_name_taken_from_a_shown_text_is_content_not_a_quality():
    from judge_engine.rubric_checks import name_from_shown

    shown = ["inform(name='chow',food=comfort food,goodformeal=dinner)", "Chow serves comfort food for dinner ."]
    topics = ("informativeness", "utterance")
    assert name_from_shown("Chow", shown, topics) and name_from_shown("Dinner", shown, topics)
    assert name_from_shown("Comfort food", shown, topics)
    # a quality, a facet of the aspect, or a name not found in any one shown text passes
    assert not name_from_shown("Clarity", shown, topics) and not name_from_shown("Informativeness", shown, topics)
    assert not name_from_shown("Slot coverage", shown, topics) and not name_from_shown("Chow", [], topics)

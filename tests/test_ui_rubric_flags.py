"""pages/ui/rubric_flags.py, which every method page shares: the rubric-check flags beside an entry."""

from __future__ import annotations

from pages.ui.messages import escape_markdown
from pages.ui.rubric_flags import flag_caption, flag_text, flags_by

RATERS = {"rule": "about_raters", "reason": "describes the raters, not a quality of the judged text"}
FIELD = {"rule": "field_name", "reason": "named after a field of the prompt ('**Score** [x](y)')"}


def test_flag_text_lists_reason_and_rule_with_spaces_and_nothing_for_no_flag():
    assert flag_text([RATERS, FIELD]) == ("describes the raters, not a quality of the judged text (about raters); "
                                          "named after a field of the prompt ('**Score** [x](y)') (field name)")
    assert flag_text([]) == flag_text(None) == ""
    # a flag without a reason (or a rule) still says what it has; the same flag twice is said once
    assert flag_text([{"rule": "meta"}, {"rule": "", "reason": "odd"}, RATERS, RATERS]) == (
        "meta; odd; describes the raters, not a quality of the judged text (about raters)")


def test_flag_caption_is_escaped_markdown_because_a_reason_quotes_generated_text():
    caption = flag_caption([FIELD])
    assert caption == escape_markdown("Flagged: named after a field of the prompt ('**Score** [x](y)') (field name)")
    assert "**" not in caption and "[x]" not in caption, "no emphasis, no link from the model's text"
    assert caption.replace("\\", "") == "Flagged: named after a field of the prompt ('**Score** [x](y)') (field name)"
    assert flag_caption([]) == flag_caption(None) == ""


def test_flags_by_gathers_each_entrys_flags_under_its_text_or_name():
    entries = [{"text": "Fluency: reads well.", "name": "Fluency", "flags": [RATERS]},
               {"text": "Fluency: reads well.", "name": "Fluency", "flags": [FIELD]},
               {"text": "Other: text.", "name": "Other"}]
    assert flags_by(entries) == {"Fluency: reads well.": [RATERS, FIELD], "Other: text.": []}
    assert flags_by(entries, "name")["Fluency"] == [RATERS, FIELD]
    assert flags_by(None) == {}

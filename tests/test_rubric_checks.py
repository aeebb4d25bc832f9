"""Generated rubric text is checked before use: the shape rules refuse (copies, near-duplicates, empty,
degenerate repetition, over-long entries, template slots), the vocabulary rules only flag."""

import pytest

from judge_engine.rubric_checks import RubricCheck, check_entries, check_entry, copied_share, rejected_summary


def flags(check: RubricCheck) -> set[str]:
    """The flag rules raised on a used entry (a refused entry has none)."""
    return {f.rule for f in check.flags}


def flagged(check: RubricCheck, rule: str) -> bool:
    """The entry is used, with the flag ``rule`` and a reason for it."""
    return check.ok and rule in flags(check) and all(f.reason for f in check.flags)

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
    (" ".join(f"quality{i}" for i in range(200)), "too_long"),
])
def test_empty_and_over_long_entries_are_rejected(text, rule):
    check = check_entry(text, kind="criterion")
    assert not check.ok and check.rule == rule


def test_an_explanation_that_repeats_one_line_is_rejected():
    text = "\n".join(["* **Reflection of the evaluation criteria**:"] * 14)
    check = check_entry(text, kind="explanation")
    assert not check.ok and check.rule == "repetitive" and "14 times" in check.reason


def test_content_that_names_no_quality_is_flagged_not_refused():
    story = "The 2008 election was a pivotal moment in history for many voters"
    assert flagged(check_entry(story, kind="hypothesis"), "no_quality")
    assert flagged(check_entry(story, kind="task_description"), "no_quality")
    task = check_entry("Rate how well each output covers the key facts of its source", kind="task_description")
    assert task.ok and not task.flags


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


# ---- junk that named a quality word and passed (issue #23) ---------------------------------------------------------
# Verbatim from SmolLM2-135M runs (/work/notes/alignment.db: HD-Eval trees of runs 18 and 29, Active-Critic criteria of
# run 20, HypoEval hypotheses of runs 11, 12 and 25, an Active-Critic task description of run 20), plus constructed
# cases of the same shapes. Every one of them passed the checks before the rules below.

from judge_engine.methods.active_critic import check_criteria
from judge_engine.methods.hd_eval import check_children
from judge_engine.rubric_checks import check_criterion

TC_PARENTS = {
    "naturalness": "Whether the response reads as naturally written.",
    "coherence": "Whether the response is a valid continuation of the conversation history.",
    "engagingness": "Whether the response is dull or interesting.",
    "groundedness": "How well the response uses the fact it is conditioned on.",
    "understandability": "Whether the response is understandable given the conversation.",
}

JUNK_CHILDREN = [  # (parent, name, definition, rule)
    ("groundedness", "A", "A is a good response", "placeholder"),
    ("naturalness", "...", "This is a sentence that conveys the idea of this utterance: fluent and natural-sounding.",
     "placeholder"),
    ("engagingness", "[criterion name]", "An interesting response keeps the user engaged.", "placeholder"),
    ("naturalness", "Naturally written", "A natural response reads as naturally written, a good one.",
     "restates_parent"),
    ("naturalness", "Good naturalness", "The response has good naturalness and is natural.", "circular"),
    ("coherence", "Coherent continuation", "A coherent response is a valid continuation.", "restates_parent"),
    ("groundedness", "Factual accuracy", "Factual accuracy.", "circular"),
    ("understandability", "Understandability", "A good response is easy to follow for the other speaker.",
     "restates_parent"),
    ("naturalness", "Natural", "The words are the ones a person would choose in a chat.", "restates_parent"),
    ("understandability", "Vivid and engaging personal voice", "early land animals had both gills and lungs",
     "copied_definition"),
]


@pytest.mark.parametrize("parent, name, definition, rule", JUNK_CHILDREN)
def test_junk_children_with_quality_words_are_refused_with_their_rule(parent, name, definition, rule):
    child = {"name": name, "definition": definition}
    topics = ("Response", parent, TC_PARENTS[parent])
    kept, refused = check_children([child], shown=[DIALOGUE], topics=topics, parent=(parent, TC_PARENTS[parent]))
    assert kept == [] and [r["rule"] for r in refused] == [rule], refused
    assert refused[0]["reason"]


@pytest.mark.parametrize("parent, name, definition", [
    ("coherence", "The answer", "The answer is a good response that follows the dialogue history and stays on topic."),
    ("naturalness", "The", "The response is coherent, engaging, and uses the given fact as a starting point for the "
                           "conversation."),
    ("engagingness", "Criterion 2", "An interesting response keeps the user engaged."),
    ("engagingness", "Examples", "Concrete examples from the conversation make the response engaging."),
])
def test_a_name_of_english_template_words_is_flagged_not_refused(parent, name, definition):
    # issue 50: these were refused through English word lists, which also refused "Examples" and passed German
    # "Beispiele"; a list may only raise a flag
    # (under a parent, a name of function words only adds no word to it: restates_parent, tested above)
    assert flagged(check_criterion(name, definition, shown=[DIALOGUE], topics=("Response", parent)), "template_name")
    assert not check_criterion("Beispiele", "Konkrete Beispiele aus dem Gespräch machen die Antwort lebendig.").flags


JUNK_ENTRIES = [  # (kind, text, shown, rule): refused
    ("hypothesis", "A summary scores high on coherence when when, and low when when when", (), "stutter"),
    ("hypothesis", "A story scores high on relevance when when when when", (), "stutter"),
    ("hypothesis", "Chow serves comfort food, which is good for dinner.",
     ("Chow serves comfort food and is good for dinner .",), "copy"),
    ("hypothesis", "1. Chow serves comfort food, which is good for dinner",
     ("Chow serves comfort food and is good for dinner .",), "copy"),
    ("task_description", "The evaluation task is [task_description] is based on making money.", (), "placeholder"),
    ("hypothesis", "Responses rated [ ] are better than responses rated [ ].", (), "placeholder"),
    ("hypothesis", "A utterance scores high on informativeness when ..., and low when ...", (), "placeholder"),
]


@pytest.mark.parametrize("kind, text, shown, rule", JUNK_ENTRIES)
def test_junk_entries_are_refused_with_their_rule(kind, text, shown, rule):
    check = check_entry(text, kind=kind, shown=list(shown))
    assert not check.ok and check.rule == rule and check.reason, check


JUNK_FLAGGED = [  # (kind, text, flag): used, with the flag shown
    ("hypothesis", "The first hypothesis is: A test results in a score of 5.5, which is higher than the previous one, "
                   "but it does not contain any information about the next one.", "meta"),
    ("criterion", "Providing constructive feedback: Provide me with constructive feedback on grammar.",
     "first_person"),
]


@pytest.mark.parametrize("kind, text, flag", JUNK_FLAGGED)
def test_vocabulary_rules_flag_an_entry_instead_of_refusing_it(kind, text, flag):
    check = check_entry(text, kind=kind)
    assert flagged(check, flag), check
    assert check.to_dict()["flags"][0]["reason"]


def test_active_critic_criteria_that_repeat_their_name_are_refused_one_that_speaks_is_flagged():
    criteria = {"Providing constructive feedback": "Provide me with constructive feedback on grammar.",
                "Good coherence": "Good coherence.",
                "Completeness": "All information of the dialogue act appears in the utterance."}
    checked = check_criteria(criteria, shown=[])
    assert list(checked.kept) == ["Providing constructive feedback", "Completeness"]
    assert [(r["name"], r["rule"]) for r in checked.refused] == [("Good coherence", "circular")]
    assert [(f["name"], [x["rule"] for x in f["flags"]]) for f in checked.flagged] == \
        [("Providing constructive feedback", ["first_person"])]


def test_criteria_named_after_the_prompts_fields_or_reporting_a_score_are_flagged():
    # what SmolLM2-135M gave as Active-Critic criteria on Topical-Chat (2026-11-25)
    criteria = {"human": "Human Rating of 100.00",
                "CONTENT": "The document consists of various structured data such as words, phrases, and sentences.",
                "Annotator score": "A score of 4.9 out of 10 in their evaluation task.",
                "Groundedness": "The response uses the fact it was given, and a score of 5 means it uses all of it.",
                "Brevity": "At most 3/4 of the length of the source, a good ratio for a summary."}
    checked = check_criteria(criteria, shown=[])
    assert list(checked.kept) == list(criteria) and checked.refused == []
    doubts = {f["name"]: {x["rule"] for x in f["flags"]} for f in checked.flagged}
    # a score point a rubric defines ("a score of 5 means") and a ratio are not a reported score
    assert "Groundedness" not in doubts and "Brevity" not in doubts
    assert {"field_name", "reports_score"} <= doubts["human"] and "field_name" in doubts["CONTENT"]
    assert {"field_name", "reports_score"} <= doubts["Annotator score"]
    # a real rubric's "Content" with a definition of what is checked is not a template slot
    assert check_criterion("Content", "The summary covers the main points of the article.").ok
    assert flagged(check_criterion("children", "The story is judged on coherence, complexity and surprise."),
                   "field_name")
    check = check_criterion("Clarity", "The summary was rated 4.9 out of 10 for its clarity.")
    assert flagged(check, "reports_score") and "4.9 out of 10" in check.flags[0].reason
    assert flagged(check_criterion("Sensitivity", "5. 92% of the responses are easy to understand."), "reports_score")
    assert flagged(check_criterion("Ease", "92% of the responses are easy to understand."), "reports_score")
    assert not check_criterion("Brevity", "At most 50% of the source length, so the summary is concise.").flags


# ---- good criteria must still pass: paraphrases of the HD-Eval paper's decompositions (Tables 10-12), in our words --

GOOD_CHILDREN = [  # (parent, parent definition, name, definition)
    ("naturalness", TC_PARENTS["naturalness"], "Grammar and syntax",
     "Follows grammatical rules, with no awkward or broken constructions."),
    ("naturalness", TC_PARENTS["naturalness"], "Spelling and punctuation",
     "Words are spelled correctly and punctuation is used properly, with no typos."),
    ("naturalness", TC_PARENTS["naturalness"], "Word choice",
     "Picks appropriate, varied words and does not misuse vocabulary."),
    ("coherence", TC_PARENTS["coherence"], "Topic relevance", "Stays on the subject the conversation is about."),
    ("coherence", TC_PARENTS["coherence"], "Logical flow",
     "Ideas follow one another logically, with no sudden jumps in topic."),
    ("coherence", TC_PARENTS["coherence"], "Context consistency", "Agrees with what was said earlier in the dialogue."),
    ("engagingness", TC_PARENTS["engagingness"], "Content richness",
     "Offers substantial, useful content rather than generic or vague remarks."),
    ("engagingness", TC_PARENTS["engagingness"], "Emotional engagement",
     "Connects with the user's feelings without inappropriate remarks."),
    ("engagingness", TC_PARENTS["engagingness"], "User involvement",
     "The response draws the user in instead of being one-sided."),
    ("groundedness", TC_PARENTS["groundedness"], "Factual accuracy",
     "States nothing false or misleading about the given fact."),
    ("groundedness", TC_PARENTS["groundedness"], "Use of the fact", "Brings the given fact into the reply where it fits."),
    ("groundedness", TC_PARENTS["groundedness"], "World knowledge",
     "Shows knowledge of the world, with no statement that contradicts it."),
    ("coherence", "The collective quality of all sentences: how well they fit together.", "Sentence ordering",
     "The sentences of the summary come in a natural, logical order."),
    ("coherence", "The collective quality of all sentences: how well they fit together.", "Discourse structure",
     "Connectives such as however or therefore mark how the sentences relate."),
    ("coherence", "The collective quality of all sentences: how well they fit together.", "Topic focus",
     "The summary keeps to one consistent topic throughout."),
    ("consistency", "Factual alignment between the summary and the source article.", "Entity consistency",
     "People, places and other entities are named the same way across sentences."),
    ("consistency", "Factual alignment between the summary and the source article.", "Temporal consistency",
     "Tense and aspect of events stay consistent across sentences."),
    ("consistency", "Factual alignment between the summary and the source article.", "Factuality",
     "Keeps the facts of the article without introducing errors or distortions."),
    ("relevance", "Selection of the important content from the source.", "Coverage",
     "Includes most of the important information of the article."),
    ("relevance", "Selection of the important content from the source.", "Redundancy",
     "Avoids repeating information already stated or implied."),
    ("fluency", "The quality of individual sentences.", "Readability",
     "Easy for a person to read and understand, without awkward expressions."),
    ("fluency", "The quality of individual sentences.", "Punctuation", "Uses appropriate punctuation."),
    ("fluency", "The quality of individual sentences.", "Length and form",
     "Of a suitable length, neither too brief nor padded."),
    ("informativeness", "How much of the dialogue act's information the utterance conveys.", "Data completeness",
     "Share of the dialogue act's slots that the utterance mentions."),
    ("informativeness", "How much of the dialogue act's information the utterance conveys.", "Data correctness",
     "Slot values are stated as given in the dialogue act."),
    ("informativeness", "How much of the dialogue act's information the utterance conveys.", "Data redundancy",
     "No repeated or unneeded information."),
    ("naturalness", "Whether the utterance could have been said by a native speaker.", "Fluency",
     "The utterance flows smoothly and sounds natural."),
    ("naturalness", "Whether the utterance could have been said by a native speaker.", "Clarity",
     "Language is simple and direct."),
]


def test_good_sub_criteria_pass_every_rule():
    for parent, parent_definition, name, definition in GOOD_CHILDREN:
        child = {"name": name, "definition": definition}
        kept, refused = check_children([child], shown=[DIALOGUE, parent_definition],
                                       topics=("Response", parent, parent_definition),
                                       parent=(parent, parent_definition))
        assert kept == [child], (name, refused)


GOOD_HYPOTHESES = [
    "Responses that stay on the topic of the conversation score higher.",
    "A reply with factual errors about the fact given should get a low score.",
    "A summary that leaves out the main event of the article gets a low relevance score.",
    "Summaries whose sentences contradict each other score low on coherence.",
    "An utterance that mentions every slot of the dialogue act is more informative.",
    "Stories with a clear beginning, middle and end are rated higher on coherence.",
    'A response that only says "I don\'t know, my friend" is rated as less engaging.',
    "Responses that repeat the user's words without adding anything are dull and score low.",
]


def test_good_hypotheses_and_criteria_pass_including_a_quoted_first_person():
    checks = check_entries(GOOD_HYPOTHESES, kind="hypothesis", shown=[DIALOGUE])
    assert all(c.ok for c in checks), [c for c in checks if not c.ok]
    checked = check_criteria({"Accuracy": "The utterance states every slot value correctly.",
                              "Completeness": "All information of the dialogue act appears in the utterance.",
                              "Fluency": "The utterance reads smoothly, like something a person would say."},
                             shown=[DIALOGUE])
    assert len(checked.kept) == 3 and checked.refused == []
    assert check_criterion("Clarity", "The response is easy to follow.").ok
    # one doubled word can be English; a number is content ("at most 50 words" is not its parent's "at most 20")
    assert check_entry("A reply that says that that fact is wrong scores low.", kind="hypothesis").ok
    assert check_criterion("Short enough", "A good summary has at most 50 words.",
                           parent=("length", "A good summary has at most 20 words.")).ok


def test_a_child_named_like_a_node_already_in_the_tree_is_a_near_duplicate():
    # SmolLM2 proposed the other layer-1 aspects as children ("Naturalness" under informativeness)
    children = [{"name": "Naturalness", "definition": "The utterance sounds like a person said it in a restaurant."},
                {"name": "Slot coverage", "definition": "Every slot of the dialogue act appears in the utterance."},
                {"name": "slot  coverage!", "definition": "The utterance mentions each value it was given."}]
    kept, refused = check_children(children, topics=("Utterance", "informativeness"),
                                   parent=("informativeness", "Whether the utterance conveys the dialogue act."),
                                   taken=["informativeness", "naturalness", "overall"])
    assert [c["name"] for c in kept] == ["Slot coverage"]
    assert [r["rule"] for r in refused] == ["near_duplicate", "near_duplicate"]
    assert "naturalness" in refused[0]["reason"] and "Slot coverage" in refused[1]["reason"]


def test_an_active_critic_criterion_naming_what_is_judged_is_not_flagged_without_a_quality_word():
    criteria = {"Topic Focus": "The summary stays on the article's main subject and leaves out side stories.",
                "Connective Use": "Words such as because, then and however link the sentences where they belong.",
                "Weather": "It rained on monday in the city."}
    topics = ("Summary", "coherence", "The summary should build from sentence to sentence to a coherent body.")
    assert len(check_criteria(criteria, shown=[]).flagged) == 3, "the quality vocabulary alone flags all three"
    checked = check_criteria(criteria, shown=[], topics=topics)
    assert list(checked.kept) == list(criteria)
    assert [(f["name"], [x["rule"] for x in f["flags"]]) for f in checked.flagged] == [("Weather", ["no_quality"])]
    # the definition must name what is judged, not only the name (SmolLM2 on SF-RES informativeness)
    junk = {"Able to convey information": "The most expensive food on earth is a sea food."}
    topics = ("Utterance", "informativeness", "Whether the utterance conveys all the information in the dialogue act.")
    assert len(check_criteria(junk, shown=[], topics=topics).flagged) == 1


@pytest.mark.parametrize("text, rule", [
    # SmolLM2's selected HypoEval traits on Topical-Chat understandability (2026-11-25)
    ("Expertise: The experts are very skilled at understanding what makes up the content that they create.",
     "about_raters"),
    ("Understanding: The experts rate understandability, which is a measure of how easy it is for people to "
     "comprehend the content they provide.", "about_raters"),
    ("Clarity: The experts check that every sentence is clear and easy to follow.", ""),
    ("Completeness: the experts check that nothing in the dialogue act is left out.", ""),
    ("Politeness: The response thanks the human for the question.", "")])
def test_a_hypothesis_about_the_raters_is_flagged_one_about_what_they_check_is_not(text, rule):
    check = check_entry(text, kind="hypothesis")
    assert check.ok and ("about_raters" in flags(check)) == bool(rule), check


# criteria written as statements ("A good summary ..."), the shape SmolLM2 could fill (structured.statement_*)

from judge_engine import rubric_checks as rc  # noqa: E402

OPENER = "A good summary"
COHERENCE = ("coherence", "the summary is well organised and reads logically from start to end")
TOPICS = ("Summary", *COHERENCE)


def test_a_statement_that_names_a_facet_passes_and_gets_a_short_name_from_its_words():
    text = "A good summary is one that has a clear structure and a logical flow of events."
    assert rc.check_statement(text, opener=OPENER, parent=COHERENCE, topics=TOPICS).ok
    assert rc.statement_name(text, OPENER) == "Has a clear structure and a\u2026"
    assert rc.statement_name("A good summary is consistent with the article's content.", OPENER) == \
        "Consistent with the article's content"
    assert rc.statement_name("A good summary is highly relevant, it keeps the key facts.", OPENER) == \
        "Highly relevant"


@pytest.mark.parametrize("text, rule", [
    # SmolLM2-135M's own statements, 2026-11-25
    ("A good response is a great one.", "empty"),
    ("A good summary has high coherence.", "restates_parent"),
])
def test_a_statement_that_says_nothing_of_a_facet_is_refused(text, rule):
    opener = "A good response" if "response" in text else OPENER
    check = rc.check_statement(text, opener=opener, parent=COHERENCE, topics=TOPICS)
    assert (check.ok, check.rule) == (False, rule)


@pytest.mark.parametrize("text, rule", [
    ("A good summary is worth a million, so choose one.", "no_quality"),
    ("A good summary does not exist, such as saying this summary to a machine.", "no_quality"),
    ("A good summary is rated 4.9 out of 10 by the experts in summaries.", "reports_score"),
])
def test_a_statement_naming_no_facet_is_flagged(text, rule):
    assert flagged(rc.check_statement(text, opener=OPENER, parent=COHERENCE, topics=TOPICS), rule)


def test_a_statement_copied_from_a_shown_text_is_refused_though_the_opener_dilutes_the_share():
    shown = ["The mayor opened the new bridge over the river on a sunny Monday morning."]
    text = "A good summary says the mayor opened the new bridge over the river on a sunny Monday morning."
    check = rc.check_statement(text, opener=OPENER, shown=shown, topics=TOPICS)
    assert (check.ok, check.rule) == (False, "copy")


@pytest.mark.parametrize("text, opener", [
    # SmolLM2-135M's Active-Critic criteria on SF-RES and Topical-Chat, 2026-11-25: praise and the frame's
    # "should" were their only quality words
    ("A good utterance description is well documented by the following points.", "A good utterance"),
    ("A good response has to do something in terms of giving a value, and sometimes that is a good one.",
     "A good response"),
    ("A good response should provide guidance for others.", "A good response"),
])
def test_praise_and_the_frames_should_name_no_quality_in_a_statement(text, opener):
    topics = (opener.split()[-1], "informativeness", "conveys all the information in the dialogue act")
    assert flagged(rc.check_statement(text, opener=opener, topics=topics), "no_quality")
    assert not rc.check_statement(text.replace(".", ", with accurate facts."), opener=opener).flags


@pytest.mark.parametrize("text", [
    # SmolLM2-135M's HD-Eval children and Active-Critic criteria on Topical-Chat, 2026-11-25
    "A good response is one that adheres to the specified criteria of coherence, which can be measured using a "
    "scoring system.",
    "A good response is a response that meets the criteria of high overall quality.",
    "A good response should have a high understandability of the target language, but it should score low on the "
    "understanding scale.",
    # and a HypoEval hypothesis on Topical-Chat
    "A good response is one that can be broken down into five specific hypotheses, not two different sentences.",
])
def test_a_statement_about_the_scoring_is_flagged(text):
    check = rc.check_statement(text, opener="A good response", parent=("coherence", "stays on topic"),
                               topics=("Response", "coherence", "stays on topic"))
    assert flagged(check, "about_scoring")
    assert rc.check_statement("A good response stays on the topic the dialogue set.", opener="A good response",
                              topics=("Response", "coherence", "stays on topic")).ok

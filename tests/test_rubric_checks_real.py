"""The rubric checks measured on rubric text people and strong models wrote, and on the embedded model's junk.

The positives are ``../shared/data/rubrics/real_rubrics.jsonl`` and the papers' examples in our words
(``tests/data/rubric_paper_examples.jsonl``); the negatives are labelled generations of the embedded model
(``tests/data/rubric_negatives.jsonl``). ``python -m judge_engine.bench rubric-checks`` prints the same tally.
"""

import pytest

from judge_engine import rubric_checks as rc
from judge_engine.bench import rubric_checks as bench
from judge_engine.data import default_data_dir

REAL = default_data_dir() / "rubrics" / "real_rubrics.jsonl"
needs_real = pytest.mark.skipif(not REAL.exists(), reason=f"{REAL} is not here (../shared beside the clone)")


@pytest.fixture(scope="module")
def tally():
    return bench.tally(bench.labelled_set())


@needs_real
def test_at_most_one_percent_of_real_rubric_text_is_refused_on_either_path(tally):
    assert tally.positives >= 400 and tally.statement_checked >= 380
    refused = sum(tally.positives_refused.values())
    assert refused <= bench.MAX_POSITIVES_REFUSED * tally.positives, tally.refused_examples
    said = sum(tally.statement_refused.values())
    assert said <= bench.MAX_POSITIVES_REFUSED * tally.statement_checked, tally.refused_examples


@needs_real
def test_every_copy_near_duplicate_placeholder_and_degenerate_repetition_is_still_refused(tally):
    assert tally.must_refuse >= 20
    assert tally.must_refuse_missed == [], [(e.label, e.text) for e in tally.must_refuse_missed]
    labels = {e.label for e in bench.labelled_set() if e.must_refuse}
    assert {"copy", "near_duplicate", "placeholder", "repetitive"} <= labels


@needs_real
def test_a_rule_that_refused_real_rubrics_before_only_flags_now(tally):
    # no_quality refused 141 of the 337 published entries at d3fcec3; it may still flag them
    assert tally.positives_refused["no_quality"] == 0 and tally.positives_flagged["no_quality"] > 0
    assert set(tally.positives_refused) <= set(rc.REFUSING_RULES)


def test_the_benchmark_reports_the_target_and_each_rule(tmp_path):
    if not REAL.exists():
        pytest.skip(f"{REAL} is not here")
    doc = bench.run()
    assert doc["summary"]["target_met"] is True
    assert {r["rule"] for r in doc["rows"]} == set(rc.REFUSING_RULES) | set(rc.FLAG_RULES)
    only_flags = set(rc.FLAG_RULES) - set(rc.REFUSING_RULES)  # model_check refuses and flags (issue 65)
    assert {r["action"] for r in doc["rows"] if r["rule"] in only_flags} == {"flags"}


BANDS = ("A summary that links its ideas with clear transitions will likely receive a score of 4 or 5, as the "
         "reader can follow it. A summary that jumps between unrelated points will receive a score of 1 or 2. "
         "A summary in between will receive a score of 3.")


def test_a_hypothesis_that_states_score_bands_is_a_rubric_on_both_paths():
    check = rc.check_entry(BANDS, kind="hypothesis")
    assert check.ok and not check.flags
    said = rc.check_statement(BANDS, opener="A good summary")
    assert said.ok and not {"about_scoring", "reports_score"} & {f.rule for f in said.flags}


def test_a_criterion_phrased_as_a_question_is_a_criterion():
    question = "Does the response plan a two-day trip that fits the traveller's budget and stated preferences?"
    assert rc.check_entry(question, kind="criterion").ok


FOREIGN = [
    "Die Zusammenfassung gibt die Kernaussagen des Artikels vollständig und ohne Widersprüche wieder.",
    "Wortwahl: Die Antwort verwendet treffende und abwechslungsreiche Wörter, die zum Gespräch passen.",
    "Le résumé reprend fidèlement les idées principales de l'article, sans rien inventer.",
    "Cohérence : les phrases s'enchaînent de façon logique et restent sur le même sujet.",
    "摘要是否准确地概括了文章的主要内容，并且没有添加原文中没有的信息？",
    "连贯性：回复与对话历史衔接自然，不偏离话题。",
]


@pytest.mark.parametrize("text", FOREIGN)
def test_a_criterion_in_another_language_is_neither_refused_nor_flagged_for_english_words(text):
    for check in (rc.check_entry(text, kind="criterion"), rc.check_entry(text, kind="hypothesis"),
                  rc.check_statement(text, opener="A good summary")):
        assert check.ok and not check.flags, check
    name, sep, definition = text.partition(":") if ":" in text else text.partition("：")
    if sep:
        assert rc.check_criterion(name, definition).ok


def test_a_copy_in_another_language_is_still_a_copy():
    shown = ["Der Bürgermeister eröffnete am Montag die neue Brücke über den Fluss nach drei Jahren Bauzeit."]
    copied = "Der Bürgermeister eröffnete am Montag die neue Brücke über den Fluss."
    assert rc.check_entry(copied, kind="criterion", shown=shown).rule == "copy"
    assert rc.check_entry("连贯性 连贯性 连贯性 连贯性 连贯性 连贯性 连贯性 连贯性", kind="criterion").rule == "repetitive"


def test_no_word_list_holds_a_benchmarks_nouns():
    lists = {name: value for name, value in vars(rc).items() if isinstance(value, frozenset)}
    assert lists, "the module's word lists"
    for name, words in lists.items():
        assert not {"restaurant", "hotel", "article", "news", "dialogue"} & words, name


def test_a_sub_criterion_that_restates_its_aspects_definition_restates_its_parent_it_copies_no_judged_text():
    # the embedded model's child of Topical-Chat coherence was refused as a "copy" of the aspect's definition
    from judge_engine.methods.hd_eval import check_children

    definition = "How well the response follows on from the dialogue history and stays on topic."
    child = {"name": "Follows the dialogue history", "statement": True,
             "definition": "A good response is one that follows the dialogue history and stays on topic."}
    kept, refused = check_children([child], shown=["hiccups are a holdover from early evolution"],
                                   existing=[f"coherence: {definition}"], topics=("Response", "coherence", definition),
                                   parent=("coherence", definition), opener="A good response")
    assert kept == [] and [r["rule"] for r in refused] == ["restates_parent"] and "coherence" in refused[0]["reason"]
    facet = {**child, "name": "Answers the last turn", "definition": "A good response answers the question the "
                                                                      "other speaker asked in the last turn."}
    [kept] = check_children([facet], existing=[f"coherence: {definition}"], topics=("Response", "coherence", definition),
                            parent=("coherence", definition), opener="A good response")[0]
    assert kept["definition"] == facet["definition"]


def test_node_ids_are_cut_at_whole_words():
    from judge_engine.methods.hd_eval import add_children

    tree = {"nodes": [{"id": "coherence", "name": "coherence", "parent": None}]}
    ids = add_children(tree, "coherence", [{"name": "A fine example of coherence that will always", "definition": "x"},
                                           {"name": "Kohärenz der Zusammenfassung", "definition": "y"}])
    assert ids == ["coherence/a-fine-example-of", "coherence/kohärenz-der"]


@pytest.mark.parametrize("text, problem", [
    ("", None),
    ("\x00\x01binary\x00" * 20, "binary"),
    ("A rubric line. " * 3000, "characters long"),
])
def test_a_pasted_rubric_entry_that_is_binary_or_megabytes_long_is_refused_and_nothing_changes(store, text, problem):
    from judge_engine import curation

    owner = curation.owner("hypoeval", 1)
    curation.seed(store, owner, [{"key": "h1", "name": "h1", "definition": "Clear summaries score higher."}])
    before = curation.items(store, owner)
    if problem is None:  # an empty definition is a person's choice; an empty name is refused elsewhere
        curation.save(store, owner, "h1", expected_version=1, actor="ann", definition=text)
        return
    with pytest.raises(ValueError, match=problem):
        curation.save(store, owner, "h1", expected_version=1, actor="ann", definition=text)
    with pytest.raises(ValueError, match=problem):
        curation.add(store, owner, "h2", name="h2", definition=text, actor="ann")
    assert curation.items(store, owner) == before


def test_curated_hypotheses_that_are_binary_or_megabytes_long_are_refused_with_one_message():
    from judge_engine.methods import get_method

    for bad, problem in (["\x00\x01\x02 not text \x00"], "binary"), (["A rubric line. " * 3000], "characters long"):
        with pytest.raises(ValueError, match=problem) as err:
            get_method("hypoeval", {"hypotheses": bad})._validate_params()
        assert len(str(err.value)) < 300, "the message names the problem, not the whole paste"


def test_a_missing_rubric_file_is_one_message_naming_it(tmp_path):
    with pytest.raises(ValueError, match="cannot read .*real_rubrics.jsonl"):
        bench.labelled_set(tmp_path)
    bad = tmp_path / "rubrics"
    bad.mkdir()
    (bad / "real_rubrics.jsonl").write_bytes(b"\x00\xff not json\n")
    with pytest.raises(ValueError, match="is not JSON lines"):
        bench.labelled_set(tmp_path)


# ---- issue 50: junk of the kinds a capable model's stub wrote, and real entries in other languages ----------------

def test_every_template_slot_and_score_list_of_the_junk_set_is_refused_and_95_percent_of_it_is_caught():
    entries = [e for e in bench.labelled_set() if e.source == bench.JUNK_ORIGIN]
    assert len(entries) >= 40
    verdicts = [(e, bench.check(e)) for e in entries]
    slots = [(e.text, v.rule) for e, v in verdicts if e.label in ("template_slot", "score_list")]
    assert len(slots) >= 15 and all(rule in ("placeholder", "score_list") for _, rule in slots), slots
    caught = sum(not v.ok or bool(v.flags) for _, v in verdicts)
    assert caught >= bench.MIN_JUNK_CAUGHT * len(entries), [e.text for e, v in verdicts if v.ok and not v.flags]


def test_rubric_entries_in_nineteen_languages_are_neither_refused_nor_flagged():
    entries = [e for e in bench.labelled_set() if e.positive and e.source.startswith("written for issue 50")]
    assert len({e.source for e in entries}) >= 19, "languages"
    for e in entries:
        verdict = bench.check(e)
        assert verdict.ok and not verdict.flags, (e.text, verdict)
        assert rc.check_statement(e.text, opener=bench.STATEMENT_OPENER).ok, e.text


def test_the_benchmark_counts_refused_flagged_and_passed_per_kind():
    if not REAL.exists():
        pytest.skip(f"{REAL} is not here")
    by_label = bench.run()["summary"]["by_label"]
    assert by_label["template_slot"] == {"refused": 12} and by_label["score_list"] == {"refused": 7}
    assert by_label["positive"].get("refused", 0) == 0 and by_label["positive"]["passed"] > 400


@pytest.mark.parametrize("text, rule", [
    ("[ ] [ ] [ ]", "empty"),
    ("1 2 3 4 5 6 7 8 9 10", "score_list"),
    ("0" * 3_000_000, "too_long"),
    ("ႠႡႢ ႣႤႥ ႦႧႨ ႩႪႫ [ႬႭႮ]", "placeholder"),
])
def test_a_reply_of_brackets_digits_megabytes_or_an_unlisted_script_gets_a_reason(text, rule):
    check = rc.check_entry(text, kind="hypothesis")
    assert (check.ok, check.rule) == (False, rule) and check.reason and len(check.reason) < 200


def test_i_e_is_no_speaker_and_consideration_is_not_consistency():
    check = rc.check_entry("A summary that states its main claim early, i.e. in its first sentence, scores higher.",
                           kind="hypothesis")
    assert check.ok and "first_person" not in {f.rule for f in check.flags}
    child = rc.check_criterion("Consideration", "The response weighs what the other speaker said before answering.",
                               parent=("consistency", "Whether the response agrees with what was said before."))
    assert child.ok, child
    assert not rc.check_criterion("Consistency", "A consistent response.", parent=("consistency", "agrees")).ok


def test_reports_score_is_raised_on_a_hypothesis_and_in_any_language():
    assert "reports_score" in {f.rule for f in rc.check_entry("Summaries of this set average 3.4 on coherence.",
                                                              kind="hypothesis").flags}
    assert "reports_score" in {f.rule for f in rc.check_entry("Die Zusammenfassungen erreichen im Schnitt 3.4 Punkte.",
                                                              kind="hypothesis").flags}

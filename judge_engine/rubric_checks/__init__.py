"""Checks on rubric text a model generated, before a judge uses it.

Structured replies make a model's output parse; they do not make it a
rubric. Every method that generates rubric content (HypoEval hypotheses,
Active-Critic task descriptions, criteria and explanations, HD-Eval
sub-criteria, HPSS auxiliaries) runs it through :func:`check_entry` (or
:func:`check_criterion` / :func:`check_statement` for its named and
sentence forms).

Two kinds of rule, because a refusal costs the user a criterion and a
wrong refusal is invisible to them:

**Refusals** are rules about the *shape* of the text, which hold for any
language and any rubric style, and which refuse at most 1% of published
rubric text (``python -m judge_engine.bench rubric-checks`` measures this on
``../shared/data/rubrics/`` and the papers' examples; tests hold it). A
refused entry is kept with its reason, counted and shown, and a person may
restore it; it is never silently used or silently dropped.

``too_long``
    More than ``max_chars`` characters (checked first: a reply megabytes
    long is refused without reading it).
``empty``
    Fewer than ``min_words`` words once blank space and punctuation are
    removed (an ideograph counts as a word).
``score_list``
    Mostly digits and punctuation ("1. 5 2. 4 3. 3 4. 2 5. 1"): under half
    of its characters letters, or half of its words numbers.
``repetitive``
    Degenerate repetition: one line or one run of four words said at least
    ``max_repeats`` times *and* making up most of the text. A rubric that
    walks through its score bands repeats "will receive a score" once per
    band, which is a rubric.
``copy``
    Most of its word trigrams appear in one text the prompt showed (a judged
    output, its source, an example), or every naming word of it does.
``near_duplicate``
    Nearly the same words as an entry accepted before it (Jaccard >= 0.8).
``placeholder``
    A template slot left in, in any language: a bracketed span in capitals
    ("[ADJECTIVE]", "[SCORE]") or a bare phrase in brackets
    (:func:`template_slot`: "[criterion name]", "<definition of criterion
    1>", "[Adjektiv]"), "[ ]", "<<<", "{name}", an ellipsis for a clause;
    or, for a named criterion, a name with no word of two letters ("A",
    "...").
``stutter``
    The same word twice in a row, at least twice: a generation that lost
    its way.
``circular``
    A named criterion whose definition only repeats its name.
``copied_definition``
    A named criterion whose definition alone is mostly copied from a shown
    text (its name's words would otherwise dilute ``copy``).
``restates_parent``
    A sub-criterion that adds no word to its parent's name and definition.
``empty`` (statements)
    A sentence-form criterion whose body is praise only.
``instructs_evaluator``
    An order to the evaluator outside quotes, in eight languages (:mod:`.addressed`): set the rubric aside, a
    fake system message, a new role, an answer fixed in advance, one score for every item (issue 65).
``refusal``
    A model declining to write the entry or speaking as a model, in eight languages.
``same_score``
    Not a text rule: a method refuses an entry that gave every training item the same score
    (:mod:`judge_engine.rubric_evidence`); the name is here so pages and summaries count it with the others.

**Flags** are rules that read English vocabulary or a phrasing habit. They
are right often enough to tell a person where to look, and wrong on too
much real rubric text to refuse: an entry with flags is used, its flags
are shown beside it on the curation pages and counted in the run summary,
and selection by training correlation decides whether it stays.

``no_quality``
    An English entry that names no quality, judgement or score (or, for a
    task description, nothing about the evaluation).
``restates_aspect``
    A hypothesis or criterion that names nothing beyond the aspect's own
    words (its name, definition and the judged text's label, as the dataset
    or person gave them; any language) and praise ("The summary is
    coherent." under coherence).
``about_raters``
    About the raters, not about the judged text.
``about_scoring``
    About the scoring procedure rather than the text. Score bands ("will
    receive a score of 4 or 5") are how rubrics speak and are not flagged.
``first_person``
    Speaks as a person ("Provide me with feedback"), quotes aside.
``meta``
    A hypothesis that talks about hypotheses.
``reports_score``
    States a measured score ("4.9 out of 10", a decimal in any language)
    instead of what is checked; every kind but an explanation.
``field_name``
    A criterion named after a field of the prompt ("Human", "Score").
``quotes_instruction``, ``hedges``, ``contradicts``, ``keyword_list``
    An order to the evaluator inside quotes (a rubric about prompt injection may quote one), a hedge that commits
    to nothing, two clauses saying one thing and its opposite, a list of bare words (:mod:`.addressed`; issue
    65). ``about_scoring`` and ``about_raters`` are raised there too, in eight languages.
``template_name``
    A criterion named with English template words only ("Criterion 2",
    "The answer", "Examples"): refused before issue 50, a flag since no
    refusal rests on one language's word list.

The vocabulary rules run only on English text (a share of English function
words): a criterion in German, French or Chinese is not flagged for naming
no English quality word.

The package, one job a module: :mod:`.records` (the verdict records and the rule names), :mod:`.tokens`
(how a text is read: words in any script, content words, English, quality words), :mod:`.shape` (the
refusing rules of one entry), :mod:`.flags` (the vocabulary flags), :mod:`.entries` (:func:`check_entry`,
the entry point), :mod:`.addressed` (what an entry says to the evaluator, eight languages), :mod:`.criteria` (named criteria) and :mod:`.statements` (criteria written as sentences).
Every public name is imported from here, as when this was one module.
"""

from __future__ import annotations

# The word lists were importable from here when this was one module; they stay so.
from ..rubric_words import (CHECK_VERBS, COMMON_WORDS, ENGLISH_MARKERS, FIELD_WORDS, FIRST_PERSON,  # noqa: F401
                            FRAME_WORDS, HTML_TAGS, MIN_SHARED, OUTPUT_NOUNS, PRAISE_WORDS, QUALITY_WORDS, RATERS,
                            RATING_WORDS, SCORING_WORDS, STOP_WORDS, TASK_WORDS, TEMPLATE_WORDS, VAGUE_WORDS, beyond,
                            covered, known, related)
from .criteria import check_criterion, field_name, named_nothing, template_name
from .entries import check_entries, check_entry
from .flags import ABBREVIATIONS, QUOTED, REPORTED_SCORE, lift_for_topic, reported_score, restates_aspect
from .records import FLAG_RULES, KINDS, REFUSING_RULES, RubricCheck, RubricFlag, flag_summary, rejected_summary
from .shape import (BRACKETED, MAX_COPIED, MAX_ENTRY_CHARS, MAX_REDUNDANCY, MIN_LETTERS, SENTENCE_MARKS, SLOT,
                    SLOT_WORDS, copied_share, letter_share, redundancy, repetition, restated_text, stutter,
                    template_slot)
from .statements import FILLER, check_statement, is_statement, short_name, statement_body, statement_name
from .tokens import (IDEOGRAPH, MARKS, MIN_ENGLISH_SHARE, SHORT_TEXT, WORD, content_words, is_english, jaccard,
                     name_key, output_words, quality_word, shares_topic)

__all__ = [
    "ABBREVIATIONS", "BRACKETED", "FILLER", "FLAG_RULES", "IDEOGRAPH", "KINDS", "MARKS", "MAX_COPIED",
    "MAX_ENTRY_CHARS", "MAX_REDUNDANCY", "MIN_ENGLISH_SHARE", "MIN_LETTERS", "QUOTED", "REFUSING_RULES",
    "REPORTED_SCORE", "RubricCheck", "RubricFlag", "SENTENCE_MARKS", "SHORT_TEXT", "SLOT", "SLOT_WORDS", "WORD",
    "check_criterion", "check_entries", "check_entry", "check_statement", "content_words", "copied_share",
    "field_name", "flag_summary", "is_english", "is_statement", "jaccard", "letter_share", "lift_for_topic",
    "name_key", "named_nothing", "output_words", "quality_word", "redundancy", "rejected_summary", "repetition",
    "reported_score", "restated_text", "restates_aspect", "shares_topic", "short_name", "statement_body",
    "statement_name", "stutter", "template_name", "template_slot"]

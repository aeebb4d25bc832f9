"""The flags of one entry: rules that read English vocabulary or a phrasing habit, and so only point a
person at an entry that is used anyway.

Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..rubric_words import (CHECK_VERBS, FIRST_PERSON, FRAME_WORDS, PRAISE_WORDS, QUALITY_WORDS, RATERS,
                            RATING_WORDS, TASK_WORDS, VAGUE_WORDS, beyond)
from ..rubric_lexicon import FUNCTION_CHARACTERS, GRADE_WORDS
from .records import RubricCheck, RubricFlag
from .tokens import (IDEOGRAPH, _is_output_noun, _words, content_words, is_english, output_words, quality_word,
                     shares_topic)


KANA = re.compile(r"[\u3040-\u30ff]")
"""One kana: in a Japanese entry, a particle or an ending, not a word that names something."""

ABBREVIATIONS = re.compile(r"\b(?:i\.\s?e|e\.\s?g)\.", re.I)
""""i.e." and "e.g.": their "i" is no speaker."""

INDEX = re.compile(r"(?<=[\w\])])\[[^\]\n]{0,20}\]")
"""An index of code ("a[i]", "t[i][j]")."""

QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<![a-z])'[^']*'(?![a-z])", re.I)
"""Quoted spans: a rubric may quote what a text says ("I don't know")."""

REPORTED_SCORE = re.compile(r"\b\d+(?:\.\d+)?\s+out\s+of\s+\d+\b|\b\d+\.\s?\d+\b"
                            r"|\b\d+(?:\.\d+)?\s?% of (?:the )?(?:responses|outputs|summaries|items|texts|utterances"
                            r"|stories|replies|answers)\b", re.IGNORECASE)
"""A measured score: a decimal, "4.9 out of 10", or a share of the judged texts."""


def reported_score(text: str, kind: str) -> RubricFlag | None:
    """``reports_score`` on an entry of any kind but an explanation (which gives the score it explains): a
    decimal reads the same in any language; "4.9 out of 10" and "92% of the responses" are English."""
    reported = REPORTED_SCORE.search(text or "") if kind != "explanation" else None
    if not reported:
        return None
    return RubricFlag("reports_score", f"states a score ({reported.group(0)!r}) instead of saying what is checked")


def restates_aspect(text: str, topics: Sequence[str]) -> RubricFlag | None:
    """``restates_aspect``: the entry names nothing beyond ``topics`` (the aspect's name and definition and the
    judged text's label, in the words the dataset or the person gave), praise and function words.

    The topics are compared in any language ("Kohärenz" under "Kohärenz");
    the praise and function words are English lists, so an entry in another
    language is flagged only when every word of it is a word of the aspect.
    """
    # a word of three letters or fewer is most often a function word, in any language written with spaces;
    # kana and a few characters are the particles of Japanese and Chinese
    named = {w for w in content_words(text) if not w.isdigit() and (len(w) > 3 or IDEOGRAPH.fullmatch(w))
             and w not in FUNCTION_CHARACTERS and not KANA.fullmatch(w)}
    given = {w for t in topics for w in _words(t) if len(w) > 1 or IDEOGRAPH.fullmatch(w)}
    left = beyond(named, given, PRAISE_WORDS, VAGUE_WORDS, FRAME_WORDS, GRADE_WORDS)
    # Arabic joins prefixes to a word ("الترابط" / "مترابط"): a word holding a given word of four letters is it
    if {w for w in left if not any(len(g) >= 4 and g.removeprefix("ال") in w for g in given)}:
        return None
    what = f"the aspect's own words ({', '.join(t for t in topics[:2] if t)[:60]})" if topics else "praise"
    return RubricFlag("restates_aspect", f"names nothing beyond {what}")


def _vocabulary_flags(text: str, words: Sequence[str], kind: str, output: str = "") -> tuple[RubricFlag, ...]:
    """The flags of a single entry: ``reports_score`` in any language, the vocabulary flags on English text
    only."""
    reported = reported_score(text, kind)
    if kind not in ("hypothesis", "criterion", "task_description") or not is_english(words):
        return (reported,) if reported else ()
    return _english_flags(text, words, kind, output) + ((reported,) if reported else ())


def _english_flags(text: str, words: Sequence[str], kind: str, output: str = "") -> tuple[RubricFlag, ...]:
    vocabulary = set(words)
    flags = []
    if kind == "task_description":
        if not vocabulary & TASK_WORDS:
            flags.append(RubricFlag("no_quality", "says nothing about the evaluation task"))
        return tuple(flags)
    # an index "a[i]" is code, its "i" no speaker
    speaker = sorted(set(_words(ABBREVIATIONS.sub(" ", INDEX.sub(" ", QUOTED.sub(" ", text))))) & FIRST_PERSON)
    if speaker:
        flags.append(RubricFlag("first_person", f"speaks as a person ({', '.join(speaker)}) instead of describing "
                                                "the text"))
    if kind == "hypothesis" and {"hypothesis", "hypotheses"} & vocabulary:
        flags.append(RubricFlag("meta", "talks about a hypothesis instead of stating one"))
    # a sentence about raters that names the judged text and a quality of it says what they check; "rated
    # the summaries" alone does not
    own = output_words(output)
    judged = any(_is_output_noun(w, own) for w in vocabulary) and (QUALITY_WORDS - RATING_WORDS) & vocabulary
    if RATERS & vocabulary and not (judged or CHECK_VERBS & vocabulary):
        flags.append(RubricFlag("about_raters", "describes the raters, not a quality of the judged text"))
    if not any(map(quality_word, vocabulary)):
        flags.append(RubricFlag("no_quality", "names no quality, judgement or score"))
    return tuple(flags)


def lift_for_topic(check: RubricCheck, text: str, topics: Sequence[str]) -> RubricCheck:
    """``no_quality`` is lifted for an entry that names a content word of ``topics`` (:func:`shares_topic`).

    The one statement of this policy: criteria here and HPSS's auxiliaries
    (:func:`judge_engine.methods.hpss.auxiliaries.check_auxiliary`) apply it.
    """
    return check.without("no_quality") if topics and shares_topic(text, topics) else check

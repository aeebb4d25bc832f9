"""How the checks read a text: its words in any script, the words that name something, whether it is
English, which words name a quality, and what two texts share.

Every rule reads text through these, so a Hindi, Thai or Chinese entry splits into words as an English one does.
Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import lru_cache
from typing import Iterable, Sequence

from ..rubric_words import (COMMON_WORDS, ENGLISH_MARKERS, FRAME_WORDS, MIN_SHARED, OUTPUT_NOUNS, PRAISE_WORDS,
                            QUALITY_WORDS, STOP_WORDS, known)


def _mark_ranges() -> str:
    """The combining marks of the Basic Multilingual Plane as a character class body: the vowel signs of
    Devanagari, Thai and other scripts, which ``\\w`` does not match (a Hindi word would split at each)."""
    marks = [i for i in range(0x300, 0x10000) if unicodedata.category(chr(i)) in ("Mn", "Mc", "Me")]
    spans, start = [], marks[0]
    for prev, cur in zip(marks, marks[1:] + [-1]):
        if cur != prev + 1:
            spans.append(f"\\u{start:04x}-\\u{prev:04x}" if prev > start else f"\\u{start:04x}")
            start = cur
    return "".join(spans)


MARKS = _mark_ranges()
IDEOGRAPH = re.compile(r"([\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
                       r"\uac00-\ud7af\uf900-\ufaff][" + MARKS + r"]*)")
"""Scripts written without spaces (Chinese, Japanese, Korean, Thai, Lao, Myanmar, Khmer): each character, with
its marks, counts as a word."""
WORD = re.compile(r"[^\W_](?:[^\W_]|[" + MARKS + r"])*(?:'[^\W_]+)*")
"""A word: letters and digits with their combining marks, and an apostrophe inside ("don't")."""


MIN_ENGLISH_SHARE = 0.15
"""Share of English function words from which the vocabulary flags apply (English prose is about 0.4)."""


def _words(text: str) -> list[str]:
    return WORD.findall(IDEOGRAPH.sub(r" \1 ", (text or "").lower()))


def _trigrams(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


SHORT_TEXT = 8
"""Fewer words than this say too little for the share of function words to tell the language."""


def is_english(words: Sequence[str]) -> bool:
    """Whether ``words`` read as English, so that the English vocabulary flags mean something: enough English
    function words, or a short text in plain ASCII ("Word choice: uses varied vocabulary")."""
    if not words:
        return False
    if len(words) < SHORT_TEXT and all(w.isascii() for w in words):
        return True
    # "a", "do" and "no" are Portuguese or Spanish words too: a text needs a word only English uses
    return (sum(w in STOP_WORDS for w in words) / len(words) >= MIN_ENGLISH_SHARE
            and not ENGLISH_MARKERS.isdisjoint(words))


@lru_cache(maxsize=4096)
def _content_words(text: str) -> frozenset[str]:
    return frozenset(content_words(text))


def _shingles(text: str) -> set[str]:
    """A text's words, with Chinese, Japanese (and other unspaced scripts') characters taken two at a time: one
    character at a time, two Japanese criteria share most of their kana and read as the same text."""
    words = _words(text)
    out = {w for w in words if not IDEOGRAPH.fullmatch(w)}
    out |= {a + b for a, b in zip(words, words[1:]) if IDEOGRAPH.fullmatch(a) and IDEOGRAPH.fullmatch(b)}
    out |= {w for w in words if IDEOGRAPH.fullmatch(w)} if not out else set()
    return out


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets (pairs of characters in unspaced scripts)."""
    wa, wb = _shingles(a), _shingles(b)
    return len(wa & wb) / len(wa | wb) if wa or wb else 1.0


_NAMING_QUALITY = QUALITY_WORDS - PRAISE_WORDS - FRAME_WORDS


@lru_cache(maxsize=16384)
def quality_word(word: str, *, beyond_praise: bool = False) -> bool:
    """Whether ``word`` is a word of :data:`QUALITY_WORDS` or an inflection of one (``related``).

    The list holds no dataset's aspect names (issue 50); "consistency" or "naturalness" is known by
    "consistent" or "natural". Stricter than ``related``: the shorter word leaves at most one letter, so
    "information" is not "informative". ``beyond_praise``: praise and frame words ("good", "should") do not
    count.
    """
    words = _NAMING_QUALITY if beyond_praise else QUALITY_WORDS
    if word in words:
        return True
    return len(word) >= MIN_SHARED and any(_inflects(word, w) for w in words)


def _inflects(a: str, b: str) -> bool:
    shared = len(os.path.commonprefix([a, b]))
    return shared >= MIN_SHARED and min(len(a), len(b)) - shared <= 1


def output_words(output: str) -> frozenset[str]:
    """The words of the judged text's own name as the dataset or the person gives it ("Summary", "Antwort").

    The word lists hold no dataset's name for its outputs (:data:`OUTPUT_NOUNS` is generic: answer, reply,
    text, output); a run's own label joins them here, its inflections by :func:`~judge_engine.rubric_words.related`.
    """
    return frozenset(w for w in _words(output or "") if w not in STOP_WORDS and (len(w) > 2 or IDEOGRAPH.fullmatch(w)))


def _is_output_noun(word: str, own: frozenset[str]) -> bool:
    return word in OUTPUT_NOUNS or bool(own) and known(word, own)


def content_words(text: str, output: str = "") -> set[str]:
    """The words of ``text`` that name something: no function word, no name of the judged text (the generic
    :data:`OUTPUT_NOUNS` and ``output``, the run's own label: :func:`output_words`). Compare them with
    :func:`judge_engine.rubric_words.covered` and :func:`~judge_engine.rubric_words.beyond`, which join
    inflections of one word.

    Numbers count ("at most 50 words" says more than "at most 20 words").
    """
    own = output_words(output)
    return {w for w in _words(text) if w not in STOP_WORDS and not _is_output_noun(w, own)
            and (len(w) > 1 or w.isdigit() or IDEOGRAPH.fullmatch(w))}


def name_key(name: str) -> str:
    """A name as its words, in order: "Slot coverage" and "slot  coverage!" are one name."""
    return " ".join(_words(name)) or name.strip().lower()


def shares_topic(text: str, topics: Iterable[str]) -> bool:
    """Whether ``text`` names a content word (four letters or more) of one of ``topics``.

    A criterion refined from a named one (an HD-Eval child of its parent,
    HPSS criteria of an aspect) may name no word of :data:`QUALITY_WORDS`
    and still describe a facet of what is judged: "Topic focus: the summary
    stays on one topic" under relevance.
    """
    mine = {w for w in _words(text) if len(w) >= 4 and w not in COMMON_WORDS}
    theirs = {w for t in topics for w in _words(t) if len(w) >= 4 and w not in COMMON_WORDS}
    return bool(mine & theirs) or any(known(w, theirs) for w in mine if len(w) >= 5)

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
``template_name``
    A criterion named with English template words only ("Criterion 2",
    "The answer", "Examples"): refused before issue 50, a flag since no
    refusal rests on one language's word list.

The vocabulary rules run only on English text (a share of English function
words): a criterion in German, French or Chinese is not flagged for naming
no English quality word.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from .rubric_words import (CHECK_VERBS, COMMON_WORDS, FIELD_WORDS, FIRST_PERSON, FRAME_WORDS, OUTPUT_NOUNS,  # noqa: F401
                           PRAISE_WORDS, QUALITY_WORDS, RATERS, SCORING_WORDS, STOP_WORDS, TASK_WORDS, TEMPLATE_WORDS,
                           VAGUE_WORDS, ENGLISH_MARKERS, HTML_TAGS, RATING_WORDS, MIN_SHARED, beyond, covered, known,
                           related)

KINDS = ("hypothesis", "criterion", "task_description", "explanation", "auxiliary")

REFUSING_RULES = ("empty", "score_list", "repetitive", "too_long", "copy", "near_duplicate", "placeholder", "stutter",
                  "circular", "copied_definition", "restates_parent")
"""Rules that refuse an entry (see the module docstring)."""
FLAG_RULES = ("no_quality", "restates_aspect", "about_raters", "about_scoring", "first_person", "meta", "reports_score",
              "field_name", "template_name")
"""Rules that only flag an entry: it is used, and the flag is shown and counted."""


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

SLOT = re.compile(r"\[\s*\]|\[\s*(?:\.\.\.|\u2026)\s*\]|\[[^\]\n]*_[^\]\n]*\]|<<<|>>>|\{\s*[a-z_]*\s*\}"
                  r"|\b(?:when|if|than|and|or|is|are)\s+(?:\.\.\.|\u2026)(?=[\s,.;:]|$)", re.I)
"""Template slots left in: "[ ]", "[...]", "[task_description]", "<<<REPORT>>>", "{name}", and an ellipsis
where a clause must go ("scores high when ..., and low when ...")."""

BRACKETED = re.compile(r"\[([^\[\]\n]{1,80})\](?!\()|<([^<>\n]{1,80})>|\{([^{}\n]{1,80})\}")
"""A bracketed span: "[ADJECTIVE]", "<definition of criterion 1>", "{output}" (a Markdown link "[text](url)" is
not one)."""
SLOT_WORDS = 10
"""Most words of a square-bracketed span that stands where content belongs ("[criterion name]"); a longer span,
or one with sentence punctuation, is an aside a rubric may make. An angle-bracketed phrase is a slot at any
length ("<one sentence describing what a clear response does>"), an HTML tag aside."""
SENTENCE_MARKS = re.compile(r"[.,;:!?\u3001\u3002\uff0c\uff1b\uff1a]")
"""Punctuation of a sentence or clause (Latin and CJK): a bracketed span holding it says something."""
MIN_LETTERS = 0.5
"""Share of an entry's non-blank characters that must be letters: "1. 5 2. 4 3. 3 4. 2 5. 1" has none."""
ABBREVIATIONS = re.compile(r"\b(?:i\.\s?e|e\.\s?g)\.", re.I)
""""i.e." and "e.g.": their "i" is no speaker."""

QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<![a-z])'[^']*'(?![a-z])", re.I)
"""Quoted spans: a rubric may quote what a text says ("I don't know")."""

REPORTED_SCORE = re.compile(r"\b\d+(?:\.\d+)?\s+out\s+of\s+\d+\b|\b\d+\.\s?\d+\b"
                            r"|\b\d+(?:\.\d+)?\s?% of (?:the )?(?:responses|outputs|summaries|items|texts|utterances"
                            r"|stories|replies|answers)\b", re.IGNORECASE)
"""A measured score: a decimal, "4.9 out of 10", or a share of the judged texts."""

MAX_ENTRY_CHARS = 1500
"""Longest entry :func:`check_entry` accepts by default: the longest published entry has 934 characters. A method's
generation schema and its reply parsers use the same bound, so what is asked for, read and checked agree."""
MAX_COPIED = 0.6
"""Share of an entry's word trigrams found in a shown text at which it is a ``copy``."""
MAX_REDUNDANCY = 0.5
"""Share of an entry's four-word runs that repeat an earlier run, above which repetition is degenerate: a line
said fourteen times is over 0.9, a rubric naming five score bands about 0.15."""
MIN_ENGLISH_SHARE = 0.15
"""Share of English function words from which the vocabulary flags apply (English prose is about 0.4)."""


@dataclass(frozen=True)
class RubricFlag:
    """A doubt about an entry that is used anyway (see :data:`FLAG_RULES`)."""

    rule: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


@dataclass(frozen=True)
class RubricCheck:
    """The verdict on one generated entry."""

    text: str
    """The entry as generated."""
    ok: bool
    """Whether it may be used."""
    rule: str = ""
    """The refusing rule it broke (see the module docstring), "" when ok."""
    reason: str = ""
    """In words, for the page and the run summary."""
    flags: tuple[RubricFlag, ...] = ()
    """Doubts shown beside a used entry; empty for a refused one."""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"text": self.text, "ok": self.ok, "rule": self.rule, "reason": self.reason}
        if self.flags:
            out["flags"] = [f.to_dict() for f in self.flags]
        return out

    def without(self, rule: str) -> "RubricCheck":
        """The same verdict without the flag ``rule``."""
        return RubricCheck(self.text, self.ok, self.rule, self.reason, tuple(f for f in self.flags if f.rule != rule))

    def flagged(self, *extra: RubricFlag) -> "RubricCheck":
        """The same verdict with more flags (none are added to a refusal)."""
        if not self.ok or not extra:
            return self
        return RubricCheck(self.text, True, flags=self.flags + extra)


def _refuse(text: str, rule: str, reason: str) -> RubricCheck:
    return RubricCheck(text, False, rule, reason)


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


def copied_share(text: str, shown: Iterable[str]) -> float:
    """The largest share of ``text``'s word trigrams found in any one shown text (0 when it has none)."""
    grams = _trigrams(_words(text))
    if not grams:
        return 0.0
    best = 0.0
    for other in shown:
        if other:
            best = max(best, len(grams & _trigrams(_words(other))) / len(grams))
    return best


def restated_text(text: str, shown: Iterable[str], *, min_named: int = 4) -> bool:
    """Whether every content word of ``text`` (at least ``min_named``, quality words aside) is in one shown text.

    The trigram share misses a sentence of a judged text said with other
    function words; a rubric names a quality, so its words are not all found
    in one judged text.
    """
    named = beyond({w for w in content_words(text) if not w.isdigit()}, QUALITY_WORDS, PRAISE_WORDS)
    if len(named) < min_named:
        return False
    return any(covered(named, _content_words(other)) for other in shown if other)


@lru_cache(maxsize=4096)
def _content_words(text: str) -> frozenset[str]:
    return frozenset(content_words(text))


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' word sets."""
    wa, wb = set(_words(a)), set(_words(b))
    return len(wa & wb) / len(wa | wb) if wa or wb else 1.0


def repetition(text: str) -> tuple[str, int]:
    """The most repeated line or four-word run of ``text`` and how often it occurs."""
    lines = [line.strip().lower() for line in (text or "").splitlines() if line.strip()]
    best = ("", 0)
    if lines:
        line, count = Counter(lines).most_common(1)[0]
        best = (line, count)
    words = _words(text)
    runs = Counter(tuple(words[i:i + 4]) for i in range(len(words) - 3))
    if runs:
        run, count = runs.most_common(1)[0]
        if count > best[1]:
            best = (" ".join(run), count)
    return best


def redundancy(text: str) -> float:
    """Share of ``text``'s four-word runs (or lines, whichever is higher) that repeat an earlier one."""
    words = _words(text)
    runs = [tuple(words[i:i + 4]) for i in range(len(words) - 3)]
    lines = [line.strip().lower() for line in (text or "").splitlines() if line.strip()]
    shares = [1 - len(set(seq)) / len(seq) for seq in (runs, lines) if len(seq) > 1]
    return max(shares, default=0.0)


def stutter(words: Sequence[str]) -> str:
    """The word said twice in a row, when that happens at least twice in ``words`` ("" otherwise).

    Once can be English ("that that"); twice is a generation that lost its way.
    """
    pairs = [w for a, w in zip(words, words[1:]) if a == w and not IDEOGRAPH.fullmatch(w)]
    return f"{pairs[0]} {pairs[0]}" if len(pairs) >= 2 else ""


def template_slot(text: str) -> str:
    """The first template slot left in ``text``, "" when there is none.

    A slot is :data:`SLOT`'s shapes, or a bracketed span (:data:`BRACKETED`)
    that holds letters and either no lower-case letter ("[ADJECTIVE]",
    "[SCORE]", "<X>") or at most :data:`SLOT_WORDS` words and no sentence
    punctuation ("[criterion name]", "<definition of criterion 1>",
    "[Adjektiv]"): a bare phrase standing where content belongs, in any
    language. Published rubric text holds no bracketed span.
    """
    slot = SLOT.search(text or "")
    if slot:
        return slot.group(0)
    for m in BRACKETED.finditer(text or ""):
        inside = next(g for g in m.groups() if g is not None).strip()
        if inside[:1] in "\"'\u201c\u2018/!" or (m.group(3) is not None and m.start() and
                                                  re.match(r"[\w^_$\\}]", text[m.start() - 1])):
            continue  # a quoted span, "</b>", "<!-- -->", a formula's "6^{n-1}" or "\\textbf{...}"
        if not any(len(w) > 1 or IDEOGRAPH.fullmatch(w) for w in _words(inside) if not w.isdigit()) and not (
                inside.isalpha() and inside.isupper()):
            continue  # "[1]", "{n-1}"; "[X]" is a slot
        capitals = not any(c.islower() for c in inside)
        words = _words(inside)
        if m.group(2) is not None and words[0] not in HTML_TAGS:
            return m.group(0)
        if capitals or (len(words) <= SLOT_WORDS and not SENTENCE_MARKS.search(inside)):
            return m.group(0)
    return ""


def letter_share(text: str) -> float:
    """Share of the non-blank characters of ``text`` that are letters (1 for an empty text)."""
    marks = [c for c in text or "" if not c.isspace()]
    # a vowel sign (Devanagari, Thai) is part of a letter, not punctuation
    return sum(unicodedata.category(c)[0] in "LM" for c in marks) / len(marks) if marks else 1.0


def _shape(text: str, words: Sequence[str], *, kind: str, shown: Sequence[str], accepted: Sequence[str],
           min_words: int, max_chars: int, max_copied: float, max_similarity: float,
           max_repeats: int) -> RubricCheck | None:
    """The refusing rules of a single entry; None when it passes them. The length comes first: the other rules
    read the whole text, and a reply megabytes long is refused without reading it."""
    if len(text) > max_chars:
        return _refuse(text, "too_long", f"{len(text)} characters (at most {max_chars})")
    if len(words) < min_words:
        return _refuse(text, "empty", f"{len(words)} words (at least {min_words} needed)")
    letters = letter_share(text)
    numbers = sum(w.isdigit() for w in words)
    if kind != "explanation" and (letters < MIN_LETTERS or 2 * numbers >= len(words)):
        return _refuse(text, "score_list", f"mostly digits and punctuation ({letters:.0%} letters, {numbers} of "
                                           f"{len(words)} words numbers): a list of scores, not a rubric")
    if kind != "explanation":
        slot = template_slot(text)
        if slot:
            return _refuse(text, "placeholder", f"a template slot is left in: {slot[:60]!r}")
    said, count = repetition(text)
    if count >= max_repeats and redundancy(text) >= MAX_REDUNDANCY:
        return _refuse(text, "repetitive", f"repeats {said[:60]!r} {count} times")
    share = copied_share(text, shown)
    if share >= max_copied:
        return _refuse(text, "copy", f"{share:.0%} of it is copied from a text the prompt showed")
    if kind in ("hypothesis", "criterion") and restated_text(text, shown):
        return _refuse(text, "copy", "every word of it that names something is in one text the prompt showed: "
                                     "it restates that text")
    for earlier in accepted:
        similarity = jaccard(text, earlier)
        if similarity >= max_similarity:
            return _refuse(text, "near_duplicate", f"{similarity:.0%} the same words as {earlier[:60]!r}")
    if kind != "explanation":
        pair = stutter(words)
        if pair:
            return _refuse(text, "stutter", f"says {pair!r} twice in a row, more than once")
    return None


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
    # a word of three letters or fewer is most often a function word, in any language written with spaces
    named = {w for w in content_words(text) if not w.isdigit() and (len(w) > 3 or IDEOGRAPH.fullmatch(w))}
    given = {w for t in topics for w in _words(t) if len(w) > 1 or IDEOGRAPH.fullmatch(w)}
    if beyond(named, given, PRAISE_WORDS, VAGUE_WORDS, FRAME_WORDS):
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
    speaker = sorted(set(_words(ABBREVIATIONS.sub(" ", QUOTED.sub(" ", text)))) & FIRST_PERSON)
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


def check_entry(text: str, *, kind: str, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                topics: Sequence[str] = (), min_words: int = 3, max_chars: int = MAX_ENTRY_CHARS, max_copied: float = MAX_COPIED,
                max_similarity: float = 0.8, max_repeats: int = 3, output: str = "") -> RubricCheck:
    """Check one generated entry: the refusing rules (first broken rule wins), then the flags.

    Parameters
    ----------
    text : str
        The generated entry, in any form ("Name: definition", a question, a
        sentence with score bands, a sentence in any language).
    kind : {"hypothesis", "criterion", "task_description", "explanation", "auxiliary"}
        What it is meant to be; decides which rules apply.
    shown : sequence of str
        The texts the prompt showed the model (judged outputs, sources, examples).
    accepted : sequence of str
        Entries accepted before this one (for ``near_duplicate``).
    topics : sequence of str
        What is judged (the output's label, the aspect's name and
        definition): an entry that names a content word of them is not
        flagged ``no_quality``.
    output : str
        The judged text's own name, as the dataset or person gives it
        ("Summary"): a name of the judged text, not a property of it
        (:func:`output_words`). The word lists hold no dataset's.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    words = _words(text) if len(text or "") <= max_chars else []
    refused = _shape(text, words, kind=kind, shown=shown, accepted=accepted, min_words=min_words,
                     max_chars=max_chars, max_copied=max_copied, max_similarity=max_similarity,
                     max_repeats=max_repeats)
    if refused:
        return refused
    check = RubricCheck(text, True, flags=_vocabulary_flags(text, words, kind, output))
    if kind in ("hypothesis", "criterion"):
        check = check.flagged(*filter(None, [restates_aspect(text, topics)]))
    return lift_for_topic(check, text, topics)


def check_entries(texts: Sequence[str], *, kind: str, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                  **limits: float) -> list[RubricCheck]:
    """:func:`check_entry` for each text in order; each accepted text counts as accepted for the next ones."""
    kept = list(accepted)
    out = []
    for text in texts:
        result = check_entry(text, kind=kind, shown=shown, accepted=kept, **limits)
        if result.ok:
            kept.append(text)
        out.append(result)
    return out


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


def _name_words(name: str, output: str = "") -> set[str]:
    own = output_words(output)
    return {w for w in _words(name) if w not in STOP_WORDS and not _is_output_noun(w, own) and not w.isdigit()
            and (len(w) > 1 or IDEOGRAPH.fullmatch(w))}


def named_nothing(name: str) -> bool:
    """Whether a criterion's name names nothing in any language: no word of two letters or more (an ideograph
    counts) once numbers are removed ("A", "...", "3.")."""
    return not any((len(w) > 1 or IDEOGRAPH.fullmatch(w)) and not w.isdigit() for w in _words(name))


def template_name(name: str, output: str = "") -> bool:
    """Whether a criterion's name is made of English template and function words only ("Criterion 2", "The
    answer", "Examples"; ``output``, the judged text's own name, counts as one): a flag, since the list is one
    language's (a German "Beispiele" is not in it)."""
    return not named_nothing(name) and not _name_words(name, output) - TEMPLATE_WORDS


def field_name(name: str, output: str = "") -> bool:
    """Whether a criterion's name is made of the prompt's field and template words only ("Human score")."""
    named = _name_words(name, output) - TEMPLATE_WORDS
    return bool(named) and named <= FIELD_WORDS


def lift_for_topic(check: RubricCheck, text: str, topics: Sequence[str]) -> RubricCheck:
    """``no_quality`` is lifted for an entry that names a content word of ``topics`` (:func:`shares_topic`).

    The one statement of this policy: criteria here and HPSS's auxiliaries
    (:func:`judge_engine.methods.hpss.auxiliaries.check_auxiliary`) apply it.
    """
    return check.without("no_quality") if topics and shares_topic(text, topics) else check


def check_criterion(name: str, definition: str, *, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                    parent: Sequence[str] = (), topics: Sequence[str] = (), output: str | None = None,
                    **limits: float) -> RubricCheck:
    """Check a named criterion ("name: definition", as one text) with the rules of a name and a parent.

    The text is ``"{name}: {definition}"`` (the definition defaults to the
    name), checked by :func:`check_entry` as a ``criterion``; then the name
    must not be a template slot (``placeholder``), the definition must say
    more than the name (``circular``) and must not be mostly copied from a
    shown text on its own (``copied_definition``), and a sub-criterion must
    add a word to ``parent`` (its parent's name and definition;
    ``restates_parent``). A name of field words and a reported score are
    flags. ``no_quality`` is lifted when the text names a content word of
    ``topics`` (the aspect, the judged output's label). ``output``: the
    judged text's own name (:func:`check_entry`); by default the first of
    ``topics``, where every method puts the judged output's label.
    """
    output = (topics[0] if topics else "") if output is None else output
    definition = (definition or "").strip() or name
    text = f"{name}: {definition}"
    check = check_entry(text, kind="criterion", shown=shown, accepted=accepted, output=output, **limits)
    if not check.ok:
        return check
    if named_nothing(name):
        return _refuse(text, "placeholder", f"the name {name.strip()[:40]!r} names nothing")
    slot = template_slot(name)
    if slot:
        return _refuse(text, "placeholder", f"the name is a template slot: {slot[:40]!r}")
    said = beyond(content_words(definition, output), PRAISE_WORDS)
    if covered(said, content_words(name, output)):
        return _refuse(text, "circular", "the definition only repeats the name")
    if len(_words(definition)) >= 5:
        share = copied_share(definition, shown)
        if share >= limits.get("max_copied", MAX_COPIED):
            return _refuse(text, "copied_definition",
                           f"{share:.0%} of its definition is copied from a text the prompt showed")
    if parent:
        parent_words = set().union(*(content_words(p, output) for p in parent))
        # a child named after its parent with a new definition of the same quality would hold the parent twice
        if covered(beyond(content_words(name, output), PRAISE_WORDS), content_words(parent[0], output)):
            return _refuse(text, "restates_parent", f"its name adds nothing to its parent's, {parent[0][:40]!r}")
        if covered(beyond(content_words(text, output), PRAISE_WORDS), parent_words):
            return _refuse(text, "restates_parent",
                           f"adds nothing to its parent {parent[0][:40]!r}: only its words and praise")
    extra = []
    if field_name(name, output):
        extra.append(RubricFlag("field_name", f"named after a field of the prompt ({name.strip()[:40]!r})"))
    if template_name(name, output):
        extra.append(RubricFlag("template_name", f"the name {name.strip()[:40]!r} is made of template words only"))
    extra += filter(None, [restates_aspect(text, topics)])
    return lift_for_topic(check.without("restates_aspect").flagged(*extra), definition, topics)


def rejected_summary(checks: Iterable[RubricCheck]) -> dict[str, int]:
    """How many entries each refusing rule refused."""
    return dict(Counter(c.rule for c in checks if not c.ok))


def flag_summary(checks: Iterable[RubricCheck]) -> dict[str, int]:
    """How many used entries each flag was raised on."""
    return dict(Counter(f.rule for c in checks if c.ok for f in c.flags))


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


FILLER = re.compile(r"^(?:(?:is|are|also|often|always|should|must|will|would|can|could|be|one|that|which|who|it)"
                    r"\s+)+")
"""The words a statement's body starts with before it names anything ("is one that has ...")."""

def is_statement(text: str, opener: str) -> bool:
    """Whether ``text`` is a statement that starts with ``opener`` ("A good summary ..."; any case)."""
    return bool(opener) and (text or "").strip().lower().startswith(opener.lower() + " ")


def statement_body(statement: str, opener: str) -> str:
    """What a statement says after its opener ("A good summary ..."), without the closing full stop."""
    text = (statement or "").strip()
    if opener and text.lower().startswith(opener.lower()):
        text = text[len(opener):]
    return text.strip().rstrip(".").strip()


def short_name(text: str, *, max_words: int = 6) -> str:
    """At most ``max_words`` whole words of ``text`` (an ellipsis when cut), first letter capitalised."""
    words = text.split()
    name = " ".join(words[:max_words]) + ("\u2026" if len(words) > max_words else "")
    return name[:1].upper() + name[1:]


def statement_name(statement: str, opener: str, *, max_words: int = 6) -> str:
    """A short name for a criterion written as a sentence: its body up to the first comma, at most
    ``max_words`` words, without the leading "is one that" ("A good summary is consistent with the article's
    content." -> "Consistent with the article's content")."""
    body = statement_body(statement, opener)
    clauses = [c.strip() for c in re.split(r"[,;]", body) if c.strip()] or [body]
    # the first clause that names something: "is a good one, with no false information" -> "With no false..."
    clause = next((c for c in clauses if beyond(content_words(c), PRAISE_WORDS, VAGUE_WORDS)), clauses[0])
    named = FILLER.sub("", clause.lower()).strip() or clause or body
    return short_name(named, max_words=max_words)


def check_statement(statement: str, *, opener: str, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                    parent: Sequence[str] = (), topics: Sequence[str] = (), output: str | None = None,
                    **limits: float) -> RubricCheck:
    """Check a criterion written as a sentence that starts with ``opener`` ("A good summary has ...").

    The sentence is checked by :func:`check_entry` as a ``criterion``; then
    its body (the words after the opener) must say something besides praise
    (``empty``), must not be copied from a shown text on its own (``copy``:
    the shared opener dilutes the share), and a sub-criterion must add a
    word to ``parent`` (``restates_parent``). The flags are decided on the
    body, where the opener's "good" and the frame's "should" name no
    quality: ``no_quality`` (lifted when the body names a content word of
    ``topics``), ``reports_score`` and ``about_scoring``. ``output``: the
    judged text's own name (:func:`check_entry`); by default the first of
    ``topics``, where every method puts the judged output's label.
    """
    output = (topics[0] if topics else "") if output is None else output
    body = statement_body(statement, opener)
    check = check_entry(statement, kind="criterion", shown=shown, accepted=accepted, output=output, **limits)
    if not check.ok:
        return check
    said = beyond({w for w in content_words(body, output) if not w.isdigit()}, PRAISE_WORDS, VAGUE_WORDS)
    if not said:
        return _refuse(statement, "empty", "says nothing but praise")
    if len(_words(body)) >= 5:
        share = copied_share(body, shown)
        if share >= limits.get("max_copied", MAX_COPIED):
            return _refuse(statement, "copy", f"{share:.0%} of it is copied from a text the prompt showed")
    if parent and covered(said, set().union(*(content_words(p, output) for p in parent))):
        return _refuse(statement, "restates_parent",
                       f"adds nothing to its parent {parent[0][:40]!r}: only its words and praise")
    words = _words(body)
    flags = [f for f in check.flags if f.rule not in ("no_quality", "restates_aspect")]
    flags += filter(None, [restates_aspect(body, topics)])
    if is_english(words):
        scoring = sorted(set(words) & SCORING_WORDS)
        if scoring:
            flags.append(RubricFlag("about_scoring", f"talks about the scoring ({', '.join(scoring)}), not about "
                                                     "the judged text"))
        own = output_words(output)
        facet = " ".join(w for w in words if not _is_output_noun(w, own))
        if not any(quality_word(w, beyond_praise=True) for w in words) and not shares_topic(facet, topics):
            flags.append(RubricFlag("no_quality", "names no quality, judgement or score"))
    return RubricCheck(statement, True, flags=tuple(flags))

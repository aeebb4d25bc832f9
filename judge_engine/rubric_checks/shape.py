"""The refusing rules of one entry: the shape of the text (length, words, digits, template slots,
repetition, copies, near-duplicates, stutter), which hold in any language.

Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

from functools import lru_cache

import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from ..rubric_words import HTML_TAGS, PRAISE_WORDS, QUALITY_WORDS, beyond, covered
from .records import RubricCheck, _refuse
from .tokens import IDEOGRAPH, _content_words, _trigrams, _words, content_words, jaccard


SLOT = re.compile(r"\[\s*\]|\[\s*(?:\.\.\.|\u2026)\s*\]|<<<|>>>|\{\s*\}"
                  r"|\b(?:when|if|than|and|or|is|are)\s+(?:\.\.\.|\u2026)(?=[\s,.;:]|$)", re.I)
"""Template slots left in: "[ ]", "[...]", "<<<REPORT>>>" (the fences of this project's prompts), "{ }", and an
ellipsis where a clause must go ("scores high when ..., and low when ...")."""

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
MARKUP_TAG = re.compile(r"/?[a-z][a-z0-9-]*(?:\s+[a-z-]+=\S+)*\s*/?")
"""An HTML or XML tag as written in lower case ("li", "/div", "img alt=x", "contexte"): markup a rubric about
markup names, not a slot."""
SPECIAL_TOKENS = frozenset("MASK CLS SEP PAD UNK BOS EOS".split())
"""Tokenizer tokens a rubric about masked prediction names ("[MASK]"): markup of a model's input, not slots."""
CODE_CONTEXT = re.compile(
    r"\b(?:variables?|placeholders?|templates?|format\w*|strings?|code|parameters?|f-strings?|interpolat\w*|"
    r"platzhalter|formatstring\w*|vorlage\w*|marcador\w*|plantilla\w*|par[áa]metros?|cadena\w*|balises?|"
    r"mod[èe]les?|cha[îi]nes?|переменн\w*|шаблон\w*|строк\w*|параметр\w*|متغير\w*|القالب|قالب)\b"
    r"|变量|占位|模板|字符串|変数|プレースホルダー|テンプレート|%s", re.IGNORECASE)
"""Words of a rubric about code or templates, in eight languages: there a ``{name}`` is the text it is about."""
CODE_SPAN = re.compile(r"`[^`\n]*`")


@lru_cache(maxsize=1)
def template_fields() -> frozenset[str]:
    """The field names of this project's prompt templates (``{output}``, ``{aspect_name}``, ...): a ``{name}`` in
    generated text is a slot when it is one of them, the template's own syntax; ``{user_id}`` in a rubric about
    code is code."""
    fields: set[str] = set()
    for path in PROMPTS.glob("*.txt"):
        try:
            fields.update(re.findall(r"\{([a-z_]+)\}", path.read_text(encoding="utf-8")))
        except OSError:
            continue
    return frozenset(fields)


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


MAX_ENTRY_CHARS = 1500
"""Longest entry :func:`check_entry` accepts by default: the longest published entry has 934 characters. A method's
generation schema and its reply parsers use the same bound, so what is asked for, read and checked agree."""
MAX_COPIED = 0.6
"""Share of an entry's word trigrams found in a shown text at which it is a ``copy``."""
MAX_REDUNDANCY = 0.5
"""Share of an entry's four-word runs that repeat an earlier run, above which repetition is degenerate: a line
said fourteen times is over 0.9, a rubric naming five score bands about 0.15."""


def copied_share(text: str, shown: Iterable[str]) -> float:
    """The largest share of ``text``'s word trigrams found in any one shown text (0 when it has none)."""
    grams = _trigrams(_words(text))
    if not grams:
        return 0.0
    best = 0.0
    for other in shown:
        if other:
            best = max(best, len(grams & _shown_trigrams(other)) / len(grams))
    return best


@lru_cache(maxsize=1024)
def _shown_trigrams(text: str) -> frozenset[tuple[str, ...]]:
    """The word trigrams of a shown text. A fit checks each generated entry against the same few articles and
    outputs: Active-Critic's paper-default fit on 30 SummEval items read their words 46,000 times, 2.0 of its
    6.1 s of work outside the model (2026-11-29)."""
    return frozenset(_trigrams(_words(text)))


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

    A slot is :data:`SLOT`'s shapes, a ``{field}`` of this project's prompt templates (:func:`template_fields`), or
    a bracketed span (:data:`BRACKETED`) that holds letters and either no lower-case letter ("[ADJECTIVE]",
    "[SCORE]", "<X>"), an underscore ("[task_description]") or at most :data:`SLOT_WORDS` words and no sentence
    punctuation ("[criterion name]", "<definition of criterion 1>", "[Adjektiv]"): a bare phrase standing where
    content belongs, in any language. Markup and code are not slots (issue 65): a span in backticks, a lower-case
    tag ("<li>", "</div>", "<task>"), an index ("a[i]", "t[i][j]"), a tokenizer's "[MASK]", a ``{user_id}`` that
    is no field of the templates.
    """
    text = CODE_SPAN.sub(" ", text or "")
    slot = SLOT.search(text)
    if slot:
        return slot.group(0)
    for m in BRACKETED.finditer(text):
        inside = next(g for g in m.groups() if g is not None).strip()
        before = text[m.start() - 1] if m.start() else ""
        if inside[:1] in "\"'\u201c\u2018/!" or (m.group(3) is not None and re.match(r"[\w^_$\\}]", before)):
            continue  # a quoted span, "</b>", "<!-- -->", a formula's "6^{n-1}" or "\\textbf{...}"
        if m.group(1) is not None and (re.match(r"[A-Za-z0-9_\])]", before) or inside in SPECIAL_TOKENS):
            continue  # an index "a[i]", "t[i][j]", "x[MASK_ID]"; a tokenizer's "[MASK]"
        if m.group(2) is not None and MARKUP_TAG.fullmatch(inside):
            continue  # markup: "<li>", "<img alt=x>", "<task>"
        if m.group(3) is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", inside):
            if inside.lower() in template_fields() or not (
                    "_" in inside or re.match(r"[fF]?['\"]", before) or CODE_CONTEXT.search(text)):
                return m.group(0)
            continue  # "{user_id}", "f'{id}'", "placeholders such as {name}" in a rubric about code
        if m.group(1) is not None and "_" in inside and " " not in inside:
            return m.group(0)
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

"""Rules of what an entry says to the evaluator rather than about the judged text, in eight languages (issue 65).

Refusing: ``instructs_evaluator`` (an order to set aside the rubric, a fake system message, a new role, an answer or
a score fixed for every item) and ``refusal`` (a model declining to write the entry or speaking as a model).
Rubric text describes the judged text; it never gives orders to whoever reads it, so these refuse, outside quotes
(a rubric about prompt injection may quote one: then the entry is flagged).

Flagging: ``hedges`` (commits to nothing), ``contradicts`` (two clauses that say the same thing with one word turned
to its opposite, or "A is better than B, and B is better than A"), ``keyword_list`` (a list of bare words, the
shape in any language), ``about_scoring`` (how scores are distributed) and ``about_raters`` (what the raters did).

The phrases are :mod:`judge_engine.rubric_lexicon`'s (en, de, es, fr, zh, ja, ar, ru); the keyword list and the
contradiction's clause comparison read the shape of the text in any language.
"""

from __future__ import annotations

import re
from typing import Sequence

from .. import rubric_lexicon as lex
from .flags import QUOTED
from .records import RubricCheck, RubricFlag, _refuse
from .tokens import IDEOGRAPH, _words

QUOTES = re.compile(QUOTED.pattern + r"|«[^»]*»|„[^“”]*[“”]|「[^」]*」|『[^』]*』|`[^`]*`", re.IGNORECASE)
"""Quoted spans in any of the languages' quotation marks."""


def _unquoted(text: str) -> str:
    # a quoted word ("Yes", «Да») is a word of the sentence, not a passage it quotes
    return QUOTES.sub(lambda m: m.group(0) if len(_words(m.group(0))) <= 2 else " ", text)


def _order(text: str) -> str:
    """What makes ``text`` an order to the evaluator, "" when nothing does."""
    for pattern, what in ((lex.OVERRIDE, "tells the evaluator to set aside the rubric"),
                          (lex.FAKE_SYSTEM, "holds a system message or a note to the grader"),
                          (lex.NEW_ROLE, "gives the evaluator a new role or task"),
                          (lex.FIXED_ANSWER, "fixes the evaluator's answer in advance")):
        found = pattern.search(text)
        if found:
            return f"{what} ({found.group(0).strip()[:40]!r})"
    # one score for all names one value; a task description that states the scale names two or more ("between 1
    # and 5", "1, 2, 3, 4 or 5")
    if lex.EVERY.search(text) and not lex.RANGE.search(text) and len(set(re.findall(r"\d+", text))) < 2:
        given = lex.SCORE_GIVEN.search(text)
        if given:
            return f"fixes one score for every item ({given.group(0).strip()[:40]!r})"
    return ""


def addressed_refusal(text: str) -> RubricCheck | None:
    """``instructs_evaluator`` or ``refusal`` for an entry that says either outside quotes; None otherwise."""
    plain = _unquoted(text or "")
    order = _order(plain)
    if order:
        return _refuse(text, "instructs_evaluator", f"an instruction to the evaluator, not rubric text: {order}")
    refused = lex.REFUSAL.search(plain)
    if refused:
        return _refuse(text, "refusal", f"a model declining or speaking as a model ({refused.group(0).strip()[:40]!r})")
    return None


CLAUSE = re.compile(r"[,;:\u3001\u3002\uff0c\uff1b\uff1a\u060c\u061b]|\s[\u2013\u2014-]\s")
LINKS = frozenset("and but while whereas also und aber auch während y pero también mientras et mais aussi tandis "
                  "а но и также тогда как و لكن بينما أيضا 而 但 也 却 も".split())
"""Words that join two clauses: they are no difference between them."""
POLAR = (("high", "low"), ("more", "less"), ("better", "worse"), ("long", "short"), ("reward", "penali"),
         ("prefer", "penali"), ("höher", "niedrig"), ("besser", "schlecht"), ("lang", "kurz"), ("mehr", "weniger"),
         ("alta", "baja"), ("alto", "bajo"), ("mejor", "peor"), ("larg", "cort"), ("más", "menos"),
         ("mieux", "moins"), ("haut", "bas"), ("long", "court"), ("préf", "pénalis"), ("meilleur", "pire"),
         ("高", "低"), ("长", "短"), ("多", "少"), ("好", "差"), ("長", "短"), ("良", "悪"),
         ("أعلى", "أدنى"), ("أفضل", "أسوأ"), ("طويل", "قصير"), ("أكثر", "أقل"),
         ("высок", "низк"), ("лучше", "хуже"), ("длинн", "коротк"), ("больше", "меньше"), ("поощр", "наказ"))
"""Words of one scale with opposite ends, by their beginnings (a clause pair differing in one such pair says
the same thing and its opposite)."""
NEGATION_WORDS = frozenset("not nicht kein keine no ne pas не لا ليس 不 没 で な い は".split())
NEGATION = re.compile(r"\b(?:not|nicht|kein\w*|no|ne|pas|не|لا|ليس)\b|不|没|でない|ではない|じゃない", re.IGNORECASE)


def _clause_words(clause: str) -> list[str]:
    return [w for w in _words(clause) if w not in LINKS]


def _polar(a: set[str], b: set[str]) -> bool:
    for x in a:
        for y in b:
            for pos, neg in POLAR:
                if (x.startswith(pos) and y.startswith(neg)) or (x.startswith(neg) and y.startswith(pos)):
                    return True
    return False


def _contradictory(first: str, second: str) -> bool:
    one, two = _clause_words(first), _clause_words(second)
    s1, s2 = set(one), set(two)
    shared = s1 & s2
    if len(shared) < 3:
        return False
    a, b = s1 - s2, s2 - s1
    if len(a) > 3 or len(b) > 3:
        return False
    turned = _polar(a, b)
    negated = bool(NEGATION.search(first)) != bool(NEGATION.search(second))
    # "A is better than B, and B is better than A": the same words, two of them in the other order
    order1 = [w for w in one if w in shared]
    order2 = [w for w in two if w in shared]
    swapped = any(order1.index(x) < order1.index(y) and order2.index(x) > order2.index(y)
                  for i, x in enumerate(order1) for y in order1[i + 1:] if _polar({x}, {y}))
    if negated and not (turned or swapped):
        # "polite summaries are better, and summaries that are not polite are better": nothing else differs
        return len((a | b) - NEGATION_WORDS) <= 1
    return (turned + swapped) == 1


def contradiction(text: str) -> str:
    """Two clauses of ``text`` that say one thing and its opposite, "" when none do."""
    clauses = [c for c in CLAUSE.split(text or "") if len(_words(c)) >= 3]
    for i, first in enumerate(clauses):
        for second in clauses[i + 1:]:
            if _contradictory(first, second):
                return f"{first.strip()[:40]!r} / {second.strip()[:40]!r}"
    return ""


LIST_SEPARATORS = re.compile(r"[,;\u3001\uff0c\uff1b\u060c\u061b]")
MIN_LIST_ITEMS = 4


def keyword_list(text: str) -> bool:
    """Whether ``text`` (after a short "Name:" label) is a list of at least four bare words or two-word terms."""
    body = text or ""
    labelled = re.match(r"([^:\uff1a]{1,60})[:\uff1a](.*)$", body, re.S)
    if labelled and len(_words(labelled.group(1))) <= 4:
        body = labelled.group(2)
    items = [i.strip(" .\u3002\u061f!?") for i in LIST_SEPARATORS.split(body)]
    if len(items) < MIN_LIST_ITEMS or not all(items):
        return False
    for item in items:
        words = _words(item)
        if not words:
            return False
        ideographs = all(IDEOGRAPH.fullmatch(w) for w in words)
        if (ideographs and len(words) > 5) or (not ideographs and len(words) > 2):
            return False
    return True


def addressed_flags(text: str, kind: str) -> tuple[RubricFlag, ...]:
    """The flags of this module on one entry that passed the refusing rules."""
    if kind == "explanation":
        return ()
    plain = _unquoted(text or "")
    flags = []
    quoted_order = _order(text or "") if not _order(plain) else ""
    if quoted_order:
        flags.append(RubricFlag("quotes_instruction", f"quotes an instruction to the evaluator: {quoted_order}"))
    hedge = lex.HEDGE.search(plain)
    if hedge:
        flags.append(RubricFlag("hedges", f"commits to nothing ({hedge.group(0).strip()[:40]!r})"))
    said = contradiction(plain)
    if said:
        flags.append(RubricFlag("contradicts", f"says one thing and its opposite: {said}"))
    if keyword_list(plain):
        flags.append(RubricFlag("keyword_list", "a list of bare words, not a statement of what is checked"))
    stats = lex.SCORE_STATISTICS.search(plain)
    if stats and lex.SCORE_WORDS.search(plain):
        flags.append(RubricFlag("about_scoring", f"about how scores are distributed ({stats.group(0).strip()[:40]!r}),"
                                                 " not about the judged text"))
    if lex.RATERS.search(plain) and lex.RATER_HABIT.search(plain):
        flags.append(RubricFlag("about_raters", "about what the raters did, not about the judged text"))
    return tuple(flags)


def merge_flags(check: RubricCheck, extra: Sequence[RubricFlag]) -> RubricCheck:
    """``check`` with ``extra`` flags whose rule it does not carry yet."""
    have = {f.rule for f in check.flags}
    return check.flagged(*(f for f in extra if f.rule not in have))

"""Criteria written as sentences ("A good summary has ..."): their opener, body and short name, and the
rules of a statement on top of :func:`~.entries.check_entry`.

Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..rubric_words import PRAISE_WORDS, SCORING_WORDS, VAGUE_WORDS, beyond, covered
from .entries import check_entry
from .flags import restates_aspect
from .records import RubricCheck, RubricFlag, _refuse
from .shape import MAX_COPIED, copied_share
from .tokens import _is_output_noun, _words, content_words, is_english, output_words, quality_word, shares_topic


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

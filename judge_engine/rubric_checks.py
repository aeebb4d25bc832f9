"""Checks on rubric text a model generated, before a judge uses it.

Structured replies make a small model's output parse; they do not make it a
rubric. On SmolLM2 a "hypothesis" was a sentence copied from a judged
dialogue, a "task description" a made-up news story, an "explanation" one
line repeated fourteen times. Every method that generates rubric content
(HypoEval hypotheses, Active-Critic task descriptions, criteria and
explanations, HD-Eval sub-criteria, HPSS auxiliaries) runs it through
:func:`check_entries`; a rejected entry is kept with its reason, counted
and shown, never silently used or silently dropped.

The rules, each a pure function of the texts:

``empty``
    Nothing left once blank space and punctuation are removed, or fewer
    than ``min_words`` words.
``repetitive``
    One line, or one run of four words, said again and again.
``too_long``
    More than ``max_chars`` characters.
``copy``
    Most of its word trigrams appear in one text the prompt showed (a judged
    output, its source, an example): restating content, not describing quality.
``near_duplicate``
    Nearly the same words as an entry accepted before it (Jaccard >= 0.8).
``no_quality``
    For hypotheses and criteria: no word that names a quality, a judgement
    or a score (a rubric says what makes a text better or worse). For task
    descriptions: no word about evaluating or about the task.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

KINDS = ("hypothesis", "criterion", "task_description", "explanation", "auxiliary")

WORD = re.compile(r"[a-z0-9']+")

QUALITY_WORDS = frozenset("""
accurate accuracy adequate appropriate appropriately bad badly better best clarity clear clearly coherent coherence
complete completeness concise consistent consistency correct correctly coverage creative creativity detail detailed
effective engaging engagement error errors factual faithful fluent fluency good grammatical helpful high higher
informative informativeness interesting irrelevant logical low lower natural naturalness poor poorly precise quality
readable redundant relevance relevant repetitive score scores scored should specific strong understandable vague
weak well worse worst must avoid lacks lack missing contradict contradicts contradiction mistakes flow organized
organised structure structured original surprise surprising empathy empathetic polite fluently rating rated
concise conciseness brevity brief padding verbose verbosity wordy faithfulness groundedness grounded hallucination
hallucinated factuality factual plausible plausibility specificity diversity humor humour humorous engagingness
understandability naturalness style tone readability grammar grammaticality spelling punctuation cohesion cohesive
consistency informative novelty novel overall usefulness useful harmless safe safety politeness empathic persuasive
complexity complex enjoy enjoyable enjoyment
""".split())
"""Words that name a quality, a judgement or a score."""

TASK_WORDS = frozenset("""
evaluate evaluation evaluating evaluator rate rating rated judge judging assess assessing assessment score scoring
task quality criteria criterion summary summaries summarization response responses reply dialogue conversation
story stories text texts output outputs generated generation description restaurant hotel article
""".split())
"""Words a task description uses when it describes the evaluation task."""


@dataclass(frozen=True)
class RubricCheck:
    """The verdict on one generated entry."""

    text: str
    """The entry as generated."""
    ok: bool
    """Whether it may be used."""
    rule: str = ""
    """The rule it broke (see the module docstring), "" when ok."""
    reason: str = ""
    """In words, for the page and the run summary."""

    def to_dict(self) -> dict[str, str | bool]:
        return {"text": self.text, "ok": self.ok, "rule": self.rule, "reason": self.reason}


def _words(text: str) -> list[str]:
    return WORD.findall((text or "").lower())


def _trigrams(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


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


def check_entry(text: str, *, kind: str, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                min_words: int = 3, max_chars: int = 600, max_copied: float = 0.6, max_similarity: float = 0.8,
                max_repeats: int = 3) -> RubricCheck:
    """Check one generated entry against the rules of the module docstring (first broken rule wins).

    Parameters
    ----------
    text : str
        The generated entry.
    kind : {"hypothesis", "criterion", "task_description", "explanation", "auxiliary"}
        What it is meant to be; decides the ``no_quality`` rule.
    shown : sequence of str
        The texts the prompt showed the model (judged outputs, sources, examples).
    accepted : sequence of str
        Entries accepted before this one (for ``near_duplicate``).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    words = _words(text)
    if len(words) < min_words:
        return RubricCheck(text, False, "empty", f"{len(words)} words (at least {min_words} needed)")
    said, count = repetition(text)
    if count >= max_repeats and (kind == "explanation" or len(words) >= 12):
        return RubricCheck(text, False, "repetitive", f"repeats {said[:60]!r} {count} times")
    if len(text) > max_chars:
        return RubricCheck(text, False, "too_long", f"{len(text)} characters (at most {max_chars})")
    share = copied_share(text, shown)
    if share >= max_copied:
        return RubricCheck(text, False, "copy", f"{share:.0%} of it is copied from a text the prompt showed")
    for earlier in accepted:
        similarity = jaccard(text, earlier)
        if similarity >= max_similarity:
            return RubricCheck(text, False, "near_duplicate",
                               f"{similarity:.0%} the same words as {earlier[:60]!r}")
    vocabulary = set(words)
    if kind in ("hypothesis", "criterion") and not vocabulary & QUALITY_WORDS:
        return RubricCheck(text, False, "no_quality", "names no quality, judgement or score")
    if kind == "task_description" and not vocabulary & TASK_WORDS:
        return RubricCheck(text, False, "no_quality", "says nothing about the evaluation task")
    return RubricCheck(text, True)


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


def rejected_summary(checks: Iterable[RubricCheck]) -> dict[str, int]:
    """How many entries each rule rejected."""
    return dict(Counter(c.rule for c in checks if not c.ok))


COMMON_WORDS = frozenset("""
about also been does each every from have into more most only other should some than that their them then there
these they this those what when which with would your whether while where because being over under very
""".split())
"""Words of four or more letters that say nothing about a topic (left out by :func:`shares_topic`)."""


def shares_topic(text: str, topics: Iterable[str]) -> bool:
    """Whether ``text`` names a content word (four letters or more) of one of ``topics``.

    For a criterion refined from a named one (an HD-Eval child of its parent,
    HPSS criteria of an aspect): "Topic focus: the summary stays on one
    topic" names no word of :data:`QUALITY_WORDS` but names what is judged
    (the summary) or a word of its parent's definition, so it describes a
    facet of a quality rather than restating content. The callers accept a
    ``no_quality`` refusal when this holds; copies are caught by ``copy``.
    """
    mine = {w for w in _words(text) if len(w) >= 4 and w not in COMMON_WORDS}
    theirs = {w for t in topics for w in _words(t) if len(w) >= 4 and w not in COMMON_WORDS}
    stems = {w[:5] for w in theirs}  # "sentences" / "sentence", "organised" / "organization"
    return bool(mine & theirs) or any(w[:5] in stems for w in mine if len(w) >= 5)



def name_from_shown(name: str, shown: Iterable[str], topics: Iterable[str] = ()) -> bool:
    """Whether a generated criterion's ``name`` is content taken from a shown text rather than a quality.

    True when the name has a word of three letters or more, none of them
    names a quality (:data:`QUALITY_WORDS`) or a topic word of ``topics``
    (the aspect, the judged output's label), and every one of them occurs
    in one shown text. SmolLM2-135M named HypoEval "traits" after the
    restaurants of the dialogue acts it was shown ("Chow", "Mangia Tutti
    Ristorante", "Dinner") and described the food: a sentence about the
    content, with "good" in it, passes the ``no_quality`` rule, its name
    does not pass this one. Callers report it as ``copy``.
    """
    words = [w for w in _words(name) if len(w) >= 3]
    if not words or set(words) & QUALITY_WORDS or shares_topic(name, topics):
        return False
    return any(set(words) <= set(_words(other)) for other in shown if other)

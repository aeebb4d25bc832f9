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
``placeholder``
    A slot of a prompt's template left in ("[task_description]", "[ ]",
    "<<<"), or, for a named criterion, a name that names nothing ("A",
    "The", "...", "Criterion 2", "The answer").
``stutter``
    The same word twice in a row, at least twice ("when when ... when when"):
    a degenerate generation, not a sentence.
``first_person``
    Speaks as a person ("Provide me with feedback", "I am the one who..."):
    a request or a story, not a property of the judged text. Quoted words
    do not count.
``meta``
    A hypothesis that talks about hypotheses ("The first hypothesis is: ...")
    instead of stating one.
``circular``
    A named criterion whose definition only repeats its name ("Provide
    constructive feedback: Provide constructive feedback.").
``restates_parent``
    A sub-criterion that adds nothing to its parent: every word of it is a
    word of the parent, of the judged output's name or of praise ("Good
    coherence: a coherent response has high coherence" under coherence), or
    its name is only its parent's name ("Coherence" under coherence).
``reports_score``
    A named criterion whose definition states a score ("Human Rating of
    100.00", "A score of 4.9 out of 10") instead of what is checked.
``copied_definition``
    A named criterion whose definition alone is mostly copied from a shown
    text (the name's own words can dilute ``copy`` below its threshold).
``about_scoring``
    A statement ("A good response ...") about the scoring rather than the
    text: "adheres to the specified criteria of coherence, which can be
    measured using a scoring system".
``about_raters``
    A hypothesis or criterion about the raters ("The experts are very
    skilled in their field") that names neither the judged text nor what
    the raters check in it.
``no_quality``
    For hypotheses and criteria: no word that names a quality, a judgement
    or a score (a rubric says what makes a text better or worse). For task
    descriptions: no word about evaluating or about the task.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from dataclasses import dataclass
from typing import Iterable, Sequence

KINDS = ("hypothesis", "criterion", "task_description", "explanation", "auxiliary")

WORD = re.compile(r"[a-z0-9']+")

QUALITY_WORDS = frozenset("""
accurate accuracy adequate appropriate appropriately bad badly better best clarity clear clearly coherent coherence
complete completeness concise consistent consistency correct correctly coverage creative creativity detail detailed
effective engaging engagement error errors factual faithful fluent fluency good grammatical helpful high higher
informative informativeness interesting irrelevant logical low lower natural naturalness poor poorly precise quality
readable redundancy redundant relevance relevant repetitive score scores scored should specific strong understandable vague
weak well worse worst must avoid avoids lacks lack missing contradict contradicts contradicted contradicting contradictory
contradiction mistakes flow organized engaged logically
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

STOP_WORDS = frozenset("""
a an the of to in on at by for from with without and or but nor not no is are was were be been being am it its
this that these those there here which who whom whose what when where why how whether if then than so as such
has have had do does did can could may might will would shall should must very really just also only more most
each every any all some other another into onto over under about above below between through during while one
""".split())
"""Function words: they name nothing (left out by the name, circular and parent rules)."""

OUTPUT_NOUNS = frozenset("""
response responses answer answers reply replies summary summaries text texts output outputs utterance utterances
story stories generation sentence sentences passage
""".split())
"""What a judged text is called: a criterion named only by it names no property."""

PLACEHOLDER_WORDS = frozenset("""
criterion criteria subcriterion subcriteria sub name names aspect aspects item items example examples point points
factor factors metric metrics definition definitions number first second third fourth new short
human humans annotator annotators rating ratings score scores document documents source sources content data json
field fields key keys value values label labels expert experts rater raters annotation annotations child children
qualities quality description descriptions hypothesis hypotheses
""".split())
"""Words a placeholder name is made of ("Criterion 1", "A short name", "Sub-criterion"), and the names of the
prompt's own fields and schema keys that SmolLM2 gave as criterion names ("human", "score", "CONTENT",
"children")."""

PRAISE_WORDS = frozenset("""
good bad great excellent high higher highest low lower lowest well better worse best worst quality qualities score
scores scored scoring rating rated overall poor poorly strong weak level degree general generally measure measures
judged evaluate evaluated evaluation
""".split())
"""Words that grade without saying what is graded: with the parent's own words they add no facet."""
PRAISE_WORDS_STEMS = frozenset(w[:5] for w in PRAISE_WORDS)
QUALITY_STEMS = frozenset(w[:5] for w in QUALITY_WORDS | PRAISE_WORDS)

FIRST_PERSON = frozenset("i me my mine myself i'm i've i'd i'll".split())
"""Words of a speaker: a criterion or hypothesis describes a text, it does not speak."""

RATERS = frozenset("expert experts annotator annotators rater raters human humans judge judges evaluator "
                   "evaluators".split())
"""Who scores: a hypothesis or criterion about them, not about the judged text, is ``about_raters``."""
CHECK_VERBS = frozenset("check checks checked look looks ask asks reward rewards penalise penalises penalize "
                        "penalizes prefer prefers expect expects want wants notice notices count counts favour "
                        "favours favor favors".split())
"""What raters do to a text: "the experts check that nothing of the dialogue act is left out" says what is judged."""

SLOT = re.compile(r"\[\s*\]|\[\s*(?:\.\.\.|\u2026)\s*\]|\[[^\]\n]*_[^\]\n]*\]|<<<|>>>|\{\s*[a-z_]*\s*\}", re.I)
"""Template slots left in: "[ ]", "[...]", "[task_description]", "<<<REPORT>>>", "{name}"."""

QUOTED = re.compile(r"\"[^\"]*\"|\u201c[^\u201d]*\u201d|(?<![a-z])'[^']*'(?![a-z])", re.I)
"""Quoted spans: a rubric may quote what a text says ("I don't know")."""


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


def restated_text(text: str, shown: Iterable[str], *, min_named: int = 4) -> bool:
    """Whether every content word of ``text`` (at least ``min_named``, quality words aside) is in one shown text.

    The trigram ``copy`` share misses a content sentence said with other
    function words ("Chow serves comfort food, which is good for dinner"
    from "Chow serves comfort food and is good for dinner"); a rubric names
    a quality, so its words are not all found in one judged text.
    """
    # a list number ("1. Chow serves...") is not a word of the text
    named = {w for w in content_words(text) if not w.isdigit()} - QUALITY_STEMS
    if len(named) < min_named:
        return False
    return any(named <= _content_stems(other) for other in shown if other)


@lru_cache(maxsize=4096)
def _content_stems(text: str) -> frozenset[str]:
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


MAX_COPIED = 0.6
"""Share of an entry's word trigrams found in a shown text at which it is a ``copy`` (``max_copied``)."""


def check_entry(text: str, *, kind: str, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                min_words: int = 3, max_chars: int = 600, max_copied: float = MAX_COPIED, max_similarity: float = 0.8,
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
    if kind in ("hypothesis", "criterion") and restated_text(text, shown):
        return RubricCheck(text, False, "copy", "every word of it that names something is in one text the "
                                                "prompt showed: it restates that text")
    for earlier in accepted:
        similarity = jaccard(text, earlier)
        if similarity >= max_similarity:
            return RubricCheck(text, False, "near_duplicate",
                               f"{similarity:.0%} the same words as {earlier[:60]!r}")
    if kind != "explanation":
        slot = SLOT.search(text)
        if slot:
            return RubricCheck(text, False, "placeholder", f"a template slot is left in: {slot.group(0)!r}")
        pair = stutter(words)
        if pair:
            return RubricCheck(text, False, "stutter", f"says {pair!r} twice in a row, more than once")
    if kind in ("hypothesis", "criterion"):
        speaker = sorted(set(_words(QUOTED.sub(" ", text))) & FIRST_PERSON)
        if speaker:
            return RubricCheck(text, False, "first_person",
                               f"speaks as a person ({', '.join(speaker)}) instead of describing the text")
    if kind == "hypothesis" and {"hypothesis", "hypotheses"} & set(words):
        return RubricCheck(text, False, "meta", "talks about a hypothesis instead of stating one")
    if kind in ("hypothesis", "criterion") and RATERS & set(words) and not (OUTPUT_NOUNS | CHECK_VERBS) & set(words):
        return RubricCheck(text, False, "about_raters", "describes the raters, not a quality of the judged text")
    return _quality(text, words, kind)


def _quality(text: str, words: Sequence[str], kind: str) -> RubricCheck:
    """The last rule, ``no_quality`` (callers may lift it, see :func:`shares_topic`)."""
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


def stutter(words: Sequence[str]) -> str:
    """The word said twice in a row, when that happens at least twice in ``words`` ("" otherwise).

    Once can be English ("that that"); twice is a generation that lost its way.
    """
    pairs = [w for a, w in zip(words, words[1:]) if a == w]
    return f"{pairs[0]} {pairs[0]}" if len(pairs) >= 2 else ""


def _stem(word: str) -> str:
    return word[:5]  # "coherent" / "coherence", "naturally" / "natural"


def content_words(text: str) -> set[str]:
    """Stems of the words of ``text`` that name something: no function word, no name of the judged text.

    Numbers count ("at most 50 words" says more than "at most 20 words").
    """
    return {_stem(w) for w in _words(text) if w not in STOP_WORDS and w not in OUTPUT_NOUNS
            and (len(w) > 1 or w.isdigit())}


REPORTED_SCORE = re.compile(r"\b\d+(?:\.\d+)?\s+out\s+of\s+\d+\b|\b\d+\.\s?\d+\b"
                            r"|\b\d+(?:\.\d+)?\s?% of (?:the )?(?:responses|outputs|summaries|items|texts|utterances"
                            r"|stories|replies|answers)\b", re.IGNORECASE)
"""A score stated in a criterion's definition: a decimal ("Human Rating of 100.00", "5. 92"), "4.9 out of 10",
or a share of the judged texts ("92% of the responses are easy to understand")."""


def name_key(name: str) -> str:
    """A name as the stems of its words, in order: "Slot coverage" and "slot  coverage!" are one name, "part 0
    part 1" and "part 1 part 0" are two (the order is kept; :func:`content_words` is a set)."""
    return " ".join(_stem(w) for w in _words(name)) or name.strip().lower()


def named_nothing(name: str) -> bool:
    """Whether a criterion's name is a placeholder: no word left once function words, names of the judged
    text, placeholder words ("criterion", "name"), numbers and single letters are removed."""
    return not {w for w in _words(name) if w not in STOP_WORDS and w not in OUTPUT_NOUNS
                and w not in PLACEHOLDER_WORDS and not w.isdigit() and len(w) > 1}


def check_criterion(name: str, definition: str, *, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                    parent: Sequence[str] = (), **limits: float) -> RubricCheck:
    """Check a named criterion ("name: definition", as one text) with the rules of a name and a parent.

    The text is ``"{name}: {definition}"`` (the definition defaults to the
    name), checked by :func:`check_entry` as a ``criterion``; then, before
    ``no_quality`` (which callers may lift for a facet of its parent), the
    name must name something (``placeholder``), the definition must say more
    than the name (``circular``) and must not be mostly copied from a shown
    text on its own (``copied_definition``), and a sub-criterion must add a
    word to ``parent`` (its parent's name and definition; ``restates_parent``).

    Parameters
    ----------
    name, definition : str
        The criterion as generated.
    shown, accepted, **limits
        As for :func:`check_entry`.
    parent : sequence of str
        The parent criterion's name and definition; empty when there is none.
    """
    definition = (definition or "").strip() or name
    text = f"{name}: {definition}"
    check = check_entry(text, kind="criterion", shown=shown, accepted=accepted, **limits)
    if not check.ok and check.rule != "no_quality":
        return check
    if named_nothing(name):
        return RubricCheck(text, False, "placeholder", f"the name {name.strip()[:40]!r} names nothing")
    reported = REPORTED_SCORE.search(definition)
    if reported:
        return RubricCheck(text, False, "reports_score", f"its definition reports a score ({reported.group(0)!r}) "
                                                         "instead of saying what is checked")
    said = content_words(definition) - PRAISE_WORDS_STEMS
    if said <= content_words(name):
        return RubricCheck(text, False, "circular", "the definition only repeats the name")
    if len(_words(definition)) >= 5:
        share = copied_share(definition, shown)
        if share >= limits.get("max_copied", MAX_COPIED):
            return RubricCheck(text, False, "copied_definition",
                               f"{share:.0%} of its definition is copied from a text the prompt showed")
    parent_words = set().union(*(content_words(p) for p in parent)) if parent else set()
    # SmolLM2 named its only child after the parent ("Informativeness" under informativeness) and gave it a new
    # definition of the same quality: the tree would hold the parent twice under two scores
    if parent and content_words(name) - PRAISE_WORDS_STEMS <= content_words(parent[0]):
        return RubricCheck(text, False, "restates_parent", f"its name adds nothing to its parent's, {parent[0][:40]!r}")
    if parent and content_words(text) - PRAISE_WORDS_STEMS <= parent_words:
        return RubricCheck(text, False, "restates_parent",
                           f"adds nothing to its parent {parent[0][:40]!r}: only its words and praise")
    return check


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


FILLER = re.compile(r"^(?:(?:is|are|also|often|always|should|must|will|would|can|could|be|one|that|which|who|it)"
                    r"\s+)+")
"""The words a statement's body starts with before it names anything ("is one that has ...")."""


VAGUE_WORDS = frozenset("""
perfect perfectly ideal ideally fine nice wonderful amazing example examples way ways thing things kind type sort mix
piece part manner
""".split())
"""Words of a statement that name no facet ("A good utterance is a perfect example of naturalness"): with
praise and the parent's words they leave a statement saying nothing new."""
VAGUE_STEMS = frozenset(w[:5] for w in VAGUE_WORDS)


FRAME_WORDS = frozenset("should must".split())
"""Quality words that, in a statement, only continue its frame ("A good response should provide guidance for
others"): they name no quality there."""


SCORING_WORDS = frozenset("""
criteria criterion score scores scored scoring scale rating ratings rated metric metrics aggregated evaluation
evaluated evaluator hypothesis hypotheses
""".split())
"""Words of the scoring itself: a statement that uses them talks about the evaluation ("adheres to the specified
criteria of coherence, which can be measured using a scoring system", "can be broken down into five specific
hypotheses"), not about the judged text."""


def is_statement(text: str, opener: str) -> bool:
    """Whether ``text`` is a statement that starts with ``opener`` ("A good summary ..."; any case): a
    criterion whose name is taken from it (:func:`statement_name`)."""
    return bool(opener) and (text or "").strip().lower().startswith(opener.lower() + " ")


def statement_body(statement: str, opener: str) -> str:
    """What a statement says after its opener ("A good summary ..."), without the closing full stop."""
    text = (statement or "").strip()
    if opener and text.lower().startswith(opener.lower()):
        text = text[len(opener):]
    return text.strip().rstrip(".").strip()


def statement_name(statement: str, opener: str, *, max_words: int = 6) -> str:
    """A short name for a criterion written as a statement: its body up to the first comma, at most
    ``max_words`` words, without the leading "is one that" ("A good summary is consistent with the article's
    content." -> "Consistent with the article's content")."""
    body = statement_body(statement, opener)
    clauses = [c.strip() for c in re.split(r"[,;]", body) if c.strip()] or [body]
    # the first clause that names something: "is a good one, with no false information" -> "With no false..."
    clause = next((c for c in clauses if content_words(c) - PRAISE_WORDS_STEMS - VAGUE_STEMS), clauses[0])
    named = FILLER.sub("", clause.lower()).strip() or clause or body
    words = named.split()
    name = " ".join(words[:max_words]) + ("\u2026" if len(words) > max_words else "")
    return name[:1].upper() + name[1:]


def check_statement(statement: str, *, opener: str, shown: Sequence[str] = (), accepted: Sequence[str] = (),
                    parent: Sequence[str] = (), topics: Sequence[str] = (), **limits: float) -> RubricCheck:
    """Check a criterion written as a statement that starts with ``opener`` ("A good summary has ...").

    The statement is checked by :func:`check_entry` as a ``criterion``; then
    its body (the words after the opener) must say something besides praise
    (``empty``: "A good response is a great one"), must not report a score
    (``reports_score``) or be copied from a shown text on its own (``copy``;
    the shared opener dilutes the share), a sub-criterion must add a word
    to ``parent`` (``restates_parent``: "A good response has high
    naturalness" under naturalness), and it must not talk about the scoring
    (``about_scoring``). ``no_quality`` is decided on the body
    (the opener's "good" is a quality word), where praise (:data:`PRAISE_WORDS`:
    "well", "good", "high") and the frame's "should" or "must" name no quality, and lifted when the body names a
    content word of ``topics`` (:func:`shares_topic`).
    """
    body = statement_body(statement, opener)
    check = check_entry(statement, kind="criterion", shown=shown, accepted=accepted, **limits)
    if not check.ok and check.rule != "no_quality":
        return check
    said = {w for w in content_words(body) if not w.isdigit()} - PRAISE_WORDS_STEMS - VAGUE_STEMS
    if not said:
        return RubricCheck(statement, False, "empty", "says nothing but praise")
    reported = REPORTED_SCORE.search(body)
    if reported:
        return RubricCheck(statement, False, "reports_score", f"reports a score ({reported.group(0)!r}) instead of "
                                                              "saying what is checked")
    if len(_words(body)) >= 5:
        share = copied_share(body, shown)
        if share >= limits.get("max_copied", MAX_COPIED):
            return RubricCheck(statement, False, "copy", f"{share:.0%} of it is copied from a text the prompt showed")
    if parent and said <= set().union(*(content_words(p) for p in parent)):
        return RubricCheck(statement, False, "restates_parent",
                           f"adds nothing to its parent {parent[0][:40]!r}: only its words and praise")
    scoring = sorted(set(_words(body)) & SCORING_WORDS)
    if scoring:
        return RubricCheck(statement, False, "about_scoring", f"talks about the scoring ({', '.join(scoring)}), "
                                                              "not about the judged text")
    # the opener's "good" is a quality word: the body must name one itself (or a topic word), and praise does
    # not count ("is well documented by the following points", "sometimes that is a good one": SmolLM2's
    # Active-Critic criteria), nor does naming the judged output again ("does not exist, such as saying this
    # summary to a machine")
    facet = " ".join(w for w in _words(body) if w not in OUTPUT_NOUNS)
    if not set(_words(body)) & (QUALITY_WORDS - PRAISE_WORDS - FRAME_WORDS) and not shares_topic(facet, topics):
        return RubricCheck(statement, False, "no_quality", "names no quality, judgement or score")
    return RubricCheck(statement, True)

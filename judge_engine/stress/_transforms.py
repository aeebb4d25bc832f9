"""The transformations: seeded functions from an output to its perturbed twin, kept in a registry by name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class StressContext:
    """What a transformation may read besides the output it perturbs."""

    source: str
    """The item's input (article, dialogue, prompt): swapped names and numbers are drawn against it."""
    others: tuple[str, ...]
    """Outputs of items from other groups (other sources), for a transformation that swaps in one of them."""


Perturb = Callable[[str, np.random.Generator, StressContext], str]
"""``perturb(text, rng, context) -> text``: deterministic given ``rng``; returning ``text`` unchanged means the
transformation does not apply to this item (it is counted, not scored)."""


@dataclass(frozen=True)
class Transformation:
    """One perturbation of an output whose effect on some aspects is known."""

    name: str
    """Registry key, as the table and ``--transform`` name it."""
    perturb: Perturb
    """The function itself (see :data:`Perturb`)."""
    description: str
    """One line for tables and help texts."""
    lowers: tuple[str, ...] = ()
    """Aspects (keys of the table's ``[aspects]``) it should lower when the table does not say; the built-ins
    leave this to the table."""
    neutral: bool = False
    """A change that should not matter to any aspect (when the table does not say)."""


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
"""Where one sentence ends and the next begins: punctuation followed by white space."""


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (empty pieces dropped)."""
    return [s for s in SENTENCE_END.split(text.strip()) if s]


def sentence_shuffle(text: str, rng: np.random.Generator, context: StressContext) -> str:
    parts = sentences(text)
    if len(set(parts)) < 2:
        return text
    while True:  # a permutation that leaves every sentence in place is no shuffle
        order = rng.permutation(len(parts))
        shuffled = [parts[i] for i in order]
        if shuffled != parts:
            return " ".join(shuffled)


TYPO_SHARE = 0.3
"""Share of the words of three letters or more that get one typo."""


def char_noise(text: str, rng: np.random.Generator, context: StressContext) -> str:
    words = text.split(" ")
    for k, word in enumerate(words):
        if len(word) < 3 or not word.isalpha() or rng.random() >= TYPO_SHARE:
            continue
        i = int(rng.integers(0, len(word) - 1))
        kind = int(rng.integers(0, 3))
        if kind == 0:  # two neighbouring letters swapped
            word = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        elif kind == 1:  # a letter dropped
            word = word[:i] + word[i + 1:]
        else:  # a letter doubled
            word = word[:i] + word[i] + word[i:]
        words[k] = word
    return " ".join(words)


def truncate_half(text: str, rng: np.random.Generator, context: StressContext) -> str:
    words = text.split()
    if len(words) < 2:
        return text
    return " ".join(words[: len(words) // 2])


def other_group_output(text: str, rng: np.random.Generator, context: StressContext) -> str:
    candidates = [o for o in context.others if o.strip() and o != text]
    if not candidates:
        return text
    return candidates[int(rng.integers(0, len(candidates)))]


def repeated_sentences(text: str, rng: np.random.Generator, context: StressContext) -> str:
    parts = sentences(text)
    if not parts:
        return text
    # about half the sentences said twice, at least one
    twice = set(int(i) for i in rng.choice(len(parts), size=max(1, len(parts) // 2), replace=False))
    return " ".join(p for i, s in enumerate(parts) for p in ([s, s] if i in twice else [s]))


IRRELEVANT_PASSAGES = (
    "The recipe calls for two cups of flour, a pinch of salt and butter softened at room temperature.",
    "Migrating birds use the Earth's magnetic field and the position of the sun to find their way south.",
    "The new smartphone has a larger battery, a brighter screen and three cameras on the back.",
    "Regular stretching before a run lowers the risk of muscle injury, according to many coaches.",
)
"""Passages about nothing any judged text is about; one is appended per item."""


def appended_irrelevant(text: str, rng: np.random.Generator, context: StressContext) -> str:
    return text.rstrip() + " " + IRRELEVANT_PASSAGES[int(rng.integers(0, len(IRRELEVANT_PASSAGES)))]


NUMBER = re.compile(r"\d+")
NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")
"""A capitalised word that does not start a sentence: a name, most of the time."""


def swapped_names_numbers(text: str, rng: np.random.Generator, context: StressContext) -> str:
    def other_number(match: re.Match) -> str:
        return str(int(match.group(0)) + int(rng.integers(2, 9)))  # never the same number, never a negative one

    out = NUMBER.sub(other_number, text)
    names = list(dict.fromkeys(NAME.findall(out)))
    source_names = [n for n in dict.fromkeys(NAME.findall(context.source)) if n not in names]
    if len(names) >= 2:  # two names of the output trade places
        a, b = (names[int(i)] for i in rng.choice(len(names), size=2, replace=False))
        out = re.sub(rf"\b({re.escape(a)}|{re.escape(b)})\b", lambda m: b if m.group(0) == a else a, out)
    elif names and source_names:  # the only name replaced by another the source mentions
        out = re.sub(rf"\b{re.escape(names[0])}\b", source_names[int(rng.integers(0, len(source_names)))], out)
    return out


def whitespace(text: str, rng: np.random.Generator, context: StressContext) -> str:
    gaps = [m.start() for m in re.finditer(r" ", text)]
    if not gaps:
        return text + "\n"
    doubled = set(int(i) for i in rng.choice(gaps, size=max(1, len(gaps) // 4), replace=False))
    return "".join(ch + (" " if i in doubled else "") for i, ch in enumerate(text)) + "\n"


SYNONYMS = {"big": "large", "large": "big", "small": "little", "begin": "start", "start": "begin",
            "buy": "purchase", "help": "assist", "quick": "fast", "fast": "quick", "said": "stated",
            "about": "around", "also": "additionally", "many": "numerous", "show": "display",
            "shows": "displays", "often": "frequently", "whole": "entire", "end": "finish", "got": "received",
            "answer": "reply", "choose": "pick", "important": "significant", "hard": "difficult"}
"""Word for word swaps that change no meaning in ordinary prose (lower case; a capital is kept)."""


def synonym(text: str, rng: np.random.Generator, context: StressContext) -> str:
    def swap(match: re.Match) -> str:
        word = match.group(0)
        new = SYNONYMS.get(word.lower())
        if new is None:
            return word
        return new.capitalize() if word[0].isupper() else new

    return re.sub(r"\b[A-Za-z]+\b", swap, text)


BUILT_IN = (
    Transformation("sentence_shuffle", sentence_shuffle, "the sentences in a random order"),
    Transformation("char_noise", char_noise, f"typos (a letter swapped, dropped or doubled) in about "
                                             f"{TYPO_SHARE:.0%} of the words"),
    Transformation("truncate_half", truncate_half, "the first half of the words only"),
    Transformation("other_group_output", other_group_output, "the output of an item from another group"),
    Transformation("repeated_sentences", repeated_sentences, "about half the sentences said twice"),
    Transformation("appended_irrelevant", appended_irrelevant, "an irrelevant passage appended"),
    Transformation("swapped_names_numbers", swapped_names_numbers,
                   "numbers changed and names swapped (or replaced by another name from the source)"),
    Transformation("whitespace", whitespace, "extra spaces and a final line break (should not matter)"),
    Transformation("synonym", synonym, "common words swapped for synonyms (should not matter)"),
)

TRANSFORMATIONS: dict[str, Transformation] = {t.name: t for t in BUILT_IN}
"""Every transformation by name: the built-ins and those added with :func:`register_transformation`."""


def register_transformation(name: str, perturb: Perturb, *, description: str = "", lowers: tuple[str, ...] = (),
                            neutral: bool = False, replace: bool = False) -> Transformation:
    """Add a transformation a user wrote in Python; returns its record.

    ``perturb(text, rng, context)`` returns the perturbed output (see :data:`Perturb`); ``lowers`` names the
    aspects it should lower and ``neutral`` marks a change that should not matter, unless a table file says
    otherwise. A name already taken is refused unless ``replace``.
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a transformation's name is letters, digits, '_' and '-', not {name!r}")
    if name in TRANSFORMATIONS and not replace:
        raise ValueError(f"a transformation named {name!r} exists already (replace=True to replace it)")
    if not callable(perturb):
        raise ValueError(f"transformation {name!r}: perturb must be a function (text, rng, context) -> text")
    if neutral and lowers:
        raise ValueError(f"transformation {name!r} cannot both lower {', '.join(lowers)} and be neutral")
    record = Transformation(name, perturb, description or name, tuple(lowers), bool(neutral))
    TRANSFORMATIONS[name] = record
    return record


def unregister_transformation(name: str) -> None:
    """Remove a transformation added with :func:`register_transformation` (the built-ins stay)."""
    if name in {t.name for t in BUILT_IN}:
        raise ValueError(f"{name!r} is built in and stays")
    TRANSFORMATIONS.pop(name, None)

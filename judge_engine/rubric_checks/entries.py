"""The entry point every method uses: :func:`check_entry` runs the refusing rules, then the flags, on one
generated entry; :func:`check_entries` on several in order.

Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

from typing import Sequence

from .addressed import addressed_flags, addressed_refusal, merge_flags
from .flags import _vocabulary_flags, lift_for_topic, restates_aspect
from .records import KINDS, RubricCheck
from .shape import MAX_COPIED, MAX_ENTRY_CHARS, _shape
from .tokens import _words


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
    refused = addressed_refusal(text)
    if refused:
        return refused
    check = RubricCheck(text, True, flags=_vocabulary_flags(text, words, kind, output))
    check = merge_flags(check, addressed_flags(text, kind))
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

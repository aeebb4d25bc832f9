"""Named criteria ("Name: definition"): the rules of a name, of its definition and of a sub-criterion's
parent, on top of :func:`~.entries.check_entry`.

Moved out of the single module ``judge_engine/rubric_checks.py`` (issue 46 item 7); the package re-exports
every public name, so callers import from :mod:`judge_engine.rubric_checks` as before.
"""

from __future__ import annotations

from typing import Sequence

from ..rubric_words import FIELD_WORDS, PRAISE_WORDS, STOP_WORDS, TEMPLATE_WORDS, beyond, covered
from .entries import check_entry
from .flags import lift_for_topic, restates_aspect
from .records import RubricCheck, RubricFlag, _refuse
from .shape import MAX_COPIED, copied_share, template_slot
from .tokens import IDEOGRAPH, _is_output_noun, _words, content_words, output_words


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

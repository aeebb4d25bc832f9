"""The rubric checks' flags beside a generated entry, in words (:mod:`judge_engine.rubric_checks`)."""

from __future__ import annotations

from typing import Any, Iterable

from pages.ui.messages import escape_markdown


MODEL_CHECK_LABEL = "the judge's own model's check, not a rule"
"""How a refusal or flag of :mod:`judge_engine.rubric_model_check` is named beside its reason (issue 65)."""


def rule_label(rule: str | None) -> str:
    """A check's name in words: a rule's with spaces ("no quality"), the model's check as :data:`MODEL_CHECK_LABEL`."""
    from judge_engine.rubric_model_check import RULE

    rule = str(rule or "").strip()
    return MODEL_CHECK_LABEL if rule == RULE else rule.replace("_", " ")


def refusal_text(entry: dict[str, Any]) -> str:
    """Why a generated entry was refused, in words: "label: reason" (:func:`rule_label`)."""
    label, reason = rule_label(entry.get("rule")), str(entry.get("reason") or "").strip()
    return f"{label}: {reason}" if label and reason else label or reason


def checked_by(llm: dict[str, Any] | None) -> str:
    """Which checks read the run's generated text, in words, from its backend (a run's ``llm`` dict)."""
    from judge_engine.rubric_model_check import applies_to

    backend = str((llm or {}).get("backend") or "llamacpp")
    if applies_to(backend):
        return ("The rules and the judge's own model checked the generated text (one request per entry the rules "
                "accepted); a refusal or flag by the model says so, and you can override it like a rule's.")
    return ("Only the rules checked the generated text: on the embedded (llama.cpp) model the judge's own model does not read "
            "what it generated (a model this small cannot tell an order to the evaluator from a criterion). On "
            "a server backend it does.")


def flag_text(flags: Iterable[dict[str, Any]] | None) -> str:
    """The flags of a generated rubric entry in words: "reason (rule); reason (rule)"; "" when it has none.

    ``flags`` are the ``{rule, reason}`` dicts the rubric checks attach to an
    entry they let through with a doubt (:mod:`judge_engine.rubric_checks`);
    a rule reads with spaces ("no quality"), the model's check as
    :data:`MODEL_CHECK_LABEL`. Plain text, for a table cell: Markdown goes
    through :func:`flag_caption`.
    """
    parts: list[str] = []
    for flag in flags or []:
        rule = rule_label(flag.get("rule"))
        reason = str(flag.get("reason") or "").strip()
        part = f"{reason} ({rule})" if reason and rule else reason or rule
        if part and part not in parts:
            parts.append(part)
    return "; ".join(parts)


def flag_caption(flags: Iterable[dict[str, Any]] | None) -> str:
    """"Flagged: reason (rule); ..." as Markdown for ``st.caption``; "" when there is no flag.

    Escaped: a reason can quote the generated text (a name, a score it states).
    """
    text = flag_text(flags)
    return escape_markdown(f"Flagged: {text}") if text else ""


def flags_by(entries: Iterable[dict[str, Any]] | None, field: str = "text") -> dict[str, list[dict[str, Any]]]:
    """The flags of ``Judge.state["flagged"]`` entries, by each entry's ``field`` (its text, or its name)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in entries or []:
        out.setdefault(str(entry.get(field) or ""), []).extend(entry.get("flags") or [])
    return out


def accept_control(store: Any, owner: str, key: str, text: str, flags: Iterable[dict[str, Any]], *,
                   widget_key: str) -> None:
    """Who accepted this flagged entry and when, or an *Accept with its flags* button recording the person.

    The acceptance is an audit entry of the run's curation owner (:func:`judge_engine.curation.accept_flags`);
    it holds for ``text`` as it reads now, so an entry edited since asks again once flagged again.
    """
    import time

    import streamlit as st

    from judge_engine import curation
    from pages.ui import auth

    flags = list(flags or [])
    if not flags:
        return
    done = curation.flag_acceptances(store, owner, {key: text}).get(key)
    if done is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(done.when))
        st.caption(escape_markdown(f"Accepted with its flags by {done.actor} on {when}."))
        return
    st.caption("The checks let this entry into the judge with a doubt: read it, then accept it, edit it or "
               "reject it.")
    if st.button("Accept with its flags", key=widget_key):
        try:
            curation.accept_flags(store, owner, key, text=text, flags=flags, actor=auth.actor())
        except ValueError as exc:  # a viewer, or no name given: nothing was recorded
            st.error(escape_markdown(f"Not accepted: {exc}"))
            return
        st.rerun()


def judge_flags_panel(store: Any, run: Any, *, widget_prefix: str) -> None:
    """The judge's own flagged entries, each with its flags and who accepted it (or the *Accept* button).

    The entries and their keys are :func:`judge_engine.judge_flags.flagged_in_judge`'s, the ones the run summary
    and the trust report count, so an acceptance here is the one they report. The entry as the judge uses it: an
    edit since is a new run's entry, not this judge's. Outside any form: a button cannot sit in one.
    """
    import streamlit as st

    from judge_engine import curation
    from judge_engine.judge_flags import flagged_in_judge

    found = flagged_in_judge(run.method, run.judge_state or {})
    if not found:
        return
    st.markdown(f"**Flagged entries in the judge ({len(found)})**")
    owner = curation.owner(run.method, run.id)
    for entry in found:
        # the flags in the entry's own line: the captions beside the editable text stay the ones that say it there
        st.markdown(escape_markdown(f"{entry.key}: {entry.text[:300]} (flagged: {flag_text(entry.flags)})"))
        accept_control(store, owner, entry.key, entry.text, entry.flags,
                       widget_key=f"{widget_prefix}_accept_{run.id}_{entry.key}")

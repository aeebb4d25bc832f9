"""The hypothesis bank's entries: JSON-native dicts keyed by a hash of their text, kept in ``Judge.state``."""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

from ...criteria_scoring import CriterionText

ORIGINS = ("initial", "wrong_examples", "literature", "curated")


def hypothesis_key(text: str) -> str:
    """Stable key of a hypothesis: a hash of its text, so an edited text is a new hypothesis."""
    return "h" + hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()[:10]


def as_criterion(text: str) -> CriterionText:
    """The hypothesis as the shared per-criterion scorer sees it (name fixed: the prompt depends on the text only)."""
    return CriterionText(key=hypothesis_key(text), name="Hypothesis", definition=text)


def new_entry(text: str, origin: str, **extra: Any) -> dict[str, Any]:
    """A bank entry: JSON-native, so the whole bank can live in ``Judge.state``."""
    return {"key": hypothesis_key(text), "text": text, "origin": origin, "scores": {}, "reward": None,
            "acc": None, "n_evaluated": 0, **extra}


def curated_entries(hypotheses: Sequence[Any]) -> list[dict[str, Any]]:
    """A person's curated hypotheses as bank entries (texts or dicts with ``text`` and optional ``origin``)."""
    out, seen = [], set()
    for h in hypotheses:
        text = (h if isinstance(h, str) else h["text"]).strip()
        origin = "curated" if isinstance(h, str) else h.get("origin", "curated")
        if text and hypothesis_key(text) not in seen:
            seen.add(hypothesis_key(text))
            out.append(new_entry(text, origin if origin in ORIGINS else "curated", s_h=[]))
    return out

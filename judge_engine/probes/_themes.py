"""What the explanations of over- and under-scored items talk about (TF-IDF terms clustered with k-means)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._common import rank_difference

DISAGREEMENT_SHARE = 0.25
"""An item is over- (under-) scored when the judge ranks it at least this share of the items above (below)
where the humans rank it; explanation themes are drawn from these items."""

MAX_THEMES = 3
"""Most themes per side (over-scored, under-scored)."""

MIN_THEME_TEXTS = 4
"""Fewest explanations on a side to cluster; fewer are listed as they are, with a note."""


@dataclass(frozen=True)
class Theme:
    """A cluster of explanations, named by the terms that weigh most in its centre."""

    terms: tuple[str, ...]
    count: int
    examples: tuple[str, ...]
    """Up to two sample ids of explanations in it (the closest to its centre first)."""


@dataclass(frozen=True)
class Themes:
    """What the explanations of over-scored and of under-scored items talk about."""

    over: tuple[Theme, ...]
    under: tuple[Theme, ...]
    n_over: int
    """Over-scored items with an explanation."""
    n_under: int
    note: str = ""


_TOKEN = r"(?u)\b[^\W\d_]{3,}\b"
"""Words of three or more letters in any script (digits and score numbers say nothing about a theme)."""


def _themes(texts: list[str], ids: list[str], seed: int) -> tuple[Theme, ...]:
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    if len(texts) < MIN_THEME_TEXTS:
        return ()
    try:
        matrix = TfidfVectorizer(stop_words="english", token_pattern=_TOKEN, sublinear_tf=True,
                                 max_features=2000).fit(texts)
    except ValueError:  # nothing but stop words
        return ()
    x = matrix.transform(texts)
    terms = np.array(matrix.get_feature_names_out())
    k = max(1, min(MAX_THEMES, len(texts) // MIN_THEME_TEXTS, len(set(texts))))
    model = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(x)
    themes = []
    for c in range(k):
        members = np.flatnonzero(model.labels_ == c)
        if members.size == 0:
            continue
        centre = model.cluster_centers_[c]
        top = tuple(str(terms[t]) for t in np.argsort(-centre)[:4] if centre[t] > 0)
        dist = np.linalg.norm(x[members].toarray() - centre, axis=1)
        examples = tuple(ids[i] for i in members[np.argsort(dist)][:2])
        themes.append(Theme(top, int(members.size), examples))
    themes.sort(key=lambda t: -t.count)
    return tuple(themes)


def explanation_themes(sample_ids: Sequence[str], human: Sequence[float], judge: Sequence[float],
                       explanations: Sequence[str], *, seed: int = 0) -> Themes:
    """Themes of the explanations of over-scored and of under-scored items (no call; needs explanations)."""
    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    texts = [re.sub(r"\s+", " ", str(e or "")).strip() for e in explanations]
    if not any(texts):
        return Themes((), (), 0, 0, note="this run has no explanations: its method gave scores without reasons "
                                         "(Active-Critic, reasoning-before-score runs and HD-Eval's criteria do)")
    diff = rank_difference(h, j) if h.size else np.zeros(0)
    sides = {}
    for side, mask in (("over", diff >= DISAGREEMENT_SHARE), ("under", diff <= -DISAGREEMENT_SHARE)):
        chosen = [i for i in np.flatnonzero(mask) if texts[i]]
        sides[side] = ([texts[i] for i in chosen], [str(sample_ids[i]) for i in chosen])
    over = _themes(*sides["over"], seed)
    under = _themes(*sides["under"], seed)
    few = [f"{len(sides[s][0])} {s}-scored" for s in ("over", "under") if len(sides[s][0]) < MIN_THEME_TEXTS]
    note = (f"{' and '.join(few)} items with an explanation: too few to cluster (at least {MIN_THEME_TEXTS})"
            if few else "")
    return Themes(over, under, len(sides["over"][0]), len(sides["under"][0]), note)

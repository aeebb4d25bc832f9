"""Which training items HPSS validates its strategies on (the whole train split, or a seeded or short subset).

Every strategy rates every validation item, so this choice sets both what the fitness measures and most of a
fit's cost. Moved out of :mod:`judge_engine.methods.hpss.method` (issue 46 item 7), which re-exports these names.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np

from ...records import Aspect, Sample


MIN_GROUP_ITEMS = 3
"""Fewest items of a group a group-level validation set keeps from a group it cannot take whole: a
per-group Spearman over fewer is either undefined or a single sign."""


def group_level_problem(train: Sequence[Sample]) -> str:
    """Why a per-group validation Spearman is undefined on ``train`` (every group a single item), in words;
    empty when some group has two or more."""
    counts = Counter(s.group_id for s in train)
    if max(counts.values(), default=0) >= 2:
        return ""
    return (f"the {len(train)} training items come from {len(counts)} sources, one from each, and a per-source "
            "correlation needs two or more")


def item_chars(sample: Sample) -> int:
    """Characters of a sample's texts, which its judge prompts repeat whole."""
    return len(sample.input) + len(sample.output) + len(sample.context or "")


def shortest_spread(train: Sequence[Sample], size: int, aspect: Aspect | None) -> list[int]:
    """Indices of ``size`` short samples with as many different human scores as they can have: shortest
    first, skipping a sample whose score of ``aspect`` is already taken while a sample with another score is
    left, then the shortest of the rest (ties in split order). Without ``aspect``, simply the shortest."""
    by_length = sorted(range(len(train)), key=lambda i: (item_chars(train[i]), i))
    picked: list[int] = []
    if aspect is not None:
        seen: set[float] = set()
        for i in by_length:
            score = train[i].human.get(aspect.name)
            if score is None or not math.isfinite(score) or round(score, 6) in seen:
                continue
            picked.append(i)
            seen.add(round(score, 6))
            if len(picked) == size:
                return picked
    return picked + [i for i in by_length if i not in picked][:size - len(picked)]


def select_validation(train: Sequence[Sample], size: int | None, seed: int, *,
                      by_group: bool = False, shortest: bool = False,
                      aspect: Aspect | None = None) -> tuple[Sample, ...]:
    """The validation set: the train split, or a subset of at most ``size`` samples (in split order).

    The subset is seeded, or with ``shortest`` short samples of different
    human scores of ``aspect`` (:func:`shortest_spread`: a few items of one
    score leave every correlation undefined). With ``by_group`` (group-level fitness)
    groups are taken in a seeded order (``shortest``: by their mean length),
    whole while they fit; the next one that does not fit gives a seeded part
    (its shortest) of its items when at least :data:`MIN_GROUP_ITEMS` places
    are left (the first one always does), so per-group correlations stay
    defined and a size smaller than a group (SummEval's 16 summaries of one
    article) is still the size asked for.
    """
    if size is None or size >= len(train):
        return tuple(train)
    rng = np.random.default_rng(seed)
    if by_group:
        members: dict[str, list[int]] = {}
        for i, s in enumerate(train):
            members.setdefault(s.group_id, []).append(i)
        groups = sorted(members)
        if shortest:
            order = sorted(range(len(groups)), key=lambda g: (
                np.mean([item_chars(train[i]) for i in members[groups[g]]]), g))
        else:
            order = rng.permutation(len(groups)).tolist()
        keep_idx: set[int] = set()
        for g in order:
            left = size - len(keep_idx)
            idx = members[groups[g]]
            if len(idx) <= left:
                keep_idx.update(idx)
                continue
            if keep_idx and left < MIN_GROUP_ITEMS:
                break
            if shortest:
                keep_idx.update(sorted(idx, key=lambda i: (item_chars(train[i]), i))[:left])
            else:
                keep_idx.update(rng.choice(idx, size=left, replace=False).tolist())
            break
        return tuple(s for i, s in enumerate(train) if i in keep_idx)
    if shortest:
        keep = set(shortest_spread(train, size, aspect))
    else:
        keep = set(rng.choice(len(train), size=size, replace=False).tolist())
    return tuple(s for i, s in enumerate(train) if i in keep)

"""Seeded train/test splits that never cut a group."""

from __future__ import annotations

import random

from ..records import Dataset, Split
from ._common import SplitError

# --------------------------------------------------------------------------- splits


def make_split(dataset: Dataset, *, train_size: int = 30, test_size: int | None = None,
               seed: int = 0) -> Split:
    """A seeded train/test split in which no group is in both parts.

    The rule (HypoEval draws its ~30 training items at random from many sources, so
    train is spread over groups; test keeps whole groups so group-level correlations
    stay defined):

    1. The groups are shuffled with ``random.Random(seed)``.
    2. Test. With ``test_size``, test takes whole groups in that shuffled order until it
       holds at least ``test_size`` items; a test group is never cut, so test may hold
       a few more items than asked. Without ``test_size``, test is every group that
       train does not use (step 3).
    3. Train. ``train_size`` items are drawn at random (same seeded generator) from the
       items of the groups left over, spread over as many groups as possible: one item
       from each of the first ``train_size`` left-over groups (in shuffled order), a
       second item from each only when there are fewer groups than ``train_size``, and
       so on. Without ``test_size`` train may use at most half of the groups (more only
       when those cannot hold ``train_size`` items, and never all of them), so test
       keeps at least about half of the groups. The other items of a training group
       are in neither part.

    Ids keep the dataset's order. The same dataset, sizes and seed always give the same
    split. Raises :class:`SplitError` if the dataset is too small for the sizes asked.
    """
    if train_size < 0 or (test_size is not None and test_size < 1):
        raise SplitError(f"train_size must be >= 0 and test_size >= 1 (got {train_size}, {test_size})")
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(dataset.samples):
        groups.setdefault(s.group_id, []).append(i)
    n = len(dataset.samples)
    if len(groups) < 2 and train_size > 0:
        raise SplitError(f"dataset {dataset.name!r} has {len(groups)} group(s); a train/test "
                         "split needs at least 2 groups")
    if train_size >= n:
        raise SplitError(f"dataset {dataset.name!r} has {n} items; train_size={train_size} "
                         "leaves nothing to test on")

    rng = random.Random(seed)
    order = list(groups)
    rng.shuffle(order)

    if test_size is not None:
        test_groups: list[str] = []
        taken = 0
        for g in order:
            if taken >= test_size:
                break
            test_groups.append(g)
            taken += len(groups[g])
        pool = order[len(test_groups):]
        available = sum(len(groups[g]) for g in pool)
        if taken < test_size or available < train_size or (train_size > 0 and not pool):
            raise SplitError(f"dataset {dataset.name!r} has {n} items in {len(groups)} groups: "
                             f"test_size={test_size} (whole groups) plus train_size={train_size} "
                             f"is too large")
    else:
        # train may use at most half of the groups, more only if those cannot hold train_size items
        limit = max(1, len(order) // 2)
        while limit < len(order) - 1 and sum(len(groups[g]) for g in order[:limit]) < train_size:
            limit += 1
        pool = order[:limit]
        if sum(len(groups[g]) for g in pool) < train_size:
            raise SplitError(f"dataset {dataset.name!r} is too small: {train_size} training items "
                             f"take all {len(groups)} groups and leave nothing to test on")

    # each pool group's items in a seeded random order, then one item per group per round
    shuffled = {g: rng.sample(groups[g], len(groups[g])) for g in pool}
    train_idx: list[int] = []
    depth = 0
    while len(train_idx) < train_size:
        for g in pool:
            if depth < len(shuffled[g]):
                train_idx.append(shuffled[g][depth])
                if len(train_idx) == train_size:
                    break
        depth += 1
    train_groups = {dataset.samples[i].group_id for i in train_idx}
    if test_size is None:
        test_groups = [g for g in order if g not in train_groups]
    test_idx = [i for g in test_groups for i in groups[g]]
    samples = dataset.samples
    return Split(dataset=dataset.name, seed=seed,
                 train_ids=tuple(samples[i].id for i in sorted(train_idx)),
                 test_ids=tuple(samples[i].id for i in sorted(test_idx)))

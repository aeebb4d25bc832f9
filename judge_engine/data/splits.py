"""Seeded train/test splits that never share a group between train and test."""

from __future__ import annotations

import math
import random

from ..records import Dataset, Split
from ._common import SplitError

MIN_TEST_GROUPS = 8
"""Fewest groups a sized test part spans where the dataset has them: a group-level figure gets an interval
only over :data:`~judge_engine.metrics.MIN_BOOTSTRAP_UNITS` (5) groups (not imported: this module stays free
of scipy; a test holds the two together), a group whose drawn items tie on either side is skipped, and an
interval over 5-6 groups of 3 items was often wider than a verdict allows: a judge at the human level plus
noise (sd 0.5 on 1-5) was "ok" in 93% of 200 draws of 6 SummEval articles x 3 summaries but 82% on HANNA,
and 100% and 94% at 8 x 3 (the HANNA quick look of a scripted judge that follows the humans, seed 0, was
"too few items to say" at 6 x 3: interval 1.14 wide over 5 groups). Whole groups kept a quick
look's 10 test items in one SummEval article (16 summaries) and the README's ``--test 20`` in two, so no
judge could be called "ok" there, however well it agreed with the humans."""

INTERVAL_GROUPS = 5
"""Groups a group-level interval needs (:data:`~judge_engine.metrics.MIN_BOOTSTRAP_UNITS`): a test part that
cannot span this many keeps whole groups."""

MIN_TEST_ITEMS_PER_GROUP = 3
"""Fewest items a test group gives when it has them: with two, a group's correlation is +1 or -1 (its sign
only). A judge at the human level plus noise (sd 0.5 on 1-5) was "ok" in 93% of 200 draws of 5 SummEval
articles x 3 summaries, 80% at 5 x 2, 97% at 5 x 4 (HANNA 87%, 66%, 94%)."""

# --------------------------------------------------------------------------- splits


def make_split(dataset: Dataset, *, train_size: int = 30, test_size: int | None = None,
               seed: int = 0) -> Split:
    """A seeded train/test split in which no group is in both parts.

    The rule (HypoEval draws its ~30 training items at random from many sources, so
    train is spread over groups; test is spread over enough groups for a group-level
    figure to have an interval, with enough items in each for its correlation to be defined):

    1. The groups are shuffled with ``random.Random(seed)``.
    2. Test. With ``test_size`` on a dataset whose natural level is the group or the system
       (its interval is over groups; at the sample level test keeps whole groups, as below
       when it cannot spread), test takes groups in that shuffled order until it holds
       at least ``test_size`` items, from each group a seeded random
       ``per_group = max(MIN_TEST_ITEMS_PER_GROUP, ceil(test_size / MIN_TEST_GROUPS))``
       of its items (all of a smaller group), and at least :data:`MIN_TEST_GROUPS` groups
       where the dataset has them besides half of its groups (or one per training item)
       for train, so test may hold more items than asked (a quick look's 10: 8 groups x 3
       on SummEval, 24 items); else over :data:`INTERVAL_GROUPS` groups; else (a small
       dataset, no group-level interval either way) whole groups until ``test_size``.
       The other items of a test group are in neither part. Without ``test_size``, test is every group that train does
       not use (step 3).
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

    test_idx: list[int] = []
    if test_size is not None:
        # train keeps at least half of the groups (or one per item), so a small dataset's train stays spread too
        spare = len(order) - min(train_size, len(order) // 2)
        # the widest spread that leaves train its items, then whole groups (0): with fewer groups than an interval
        # needs, spreading buys no verdict and costs train its groups, so test keeps whole groups as it always did
        # a sample-level figure's interval is over items, so there test keeps whole groups as before
        widest = min(MIN_TEST_GROUPS, spare) if dataset.natural_level != "sample" else 0
        spreads = [*range(widest, INTERVAL_GROUPS - 1, -1), 0]
        for spread in spreads:
            test_groups, test_idx, per_group = _test_part(order, groups, test_size, spread, seed)
            pool = order[len(test_groups):]
            fits = len(test_idx) >= test_size and sum(len(groups[g]) for g in pool) >= train_size
            if fits and (pool or train_size == 0):
                break
        else:
            raise SplitError(f"dataset {dataset.name!r} has {n} items in {len(groups)} groups: "
                             f"test_size={test_size} (whole groups, or a few items from each of at least "
                             f"{INTERVAL_GROUPS}) plus train_size={train_size} is too large")
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
        test_idx = [i for g in order if g not in train_groups for i in groups[g]]
    samples = dataset.samples
    return Split(dataset=dataset.name, seed=seed,
                 train_ids=tuple(samples[i].id for i in sorted(train_idx)),
                 test_ids=tuple(samples[i].id for i in sorted(test_idx)))


def _test_part(order: list[str], groups: dict[str, list[int]], test_size: int, spread: int,
               seed: int) -> tuple[list[str], list[int], int]:
    """Test's groups (a prefix of ``order``), its item indices and the items it takes per group: groups in
    order until ``test_size`` items and ``spread`` groups, from each a seeded random ``per_group`` of its items
    (``spread`` 0: whole groups). Its own generator, so a retry with a narrower spread draws the same way."""
    rng = random.Random(f"test-{seed}")
    per_group = max(MIN_TEST_ITEMS_PER_GROUP, math.ceil(test_size / spread)) if spread else len(order) + sum(
        len(g) for g in groups.values())
    test_groups: list[str] = []
    test_idx: list[int] = []
    for g in order:
        if len(test_idx) >= test_size and len(test_groups) >= spread:
            break
        test_groups.append(g)
        test_idx += groups[g] if len(groups[g]) <= per_group else rng.sample(groups[g], per_group)
    return test_groups, test_idx, per_group

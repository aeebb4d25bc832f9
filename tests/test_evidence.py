"""The one rule for evidence (judge_engine.evidence, issue 63): the level a claim is made at, the fewest independent
units it rests on, and one message for each kind of bad group column."""

import pytest

from judge_engine import evidence


@pytest.mark.parametrize("n_groups, claim", [(1, False), (2, False), (4, False), (5, True), (40, True)])
def test_fewer_than_five_sources_carry_no_claim(n_groups, claim):
    groups = [f"doc{k % n_groups}" for k in range(16 * n_groups)]
    found = evidence.basis("sample", n_items=len(groups), groups=groups)
    assert found.claim == claim and found.units == "groups" and found.n_units == n_groups
    if not claim:
        assert found.level is None and "no evidence either way" in found.note and f"{n_groups} source" in found.note


def test_a_group_level_correlation_over_fewer_than_twenty_groups_is_claimed_at_the_items_level():
    ten = [f"g{k // 4}" for k in range(40)]
    found = evidence.basis("group", n_items=40, groups=ten)
    assert found.level == "sample" and found.units == "groups" and "10 groups are too few" in found.note
    twenty = [f"g{k // 4}" for k in range(80)]
    assert evidence.basis("group", n_items=80, groups=twenty).level == "group"
    # the gate's mean difference rests on whole groups from five of them
    assert evidence.basis("sample", n_items=40, groups=ten, statistic="mean").note == ""


def test_independent_items_and_ungrouped_items_are_counted_as_items():
    one_source = ["doc0"] * 16
    told = evidence.basis("sample", n_items=16, groups=one_source, independent=True)
    assert told.claim and told.units == "items" and told.n_units == 16
    alone = evidence.basis("sample", n_items=16, groups=[f"i{k}" for k in range(16)])
    assert alone.claim and alone.units == "items"
    assert not evidence.basis("sample", n_items=3, groups=None).claim  # three items: no claim either


@pytest.mark.parametrize("groups, says", [
    (["d0"] * 12, "has one value for all 12 items"),
    ([f"d{k}" for k in range(12)], "a different value for each of the 12 items (groups of one item)"),
    ([f"d{k // 3}" for k in range(12)], ""),
])
def test_a_group_column_that_groups_all_or_nothing_gets_one_message(groups, says):
    message = evidence.group_problem(groups, column="doc")
    assert (says in message) if says else message == ""
    assert message.count("\n") == 0

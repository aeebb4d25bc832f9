"""The verdict calibration (judge_engine.bench.verdicts) on a small seeded set: ceilings hold, planted effects seen.

The full table (200 draws per scenario, sizes 8 to 200) is in docs/reliability.md; here 40 draws at 50 test
items keep each test to a few seconds. With 40 draws a ceiling of 5% allows 2 firings.
"""

from __future__ import annotations

import json

import pytest

from judge_engine.bench import verdicts

DRAWS, SIZE, SEED = 40, 50, 7


def _claim(start: str) -> verdicts.Claim:
    return next(c for c in verdicts.all_claims() if c.name.startswith(start))


@pytest.mark.parametrize("method", [s.method for s in verdicts.SELECTIONS])
def test_a_noise_judge_chosen_among_the_methods_candidates_is_rarely_ok_and_a_good_one_usually_is(method):
    claim = _claim(f"trust: ok ({method},")
    k = claim.candidates[0]
    noise = verdicts.measure(claim, "noise", SIZE, False, k, DRAWS, SEED)
    assert noise["kind"] == "false alarm" and noise["rate"] <= verdicts.WARNING_CEILING, noise
    good = verdicts.measure(claim, "human_plus_noise", SIZE, False, k, DRAWS, SEED)
    assert good["kind"] == "power" and good["rate"] >= 0.8, good


def test_the_old_training_test_passed_a_noise_winner_far_too_often():
    # the rule before issue 49 (plain t-test on the best of 11): the simulation must see what the issue saw
    claim = _claim("old rule (retired)")
    row = verdicts.measure(claim, "noise", claim.sizes[0], False, 11, DRAWS * 2, SEED)
    assert row["rate"] > 0.1 and row["target"] is None, row


@pytest.mark.parametrize("start, grouped", [
    ("warning: anti-correlated on the test items", False),
    ("warning: anti-correlated on the test items", True),
    ("warning: anti-correlated on its training items", False),
    ("warning: significantly below a baseline", False),
    ("warning: significantly below one of 3 baselines", False),
    ("warning: no test correlation", False),
    ("trust: ok (baseline method", False),
])
def test_each_warning_stays_under_its_ceiling_where_nothing_is_planted_and_fires_where_it_is(start, grouped):
    claim = _claim(start)
    for judge in claim.null:
        row = verdicts.measure(claim, judge, SIZE, grouped, 1, DRAWS, SEED)
        assert row["rate"] <= claim.ceiling, row
    for judge in claim.planted:
        row = verdicts.measure(claim, judge, SIZE, grouped, 1, DRAWS, SEED)
        assert row["rate"] >= 0.5, row


def test_too_few_items_is_said_at_eight_items_and_the_table_names_its_settings(tmp_path):
    claim = _claim("too few items to say")
    assert verdicts.measure(claim, "human_plus_noise", 8, False, 1, 10, SEED)["rate"] == 1.0
    out = tmp_path / "table.md"
    doc = verdicts.run(draws=5, seed=3, sizes=[8], claims=["too few items"], doc_out=str(out))
    text = out.read_text()
    assert "--draws 5 --seed 3" in text and "| too few items to say | power | human_plus_noise |" in text
    assert doc["summary"]["scenarios"] == len(doc["rows"]) == 4  # two judges, with and without groups


def test_probe_claims_join_the_table_when_their_module_exists():
    names = [c.name for c in verdicts.all_claims()]
    assert len(names) == len(set(names)), "two claims with the same name would share a row"
    try:
        from judge_engine.bench import verdict_probes
    except ModuleNotFoundError:
        pytest.skip("no probe claims yet")
    assert all(c.name in names for c in verdict_probes.PROBE_CLAIMS)


def test_the_null_worlds_of_issue_63_run_through_the_real_gate_and_verdict():
    """The gate on 4 sources makes no claim (it said "worse" in 17.5% of such draws when it resampled their items);
    on 40 sources a planted drop is found; a random judge on items with duplicates is not called worse than chance
    and an anti-correlated one is; a healthy integer judge is not called collapsed."""
    gate_claim = _claim("gate: worse")
    assert gate_claim.sizes[0] == 16 and "gate: equal on average" in gate_claim.null
    for grouped in (True, False):  # --group-col given, or the sources found from the repeated inputs
        row = verdicts.measure(gate_claim, "gate: equal on average", 16, grouped, 1, 40, SEED)
        assert row["fired"] == 0, row
        assert verdicts.measure(gate_claim, "gate: drop 0.5", 160, grouped, 1, 10, SEED)["rate"] >= 0.8
    duplicates = _claim("warning: worse than chance, a tenth")
    assert verdicts.measure(duplicates, "noise (duplicates)", 160, False, 1, 40, SEED)["rate"] <= 0.05
    assert verdicts.measure(duplicates, "anti_correlated (duplicates)", 160, False, 1, 10, SEED)["rate"] == 1.0
    integer = _claim("probe: scores collapsed, an integer judge")
    assert verdicts.measure(integer, "integer_judge", 20, False, 1, 40, SEED)["rate"] <= 0.05


def test_the_items_interval_on_grouped_data_holds_its_level_where_items_resampled_one_by_one_did_not():
    """Issue 63 item 1: contexts of six responses sharing a source lean (Topical-Chat-like). A random judge's items'
    interval resampled by whole sources stays near its level; resampled item by item it is far too narrow."""
    whole = _claim("the items' 95% interval excludes zero (items in contexts")
    alone = _claim("old rule (retired): the items' 95% interval excludes zero")
    assert verdicts.measure(whole, "noise (sources)", 120, True, 1, 60, SEED)["rate"] <= 0.05 + 0.05
    assert verdicts.measure(alone, "noise (sources)", 120, True, 1, 60, SEED)["rate"] >= 0.10
    assert verdicts.measure(_claim("trust: ok (items in contexts"), "human_plus_noise (sources)", 240, True, 1, 10,
                            SEED)["rate"] >= 0.5


def test_cells_are_shared_between_processes_resumed_and_rendered_with_their_wilson_interval(tmp_path):
    rows_file = tmp_path / "rows.jsonl"
    kwargs = dict(draws=6, seed=2, sizes=[8, 20], claims=["anti-correlated on its training"])
    whole = verdicts.run(**kwargs)["rows"]
    for shard in ("1/2", "2/2"):
        verdicts.run(**kwargs, shard=shard, rows_out=str(rows_file))
    shared = [json.loads(line) for line in rows_file.read_text().splitlines()]
    key = lambda r: (r["judge"], r["n_items"])  # noqa: E731
    assert sorted(map(key, shared)) == sorted(map(key, whole)) and len(shared) == 4
    assert {key(r): r["fired"] for r in shared} == {key(r): r["fired"] for r in whole}
    assert verdicts.run(**kwargs, rows_out=str(rows_file))["rows"] == []  # every cell already measured
    table = verdicts.cells_markdown(shared).splitlines()
    assert len(table) == 2 + 4 and all(f"{r['fired']} / 6" in line for r, line in zip(shared, table[2:]))
    from judge_engine.metrics import rate_interval
    low, high = rate_interval(shared[0]["fired"], 6)
    assert f"[{low:.3f}, {high:.3f}]" in table[2]

"""bench junk-run: what each method keeps, flags and refuses of a capable model's real and junk entries."""

from __future__ import annotations

from collections import Counter

import pytest

from judge_engine.bench import junk_run


def test_outcomes_count_each_entry_handed_out_once_by_what_became_of_it():
    pools = junk_run.Pools()
    pools.texts([("real", "Summaries that follow the article's order score higher."),
                 ("junk", "1. 5 2. 4 3. 3"), ("junk", "The raters liked some texts more than others."),
                 ("junk", "Good summaries are good.")])
    state = {"bank": [{"text": "Summaries that follow the article's order score higher."},
                      {"text": "Good summaries are good."}],
             "selected": [{"key": "h1", "text": "Summaries that follow the article's order score higher."}],
             "rejected": [{"text": "1. 5 2. 4 3. 3", "rule": "score_list"}],
             "flagged": [{"text": "Good summaries are good.", "flags": [{"rule": "restates_aspect"}]}]}
    notes: list[str] = []
    events = [("rubric_flagged", {"text": "The raters liked some texts more than others.", "flags": []})]
    got = junk_run.outcomes("hypoeval", state, pools, notes, events)
    assert got["real"] == Counter({"passed": 1, "at_end": 1, "in_judge": 1})
    assert got["junk"] == Counter({"refused": 1, "flagged": 2, "at_end": 1})
    assert notes == [], "nothing real refused, no junk passed unflagged"


def test_a_run_on_summeval_accounts_for_every_entry_and_refuses_junk(shared_data):
    doc = junk_run.run(dataset="summeval", train=12, methods=["hypoeval"])
    rows = {r["entries"]: r for r in doc["rows"]}
    assert set(rows) == {"real", "junk"} and all(r["form"] == "paper" for r in rows.values())
    for r in rows.values():
        assert r["given"] == r["refused"] + r["not_needed"] + r["flagged"] + r["passed"] > 0
    junk, real = rows["junk"], rows["real"]
    assert junk["refused"] + junk["flagged"] >= junk["given"] // 2 and real["refused"] <= real["given"] // 4
    assert doc["summary"]["junk_given"] == rows["junk"]["given"]


@pytest.fixture
def shared_data():
    from judge_engine.data.benchmarks import available_benchmarks

    if "summeval" not in available_benchmarks():
        pytest.skip("the built-in SummEval file is not here")

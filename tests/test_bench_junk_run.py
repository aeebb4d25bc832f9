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


def test_an_obeying_stub_on_the_written_apart_set_with_the_models_check_puts_no_unflagged_junk_in_a_judge():
    """Issue 65: the stub obeys an order inside a criterion and otherwise follows the humans; with the judge's own
    check (answered from the labels) no junk entry is in a judge unflagged, and no real entry is refused."""
    from judge_engine.bench import junk_run

    doc = junk_run.run(methods=("hd_eval",), written_apart=True, obey=True, model_check=True)
    assert doc["summary"]["junk_given"] > 0 and doc["summary"]["junk_in_judge_unflagged"] == 0
    assert doc["summary"]["real_refused"] == 0

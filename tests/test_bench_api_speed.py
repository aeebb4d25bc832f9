"""``bench api-speed``: facts of a tiny run (calls made, calls in flight within the bound, the same judge at
every level), never its times."""

from __future__ import annotations

from judge_engine.bench import api_speed


def test_api_speed_fits_the_same_judge_at_every_level_within_the_bound():
    doc = api_speed.run(methods=["active_critic"], levels=[1, 8], latency=0.001, n_train=8)
    rows = doc["rows"]
    assert [r["concurrency"] for r in rows] == [1, 8]
    assert doc["summary"]["same_judge_at_every_level"] and len({r["judge_sha"] for r in rows}) == 1
    assert rows[0]["calls"] == rows[1]["calls"] > 0, "no cache, every call made, the same calls at each level"
    assert rows[0]["peak_in_flight"] == 1 and 1 < rows[1]["peak_in_flight"] <= 8

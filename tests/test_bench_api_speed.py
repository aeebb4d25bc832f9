"""``bench api-speed``: facts of a tiny run (calls made, calls in flight within the bound, the same judge at
every level), never its times."""

from __future__ import annotations

import pytest

from judge_engine.bench import api_speed


def test_api_speed_fits_the_same_judge_at_every_level_within_the_bound():
    doc = api_speed.run(methods=["active_critic"], levels=[1, 8], latency=0.001, n_train=8)
    rows = doc["rows"]
    assert [r["concurrency"] for r in rows] == [1, 8]
    assert doc["summary"]["same_judge_at_every_level"] and len({r["judge_sha"] for r in rows}) == 1
    assert rows[0]["calls"] == rows[1]["calls"] > 0, "no cache, every call made, the same calls at each level"
    assert rows[0]["peak_in_flight"] == 1 and 1 < rows[1]["peak_in_flight"] <= 8


def test_jitter_holds_a_request_the_same_time_in_every_run_within_its_spread():
    from types import SimpleNamespace

    inner = SimpleNamespace(name="stub", model_id="m", supports_logprobs=False)
    slow, again = api_speed.Slow(inner, 0.5, jitter=0.8), api_speed.Slow(inner, 0.5, jitter=0.8)
    asks = [[{"role": "user", "content": f"item {i}"}] for i in range(50)]
    held = [slow.hold(m) for m in asks]
    assert held == pytest.approx([again.hold(m) for m in asks], abs=1e-12), "drawn from the request's text, not from the order of the calls"
    assert all(0.1 - 1e-9 <= h <= 0.9 + 1e-9 for h in held) and max(held) - min(held) > 0.4
    assert api_speed.Slow(inner, 0.5).hold(asks[0]) == pytest.approx(0.5)

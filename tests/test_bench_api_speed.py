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
    assert [(s["method"], s["concurrency"]) for s in doc["stages"]] == [("active_critic", 1), ("active_critic", 8)]
    for row, fit in zip(rows, doc["stages"]):
        stages = fit["stages"]
        assert [s["stage"] for s in stages] == [*range(1, row["waves"] + 1), "after"]
        assert sum(s["calls"] for s in stages) == row["calls"]
        assert sum(s["floor_s"] for s in stages) == pytest.approx(row["floor_s"], abs=0.011 * row["waves"])
        assert all(s["idle_before_s"] >= 0 and s["wall_s"] >= 0 for s in stages)


def test_stage_rows_split_a_fit_into_its_busy_spells_and_the_work_between_them():
    spells = [api_speed.Spell(start=1.0, end=1.75, calls=40, held=20.0),
              api_speed.Spell(start=2.0, end=2.5, calls=3, held=1.5)]
    rows = api_speed.stage_rows(spells, start=0.5, end=3.25, concurrency=32, latency=0.5)
    assert [r["stage"] for r in rows] == [1, 2, "after"]
    first, second, after = rows
    # 40 calls at 32 in flight: two latencies at least; 0.75 s is within them
    assert (first["calls"], first["floor_s"], first["ideal_s"]) == (40, pytest.approx(1.0), pytest.approx(0.62))
    assert first["idle_before_s"] == pytest.approx(0.5) and first["wall_over_floor"] == pytest.approx(0.75)
    assert second["idle_before_s"] == pytest.approx(0.25) and second["wall_over_floor"] == pytest.approx(1.0)
    assert after["idle_before_s"] == pytest.approx(0.75) and after["calls"] == 0
    assert "| 1 | 40 | 0.50 | 0.75 |" in api_speed.stage_table({"stages": rows})


def test_jitter_holds_a_request_the_same_time_in_every_run_within_its_spread():
    from types import SimpleNamespace

    inner = SimpleNamespace(name="stub", model_id="m", supports_logprobs=False)
    slow, again = api_speed.Slow(inner, 0.5, jitter=0.8), api_speed.Slow(inner, 0.5, jitter=0.8)
    asks = [[{"role": "user", "content": f"item {i}"}] for i in range(50)]
    held = [slow.hold(m) for m in asks]
    assert held == pytest.approx([again.hold(m) for m in asks], abs=1e-12), "drawn from the request's text, not from the order of the calls"
    assert all(0.1 - 1e-9 <= h <= 0.9 + 1e-9 for h in held) and max(held) - min(held) > 0.4
    assert api_speed.Slow(inner, 0.5).hold(asks[0]) == pytest.approx(0.5)

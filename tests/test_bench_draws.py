"""The draw check of the statistical bench tests (tools/bench_draws.py, tests/bench_draw.py; issue 51, item 2)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import bench_draws  # noqa: E402

from tests import bench_draw  # noqa: E402

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_bench_dials" name="test_a[hpss]" time="1"/>
<testcase classname="tests.test_bench_dials" name="test_b" time="1"><failure message="assert -1.5 &gt; 0"/></testcase>
<testcase classname="tests.test_bench_dials" name="test_c" time="0"><skipped message="no data"/></testcase>
</testsuite></testsuites>"""


def test_outcomes_count_a_failure_and_a_skip_as_not_passed(tmp_path):
    path = tmp_path / "draw0.xml"
    path.write_text(JUNIT, encoding="utf-8")
    assert bench_draws.outcomes(path) == {"tests.test_bench_dials::test_a[hpss]": True,
                                          "tests.test_bench_dials::test_b": False,
                                          "tests.test_bench_dials::test_c": False}


def test_report_counts_passes_per_test_against_the_need(tmp_path):
    results = {d: {"t::a": True, "t::b": d != 3} for d in range(5)}
    intervals = tmp_path / "intervals.jsonl"
    intervals.write_text(json.dumps({"draw": 3, "test": "t::b", "row": "hpss vs random", "mean": -0.5,
                                     "low": -2.0, "high": 1.0, "per_world": [1.0, -2.0]}) + "\n", encoding="utf-8")
    text, ok = bench_draws.report(results, intervals, need=4)
    assert ok and "5/5     t::a" in text and "4/5     t::b" in text
    assert "draw 3: -0.5 [-2, +1] n=2" in text
    results[2]["t::b"] = False
    assert not bench_draws.report(results, intervals, need=4)[1]


def test_bad_draws_end_in_one_message(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_draws.main(["--draws", "0", "7"])
    assert exc.value.code == 2 and "--draws" in capsys.readouterr().err


def test_a_draw_moves_the_worlds_and_every_method_seed(monkeypatch):
    monkeypatch.setenv("JW_BENCH_SEED", "2")
    moved = importlib.reload(bench_draw)
    try:
        assert moved.worlds(range(1000, 1003)) == (1200, 1201, 1202)
        assert moved.params("hpss") == {"seed": 44}
        assert moved.params("hd_eval", {"aggregator": "lr"}) == {"aggregator": "lr", "random_state": 2}
        assert moved.params("active_critic") == {"seed": 2} and moved.params("hypoeval") == {"seed": 44}
        monkeypatch.setenv("JW_BENCH_SEED", "9")
        with pytest.raises(ValueError, match="JW_BENCH_SEED='9'"):
            importlib.reload(bench_draw)
    finally:
        monkeypatch.delenv("JW_BENCH_SEED")
        importlib.reload(bench_draw)
    assert bench_draw.worlds(range(1000, 1002)) == (1000, 1001) and bench_draw.params("hpss") is None

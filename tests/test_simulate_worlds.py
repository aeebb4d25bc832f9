"""Pooling one-world `bench simulate` runs and comparing two sets of worlds (tools/simulate_worlds.py; issue 51)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import simulate_worlds  # noqa: E402

CONFIG = {"n_train": 60, "n_test": 100, "malformed": 0.05, "dials": {}, "params": {}, "methods": ["hpss"],
          "free_text": False}


def write_world(base: Path, seed: int, method_value: float, base_value: float, config=CONFIG) -> None:
    entry = {"seed": seed, "seconds": {"hpss": 1.0},
             "methods": {"hpss": {"measures": [["true fitness", method_value, "random search", base_value, 100.0,
                                                True]]}}}
    out = base / f"s{seed}"
    out.mkdir(parents=True)
    (out / "simulate.json").write_text(json.dumps({"config": config, "per_seed": [entry]}), encoding="utf-8")


def test_pooling_pairs_the_worlds_and_names_those_not_finished(tmp_path):
    for seed, (m, b) in zip(range(10, 14), [(90, 80), (88, 85), (91, 84), (87, 83)]):
        write_world(tmp_path, seed, m, b)
    doc = simulate_worlds.pooled(tmp_path, list(range(10, 16)))
    assert doc["worlds"] == [10, 11, 12, 13] and doc["missing"] == [14, 15]
    (row,) = doc["rows"]
    assert row["numbers"]["difference_mean"] == pytest.approx(6.0)  # (10 + 3 + 7 + 4) / 4
    assert row["seeds"] == 4 and row["beats_baseline"] == "yes"


def test_worlds_run_with_other_options_are_not_pooled(tmp_path):
    write_world(tmp_path, 1, 90, 80)
    write_world(tmp_path, 2, 90, 80, config={**CONFIG, "n_train": 40})
    with pytest.raises(SystemExit, match="different options"):
        simulate_worlds.pooled(tmp_path, [1, 2])


def test_a_claim_replicates_only_when_it_resolves_on_both_sets():
    def row(measure, beats, diff="+1"):
        return {"method": "hpss", "measure": measure, "baseline": "random search", "difference": diff,
                "beats_baseline": beats}

    first = [row("a", "yes"), row("b", "yes"), row("c", "not shown"), row("d", "no")]
    second = [row("a", "yes"), row("b", "not shown"), row("c", "yes"), row("d", "no")]
    lines = simulate_worlds.replication(first, second).splitlines()[2:]
    assert [line.rsplit("|", 2)[-2].strip() for line in lines] == [
        "yes", "no: resolved on the first set only", "no: resolved on the second set only", "not resolved on either"]


def test_a_finished_world_is_not_run_again(tmp_path, monkeypatch):
    write_world(tmp_path, 7, 90, 80)
    monkeypatch.setattr(simulate_worlds.subprocess, "run", lambda *a, **k: pytest.fail("ran a finished world"))
    assert simulate_worlds.run_world(tmp_path, 7, []) == (7, 0, 0.0)


@pytest.mark.parametrize("argv", [["--count", "0"], ["--count", "3", "--replicate-first", "1001"],
                                  ["--count", "3", "--first", "-1"]])
def test_bad_options_end_in_one_message(tmp_path, argv, capsys):
    args = ["--dir", str(tmp_path), "--first", "1000", *argv]
    if argv[-2] == "--first":
        args = ["--dir", str(tmp_path), *argv]
    with pytest.raises(SystemExit) as exc:
        simulate_worlds.main(args)
    assert exc.value.code == 2 and "error:" in capsys.readouterr().err

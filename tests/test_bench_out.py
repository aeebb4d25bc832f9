"""Where ``python -m judge_engine.bench`` writes (issue 51 item 6): ``--out`` when given, else the user data
directory, never the package's own folder (site-packages for an installed wheel)."""

from __future__ import annotations

from pathlib import Path

import judge_engine
from judge_engine import bench
from judge_engine.bench import __main__ as bench_main
from judge_engine.bench import replay

PACKAGE = Path(judge_engine.__file__).resolve().parent


def _quick_replay(**_):
    """A replay result without running anything: the test is about where it lands, not what it measures."""
    return bench.result("replay", config={"quick": True}, rows=[{"arm": "a", "calls": 0}], summary={"calls": 0})


def test_without_out_results_go_to_the_user_data_dir_not_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(replay, "run", _quick_replay)
    assert bench_main.main(["replay"]) == 0
    written = Path(capsys.readouterr().out.strip().splitlines()[-1].removeprefix("written: "))
    assert written == tmp_path / "xdg" / "judge-workbench" / "bench" / "replay.json"
    assert written.is_file()
    assert sorted(p.name for p in written.parent.iterdir())[0].startswith("replay-")
    # the clone's root is the package's parent: neither may be the default folder
    for folder in (PACKAGE, PACKAGE.parent):
        assert not bench.default_out().resolve().is_relative_to(folder)


def test_out_names_the_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(replay, "run", _quick_replay)
    assert bench_main.main(["--out", str(tmp_path / "here"), "replay"]) == 0
    assert (tmp_path / "here" / "replay.json").is_file()
    assert not (tmp_path / "xdg").exists()

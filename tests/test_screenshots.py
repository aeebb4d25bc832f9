"""tools/screenshots.py, the parts that need neither the model nor a browser (unit tier): its arguments, the spec
it starts, which stored run it reuses, what it says when it cannot work, and its captions."""

import importlib.util
import sys
from datetime import date
from pathlib import Path

import pytest

from judge_engine import runs
from judge_engine.llm import LLMConfig
from judge_engine.methods import METHODS
from judge_engine.records import Split
from judge_engine.runs import RunSpec

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shots():
    """The script as a module (tools/ is no package; loaded by path so this checkout's copy is the one tested)."""
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "tools" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_arguments_default_to_the_readme_pictures_and_can_be_changed(shots, tmp_path):
    args = shots.parse_args([])
    assert (args.db, args.out, args.dataset, args.aspect) == (ROOT / "data" / "screenshots.db", ROOT / "docs" / "img",
                                                              "summeval", "coherence")
    args = shots.parse_args(["--db", str(tmp_path / "s.db"), "--out", str(tmp_path), "--dataset", "hanna",
                             "--aspect", "coherence"])
    assert (args.db, args.out, args.dataset) == (tmp_path / "s.db", tmp_path, "hanna")


def test_the_hd_eval_run_is_the_pages_quick_first_look_on_the_embedded_model(shots):
    spec = shots.hd_eval_spec("summeval", "coherence")
    assert (spec.method, spec.train_size, spec.test_size, spec.seed) == ("hd_eval", 12, 10, 0)
    assert spec.params == {**METHODS["hd_eval"].quick_params, "weighted": True, "layout": "sample_first"}
    assert spec.llm == LLMConfig() and spec.llm.embedded


def _settle(store, run_id, status="finished", message=""):
    store.update_run(run_id, status=status, message=message)
    return run_id


def test_a_settled_run_of_the_same_spec_is_reused_and_nothing_else_is(shots, store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6, seed=1)
    queued = runs.create_run(store, spec)
    assert shots.reusable_run(store, spec) is None  # queued: not settled
    finished = _settle(store, runs.create_run(store, spec))
    assert shots.reusable_run(store, spec).id == finished
    split = store.run(finished).split
    assert shots.reusable_run(store, spec, split).id == finished
    # another split, other parameters, another model: not the same run
    other = Split("tiny", 1, split.train_ids, tuple(i for i in split.test_ids[:-1]))
    assert shots.reusable_run(store, spec, other) is None
    assert shots.reusable_run(store, RunSpec(**{**spec.__dict__, "params": {"max_tokens": 7}})) is None
    assert shots.reusable_run(store, RunSpec(**{**spec.__dict__, "llm": LLMConfig(backend="openai",
                                                                                  model="m")})) is None
    assert shots.reusable_run(store, RunSpec(**{**spec.__dict__, "seed": 2})) is None
    # a run whose method found no judge is settled (a resume replays the same end); one that crashed is not
    _settle(store, finished, "failed", "OSError: disk full")
    assert shots.reusable_run(store, spec) is None
    no_judge = _settle(store, queued, "failed", runs.NO_JUDGE_PREFIX + "no usable criteria")
    assert shots.reusable_run(store, spec).id == no_judge


def test_no_benchmark_is_one_line_and_no_traceback(shots, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JUDGE_WORKBENCH_DATA", str(tmp_path / "nowhere"))
    monkeypatch.setattr(shots, "browser_problem", lambda: None)
    assert shots.main(["--db", str(tmp_path / "s.db"), "--out", str(tmp_path / "img")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no benchmark found" in err and "JUDGE_WORKBENCH_DATA" in err, err
    assert not (tmp_path / "img").exists()


def test_no_browser_is_said_before_any_run(shots, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shots, "browser_problem", lambda: "no chromium at /nope")
    monkeypatch.setattr(shots, "obtain_runs", lambda *a: pytest.fail("runs started without a browser"))
    assert shots.main(["--db", str(tmp_path / "s.db")]) == 2
    assert capsys.readouterr().err == "screenshots: no screenshots without Chromium and Playwright: no chromium at /nope\n"


def test_captions_name_model_data_sizes_date_and_a_run_without_judge(shots, store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    spec = RunSpec(method="hd_eval", dataset="tiny", aspect="quality", train_size=3, test_size=6)
    hd = store.run(_settle(store, runs.create_run(store, spec), "failed", runs.NO_JUDGE_PREFIX + "no children"))
    base = store.run(_settle(store, runs.create_run(store, shots.baseline_spec("direct", spec), split=hd.split)))
    text = shots.captions(shots.Runs(hd, (base,)), {"compare.png": ""}, "tiny", "quality", date(2026, 1, 2))
    assert "SmolLM2-135M-Instruct, embedded" in text and "2026-01-02" in text and "tiny" in text
    assert f"{len(hd.split.train_ids)} training items, {len(hd.split.test_ids)} test items" in text
    assert "ended without a judge" in text and f"run #{hd.id} (hd_eval) is not on it: it failed" in text
    assert "![HD-Eval page](hd-eval-tree.png)" in text and "![Compare page](compare.png)" in text

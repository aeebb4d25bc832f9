"""What `score` and `run` load before their first request (issue 67 item 2: a start you don't wait for).

scikit-learn, scipy.stats and pandas took 2-5 s (load 2-16) before either command sent anything, though neither
uses them until its requests are answered (the meta-evaluation, a baseline comparison, HD-Eval's aggregator).
Each test runs the real command in a fresh interpreter whose request sender is replaced by one that lists the
libraries loaded so far and ends the process: a structural check of what the path imports, not a timing.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HEAVY = ("sklearn", "scipy", "pandas", "streamlit", "plotly", "shap", "matplotlib", "krippendorff", "llama_cpp",
         "ray", "mlflow", "torch")
"""Libraries no command should load before its first request (none of them is needed to send one)."""
LEARNED = tuple(f"judge_engine.methods.{m}" for m in ("hpss", "hypoeval", "active_critic", "hd_eval"))
"""The learned methods' packages: reading a direct judge needs none of them (methods.base.MethodRegistry)."""

_CHILD = r"""
import json, os, sys
heavy = set(json.loads(sys.argv[1]))

def loaded():
    return sorted({name.split(".")[0] for name in sys.modules if name.split(".")[0] in heavy}
                  | {name for name in sys.modules if name in heavy})

if sys.argv[2] == "import":
    for module in sys.argv[3:]:
        __import__(module)
    print("LOADED", json.dumps(loaded()), flush=True)
    sys.exit(0)

from judge_engine.llm import openai_backend

def first_request(self, *args, **kwargs):  # the one place the openai backend sends a chat request
    # one write of the whole line: the requests' threads arrive together, and print's pieces interleaved
    sys.stdout.flush()
    os.write(1, ("\nLOADED " + json.dumps(loaded()) + "\n").encode())
    os._exit(0)

openai_backend.OpenAIBackend._create = first_request
from judge_engine.__main__ import main
code = main(sys.argv[2:])
sys.exit(f"the command ended ({code}) without sending a request")
"""


def _loaded_before_first_request(*argv: str, cwd: Path, also: tuple[str, ...] = ()) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OPENAI_API_KEY": "test", "JUDGE_WORKBENCH_USER": "tester"}
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(HEAVY + also), *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.rpartition("LOADED ")[2])


def test_importing_the_command_line_and_the_score_command_loads_no_heavy_library(tmp_path):
    assert _loaded_before_first_request("import", "judge_engine.__main__", "judge_engine.score_cli",
                                        cwd=tmp_path) == []


def test_the_child_sees_a_heavy_library_when_one_is_loaded(tmp_path):
    # the check itself can fail: a path that does load scipy.stats is reported
    assert _loaded_before_first_request("import", "judge_engine.__main__", "scipy.stats", cwd=tmp_path) == ["scipy"]


def test_score_sends_its_first_request_before_loading_any_heavy_library(tmp_path):
    from judge_engine.bench.score_scale import bench_judge, write_items

    (tmp_path / "judge.json").write_text(bench_judge().to_json(), encoding="utf-8")
    write_items(tmp_path / "items.jsonl", 50)
    assert _loaded_before_first_request(
        "score", "judge.json", "items.jsonl", "--out", "scored.jsonl", "--backend", "openai", "--model", "m",
        "--base-url", "http://127.0.0.1:9/v1", "--db", str(tmp_path / "w.db"), "--quiet", cwd=tmp_path,
        also=LEARNED) == []


def test_the_method_registry_imports_a_method_when_it_is_named_and_all_when_listed(tmp_path):
    code = ("import sys, json; from judge_engine.methods import METHODS; "
            "before = sorted(m for m in sys.modules if m.startswith('judge_engine.methods.') and m.count('.') == 2); "
            "named = METHODS['hpss'].name; "
            "after = sorted(m for m in sys.modules if m.startswith('judge_engine.methods.') and m.count('.') == 2); "
            "print(json.dumps([before, named, after, 'nope' in METHODS, sorted(METHODS), len(METHODS)]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    before, named, after, unknown, listed, count = json.loads(done.stdout)
    assert [m.rpartition(".")[2] for m in before] == ["base", "direct", "geval"]
    assert named == "hpss" and [m.rpartition(".")[2] for m in after] == ["base", "direct", "geval", "hpss"]
    assert unknown is False
    assert listed == ["active_critic", "direct", "geval", "hd_eval", "hpss", "hypoeval", "memalign"] and count == 7


# HPSS, HypoEval, Active-Critic and HD-Eval are left out: their expected cost is rendered, before the first request,
# by fitting the method on rendered replies (runs/rendering.py), which computes correlations (scipy.stats) and fits
# HD-Eval's aggregator (sklearn); rendering it beside the first requests is issue 67 item 1's and item 2's open part
@pytest.mark.parametrize("method", ["direct", "geval"])
def test_run_sends_its_first_request_before_loading_any_heavy_library(tmp_path, tiny_dataset, method):
    from judge_engine.store import Store

    Store(str(tmp_path / "w.db")).save_dataset(tiny_dataset)
    assert _loaded_before_first_request(
        "run", "--method", method, "--dataset", "tiny", "--aspect", "quality", "--train", "6", "--test", "6",
        "--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--db", str(tmp_path / "w.db"),
        "--quiet", cwd=tmp_path) == []

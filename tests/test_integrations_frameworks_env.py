"""inspect_ai and DeepEval for real (issue 66 items 5 and 6), in their own environment.

inspect-ai and deepeval do not install next to the project's locked versions, so `make test` builds
``.venv-frameworks`` from requirements-frameworks.lock with this package in it (`make frameworks`), and these
tests run the frameworks there, in a subprocess (tests/frameworks_check.py): inspect_ai's own ``eval()`` with its
mock model and the judge as scorer, DeepEval's metric on test cases, and the docs' two snippets as written. The
judge file is fitted here, on a scripted backend; the subprocess scores on the same script.

Without the environment these tests are skipped naming it, except under `make test` (which sets
``JUDGE_WORKBENCH_FRAMEWORKS=required``): there a missing environment fails them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("JUDGE_WORKBENCH_FRAMEWORKS_VENV", ROOT / ".venv-frameworks"))
PYTHON = VENV / "bin" / "python"
REQUIRED = os.environ.get("JUDGE_WORKBENCH_FRAMEWORKS") == "required"
UNSCORABLE = "unscorable"


def frameworks_python() -> Path:
    if (VENV / ".installed").is_file() and PYTHON.exists():
        return PYTHON
    why = f"no inspect-ai/deepeval environment at {VENV} (make frameworks builds it)"
    if REQUIRED:
        pytest.fail(f"{why}; make test builds it before the tests", pytrace=False)
    pytest.skip(why)


@pytest.fixture
def judge_dir(exported_judge_dir):
    """A folder with a fitted ``judge.json`` and the database it was fitted in."""
    return exported_judge_dir


def run_check(check: str, folder: Path) -> dict:
    python = frameworks_python()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(python), "-m", "tests.frameworks_check", check], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{check} failed in {VENV}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))


def test_the_environment_holds_the_pinned_frameworks_and_this_checkout():
    python = frameworks_python()
    code = ("import importlib.metadata as m, judge_engine; "
            "print(m.version('inspect-ai'), m.version('deepeval'), judge_engine.__file__)")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300, cwd=VENV)
    assert done.returncode == 0, done.stderr
    inspect_version, deepeval_version, where = done.stdout.split()
    pinned = (ROOT / "requirements-frameworks.lock").read_text(encoding="utf-8")
    assert f"inspect_ai=={inspect_version}" in pinned and f"deepeval=={deepeval_version}" in pinned
    assert Path(where).resolve().parent == ROOT / "judge_engine", "the environment imports this checkout's engine"


def test_inspect_eval_with_its_mock_model_and_the_judge_as_scorer(judge_dir):
    got = run_check("inspect", judge_dir)
    assert got["status"] == "success", got["error"]
    assert [got["values"][f"question {i}"] for i in range(3)] == [pytest.approx(4.0)] * 3
    assert got["values"][f"{UNSCORABLE} one"] is None, "a reply with no score is unscored (NaN), not a number"
    assert got["missing_reasons"][f"{UNSCORABLE} one"] and not got["missing_reasons"]["question 0"]
    assert got["mean"] == pytest.approx(4.0), "the unscored sample is left out of the mean"


def test_deepeval_metric_on_test_cases(judge_dir):
    got = run_check("deepeval", judge_dir)
    scored, missing = got["scored"], got["missing"]
    assert scored["returned"] == pytest.approx(0.75) and scored["score"] == pytest.approx(0.75)  # 4 on 1-5
    assert scored["success"] and scored["judge_score"] == pytest.approx(4.0)
    assert missing["returned"] is None and missing["score"] is None
    assert missing["error"].startswith("no score") and not missing["success"]


def test_inspect_snippet(judge_dir):
    got = run_check("snippet:inspect", judge_dir)
    assert got["status"] == "success" and got["mean"] == pytest.approx(4.0)


def test_deepeval_snippet(judge_dir):
    got = run_check("snippet:deepeval", judge_dir)
    assert got["score"] == pytest.approx(0.75) and got["success"]
    assert got["stdout"].split()[:2] == ["0.75", "True"]

"""promptfoo runs the judge's Python assertion for real (issue 66 item 5): ``promptfoo eval`` on a config whose
assertion is judge_engine.integrations.promptfoo_assert, promptfoo pinned in tools/promptfoo (package-lock.json,
installed by `make promptfoo`, which `make test` runs where npm exists).

promptfoo's ``echo`` provider returns each test's prompt as the output, so the outputs are the test's own; the
assertion's judge scores them on the scripted backend of tests/frameworks_check.py (4 on 1-5, 1 for a ``useless``
output, no score for an ``unscorable`` one), started in the assertion file as the docs' ``judge_assert.py`` is.
Skipped with the reason where node or the pinned promptfoo is absent; under `make test` with npm present
(``JUDGE_WORKBENCH_PROMPTFOO=required``) an absent install fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "promptfoo"
PROMPTFOO = TOOL / "node_modules" / ".bin" / "promptfoo"

CONFIG = """\
description: judge-workbench judge as a promptfoo assertion
prompts:
  - "{{answer}}"
providers:
  - echo
defaultTest:
  assert:
    - type: python
      value: file://judge_assert.py
tests:
  - vars: {input: "How do I reset my password?", answer: "Open settings and press reset."}
  - vars: {input: "How do I reset my password?", answer: "A useless answer."}
  - vars: {input: "How do I reset my password?", answer: "An unscorable answer."}
"""

ASSERTION = """\
from tests.frameworks_check import scripted_backend

scripted_backend()  # the judge's backend in this test; a real judge_assert.py is the import below alone
from judge_engine.integrations.promptfoo_assert import get_assert  # noqa: E402,F401
"""


def promptfoo() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: promptfoo (an npm package) cannot run here")
    if not PROMPTFOO.exists():
        why = f"promptfoo is not installed in {TOOL} (make promptfoo installs the pinned one)"
        if os.environ.get("JUDGE_WORKBENCH_PROMPTFOO") == "required":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return PROMPTFOO


@pytest.fixture
def folder(exported_judge_dir):
    (exported_judge_dir / "promptfooconfig.yaml").write_text(CONFIG)
    (exported_judge_dir / "judge_assert.py").write_text(ASSERTION)
    return exported_judge_dir


def test_promptfoo_eval_runs_the_judge_assertion(folder):
    command = promptfoo()
    env = {**os.environ, "PROMPTFOO_PYTHON": sys.executable, "PYTHONPATH": str(ROOT),
           "JUDGE_WORKBENCH_JUDGE": str(folder / "judge.json"), "JUDGE_WORKBENCH_PASS": "0.5",
           "PROMPTFOO_CONFIG_DIR": str(folder / ".promptfoo"), "PROMPTFOO_DISABLE_TELEMETRY": "1",
           "PROMPTFOO_DISABLE_UPDATE": "1", "PROMPTFOO_CACHE_ENABLED": "false", "NO_COLOR": "1"}
    done = subprocess.run([str(command), "eval", "-c", "promptfooconfig.yaml", "-o", "results.json", "--no-cache",
                           "--no-progress-bar", "--no-table", "-j", "1"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    results_file = folder / "results.json"
    assert results_file.exists(), f"promptfoo wrote no results (exit {done.returncode}):\n{done.stdout[-3000:]}\n" \
                                  f"{done.stderr[-3000:]}"
    assert done.returncode != 0, "two of the three tests fail: promptfoo's exit says so"
    rows = {r["vars"]["answer"]: r for r in json.loads(results_file.read_text())["results"]["results"]}
    good, low, missing = (rows[a] for a in ("Open settings and press reset.", "A useless answer.",
                                            "An unscorable answer."))
    assert good["success"] and good["score"] == pytest.approx(0.75)  # 4 on 1-5
    assert reason(good).startswith("4 on 1-5")
    assert not low["success"] and low["score"] == pytest.approx(0.0)
    assert reason(low).startswith("1 on 1-5")
    assert not missing["success"] and reason(missing).startswith("the judge gave no score: "), reason(missing)


def reason(row: dict) -> str:
    """Our assertion's own reason (promptfoo's overall one says 'All assertions passed' when it passes)."""
    (component,) = row["gradingResult"]["componentResults"]
    return component["reason"]

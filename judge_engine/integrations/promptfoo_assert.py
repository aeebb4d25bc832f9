"""A promptfoo assertion that scores each output with an exported judge (docs/integrations.md#promptfoo).

In ``promptfooconfig.yaml``::

    defaultTest:
      assert:
        - type: python
          value: file://judge_assert.py

with ``judge_assert.py`` holding ``from judge_engine.integrations.promptfoo_assert import get_assert``, and
``JUDGE_WORKBENCH_JUDGE`` naming the judge file (``judge.json``); ``JUDGE_WORKBENCH_PASS`` is the score on
0-1 an output must reach to pass (default 0.5). The judged input is the test's ``input`` variable, else the
prompt. A reply with no score fails the assertion with the reason (promptfoo's failed assertion scores 0; the
reason says it was no score, not a low one).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from .scoring import ItemJudge

JUDGE_ENV = "JUDGE_WORKBENCH_JUDGE"
PASS_ENV = "JUDGE_WORKBENCH_PASS"


@lru_cache(maxsize=4)
def _judge(path: str) -> ItemJudge:
    from ..export import load_judge

    return ItemJudge(load_judge(path))


def get_assert(output: str, context: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's Python assertion hook: ``{"pass", "score", "reason"}`` for one output."""
    path = os.environ.get(JUDGE_ENV, "judge.json")
    threshold = float(os.environ.get(PASS_ENV, "0.5"))
    judge = _judge(path)
    variables = (context or {}).get("vars") or {}
    got = judge(variables.get("input", (context or {}).get("prompt", "")), output)
    if got.missing:
        return {"pass": False, "score": 0.0, "reason": f"the judge gave no score: {got.missing_reason}"}
    score = judge.normalized(got.score)
    return {"pass": score >= threshold, "score": score,
            "reason": f"{got.score:g} on {judge.low:g}-{judge.high:g}: {got.explanation}".strip()}

"""Runs inside .venv-frameworks (inspect-ai and deepeval, which do not install next to the project's locked
versions): ``python -m tests.frameworks_check CHECK`` in a folder holding ``judge.json``, with
``$JUDGE_WORKBENCH_DB`` the database the judge's calls are cached in. Prints one JSON line with what the
framework reported; tests/test_integrations_frameworks_env.py starts it and checks that line.

The judge's backend is scripted (as in the other integration tests): 4 on 1-5 for every output, 1 for an output
containing ``useless``, and a reply with no score for an output containing ``unscorable``
(tests/test_integrations_promptfoo.py uses the same script in promptfoo's Python assertion).

CHECK is ``inspect`` (inspect_ai's own ``eval()`` with its mock model and the judge as scorer), ``deepeval``
(the metric on test cases), or ``snippet:<name>`` (a docs/integrations.md snippet run as written).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import sys
from pathlib import Path

UNSCORABLE = "unscorable"
USELESS = "useless"
DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"


def scripted_backend() -> None:
    """Every LLM the judge makes answers from the script below, through the engine's one LLM path and cache."""
    from judge_engine import llm as llm_module
    from judge_engine.store import Store
    from tests.scripted import fake_llm, schema_responder

    scored = schema_responder("[[4]]", lambda messages: 1.0 if USELESS in messages[-1]["content"] else 4.0)

    def reply(messages, params):
        return "I cannot tell." if UNSCORABLE in messages[-1]["content"] else scored(messages, params)

    llm, _ = fake_llm(reply, store=Store())
    llm_module.make_llm = lambda *args, **kwargs: llm


def offline_token_count() -> None:
    """inspect_ai counts the mock model's tokens with tiktoken, which downloads its encoding on first use: count by
    length instead (the count is not what is checked)."""
    from inspect_ai.model import _model, _tokens

    for module in (_model, _tokens):
        if hasattr(module, "count_text_tokens"):
            module.count_text_tokens = lambda text: max(1, len(text) // 4)


def check_inspect() -> dict:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate

    import judge_engine as jw

    samples = [Sample(input=f"question {i}", target="") for i in range(3)]
    samples.append(Sample(input=f"{UNSCORABLE} one", target=""))
    task = Task(dataset=samples, solver=generate(), scorer=jw.load_judge("judge.json").to_inspect_scorer())
    (log,) = eval(task, model="mockllm/model", log_dir="inspect-logs", display="none")
    scores = {s.input: next(iter(s.scores.values())) for s in log.samples}
    return {"status": log.status, "error": str(log.error or ""),
            "values": {k: (None if math.isnan(float(v.value)) else float(v.value)) for k, v in scores.items()},
            "missing_reasons": {k: v.metadata.get("missing_reason", "") for k, v in scores.items()},
            "mean": log.results.scores[0].metrics["mean"].value}


def check_deepeval() -> dict:
    from deepeval.test_case import LLMTestCase

    import judge_engine as jw

    metric = jw.load_judge("judge.json").to_deepeval_metric(threshold=0.7)
    scored = metric.measure(LLMTestCase(input="a question", actual_output="an answer"))
    first = {"returned": scored, "score": metric.score, "success": metric.is_successful(),
             "judge_score": metric.score_breakdown["judge_score"]}
    returned = metric.measure(LLMTestCase(input="a question", actual_output=UNSCORABLE))
    return {"scored": first, "missing": {"returned": returned, "score": metric.score, "error": metric.error,
                                         "success": metric.is_successful()}}


def check_snippet(name: str) -> dict:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- snippet: {re.escape(name)} -->\n```python\n(.*?)```", text, re.DOTALL)
    if not found:
        return {"error": f"no snippet {name!r} in {DOC.name}"}
    scope: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(found.group(1), f"{DOC.name} ({name})", "exec"), scope)
    got: dict = {"stdout": out.getvalue()}
    if "logs" in scope:
        (log,) = scope["logs"]
        got.update(status=log.status, mean=log.results.scores[0].metrics["mean"].value)
    if "metric" in scope:
        got.update(score=scope["metric"].score, success=scope["metric"].success)
    return got


def main(check: str) -> None:
    scripted_backend()
    if check == "inspect" or check == "snippet:inspect":
        offline_token_count()
    if check.startswith("snippet:"):
        got = check_snippet(check.split(":", 1)[1])
    else:
        got = {"inspect": check_inspect, "deepeval": check_deepeval}[check]()
    # the frameworks print their own lines: the result is the last one
    sys.stdout.write("\nRESULT " + json.dumps(got) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])

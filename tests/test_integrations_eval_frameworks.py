"""Eval frameworks out: the exported judge as an inspect_ai scorer and a DeepEval metric (issue 66 item 5).

The two frameworks' tests run where they are installed (pip install inspect-ai deepeval) and are skipped
elsewhere; the scoring they share and the message without them run everywhere.
"""

import math
import sys

import pytest

from judge_engine import export
from judge_engine.integrations.scoring import ItemJudge
from judge_engine.runs import RunSpec, create_run, execute_run
from tests.scripted import fake_llm, schema_responder

UNSCORABLE = "unscorable"


def reply(messages, params):
    if UNSCORABLE in messages[-1]["content"]:
        return "I cannot tell."
    return schema_responder("[[4]]", lambda messages: 4.0)(messages, params)


@pytest.fixture
def fitted(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    llm, backend = fake_llm(reply, store=store)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6))
    execute_run(store, run_id, llm=llm)
    return export.load_judge(export.export_judge(store, run_id)), llm, backend


def test_one_item_is_scored_through_the_cache_and_a_reply_without_a_score_is_missing(fitted):
    judge, llm, backend = fitted
    item_judge = ItemJudge(judge, llm=llm)
    got = item_judge({"question": "a text"}, "an answer")
    assert got.score == pytest.approx(4.0) and not got.missing
    assert item_judge.normalized(got.score) == pytest.approx(0.75)  # 4 on 1-5
    calls = len(backend.calls)
    assert item_judge("a text", "an answer").score == pytest.approx(4.0)
    assert len(backend.calls) == calls, "the same item again is answered by the cache"
    missing = item_judge("a text", f"an {UNSCORABLE} answer")
    assert missing.missing and missing.score is None and missing.missing_reason


@pytest.mark.parametrize("module, make", [("inspect_ai", "to_inspect_scorer"), ("deepeval", "to_deepeval_metric")])
def test_without_the_framework_one_message_says_how_to_install_it(fitted, monkeypatch, module, make):
    judge, llm, _ = fitted
    monkeypatch.setitem(sys.modules, module, None)  # importing it fails as if it were not installed
    with pytest.raises(ImportError, match=f"is not installed here; pip install {module.replace('_', '-')}"):
        getattr(judge, make)(llm=llm)


def test_inspect_eval_with_its_mock_model_and_the_judge_as_scorer(fitted, tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import _model, _tokens

    # inspect_ai counts the mock model's tokens with tiktoken, which downloads its encoding on first use: a machine
    # without internet counts by length instead (the count is not what this test is about)
    for module in (_model, _tokens):
        monkeypatch.setattr(module, "count_text_tokens", lambda text: max(1, len(text) // 4), raising=False)
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate

    judge, llm, _ = fitted
    samples = [Sample(input=f"question {i}", target="") for i in range(3)] + [Sample(input=f"{UNSCORABLE} one",
                                                                                       target="")]
    task = Task(dataset=samples, solver=generate(), scorer=judge.to_inspect_scorer(llm=llm))
    (log,) = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    values = {s.input: next(iter(s.scores.values())) for s in log.samples}
    assert [values[f"question {i}"].value for i in range(3)] == [pytest.approx(4.0)] * 3
    unscored = values[f"{UNSCORABLE} one"]
    assert math.isnan(float(unscored.value)) and unscored.metadata["missing_reason"]
    (scores,) = log.results.scores
    assert scores.metrics["mean"].value == pytest.approx(4.0), "the unscored sample is left out of the mean"


def test_deepeval_metric_on_a_test_case(fitted):
    pytest.importorskip("deepeval")
    from deepeval.test_case import LLMTestCase

    judge, llm, _ = fitted
    metric = judge.to_deepeval_metric(threshold=0.7, llm=llm)
    assert metric.measure(LLMTestCase(input="a question", actual_output="an answer")) == pytest.approx(0.75)
    assert metric.is_successful() and metric.score_breakdown["judge_score"] == pytest.approx(4.0)
    assert metric.measure(LLMTestCase(input="a question", actual_output=f"{UNSCORABLE}")) is None
    assert metric.error.startswith("no score") and not metric.is_successful()

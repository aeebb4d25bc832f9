"""Eval frameworks out: the exported judge as an inspect_ai scorer and a DeepEval metric (issue 66 item 5).

The scoring the two wrappers share and the message without the framework run here; the frameworks themselves run
in their own environment (tests/test_integrations_frameworks_env.py).
"""

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

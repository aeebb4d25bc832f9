"""MLflow out: a judge fitted on imported MLflow labels scores in ``mlflow.genai.evaluate`` (issue 66 item 2)."""

import re

import pytest

from tests.mlflow_store import N_TRACES, UNLABELLED, alice_score
from tests.scripted import fake_llm, schema_responder

mlflow = pytest.importorskip("mlflow")

from judge_engine import export  # noqa: E402
from judge_engine.integrations.mlflow_scorer import SOURCE_PREFIX  # noqa: E402
from judge_engine.integrations.mlflow_traces import import_mlflow  # noqa: E402
from judge_engine.runs import RunSpec, create_run, execute_run  # noqa: E402
from judge_engine.score_files import judge_fingerprint  # noqa: E402

ANSWER = re.compile(r"\(answer (\d+)\)")
UNSCORABLE = 5
"""The trace whose reply the scripted model answers without a score."""


def oracle(messages):
    """The score alice gave the answer the prompt shows: a judge that agrees with the humans."""
    found = ANSWER.findall(messages[-1]["content"])
    return float(alice_score(int(found[-1]))) if found else None


def reply(messages, params):
    found = ANSWER.findall(messages[-1]["content"])
    if found and int(found[-1]) == UNSCORABLE:
        return "I would rather not say."
    return schema_responder("[[3]]", oracle)(messages, params)


@pytest.fixture
def tracking(mlflow_tracking):
    return mlflow_tracking


def test_fit_on_imported_labels_then_evaluate_and_read_the_assessments_back(store, tracking, tmp_path, monkeypatch):
    # MLflow's own sqlite store runs out of pooled connections under its default 10 evaluation workers
    monkeypatch.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "2")
    import_mlflow(store, tracking.uri, tracking.experiment, "helpfulness", name="bot")
    llm, backend = fake_llm(reply, store=store)
    run_id = create_run(store, RunSpec(method="direct", dataset="bot", aspect="helpfulness", train_size=10,
                                       test_size=N_TRACES - UNLABELLED - 10, params={}))
    execute_run(store, run_id, llm=llm)
    assert store.run(run_id).status == "finished"
    path = tmp_path / "judge.json"
    path.write_text(export.export_judge(store, run_id))
    judge = export.load_judge(path)
    fingerprint = judge_fingerprint(judge.judge)
    dataset = store.load_dataset("bot")
    rows = [{"inputs": {"question": s.input}, "outputs": {"answer": s.output}} for s in dataset.samples]
    calls = len(backend.calls)
    mlflow.set_tracking_uri(tracking.uri)
    mlflow.create_experiment("judged", artifact_location=(tmp_path / "artifacts").as_uri())
    mlflow.set_experiment("judged")
    result = mlflow.genai.evaluate(data=rows, scorers=[judge.to_mlflow_scorer(llm=llm)])
    train = len(store.run(run_id).split.train_ids)
    # direct asks once per item: the run's test items come from the workbench cache, only its training items
    # (never scored by the run) are asked
    assert len(backend.calls) - calls == train
    experiment = mlflow.get_experiment_by_name("judged").experiment_id
    traces = mlflow.search_traces(locations=[experiment], run_id=result.run_id, return_type="list")
    assert len(traces) == len(rows)
    read = {}
    for trace in traces:
        (feedback,) = [a for a in trace.info.assessments if a.name == "helpfulness"]
        assert feedback.source.source_type == "LLM_JUDGE"
        assert feedback.source.source_id == SOURCE_PREFIX + fingerprint
        assert feedback.metadata["judge_fingerprint"] == fingerprint
        number = int(ANSWER.findall(str(trace.data.response))[-1])
        read[number] = feedback
    missing = read.pop(UNSCORABLE)
    assert missing.value is None and "no score" in missing.feedback.error.error_message
    assert missing.metadata["missing_reason"]
    for number, feedback in read.items():
        assert feedback.value == pytest.approx(alice_score(number))
    assert result.metrics["helpfulness/mean"] == pytest.approx(
        sum(alice_score(n) for n in read) / len(read)), "a missing score is not averaged in"


def test_a_judge_file_becomes_a_scorer_that_can_be_called_directly(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    llm, backend = fake_llm(schema_responder("[[2]]", lambda messages: 4.0), store=store)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=6))
    execute_run(store, run_id, llm=llm)
    scorer = export.load_judge(export.export_judge(store, run_id)).to_mlflow_scorer(llm=llm, name="judged_quality")
    feedback = scorer(inputs={"article": "a text"}, outputs="a summary")
    assert feedback.name == "judged_quality" and feedback.value == pytest.approx(4.0)
    calls = len(backend.calls)
    again = scorer(inputs={"article": "a text"}, outputs="a summary")
    assert again.value == pytest.approx(4.0) and len(backend.calls) == calls, "the second call is cached"

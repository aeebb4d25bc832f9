"""The methods as MLflow alignment optimizers: judge.align(traces, optimizer) fits through a workbench run
(issue 66 item 3)."""

import importlib
import sys

import pytest

from tests.mlflow_store import N_TRACES, UNLABELLED
from tests.scripted import fake_llm, schema_responder

mlflow = pytest.importorskip("mlflow")

from judge_engine import export  # noqa: E402
from judge_engine.integrations.labels import LabelImportError  # noqa: E402
from judge_engine.integrations.scoring import ItemJudge  # noqa: E402

INSTRUCTIONS = "Rate how helpful {{ outputs }} is as an answer to {{ inputs }}."


@pytest.fixture
def traces(mlflow_tracking):
    mlflow.set_tracking_uri(mlflow_tracking.uri)
    experiment = mlflow.get_experiment_by_name(mlflow_tracking.experiment).experiment_id
    return mlflow.search_traces(locations=[experiment], return_type="list")


def mlflow_judge(name="helpfulness"):
    from mlflow.genai.judges import make_judge

    return make_judge(name=name, instructions=INSTRUCTIONS, model="openai:/never-called")


@pytest.mark.parametrize("optimizer", ["DirectOptimizer", "HypoEvalOptimizer", "HDEvalOptimizer"])
def test_align_fits_through_a_workbench_run_and_scores_like_the_fitted_judge(store, traces, optimizer):
    from judge_engine.integrations import mlflow_align

    llm, backend = fake_llm(schema_responder("[[3]]", None), store=store)
    chosen = getattr(mlflow_align, optimizer)(store=store, llm=llm)
    aligned = mlflow_judge().align(traces, chosen)
    run = store.run(aligned.run_id)
    assert run.status == "finished" and run.method == chosen.method
    assert run.actor == "mlflow-align", "the run is on the Runs page, started by the alignment"
    dataset = store.load_dataset(run.dataset)
    assert len(dataset.samples) == N_TRACES - UNLABELLED
    assert dataset.aspect("helpfulness").definition == INSTRUCTIONS
    assert len(run.split.test_ids) == 10 and len(run.split.train_ids) == 26
    fitted = export.load_judge(export.export_judge(store, aligned.run_id))
    feedback = aligned(inputs={"question": "Where is the reset button?"}, outputs="In the settings.")
    direct = ItemJudge(fitted, llm=llm)({"question": "Where is the reset button?"}, "In the settings.")
    assert feedback.value == pytest.approx(direct.score) and feedback.name == "helpfulness"
    assert feedback.source.source_id.endswith(aligned.fingerprint)
    # aligning again on the same traces reuses the dataset and answers from the cache
    calls = len(backend.calls)
    again = mlflow_judge().align(traces, getattr(mlflow_align, optimizer)(store=store, llm=llm))
    assert store.run(again.run_id).dataset == run.dataset and len(backend.calls) == calls


def test_a_judge_whose_name_has_no_human_feedback_is_refused(store, traces):
    from judge_engine.integrations.mlflow_align import HDEvalOptimizer

    llm, _ = fake_llm("[[3]]", store=store)
    with pytest.raises(LabelImportError, match="no trace has a human assessment named 'clarity'"):
        mlflow_judge("clarity").align(traces, HDEvalOptimizer(store=store, llm=llm))
    assert store.list_runs() == [] and store.list_datasets() == []


def test_an_mlflow_without_the_alignment_api_is_one_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow.genai.judges.base", None)
    monkeypatch.delitem(sys.modules, "judge_engine.integrations.mlflow_align", raising=False)
    with pytest.raises(ImportError, match="need an MLflow with the alignment API"):
        importlib.import_module("judge_engine.integrations.mlflow_align")

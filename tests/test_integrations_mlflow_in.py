"""MLflow in: traces with human assessments from a local sqlite tracking store become a dataset (issue 66)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.mlflow_store import N_TRACES, UNLABELLED, alice_score, bob_score

pytest.importorskip("mlflow")

from judge_engine.annotations import agreement  # noqa: E402
from judge_engine.integrations.labels import LabelImportError  # noqa: E402
from judge_engine.integrations.mlflow_traces import import_mlflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def tracking(mlflow_tracking):
    return mlflow_tracking


def test_numeric_assessments_import_with_each_human_as_an_annotator(store, tracking):
    result = import_mlflow(store, tracking.uri, tracking.experiment, "helpfulness", name="bot")
    dataset = store.load_dataset("bot")
    assert len(dataset.samples) == N_TRACES - UNLABELLED
    assert sorted(result.without) == sorted(tracking.trace_ids[-UNLABELLED:]), "traces without the label are named"
    assert result.not_human == 2, "the LLM judge's feedback is not a label"
    assert (dataset.aspects[0].low, dataset.aspects[0].high) == (1.0, 5.0)
    index = {s.id: s for s in dataset.samples}
    for i, trace_id in enumerate(tracking.trace_ids[:N_TRACES - UNLABELLED]):
        sample = index[trace_id]
        assert sample.input == f"How do I reset password number {i}?"
        assert sample.output.endswith(f"(answer {i}).")
        assert sample.human["helpfulness"] == pytest.approx((alice_score(i) + bob_score(i)) / 2)
    labels = store.annotations("bot")
    assert {a.annotator for a in labels} == {"alice", "bob"}
    assert {a.source for a in labels} == {"imported"}
    alice = {a.sample: a.value for a in labels if a.annotator == "alice"}
    assert alice[tracking.trace_ids[7]] == pytest.approx(alice_score(7))
    # the team features see two annotators who agree closely
    ids = [s.id for s in dataset.samples]
    found = agreement(labels, "helpfulness", ids, n_bootstrap=0)
    assert found.annotators == ("alice", "bob") and found.n_items == len(ids)
    assert found.alpha > 0.8
    assert "alice, bob" in result.summary() and "4 trace(s) without" in result.summary()


def test_booleans_and_categories_map_to_a_scale_that_can_be_changed(store, tracking):
    on_topic = import_mlflow(store, tracking.uri, tracking.experiment, "on_topic", name="topic")
    assert on_topic.scale.mapping == {"false": 0.0, "true": 1.0}
    sample = store.load_dataset("topic").by_id()[tracking.trace_ids[4]]
    assert sample.human["on_topic"] == pytest.approx(0.0)
    tone = import_mlflow(store, tracking.uri, tracking.experiment, "tone", name="tone")
    assert tone.scale.mapping == {"curt": 0.0, "neutral": 1.0, "warm": 2.0}
    chosen = import_mlflow(store, tracking.uri, tracking.experiment, "tone", name="tone2",
                           mapping={"curt": 1, "neutral": 3, "warm": 5})
    assert (chosen.dataset.aspects[0].low, chosen.dataset.aspects[0].high) == (1.0, 5.0)
    assert store.load_dataset("tone2").by_id()[tracking.trace_ids[2]].human["tone"] == pytest.approx(5.0)
    with pytest.raises(LabelImportError, match="no number given for 'warm'"):
        import_mlflow(store, tracking.uri, tracking.experiment, "tone", name="tone3", mapping={"curt": 1, "neutral": 2})
    assert not store.has_dataset("tone3")


@pytest.mark.parametrize("uri, experiment, assessment, message", [
    ("sqlite:///{missing}", "support-bot", "helpfulness", "does not answer: no MLflow store"),
    ("http://127.0.0.1:9", "support-bot", "helpfulness", "does not answer"),
    ("{uri}", "nope", "helpfulness", "no experiment named 'nope'; it has: .*'support-bot'"),
    ("{uri}", "support-bot", "nope", "no trace .* has an assessment named 'nope'; the names there: .*'helpfulness'"),
    ("{uri}", "support-bot", "mixed", "mixed types: categorical .*numeric"),
])
def test_bad_input_is_one_message_and_nothing_is_imported(store, tracking, tmp_path, uri, experiment, assessment,
                                                          message):
    uri = uri.format(missing=tmp_path / "none.db", uri=tracking.uri)
    with pytest.raises(LabelImportError, match=message):
        import_mlflow(store, uri, experiment, assessment, name="half")
    assert not store.has_dataset("half") and not store.annotations("half")
    assert not (tmp_path / "none.db").exists(), "no empty store is made where none was"


def test_an_existing_name_is_refused_before_reading(store, tracking):
    import_mlflow(store, tracking.uri, tracking.experiment, "helpfulness", name="bot")
    before = store.annotations("bot")
    with pytest.raises(ValueError, match="already exists"):
        import_mlflow(store, tracking.uri, tracking.experiment, "tone", name="bot")
    assert store.annotations("bot") == before


def test_command_line(tmp_path, tracking):
    db = tmp_path / "wb.db"
    command = [sys.executable, "-m", "judge_engine", "datasets", "import-mlflow", "--tracking-uri", tracking.uri,
               "--experiment", tracking.experiment, "--assessment", "tone", "--value", "curt=1",
               "--value", "neutral=2", "--value", "warm=3", "--db", str(db)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "as 'support-bot': 40 traces -> 36 items labelled by 2 annotator(s) (alice, bob)" in done.stdout
    assert "categorical: curt=1, neutral=2, warm=3" in done.stdout
    bad = subprocess.run(command[:-2] + ["--experiment", "gone", "--db", str(tmp_path / "other.db")], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no experiment named 'gone'" in bad.stderr
    assert "Traceback" not in bad.stderr

"""Annotation tools in: Label Studio, Argilla and Langfuse exports as datasets, one label per annotator (issue 66)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge_engine.integrations.annotation_exports import import_labels
from judge_engine.integrations.labels import LabelImportError

REPO = Path(__file__).resolve().parents[1]


def label_studio_tasks():
    """Six tasks rated 1-5 by two people; task 3's second annotation was cancelled, task 6 nobody finished."""
    tasks = []
    for i in range(1, 7):
        annotations = []
        for who, shift in (({"id": 1, "email": "ann@x.org"}, 0), (2, 1)):
            if i == 6:
                continue
            result = [{"from_name": "quality", "to_name": "text", "type": "rating",
                       "value": {"rating": min(5, i % 5 + 1 + shift)}},
                      {"from_name": "verdict", "to_name": "text", "type": "choices",
                       "value": {"choices": ["good" if (i + shift) % 2 else "bad"]}}]
            annotations.append({"id": 10 * i + shift, "completed_by": who, "result": result,
                                "was_cancelled": i == 3 and shift == 1})
        tasks.append({"id": i, "data": {"prompt": f"question {i}", "answer": f"=HYPERLINK(\"x\") answer {i}"},
                      "annotations": annotations})
    return tasks


@pytest.fixture
def label_studio(tmp_path):
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(label_studio_tasks()))
    return path


def test_label_studio_rating_one_row_per_task_one_label_per_annotator(store, label_studio):
    result = import_labels(store, "label-studio", label_studio, name="ls", question="quality",
                           input_key="prompt", output_key="answer")
    dataset = store.load_dataset("ls")
    assert [s.id for s in dataset.samples] == ["1", "2", "3", "4", "5"]
    by_id = dataset.by_id()
    assert by_id["2"].human["quality"] == pytest.approx((3 + 4) / 2)
    assert by_id["3"].human["quality"] == pytest.approx(4.0), "the cancelled annotation is no label"
    assert by_id["2"].output == '=HYPERLINK("x") answer 2', "texts are kept as they are"
    labels = store.annotations("ls")
    assert sorted({a.annotator for a in labels}) == ["ann@x.org", "user 2"] and len(labels) == 9
    assert any("1 skipped or cancelled annotation(s) (no label): 3 (user 2)" in s for s in result.left_out)
    assert any("1 task(s) without a label, left out: 6" in s for s in result.left_out)
    assert result.scale.describe() == "numeric, 1 to 5"


def test_label_studio_choices_map_to_a_scale_the_user_can_set(store, label_studio):
    result = import_labels(store, "label-studio", label_studio, name="ls", question="verdict",
                           input_key="prompt", output_key="answer", mapping={"bad": 1, "good": 5})
    assert result.scale.mapping == {"bad": 1.0, "good": 5.0}
    assert store.load_dataset("ls").by_id()["1"].human["verdict"] == pytest.approx(3.0)  # good (5) and bad (1)


def test_label_studio_bad_input(store, label_studio, tmp_path):
    with pytest.raises(LabelImportError, match="name the control to import .*quality, verdict"):
        import_labels(store, "label-studio", label_studio, name="ls", input_key="prompt", output_key="answer")
    with pytest.raises(LabelImportError, match="task 1's data has no 'text'"):
        import_labels(store, "label-studio", label_studio, name="ls", question="quality", input_key="text",
                      output_key="answer")
    tasks = label_studio_tasks()
    tasks[1]["annotations"][0]["result"][1]["value"]["choices"] = ["good", "bad"]
    (tmp_path / "two.json").write_text(json.dumps(tasks))
    with pytest.raises(LabelImportError, match="task 2: ann@x.org chose .* exactly one choice"):
        import_labels(store, "label-studio", tmp_path / "two.json", name="ls", question="verdict",
                      input_key="prompt", output_key="answer")
    assert not store.has_dataset("ls")


def test_label_studio_export_whose_annotations_are_all_skipped_is_one_message(store, tmp_path):
    tasks = label_studio_tasks()
    for task in tasks:  # Label Studio marks a skipped task's annotation either way
        for k, annotation in enumerate(task["annotations"]):
            annotation["was_cancelled"], annotation["skipped"] = (True, False) if k else (False, True)
    (tmp_path / "skipped.json").write_text(json.dumps(tasks))
    with pytest.raises(LabelImportError, match=r"no labels to import \(10 skipped or cancelled annotation\(s\) "
                                               r"\(no label\): 1 \(ann@x.org\), 1 \(user 2\)"):
        import_labels(store, "label-studio", tmp_path / "skipped.json", name="ls", question="quality",
                      input_key="prompt", output_key="answer")
    assert not store.has_dataset("ls") and not store.annotations("ls")


def argilla_records(form):
    records = []
    for i in range(4):
        given = [] if i == 3 else [("u-1", 1 + i, "submitted"), ("u-2", 2 + i, "submitted" if i else "discarded")]
        fields = {"question": f"q {i}", "response": f"r {i}"}
        if form == "nested":
            records.append({"id": f"rec{i}", "fields": fields, "responses": {"rating": [
                {"value": v, "user_id": u, "status": s} for u, v, s in given]}})
        elif form == "flat":
            records.append({"id": f"rec{i}", **fields, "rating.responses": [v for _, v, _ in given],
                            "rating.responses.users": [u for u, _, _ in given],
                            "rating.responses.status": [s for _, _, s in given]})
        else:  # Argilla 1.x
            records.append({"external_id": f"rec{i}", "fields": fields, "responses": [
                {"user_id": u, "values": {"rating": {"value": v}}, "status": s} for u, v, s in given]})
    return records


@pytest.mark.parametrize("form", ["nested", "flat", "v1"])
def test_argilla_responses_per_user(store, tmp_path, form):
    path = tmp_path / "argilla.json"
    path.write_text(json.dumps(argilla_records(form)))
    result = import_labels(store, "argilla", path, name="arg", question="rating", input_key="question",
                           output_key="response")
    dataset = store.load_dataset("arg")
    assert [s.id for s in dataset.samples] == ["rec0", "rec1", "rec2"]
    assert dataset.by_id()["rec0"].human["rating"] == pytest.approx(1.0), "a discarded response is no label"
    assert dataset.by_id()["rec2"].human["rating"] == pytest.approx((3 + 4) / 2)
    assert {a.annotator for a in store.annotations("arg")} == {"u-1", "u-2"}
    assert any("without a submitted 'rating' response, left out: rec3" in s for s in result.left_out)
    assert any("1 discarded or draft" in s for s in result.left_out)


def test_argilla_without_any_response_is_one_message(store, tmp_path):
    path = tmp_path / "argilla.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "fields": {"input": "a", "output": "b"}, "responses": {}})
                              for i in range(2)))
    with pytest.raises(LabelImportError, match="no record has a submitted response to 'rating'"):
        import_labels(store, "argilla", path, name="arg", question="rating")
    assert not store.has_dataset("arg")


def test_argilla_records_with_only_drafts_or_discarded_responses_are_one_message(store, tmp_path):
    records = [{"id": f"rec{i}", "fields": {"input": "a", "output": "b"},
                "responses": {"rating": [{"value": 3, "user_id": "u-1", "status": status}]}}
               for i, status in enumerate(("draft", "discarded"))]
    (tmp_path / "drafts.json").write_text(json.dumps(records))
    with pytest.raises(LabelImportError, match="no record has a submitted response to 'rating'"):
        import_labels(store, "argilla", tmp_path / "drafts.json", name="arg", question="rating")
    assert not store.has_dataset("arg") and not store.annotations("arg")


def write_csv(path, rows):
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_langfuse_scores_with_their_traces(store, tmp_path):
    traces = [{"id": f"t{i}", "input": json.dumps({"query": f"q {i}"}), "output": f"a {i}", "sessionId": f"s{i // 2}"}
              for i in range(5)]
    scores = [{"id": f"sc{i}{who}", "traceId": f"t{i}", "name": "correct", "value": float((i + k) % 2),
               "stringValue": "", "dataType": "BOOLEAN", "source": "ANNOTATION", "authorUserId": who}
              for i in range(4) for k, who in enumerate(("mia", "leo"))]
    scores.append({"id": "e", "traceId": "t4", "name": "correct", "value": 1.0, "stringValue": "",
                   "dataType": "BOOLEAN", "source": "EVAL", "authorUserId": ""})
    write_csv(tmp_path / "traces.csv", traces)
    write_csv(tmp_path / "scores.csv", scores)
    result = import_labels(store, "langfuse", tmp_path / "scores.csv", traces=tmp_path / "traces.csv", name="lf",
                           question="correct")
    dataset = store.load_dataset("lf")
    assert len(dataset.samples) == 4 and dataset.by_id()["t1"].input == "q 1"
    assert dataset.by_id()["t1"].group_id == "s0"
    assert result.scale.mapping == {"false": 0.0, "true": 1.0}
    assert {a.annotator for a in store.annotations("lf")} == {"mia", "leo"}
    assert any("left out: t4" in s for s in result.left_out) and any("1 score(s) from an evaluator" in s
                                                                       for s in result.left_out)
    (tmp_path / "scores.json").write_text(json.dumps([{**s, "traceId": "gone"} for s in scores[:1]]))
    with pytest.raises(LabelImportError, match="traces not in traces.csv"):
        import_labels(store, "langfuse", tmp_path / "scores.json", traces=tmp_path / "traces.csv", name="lf2",
                      question="correct")
    with pytest.raises(LabelImportError, match="needs the traces"):
        import_labels(store, "langfuse", tmp_path / "scores.csv", name="lf2", question="correct")
    assert not store.has_dataset("lf2")


def test_command_line(tmp_path, label_studio):
    db = tmp_path / "wb.db"
    done = subprocess.run([sys.executable, "-m", "judge_engine", "datasets", "import-labels", "label-studio",
                           str(label_studio), "--question", "quality", "--input-key", "prompt", "--output-key",
                           "answer", "--db", str(db)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "as 'ls': 5 items labelled by 2 annotator(s) (ann@x.org, user 2); scale: numeric, 1 to 5" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "judge_engine", "datasets", "import-labels", "argilla",
                          str(label_studio), "--name", "other", "--db", str(db)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "name the question" in bad.stderr and "Traceback" not in bad.stderr


def test_the_integrations_import_no_tool_until_asked():
    code = ("import sys, judge_engine.export\n"
            "from judge_engine.integrations import (annotation_exports, eval_frameworks, labels, mlflow_scorer,\n"
            "    mlflow_traces, promptfoo_assert, scoring)\n"
            "print(sorted(m for m in ('mlflow', 'inspect_ai', 'deepeval') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"

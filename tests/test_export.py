"""Export a finished judge as a model card, read it back, and score a new file with it (Python and CLI)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judge_engine import export
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.runs import RunSpec, create_run, execute_run

REPO = Path(__file__).resolve().parents[1]


def steps_or_score(messages, params):
    text = messages[0]["content"]
    return "1. Read.\n2. Rate." if "evaluation procedure" in text else f"[[{1 + len(text) % 5}]]"


@pytest.fixture
def finished(store, tiny_dataset):
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="geval", dataset="tiny", aspect="quality", train_size=3, test_size=6,
                                       params={"scoring": "sampling", "n_samples": 2}))
    backend = FakeBackend(steps_or_score)
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=backend))
    return run_id, backend


def test_model_card_round_trip_scores_identically_from_cache(store, tiny_dataset, finished, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-never-exported")
    run_id, backend = finished
    card = export.model_card(store, run_id)
    assert card["format"] == export.CARD_FORMAT and card["provenance"]["run_id"] == run_id
    assert card["provenance"]["human_aggregate"] == "imported"
    assert card["meta_evaluation"]["n"] == 6 and "sk-secret" not in json.dumps(card)
    assert card["meta_evaluation"]["parse_failures"] == 0 and card["meta_evaluation"]["missing"] == 0
    assert card["meta_evaluation"]["warnings"] == []  # travels with the judge; nothing to say about this run
    back = export.load_judge(export.export_judge(store, run_id))
    assert back.judge.to_dict() == store.get_run(run_id)["judge"] and back.llm == LLMConfig()
    llm = make_llm(LLMConfig(), store=store, backend=backend)
    calls = len(backend.calls)
    stored = {v.sample_id: v.score for v in store.load_verdicts(run_id)}
    again = back.judge.score([s for s in tiny_dataset.samples if s.id in stored], llm=llm)
    assert {v.sample_id: v.score for v in again} == stored
    assert len(backend.calls) == calls, "every call answered from the cache"


def test_bad_documents_get_clear_messages():
    with pytest.raises(ValueError, match="not a JSON document"):
        export.load_judge("{nope")
    with pytest.raises(ValueError, match="neither"):
        export.load_judge('{"hello": 1}')
    with pytest.raises(ValueError, match="version"):
        export.load_judge({"format": export.CARD_FORMAT, "version": 99, "judge": {}})


def test_score_file_reads_unlabeled_items(store, finished, tmp_path):
    run_id, backend = finished
    path = tmp_path / "new.jsonl"
    path.write_text("\n".join(json.dumps({"input": f"source {i}", "output": f"answer {i}"}) for i in range(3)))
    judge = export.load_judge(export.export_judge(store, run_id)).judge
    verdicts = export.score_file(judge, path, llm=make_llm(LLMConfig(), store=store, backend=backend))
    assert [v.sample_id for v in verdicts] == ["1", "2", "3"]
    assert all(1 <= v.score <= 5 for v in verdicts)


def _cli(*args, db):
    return subprocess.run([sys.executable, "-m", "judge_engine", *args, "--db", str(db), "--quiet"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.model
def test_cli_export_then_score_on_the_embedded_model(tmp_path, shared_data):
    db = tmp_path / "wb.db"
    env_run = subprocess.run([sys.executable, "-m", "judge_engine", "run", "--method", "direct", "--dataset",
                              "topical_chat", "--aspect", "overall", "--train", "0", "--test", "3", "--db", str(db),
                              "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert env_run.returncode == 0, env_run.stderr[-2000:]
    run_id = json.loads(env_run.stdout)["run_id"]
    judge_file = tmp_path / "judge.json"
    out = _cli("export", str(run_id), "--out", str(judge_file), db=db)
    assert out.returncode == 0, out.stderr
    data = tmp_path / "items.csv"
    data.write_text("id,input,output,rating\na,How are you?,Fine thanks and you?,4\nb,Any plans?,No.,2\n"
                    "c,Seen the game?,Yes it was great fun!,5\n", encoding="utf-8")
    scores = tmp_path / "scores.jsonl"
    out = _cli("score", str(judge_file), str(data), "--id-col", "id", "--human-col", "rating", "--out", str(scores),
               db=db)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [json.loads(x) for x in scores.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["a", "b", "c"]
    assert all(x["missing"] or 1 <= x["score"] <= 5 for x in lines)
    summary = json.loads(out.stderr[out.stderr.index("{"):])
    assert summary["items"] == 3 and "correlations" in summary
    again = _cli("score", str(judge_file), str(data), "--id-col", "id", "--out", str(scores), db=db)
    assert json.loads(again.stderr[again.stderr.index("{"):])["calls"] == 0, "a repeat is free"


def test_cli_score_reports_a_bad_file_clearly(tmp_path, store, finished):
    run_id, _ = finished
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(export.export_judge(store, run_id))
    bad = tmp_path / "bad.csv"
    bad.write_text("question,answer\nhi,hello\n")
    out = _cli("score", str(judge_file), str(bad), db=store.path)
    assert out.returncode == 2 and "bad.csv" in out.stderr and "input" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_card_carries_the_trust_report(store, finished):
    run_id, _ = finished
    card = export.model_card(store, run_id)
    trust = json.loads(export.export_judge(store, run_id))["trust"]
    assert trust == card["trust"] and trust["run_id"] == run_id and trust["method"] == "geval"
    assert trust["training"] is None, "G-Eval learns nothing from the training items"
    assert trust["verdict"] in ("ok", "warning") and (trust["verdict"] == "ok") == (trust["reasons"] == [])
    assert trust["test"]["level"] == "group" and trust["n"] == 6
    probes = json.loads(export.export_judge(store, run_id))["probes"]
    # 6 items are too few for the correlation probes: the card says so rather than giving a figure
    assert probes["run_id"] == run_id and probes["n"] == 6 and "too few" in probes["length"]["note"]
    # a run that has not finished has a judge but no result to trust yet
    store.update_run(run_id, status="running")
    assert export.model_card(store, run_id)["trust"] is None
    assert export.model_card(store, run_id)["probes"] is None


def _score_in_process(monkeypatch, capsys, judge_file, data, out, db, reply=steps_or_score, *extra):
    from judge_engine import llm as llm_module
    from judge_engine.__main__ import main

    monkeypatch.setattr(llm_module, "make_llm",
                        lambda config, **kw: make_llm(config, backend=FakeBackend(reply), **kw))
    code = main(["score", str(judge_file), str(data), "--id-col", "id", "--out", str(out), "--db", str(db), "--quiet",
                 *extra])
    _, err = capsys.readouterr()
    return code, err


def _items_file(tmp_path, n=7):
    data = tmp_path / "items.csv"
    data.write_text("id,input,output\n" + "".join(f"i{k},source {k},output number {k}\n" for k in range(n)))
    return data


def test_score_streams_lines_and_resumes_after_a_cut_line(tmp_path, store, finished, monkeypatch, capsys):
    run_id, _ = finished
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(export.export_judge(store, run_id))
    data, out = _items_file(tmp_path), tmp_path / "scores.jsonl"
    code, err = _score_in_process(monkeypatch, capsys, judge_file, data, out, store.path)
    assert code == 0 and json.loads(err[err.index("{"):])["items"] == 7
    whole = out.read_text().splitlines()
    assert [json.loads(x)["id"] for x in whole] == [f"i{k}" for k in range(7)]
    # a crash after four lines and half of the fifth
    out.write_text("\n".join(whole[:4]) + "\n" + whole[4][:10])
    code, err = _score_in_process(monkeypatch, capsys, judge_file, data, out, store.path)
    assert code == 0 and "resuming: 4 items are already in" in err and "scoring the rest" in err
    summary = json.loads(err[err.index("{"):])
    assert summary["items"] == 3 and summary["skipped"] == 4 and summary["concurrency"] == 1
    assert out.read_text().splitlines() == whole, "the same lines, none twice, no half line"


def test_score_refuses_an_output_file_of_another_judge_before_any_call(tmp_path, store, finished, monkeypatch,
                                                                        capsys):
    run_id, _ = finished
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(export.export_judge(store, run_id))
    data, out = _items_file(tmp_path), tmp_path / "scores.jsonl"
    out.write_text('{"id": "x", "score": 3}\n')
    calls = []
    code, err = _score_in_process(monkeypatch, capsys, judge_file, data, out, store.path,
                                  lambda m, p: calls.append(1) or "[[3]]")
    assert code == 2 and "was written without a judge tag" in err and "choose another --out" in err
    assert calls == [] and out.read_text() == '{"id": "x", "score": 3}\n'


def test_ctrl_c_leaves_whole_lines_and_the_same_command_finishes(tmp_path, store, finished, monkeypatch, capsys):
    run_id, _ = finished
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(export.export_judge(store, run_id))
    data, out = _items_file(tmp_path, 600), tmp_path / "scores.jsonl"
    asked = []

    def interrupted(messages, params):
        asked.append(1)
        if len(asked) == 600:  # inside the second batch of 256 items (G-Eval asks twice per item)
            raise KeyboardInterrupt
        return steps_or_score(messages, params)

    code, err = _score_in_process(monkeypatch, capsys, judge_file, data, out, store.path, interrupted)
    assert code == 130 and "stopped by Ctrl-C; run the same command again" in err
    lines = out.read_text().splitlines()
    assert len(lines) == 256 and all(json.loads(x)["id"] for x in lines)
    code, err = _score_in_process(monkeypatch, capsys, judge_file, data, out, store.path)
    assert code == 0 and "resuming: 256 items are already in" in err
    assert sorted(json.loads(x)["id"] for x in out.read_text().splitlines()) == sorted(f"i{k}" for k in range(600))


def test_an_exported_judge_scores_a_dataframe_row_for_row_with_missing_as_na(store, finished, tmp_path):
    import pandas as pd

    run_id, backend = finished
    path = tmp_path / "judge.json"
    path.write_text(export.export_judge(store, run_id), encoding="utf-8")
    judge = export.load_judge(str(path))  # a path, as the README's API does
    frame = pd.DataFrame({"doc": ["source a", "source b", "source c"], "summary": ["one", "two", ""]},
                         index=["x", "y", "z"])

    # the third item's replies give no score
    llm = make_llm(LLMConfig(), store=store,
                   backend=FakeBackend(lambda m, p: "no idea" if "source c" in m[0]["content"] else steps_or_score(m, p)))
    scores = judge.score_table(frame, input_col="doc", output_col="summary", llm=llm)
    assert list(scores["id"]) == ["x", "y", "z"]
    assert list(scores.columns) == ["id", "score", "missing", "missing_reason", "explanation"]
    assert list(scores["missing"]) == [False, False, True]
    assert pd.isna(scores["score"].iloc[2]) and scores["missing_reason"].iloc[2]
    assert all(1 <= scores["score"].iloc[i] <= 5 for i in (0, 1))
    with pytest.raises(ValueError, match="output_col='text' is not a column"):
        judge.score_table(frame, input_col="doc", output_col="text", llm=llm)
    with pytest.raises(ValueError, match="cannot read the judge file"):
        export.load_judge(tmp_path / "nowhere.json")


def test_the_command_says_in_one_line_that_a_judge_file_is_missing_or_of_another_version(tmp_path, capsys):
    from judge_engine.__main__ import main

    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"input": "a", "output": "b"}) + "\n", encoding="utf-8")
    assert main(["score", str(tmp_path / "nowhere.json"), str(items), "--db", str(tmp_path / "w.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot read the judge file") and "\n" not in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": export.CARD_FORMAT, "version": 99, "judge": {}}), encoding="utf-8")
    assert main(["score", str(other), str(items), "--db", str(tmp_path / "w.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert "version 99 is not supported" in err and "\n" not in err


def test_score_leaves_out_a_row_it_cannot_score_names_it_and_scores_the_rest(tmp_path, store, finished, monkeypatch,
                                                                              capsys):
    run_id, _ = finished
    judge_file = tmp_path / "judge.json"
    judge_file.write_text(export.export_judge(store, run_id))
    data, out = tmp_path / "items.jsonl", tmp_path / "scores.jsonl"
    rows = [{"id": "a", "input": "s", "output": "first"}, {"id": "b", "input": "s"},  # row 2: no output
            {"id": "c", "input": "s", "output": "   "}, {"id": "a", "input": "s", "output": "again"},
            {"id": "d", "input": "s", "output": "last"}]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    code, err = _score_in_process(monkeypatch, capsys, judge_file, data, out, store.path)
    assert code == 0
    said = [line for line in err.splitlines() if line.startswith("skipped: ")]
    assert len(said) == 3 and "row 2" in said[0] and "row 3" in said[1] and "duplicate id 'a'" in said[2]
    summary = json.loads(err[err.index("{"):])
    assert summary["items"] == 2 and summary["rows_left_out"] == 3
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["a", "d"]
    # nothing readable at all: one message, no output line, exit 2
    empty = tmp_path / "none.jsonl"
    empty.write_text(json.dumps({"id": "x", "input": "s", "output": ""}) + "\n")
    code, err = _score_in_process(monkeypatch, capsys, judge_file, empty, tmp_path / "none.out", store.path)
    assert code == 2 and "no row could be read" in err and "Traceback" not in err

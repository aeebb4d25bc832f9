"""Tests for judge_engine.metaeval: reading prediction files and the metaeval command."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from judge_engine.metaeval import (
    MetaEvalError,
    add_arguments,
    load_records,
    main,
    metaeval_records,
)
from judge_engine.metrics import correlations, level_correlations

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def run(argv, capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    code = main(parser.parse_args([str(a) for a in argv]))
    out = capsys.readouterr()
    return code, out.out, out.err


# Two aspects; hand-checkable coherence column: human (1..5), predicted (2,1,4,3,5)
# gives pearson = spearman = 0.8, kendall = 0.6 (see test_metrics).
HUMAN_COH = [1, 2, 3, 4, 5]
PRED_COH = [2, 1, 4, 3, 5]
HUMAN_FLU = [3, 3, 2, 5, 4]
PRED_FLU = [0.5, 0.4, 0.1, 0.9, 0.2]


def make_records(stringify=False):
    records = []
    for i in range(5):
        human = {"coherence": HUMAN_COH[i], "fluency": HUMAN_FLU[i], "ctc_relevance": 0.1 * i}
        pred = {"coherence": PRED_COH[i], "fluency": PRED_FLU[i], "extra": 1.0}
        if stringify and i % 2 == 0:  # as some released files store them
            human, pred = repr(human), repr(pred)
        records.append(
            {"doc_id": i // 3, "system_id": f"M{i % 2}", "scores": human, "predict_scores": pred}
        )
    return records


def write_json(path: Path, records) -> Path:
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    return path


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- metaeval_records


def test_metaeval_records_aspects_in_both_dicts_only():
    reports = metaeval_records(make_records(stringify=True), n_bootstrap=0)
    assert list(reports) == ["coherence", "fluency"]  # ctc_relevance / extra ignored
    coh = reports["coherence"]
    assert coh.level == "sample"
    assert coh.pearson.value == pytest.approx(0.8)
    assert coh.spearman.value == pytest.approx(0.8)
    assert coh.kendall.value == pytest.approx(0.6)
    assert (coh.n, coh.n_missing, coh.n_systems) == (5, 0, 2)
    flu = reports["fluency"]
    want = correlations(HUMAN_FLU, PRED_FLU)
    assert flu.pearson.value == pytest.approx(want["pearson"])


def test_metaeval_records_missing_predictions():
    records = make_records()
    records[1]["predict_scores"]["coherence"] = None  # parse failure
    records[2]["predict_scores"] = "{'coherence': 'n/a', 'fluency': 0.1}"
    del records[3]["predict_scores"]  # no prediction at all
    reports = metaeval_records(records, n_bootstrap=0)
    coh = reports["coherence"]
    assert (coh.n, coh.n_missing) == (2, 3)
    flu = reports["fluency"]
    assert (flu.n, flu.n_missing) == (4, 1)
    want = correlations([3, 3, 2, 4], [0.5, 0.4, 0.1, 0.2])
    assert flu.kendall.value == pytest.approx(want["kendall"])


def test_metaeval_records_group_and_system_levels():
    records = []
    groups = [("a", 1, 1), ("a", 2, 3), ("a", 3, 2), ("b", 1, 3), ("b", 2, 2), ("b", 3, 1),
              ("c", 2, 1), ("c", 2, 5)]
    for i, (g, h, p) in enumerate(groups):
        records.append({"doc": g, "sys": i % 3, "h": {"x": h}, "p": {"x": p}})
    rep = metaeval_records(
        records, human_key="h", pred_key="p", level="group", group_key="doc",
        system_key="sys", n_bootstrap=50,
    )["x"]
    assert rep.pearson.value == pytest.approx((0.5 - 1) / 2)
    assert rep.kendall.value == pytest.approx((1 / 3 - 1) / 2)
    assert (rep.n_groups, rep.groups_skipped) == (2, 1)

    rep = metaeval_records(
        records, human_key="h", pred_key="p", level="system", group_key="doc",
        system_key="sys", n_bootstrap=0,
    )["x"]
    hs, ps, ss = zip(*[(r["h"]["x"], r["p"]["x"], r["sys"]) for r in records])
    want, _ = level_correlations(hs, ps, level="system", systems=ss)
    assert rep.pearson.value == pytest.approx(want["pearson"])
    assert (rep.n_systems, rep.n_groups) == (3, 3)


def test_metaeval_records_errors_name_source_and_record():
    records = make_records()
    del records[2]["doc_id"]
    with pytest.raises(MetaEvalError, match=r"preds\.json: record 3: .*'doc_id'"):
        metaeval_records(records, level="group", source="preds.json", n_bootstrap=0)
    # at sample level the group key is not needed
    assert metaeval_records(records, level="sample", n_bootstrap=0)
    with pytest.raises(MetaEvalError, match="no record has a 'scores_x' key"):
        metaeval_records(records, pred_key="scores_x", n_bootstrap=0)
    other = [{**r, "predict_scores": {"other": 1.0}} for r in records]
    with pytest.raises(MetaEvalError, match="no aspect"):
        metaeval_records(other, n_bootstrap=0)
    records[0]["scores"]["coherence"] = "high"
    with pytest.raises(MetaEvalError, match=r"record 1: .*coherence"):
        metaeval_records(records, n_bootstrap=0)


# --------------------------------------------------------------------------- files and main


def test_main_json_output_from_json_file(tmp_path, capsys):
    path = write_json(tmp_path / "preds.json", make_records(stringify=True))
    code, out, err = run([path, "--format", "json", "--bootstrap", "100"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["coherence", "fluency"]
    coh = data["coherence"]
    assert list(coh)[:4] == ["pearson", "spearman", "kendall", "n"]
    assert coh["pearson"] == pytest.approx(0.8)
    assert coh["spearman"] == pytest.approx(0.8)
    assert coh["kendall"] == pytest.approx(0.6)
    assert coh["n"] == 5 and coh["n_missing"] == 0 and coh["level"] == "sample"
    lo, hi = coh["pearson_ci"]
    assert lo <= coh["pearson"] <= hi


def test_main_jsonl_group_level(tmp_path, capsys):
    path = write_jsonl(tmp_path / "preds.jsonl", make_records(stringify=True))
    code, out, err = run(
        [path, "--format", "json", "--level", "group", "--group-key", "doc_id", "--bootstrap", "0"],
        capsys,
    )
    assert code == 0, err
    coh = json.loads(out)["coherence"]
    # doc 0: items 0-2 -> (1,2,3) vs (2,1,4); doc 1: items 3-4 -> (4,5) vs (3,5)
    want0 = correlations([1, 2, 3], [2, 1, 4])
    want1 = correlations([4, 5], [3, 5])
    assert coh["pearson"] == pytest.approx((want0["pearson"] + want1["pearson"]) / 2)
    assert coh["n_groups"] == 2 and coh["groups_skipped"] == 0
    assert coh["pearson_ci"] == [None, None]


def test_main_table_output(tmp_path, capsys):
    path = write_jsonl(tmp_path / "preds.jsonl", make_records())
    code, out, _ = run([path, "--bootstrap", "50"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("sample-level")
    assert "pearson" in lines[1] and "kendall" in lines[1]
    assert any(line.startswith("coherence") and "0.8000 [" in line for line in lines)
    assert any(line.startswith("fluency") for line in lines)
    assert len({len(line) for line in lines[1:3]}) == 1  # header and rule aligned


def test_main_broken_jsonl_line(tmp_path, capsys):
    path = tmp_path / "broken.jsonl"
    good = json.dumps(make_records()[0])
    path.write_text(good + "\n" + '{"scores": {"coherence": 3,\n' + good + "\n", encoding="utf-8")
    code, out, err = run([path], capsys)
    assert code == 2
    assert out == ""
    assert "broken.jsonl" in err and "line 2" in err
    assert "Traceback" not in err


def test_main_broken_json_array(tmp_path, capsys):
    path = tmp_path / "broken.json"
    text = json.dumps(make_records(), indent=2)
    path.write_text(text.replace('"predict_scores"', '"predict_scores" "', 1), encoding="utf-8")
    code, _, err = run([path], capsys)
    assert code == 2
    assert "broken.json" in err and "line " in err


def test_main_group_key_missing_names_file_record_and_key(tmp_path, capsys):
    records = make_records()
    del records[3]["doc_id"]
    path = write_jsonl(tmp_path / "preds.jsonl", records)
    code, _, err = run([path, "--level", "group"], capsys)
    assert code == 2
    assert "preds.jsonl" in err and "line 4" in err and "doc_id" in err


@pytest.mark.parametrize(
    "content,message",
    [
        ("[1, 2]", "record 1"),
        ("", "no records"),
        ('{"scores": {"a": 1}, "predict_scores": {"a": 2}}\n[3]\n', "line 2"),
    ],
)
def test_main_bad_contents(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    code, _, err = run([path], capsys)
    assert code == 2
    assert "bad.json" in err and message in err


def test_main_missing_file(tmp_path, capsys):
    code, _, err = run([tmp_path / "nope.json"], capsys)
    assert code == 2 and "nope.json" in err


def test_load_records_locations(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n', encoding="utf-8")
    records, where = load_records(path)
    assert records == [{"a": 1}, {"a": 2}]
    assert where == ["line 1", "line 3"]


# --------------------------------------------------------------------------- real data


def test_summeval_file_group_level(tmp_path, capsys):
    src = DATA / "summeval" / "summeval_ctc.jsonl"
    if not src.exists():
        pytest.skip(f"benchmark data missing: {src}")
    records = []
    with src.open(encoding="utf-8") as f:
        for doc_id, line in enumerate(f):
            for sys_id, out in json.loads(line)["sys_summs"].items():
                scores = out["scores"]  # includes ctc_relevance, a metric: ignored
                k = len(records)
                pred = {"fluency": scores["fluency"] + ((k * 31) % 7 - 3) / 3}
                records.append(
                    {"doc_id": doc_id, "system_id": sys_id, "scores": repr(scores), "predict_scores": pred}
                )
    path = write_jsonl(tmp_path / "summeval_pred.jsonl", records)
    code, out, err = run([path, "--format", "json", "--level", "group", "--bootstrap", "100"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert list(data) == ["fluency"]
    flu = data["fluency"]
    assert flu["n"] == 1600 and flu["n_systems"] == 16
    assert flu["n_groups"] + flu["groups_skipped"] == 100
    assert 0 < flu["pearson"] < 1 and not math.isnan(flu["kendall"])

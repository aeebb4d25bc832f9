"""Scoring a file a chunk at a time: the rows read as an import reads them, CSV output, resume, two chunks in flight."""

import csv
import json

import pytest

from judge_engine import export
from judge_engine.data import DataImportError, load_table
from judge_engine.items import IdSet, ItemFile
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect
from judge_engine.score_files import OUTPUT_COLUMNS, score_file, score_stream


def _judge():
    return DirectScoring().fit([], Aspect("quality", 1, 5, "How good the reply is."),
                               FitContext(llm=None, task=TaskInfo(task="dialogue")))


def _no_bad_row(exc):
    raise AssertionError(f"no row should be left out: {exc}")


def _reply(messages, params):
    text = messages[0]["content"]
    return "no score here" if "unscorable" in text else json.dumps({"score": 1 + len(text) % 5})


def _llm(store, concurrency=1, reply=_reply):
    return make_llm(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", concurrency=concurrency),
                    store=store, backend=FakeBackend(reply))


def test_a_chunked_read_gives_the_samples_an_import_gives(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text('id;input;output;human\n'
                    'a;source one;"an output\nover two lines";4;\n'
                    'b;source\x00 two;second;2;\n'
                    'c;source three;third;1;\n', encoding="utf-8")
    whole = load_table(path, input_col="input", output_col="output", id_col="id", score_cols={"q": "human"},
                       require_scores=False).samples
    chunks = list(ItemFile(path, id_col="id", human_col="human", aspect="q").chunks(2, _no_bad_row))
    assert [len(c) for c in chunks] == [2, 1]
    assert [s for c in chunks for s in c] == list(whole)
    assert whole[1].input == "source two" and whole[0].output == "an output\nover two lines"


def test_bad_rows_are_named_and_left_out_and_repeated_ids_are_found_across_chunks(tmp_path):
    path = tmp_path / "items.jsonl"
    rows = ['{"id": "a", "input": "s", "output": "one"}', '{"id": "b", "input": "s"}', "{broken",
            '["not", "an", "object"]', '{"id": "c", "input": "s", "output": "three"}',
            '{"id": "a", "input": "s", "output": "again"}']
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    bad = []
    kept = [s.id for c in ItemFile(path, id_col="id").chunks(2, bad.append) for s in c]
    assert kept == ["a", "c"]
    said = [str(e) for e in bad]
    assert len(said) == 4 and "row 2" in said[0] and "row 3" in said[1] and "row 4" in said[2]
    assert "row 6" in said[3] and "duplicate id 'a' (first used on row 1)" in said[3]


def test_a_missing_column_or_an_unreadable_file_is_one_message_before_anything_is_read(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("id,input,text\n1,hi,hello\n", encoding="utf-8")
    with pytest.raises(DataImportError, match="no such column.*mapped as output.*'id', 'input', 'text'"):
        ItemFile(path, id_col="id")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"input,output\n" + b"cafe,ok\n" * 40000 + "caf\xe9,ok\n".encode("latin-1"))
    source = ItemFile(latin)  # the header reads; the bad byte is further on, and only its line is left out
    bad = []
    assert sum(len(c) for c in source.chunks(1000, bad.append)) == 40000
    assert len(bad) == 1 and "row 40002" in str(bad[0]) and "not UTF-8" in str(bad[0])
    with pytest.raises(DataImportError, match="file not found"):
        ItemFile(tmp_path / "nowhere.jsonl")


def test_id_set_keeps_the_first_row_and_counts_each_id_once():
    ids = IdSet()
    ids.add([("x", 1), ("y", 2), ("x", 9)])
    assert len(ids) == 2 and ids.rows_of(["x", "z", "y"]) == {"x": 1, "y": 2}
    ids.add((f"i{k}", k) for k in range(1200))
    assert len(ids) == 1202 and len(ids.rows_of([f"i{k}" for k in range(1200)])) == 1200
    ids.close()


def test_two_chunks_in_flight_write_the_verdicts_of_serial_scoring_in_input_order(tmp_path, store):
    judge = _judge()
    samples = list(ItemFile(_jsonl(tmp_path, 40)).chunks(1000, _no_bad_row))[0]
    chunks = [samples[i:i + 7] for i in range(0, 40, 7)]
    serial, parallel = [], []
    score_stream(judge, chunks, llm=_llm(store, 1), write=serial.append)
    score_stream(judge, chunks, llm=_llm(store, 8), write=parallel.append)
    assert [v.sample_id for v in parallel] == [s.id for s in samples]
    assert [(v.sample_id, v.score) for v in parallel] == [(v.sample_id, v.score) for v in serial]


def _jsonl(tmp_path, n, name="items.jsonl"):
    path = tmp_path / name
    rows = [{"id": f"i{k}", "input": f"source {k}", "output": f"reply number {k}", "human": 1 + k % 5}
            for k in range(n)]
    rows[3]["output"] = "unscorable reply"
    rows[5]["id"] = "=HYPERLINK(\"http://x\")"  # a hostile id: quoted in the CSV, read back as itself
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_csv_output_is_spreadsheet_safe_resumes_after_a_record_cut_inside_quotes(tmp_path, store):
    judge = _judge()
    data, out = _jsonl(tmp_path, 12), tmp_path / "scores.csv"

    source = ItemFile(data, id_col="id", human_col="human", aspect="quality")
    summary = score_file(judge, source, llm=_llm(store, 4), out=out)
    assert summary["items"] == 12 and summary["missing"] == 1 and summary["skipped"] == 0
    assert summary["correlations"]["n"] == 11 and summary["correlation_resamples"] == 1000
    with open(out, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == OUTPUT_COLUMNS and len(rows) == 12
    assert rows[5]["id"].startswith("'=HYPERLINK") and rows[3]["score"] == "" and rows[3]["missing_reason"]
    whole = out.read_bytes()
    # a crash inside the last record, after a line break of a quoted cell
    last = whole.rstrip(b"\r\n").rfind(b"\n") + 1
    out.write_bytes(whole[:last] + b'i11,quality,3,false,,"first line\r\nsecond')
    summary = score_file(judge, source, llm=_llm(store, 4), out=out)
    assert summary["items"] == 1 and summary["skipped"] == 11
    assert out.read_bytes() == whole


def test_a_jsonl_output_of_another_judge_is_refused_and_the_python_api_resumes(tmp_path, store):
    data, out = _jsonl(tmp_path, 9), tmp_path / "scores.jsonl"
    exported = export.load_judge(_judge().to_json())
    llm = _llm(store, 4)
    first = exported.score_file(data, out, id_col="id", llm=llm)
    assert first["items"] == 9 and first["missing"] == 1
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["id"] for x in lines][:3] == ["i0", "i1", "i2"]
    assert json.loads(lines[3])["score"] is None and json.loads(lines[3])["missing_reason"]
    again = exported.score_file(data, out, id_col="id", llm=llm)
    assert again["items"] == 0 and again["skipped"] == 9
    other = DirectScoring(max_tokens=16).fit([], Aspect("quality", 1, 5, "x"), FitContext(llm=None, task=TaskInfo("t")))
    with pytest.raises(ValueError, match="not by this judge"):
        export.load_judge(other.to_json()).score_file(data, out, id_col="id", llm=llm)


def test_an_output_in_a_folder_not_made_yet_is_written_there_and_an_unwritable_one_is_one_message(tmp_path, store):
    # `score --out results/x.jsonl` ended in a FileNotFoundError traceback before results/ existed
    data, out = _jsonl(tmp_path, 6), tmp_path / "results" / "deeper" / "scores.jsonl"
    summary = score_file(_judge(), ItemFile(data, id_col="id"), llm=_llm(store), out=out)
    assert summary["items"] == 6 and len(out.read_text(encoding="utf-8").splitlines()) == 6
    assert (out.parent / "scores.jsonl.judge").is_file(), "the judge tag sits beside the output"
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot write .*a_file"):
        score_file(_judge(), ItemFile(data, id_col="id"), llm=_llm(store), out=blocker / "scores.jsonl")


def test_a_stray_quote_that_would_swallow_the_rest_of_the_file_is_refused_naming_its_line(tmp_path, store):
    # a non-strict reader read lines 22-61 into one cell of row 21: 39 of 60 rows gone, rows_left_out 0, exit 0
    lines = ["id,input,output"] + [f"{k},source {k},reply {k}" for k in range(1, 61)]
    lines[21] = '21,"source 21,reply 21'
    path = tmp_path / "items.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataImportError, match="row 22: cannot parse the CSV: a quoted cell that begins on this line"):
        score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=tmp_path / "out.jsonl")
    with pytest.raises(DataImportError, match="row 22"):  # the import reads it the same way
        load_table(path, input_col="input", output_col="output", id_col="id", score_cols=[], require_scores=False)


def test_an_id_that_cleaning_would_change_is_left_out_named_and_counted_by_reason(tmp_path, store):
    path = tmp_path / "items.jsonl"
    rows = [{"id": "a", "input": "s", "output": "one"}, {"id": "b\u0000", "input": "s", "output": "two"},
            {"id": "c", "input": "s\u0000", "output": "three"}, {"id": "a", "input": "s", "output": "again"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    bad, out = [], tmp_path / "out.jsonl"
    summary = score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=out, bad_row=bad.append)
    assert [json.loads(x)["id"] for x in out.read_text(encoding="utf-8").splitlines()] == ["a", "c"]
    assert "row 2" in str(bad[0]) and "control characters" in str(bad[0])
    assert summary["rows_left_out"] == 2
    assert summary["rows_left_out_by_reason"] == {"id with control characters": 1, "repeated id": 1}


def test_an_id_with_spaces_around_it_is_written_verbatim_not_trimmed(tmp_path, store):
    # ' a1 ' was written as 'a1' (row_sample stripped the id), so the output no longer joined back to the file, and
    # a later row 'a1' was left out as a duplicate of a row whose id was ' a1 '
    path = tmp_path / "items.csv"
    path.write_text("id,input,output\n a1 ,s,one\na1,s,two\na2\u00a0,s,three\n   ,s,four\n", encoding="utf-8")
    bad, out = [], tmp_path / "out.jsonl"
    summary = score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=out, bad_row=bad.append)
    assert [json.loads(x)["id"] for x in out.read_text(encoding="utf-8").splitlines()] == [" a1 ", "a1", "a2\u00a0"]
    assert summary["rows_left_out_by_reason"] == {"empty id": 1} and bad[0].row == 5


def test_rows_left_out_for_their_human_score_are_grouped_by_reason_not_by_value(tmp_path, store):
    # the reason was the message's first 60 characters, value included: a million rows of distinct bad scores made a
    # summary with a million reasons
    path = tmp_path / "items.csv"
    bad_scores = ["abc", "n/a", "", "", "nan", "1e999", "x1", "3"]
    path.write_text("id,input,output,human\n" + "".join(f"r{k},s,o{k},{v}\n" for k, v in enumerate(bad_scores)),
                    encoding="utf-8")
    summary = score_file(_judge(), ItemFile(path, id_col="id", human_col="human", aspect="quality"),
                         llm=_llm(store), out=tmp_path / "out.jsonl", bad_row=lambda exc: None)
    assert summary["items"] == 1 and summary["rows_left_out"] == 7
    assert summary["rows_left_out_by_reason"] == {"human score not a number": 3, "human score empty": 2,
                                                  "human score not finite": 2}


def test_bad_input_is_each_named_with_its_line_and_counted_and_the_rest_is_scored(tmp_path, store):
    # a BOM, mixed line endings, a 5 MB cell, an id repeated two chunks later, a line that is not UTF-8
    big = "x" * (5 * 1024 * 1024)
    body = (b"\xef\xbb\xbfid,input,output\r\n" + b"r1,s,one\n" + b"r2,s,two\r\n" + f"r3,s,{big}\n".encode()
            + "r4,s,caf\u00e9\r".encode() + b"r5,s,caf\xe9 latin\n" + b"".join(f"k{k},s,o{k}\n".encode()
                                                                           for k in range(20)) + b"r2,s,again\n")
    path = tmp_path / "items.csv"
    path.write_bytes(body)
    bad, out = [], tmp_path / "out.jsonl"
    summary = score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=out, bad_row=bad.append, chunk=8)
    ids = [json.loads(x)["id"] for x in out.read_text(encoding="utf-8").splitlines()]
    assert ids == ["r1", "r2", "r3", "r4"] + [f"k{k}" for k in range(20)]
    assert [e.row for e in bad] == [6, 27] and "not UTF-8" in str(bad[0]) and "duplicate id 'r2'" in str(bad[1])
    assert summary["rows_left_out_by_reason"] == {"not UTF-8": 1, "repeated id": 1}
    header_only = tmp_path / "header.csv"
    header_only.write_text("id,input,output\n", encoding="utf-8")
    before = out.read_bytes()
    with pytest.raises(DataImportError, match="no items to score"):
        score_file(_judge(), ItemFile(header_only, id_col="id"), llm=_llm(store), out=out)
    assert out.read_bytes() == before, "nothing already written is changed"


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_output_cut_inside_a_multi_byte_character_is_resumed(tmp_path, store, fmt):
    # 'utf-8' codec can't decode byte 0xc3 (score_files.py) stopped every resume of such a file before
    path = tmp_path / "items.jsonl"
    rows = [{"id": f"é{k}", "input": "s", "output": f"réponse numéro {k}"} for k in range(10)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / f"scores.{fmt}"
    score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=out)
    whole = out.read_bytes()
    last_start = whole.rstrip(b"\n").rfind(b"\n") + 1
    cut = whole.index("é".encode(), last_start) + 1  # between the two bytes of the last record's é
    out.write_bytes(whole[:cut])
    summary = score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=out)
    assert summary["items"] == 1 and summary["skipped"] == 9
    assert out.read_bytes() == whole


def test_the_output_format_is_recorded_and_a_run_in_the_other_is_refused_before_any_request(tmp_path, store):
    data, out = _jsonl(tmp_path, 6), tmp_path / "scores.jsonl"
    score_file(_judge(), ItemFile(data, id_col="id"), llm=_llm(store), out=out)
    assert (tmp_path / "scores.jsonl.judge").read_text(encoding="utf-8").split()[1] == "jsonl"
    before, asked = out.read_bytes(), []
    with pytest.raises(ValueError, match="holds this judge's verdicts as JSONL.*--format jsonl"):
        score_file(_judge(), ItemFile(data, id_col="id"), out=out, fmt="csv",
                   llm=_llm(store, reply=lambda m, p: asked.append(m) or '{"score": 2}'))
    assert asked == [] and out.read_bytes() == before
    # a tag written before formats were recorded: the format is read from the file itself
    (tmp_path / "scores.jsonl.judge").write_text(export.judge_fingerprint(_judge()) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="as JSONL"):
        score_file(_judge(), ItemFile(data, id_col="id"), llm=_llm(store), out=out, fmt="csv")
    assert score_file(_judge(), ItemFile(data, id_col="id"), llm=_llm(store), out=out)["skipped"] == 6


def test_human_scores_are_kept_on_disk_not_in_python_objects_and_come_back_in_input_order():
    """``--human-col`` kept two dicts of ids (about 245 bytes an item: 245 MB at a million items, issue 48
    item 2); the pairs live in a temporary SQLite file, so the Python heap does not grow with the items."""
    import math
    import tracemalloc

    import numpy as np

    from judge_engine.score_files import _Pairs

    def traced_after(n):
        pairs = _Pairs()
        tracemalloc.start()
        try:
            for start in range(0, n, 5000):
                block = range(start, min(n, start + 5000))
                pairs.add_human((f"item-{k}", float(1 + k % 5)) for k in block)
                pairs.add_scores((f"item-{k}", None if k % 7 == 0 else float(1 + k % 3)) for k in block)
            current, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return pairs, current

    small, held_small = traced_after(2_000)
    large, held_large = traced_after(100_000)
    small.close()
    # dicts of 100,000 ids would hold about 25 MB here; what remains is the interpreter's own, not per item
    assert held_large < 1_000_000, f"{held_large / 1e6:.1f} MB held after 100,000 pairs"
    assert held_large < 3 * held_small + 200_000
    assert len(large) == 100_000
    people, judged = large.arrays()
    large.close()
    assert people.shape == judged.shape == (100_000,)
    assert people[:6].tolist() == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0, 1.0])
    assert math.isnan(judged[0]) and math.isnan(judged[7]) and judged[1] == pytest.approx(2.0)
    assert int(np.isnan(judged).sum()) == len(range(0, 100_000, 7))


def test_the_summary_resamples_fewer_times_past_twenty_thousand_items_never_below_a_hundred():
    from judge_engine.score_files import bootstrap_resamples

    assert [bootstrap_resamples(n) for n in (1, 20_000, 40_000, 1_000_000, 10_000_000)] == [1000, 1000, 500, 100, 100]

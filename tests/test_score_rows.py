"""Rows in = lines out + rows named (issue 64 item 3): a quote left open across rows, a repeated header, a NUL in a
text are each named with their row(s), and over generated damaged files the summary's counts always balance."""

from __future__ import annotations

import json
import random

import pytest

from judge_engine.items import ItemFile
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect
from judge_engine.score_files import score_file


def _judge():
    return DirectScoring().fit([], Aspect("quality", 1, 5, "How good the reply is."),
                               FitContext(llm=None, task=TaskInfo(task="dialogue")))


def _llm(store):
    reply = lambda messages, params: json.dumps({"score": 1 + len(messages[0]["content"]) % 5})  # noqa: E731
    return make_llm(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", concurrency=4),
                    store=store, backend=FakeBackend(reply))


def _score(tmp_path, store, path, **kw):
    named, warned = [], []
    out = tmp_path / "scores.jsonl"
    summary = score_file(_judge(), ItemFile(path, id_col="id"), llm=_llm(store), out=out, bad_row=named.append,
                         warn_row=warned.append, **kw)
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return summary, [json.loads(x) for x in lines], named, warned


def test_a_quote_left_open_from_one_row_to_another_names_every_row_inside_it(tmp_path, store):
    # before: exit 0, 50 of 60 lines, nothing left out, no message: g021-g030 scored as part of g020's text
    rows = [f"g{k:03d},source {k},reply {k}" for k in range(60)]
    rows[20] = 'g020,source 20,"reply 20 with a quote opened'
    rows[30] = 'g030,source 30,reply 30 closed here"'
    path = tmp_path / "items.csv"
    path.write_text("id,input,output\n" + "\n".join(rows) + "\n", encoding="utf-8")
    summary, written, named, _ = _score(tmp_path, store, path)
    assert len(written) == 49 and summary["items"] == 49
    assert summary["rows_left_out"] == 11 and summary["rows_left_out_by_reason"] == {"quote left open": 11}
    [error] = named
    assert error.row == 22 and "closes only on line 32" in str(error) and "g021,source 21" in str(error)
    assert {w["id"] for w in written} == {f"g{k:03d}" for k in range(60)} - {f"g{k:03d}" for k in range(20, 31)}


def test_a_reply_with_line_breaks_of_its_own_is_scored_not_named(tmp_path, store):
    path = tmp_path / "items.csv"
    text = 'Dear team,\nthe plan: 1, 2, 3\n"quoted" words, and more\nBye'.replace('"', '""')
    path.write_text(f'id,input,output\nq1,ask,"{text}"\nq2,ask,plain\n', encoding="utf-8")
    summary, written, named, _ = _score(tmp_path, store, path)
    assert summary["items"] == 2 and not named and written[0]["id"] == "q1"


def test_two_files_joined_with_cat_name_the_second_header(tmp_path, store):
    # before: the second header was scored as an item with id '\ufeffid'
    first = "\ufeffid,input,output\n" + "".join(f"a{k},in {k},out {k}\n" for k in range(5))
    second = "\ufeffid,input,output\n" + "".join(f"b{k},in {k},out {k}\n" for k in range(5))
    path = tmp_path / "joined.csv"
    path.write_bytes((first + second).encode("utf-8"))
    summary, written, named, _ = _score(tmp_path, store, path)
    assert summary["items"] == 10 and [e.row for e in named] == [7] and "repeats the header" in str(named[0])
    assert summary["rows_left_out_by_reason"] == {"repeated header": 1}
    assert all(not w["id"].startswith("\ufeff") and w["id"] != "id" for w in written)


def test_a_nul_in_a_text_is_named_as_a_warning_and_the_row_scored_without_it(tmp_path, store):
    # before: removed silently, where docs/data.md promises a warning
    path = tmp_path / "items.csv"
    path.write_text("id,input,output\nn1,in,clean\nn2,in,broken\x00text\n", encoding="utf-8")
    summary, written, named, warned = _score(tmp_path, store, path)
    assert summary["items"] == 2 and not named and summary["rows_cleaned"] == 1
    [warning] = warned
    assert warning.row == 3 and "'output'" in str(warning) and "NUL" in str(warning)


# ---- the property: over generated damaged files, rows in = items + skipped + rows left out, and lines out = items

def _damaged_csv(rng: random.Random) -> tuple[bytes, int, int]:
    """A CSV with damage of every kind the reader names; its bytes, the rows a person would count, and the rows
    whose text holds a NUL (scored after cleaning)."""
    lines: list[bytes] = ["id,input,output\n".encode()]
    rows = nul = 0
    ids: list[str] = []
    k = 0
    n = rng.randint(5, 60)
    while k < n:
        kind = rng.choice(["ok"] * 6 + ["dup", "empty", "nul", "cells", "bytes", "multiline", "header", "blank",
                                        "open_quote"])
        rid = f"r{k:04d}"
        if kind == "ok":
            lines.append(f"{rid},source {k},reply {k}\n".encode())
        elif kind == "dup" and ids:
            lines.append(f"{rng.choice(ids)},source {k},reply {k}\n".encode())
        elif kind == "empty":
            lines.append(f"{rid},source {k},\n".encode())
        elif kind == "nul":
            lines.append(f"{rid},source {k},reply\x00{k}\n".encode())
            nul += 1
        elif kind == "cells":
            lines.append(f"{rid},source {k},reply {k},extra\n".encode())
        elif kind == "bytes":
            lines.append(f"{rid},source {k},reply ".encode() + b"\xff\xfe" + b"\n")
        elif kind == "multiline":
            lines.append(f'{rid},source {k},"line one\nline two, with a comma\nthree"\n'.encode())
        elif kind == "header":
            lines.append(b"id,input,output\n")
            rows += 1
            continue
        elif kind == "blank":
            lines.append(b"\n")
            continue
        elif kind == "open_quote" and k + 3 < n:
            inside = rng.randint(1, 3)
            lines.append(f'{rid},source {k},"reply {k} with a quote opened\n'.encode())
            for j in range(1, inside):
                lines.append(f"r{k + j:04d},source {k + j},reply {k + j}\n".encode())
            last = k + inside
            lines.append(f'r{last:04d},source {last},reply {last}"\n'.encode())
            ids.extend(f"r{k + j:04d}" for j in range(inside + 1))
            rows += inside + 1
            k += inside + 1
            continue
        else:
            lines.append(f"{rid},source {k},reply {k}\n".encode())
        ids.append(rid)
        rows += 1
        k += 1
    return b"".join(lines), rows, nul


def _damaged_jsonl(rng: random.Random) -> tuple[bytes, int, int]:
    lines: list[bytes] = []
    rows = nul = 0
    ids: list[str] = []
    for k in range(rng.randint(5, 60)):
        kind = rng.choice(["ok"] * 6 + ["dup", "empty", "nul", "json", "array", "bytes", "blank", "noid"])
        rid = f"r{k:04d}"
        record = {"id": rid, "input": f"source {k}", "output": f"reply {k}"}
        if kind == "blank":
            lines.append(b"\n")
            continue
        if kind == "dup" and ids:
            record["id"] = rng.choice(ids)
        elif kind == "empty":
            record["output"] = ""
        elif kind == "nul":
            record["output"] = "reply\x00" + str(k)
            nul += 1
        elif kind == "noid":
            record["id"] = ""
        text = json.dumps(record).encode()
        if kind == "json":
            text = text[:-3]
        elif kind == "array":
            text = b"[1, 2]"
        elif kind == "bytes":
            text = text[:-2] + b"\xff\"}"
        lines.append(text + b"\n")
        ids.append(rid)
        rows += 1
    return b"".join(lines), rows, nul


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_over_generated_damaged_files_every_row_is_a_line_out_or_a_row_named(tmp_path, store, kind):
    make = _damaged_csv if kind == "csv" else _damaged_jsonl
    for seed in range(40):
        rng = random.Random(seed)
        content, rows, _ = make(rng)
        folder = tmp_path / f"{kind}{seed}"
        folder.mkdir()
        path = folder / f"items.{kind}"
        path.write_bytes(content)
        try:
            summary, written, named, _ = _score(folder, store, path)
        except Exception as exc:  # a file with no row that can be scored is one message, never a partial count
            assert "no row could be read" in str(exc) or "no items" in str(exc), (seed, exc)
            continue
        counted = summary["items"] + summary["skipped"] + summary["rows_left_out"]
        assert counted == rows, (seed, summary, content.decode("utf-8", "replace"))
        assert len(written) == summary["items"] and len({w["id"] for w in written}) == len(written), seed
        assert sum(getattr(e, "rows", 1) for e in named) == summary["rows_left_out"], seed


# ---- ids: a column named id is the items' ids; without one, score and score_table number the rows alike

def test_a_column_named_id_is_used_and_without_one_score_and_score_table_number_rows_alike(tmp_path, store):
    import pandas as pd

    from judge_engine.export import ExportedJudge
    from judge_engine.llm import LLMConfig as Config

    rows = [{"id": f"x{k}", "input": f"in {k}", "output": f"out {k}"} for k in range(5)]
    with_ids = tmp_path / "with_ids.csv"
    pd.DataFrame(rows).to_csv(with_ids, index=False)
    out = tmp_path / "a.jsonl"
    score_file(_judge(), ItemFile(with_ids), llm=_llm(store), out=out)
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == [f"x{k}" for k in range(5)]

    bare = tmp_path / "bare.csv"
    pd.DataFrame(rows).drop(columns="id").to_csv(bare, index=False)
    out = tmp_path / "b.jsonl"
    score_file(_judge(), ItemFile(bare), llm=_llm(store), out=out)
    by_score = [json.loads(x)["id"] for x in out.read_text().splitlines()]
    judge = ExportedJudge(judge=_judge(), llm=Config(backend="openai", model="m"), card={})
    by_table = list(judge.score_table(pd.read_csv(bare), llm=_llm(store))["id"])
    assert by_score == by_table == ["1", "2", "3", "4", "5"]
    assert list(judge.score_table(pd.DataFrame(rows), llm=_llm(store))["id"]) == [f"x{k}" for k in range(5)]


def test_resuming_an_output_written_under_other_ids_is_refused_before_any_request(tmp_path, store):
    rows = [{"id": f"x{k}", "input": f"in {k}", "output": f"out {k}"} for k in range(20)]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    score_file(_judge(), ItemFile(path, id_col=""), llm=_llm(store), out=out)  # row numbers, as score did before
    before = out.read_text()
    with pytest.raises(ValueError, match="written with other ids"):
        score_file(_judge(), ItemFile(path), llm=_llm(store), out=out)
    assert out.read_text() == before

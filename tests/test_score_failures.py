"""A bad item never stops a job (issue 64 item 1): an item whose request keeps failing is written missing with the
reason while other items are answered; when none is, the job stops with one line and writes none of them. Over a
scripted backend that fails chosen items in chosen ways (the server cases: tests/test_score_refusals.py)."""

from __future__ import annotations

import json
import time

import pytest

from judge_engine.item_failures import FAILURES_WITHOUT_AN_ANSWER
from judge_engine.items import ItemFile
from judge_engine.llm import BackendUnavailable, LLMConfig, LLMError, RequestFailed, RequestRejected, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect
from judge_engine.score_files import score_file


def _judge():
    return DirectScoring().fit([], Aspect("quality", 1, 5, "How good the reply is."),
                               FitContext(llm=None, task=TaskInfo(task="dialogue")))


def _items(tmp_path, outputs):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{k:04d}", "input": f"source {k}", "output": o}) + "\n"
                            for k, o in enumerate(outputs)), encoding="utf-8")
    return ItemFile(path, id_col="id")


def _server_error(text):
    return RequestFailed("the server at http://127.0.0.1:9/v1 kept failing (500) after 2 retries: boom",
                         kind="server error 500", reason="server error (500) after 2 retries: the tokenizer crashed")


def _replying(fail=lambda text: None, delay=0.0):
    """A responder answering a score unless ``fail(prompt)`` returns an exception to raise."""
    def reply(messages, params):
        text = "\n".join(m["content"] for m in messages)
        if delay:
            time.sleep(delay)
        exc = fail(text)
        if exc is not None:
            raise exc
        return json.dumps({"score": 1 + len(text) % 5})
    return reply


def _llm(store, reply, concurrency=8, timeout=None):
    backend = FakeBackend(reply)
    if timeout is not None:
        backend.timeout, backend.where, backend.max_retries = timeout, "http://127.0.0.1:9/v1", 0
    return make_llm(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1",
                              concurrency=concurrency), store=store, backend=backend)


def _lines(out):
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("concurrency", [1, 8])
def test_an_item_that_always_gets_a_500_is_missing_with_the_reason_and_the_job_ends(tmp_path, store, concurrency):
    # before: every run stopped at the same place (exit 2 after 256 lines; the re-run after 288)
    outputs = [f"reply {k}" for k in range(600)]
    outputs[300] = "CRASHES the tokenizer"
    out = tmp_path / "scores.jsonl"
    llm = _llm(store, _replying(lambda t: _server_error(t) if "CRASHES" in t else None), concurrency)
    summary = score_file(_judge(), _items(tmp_path, outputs), llm=llm, out=out)
    written = _lines(out)
    assert [w["id"] for w in written] == [f"i{k:04d}" for k in range(600)], "every item once, in input order"
    bad = written[300]
    assert bad["missing"] and bad["score"] is None and "500" in bad["missing_reason"]
    assert "tokenizer crashed" in bad["missing_reason"]
    assert summary["items"] == 600 and summary["missing_by_reason"]["server error 500"] == 1
    assert sum(summary["missing_by_reason"].values()) == summary["missing"]


def test_twenty_over_long_items_in_a_row_are_twenty_missing_items_not_a_stopped_job(tmp_path, store):
    # before: exit 2 after 16 of them with "this looks like the settings ... not the items", at every re-run
    outputs = [("long " * 50 if 100 <= k < 120 else f"reply {k}") for k in range(400)]
    out = tmp_path / "scores.jsonl"

    def fail(text):
        if "long long" in text:
            return RequestRejected("refused (400)", status=400, reason="maximum context length is 100 tokens")
        return None

    summary = score_file(_judge(), _items(tmp_path, outputs), llm=_llm(store, _replying(fail)), out=out)
    written = _lines(out)
    assert len(written) == 400 and summary["missing"] == 20
    assert {w["id"] for w in written if w["missing"]} == {f"i{k:04d}" for k in range(100, 120)}
    assert summary["missing_by_reason"] == {"refused by the server (400)": 20}
    assert summary["refused_by_server"] == 20


@pytest.mark.parametrize("n", [10, 300])
def test_every_item_failing_stops_the_job_with_one_message_and_writes_none(tmp_path, store, n):
    out = tmp_path / "scores.jsonl"
    backend_calls = []

    def fail(text):
        backend_calls.append(1)
        return RequestRejected("refused (400)", status=400, reason="unknown parameter 'seed'")

    with pytest.raises(LLMError, match="not the items") as caught:
        score_file(_judge(), _items(tmp_path, [f"reply {k}" for k in range(n)]), llm=_llm(store, _replying(fail)),
                   out=out)
    assert "unknown parameter 'seed'" in str(caught.value)
    assert not out.exists() and not (tmp_path / "scores.jsonl.judge").exists(), "no empty file left behind"
    # the broken setting is told within a few windows of failures, not after the whole file
    assert len(backend_calls) <= min(2 * n, 2 * FAILURES_WITHOUT_AN_ANSWER), len(backend_calls)


def test_missing_items_are_kept_on_a_rerun_and_scored_again_with_retry_missing(tmp_path, store):
    outputs = [f"reply {k}" for k in range(50)]
    outputs[7] = outputs[31] = "CRASHES"
    source = _items(tmp_path, outputs)
    out = tmp_path / "scores.jsonl"
    broken = _llm(store, _replying(lambda t: _server_error(t) if "CRASHES" in t else None))
    score_file(_judge(), source, llm=broken, out=out)
    first = out.read_text(encoding="utf-8")
    assert sum(w["missing"] for w in _lines(out)) == 2

    again = score_file(_judge(), source, llm=broken, out=out)  # no flag: the missing lines are kept as they are
    assert again["items"] == 0 and again["skipped"] == 50 and out.read_text(encoding="utf-8") == first

    fixed = _llm(store, _replying())
    retried = score_file(_judge(), source, llm=fixed, out=out, retry_missing=True)
    written = _lines(out)
    assert retried["items"] == 2 and retried["skipped"] == 48 and retried["missing"] == 0
    assert sorted(w["id"] for w in written) == sorted(f"i{k:04d}" for k in range(50)), "each id once"
    assert not any(w["missing"] for w in written)
    assert [w for w in written if w["id"] not in ("i0007", "i0031")] == \
        [json.loads(line) for line in first.splitlines() if json.loads(line)["id"] not in ("i0007", "i0031")]


def test_csv_output_retries_its_missing_items_too(tmp_path, store):
    outputs = [f"reply {k}" for k in range(20)]
    outputs[4] = "CRASHES"
    source = _items(tmp_path, outputs)
    out = tmp_path / "scores.csv"
    score_file(_judge(), source, llm=_llm(store, _replying(lambda t: _server_error(t) if "CRASHES" in t else None)),
               out=out)
    retried = score_file(_judge(), source, llm=_llm(store, _replying()), out=out, retry_missing=True)
    assert retried["items"] == 1 and retried["missing"] == 0
    import csv

    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert sorted(r["id"] for r in rows) == sorted(f"i{k:04d}" for k in range(20))
    assert all(r["missing"] == "false" for r in rows)


def test_a_server_that_stops_answering_is_named_with_its_timeout_and_the_job_stops(tmp_path, store):
    timed_out = RequestFailed("the LLM server at http://127.0.0.1:9/v1 did not answer within 0.2 s (0 retries)",
                              kind="timeout", timed_out=True)
    said = []
    llm = _llm(store, _replying(lambda t: timed_out, delay=0.7), concurrency=4, timeout=0.2)
    out = tmp_path / "scores.jsonl"
    with pytest.raises(LLMError) as caught:
        score_file(_judge(), _items(tmp_path, [f"reply {k}" for k in range(40)]), llm=llm, out=out,
                   notice=said.append)
    message = str(caught.value)
    assert "http://127.0.0.1:9/v1" in message and "0.2 s" in message and "stopped answering" in message
    assert isinstance(caught.value, BackendUnavailable), "the server's fault: a run pauses, to be resumed"
    assert not out.exists()
    assert any("no answer from http://127.0.0.1:9/v1" in s and "--timeout 0.2 s" in s for s in said), said


def test_a_slow_item_that_times_out_while_others_are_answered_is_missing_not_a_stop(tmp_path, store):
    timed_out = RequestFailed("the LLM server did not answer within 0.3 s", kind="timeout", timed_out=True)

    def reply(messages, params):
        text = messages[0]["content"]
        if "SLOW" in text:
            time.sleep(0.4)
            raise timed_out
        time.sleep(0.01)
        return json.dumps({"score": 3})

    outputs = [f"reply {k}" for k in range(120)]
    outputs[5] = "SLOW"
    summary = score_file(_judge(), _items(tmp_path, outputs), llm=_llm(store, reply, timeout=0.3),
                         out=tmp_path / "scores.jsonl")
    assert summary["items"] == 120 and summary["missing_by_reason"] == {"timeout": 1}

"""`score` against a server that refuses requests: one item refused is that item missing with the server's reason,
every item refused (a bad key, a wrong model, every prompt refused) stops the job with one line.

Against the stub server (judge_engine.bench.stub_server) in a child process, through the CLI as a user runs it.
Before, a 400 once the structured-reply format was settled ended in `IndexError: tuple index out of range`
(openai_backend.py) with a traceback, and every re-run stopped at the same chunk."""

from __future__ import annotations

import json

import pytest

from judge_engine.__main__ import main
from judge_engine.bench.stub_server import MODEL, StubServer
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect

LONG = 3000
"""Characters of prompt over which the stub answers 400 (its 'context')."""

pytestmark = pytest.mark.server


def _judge(tmp_path):
    path = tmp_path / "judge.json"
    judge = DirectScoring().fit([], Aspect("quality", 1, 4, "How good the reply is."),
                                FitContext(llm=None, task=TaskInfo(task="dialogue")))
    path.write_text(judge.to_json(), encoding="utf-8")
    return path


def _items(tmp_path, n, long_every=0):
    path = tmp_path / "items.jsonl"
    rows = [{"id": f"i{k:03d}", "input": f"source {k}",
             "output": ("very long reply " * 400 if long_every and k % long_every == 7 else f"reply {k}")}
            for k in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows


def _score(tmp_path, stub, items, out, *more, concurrency=8):
    return main(["score", str(_judge(tmp_path)), str(items), "--out", str(out), "--backend", "openai", "--model", MODEL,
                 "--base-url", stub.base_url, "--id-col", "id", "--db", str(tmp_path / "cache.db"), "--quiet",
                 "--concurrency", str(concurrency), *more])


def _errors(capsys) -> list[str]:
    """Standard error's lines without the expected cost ``score`` prints before its first call (cli.md)."""
    return [x for x in capsys.readouterr().err.strip().splitlines()
            if not x.startswith("score: expected before any cache hit")]


def test_a_prompt_over_the_context_is_that_item_missing_with_the_servers_reason_and_the_job_goes_on(tmp_path,
                                                                                                    capsys):
    items, rows = _items(tmp_path, 600, long_every=50)  # 12 long items, spread over three chunks
    long_ids = {r["id"] for r in rows if len(r["output"]) > 100}
    out = tmp_path / "scores.jsonl"
    with StubServer(refuse_longer_than=LONG) as stub:
        assert _score(tmp_path, stub, items, out) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "IndexError" not in err
    summary = json.loads(err[err.index("{"):])
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [w["id"] for w in written] == [r["id"] for r in rows], "every item written once, in input order"
    refused = {w["id"]: w for w in written if w["missing"] and "refused" in w["missing_reason"]}
    assert set(refused) == long_ids and len(long_ids) == 12
    assert all("maximum context length" in w["missing_reason"] and "(400)" in w["missing_reason"]
               for w in refused.values())
    assert all(w["score"] is None for w in refused.values())
    assert summary["refused_by_server"] == 12 and summary["items"] == 600 and summary["missing"] >= 12
    assert sum(1 for w in written if w["score"] is not None) == 600 - summary["missing"]


@pytest.mark.parametrize("status, said", [(401, "rejected the API key"), (404, "was not found")])
def test_a_bad_key_or_a_wrong_model_stops_the_job_with_one_line_and_writes_nothing(tmp_path, capsys, status, said):
    items, _ = _items(tmp_path, 40)
    out = tmp_path / "scores.jsonl"
    with StubServer(status_for_all=status) as stub:
        assert _score(tmp_path, stub, items, out) == 2
    err = _errors(capsys)
    assert len(err) == 1 and err[0].startswith("error: ") and said in err[0], err
    assert not out.exists() or out.read_text(encoding="utf-8") == ""


def test_every_prompt_refused_stops_the_job_and_a_rerun_tries_them_again(tmp_path, capsys):
    items, _ = _items(tmp_path, 100)
    out = tmp_path / "scores.jsonl"
    with StubServer(refuse_longer_than=10) as stub:  # every prompt is longer: a setting, not an item
        assert _score(tmp_path, stub, items, out) == 2
    err = _errors(capsys)
    assert len(err) == 1 and "not the items" in err[0] and "maximum context length" in err[0], err
    assert not out.exists() and not out.with_name(out.name + ".judge").exists(), "nothing written: a re-run tries them"
    with StubServer() as stub:  # the setting fixed: the same command scores everything
        assert _score(tmp_path, stub, items, out) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 100


def test_an_item_the_server_fails_on_every_time_is_missing_and_retried_only_when_asked(tmp_path, capsys):
    # before: one item answered 500 every time stopped every run at the same place (exit 2 after 256 lines)
    items, rows = _items(tmp_path, 400)
    rows[290]["output"] = "CRASH the tokenizer"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    with StubServer(fail_containing="CRASH") as stub:
        assert _score(tmp_path, stub, items, out, "--retries", "1") == 0
        err = capsys.readouterr().err
        summary = json.loads(err[err.index("{"):])
        written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [w["id"] for w in written] == [r["id"] for r in rows]
        assert written[290]["missing"] and "500" in written[290]["missing_reason"]
        assert "tokenizer crashed" in written[290]["missing_reason"]
        assert summary["missing_by_reason"]["server error 500"] == 1
        sent = stub.stats()["chat_requests"]
        assert _score(tmp_path, stub, items, out) == 0, "a re-run keeps the missing item as it is"
        assert stub.stats()["chat_requests"] == sent
    missing = {w["id"] for w in written if w["missing"]}  # that item, and replies off the judge's 1-4 scale
    with StubServer() as stub:  # the server fixed: --retry-missing scores the missing items again, and only them
        assert _score(tmp_path, stub, items, out, "--retry-missing") == 0
        assert stub.stats()["chat_requests"] == len(missing)
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(w["id"] for w in written) == sorted(r["id"] for r in rows), "each item once"
    again = next(w for w in written if w["id"] == rows[290]["id"])
    assert "500" not in again["missing_reason"] and "server error" not in again["missing_reason"], again


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_stops_at_the_first_answers_and_leaves_no_file(tmp_path, capsys, status):
    # before: 150 (401) and 121 (403) requests were sent before the stop, and an empty .judge file was left
    items, _ = _items(tmp_path, 2000)
    out = tmp_path / "scores.jsonl"
    with StubServer(status_for_all=status) as stub:
        assert _score(tmp_path, stub, items, out, concurrency=32) == 2
        sent = stub.stats()["chat_requests"]
    err = _errors(capsys)
    assert len(err) == 1 and f"({status})" in err[0], err
    assert sent <= 2 * 32, f"{sent} requests sent after a {status}: no more than those in flight"
    assert not out.exists() and not out.with_name(out.name + ".judge").exists()


def test_a_server_that_hangs_is_named_with_its_url_and_timeout_and_the_job_stops(tmp_path, capsys):
    # before: one item, exit 2 after 619 s; 100 items, no message and no exit after 1,200 s
    items, _ = _items(tmp_path, 100)
    out = tmp_path / "scores.jsonl"
    with StubServer(hang_containing="*", hang_seconds=30) as stub:
        assert _score(tmp_path, stub, items, out, "--timeout", "1", "--retries", "0") == 2
    err = _errors(capsys)
    said = [line for line in err if line.startswith("no answer from")]
    assert len(said) == 1 and stub.base_url in said[0] and "--timeout 1 s" in said[0], err
    assert err[-1].startswith("error: ") and stub.base_url in err[-1] and "did not answer in time (1 s" in err[-1], err
    assert "stopped answering" in err[-1]
    assert not out.exists()


def test_the_summary_counts_every_429_the_server_sent_the_clients_own_retries_included(tmp_path, capsys):
    # rate_limited.times counted 1 where the stub had answered 555 requests with 429 (the client's retries unseen)
    items, _ = _items(tmp_path, 300)
    out = tmp_path / "scores.jsonl"
    with StubServer(rate_limit_every=4) as stub:
        assert _score(tmp_path, stub, items, out) == 0
        stats = stub.stats()
    err = capsys.readouterr().err
    summary = json.loads(err[err.index("{"):])
    sent_429 = stats["chat_requests"] - stats["answered"]
    assert sent_429 >= 75 and summary["rate_limited"]["answers_429"] == sent_429
    assert len(out.read_text(encoding="utf-8").splitlines()) == 300
